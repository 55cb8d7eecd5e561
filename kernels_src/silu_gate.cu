/*
 * silu_gate.cu: y = silu(x) * g = x * sigmoid(x) * g, elementwise over n floats (f32).
 *
 * Launch: block KJ_BLOCK, any grid (grid-stride over quads of four elements; the
 * natural grid is ceil(ceil(n/4) / KJ_BLOCK)).  float4 loads when n % 4 == 0; buffers
 * 16-byte aligned.  y may alias x or g.
 */
#include "kjit_prelude.h"

KJ_DEV float silu_gate1(float x, float g) { return x / (1.f + expf(-x)) * g; }

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    silu_gate_f32(const float *x, const float *g, float *y, int n)
{
    const int nq = (n + 3) / 4;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < nq; q += gridDim.x * blockDim.x) {
        if ((n & 3) == 0) {
            const float4 a = kj_ld4(x, q), b = kj_ld4(g, q);
            kj_st4(y, q, make_float4(silu_gate1(a.x, b.x), silu_gate1(a.y, b.y),
                                     silu_gate1(a.z, b.z), silu_gate1(a.w, b.w)));
        } else {
            for (int i = q * 4; i < q * 4 + 4 && i < n; i++)
                y[i] = silu_gate1(x[i], g[i]);
        }
    }
}
