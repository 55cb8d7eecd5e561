// matvec_q8.comp: y = W x, int8 weights and activations with per-32 f32 block scales,
// as matvec_q8.cu.  int8 data is read as packed 32-bit words (no 8-bit storage feature
// needed), two 16-byte uvec4 loads per 32-weight block, coalesced across the subgroup.
// Two variants (kernels_src/MANIFEST):
//  - matvec_q8: any device; each packed 4x8 dot is unpacked with sign-extending
//    bitfieldExtract and multiplied; the workgroup reduces through shared memory;
//  - matvec_q8_dp4 (-DKJ_DP4): each packed 4x8 dot is one OpSDot with the
//    PackedVectorFormat4x8Bit operand (SPV_KHR_integer_dot_product, emitted through
//    GL_EXT_spirv_intrinsics: this glslang has no GL_EXT_integer_dot_product), which
//    NVIDIA lowers to its dp4a instruction; the reduction uses subgroup arithmetic.  The
//    device needs shaderIntegerDotProduct (VK_KHR_shader_integer_dot_product or Vulkan
//    1.3) enabled, and subgroup arithmetic; launchers pick it where both are reported.
// Bindings: 0 w (n*k bytes), 1 ws (n*k/32), 2 xq (k bytes), 3 xs (k/32), 4 y (n).
// Push constants: n, k (k % 32 == 0).  One workgroup per row; dispatch x = up to
// min(n, 65535) (rows strided).
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 64
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer W { uvec4 w[]; };
layout(std430, set = 0, binding = 1) readonly buffer WS { float ws[]; };
layout(std430, set = 0, binding = 2) readonly buffer XQ { uvec4 xq[]; };
layout(std430, set = 0, binding = 3) readonly buffer XS { float xs[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int n; int k; } p;

#ifdef KJ_DP4
#extension GL_EXT_spirv_intrinsics : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// OpSDot (4450) on two packed 4x8 words; capabilities DotProduct (6019) and
// DotProductInput4x8BitPacked (6018); fmt 0 = PackedVectorFormat4x8Bit
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int fmt);
shared float red[KJ_BLOCK / 4]; // one slot a subgroup (subgroups of 4 or more)

int dot4(uint a, uint b) { return sdot4x8(a, b, 0); }

float block_sum(float v)
{
    v = subgroupAdd(v);
    if (subgroupElect())
        red[gl_SubgroupID] = v;
    barrier();
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++)
        t += red[i];
    barrier();
    return t;
}
#else
shared float red[KJ_BLOCK];

int dot4(uint ua, uint ub)
{
    int a = int(ua), b = int(ub);
    return bitfieldExtract(a, 0, 8) * bitfieldExtract(b, 0, 8) +
           bitfieldExtract(a, 8, 8) * bitfieldExtract(b, 8, 8) +
           bitfieldExtract(a, 16, 8) * bitfieldExtract(b, 16, 8) +
           bitfieldExtract(a, 24, 8) * bitfieldExtract(b, 24, 8);
}

float block_sum(float v)
{
    uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint s = KJ_BLOCK / 2; s > 0u; s >>= 1) {
        if (tid < s)
            red[tid] += red[tid + s];
        barrier();
    }
    float t = red[0];
    barrier();
    return t;
}
#endif

int dot16(uvec4 a, uvec4 b)
{
    return dot4(a.x, b.x) + dot4(a.y, b.y) + dot4(a.z, b.z) + dot4(a.w, b.w);
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    int nb = p.k / 32;
    for (int r = int(gl_WorkGroupID.x); r < p.n; r += int(gl_NumWorkGroups.x)) {
        float acc = 0.0;
        int row = r * nb * 2; // uvec4 index of the row's first block
        // one 32-weight block (two uvec4) per invocation per step
        for (int b = int(tid); b < nb; b += KJ_BLOCK) {
            int d = dot16(w[row + 2 * b], xq[2 * b]) + dot16(w[row + 2 * b + 1], xq[2 * b + 1]);
            acc += float(d) * (ws[r * nb + b] * xs[b]);
        }
        float t = block_sum(acc);
        if (tid == 0u)
            y[r] = t;
    }
}
