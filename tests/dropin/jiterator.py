"""jiterator.py: one PyTorch jiterator kernel, its first call timed, its
result checked against eager PyTorch.  Prints one line:
  jiterator ok=True first_call_ms=N nvrtc=PATHS torch=V device=NAME
where PATHS are the libnvrtc files mapped into the process (which NVRTC
answered: kjit's drop-in or the real one).  Run by scripts/gpu-dropin.sh
with USE_PYTORCH_KERNEL_CACHE=0 (PyTorch's own kernel cache off), with and
without `kjit run`.  The kernel's text carries a tag (argv[1]) so a run can
ask for a kernel no earlier run compiled.
"""
import sys
import time

import torch


def main():
    tag = sys.argv[1] if len(sys.argv) > 1 else "0"
    code = ("template <typename T> T kjd_op(T x, T y, T alpha) "
            "{ return -x * y + x - y + alpha + T(%s); }" % tag)
    fn = torch.cuda.jiterator._create_jit_fn(code, alpha=1.0)
    a = torch.rand(1 << 20, device="cuda")
    b = torch.rand(1 << 20, device="cuda")
    torch.cuda.synchronize()  # the context exists before the timed call
    t0 = time.perf_counter()
    r = fn(a, b, alpha=3.0)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    ok = torch.allclose(r, -a * b + a - b + 3.0 + float(tag))
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "libnvrtc.so" in line})
    print("jiterator ok=%s first_call_ms=%.1f nvrtc=%s torch=%s device=%s" %
          (ok, ms, ",".join(libs), torch.__version__, torch.cuda.get_device_name()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
