#!/bin/bash
# bench/batch-var.sh [RUNS] [KJITD]: why a batch of 200 misses against the
# serial time varies (issue 25's goal: <= 0.55x with 2 workers).  One kjitd
# (--jobs 2, fresh cache), then RUNS (default 5) runs of bench-batch, each
# with a fresh salt: 200 distinct misses of the 22 bundled Vulkan kernels
# (shaderc) in one kjit_get_many, then 32 misses one kjit_get at a time.
# Per run, one line: the load average when it started, the batch's wall ms,
# the serial ms per miss, their ratio (batch / (serial x 200)), the
# workers' own compile time (compile_ms, summed over the batch) halved (the
# two-worker floor of the batch), and the CPU ms kjitd (its loop and
# publish threads; not the workers, which run sandboxed in namespaces of
# their own) used over the whole run, per miss (the run's 248 misses and
# its hits, divided by 240).  TMPDIR=/dev/shm puts the cache on tmpfs.  Needs `make all bench-bins`.
set -u
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/$BUILD/bench"
RUNS=${1:-5}
KJITD=${2:-$TOP/$BUILD/kjitd}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-bvar.XXXXXX")
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0 KJIT_SOCKET="$T/d.sock" KJIT_CACHE_DIR="$T/c"
out=$("$BIN/bench-startd" "$KJIT_SOCKET" 300 -- "$KJITD" --foreground --socket "$KJIT_SOCKET" --cache-dir "$T/c" \
	--log "$T/d.log" --max-size 100G --jobs 2) || { echo "kjitd did not start" >&2; exit 1; }
PID=${out#* }
trap 'kill "$PID" 2>/dev/null; sleep 0.5; rm -rf "$T"' EXIT
KERNELS=$(awk '$2 == "vulkan" { print $1 }' "$TOP/kernels_src/MANIFEST" | tr '\n' ' ')
cpu_ms() { # PIDS: their user + system CPU so far, ms (threads included)
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo $((t * 1000 / $(getconf CLK_TCK)))
}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores; columns: load1 batch_ms serial_ms/miss ratio compile_ms/2 kjitd_cpu_ms/miss"
for r in $(seq 1 "$RUNS"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	d0=$(cpu_ms "$PID")
	salt=$(( $(date +%s%N) % 1000000000 + 1 ))
	mkdir -p "$T/b$r"
	# shellcheck disable=SC2046,SC2086 # KERNELS and the result: words
	set -- $("$BIN/bench-batch" --backend vulkan --target vulkan1.3 --salt "$salt" -n 200 -r 1 --serial 32 \
		"$T/b$r" $KERNELS)
	d1=$(cpu_ms "$PID")
	rm -rf "$T/b$r"
	awk -v l="$load" -v m="$1" -v s="$4" -v cms="$5" -v dc=$((d1 - d0)) 'BEGIN {
		printf "%s %.1f %.2f %.2fx %.1f %.2f\n", l, m, s, m / (s * 200), cms / 2, dc / 240 }'
done
