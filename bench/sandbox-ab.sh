#!/bin/bash
# sandbox-ab.sh: what the compile sandbox (issue 20) costs a warm compile,
# two kjit trees interleaved A/B/A/B on a machine whose load you do not
# control.
#
#   bench/sandbox-ab.sh TREE_A TREE_B [ROUNDS]
#
# Each TREE is a checkout built with `make all`.  Each round starts TREE_A's
# kjitd (--jobs 1, a fresh cache), warms its NVRTC and hiprtc workers with
# one compile each, then times N (default 10) compiles of the same small
# kernel per family, each a miss because -DSCALE changes; then TREE_B the
# same.  Prints each round's medians, then the median and the smallest wall
# time of `kjit get` per (tree, family) over all rounds.  The hit path does not reach a worker; bench/ab.sh times it.
set -u
[ $# -ge 2 ] || { echo "usage: bench/sandbox-ab.sh TREE_A TREE_B [ROUNDS]" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) ROUNDS=${3:-3} N=${N:-10}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-sab.XXXXXX")
trap 'rm -rf "$T"' EXIT
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0
cat >"$T/k.cu" <<'K'
extern "C" __global__ void k(float *x) { x[threadIdx.x] = x[threadIdx.x] * SCALE + 1.0f; }
K
cp "$T/k.cu" "$T/k.hip"
run() { # TREE SIDE ROUND
	local tree=$1 side=$2 r=$3 sock="$T/$2.sock" cache="$T/$2-$3"
	"$tree/build/kjitd" --foreground --socket "$sock" --cache-dir "$cache" --log "$T/$side.log" --jobs 1 \
		--cuda-compiler nvrtc --hip-compiler hiprtc &
	local pid=$!
	for _ in $(seq 100); do KJIT_SOCKET=$sock "$tree/build/kjit" ping >/dev/null 2>&1 && break; sleep 0.05; done
	for fam in cuda:sm_90:k.cu hip:gfx90a:k.hip; do
		IFS=: read -r be tgt f <<<"$fam"
		KJIT_SOCKET=$sock "$tree/build/kjit" get --source "$T/$f" --backend "$be" --target "$tgt" -DSCALE=0.5f \
			-o /dev/null >/dev/null || echo "warm-up failed: $side $be" >&2
		for i in $(seq "$N"); do
			t0=$(date +%s%N)
			KJIT_SOCKET=$sock "$tree/build/kjit" get --source "$T/$f" --backend "$be" --target "$tgt" \
				-DSCALE="$r$i.0f" -o /dev/null >/dev/null || echo "compile failed: $side $be" >&2
			t1=$(date +%s%N)
			echo "$side $be $(((t1 - t0) / 1000)) $r" >>"$T/times"
		done
	done
	KJIT_SOCKET=$sock "$tree/build/kjit" stop >/dev/null 2>&1
	wait "$pid"
}
for r in $(seq "$ROUNDS"); do
	run "$A" A "$r"
	run "$B" B "$r"
done
for r in $(seq "$ROUNDS"); do # per round, to see the load move
	line="round $r:"
	for side in A B; do
		for be in cuda hip; do
			m=$(awk -v s=$side -v b=$be -v r=$r '$1 == s && $2 == b && $4 == r { print $3 }' "$T/times" | sort -n |
				awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
			line="$line $side-$([ $be = cuda ] && echo nvrtc || echo hiprtc) ${m}us"
		done
	done
	echo "$line"
done
for side in A B; do
	for be in cuda hip; do
		stat=$(awk -v s=$side -v b=$be '$1 == s && $2 == b { print $3 }' "$T/times" | sort -n |
			awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] " us, smallest " v[1] " us" }')
		echo "$side ($([ $side = A ] && echo "$A" || echo "$B")) $([ $be = cuda ] && echo "nvrtc sm_90" || echo "hiprtc gfx90a") miss: median $stat, over $((ROUNDS * N))"
	done
done
