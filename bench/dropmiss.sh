#!/bin/bash
# dropmiss.sh: issue 31's breakdown of a miss through the drop-in NVRTC, on
# the CPU (NVRTC compiles need no GPU).  One private kjitd started as
# `kjit run` starts one (--prestart nvrtc, its worker up before any
# request); then ROUNDS rounds, each two fresh processes of bench-dropmiss
# (bench/dropmiss.c: dlopen("libnvrtc.so.13"), nvrtcVersion, two new
# kernels), one against the real NVRTC and one through kjit's drop-in,
# alternating; for the drop-in also its debug line (its own checks and
# headers, kjitd's round trip) and the worker's CPU time, page faults and
# compile time (kjitd's compile_ms).  Prints every line, then the medians.
#   bash bench/dropmiss.sh [ROUNDS] [ARCH] [LATER]   (default 7, sm_90, 0)
# LATER > 0: each process then compiles LATER more new kernels (-n), and
# the last line compares the CPU per warm compile: in-process (the mean of
# its LATER compiles) against the worker's (its CPU over the 2 + LATER
# compiles of the drop-in's process), the median of the rounds' ratios.
# BUILD (default build) holds kjitd, kjit, the drop-in and bench-dropmiss;
# KJIT_TEST_NVRTC_DIR the real NVRTC (default /usr/local/cuda/lib64).
set -u
ROUNDS=${1:-7}
ARCH=${2:-sm_90}
LATER=${3:-0}
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/$BUILD/bench"
KJIT="$TOP/$BUILD/kjit"
REAL=${KJIT_TEST_NVRTC_DIR:-/usr/local/cuda/lib64}
T=$(mktemp -d /tmp/kjit-dropmiss.XXXXXX)
trap 'stop_daemon; rm -rf "$T"' EXIT
. "$TOP/bench/ablib.sh"
export KJIT_NO_AUTOSTART=1 KJIT_DROPIN_STATS="$T/dropin.stats"

[ -x "$BIN/bench-dropmiss" ] || { echo "build it first: make $BUILD/bench/bench-dropmiss" >&2; exit 1; }
start_daemon "$TOP/$BUILD/kjitd" d --prestart nvrtc --jobs 1
for i in $(seq 100); do "$KJIT" stats | grep -q '^workers nvrtc *alive 1' && break; sleep 0.1; done
W=$(pgrep -P "$DPID" -f -- '--worker nvrtc' | head -n 1) # the worker; in its own PID namespace,
g=$(pgrep -P "$W" | head -n 1)                             # the one compiling is its child
W=${g:-$W}
cms() { "$KJIT" stats --json | tr ',{}' '\n\n\n' | sed -n 's/^"compile_ms":\([0-9]*\)$/\1/p'; }
wst() { awk '{print $10, ($14 + $15) * 10}' "/proc/$W/stat"; } # minor faults, CPU ms
for r in $(seq "$ROUNDS"); do
	LD_LIBRARY_PATH="$REAL" "$BIN/bench-dropmiss" -a "$ARCH" -s "r$r$$" -n "$LATER" | sed 's/^/real /'
	m0=$(cms)
	read -r f0 c0 <<<"$(wst)"
	KJIT_DROPIN_DEBUG=1 LD_LIBRARY_PATH="$TOP/$BUILD/dropin/nvrtc" "$BIN/bench-dropmiss" -a "$ARCH" -s "k$r$$" \
		-n "$LATER" 2>"$T/dbg" | sed 's/^/kjit /'
	read -r f1 c1 <<<"$(wst)"
	echo "kjit-worker compile_ms=$(($(cms) - m0)) cpu_ms=$((c1 - c0)) minflt=$((f1 - f0)) ($((2 + LATER)) compiles) |" \
		"$(tr '\n' ' ' <"$T/dbg")"
done | tee "$T/lines"
med() { # side field: the median of field over side's lines
	grep "^$1 dropmiss" "$T/lines" | grep -o "$2=[0-9.]*" | cut -d= -f2 | sort -n |
		awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
echo "medians over $ROUNDS rounds, $ARCH:"
for f in total1_ms compile1_ms compile2_ms version_ms load_ms; do
	echo "  $f: real $(med real $f), drop-in $(med kjit $f)"
done
[ "$LATER" -gt 0 ] || exit 0
grep -o 'real dropmiss-later.*cpu_ms=[0-9.,]*' "$T/lines" | sed 's/.*cpu_ms=//' | tr ',' ' ' |
	awk '{s = 0; for (i = 1; i <= NF; i++) s += $i; print s / NF}' >"$T/real"
grep '^kjit-worker' "$T/lines" | sed 's/.* cpu_ms=\([0-9]*\) .*/\1/' | awk -v n=$((2 + LATER)) '{print $1 / n}' >"$T/worker"
paste "$T/real" "$T/worker" | awk '{printf "%.1f %.1f %.2f\n", $1, $2, $2 / $1}' | sort -k3 -n >"$T/ratio"
awk '{r[NR] = $3; a = a sprintf(" %.1f/%.1f", $1, $2)} END {m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2;
	printf "  CPU per warm compile, in-process/worker (ms):%s; worker/in-process median %.2fx\n", a, m}' "$T/ratio"
