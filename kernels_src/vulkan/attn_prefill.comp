// attn_prefill.comp: causal prefill attention with grouped-query heads, 16-bit storage,
// f32 arithmetic, as attn_prefill.cu (the plain path: no tensor cores).  -DKJ_BF16
// selects bfloat16, else IEEE half.  Bindings: 0 q [T][H][D], 1 k [T][Hkv][D],
// 2 v [T][Hkv][D], 3 o [T][H][D], 16-bit elements read and written as 32-bit words.
// Push constants: T, n_heads, n_kv_heads, head_dim (64 or 128, else o is left
// untouched), scale.  o[t][h] = softmax_{u <= t}(scale q[t][h].k[u][kvh]) . v[u][kvh].
// Dispatch: x = T, y = H: one workgroup per query row and head; keys are taken
// KJ_BLOCK at a time (each invocation scores one into shared memory), then each
// invocation updates the running max/sum and its own pairs of output dimensions.
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 64
#endif
#define PPT ((128 / 2 + KJ_BLOCK - 1) / KJ_BLOCK) // dimension pairs per invocation
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { uint q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 3) writeonly buffer O { uint o[]; };
layout(push_constant) uniform P {
    int T; int n_heads; int n_kv_heads; int head_dim; float scale;
} p;
shared float sc[KJ_BLOCK];

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

// element i of a buffer of 16-bit values (D is even, so a pair never straddles rows)
float qe(uint i) { uint w = q[i >> 1]; return from16((i & 1u) != 0u ? w >> 16 : w & 0xffffu); }
float ke(uint i) { uint w = k[i >> 1]; return from16((i & 1u) != 0u ? w >> 16 : w & 0xffffu); }
vec2 v2(uint i) { uint w = v[i >> 1]; return vec2(from16(w & 0xffffu), from16(w >> 16)); }

void main()
{
    int tid = int(gl_LocalInvocationID.x), t = int(gl_WorkGroupID.x), h = int(gl_WorkGroupID.y);
    int D = p.head_dim;
    if (t >= p.T || h >= p.n_heads || (D != 64 && D != 128))
        return;
    int kvh = h / (p.n_heads / p.n_kv_heads);
    uint qrow = uint((t * p.n_heads + h) * D), kvstride = uint(p.n_kv_heads * D);
    uint kvoff = uint(kvh * D);
    vec2 acc[PPT];
    for (int j = 0; j < PPT; j++)
        acc[j] = vec2(0.0);
    float m = -3.4e38, l = 0.0;
    int len = t + 1;
    for (int base = 0; base < len; base += KJ_BLOCK) {
        int u = base + tid;
        float s = -3.4e38;
        if (u < len) {
            s = 0.0;
            for (int d = 0; d < D; d++)
                s += qe(qrow + uint(d)) * ke(uint(u) * kvstride + kvoff + uint(d));
            s *= p.scale;
        }
        sc[tid] = s;
        barrier();
        int cnt = min(KJ_BLOCK, len - base);
        float cm = m;
        for (int i = 0; i < cnt; i++)
            cm = max(cm, sc[i]);
        float corr = exp(m - cm);
        l *= corr;
        for (int j = 0; j < PPT; j++)
            acc[j] *= corr;
        for (int i = 0; i < cnt; i++) {
            float pr = exp(sc[i] - cm);
            l += pr;
            for (int j = 0; j < PPT; j++) {
                int d = 2 * (tid + j * KJ_BLOCK);
                if (d < D)
                    acc[j] += pr * v2(uint(base + i) * kvstride + kvoff + uint(d));
            }
        }
        m = cm;
        barrier();
    }
    for (int j = 0; j < PPT; j++) {
        int d = 2 * (tid + j * KJ_BLOCK);
        if (d < D)
            o[(qrow + uint(d)) >> 1] = to16(acc[j].x / l) | (to16(acc[j].y / l) << 16);
    }
}
