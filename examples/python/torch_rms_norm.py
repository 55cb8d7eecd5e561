"""torch_rms_norm.py: replace torch.nn.functional.rms_norm with kjit's
bundled rms_norm kernel, fetched from kjitd and launched on PyTorch tensors
through the CUDA driver (kjit.cuda), then check it against torch and time
both.

    python3 examples/python/torch_rms_norm.py [--rows 16384] [--cols 8192]

The kernel (kernels_src/rms_norm.cu) is rms_norm_f32(x, w, y, rows, cols,
eps): one block of KJ_BLOCK threads per row (kernels_src/MANIFEST gives
KJ_BLOCK), rows strided by the grid.  rms_norm_f16 and rms_norm_bf16 take
the same arguments.  F.rms_norm is patched for the process: calls the kernel
covers (CUDA, contiguous, one normalized dimension, a weight of the same
dtype, no autograd) go to kjit; the rest fall back to torch's own.

Prints, for f32 at rows x cols: the max error against torch and against a
float64 reference, the median time of 20 launches of each (CUDA events,
after warm-up) and the bandwidth; then checks f16 and bf16, and that
torch.nn.RMSNorm goes through the patch.  Exit status 1 if kjit's results
are off (f32: max abs error over 1e-4; f16/bf16: over twice torch's own
error against float64), 2 if there is no CUDA GPU.
"""
import argparse
import os
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kjit  # noqa: E402
import kjit.cuda  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = {torch.float32: "rms_norm_f32", torch.float16: "rms_norm_f16",
           torch.bfloat16: "rms_norm_bf16"}
ITERS = 20


def manifest_block(kernel: str, backend: str = "cuda") -> int:
    """KJ_BLOCK of kernel's line in kernels_src/MANIFEST: the block size it
    was compiled for."""
    with open(os.path.join(TOP, "kernels_src", "MANIFEST")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 4 and w[0] == kernel and w[1] == backend:
                for opt in w[4:]:
                    m = re.fullmatch(r"-DKJ_BLOCK=(\d+)", opt)
                    if m:
                        return int(m.group(1))
    raise SystemExit(f"torch_rms_norm: no KJ_BLOCK for {kernel} {backend} in kernels_src/MANIFEST")


class KjitRmsNorm:
    """A drop-in for F.rms_norm backed by kjit's kernels (one per dtype,
    fetched and loaded on first use)."""

    def __init__(self, fallback):
        self.fallback = fallback
        self.fns = {}
        self.calls = 0
        self.fetch_log = []

    def function(self, dtype: torch.dtype, device: torch.device):
        key = (dtype, device.index)
        if key not in self.fns:
            name = KERNELS[dtype]
            t0 = time.perf_counter()
            obj = kjit.get_kernel(name, backend="cuda", target=kjit.cuda.arch(device.index or 0))
            ms = (time.perf_counter() - t0) * 1e3
            self.fetch_log.append(f"{name} for {obj.target}: {obj.status} in {ms:.1f} ms "
                                  f"({len(obj.data)} bytes)")
            fn = kjit.cuda.load(obj, device.index or 0).function(name, "PPPiif")
            self.fns[key] = (fn, manifest_block(name))
        return self.fns[key]

    def __call__(self, input, normalized_shape, weight=None, eps=None):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if (not input.is_cuda or input.dtype not in KERNELS or weight is None or len(shape) != 1
                or input.dim() == 0 or input.shape[-1] != shape[0] or input.numel() == 0
                or weight.dtype != input.dtype or weight.device != input.device
                or tuple(weight.shape) != shape or not input.is_contiguous()
                or not weight.is_contiguous()
                or (torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad))):
            return self.fallback(input, normalized_shape, weight, eps)
        cols = shape[0]
        rows = input.numel() // cols
        if eps is None:
            eps = torch.finfo(input.dtype).eps
        fn, block = self.function(input.dtype, input.device)
        y = torch.empty_like(input)
        fn.launch(min(rows, 2**31 - 1), block, [input, weight, y, rows, cols, eps],
                  stream=torch.cuda.current_stream(input.device).cuda_stream)
        self.calls += 1
        return y


def median_ms(fn) -> float:
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


def reference(x, w, eps):
    """rms_norm in float64."""
    xd, wd = x.double(), w.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * wd


def main() -> int:
    p = argparse.ArgumentParser(description="kjit's rms_norm in place of torch's")
    p.add_argument("--rows", type=int, default=16384)
    p.add_argument("--cols", type=int, default=8192)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("torch_rms_norm: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    dev = torch.device("cuda", torch.cuda.current_device())
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(dev)}, kjit {kjit.__version__} "
          f"({kjit.library_path()})")

    torch_rms_norm = F.rms_norm
    ours = KjitRmsNorm(torch_rms_norm)
    F.rms_norm = ours  # the replacement, for this process
    ok = True
    try:
        # f32 at the benchmark shape
        x = torch.randn(a.rows, a.cols, device=dev)
        w = torch.randn(a.cols, device=dev)
        eps = 1e-6
        y_torch = torch_rms_norm(x, (a.cols,), w, eps)
        y_kjit = F.rms_norm(x, (a.cols,), w, eps)
        torch.cuda.synchronize()
        for line in ours.fetch_log:
            print("kjit.get_kernel:", line)
        assert ours.calls == 1, "the patched F.rms_norm did not reach kjit"
        ref = reference(x, w, eps)
        err_t = (y_kjit - y_torch).abs().max().item()
        err_k64 = (y_kjit.double() - ref).abs().max().item()
        err_t64 = (y_torch.double() - ref).abs().max().item()
        del ref
        print(f"f32 {a.rows} x {a.cols}: max |kjit - torch| = {err_t:.3e}; against float64: "
              f"kjit {err_k64:.3e}, torch {err_t64:.3e}")
        if not err_t <= 1e-4:
            print(f"MISMATCH: f32 max error {err_t:.3e} > 1e-4")
            ok = False

        nbytes = 2 * x.numel() * x.element_size()
        t_kjit = median_ms(lambda: F.rms_norm(x, (a.cols,), w, eps))
        t_torch = median_ms(lambda: torch_rms_norm(x, (a.cols,), w, eps))
        print(f"median of {ITERS}: kjit rms_norm_f32 {t_kjit:.3f} ms ({nbytes / t_kjit / 1e6:.0f} GB/s), "
              f"torch {t_torch:.3f} ms ({nbytes / t_torch / 1e6:.0f} GB/s): "
              f"kjit takes {t_kjit / t_torch:.2f}x torch's time")
        del x, y_torch, y_kjit

        # 16-bit storage, a smaller shape; an odd width takes the kernel's scalar path
        for dtype in (torch.float16, torch.bfloat16):
            for cols in (4096, 1000):
                xs = torch.randn(512, cols, device=dev).to(dtype)
                ws = torch.randn(cols, device=dev).to(dtype)
                yk = F.rms_norm(xs, (cols,), ws, eps)
                yt = torch_rms_norm(xs, (cols,), ws, eps)
                ref = reference(xs, ws, eps)
                ek = (yk.double() - ref).abs().max().item()
                et = (yt.double() - ref).abs().max().item()
                good = ek <= 2 * et + 1e-6
                ok = ok and good
                print(f"{str(dtype)[6:]} 512 x {cols}: max error against float64: kjit {ek:.3e}, "
                      f"torch {et:.3e}{'' if good else '  MISMATCH'}")

        # torch.nn.RMSNorm calls F.rms_norm: it now runs kjit's kernel
        norm = torch.nn.RMSNorm(1024, eps=1e-5, device=dev)
        with torch.no_grad():
            norm.weight.copy_(torch.randn(1024, device=dev))
            xm = torch.randn(8, 64, 1024, device=dev)
            before = ours.calls
            ym = norm(xm)
            yr = torch_rms_norm(xm, (1024,), norm.weight, 1e-5)
        em = (ym - yr).abs().max().item()
        routed = ours.calls - before
        print(f"torch.nn.RMSNorm(1024) on 8 x 64 x 1024: {routed} kjit launch(es), "
              f"max |kjit - torch| = {em:.3e}")
        if em > 1e-4:
            print("MISMATCH: nn.RMSNorm")
            ok = False
        for line in ours.fetch_log[1:]:
            print("kjit.get_kernel:", line)
    finally:
        F.rms_norm = torch_rms_norm
    print("torch_rms_norm:", "ok, kjit matches torch" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
