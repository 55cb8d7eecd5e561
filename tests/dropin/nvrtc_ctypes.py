"""nvrtc_ctypes.py: loads NVRTC by name with ctypes, as CuPy and
cuda-python's pathfinder do (ctypes.CDLL("libnvrtc.so.13")), compiles a
templated kernel with a name expression, and prints every answer: codes,
sizes, SHA-256 of the PTX and CUBIN, the log and the lowered name.

tests/e2e/dropin.sh runs it against the real NVRTC and through kjit's
drop-in and compares the outputs byte for byte.
"""
import ctypes
import hashlib
import sys

SRC = b"""template <typename T> __global__ void axpy(T a, T *x, T *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = a * x[i] + y[i];
}
"""


def main():
    lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libnvrtc.so.13")
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), SRC, b"axpy.cu", 0, None, None)
    print("create", rc)
    print("add", lib.nvrtcAddNameExpression(prog, b"axpy<float>"))
    opts = (ctypes.c_char_p * 3)(b"--gpu-architecture=sm_90", b"--std=c++17", b"-default-device")
    rc = lib.nvrtcCompileProgram(prog, 3, opts)
    print("compile", rc, lib.nvrtcGetErrorString(rc).decode())
    size = ctypes.c_size_t()
    print("log size", lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), size.value)
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    print("log", repr(log.raw))
    for what in ("PTX", "CUBIN"):
        rc = getattr(lib, "nvrtcGet%sSize" % what)(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        rc2 = getattr(lib, "nvrtcGet%s" % what)(prog, buf)
        print(what, rc, rc2, size.value, hashlib.sha256(buf.raw).hexdigest())
    low = ctypes.c_char_p()
    print("lowered", lib.nvrtcGetLoweredName(prog, b"axpy<float>", ctypes.byref(low)), low.value)
    print("destroy", lib.nvrtcDestroyProgram(ctypes.byref(prog)))


if __name__ == "__main__":
    main()
