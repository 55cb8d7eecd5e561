#!/bin/sh
# options.sh: the flags users type by habit (issue 30), typed as build files
# carry them, through a real kjitd and the real compilers: each family's
# list compiles in one request with all of them (and the raw compiler
# takes the same list, so each flag is one the compiler knows), then hits;
# a function-like -D in every family; target-like flags as the target;
# --backend inferred; the value whitelists of -Xcompiler=/-Xptxas= refuse
# what could read or write outside the job; errors name the whole option.
# A compiler not installed here is said and its checks skipped.
. "$(dirname "$0")/lib.sh"

have() { command -v "$1" >/dev/null 2>&1; }
have_nvrtc=0 have_hiprtc=0
ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && have_nvrtc=1
ldconfig -p 2>/dev/null | grep -q 'libamdhip64\.so\|libhiprtc\.so' && have_hiprtc=1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

cat >"$T/lam.cu" <<'EOF'
#include <cstdio>
template <typename F> __global__ void run(float *p, F f) { p[threadIdx.x] = f(buffer_ld1(p, threadIdx.x)); }
void host(float *p) { run<<<1, 1>>>(p, [] __device__(float x) { return x + 1.0f; }); }
__global__ void k(float *p) { p[0] = sqrtf(p[1]) / p[2]; }
EOF
cat >"$T/rtc.cu" <<'EOF'
extern "C" __global__ void k(float *__restrict__ p) { __int128 w = 3; p[0] = buffer_ld1(p, 1) * (float)w; }
EOF
cat >"$T/k.hip" <<'EOF'
#include <hip/hip_runtime.h>
extern "C" __global__ void k(float *p) { p[threadIdx.x] = sqrtf(buffer_ld1(p, 1)) / p[2]; }
EOF
sed 's/#include <hip.hip_runtime.h>//' "$T/k.hip" >"$T/rtc.hip"
cat >"$T/s.comp" <<'EOF'
#version 450
layout(local_size_x = 64) in;
layout(binding = 0) buffer A { float a[]; };
layout(binding = 1) uniform U { float s; };
void main() { uint i = gl_GlobalInvocationID.x; a[i] = buffer_ld1(a, i) * s; }
EOF

# get NAME ARGS...: compiles, then hits; $T/err keeps the last stderr.
get() {
	name=$1
	shift
	"$KJIT" get "$@" -o "$T/obj" >"$T/out" 2>"$T/err"
	if ! grep -q '^compiled' "$T/out"; then
		not_ok "$name compiles" "$(head -c 400 "$T/err")"
		return 1
	fi
	ok "$name compiles"
	"$KJIT" get "$@" >"$T/out2" 2>/dev/null
	check "$name: then a hit" grep -q '^hit' "$T/out2"
}
# refused NAME WANT ARGS...: kjit get fails with WANT in its one-line error.
refused() {
	name=$1 want=$2
	shift 2
	"$KJIT" get "$@" >"$T/out" 2>"$T/err" && { not_ok "$name" "it compiled"; return; }
	check "$name ($(tail -n 1 "$T/err" | head -c 160))" grep -q -F -- "$want" "$T/err"
}

start_daemon || { not_ok start "kjitd did not start"; exit 1; }
FN='-Dbuffer_ld1(buf,i)=buf[i]'

if [ -x "$NVCC" ]; then
	NV="--use_fast_math -lineinfo --expt-relaxed-constexpr -expt-relaxed-constexpr --extended-lambda -ftz=true
		-fmad=false -prec-div=false -Xcompiler=-fPIC,-Wall -Xptxas=-v -ftemplate-backtrace-limit=0
		--compress-mode=size --diag-suppress=177 -diag-suppress=550 -restrict -res-usage -m64"
	# (nvcc's own -D splits its value at commas: the raw run gets the
	# function-like macro from a header; kjit passes every -D that way)
	printf '#define buffer_ld1(buf,i) buf[i]\n' >"$T/fn.h"
	# shellcheck disable=SC2086 # the list is word-split on purpose
	(cd "$T" && "$NVCC" --cubin -arch=sm_90 $NV -Xcompiler -fno-strict-aliasing -include fn.h -o "$T/raw.cubin" \
		lam.cu >"$T/raw.log" 2>&1)
	check "nvcc: the raw nvcc takes the list" [ -s "$T/raw.cubin" ]
	[ -s "$T/raw.cubin" ] || sed 's/^/# /' "$T/raw.log"
	# shellcheck disable=SC2086
	get "nvcc: its habits, -Xcompiler VALUE, a function-like -D, -arch=sm_90" --source "$T/lam.cu" \
		--compiler nvcc -arch=sm_90 $NV -Xcompiler -fno-strict-aliasing "$FN"
	# python3 -m kjit takes the same command line (python/kjit/__main__.py): the same key, a hit
	if have python3; then
		# shellcheck disable=SC2086
		env $(san_python_env) PYTHONPATH="$TOP/python" PYTHONDONTWRITEBYTECODE=1 python3 -m kjit get --source "$T/lam.cu" \
			--compiler nvcc -arch=sm_90 $NV -Xcompiler -fno-strict-aliasing "$FN" >"$T/py.out" 2>&1
		check "python3 -m kjit: the same flags, the same key (a hit)" \
			grep -q "^hit $(cut -d' ' -f2 "$T/out")" "$T/py.out"
	fi
	refused "nvcc: -Xcompiler=-fplugin=x refused (a file)" "-Xcompiler=-fplugin=x" \
		--source "$T/lam.cu" --compiler nvcc -arch=sm_90 --extended-lambda "$FN" -Xcompiler=-fplugin=x
	refused "nvcc: -Xcompiler -Wl,-rpath refused (the linker's)" "-Xcompiler=-Wl,-rpath=/tmp" \
		--source "$T/lam.cu" --compiler nvcc -arch=sm_90 --extended-lambda "$FN" -Xcompiler -Wl,-rpath=/tmp
	refused "nvcc: -Xptxas=--gpu-name refused" "-Xptxas=--gpu-name=sm_80" \
		--source "$T/lam.cu" --compiler nvcc -arch=sm_90 --extended-lambda "$FN" -Xptxas=--gpu-name=sm_80
	refused "nvcc: -arch=native says to use --target" "--target" --source "$T/lam.cu" --compiler nvcc -arch=native
	refused "-gencode says to use --target" "--target" --source "$T/lam.cu" -gencode arch=compute_90,code=sm_90
	refused "-arch=sm_90 and --target sm_80 disagree" "disagree" --source "$T/lam.cu" -arch=sm_90 --target sm_80
else
	echo "# nvcc not installed: its checks skipped"
fi

if [ $have_nvrtc = 1 ]; then
	get "NVRTC: -restrict --device-int128 -fmad=false ..., a leading space, --gpu-architecture=" \
		--source "$T/rtc.cu" --gpu-architecture=sm_90 -restrict --device-int128 -fmad=false -ftz=true \
		-prec-sqrt=false -Xptxas=-v --use_fast_math -lineinfo "$FN" --opt ' -std=c++17'
	refused "NVRTC: an error names the whole option (-lineinfo-x)" "-lineinfo-x" \
		--source "$T/rtc.cu" --target sm_90 -lineinfo-x
else
	echo "# NVRTC not installed: its checks skipped"
fi

if [ $have_hiprtc = 1 ]; then
	get "hiprtc: AMD's hip-tests flags, --offload-arch=" --source "$T/rtc.hip" --compiler hiprtc \
		--offload-arch=gfx90a -fgpu-rdc -fgpu-flush-denormals-to-zero --gpu-max-threads-per-block=256 \
		-ffinite-math-only -g -std=gnu++17 -munsafe-fp-atomics "$FN"
fi
if have hipcc && [ $have_hiprtc = 1 ]; then
	HC="-std=gnu++17 -fPIC -fno-gpu-rdc -munsafe-fp-atomics -g --gpu-max-threads-per-block=256"
	# shellcheck disable=SC2086
	(cd "$T" && hipcc --genco --offload-arch=gfx90a $HC -x hip "$FN" -o "$T/raw.co" k.hip >"$T/raw.log" 2>&1)
	check "hipcc: the raw hipcc takes the list" [ -s "$T/raw.co" ]
	# shellcheck disable=SC2086
	get "hipcc: CMake's -std=gnu++17, -x hip, -fPIC, -fno-gpu-rdc" --source "$T/k.hip" --compiler hipcc \
		--offload-arch=gfx90a $HC -x hip "$FN"
else
	echo "# hiprtc/hipcc not installed: their checks skipped"
fi

GV="--target-spv=spv1.0 -fauto-bind-uniforms -fubo-binding-base 5 -fssbo-binding-base comp 2"
# shellcheck disable=SC2086
get "shaderc: vulkan1.0 (glslc's default), --target-spv=, binding bases, a function-like -D" \
	--source "$T/s.comp" --target-env=vulkan1.0 $GV "$FN"
if have glslc; then
	# shellcheck disable=SC2086
	glslc -fshader-stage=compute $GV "$FN" -o "$T/raw.spv" "$T/s.comp" &&
		check "shaderc: the same SPIR-V as glslc given the same flags" cmp -s "$T/raw.spv" "$T/obj"
fi
refused "shaderc: -fubo-binding-base for another stage" "compute shaders only" \
	--source "$T/s.comp" --target vulkan1.1 -fubo-binding-base vert 5
refused "shaderc: an error names the whole option (-lineinfo)" "'-lineinfo'" \
	--source "$T/s.comp" --target vulkan1.1 "$FN" -lineinfo
refused "no suffix, no target: --backend is required" "--backend is required" --source "$T/s.txt"
finish
