#!/bin/sh
# Targets end to end, with real compilers: what `kjit targets` says on this
# GPU-less machine, the resolution order (request > KJIT_*_ARCH >
# HSA_OVERRIDE_GFX_VERSION (+HSA_XNACK) > CANDLE_ROCM_ARCH > kjitd's
# configuration > detection, here from a fake KFD topology), malformed
# values, target-ID compatibility both ways, and CUDA cubin/PTX and Vulkan
# environments.  Expected ELF flags are LLVM AMDGPUUsage's: mach GFX90A 0x3f,
# GFX908 0x30, GFX1030 0x36; XNACK_ANY/OFF/ON_V4 0x100/0x200/0x300;
# SRAMECC_ANY/OFF/ON_V4 0x400/0x800/0xc00.
. "$(dirname "$0")/lib.sh"

SRC="$TOP/tests/e2e/data/scale.hip"
start_daemon || { not_ok start "kjitd did not start"; exit 1; }

# ---- kjit targets on a machine with no AMD or NVIDIA GPU ----
"$KJIT" targets >"$T/t" 2>&1
check "kjit targets exits 0" [ $? -eq 0 ]
check "hip: says no AMD GPU and names KJIT_HIP_ARCH" sh -c "grep -i '^hip' '$T/t' | grep -qi 'no amd gpu' && grep -q 'KJIT_HIP_ARCH' '$T/t'"
check "cuda: says no NVIDIA GPU and names KJIT_CUDA_ARCH" sh -c "grep -i '^cuda' '$T/t' | grep -qi 'no nvidia gpu' && grep -q 'KJIT_CUDA_ARCH' '$T/t'"
check "vulkan: lavapipe found" grep -q 'llvmpipe' "$T/t"
"$KJIT" targets --json >"$T/tj" 2>&1
check "kjit targets --json is one object with the backends" sh -c "head -c 1 '$T/tj' | grep -q '{' && grep -q '\"backends\"' '$T/tj'"

# ---- no target anywhere: a clear error naming the variable ----
"$KJIT" get --source "$SRC" --backend hip >"$T/r" 2>&1
check "no HIP target: exit 1" [ $? -eq 1 ]
check "no HIP target: the error names KJIT_HIP_ARCH" grep -q 'KJIT_HIP_ARCH' "$T/r"

flags() { # ENV... -- ARGS: get scale.hip with that environment, print e_flags
	env "$@" "$KJIT" get --source "$SRC" --backend hip -o "$T/o" >"$T/r" 2>&1 || { cat "$T/r" >&2; echo fail; return; }
	elf_u32 "$T/o" 48
}
check "KJIT_HIP_ARCH=gfx1030 -> gfx1030 (0x36)" [ "$(flags KJIT_HIP_ARCH=gfx1030)" = 00000036 ]
check "HSA_OVERRIDE_GFX_VERSION=9.0.8 -> gfx908 (0x530)" [ "$(flags HSA_OVERRIDE_GFX_VERSION=9.0.8)" = 00000530 ]
check "HSA_OVERRIDE_GFX_VERSION=10.3.0 -> gfx1030" [ "$(flags HSA_OVERRIDE_GFX_VERSION=10.3.0)" = 00000036 ]
check "HSA_OVERRIDE_GFX_VERSION=9.0.10 + HSA_XNACK=1 -> gfx90a:xnack+ (0x73f)" \
	[ "$(flags HSA_OVERRIDE_GFX_VERSION=9.0.10 HSA_XNACK=1)" = 0000073f ]
check "CANDLE_ROCM_ARCH=gfx1030 -> gfx1030" [ "$(flags CANDLE_ROCM_ARCH=gfx1030)" = 00000036 ]
check "KJIT_HIP_ARCH beats HSA_OVERRIDE_GFX_VERSION" \
	[ "$(flags KJIT_HIP_ARCH=gfx1030 HSA_OVERRIDE_GFX_VERSION=9.0.8)" = 00000036 ]
check "HSA_OVERRIDE_GFX_VERSION beats CANDLE_ROCM_ARCH" \
	[ "$(flags HSA_OVERRIDE_GFX_VERSION=9.0.8 CANDLE_ROCM_ARCH=gfx1030)" = 00000530 ]
KJIT_HIP_ARCH=gfx1030 "$KJIT" get --source "$SRC" --backend hip --target gfx908 -o "$T/o" >/dev/null 2>&1
check "an explicit --target beats the environment" [ "$(elf_u32 "$T/o" 48)" = 00000530 ]

for bad in "HSA_OVERRIDE_GFX_VERSION=banana" "KJIT_HIP_ARCH=gfx90a:bogus+" "HSA_OVERRIDE_GFX_VERSION=10.3" \
	"KJIT_HIP_ARCH=gfx1030:xnack-" "KJIT_HIP_ARCH=../gfx90a"; do
	env "$bad" "$KJIT" get --source "$SRC" --backend hip >"$T/r" 2>&1
	rc=$?
	check "$bad: exit 1 with one line naming ${bad%%=*}" \
		sh -c "[ $rc -eq 1 ] && [ \$(wc -l <'$T/r') -eq 1 ] && grep -q '${bad%%=*}' '$T/r'"
done

# ---- compatibility: a process in xnack+/- mode may get the 'any' object,
# never the reverse; an explicit --target always gets exactly that build ----
printf '#include <hip/hip_runtime.h>\nextern "C" __global__ void k1(float *x) { x[threadIdx.x] += 1.0f; }\n' >"$T/s1.hip"
printf '#include <hip/hip_runtime.h>\nextern "C" __global__ void k2(float *x) { x[threadIdx.x] += 2.0f; }\n' >"$T/s2.hip"
HSA_OVERRIDE_GFX_VERSION=9.0.10 HSA_XNACK=1 "$KJIT" get --source "$T/s1.hip" --backend hip -o "$T/x" >"$T/r" 2>&1
check "an xnack+ process: compiled for gfx90a:xnack+ (0x73f)" sh -c "grep -q '^compiled ' '$T/r' && [ \$(od -An -tx4 -j48 -N4 '$T/x' | tr -d ' ') = 0000073f ]"
KJIT_HIP_ARCH=gfx90a "$KJIT" get --source "$T/s1.hip" --backend hip -o "$T/a" >"$T/r" 2>&1
check "an xnack+ object is never served to a gfx90a (any) process: compiled" grep -q '^compiled ' "$T/r"
check "and it is the any object (0x53f)" [ "$(elf_u32 "$T/a" 48)" = 0000053f ]
KJIT_HIP_ARCH=gfx90a "$KJIT" get --source "$T/s2.hip" --backend hip -o "$T/a2" >/dev/null 2>&1
HSA_OVERRIDE_GFX_VERSION=9.0.10 HSA_XNACK=0 "$KJIT" get --source "$T/s2.hip" --backend hip -o "$T/m" >"$T/r" 2>&1
check "an xnack- process is served the gfx90a (any) object: a hit" grep -q '^hit .* gfx90a ' "$T/r"
check "with the any object's bytes" cmp -s "$T/a2" "$T/m"
"$KJIT" get --source "$T/s2.hip" --backend hip --target gfx90a:xnack- -o "$T/e" >"$T/r" 2>&1
check "an explicit --target gfx90a:xnack- gets exactly that build (compiled, 0x63f)" \
	sh -c "grep -q '^compiled ' '$T/r' && [ \$(od -An -tx4 -j48 -N4 '$T/e' | tr -d ' ') = 0000063f ]"
KJIT_HIP_ARCH=gfx1030 "$KJIT" get --source "$T/s2.hip" --backend hip -o "$T/o" >"$T/r" 2>&1
check "another processor is never compatible: compiled" grep -q '^compiled ' "$T/r"

# ---- CUDA: cubin, PTX, environment, errors ----
"$KJIT" get --kernel rms_norm_f32 --backend cuda --target sm_90 -o "$T/c.cubin" >/dev/null 2>&1
check "sm_90: a cubin, e_machine 190" [ "$(elf_u16 "$T/c.cubin" 18)" = 190 ]
KJIT_CUDA_ARCH=compute_90 "$KJIT" get --kernel rms_norm_f32 --backend cuda -o "$T/c.ptx" >/dev/null 2>&1
check "KJIT_CUDA_ARCH=compute_90: PTX naming .target sm_90" grep -q '^\.target sm_90' "$T/c.ptx"
printf 'extern "C" __global__ void k(float *y) { y[0] = undefined_thing; }\n' >"$T/bad.cu"
"$KJIT" get --source "$T/bad.cu" --backend cuda --target sm_90 >"$T/r" 2>&1
check "a bad CUDA source: exit 1 with NVRTC's log" sh -c "[ $? -eq 1 ] && grep -q 'undefined_thing' '$T/r'"
"$KJIT" get --kernel rms_norm_f32 --backend cuda --target sm_1 >"$T/r" 2>&1
check "sm_1: a clear error naming it" sh -c "[ $? -eq 1 ] && grep -q 'sm_1' '$T/r'"

# ---- Vulkan: the environment picks the SPIR-V target ----
KJIT_VULKAN_ENV=vulkan1.3 "$KJIT" get --kernel softmax_f32 --backend vulkan -o "$T/v.spv" >"$T/r" 2>&1
check "KJIT_VULKAN_ENV=vulkan1.3: SPIR-V valid for vulkan1.3" spirv-val --target-env vulkan1.3 "$T/v.spv"
check "and built for vulkan1.3" grep -q ' vulkan1.3 ' "$T/r"
stop_daemon

# ---- the daemon's configuration, then detection from a fake KFD topology ----
start_daemon --hip-arch gfx908 || exit 1
check "kjitd --hip-arch gfx908 with no env: gfx908" [ "$(flags X=1)" = 00000530 ]
check "the environment still beats kjitd's configuration" [ "$(flags KJIT_HIP_ARCH=gfx1030)" = 00000036 ]
stop_daemon
start_daemon --sysfs-root "$TOP/tests/fixtures/sysfs/mi250x" || exit 1
"$KJIT" targets >"$T/t" 2>&1
check "detection from the KFD topology: gfx90a:sramecc+ (MI250X)" grep -q 'gfx90a:sramecc+' "$T/t"
check "a request with no target uses the detected one (0xd3f: xnack any, sramecc on)" [ "$(flags X=1)" = 00000d3f ]
finish
