#!/bin/sh
# reproducible.sh: the same request gives the same bytes on any node and in
# any run (issue 30).  Two fresh kjitd, each with its own cache, compile the
# same requests: nvcc (a kernel template instantiated with an
# anonymous-namespace type, whose name nvcc hashes with the file's path,
# and __FILE__ in a printf), hiprtc and hipcc (__FILE__ in a printf and an
# assert), NVRTC (the same template); the objects must be byte-identical,
# name the file as the user gave it, and carry no job folder of the
# worker (job-N, comgr-XXXXXX, kjit-hipcc-XXXXXX).  Where the raw compiler
# is deterministic it is run by hand at the worker's path (/tmp/job, in a
# mount namespace of this test's own, as root) and must give the same
# bytes: nvcc's cubin, and hipcc's device object inside its bundle.
. "$(dirname "$0")/lib.sh"

cat >"$T/anon.cu" <<'EOF'
#include <cstdio>
namespace {
struct Twice { __device__ float operator()(float x) const { return 2.0f * x; } };
}
template <typename F> __global__ void apply(float *p, F f) { p[threadIdx.x] = f(p[threadIdx.x]); }
template __global__ void apply<Twice>(float *, Twice);
__global__ void where(int *p) { if (!p) printf("%s:%d\n", __FILE__, __LINE__); }
EOF
cat >"$T/rtc.cu" <<'EOF'
namespace {
struct Twice { __device__ float operator()(float x) const { return 2.0f * x; } };
}
template <typename F> __global__ void apply(float *p, F f) { p[threadIdx.x] = f(p[threadIdx.x]); }
template __global__ void apply<Twice>(float *, Twice);
extern "C" __global__ void where(int *p) { if (!p) printf("%s:%d\n", __FILE__, __LINE__); }
EOF
cat >"$T/where.hip" <<'EOF'
#include <hip/hip_runtime.h>
#include <cassert>
extern "C" __global__ void where(int *p) { assert(p); if (p[0] < 0) printf("%s:%d\n", __FILE__, __LINE__); }
EOF
cp "$T/where.hip" "$T/where_rtc.hip"
sed -i 's/#include <cassert>//; s/assert(p); //' "$T/where_rtc.hip" # hiprtc has no <cassert>

have_nvcc=0 have_nvrtc=0 have_hip=0
[ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null 2>&1 && have_nvcc=1
ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && have_nvrtc=1
ldconfig -p 2>/dev/null | grep -q 'libamdhip64\.so\|libhiprtc\.so' && command -v hipcc >/dev/null 2>&1 && have_hip=1

# compile_all DIR: every request of this test into DIR/NAME.
compile_all() {
	mkdir -p "$1"
	if [ $have_nvcc = 1 ]; then
		"$KJIT" get --source "$T/anon.cu" --target sm_90 --compiler nvcc -o "$1/nvcc.o" >"$1/nvcc.line" 2>&1
	fi
	if [ $have_nvrtc = 1 ]; then
		"$KJIT" get --source "$T/rtc.cu" --target sm_90 --compiler nvrtc -o "$1/nvrtc.o" >"$1/nvrtc.line" 2>&1
	fi
	if [ $have_hip = 1 ]; then
		"$KJIT" get --source "$T/where_rtc.hip" --target gfx90a --compiler hiprtc -o "$1/hiprtc.o" \
			>"$1/hiprtc.line" 2>&1
		"$KJIT" get --source "$T/where.hip" --target gfx90a --compiler hipcc -o "$1/hipcc.o" \
			>"$1/hipcc.line" 2>&1
		"$KJIT" get --source "$T/where.hip" --target gfx90a --compiler hipcc -g -o "$1/hipcc-g.o" \
			>"$1/hipcc-g.line" 2>&1
	fi
}

start_daemon || { not_ok start "kjitd did not start"; exit 1; }
compile_all "$T/one"
stop_daemon
export KJIT_CACHE_DIR="$T/cache2" # a second node: nothing of the first's cache
start_daemon || { not_ok start "the second kjitd did not start"; exit 1; }
compile_all "$T/two"
stop_daemon

# same NAME WHAT FILE-NEEDLE: compiled on both, identical, clean of job paths.
same() {
	f=$1
	if ! grep -q '^compiled' "$T/one/$f.line" || ! grep -q '^compiled' "$T/two/$f.line"; then
		not_ok "$2 compiles on both daemons" "$(cat "$T/one/$f.line" "$T/two/$f.line" | head -c 300)"
		return
	fi
	ok "$2 compiles on both daemons"
	check "$2: the two daemons' objects are byte-identical" cmp -s "$T/one/$f.o" "$T/two/$f.o"
	check "$2: no worker folder in the object" sh -c "! grep -a -q -E '/tmp/job-|comgr-|kjit-(hipcc|nvcc)-' '$T/one/$f.o'"
	[ -z "$3" ] || check "$2: __FILE__ is the name the user gave ($3)" grep -a -q "$3" "$T/one/$f.o"
}

if [ $have_nvcc = 1 ]; then
	same nvcc "nvcc (anonymous-namespace template kernel, __FILE__)" anon.cu
	# the raw nvcc, run where the worker runs it: /tmp/job (in a mount
	# namespace of this test's own; root only, as unshare -m needs)
	if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 && [ ! -e /tmp/job ]; then
		NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
		mkdir /tmp/job
		unshare -m sh -c "mount -t tmpfs kjit-raw /tmp/job && cp '$T/anon.cu' /tmp/job/ && cd /tmp/job &&
			'$NVCC' --cubin -arch=sm_90 -o /tmp/job/raw.cubin anon.cu && cp /tmp/job/raw.cubin '$T/raw.cubin'"
		rmdir /tmp/job
		check "nvcc: the raw nvcc at /tmp/job gives the same bytes" cmp -s "$T/raw.cubin" "$T/one/nvcc.o"
	else
		echo "# raw nvcc comparison skipped (needs root, unshare, and no /tmp/job)"
	fi
else
	echo "# nvcc not installed: its checks skipped"
fi
if [ $have_nvrtc = 1 ]; then
	same nvrtc "NVRTC (anonymous-namespace template kernel, __FILE__)" rtc.cu
else
	echo "# NVRTC not installed: its checks skipped"
fi
if [ $have_hip = 1 ]; then
	same hiprtc "hiprtc (__FILE__ in a printf)" where_rtc.hip
	# (hiprtc -g is not in the list: its debug information names comgr's
	# own randomly named folder, which kjit cannot fix; docs/compilers.md)
	same hipcc "hipcc (__FILE__ in a printf and an assert)" where.hip
	same hipcc-g "hipcc -g" where.hip
	if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 && [ ! -e /tmp/job ]; then
		mkdir /tmp/job
		unshare -m sh -c "mount -t tmpfs kjit-raw /tmp/job && cp '$T/where.hip' /tmp/job/ && cd /tmp/job &&
			TMPDIR=/tmp/job hipcc --genco --offload-arch=gfx90a -o /tmp/job/raw.co where.hip >/dev/null 2>&1 &&
			cp /tmp/job/raw.co '$T/raw.co'"
		rmdir /tmp/job
		check "hipcc: the raw hipcc's bundle at /tmp/job holds kjit's object" python3 -c "
import sys
sys.exit(0 if open('$T/one/hipcc.o', 'rb').read() in open('$T/raw.co', 'rb').read() else 1)"
	fi
else
	echo "# hiprtc/hipcc not installed: their checks skipped"
fi
finish
