#!/bin/sh
# gpu-sweep.sh: measure build variants of a kernel (compile options) on the GPU machine
# in one call, each checked against the oracle at full size and timed beside the copy.
#     scripts/gpu-sweep.sh build [LIST]   # here: nvcc compiles each variant of LIST
#                                         # (default scripts/sweep.list) into
#                                         # .gpu/sweep/NAME/ (a one-line MANIFEST and
#                                         # the cubin for sm_90), carried with .gpu
#     scripts/gpu-sweep.sh run            # there: cuda_launch --bench on each variant
# A LIST line: NAME OP FILE ENTRY [-DOPTION ...] [-- LAUNCHER ARGS]; OP is the manifest
# name the bench builds its case for, ENTRY the kernel's entry point; -DKJ_SM90A (a
# marker) compiles for sm_90a; the launcher argument `check` runs the op's test shapes
# instead of the bench.  Lines starting
# with # are skipped.  Output goes to stdout and, when $OUT is set, to $OUT/sweep.log.
# The cubins come from this machine's nvcc (ptxas of the same CUDA release as the GPU
# machine's NVRTC); the chosen options then go into kernels_src/MANIFEST.
set -u
MODE=${1:-run}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
SW=.gpu/sweep

if [ "$MODE" = build ]; then
	LIST=${2:-scripts/sweep.list}
	rm -rf "$SW" && mkdir -p "$SW" || exit 1
	grep -v '^#' "$LIST" | grep -v '^ *$' | while read -r name op file entry rest; do
		opts=${rest%%--*}
		args=
		case "$rest" in *--*) args=${rest#*--} ;; esac
		mkdir -p "$SW/$name" || exit 1
		# -DKJ_BLOCK= is in opts: the manifest line carries it to the launcher
		echo "$op cuda $file $entry $opts" >"$SW/$name/MANIFEST"
		echo "$args" >"$SW/$name/args"
		gen=-arch=sm_90 arch=sm_90
		case "$opts" in *KJ_SM90A*) gen='-gencode=arch=compute_90a,code=sm_90a' arch=sm_90a ;; esac
		# shellcheck disable=SC2086 # opts: one option a word
		nvcc -cubin $gen -DKJ_CUDA -Ikernels_src/include $opts -Xptxas -v \
			"kernels_src/$file" -o "$SW/$name/$op.$arch.cubin" 2>"$SW/$name/ptxas.txt" ||
			{ cat "$SW/$name/ptxas.txt"; echo "$name: nvcc failed"; exit 1; }
		echo "$name: $(grep -A4 "entry function '$entry'" "$SW/$name/ptxas.txt" | grep -E 'Used|spill' | tr -s ' ' | tr '\n' ' ' | sed 's/ptxas info *: //g')"
	done || exit 1
	# clusters (a -DKJ_ATT_CL=C variant): how many the device runs at once (the driver's
	# occupancy query), printed by `run` before the variant's timing
	grep -q -- '-DKJ_ATT_CL=' "$LIST" || exit 0
	gcc -O1 -Wall -Wextra -Werror -I/usr/local/cuda/include scripts/gpu-clocc.c -o "$SW/clocc" -L/usr/local/cuda/lib64/stubs -lcuda ||
		{ echo "clocc: build failed"; exit 1; }
	exit 0
fi

if [ -d .gpu/bin ]; then
	for f in .gpu/*.deb; do dpkg -x "$f" /tmp/gpu; done
	export LD_LIBRARY_PATH="/tmp/gpu/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
	LAUNCH=.gpu/bin/cuda_launch
else
	LAUNCH=${BUILD:-build}/examples/cuda_launch
fi
log=${OUT:+$OUT/sweep.log}
log=${log:-/tmp/sweep.log}
echo "== sweep on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null), $(date -u +%Y-%m-%dT%H:%MZ), commit $(cat .gpu/commit 2>/dev/null)" | tee -a "$log"
for d in "$SW"/*/; do
	name=$(basename "$d")
	[ -n "${SWEEP_ONLY:-}" ] && case ",$SWEEP_ONLY," in *",$name,"*) ;; *) continue ;; esac
	op=$(cut -d' ' -f1 "$d/MANIFEST")
	args=$(cat "$d/args") bench=--bench
	# `check` among the arguments: the op's test shapes instead of the bench
	case " $args " in *" check "*) bench='' args=$(echo " $args " | sed 's/ check / /') ;; esac
	echo "== $name: $(cat "$d/MANIFEST") $args $bench" | tee -a "$log"
	cl=$(sed -n 's/.*-DKJ_ATT_CL=\([0-9]*\).*/\1/p' "$d/MANIFEST")
	# the bench shapes' grids (KV heads x the split rule's S at 264 slots): 8 x 32, 128 x 2
	if [ -n "$cl" ] && [ -n "$bench" ] && [ -x "$SW/clocc" ]; then
		for g in "8 32" "128 2" "8 16"; do
			# shellcheck disable=SC2086 # g: two words
			"$SW/clocc" "$d"/*.cubin "$(cut -d' ' -f4 "$d/MANIFEST")" \
				"$(sed -n 's/.*-DKJ_BLOCK=\([0-9]*\).*/\1/p' "$d/MANIFEST")" "$cl" $g 2>&1 | tee -a "$log"
		done
	fi
	# shellcheck disable=SC2086 # the launcher arguments: one a word
	timeout "${SWEEP_TIMEOUT:-120}" "$LAUNCH" $bench --manifest "$d/MANIFEST" --op "$op" \
		$args "$d" 2>&1 | tee -a "$log"
done
