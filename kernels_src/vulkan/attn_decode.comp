// attn_decode.comp: decode attention (f32), one query token per head, grouped-query
// heads, run-time KV length, online softmax, as attn_decode.cu.
// Bindings: 0 q [H][D], 1 k [Hkv][cap][D], 2 v [Hkv][cap][D], 3 o [H][D]; bindings 4 and
// 5 (ws, counters: the CUDA/HIP kernel's split scratch) are part of the argument list
// but unused here: this shader does not split the KV length (dispatch y = 1).
// Push constants: n_heads, n_kv_heads, kv_len (>= 1), kv_cap, head_dim (<= KJ_ATT_MAX_D,
// else o is left untouched),
// scale.  One workgroup per head (dispatch x = H).  Keys are taken KJ_BLOCK at a time:
// each invocation scores one key into shared memory, then every invocation updates the
// running max/sum and its own output dimensions over that chunk.
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 128
#endif
#ifndef KJ_ATT_MAX_D
#define KJ_ATT_MAX_D 256
#endif
#define DPT ((KJ_ATT_MAX_D + KJ_BLOCK - 1) / KJ_BLOCK)
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) writeonly buffer O { float o[]; };
layout(push_constant) uniform P {
    int n_heads; int n_kv_heads; int kv_len; int kv_cap; int head_dim; float scale;
} p;
shared float sc[KJ_BLOCK];

void main()
{
    int tid = int(gl_LocalInvocationID.x), h = int(gl_WorkGroupID.x), D = p.head_dim;
    if (h >= p.n_heads || D > KJ_ATT_MAX_D)
        return;
    int kvh = h / (p.n_heads / p.n_kv_heads);
    int kbase = kvh * p.kv_cap * D;
    float acc[DPT];
    for (int j = 0; j < DPT; j++)
        acc[j] = 0.0;
    float m = -3.4e38, l = 0.0;
    for (int base = 0; base < p.kv_len; base += KJ_BLOCK) {
        int t = base + tid;
        float s = -3.4e38;
        if (t < p.kv_len) {
            s = 0.0;
            for (int d = 0; d < D; d++)
                s += q[h * D + d] * k[kbase + t * D + d];
            s *= p.scale;
        }
        sc[tid] = s;
        barrier();
        int cnt = min(KJ_BLOCK, p.kv_len - base);
        float cm = m;
        for (int i = 0; i < cnt; i++)
            cm = max(cm, sc[i]);
        float corr = exp(m - cm);
        l *= corr;
        for (int j = 0; j < DPT; j++)
            acc[j] *= corr;
        for (int i = 0; i < cnt; i++) {
            float pr = exp(sc[i] - cm);
            l += pr;
            for (int j = 0; j < DPT; j++) {
                int d = tid + j * KJ_BLOCK;
                if (d < D)
                    acc[j] += pr * v[kbase + (base + i) * D + d];
            }
        }
        m = cm;
        barrier();
    }
    for (int j = 0; j < DPT; j++) {
        int d = tid + j * KJ_BLOCK;
        if (d < D)
            o[h * D + d] = acc[j] / l;
    }
}
