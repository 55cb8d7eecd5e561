"""fleet_compile.py: compile my kernel source once per machine (or fleet),
not once per process: the CuPy RawModule pattern with kjit.

CuPy's RawModule(code=...), PyTorch's load_inline and cuda-python's NVRTC
compile the source again in every process: every rank of a job, every
worker of a server pays NVRTC's tens of milliseconds (hiprtc's quarter
second).  With kjit each process asks kjitd: the first request compiles,
every other process on the machine gets the object from the cache in
microseconds, and a node that imported a kjit bundle never compiles at all.

    python3 examples/python/fleet_compile.py                  # CUDA, this GPU's target
    python3 examples/python/fleet_compile.py --procs 16       # 16 processes at once
    python3 examples/python/fleet_compile.py --backend hip --target gfx90a

It fetches a saxpy kernel, runs it (arrays from CuPy or PyTorch when
installed, else kjit.cuda.DeviceBuffer / kjit.hip.DeviceBuffer) and checks
the result on the CPU.  Without a GPU it says so after fetching: the
compile-once part works on any machine with kjitd (give --target).
Exit status 0 on success, 1 on a failure.
"""
import argparse
import array
import ctypes
import multiprocessing
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kjit  # noqa: E402

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""
BLOCK = 256


def fetch(backend: str, target):
    """One process's request: (status, milliseconds, object)."""
    t0 = time.perf_counter()
    obj = kjit.get(SOURCE, backend=backend, target=target, name="saxpy.cu", entries=["saxpy"])
    return obj.status, (time.perf_counter() - t0) * 1e3, obj


def _worker(args):
    status, ms, obj = fetch(*args)
    return status, ms, obj.key


def driver_of(backend: str):
    if backend == "cuda":
        import kjit.cuda as drv
    else:
        import kjit.hip as drv
    return drv


def run_saxpy(drv, obj, n: int = 1 << 20) -> float:
    """Launches saxpy on n floats; returns the max error against the CPU."""
    fn = drv.load(obj).function("saxpy", "fPPi")
    a = 2.5
    x = array.array("f", (random.uniform(-1, 1) for _ in range(n)))
    y = array.array("f", (random.uniform(-1, 1) for _ in range(n)))
    grid = (n + BLOCK - 1) // BLOCK
    try:
        import cupy  # the array library CuPy users already have
        dx, dy = cupy.asarray(x), cupy.asarray(y)
        fn.launch(grid, BLOCK, [a, dx, dy, n], stream=cupy.cuda.get_current_stream())
        out = array.array("f", cupy.asnumpy(dy).tobytes())
    except ImportError:
        with drv.DeviceBuffer.from_bytes(x.tobytes()) as dx, \
                drv.DeviceBuffer.from_bytes(y.tobytes()) as dy:
            fn.launch(grid, BLOCK, [a, dx, dy, n])
            drv.synchronize()
            out = array.array("f", dy.to_bytes())
    return max(abs(out[i] - (a * x[i] + y[i])) for i in range(n))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("cuda", "hip"), default="cuda")
    p.add_argument("--target", help="sm_90, gfx90a...; default: this GPU's, else kjit's resolution")
    p.add_argument("--procs", type=int, default=1, help="processes asking at once")
    a = p.parse_args()

    drv = driver_of(a.backend)
    target, why_no_gpu = a.target, None
    try:
        if a.backend == "cuda" and target is None:
            target = drv.arch()
        else:
            drv.device_count()
    except drv.DriverError as e:
        why_no_gpu = str(e)

    try:
        if a.procs > 1:
            ctx = multiprocessing.get_context("spawn")  # fresh processes, as a fleet has
            with ctx.Pool(a.procs) as pool:
                rows = pool.map(_worker, [(a.backend, target)] * a.procs)
            for status in ("compiled", "joined", "hit"):
                ms = [r[1] for r in rows if r[0] == status]
                if ms:
                    print(f"{len(ms):3d} processes: {status:8s} (median {sorted(ms)[len(ms) // 2]:.2f} ms)")
            print(f"one key for all: {len({r[2] for r in rows}) == 1}")
        status, ms, obj = fetch(a.backend, target)
    except kjit.TargetError as e:
        print(f"fleet_compile: {e}\n(no GPU here: pass --target, e.g. --target sm_90)",
              file=sys.stderr)
        return 1
    except kjit.Error as e:
        print(f"fleet_compile: {e}", file=sys.stderr)
        if e.log:
            print(e.log, file=sys.stderr)
        return 1
    print(f"saxpy for {obj.target}: {status} in {ms:.2f} ms ({len(obj.data)} bytes, key {obj.key[:16]}; "
          f"this process's first request, connecting included)")
    again = sorted(fetch(a.backend, target)[:2] for _ in range(9))
    print(f"saxpy again, 9 times: {', '.join(sorted({s for s, _ in again}))}, "
          f"median {sorted(m for _, m in again)[4] * 1e3:.0f} us")

    if why_no_gpu:
        print(f"not launched: {why_no_gpu}")
        return 0
    err = run_saxpy(drv, obj)
    print(f"saxpy on the GPU: max error {err:.2e}")
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
