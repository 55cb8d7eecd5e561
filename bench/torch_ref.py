"""PyTorch's own ops at the shapes of kjit's GPU bench, timed the same way (CUDA
events; 5 rounds, each the median of 20 launches after warm-up; the median round
printed with the fastest and slowest round) and reported with the same byte or
operation count, for a side-by-side table in bench/gpu-h200.md.  Run by
scripts/gpu-run.sh bench.

Memory-bound ops: GB/s = bytes the op must read and write / time (16384 x 8192 f32,
and the same element count in f16/bf16).  Decode attention counts K and V once
(q, o too).  GEMM and prefill attention: TFLOP/s (prefill counts the causal half)."""
import statistics
import sys

import torch
import torch.nn.functional as F

ROWS, COLS, ITERS, ROUNDS = 16384, 8192, 20, 5


def rounds(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    med = []
    for _ in range(ROUNDS):
        times = []
        for _ in range(ITERS):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        med.append(statistics.median(times))
    med.sort()
    return med[0], med[len(med) // 2], med[-1]


def gbs(name, fn, nbytes):
    lo, mid, hi = rounds(fn)
    print(f"torch {name:<40} {mid:8.3f} ms {nbytes / mid / 1e6:8.1f} GB/s "
          f"(runs {nbytes / hi / 1e6:.1f}..{nbytes / lo / 1e6:.1f})", flush=True)


def tflops(name, fn, flops):
    lo, mid, hi = rounds(fn)
    print(f"torch {name:<40} {mid:8.3f} ms {flops / mid / 1e9:8.1f} TFLOP/s "
          f"(runs {flops / hi / 1e9:.1f}..{flops / lo / 1e9:.1f})", flush=True)


def main():
    torch.manual_seed(0)
    dev = "cuda"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {ROWS} x {COLS}")
    x = torch.randn(ROWS, COLS, device=dev)
    g = torch.randn_like(x)
    y = torch.empty_like(x)
    w = torch.randn(COLS, device=dev)
    bias = torch.randn(COLS, device=dev)
    n = x.numel() * 4
    gbs("copy (device to device)", lambda: y.copy_(x), 2 * n)
    gbs("add", lambda: torch.add(x, g, out=y), 3 * n)
    gbs("silu(x) * g", lambda: F.silu(x) * g, 3 * n)
    gbs("gelu (erf)", lambda: F.gelu(x), 2 * n)
    gbs("gelu (tanh)", lambda: F.gelu(x, approximate="tanh"), 2 * n)
    gbs("rms_norm", lambda: F.rms_norm(x, (COLS,), w), 2 * n)
    gbs("layer_norm", lambda: F.layer_norm(x, (COLS,), w, bias), 2 * n)
    gbs("softmax", lambda: torch.softmax(x, dim=-1), 2 * n)
    for dt in (torch.float16, torch.bfloat16):
        xh, gh, wh, bh = x.to(dt), g.to(dt), w.to(dt), bias.to(dt)
        nh = xh.numel() * 2
        tag = str(dt).replace("torch.", "")
        gbs(f"silu(x) * g {tag}", lambda: F.silu(xh) * gh, 3 * nh)
        gbs(f"rms_norm {tag}", lambda: F.rms_norm(xh, (COLS,), wh), 2 * nh)
        gbs(f"layer_norm {tag}", lambda: F.layer_norm(xh, (COLS,), wh, bh), 2 * nh)
    del x, g, y, xh, gh

    # decode attention, f32 like kjit's kernel: (batch, H, Hkv, L)
    for b, h, hkv, L in ((1, 32, 8, ROWS * COLS // (2 * 8 * 128)), (16, 32, 8, 4096)):
        q = torch.randn(b, h, 1, 128, device=dev)
        k = torch.randn(b, hkv, L, 128, device=dev)
        v = torch.randn_like(k)
        nbytes = (2 * k.numel() + 2 * q.numel()) * 4
        gbs(f"sdpa decode gqa B={b} H={h} Hkv={hkv} L={L}",
            lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), nbytes)
        del q, k, v

    # GEMM, C = A B^T, 16-bit in and out (cuBLAS)
    for dt in (torch.float16, torch.bfloat16):
        for s in (4096, 8192):
            a = torch.randn(s, s, device=dev, dtype=dt)
            bm = torch.randn(s, s, device=dev, dtype=dt)
            tflops(f"matmul {str(dt)[6:]} {s}^3", lambda: torch.matmul(a, bm.t()), 2.0 * s ** 3)
            del a, bm

    prefill(dev)


def prefill(dev):
    """causal prefill attention, T = 4096, H = 32, Hkv = 8 (`torch_ref.py prefill`: only
    this part, for a kernel's own measuring call)"""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    T, H, HKV = 4096, 32, 8
    for dt in (torch.float16, torch.bfloat16):
        for D in (128, 64):
            q = torch.randn(1, H, T, D, device=dev, dtype=dt)
            k = torch.randn(1, HKV, T, D, device=dev, dtype=dt)
            v = torch.randn_like(k)
            flops = 4.0 * H * D * T * (T + 1) / 2
            tag = f"{str(dt)[6:]} T={T} H={H} Hkv={HKV} D={D}"
            try:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    tflops(f"sdpa flash causal gqa {tag}",
                           lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                  enable_gqa=True), flops)
            except RuntimeError as e:
                print(f"torch sdpa flash with enable_gqa: {str(e).splitlines()[0]}")
            ke, ve = k.repeat_interleave(H // HKV, 1), v.repeat_interleave(H // HKV, 1)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                tflops(f"sdpa flash causal (K/V expanded) {tag}",
                       lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=True), flops)
            del q, k, v, ke, ve


if __name__ == "__main__":
    if sys.argv[1:] == ["prefill"]:
        prefill("cuda")
    else:
        main()
