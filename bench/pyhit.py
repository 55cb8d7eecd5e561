"""pyhit.py: latency of a hit through the Python package, one request at a
time on one connection: the Python twin of bench-hitlat (bench/hitlat.c).

    python3 bench/pyhit.py (--source F | --kernel K) [--backend B] [--target T]
                           [--opt O]... [-n N] [-w W] [--view]

Like bench-hitlat: backend hip by default, the environment ignored
(no_env), W warm-up gets (the first may compile), then N timed gets that
must all be hits; each sample is one kjit.Client.get call as a Python
caller makes it (finding the prepared request, libkjit's exchange, copying
the object into a bytes, freeing the result).  With --view, get(view=True):
the object as a memoryview over libkjit's result (no copy).  Either way the
previous get's Object is dropped inside the next sample (o = c.get(...)),
so a sample frees one result, as bench-hitlat's does.  Prints one line,
"p50_us p99_us mean_us n object_bytes", and "pyhit.py: PATH" on stderr,
PATH the Client's hit_path ("extension": the C extension kjit._hit;
"ctypes": $KJIT_PYTHON_EXT=0 or no extension; "" for a package before it).  Finds the package and library as
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
    p.add_argument("--view", action="store_true")
    a = p.parse_args()
    if (a.source is None) == (a.kernel is None) or a.n <= 0:
        p.error("give exactly one of --source and --kernel, and -n > 0")
    src = None
    if a.source:
        with open(a.source, "rb") as f:
            src = f.read()

    with kjit.Client(autostart=False) as c:
        print("pyhit.py: " + getattr(c, "hit_path", ""), file=sys.stderr)
        be, tg, opt, kern, view = a.backend, a.target, a.opt, a.kernel, a.view
        for _ in range(a.w):
            c.get(src, be, tg, opt, kernel=kern, no_env=True)
        t = [0.0] * a.n
        clock = time.perf_counter_ns
        size = 0
        o = None
        for i in range(a.n):
            if view:
                t0 = clock()
                o = c.get(src, be, tg, opt, kernel=kern, no_env=True, view=True)
                t1 = clock()
            else:
                t0 = clock()
                o = c.get(src, be, tg, opt, kernel=kern, no_env=True)
                t1 = clock()
            t[i] = (t1 - t0) / 1000.0
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
