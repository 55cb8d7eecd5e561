// gemm.comp: C = A . B^T with 16-bit storage and f32 accumulation, as gemm.cu (the
// plain path: no tensor cores, no shared-memory tiles; a reference-speed shader).
// -DKJ_BF16 selects bfloat16, else IEEE half.  Bindings: 0 A [M][K], 1 B [N][K],
// 2 C [M][N], all row-major 16-bit elements read and written as 32-bit words (no 16-bit
// storage feature needed).  Push constants: M, N, K (>= 1).
// Dispatch: x = ceil(M * N / (2 * KJ_BLOCK)) capped at 65535, grid-stride: invocation i
// owns the word holding elements 2i and 2i + 1 of C in memory order (which may lie in
// two rows), so every word is written by one invocation; the half past the last
// element is written as zero.
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 64
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { uint c[]; };
layout(push_constant) uniform P { int M; int N; int K; } p;

float from16(uint h)
{
#ifdef KJ_BF16
    return uintBitsToFloat(h << 16);
#else
    return unpackHalf2x16(h).x;
#endif
}

uint to16(float f)
{
#ifdef KJ_BF16
    uint u = floatBitsToUint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x40u;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
#else
    return packHalf2x16(vec2(f, 0.0)) & 0xffffu;
#endif
}

float elem_a(uint i) { uint w = a[i >> 1]; return from16((i & 1u) != 0u ? w >> 16 : w & 0xffffu); }
float elem_b(uint i) { uint w = b[i >> 1]; return from16((i & 1u) != 0u ? w >> 16 : w & 0xffffu); }

float dot_row(uint e)
{
    uint r = e / uint(p.N), col = e % uint(p.N), K = uint(p.K);
    float s = 0.0;
    for (uint k = 0u; k < K; k++)
        s += elem_a(r * K + k) * elem_b(col * K + k);
    return s;
}

void main()
{
    uint total = uint(p.M) * uint(p.N), words = (total + 1u) / 2u;
    for (uint i = gl_GlobalInvocationID.x; i < words; i += gl_NumWorkGroups.x * KJ_BLOCK) {
        uint lo = to16(dot_row(2u * i));
        uint hi = 2u * i + 1u < total ? to16(dot_row(2u * i + 1u)) : 0u;
        c[i] = lo | (hi << 16);
    }
}
