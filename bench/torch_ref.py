"""PyTorch's own ops at the shape of kjit's GPU bench (16384 x 8192 f32), timed
the same way (CUDA events, median of 20 after warm-up) and reported with the
same byte count (what the op must read and write), for a side-by-side table in
bench/RESULTS.md.  Run by scripts/gpu-run.sh bench."""
import statistics

import torch
import torch.nn.functional as F

ROWS, COLS, ITERS = 16384, 8192, 20


def bench(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(ITERS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    torch.manual_seed(0)
    x = torch.randn(ROWS, COLS, device="cuda")
    g = torch.randn_like(x)
    y = torch.empty_like(x)
    w = torch.randn(COLS, device="cuda")
    bias = torch.randn(COLS, device="cuda")
    n = x.numel() * 4
    ops = [
        ("copy (device to device)", lambda: y.copy_(x), 2 * n),
        ("add", lambda: torch.add(x, g, out=y), 3 * n),
        ("silu(x) * g", lambda: F.silu(x) * g, 3 * n),
        ("gelu (erf)", lambda: F.gelu(x), 2 * n),
        ("gelu (tanh)", lambda: F.gelu(x, approximate="tanh"), 2 * n),
        ("rms_norm", lambda: F.rms_norm(x, (COLS,), w), 2 * n),
        ("layer_norm", lambda: F.layer_norm(x, (COLS,), w, bias), 2 * n),
        ("softmax", lambda: torch.softmax(x, dim=-1), 2 * n),
    ]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {ROWS} x {COLS} f32")
    for name, fn, nbytes in ops:
        ms = bench(fn)
        print(f"torch {name:<26} {ms:8.3f} ms {nbytes / ms / 1e6:8.1f} GB/s")


if __name__ == "__main__":
    main()
