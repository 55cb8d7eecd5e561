"""nvrtc_cache.py: NVRTC 12.9+'s own cache (it keeps bitcode->PTX and
PTX->cubin results in the CUDA driver's compute cache) against a compile
that bypasses it, on the GPU machine (scripts/gpu-dropin.sh; issue 31).
For a kernel new to that cache (argv[1] is a tag put in its code), sm_90
(cubin) and compute_90 (PTX): compile it (a miss, which fills the cache),
again (a hit), with --no-cache (what kjitd's worker passes), and a
comment-only variant (same bitcode).  Every compile with
--enable-cache-trace; prints per compile the cache state (H hit, M miss,
X no cache, - no trace line), the wall time and the object's SHA-256
prefix, then one line:
  nvrtc_cache same=True
when every object of a target is the same bytes (a hit gives what a
compile gives: kjit's worker, which never uses the cache, and a program
that hits it agree).

    python3 nvrtc_cache.py TAG
"""
import ctypes
import hashlib
import sys
import time

SRC = ('%sextern "C" __global__ void kjd_c(float *x, int n) {\n'
       '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
       '  if (i < n) x[i] = x[i] * 2.0f + %s.0f;\n}\n')


def state(log):
    s = ""
    i = 0
    while len(s) < 2:
        h, m = log.find("retrieved cached", i), log.find("Cache miss", i)
        if h < 0 and m < 0:
            break
        if m < 0 or 0 <= h < m:
            s, i = s + "H", h + 1
        else:
            s, i = s + "M", m + 1
    return s or ("X" if "[nvrtc cache]" in log or "cache key" in log else "-")


def compile_one(lib, src, opts, ptx):
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kjd_c.cu", 0, None, None)
    o = [x.encode() for x in opts]
    t0 = time.perf_counter()
    rc = lib.nvrtcCompileProgram(prog, len(o), (ctypes.c_char_p * len(o))(*o))
    ms = (time.perf_counter() - t0) * 1e3
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    what = "PTX" if ptx else "CUBIN"
    getattr(lib, "nvrtcGet%sSize" % what)(prog, ctypes.byref(n))
    obj = ctypes.create_string_buffer(n.value)
    getattr(lib, "nvrtcGet%s" % what)(prog, obj)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, state(log.value.decode(errors="replace")), ms, hashlib.sha256(obj.raw).hexdigest()[:16]


def main():
    tag = sys.argv[1]
    lib = ctypes.CDLL("libnvrtc.so.13")
    same = True
    for arch in ("sm_90", "compute_90"):
        base = ["--gpu-architecture=" + arch, "--enable-cache-trace"]
        runs = [("new", "", base), ("again", "", base), ("no-cache", "", base + ["--no-cache"]),
                ("comment", "// a comment only\n", base)]
        shas = set()
        for label, pre, opts in runs:
            rc, st, ms, sha = compile_one(lib, SRC % (pre, tag), opts, arch.startswith("compute_"))
            shas.add(sha)
            print("nvrtc_cache %s %s rc=%d cache=%s ms=%.1f sha=%s" % (arch, label, rc, st, ms, sha))
            same = same and rc == 0
        same = same and len(shas) == 1
    print("nvrtc_cache same=%s" % same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
