#!/bin/bash
# publish.sh: the miss path with the publish off kjitd's loop (issue 25),
# the daemon under test against a baseline kjitd, in one run.
#
#   bench/publish.sh BASE_KJITD
#
# For each daemon (BASE_KJITD, then this tree's build/kjitd), a fresh cache:
#  - batch: bench-batch, 200 distinct misses of the 22 bundled Vulkan
#    kernels (shaderc) in one kjit_get_many, 2 compile workers, against 16
#    misses one kjit_get at a time (x200);
#  - single miss: bench-rawmiss, 20 misses of kernels_src/vulkan/binary.comp
#    one at a time, warm workers, against 20 compiles of the same source by
#    libshaderc in the benchmark's own process (warm);
#  - ping while publishing: bench-pubping, 40 misses of 8 MB objects of the
#    test compiler family one at a time while another connection pings.
# Prints one line per measure; the caller copies them into bench/RESULTS.md.
set -u
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN="$TOP/$BUILD/bench"
KJIT="$TOP/$BUILD/kjit"
BASE=${1:?usage: publish.sh BASE_KJITD}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-pub.XXXXXX")
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0
. "$TOP/bench/ablib.sh"
trap 'stop_daemon; rm -rf "$T"' EXIT


KERNELS=$(awk '$2 == "vulkan" { print $1 }' "$TOP/kernels_src/MANIFEST" | tr '\n' ' ')
one() { # KJITD NAME
	local salt out
	salt=$(( $(date +%s%N) % 1000000000 + 1 ))
	start_daemon "$1" "$2" --jobs 2
	mkdir -p "$T/batch-$2"
	out=$("$BIN/bench-batch" --backend vulkan --target vulkan1.3 --salt "$salt" -n 200 -r 3 --serial 16 \
		"$T/batch-$2" $KERNELS) || out="failed"
	set -- $out
	awk -v n="$NAME" -v m="${1:-0}" -v s="${4:-0}" 'BEGIN { printf "%-4s batch of 200 misses: %.1f ms; serial %.2f ms x 200 = %.1f ms; ratio %.2fx\n", n, m, s, s * 200, (s > 0 ? m / (s * 200) : 0) }'
	out=$("$BIN/bench-rawmiss" "$TOP/kernels_src/vulkan/binary.comp" --target vulkan1.2 --salt "$((salt + 500000))" -n 20 \
		--opt -DKJ_BLOCK=256 --opt -DKJ_OP_ADD) || out="failed"
	printf '%-4s single miss: raw p50 us, kjit miss p50 us, ratio, raw mean, kjit mean: %s\n' "$NAME" "$out"
	stop_daemon
	start_daemon "$TOP_KJITD_FOR" "$NAME" --jobs 2 --hip-compiler test
	out=$("$BIN/bench-pubping" --salt "$salt" -n 40 --size 8000000) || out="failed"
	printf '%-4s ping during 40 misses of 8 MB: pings, p50 us, p99 us, max us, stream ms: %s\n' "$NAME" "$out"
	stop_daemon
	rm -rf "${T:?}/$NAME" "$T/batch-$NAME"
}

date -u "+# %Y-%m-%d %H:%M UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
NAME=base TOP_KJITD_FOR="$BASE" one "$BASE" base
NAME=new TOP_KJITD_FOR="$TOP/$BUILD/kjitd" one "$TOP/$BUILD/kjitd" new
