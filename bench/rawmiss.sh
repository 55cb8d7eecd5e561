#!/bin/bash
# bench/rawmiss.sh [ROUNDS] [N]: a single miss through kjitd against the raw
# compiler's warm in-process compile of the same source (issue 25's goal:
# <= 1.1x), for shaderc, NVRTC and hiprtc, in one run.  One kjitd (--jobs 1,
# fresh cache, --kernels-dir kernels_src); per round and family one
# bench-rawmiss of N (default 10) samples, each a raw compile followed by a
# kjit_get miss of the same source with a salt of its own (A/B alternating).
# NVRTC and hiprtc compile kernels_src/binary.cu (kernel add_f32: the
# daemon reads it and its header from the kernels dir; the raw side gets
# -I kernels_src/include) for sm_90 / gfx90a; shaderc compiles
# kernels_src/vulkan/binary.comp as bench/publish.sh does.  Needs no GPU;
# a family whose library is missing prints "failed".  One line each: the
# load average, then bench-rawmiss's "raw_p50_us miss_p50_us ratio
# raw_mean_us miss_mean_us".  Needs `make all bench-bins`.
set -u
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/$BUILD/bench"
ROUNDS=${1:-3} N=${2:-10}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-raw.XXXXXX")
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0 KJIT_SOCKET="$T/d.sock"
out=$("$BIN/bench-startd" "$KJIT_SOCKET" 300 -- "${KJITD:-$TOP/$BUILD/kjitd}" --foreground --socket "$KJIT_SOCKET" \
	--cache-dir "$T/c" --log "$T/d.log" --max-size 100G --jobs 1 --kernels-dir "$TOP/kernels_src") ||
	{ echo "kjitd did not start" >&2; exit 1; }
PID=${out#* }
trap 'kill "$PID" 2>/dev/null; sleep 0.5; rm -rf "$T"' EXIT
salt=$(( $(date +%s%N) % 1000000000 + 1 ))
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
for r in $(seq 1 "$ROUNDS"); do
	for fam in nvrtc:sm_90 hiprtc:gfx90a shaderc:vulkan1.2; do
		f=${fam%%:*} t=${fam#*:}
		salt=$((salt + 100000))
		if [ "$f" = shaderc ]; then
			res=$("$BIN/bench-rawmiss" "$TOP/kernels_src/vulkan/binary.comp" --target "$t" --salt "$salt" -n "$N" \
				--opt -DKJ_BLOCK=256 --opt -DKJ_OP_ADD 2>&1) || res="failed: $res"
		else
			res=$("$BIN/bench-rawmiss" "$TOP/kernels_src/binary.cu" --family "$f" --target "$t" --salt "$salt" \
				-n "$N" -I "$TOP/kernels_src/include" --kernel add_f32 --opt -DKJ_BLOCK=256 2>&1) || res="failed: $res"
		fi
		echo "round $r load $(cut -d' ' -f1 /proc/loadavg) $f $t: $res"
	done
done
