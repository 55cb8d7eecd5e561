#!/bin/bash
# sandbox-cpu.sh: what the compile sandbox (issue 20) costs in CPU time, a
# figure a loaded machine moves much less than wall time.
#
#   bench/sandbox-cpu.sh TREE_A TREE_B [ROUNDS] [N]
#
# For each tree, alternating, each round: kjitd (--jobs 1, a fresh cache)
# runs under /usr/bin/time, which counts its CPU and that of every worker it
# reaped; once with a warm-up compile per family only, once with N more
# misses per family (-DSCALE changes).  The difference over N is the CPU of
# one warm NVRTC sm_90 plus one hiprtc gfx90a miss, workers' and daemon's.
set -u
[ $# -ge 2 ] || { echo "usage: bench/sandbox-cpu.sh TREE_A TREE_B [ROUNDS] [N]" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) ROUNDS=${3:-3} N=${4:-20}
T=$(mktemp -d "${TMPDIR:-/tmp}/kjit-scpu.XXXXXX")
trap 'rm -rf "$T"' EXIT
export KJIT_NO_AUTOSTART=1 KJIT_PROCESS_MEMO=0
echo 'extern "C" __global__ void k(float *x) { x[threadIdx.x] = x[threadIdx.x] * SCALE + 1.0f; }' >"$T/k.cu"
cp "$T/k.cu" "$T/k.hip"
run() { # TREE N -> "user+sys seconds" of kjitd and its workers
	local tree=$1 n=$2 sock="$T/s.sock" cache="$T/c$RANDOM"
	/usr/bin/time -f "%U %S" -o "$T/time" "$tree/build/kjitd" --foreground --socket "$sock" --cache-dir "$cache" \
		--log "$T/log" --jobs 1 --cuda-compiler nvrtc --hip-compiler hiprtc &
	local pid=$!
	for _ in $(seq 200); do KJIT_SOCKET=$sock "$tree/build/kjit" ping >/dev/null 2>&1 && break; sleep 0.05; done
	for i in $(seq 0 "$n"); do
		KJIT_SOCKET=$sock "$tree/build/kjit" get --source "$T/k.cu" --backend cuda --target sm_90 -DSCALE="$i.5f" -o /dev/null >/dev/null
		KJIT_SOCKET=$sock "$tree/build/kjit" get --source "$T/k.hip" --backend hip --target gfx90a -DSCALE="$i.5f" -o /dev/null >/dev/null
	done
	KJIT_SOCKET=$sock "$tree/build/kjit" stop >/dev/null 2>&1
	wait "$pid"
	awk '{ print $1 + $2 }' "$T/time"
	rm -rf "$cache"
}
for r in $(seq "$ROUNDS"); do
	for side in A B; do
		tree=$([ $side = A ] && echo "$A" || echo "$B")
		c0=$(run "$tree" 0)
		cn=$(run "$tree" "$N")
		per=$(awk -v a="$c0" -v b="$cn" -v n="$N" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }')
		echo "round $r $side: start+warm-up ${c0}s CPU; per NVRTC+hiprtc miss pair ${per} ms CPU"
		echo "$side $per" >>"$T/per"
	done
done
for side in A B; do
	awk -v s=$side '$1 == s { print $2 }' "$T/per" | sort -n |
		awk -v s=$side -v t="$([ $side = A ] && echo "$A" || echo "$B")" \
			'{ v[NR] = $1 } END { print s " (" t "): median " v[int((NR + 1) / 2)] " ms CPU per NVRTC+hiprtc miss pair, smallest " v[1] }'
done
