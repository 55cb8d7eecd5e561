"""cupy_like.py: a CuPy-style program for the GPU machine
(scripts/gpu-dropin.sh): NVRTC through ctypes.CDLL("libnvrtc.so.13") with
CuPy's option layout (-I its include tree, -I the CUDA headers,
--std=c++17, -arch=compute_XX, a name expression), the PTX loaded and the
kernel launched with kjit.cuda (the driver alone), the result checked.
The include tree is tests/dropin/nvrtc_inc.py's (stand-ins written for the
test).  Prints one line:
  cupy_like ok=True first_call_ms=N compile_ms=N nvrtc=PATH
first_call_ms is nvrtcCreateProgram to the launch's end, as a program's
first kernel costs it; argv[2] is a tag that makes the kernel new.

    python3 cupy_like.py TREE TAG
"""
import ctypes
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvrtc_inc  # noqa: E402  (the include tree)

import kjit.cuda  # noqa: E402

SRC = """#include <cupy/complex.cuh>
#include <cupy/carray.cuh>
template <typename T> __global__ void kjd_scale(const T *x, T *y, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = kjd_mul(a, x[i]) + T(%s);
}
"""


def main():
    tree, tag = os.path.realpath(sys.argv[1]), sys.argv[2]
    nvrtc_inc.setup(tree)
    lib = ctypes.CDLL("libnvrtc.so.13")
    arch = kjit.cuda.arch().replace("sm_", "compute_")
    n = 1 << 16
    x = kjit.cuda.DeviceBuffer.from_bytes(struct.pack("%df" % n, *range(n)))
    y = kjit.cuda.DeviceBuffer(4 * n)
    kjit.cuda.synchronize()
    t0 = time.perf_counter()
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), (SRC % tag).encode(), b"kern.cu", 0, None, None)
    lib.nvrtcAddNameExpression(prog, b"kjd_scale<float>")
    opts = [b"-I" + tree.encode() + b"/cupy_inc", b"-I" + nvrtc_inc.CUDA_INC.encode(), b"--std=c++17",
            b"-arch=" + arch.encode()]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, ptx)
    low = ctypes.c_char_p()
    lib.nvrtcGetLoweredName(prog, b"kjd_scale<float>", ctypes.byref(low))
    name = low.value.decode()
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    t1 = time.perf_counter()
    fn = kjit.cuda.load(ptx.raw).function(name, "PPfi")
    fn.launch((n + 255) // 256, 256, [x, y, 2.0, n])
    kjit.cuda.synchronize()
    t2 = time.perf_counter()
    out = struct.unpack("%df" % n, y.to_bytes())
    ok = rc == 0 and all(out[i] == 2.0 * i + float(tag) for i in range(0, n, 97))
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "libnvrtc.so" in line})
    print("cupy_like ok=%s first_call_ms=%.1f compile_ms=%.1f nvrtc=%s" %
          (ok, (t2 - t0) * 1e3, (t1 - t0) * 1e3, ",".join(libs)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
