#!/bin/sh
# gpu-dropin.sh: issue 23's GPU part (docs/dropin.md), on the GPU machine
# (an H100 or H200 with PyTorch, CUDA 13 in /usr/local/cuda; no libuv or
# hiredis there).  Run from a folder holding this build's kjit, kjitd,
# dropin/ (the drop-in libraries), kernels_src/, tests/ (jiterator.py,
# nvrtc-api, bench-dropin) and debs/ (libuv1, libhiredis0.14 of Debian 12):
#   sh gpu-dropin.sh [OUTDIR]
# It checks how PyTorch loads NVRTC (LD_DEBUG), times a jiterator kernel's
# first call with PyTorch's kernel cache off (USE_PYTORCH_KERNEL_CACHE=0):
# twice without kjit, twice under `kjit run` (the second process must be a
# kjit hit, with the right result), once under `kjit run --no-preload` (does
# the library path alone reach PyTorch?); compares nvrtc-api's answers with
# the real NVRTC there; runs the drop-in bench.  Prints "ok NAME" / "not ok
# NAME: why" lines and writes everything to OUTDIR (default $OUT or /tmp).
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=${1:-${OUT:-/tmp}}
W=$(mktemp -d /tmp/kjit-gpu-dropin.XXXXXX)
FAILS=0
ok() { echo "ok $1"; }
not_ok() { echo "not ok $1: $2"; FAILS=$((FAILS + 1)); }

for f in "$D"/debs/*.deb; do dpkg -x "$f" "$W/libs" || exit 1; done
export LD_LIBRARY_PATH="$W/libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KJIT_SOCKET="$W/sock/kjitd.sock" KJIT_CACHE_DIR="$W/cache" KJIT_DROPIN_STATS="$W/dropin.stats"
export KJIT_NO_AUTOSTART=1 USE_PYTORCH_KERNEL_CACHE=0 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$W/sock"
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__)'; date -u; } >"$O/gpu-dropin-machine.txt" 2>&1
cat "$O/gpu-dropin-machine.txt"
"$D/kjitd" --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --kernels-dir "$D/kernels_src" --log "$O/gpu-dropin-kjitd.log" ||
	{ not_ok "gpu-dropin: kjitd" "did not start"; exit 1; }

# How PyTorch finds NVRTC: which files, by name or by path.
LD_DEBUG=libs python3 "$D/tests/jiterator.py" 0 2>&1 | grep -iE 'nvrtc' | head -40 >"$O/gpu-dropin-lddebug.txt"

run() { # label, command...: one jiterator process, its line into the log
	label=$1
	shift
	line=$("$@" 2>>"$O/gpu-dropin-stderr.txt" | grep '^jiterator')
	echo "$label: $line" | tee -a "$O/gpu-dropin-runs.txt"
	echo "$line" | sed -n 's/.*first_call_ms=\([0-9.]*\).*/\1/p' >"$W/ms"
	echo "$line" | grep -q 'ok=True'
}
hits() { "$D/kjit" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"hits":\([0-9]*\)$/\1/p'; }
compiles() { "$D/kjit" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"compiles":\([0-9]*\)$/\1/p'; }

run "without kjit, process 1" python3 "$D/tests/jiterator.py" 1 || not_ok "gpu-dropin: jiterator without kjit" "wrong result"
run "without kjit, process 2" python3 "$D/tests/jiterator.py" 1
c0=$(compiles)
h0=$(hits)
export KJIT_DROPIN_DEBUG=1
run "kjit run, process 1" "$D/kjit" run -- python3 "$D/tests/jiterator.py" 2 &&
	ok "gpu-dropin: jiterator under kjit run, first process, right result" ||
	not_ok "gpu-dropin: jiterator under kjit run, first process" "wrong result or no run"
c1=$(compiles)
h1=$(hits)
run "kjit run, process 2" "$D/kjit" run -- python3 "$D/tests/jiterator.py" 2 &&
	ok "gpu-dropin: jiterator under kjit run, second process, right result" ||
	not_ok "gpu-dropin: jiterator under kjit run, second process" "wrong result or no run"
c2=$(compiles)
h2=$(hits)
[ "$c1" -gt "$c0" ] && ok "gpu-dropin: the first process compiled through kjitd ($c0 -> $c1)" ||
	not_ok "gpu-dropin: the first process compiled through kjitd" "compiles $c0 -> $c1"
[ "$c2" = "$c1" ] && [ "$h2" -gt "$h1" ] && ok "gpu-dropin: the second process was a kjit hit (hits $h1 -> $h2)" ||
	not_ok "gpu-dropin: the second process was a kjit hit" "compiles $c1 -> $c2, hits $h1 -> $h2"
run "kjit run, a new kernel, kjitd's worker warm" "$D/kjit" run -- python3 "$D/tests/jiterator.py" 4
run "kjit run --no-preload, process 1" "$D/kjit" run --no-preload -- python3 "$D/tests/jiterator.py" 3
run "kjit run --no-preload, process 2" "$D/kjit" run --no-preload -- python3 "$D/tests/jiterator.py" 3
unset KJIT_DROPIN_DEBUG
"$D/kjit" stats >"$O/gpu-dropin-stats.txt" 2>&1

# Every NVRTC answer, real vs drop-in, on this machine's NVRTC.
LD_LIBRARY_PATH="/usr/local/cuda/lib64:$LD_LIBRARY_PATH" "$D/tests/nvrtc-api" >"$W/real.txt" 2>&1
LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/nvrtc-api" >"$W/kj1.txt" 2>&1
LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/nvrtc-api" >"$W/kj2.txt" 2>&1
cmp -s "$W/real.txt" "$W/kj1.txt" && cmp -s "$W/real.txt" "$W/kj2.txt" &&
	ok "gpu-dropin: nvrtc-api through kjit = the real NVRTC there, byte for byte" ||
	{ not_ok "gpu-dropin: nvrtc-api" "differs from the real NVRTC"; diff "$W/real.txt" "$W/kj1.txt" | head -20; }
LD_LIBRARY_PATH="$D/dropin/nvrtc:$LD_LIBRARY_PATH" "$D/tests/bench-dropin" 2000 | tee "$O/gpu-dropin-bench.txt"
cat "$O/gpu-dropin-stats.txt" | grep -E '^(hits|compiles|dropin)'
"$D/kjit" stop >/dev/null 2>&1
echo "# gpu-dropin: $FAILS failed"
exit "$((FAILS > 0))"
