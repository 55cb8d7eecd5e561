// rope.comp: rotary position embedding (f32), as rope.cu; -DKJ_ROPE_NEOX (pairs
// (i, i + D/2)) or -DKJ_ROPE_GPTJ (pairs (2i, 2i + 1)).  Bindings: 0 x, 1 cos, 2 sin,
// 3 y ([T][H][D]; cos/sin [T][D/2]).  Push constants: t_count, heads, dim.  One
// invocation per pair, grid-stride: any dispatch x up to 65535 covers every pair (the
// test uses the CUDA grid, ceil(ceil(T*H*D/2 / 4) / KJ_BLOCK)).
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer C { float cs[]; };
layout(std430, set = 0, binding = 2) readonly buffer S { float sn[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int t_count; int heads; int dim; } p;

void main()
{
    int half_d = p.dim / 2;
    int n = p.t_count * p.heads * half_d;
    int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int q = int(gl_GlobalInvocationID.x); q < n; q += stride) {
        int th = q / half_d, i = q - th * half_d, t = th / p.heads;
        float c = cs[t * half_d + i], s = sn[t * half_d + i];
#if defined(KJ_ROPE_NEOX)
        int ia = th * p.dim + i, ib = ia + half_d;
#elif defined(KJ_ROPE_GPTJ)
        int ia = th * p.dim + 2 * i, ib = ia + 1;
#else
#error "define KJ_ROPE_NEOX or KJ_ROPE_GPTJ"
#endif
        float xa = x[ia], xb = x[ib];
        y[ia] = xa * c - xb * s;
        y[ib] = xb * c + xa * s;
    }
}
