#!/bin/sh
# `kjit get --kernel NAME` says which variant of an op it fetched and why
# (client/cmd-variant.c), on stderr, and only for ops that have variants:
# Vulkan's _sg subgroup entries and the q8 matvec's _dp4 (integer dot product), decode attention's D <= 128 / D <= 256 pair,
# and gemm / prefill attention, whose path kjitd's compile picks from the
# target (tensor cores on CUDA sm_80 and newer).  stdout keeps its one line.
. "$(dirname "$0")/lib.sh"

start_daemon --kernels-dir "$TOP/kernels_src" || { not_ok start "kjitd did not start"; exit 1; }

get() { # NAME BACKEND [TARGET]: fetch, stdout to $T/out, stderr to $T/err
	"$KJIT" get --kernel "$1" --backend "$2" ${3:+--target "$3"} -o "$T/obj" >"$T/out" 2>"$T/err"
}

get rms_norm_sg_f32 vulkan vulkan1.1
check "rms_norm_sg_f32: fetched" [ $? -eq 0 ]
check "rms_norm_sg_f32: names its family and the subgroup reason" \
	grep -q '^variant: rms_norm_sg_f32 of {rms_norm_f32, rms_norm_sg_f32}: subgroup reductions' "$T/err"
check "stdout keeps one line" [ "$(wc -l <"$T/out")" -eq 1 ]
get rms_norm_f32 vulkan vulkan1.1
check "rms_norm_f32: the shared-memory member of the same family" \
	grep -q '^variant: rms_norm_f32 of {rms_norm_f32, rms_norm_sg_f32}: shared-memory' "$T/err"
get attn_decode_d256_f32 vulkan vulkan1.1
check "attn_decode_d256_f32: head_dim <= 256" \
	grep -q '^variant: attn_decode_d256_f32 of {attn_decode_f32, attn_decode_d256_f32}: head_dim <= 256' "$T/err"
get attn_decode_f32 vulkan vulkan1.1
check "attn_decode_f32: head_dim <= 128" grep -q 'attn_decode_f32 of .*: head_dim <= 128' "$T/err"
get matvec_q8_dp4 vulkan vulkan1.1
check "matvec_q8_dp4: fetched (OpSDot through GL_EXT_spirv_intrinsics compiles)" [ $? -eq 0 ]
check "matvec_q8_dp4: names the integer dot product" \
	grep -q '^variant: matvec_q8_dp4 of {matvec_q8, matvec_q8_dp4}: integer dot product, one OpSDot' "$T/err"
get matvec_q8 vulkan vulkan1.1
check "matvec_q8: the portable member says what the _dp4 entry adds" \
	grep -q '^variant: matvec_q8 of {matvec_q8, matvec_q8_dp4}: 4x8 dot products unpacked' "$T/err"
get add_f32 vulkan vulkan1.1
check "add_f32 (no variants): no variant line" sh -c "! grep -q variant '$T/err'"
if get gemm_f16 cuda sm_90 2>/dev/null; then
	check "gemm_f16 for sm_90: tensor-core path" grep -q '^variant: gemm_f16 for sm_90: tensor-core path' "$T/err"
	check "gemm_f16 for sm_90: names the sm_90 variant" grep -q 'launchers use gemm_sm90_\*' "$T/err"
	get gemm_f16 cuda sm_75
	check "gemm_f16 for sm_75: plain path" grep -q '^variant: gemm_f16 for sm_75: plain path' "$T/err"
	get gemm_sm90_bf16 cuda sm_90a
	check "gemm_sm90_bf16 for sm_90a: fetched" [ $? -eq 0 ]
	check "gemm_sm90_bf16 for sm_90a: wgmma path" grep -q '^variant: gemm_sm90_bf16 for sm_90a: wgmma + TMA path' "$T/err"
	get gemm_sm90_f16 cuda sm_90
	check "gemm_sm90_f16 for sm_90 (no 'a'): plain path" grep -q '^variant: gemm_sm90_f16 for sm_90: plain dot products' "$T/err"
	get attn_prefill_sm90_bf16 cuda sm_90a
	check "attn_prefill_sm90_bf16 for sm_90a: fetched" [ $? -eq 0 ]
	check "attn_prefill_sm90_bf16 for sm_90a: wgmma path" \
		grep -q '^variant: attn_prefill_sm90_bf16 for sm_90a: wgmma + TMA path, 128-key tiles' "$T/err"
	get attn_prefill_f16 cuda sm_90
	check "attn_prefill_f16 for sm_90: names the sm_90 variant" \
		grep -q '^variant: attn_prefill_f16 for sm_90: tensor-core path.*attn_prefill_sm90_\*' "$T/err"
else
	echo "# gemm_f16 for CUDA not compiled here (no NVRTC?): $(head -c 200 "$T/err")"
fi
finish
