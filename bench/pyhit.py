"""pyhit.py: latency of a hit through the Python package, one request at a
time on one connection: the Python twin of bench-hitlat (bench/hitlat.c).

    python3 bench/pyhit.py (--source F | --kernel K) [--backend B] [--target T]
                           [--opt O]... [-n N] [-w W]

Like bench-hitlat: backend hip by default, the environment ignored
(no_env), W warm-up gets (the first may compile), then N timed gets that
must all be hits; each sample is the whole kjit.Client.get call as a Python
caller sees it (building the request, libkjit's exchange, copying the
object into a bytes, freeing the result).  Prints one line,
"p50_us p99_us mean_us n object_bytes".  Finds the package and library as
any user would: PYTHONPATH=python and KJIT_LIBRARY (bench/bench.sh sets
both), $KJIT_SOCKET without autostart.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import kjit  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(prog="pyhit.py")
    p.add_argument("--source")
    p.add_argument("--kernel")
    p.add_argument("--backend", default="hip")
    p.add_argument("--target")
    p.add_argument("--opt", action="append", default=[])
    p.add_argument("-n", type=int, default=1000)
    p.add_argument("-w", type=int, default=100)
    a = p.parse_args()
    if (a.source is None) == (a.kernel is None) or a.n <= 0:
        p.error("give exactly one of --source and --kernel, and -n > 0")
    src = None
    if a.source:
        with open(a.source, "rb") as f:
            src = f.read()

    with kjit.Client(autostart=False) as c:
        def get() -> kjit.Object:
            return c.get(src, a.backend, a.target, a.opt, kernel=a.kernel, no_env=True)

        for _ in range(a.w):
            get()
        t = [0.0] * a.n
        clock = time.perf_counter_ns
        size = 0
        for i in range(a.n):
            t0 = clock()
            o = get()
            t[i] = (clock() - t0) / 1000.0
            if o.status != "hit":
                print(f"pyhit.py: get {i}: expected hit, got {o.status}", file=sys.stderr)
                return 1
            size = len(o.data)
    t.sort()
    p50 = t[a.n // 2]  # bench_summarize's percentiles
    p99 = t[min(a.n - 1, int(a.n * 0.99))]
    print(f"{p50:.2f} {p99:.2f} {sum(t) / a.n:.2f} {a.n} {size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
