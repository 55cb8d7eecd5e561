#!/bin/bash
# ab.sh: hit latency of two kjit trees, interleaved A/B/A/B, for comparing a
# change against its base on a machine whose load you do not control.
#
#   bench/ab.sh TREE_A TREE_B [ROUNDS]
#
# Each TREE is a checkout built with `make all` and `make bench-bins` (its
# build/kjitd, build/kjit, build/bench/bench-hitlat and bench-startd are
# used).  Each round starts TREE_A's kjitd (the "test" compiler family, as
# bench.sh's scenario 1 does), makes a 16 KB and a 1 MB bundled kernel hit,
# times them with that tree's bench-hitlat (5000 and 200 requests), stops
# it, then does the same for TREE_B.  Prints one line per measurement and,
# at the end, the median and the smallest p50 of each (tree, size).  The
# process memo is off (KJIT_PROCESS_MEMO=0): the daemon's answer is timed.
# With AB_CALLGRIND=1 (and valgrind installed) it then counts, once per
# tree, the daemon's instructions per 16 KB hit under callgrind (1000 hits
# after a warm-up, as bench.sh's profile does): a figure the machine's load
# does not move, unlike the times.
set -u
[ $# -ge 2 ] || { echo "usage: bench/ab.sh TREE_A TREE_B [ROUNDS]" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) ROUNDS=${3:-6}
for t in "$A" "$B"; do
	for f in build/kjitd build/kjit build/bench/bench-hitlat build/bench/bench-startd; do
		[ -x "$t/$f" ] || { echo "ab: $t/$f is missing; build it first" >&2; exit 1; }
	done
done
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-ab.XXXXXX")
trap 'rm -rf "$T"' EXIT
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0
unset KJIT_HIP_ARCH KJIT_CUDA_ARCH KJIT_VULKAN_ENV HSA_OVERRIDE_GFX_VERSION
SIZES="16384 1048576"
mkdir -p "$T/k"
: >"$T/k/MANIFEST"
for sz in $SIZES; do
	# hex text: no '#', so the include scanner finds nothing to resolve
	head -c "$sz" /dev/urandom | od -An -tx1 -v | tr -d ' \n' | head -c "$sz" >"$T/k/blob$sz.src"
	echo "blob$sz hip blob$sz.src main" >>"$T/k/MANIFEST"
done
# start SIDE TREE [WRAP...]: that tree's kjitd on its own socket and cache.
start() {
	local side=$1 tree=$2
	shift 2
	export KJIT_SOCKET="$T/$side.sock" KJIT_CACHE_DIR="$T/$side"
	"$tree/build/bench/bench-startd" "$KJIT_SOCKET" 120 -- "$@" "$tree/build/kjitd" --foreground \
		--socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --log "$T/$side.log" \
		--hip-compiler test --kernels-dir "$T/k"
}
: >"$T/rows"
for r in $(seq 1 "$ROUNDS"); do
	for side in A B; do
		if [ $side = A ]; then tree=$A; else tree=$B; fi
		start $side "$tree" >/dev/null ||
			{ echo "ab: kjitd of $tree did not start: $(tail -n 2 "$T/$side.log")" >&2; continue; }
		for sz in $SIZES; do
			if ! "$tree/build/kjit" get --kernel "blob$sz" --backend hip --target gfx90a \
				-o "$T/obj" >/dev/null 2>"$T/err"; then
				echo "ab: $side: the $sz-byte kernel did not compile: $(head -c 200 "$T/err")" >&2
				continue
			fi
			case $sz in 1048576) n=200 w=20 ;; *) n=5000 w=100 ;; esac
			out=$("$tree/build/bench/bench-hitlat" --kernel "blob$sz" --target gfx90a -n $n -w $w) || continue
			set -- $out
			echo "round $r $side $sz bytes: p50 $1 us, p99 $2 us"
			echo "$side $sz $1" >>"$T/rows"
		done
		"$tree/build/kjit" stop >/dev/null 2>&1
		sleep 0.3
	done
done
if [ "${AB_CALLGRIND:-0}" = 1 ] && command -v valgrind >/dev/null 2>&1; then
	for side in A B; do
		if [ $side = A ]; then tree=$A; else tree=$B; fi
		cg="$T/cg.$side"
		export KJIT_SOCKET="$T/$side.sock" KJIT_CACHE_DIR="$T/$side" # start runs in a subshell here
		out=$(start $side "$tree" valgrind --tool=callgrind --callgrind-out-file="$cg" 2>>"$T/cg.err") ||
			{ echo "ab: kjitd of $tree did not start under callgrind" >&2; continue; }
		pid=${out#* }
		"$tree/build/bench/bench-hitlat" --kernel blob16384 --target gfx90a -n 10 -w 10 >/dev/null
		callgrind_control -z "$pid" >/dev/null 2>&1
		"$tree/build/bench/bench-hitlat" --kernel blob16384 --target gfx90a -n 1000 -w 0 >/dev/null
		callgrind_control -d "$pid" >/dev/null 2>&1
		"$tree/build/kjit" stop >/dev/null 2>&1
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
		kill "$pid" 2>/dev/null
		ir=$(callgrind_annotate "$cg.1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); printf "%.0f", $1 / 1000 }')
		echo "callgrind $side: ${ir:-?} daemon instructions per 16 KB hit"
	done
fi
echo "p50 over $ROUNDS rounds (median / smallest), us:"
for side in A B; do
	for sz in $SIZES; do
		awk -v s=$side -v z=$sz '$1 == s && $2 == z { print $3 }' "$T/rows" | sort -g |
			awk -v s=$side -v z=$sz '{ v[NR] = $1 } END {
				if (!NR) { printf "  %s %7d: no data\n", s, z; exit }
				m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "  %s %7d: %.2f / %.2f (%d rounds)\n", s, z, m, v[1], NR }'
	done
done
