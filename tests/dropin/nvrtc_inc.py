"""nvrtc_inc.py: NVRTC compiles with include folders, as CuPy and NVIDIA
Warp make them, through ctypes (ctypes.CDLL("libnvrtc.so.13"), as CuPy
loads NVRTC), printing every answer: result codes, the log, sizes and
SHA-256 of PTX and CUBIN, lowered names.

    python3 nvrtc_inc.py TREE [SCENARIO...]

TREE is a folder this program fills (files not there yet) with include trees written for the
test (stand-ins for CuPy's cupy/complex.cuh, cupy/carray.cuh and Warp's
native/ headers; nothing of theirs is copied) and runs in (the current
folder matters to NVRTC).  tests/e2e/dropin-inc.sh runs it against the real
NVRTC and twice under `kjit run` and compares the outputs byte for byte;
the scenarios kjit must serve and the ones it must forward (and why) are
listed there.  With CUDA_INC set, its folder is the CUDA headers' folder
given to NVRTC (CuPy gives -I$CUDA_PATH/include).
"""
import ctypes
import hashlib
import os
import sys

CUDA_INC = os.environ.get("CUDA_INC", "/usr/local/cuda/include")

FILES = {
    # CuPy: <cupy/...> includes throughout, one quoted include beside its includer.
    "cupy_inc/cupy/complex.cuh": "#pragma once\n#include <cupy/complex/complex.h>\n"
    "using kjd::complex;\n",
    "cupy_inc/cupy/complex/complex.h": "#pragma once\n#include \"complex_inl.h\"\n"
    "namespace kjd { template <typename T> struct complex { T re, im;\n"
    "  __device__ complex(T r = 0, T i = 0) : re(r), im(i) {}\n"
    "  __device__ complex operator*(const complex &o) const { return complex(kjd_mul(re, o.re) - im * o.im, re * o.im + im * o.re); }\n"
    "  __device__ complex operator+(const complex &o) const { return complex(re + o.re, im + o.im); } }; }\n",
    "cupy_inc/cupy/complex/complex_inl.h": "#pragma once\ntemplate <typename T> __device__ T kjd_mul(T a, T b) { return a * b; }\n",
    "cupy_inc/cupy/carray.cuh": "#pragma once\n#include <cuda_fp16.h>\n#include <cupy/atomics.cuh>\n"
    "template <typename T, int N> struct CArray { T *data; long long size; long long shape[N]; };\n",
    "cupy_inc/cupy/atomics.cuh": "#pragma once\n__device__ inline float kjd_atomic(float *p, float v) { return atomicAdd(p, v); }\n",
    # Warp: --include-path=<warp/native>, quoted includes among its headers.
    "warp_native/builtin.h": "#pragma once\n#include \"vec.h\"\n#include \"mat.h\"\n#define WP_API __device__\n",
    "warp_native/vec.h": "#pragma once\n#include \"initializer_array.h\"\n"
    "namespace wp { struct vec3 { float c[3]; }; __device__ inline float dot(vec3 a, vec3 b)\n"
    "{ return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2]; } }\n",
    "warp_native/mat.h": "#pragma once\n#include \"vec.h\"\nnamespace wp { struct mat33 { vec3 r[3]; }; }\n",
    "warp_native/initializer_array.h": "#pragma once\nnamespace wp { template <unsigned N, typename T> struct ia { T v[N]; }; }\n",
    # Two folders, and a quoted include found beside its includer in the tree
    # kjit scans but in an earlier folder by NVRTC (d2/sub/c.h's "b.h").
    "d1/b.h": "#define KJD_BV 12\n",
    "d1/sub/b.h": "#define KJD_BV 11\n",
    "d2/sub/c.h": "#include \"b.h\"\n",
    "d2/two.h": "#define KJD_TWO 2\n",
    # A header using __FILE__, and one with a warning (NVRTC's log names its path).
    "fileinc/where.h": "__device__ const char *kjd_where() { return __FILE__; }\n",
    "warninc/warn.h": "__device__ int kjd_warn() { int unused; return 1; }\n",
    # The current folder: NVRTC finds the source's "..." includes there.
    "cwd_only.h": "#define KJD_CWD 5\n",
}

CUPY_SRC = """#include <cupy/complex.cuh>
#include <cupy/carray.cuh>
template <typename T> __global__ void kjd_axpy(CArray<T, 1> x, CArray<T, 1> y, T a) {
  long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < x.size) y.data[i] = a * x.data[i] + y.data[i];
}
extern "C" __global__ void kjd_half(__half *h, float *acc) { kjd_atomic(acc, __half2float(h[threadIdx.x])); }
"""

WARP_SRC = """#include "builtin.h"
extern "C" __global__ void kjd_warp_dot(const wp::vec3 *a, const wp::vec3 *b, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = wp::dot(a[i], b[i]);
}
"""

# name, source, options (TREE/ replaced), name expressions
SCENARIOS = [
    ("cupy", CUPY_SRC, ["-ITREE/cupy_inc", "-I" + CUDA_INC, "--std=c++17", "-arch=compute_90", "-DCUPY_USE_KJD=1"],
     ["kjd_axpy<float>", "kjd_axpy<complex<float>>"]),
    ("cupy-sm", CUPY_SRC, ["-ITREE/cupy_inc", "-I" + CUDA_INC, "--std=c++17", "--gpu-architecture=sm_90"],
     ["kjd_axpy<double>"]),
    ("warp", WARP_SRC, ["--include-path=TREE/warp_native", "--gpu-architecture=sm_90", "--use_fast_math",
                        "-DWP_NO_CRT"], []),
    ("split", "#include \"two.h\"\n#include <b.h>\n__global__ void kjd_k(int *o) { *o = KJD_TWO + KJD_BV; }\n",
     ["-I", "TREE/d2", "--include-path", "TREE/d1", "-arch=compute_90"], []),
    ("elsewhere", "#include \"sub/c.h\"\n__global__ void kjd_k(int *o) { *o = KJD_BV; }\n",
     ["-ITREE/d1", "-ITREE/d2", "-arch=compute_90"], []),
    ("file", "#include \"where.h\"\n__global__ void kjd_k(const char **o) { *o = kjd_where(); }\n",
     ["-ITREE/fileinc", "-arch=compute_90"], []),
    ("warning", "#include \"warn.h\"\n__global__ void kjd_k(int *o) { *o = kjd_warn(); }\n",
     ["-ITREE/warninc", "-arch=compute_90"], []),
    ("lineinfo", "#include <cupy/complex.cuh>\n__global__ void kjd_k(float *o) { *o = kjd_mul(o[1], o[2]); }\n",
     ["-ITREE/cupy_inc", "-arch=compute_90", "-lineinfo"], []),
    ("cwd", "#include \"cwd_only.h\"\n__global__ void kjd_k(int *o) { *o = KJD_CWD; }\n", ["-arch=compute_90"], []),
]


def setup(tree):
    for name, text in FILES.items():
        path = os.path.join(tree, name)
        if os.path.exists(path):
            continue  # a test may have changed it
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def run(lib, name, src, opts, exprs, tree):
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), (name + ".cu").encode(), 0, None, None)
    print(name, "create", rc)
    for e in exprs:
        print(name, "add", e, lib.nvrtcAddNameExpression(prog, e.encode()))
    o = [x.replace("TREE", tree).encode() for x in opts]
    rc = lib.nvrtcCompileProgram(prog, len(o), (ctypes.c_char_p * len(o))(*o))
    print(name, "compile", rc, lib.nvrtcGetErrorString(rc).decode())
    size = ctypes.c_size_t()
    print(name, "log size", lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), size.value)
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    print(name, "log", repr(log.raw.replace(tree.encode(), b"TREE")))
    for what in ("PTX", "CUBIN"):
        rc = getattr(lib, "nvrtcGet%sSize" % what)(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        rc2 = getattr(lib, "nvrtcGet%s" % what)(prog, buf)
        print(name, what, rc, rc2, size.value, hashlib.sha256(buf.raw).hexdigest())
    for e in exprs:
        low = ctypes.c_char_p()
        print(name, "lowered", e, lib.nvrtcGetLoweredName(prog, e.encode(), ctypes.byref(low)), low.value)
    print(name, "destroy", lib.nvrtcDestroyProgram(ctypes.byref(prog)))


def main():
    tree = os.path.realpath(sys.argv[1])
    want = sys.argv[2:]
    setup(tree)
    os.chdir(tree)
    lib = ctypes.CDLL("libnvrtc.so.13")
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    for name, src, opts, exprs in SCENARIOS:
        if not want or name in want:
            run(lib, name, src, opts, exprs, tree)


if __name__ == "__main__":
    main()
