#!/bin/sh
# gpu-run.sh: kjit on a machine with an NVIDIA GPU, end to end: kjitd compiles
# every bundled CUDA kernel with NVRTC for the detected target, and
# examples/cuda_launch fetches each through libkjit, launches it with libcuda
# and checks it against the CPU oracle (`test`), then times each op at
# 16384 x 8192 next to a device-to-device copy and PyTorch's equivalents
# measured in the same run (`bench`).  `make test-gpu` / `make bench-gpu` run it
# where the tree builds; on the lent H200 (no -dev packages there, see
# ../shared/gpu-run.md) it runs from binaries carried in .gpu/:
#     scripts/gpu-run.sh pack        # here: .gpu/bin and the runtime .debs
#     scripts/gpu-run.sh all         # there: test, then bench
#     scripts/gpu-run.sh profile     # there: Nsight Compute on $PROFILE_OPS, if ncu exists
#     scripts/gpu-run.sh fleet       # there: the remote-hit bench (bench/remote-ab.sh) on a CPU
#                                    # with SHA instructions
#     scripts/gpu-run.sh vulkan      # there: every Vulkan op against the oracle on the GPU
#                                    # (test-kernels-vulkan), then each op's share of a
#                                    # Vulkan device-to-device copy (vulkan_launch --bench)
#                                    # beside the CUDA kernel of the same op, same call
# Output goes to stdout and, when $OUT is set, to $OUT/gpu-run.log.
# BENCH_OPS=a,b,...: bench only these ops (the whole library's bench builds and checks
# every case on the CPU at full size: minutes); TEST_TIMEOUT, BENCH_TIMEOUT,
# TORCH_TIMEOUT (seconds, default 300/600/300) bound each phase so a hung kernel still
# leaves a log of how far the run got; PROFILE_OPS: the ops `profile` looks at.
# To compare build options of a kernel in one call, see scripts/gpu-sweep.sh.
set -u
MODE=${1:-all}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

if [ "$MODE" = pack ]; then
	BUILD=${BUILD:-build}
	mkdir -p .gpu/bin
	# keep .gpu out of git; a fresh clone may lack .git/info, a worktree has .git as a
	# file and a copy no .git at all: ask git where the exclude file lives
	if excl=$(git rev-parse --git-path info/exclude 2>/dev/null); then
		mkdir -p "$(dirname "$excl")" || exit 1
		grep -qx '/.gpu/' "$excl" 2>/dev/null || echo '/.gpu/' >>"$excl" || exit 1
	fi
	cp "$BUILD/kjitd" "$BUILD/kjit" "$BUILD/examples/cuda_launch" "$BUILD/examples/vulkan_launch" \
		"$BUILD/tests/kernels/test-kernels-vulkan" .gpu/bin/ || exit 1
	# the commit the binaries were built from (a copy without .git cannot tell)
	{ git rev-parse --short HEAD 2>/dev/null || echo '?'; } | tr -d '\n' >.gpu/commit
	git diff --quiet HEAD 2>/dev/null || printf '+uncommitted' >>.gpu/commit
	# runtime libraries the H200 image lacks (kjitd links libhiredis for the fleet tier)
	# (NVIDIA's Vulkan driver is libGLX_nvidia: it needs libglvnd's libraries)
	(cd .gpu && rm -f ./*.deb && apt-get download libuv1 libvulkan1 libhiredis0.14 libglvnd0 libglx0 libgl1 libegl1 libopengl0 >/dev/null)
	# `fleet`: the remote-hit bench's programs, and Debian's redis-server with the
	# libraries the H200 image lacks
	mkdir -p .gpu/build/bench
	cp "$BUILD/bench/bench-hitlat" "$BUILD/bench/bench-spacedget" "$BUILD/bench/bench-startd" .gpu/build/bench/ || exit 1
	(cd .gpu && apt-get download redis-tools liblzf1 libjemalloc2 >/dev/null) || exit 1
	ls -l .gpu .gpu/bin
	exit 0
fi

if [ -d .gpu/bin ]; then
	B=.gpu/bin
	for f in .gpu/*.deb; do dpkg -x "$f" /tmp/gpu; done
	export LD_LIBRARY_PATH="/tmp/gpu/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
	LAUNCH=$B/cuda_launch
	VKLAUNCH=$B/vulkan_launch
	VKTEST=$B/test-kernels-vulkan
else
	B=${BUILD:-build}
	LAUNCH=$B/examples/cuda_launch
	VKLAUNCH=$B/examples/vulkan_launch
	VKTEST=$B/tests/kernels/test-kernels-vulkan
fi
# fleet: scenario 8's remote hit (bench/remote-ab.sh: a 16 KiB object, a 1 MiB one from a
# 1 MiB source and one from a 16 KiB source, each against a bare GET spaced as the hits
# are and a relay doing only the source's SHA-256, the GET and the GMAC) on this machine,
# whose CPU has SHA instructions where the 2-core development VM's has none: the same
# kjitd in both columns (two samples a round, $ROUNDS rounds, default 3).
if [ "$MODE" = fleet ]; then
	mkdir -p /tmp/gpu/bin
	ln -sf /tmp/gpu/usr/bin/redis-check-rdb /tmp/gpu/bin/redis-server || exit 1
	export PATH="/tmp/gpu/bin:/tmp/gpu/usr/bin:$PATH"
	getent passwd kjit-worker >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin kjit-worker
	flog=${OUT:-/tmp}/gpu-fleet.log
	{
		echo "== fleet: remote hits, $(date -u +%Y-%m-%dT%H:%MZ), commit $(cat .gpu/commit 2>/dev/null || echo '?')"
		grep -m 1 'model name' /proc/cpuinfo
		echo "cores $(nproc); SHA instructions: $(grep -m 1 -o -w sha_ni /proc/cpuinfo || echo none)"
		openssl speed -seconds 1 -bytes 16384 -evp sha256 2>/dev/null | tail -n 1
		BUILD=.gpu/build ROUNDS=${ROUNDS:-3} bash bench/remote-ab.sh "$top/$B/kjitd" "$top/$B/kjitd"
	} 2>&1 | tee "$flog"
	exit 0
fi
# NVIDIA's Vulkan driver on the lent machine is not where the loader looks by default
nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nv_icd" ] && export VK_DRIVER_FILES="$nv_icd"
T=$(mktemp -d /tmp/kjit-gpu.XXXXXX)
export KJIT_SOCKET="$T/sock/kjitd.sock" KJIT_CACHE_DIR="$T/cache" KJIT_NO_AUTOSTART=1
mkdir -p "$T/sock"
log=${OUT:+$OUT/gpu-run.log}
log=${log:-$T/gpu-run.log}
say() { echo "$*" | tee -a "$log"; }

# Vulkan on the GPU: the test binary checks every Vulkan op of the manifest (kjitd
# compiles them with shaderc) against the oracle; then the bench ops' SPIR-V is fetched
# with `kjit get` (which says which variant and why), vulkan_launch times each at
# 16384 x 8192 with GPU timestamps beside a vkCmdCopyBuffer, and cuda_launch times the
# CUDA kernel of the same ops in the same call.  VK_OPS: the Vulkan ops to bench;
# VK_BENCH_ARGS: more vulkan_launch options (a dry run on lavapipe: --rows 64 --cols 512).
VK_OPS_DEFAULT=add_f32,mul_f32,silu_gate_f32,gelu_erf_f32,gelu_tanh_f32,rms_norm_f32,rms_norm_sg_f32,layer_norm_f32,layer_norm_sg_f32,add_rmsnorm_f32,add_rmsnorm_sg_f32,softmax_f32,softmax_sg_f32,rope_neox_f32,rope_gptj_f32,matvec_q8,matvec_q8_dp4
vulkan_mode() {
	vrc=0
	say "== test-vulkan: every Vulkan op from kjitd via libkjit, on the Vulkan device, against the oracle"
	KJIT_KERNELS_DIR="$top/kernels_src" timeout "${TEST_TIMEOUT:-300}" "$VKTEST" 2>&1 | tee -a "$log" | grep -v '^ok '
	[ "$(tail -n 1 "$log" | sed -n 's/.* \([0-9]*\) failed$/\1/p')" = 0 ] || vrc=1
	ops=${VK_OPS:-$VK_OPS_DEFAULT}
	mkdir -p "$T/spv"
	for k in $(echo "$ops" | tr , ' '); do
		r=$("$B/kjit" get --kernel "$k" --backend vulkan --target vulkan1.1 -o "$T/spv/$k.spv" 2>&1)
		say "kjit get --kernel $k --backend vulkan: $r"
	done
	# the shader copy (16-byte loads and stores) is the floor: NVIDIA runs vkCmdCopyBuffer
	# on a copy engine at about a third of the bandwidth the SMs reach
	"$B/kjit" get --source "$top/kernels_src/vulkan/copy.comp" --backend vulkan --target vulkan1.1 \
		-D KJ_BLOCK=256 -o "$T/spv/copy.spv" >/dev/null 2>&1 || say "copy.comp: no SPIR-V"
	say "== bench-vulkan: 16384 x 8192 f32, device memory, GPU timestamps; GB/s = bytes read + written / time"
	timeout "${BENCH_TIMEOUT:-600}" "$VKLAUNCH" --bench --runs 5 --iters 20 ${VK_BENCH_ARGS:-} --op "$ops" \
		--copy-spv "$T/spv/copy.spv" --manifest "$top/kernels_src/MANIFEST" "$T/spv" 2>&1 | tee -a "$log"
	[ "$(tail -n 1 "$log" | sed -n 's/.* \([0-9]*\) failed$/\1/p')" = 0 ] || vrc=1
	cops=$(echo "$ops" | tr , '\n' | sed 's/_sg_/_/; s/_dp4$//' | awk '!seen[$0]++' | paste -sd, -)
	say "== bench-gpu CUDA, the same ops, same call: $cops"
	timeout "${BENCH_TIMEOUT:-600}" "$LAUNCH" --bench --op "$cops" 2>&1 | tee -a "$log"
	return $vrc
}

# carried binaries name their own commit (a copy inside another checkout would report
# that checkout's HEAD)
commit=$(cat .gpu/commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo '?')
say "== kjit on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null), $(date -u +%Y-%m-%dT%H:%MZ), commit $commit"
"$B/kjitd" --foreground --socket "$KJIT_SOCKET" --cache-dir "$KJIT_CACHE_DIR" --kernels-dir "$top/kernels_src" \
	--log "$T/kjitd.log" &
pid=$!
i=0
until "$B/kjit" ping >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -gt 200 ] && { tee -a "$log" <"$T/kjitd.log"; ldd "$B/kjitd" | grep 'not found' | tee -a "$log"; say "kjitd did not start"; exit 1; }
	sleep 0.05
done
"$B/kjit" targets 2>&1 | tee -a "$log"
rc=0

# NVRTC through kjitd: a compile, then the same request as a hit.
for k in rms_norm_f32 rms_norm_f32; do
	s=$(date +%s%N)
	r=$("$B/kjit" get --kernel "$k" --backend cuda 2>&1)
	say "kjit get --kernel $k --backend cuda: $r ($(( ($(date +%s%N) - s) / 1000 )) us as a whole process)"
done

if [ "$MODE" = test ] || [ "$MODE" = all ]; then
	say "== test-gpu: every CUDA op from kjitd via libkjit, launched with libcuda, against the oracle"
	timeout "${TEST_TIMEOUT:-300}" "$LAUNCH" 2>&1 | tee -a "$log" | grep -v '^ok '
	[ "$(tail -n 1 "$log" | sed -n 's/.* \([0-9]*\) failed$/\1/p')" = 0 ] || rc=1
fi
if [ "$MODE" = bench ] || [ "$MODE" = all ]; then
	# BENCH_OPS: a comma-separated subset (each bench case is built and checked on the
	# CPU at full size, several seconds an op: the whole library takes minutes)
	say "== bench-gpu: 16384 x 8192 f32, GB/s = bytes read + written / time${BENCH_OPS:+ (ops $BENCH_OPS)}"
	timeout "${BENCH_TIMEOUT:-600}" "$LAUNCH" --bench ${BENCH_OPS:+--op "$BENCH_OPS"} 2>&1 | tee -a "$log"
	say "== PyTorch, same machine, same run"
	PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-300}" python3 bench/torch_ref.py 2>&1 | tee -a "$log"
fi
if [ "$MODE" = vulkan ]; then
	vulkan_mode || rc=1
fi
if [ "$MODE" = profile ]; then
	# Nsight Compute on one launch of each op at its bench shape (clocks left alone)
	NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
	if [ -z "$NCU" ]; then
		say "== profile: no ncu on this machine"
	else
		say "== profile: $NCU --clock-control none, one launch per op at its bench shape"
		for op in ${PROFILE_OPS:-attn_decode_f32 matvec_q8 rms_norm_bf16 gemm_f16 attn_prefill_f16}; do
			timeout 120 "$NCU" --clock-control none --launch-skip 1 --launch-count 1 \
				--section SpeedOfLight --section Occupancy --section LaunchStats \
				--metrics dram__bytes_read.sum.per_second,dram__bytes_write.sum.per_second \
				"$LAUNCH" --bench --op "$op" --iters 1 --runs 1 2>&1 |
				grep -v '^ok \|^#\|^==PROF==' | tee -a "$log"
		done
	fi
fi
"$B/kjit" stats 2>&1 | tee -a "$log"
"$B/kjit" stop >/dev/null 2>&1
wait "$pid"
rm -rf "$T"
exit $rc
