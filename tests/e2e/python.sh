#!/bin/sh
# python.sh: the Python package (python/kjit) against a real kjitd on a
# temporary socket and cache: `python3 -m unittest` discovery over
# tests/python/, with a result class that prints one "ok NAME" or
# "not ok NAME: why" line per test for tests/run.sh to count (tracebacks go
# to stderr).  The package loads this build's libkjit.so (KJIT_LIBRARY) and
# must load its C extension, kjit._hit, built beside it (KJIT_PYTHON_EXT=1:
# a build without it fails here, loudly; tests/python/test_hit.py runs the
# ctypes path too).  Under make test-asan the extension carries the
# sanitizers as the library does, and loads with their runtimes preloaded.
. "$(dirname "$0")/lib.sh"

if ! command -v python3 >/dev/null 2>&1; then
	not_ok "python3" "not installed: the Python package was NOT tested"
	exit 1
fi
[ -f "$TOP/$BUILD/libkjit.so" ] || { not_ok "libkjit.so" "$TOP/$BUILD/libkjit.so missing; run make"; exit 1; }
start_daemon || { not_ok start "kjitd did not start"; exit 1; }

# Under make test-asan libkjit.so carries the sanitizers, whose runtime must
# come first in a process that loads it: preload it into python3 (leak
# checking off: the interpreter keeps its memory to the end by design).
if [ -n "$(san_flags)" ]; then
	asan=$(${CC:-cc} -print-file-name=libasan.so)
	ubsan=$(${CC:-cc} -print-file-name=libubsan.so)
	export LD_PRELOAD="$asan $ubsan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
export PYTHONPATH="$TOP/python" PYTHONDONTWRITEBYTECODE=1 KJIT_PYTHON_EXT=1
export KJIT_LIBRARY="$TOP/$BUILD/libkjit.so" KJIT_BIN="$KJIT" KJIT_TEST_TMP="$T"
cd "$TOP" || exit 1
python3 - tests/python <<'EOF'
import sys, traceback, unittest

class OneLine(unittest.TestResult):
    """Prints ok / not ok NAME: why per test; tracebacks to stderr."""
    def name(self, t):
        return f"python: {type(t).__name__}.{t._testMethodName}"
    def addSuccess(self, t):
        print(f"ok {self.name(t)}", flush=True)
    def _bad(self, t, err, kind):
        exc = traceback.format_exception_only(err[0], err[1])[-1].strip().replace("\n", " ")
        print(f"not ok {self.name(t)}: {kind}: {exc[:300]}", flush=True)
        print(f"---- {self.name(t)}", "".join(traceback.format_exception(*err)), sep="\n",
              file=sys.stderr, flush=True)
    def addFailure(self, t, err):
        super().addFailure(t, err); self._bad(t, err, "failed")
    def addError(self, t, err):
        super().addError(t, err); self._bad(t, err, "error")
    def addSkip(self, t, reason):
        print(f"# skip {self.name(t)}: {reason}", flush=True)
    def addUnexpectedSuccess(self, t):
        super().addUnexpectedSuccess(t)
        print(f"not ok {self.name(t)}: unexpected success", flush=True)

suite = unittest.defaultTestLoader.discover(sys.argv[1], top_level_dir=sys.argv[1])
if suite.countTestCases() == 0:
    print("not ok python: no tests found in " + sys.argv[1])
    sys.exit(1)
r = OneLine()
suite.run(r)
sys.exit(0 if r.wasSuccessful() else 1)
EOF
rc=$?
[ $rc -eq 0 ] || FAILS=$((FAILS + 1))
finish
