// matvec_q8.comp: y = W x, int8 weights and activations with per-32 f32 block scales,
// as matvec_q8.cu.  int8 data is read as packed 32-bit words (no 8-bit storage feature
// needed) and unpacked with sign-extending bitfieldExtract; plain integer dot.
// Bindings: 0 w (n*k bytes), 1 ws (n*k/32), 2 xq (k bytes), 3 xs (k/32), 4 y (n).
// Push constants: n, k (k % 32 == 0).  One workgroup per row; dispatch x = up to
// min(n, 65535) (rows strided).
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 64
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer W { int w[]; };
layout(std430, set = 0, binding = 1) readonly buffer WS { float ws[]; };
layout(std430, set = 0, binding = 2) readonly buffer XQ { int xq[]; };
layout(std430, set = 0, binding = 3) readonly buffer XS { float xs[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int n; int k; } p;
shared float red[KJ_BLOCK];

int dot4(int a, int b)
{
    return bitfieldExtract(a, 0, 8) * bitfieldExtract(b, 0, 8) +
           bitfieldExtract(a, 8, 8) * bitfieldExtract(b, 8, 8) +
           bitfieldExtract(a, 16, 8) * bitfieldExtract(b, 16, 8) +
           bitfieldExtract(a, 24, 8) * bitfieldExtract(b, 24, 8);
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    int nb = p.k / 32;
    for (int r = int(gl_WorkGroupID.x); r < p.n; r += int(gl_NumWorkGroups.x)) {
        float acc = 0.0;
        // one 32-weight block (8 words) per invocation per step
        for (int b = int(tid); b < nb; b += KJ_BLOCK) {
            int d = 0;
            int wo = (r * p.k) / 4 + b * 8;
            for (int j = 0; j < 8; j++)
                d += dot4(w[wo + j], xq[b * 8 + j]);
            acc += float(d) * (ws[r * nb + b] * xs[b]);
        }
        red[tid] = acc;
        barrier();
        for (uint s = KJ_BLOCK / 2; s > 0u; s >>= 1) {
            if (tid < s)
                red[tid] += red[tid + s];
            barrier();
        }
        if (tid == 0u)
            y[r] = red[0];
        barrier();
    }
}
