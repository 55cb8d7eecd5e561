// rope.comp: rotary position embedding (f32), as rope.cu; -DKJ_ROPE_NEOX (pairs
// (i, i + D/2)) or -DKJ_ROPE_GPTJ (pairs (2i, 2i + 1)).  Bindings: 0 x, 1 cos, 2 sin,
// 3 y ([T][H][D]; cos/sin [T][D/2]).  Push constants: t_count, heads, dim.  One
// invocation per pair, grid-stride: any dispatch x up to 65535 covers every pair (the
// test uses the CUDA grid, ceil(ceil(T*H*D/2 / 4) / KJ_BLOCK)).  When D % 8 == 0 an
// invocation takes four pairs at a time with 16-byte vec4 loads and stores (NeoX: one
// vec4 of each half; GPT-J: two vec4s of interleaved pairs), as rope.cu; else one pair.
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
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer C4 { vec4 cs4[]; };
layout(std430, set = 0, binding = 2) readonly buffer S4 { vec4 sn4[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y4 { vec4 y4[]; };

// four pairs from q4 = the index of their first pair / 4 (D % 8 == 0)
void quad(int q4, int half_d)
{
    int q = q4 * 4, th = q / half_d, i = q - th * half_d, t = th / p.heads;
    vec4 c = cs4[(t * half_d + i) / 4], s = sn4[(t * half_d + i) / 4];
#if defined(KJ_ROPE_NEOX)
    int a = (th * p.dim + i) / 4, b = a + half_d / 4;
    vec4 xa = x4[a], xb = x4[b];
    y4[a] = xa * c - xb * s;
    y4[b] = xb * c + xa * s;
#else
    int a = (th * p.dim + 2 * i) / 4;
    vec4 u = x4[a], v = x4[a + 1];
    y4[a] = vec4(u.x * c.x - u.y * s.x, u.y * c.x + u.x * s.x, u.z * c.y - u.w * s.y, u.w * c.y + u.z * s.y);
    y4[a + 1] = vec4(v.x * c.z - v.y * s.z, v.y * c.z + v.x * s.z, v.z * c.w - v.w * s.w, v.w * c.w + v.z * s.w);
#endif
}

void main()
{
    int half_d = p.dim / 2;
    int n = p.t_count * p.heads * half_d;
    int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    if (p.dim % 8 == 0) {
        for (int q4 = int(gl_GlobalInvocationID.x); q4 < n / 4; q4 += stride)
            quad(q4, half_d);
        return;
    }
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
