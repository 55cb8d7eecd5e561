/*
 * silu_gate.cu: y = silu(x) * g = x * sigmoid(x) * g, elementwise over n elements;
 * entries silu_gate_f32, silu_gate_f16, silu_gate_bf16 (16-bit storage, f32 math).
 *
 * Launch: block KJ_BLOCK, any grid (grid-stride over quads of four elements; the
 * natural grid is ceil(ceil(n/4) / KJ_BLOCK)).  float4 loads when n % 4 == 0; buffers
 * aligned to 4 elements.  y may alias x or g.
 */
#include "kjit_prelude.h"

KJ_DEV float silu_gate1(float x, float g) { return x / (1.f + expf(-x)) * g; }

template <class S>
KJ_DEV void silu_gate_quads(const typename S::T *x, const typename S::T *g, typename S::T *y, int n)
{
    const int nq = (n + 3) / 4;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < nq; q += gridDim.x * blockDim.x) {
        if ((n & 3) == 0) {
            const float4 a = S::ld4(x, q), b = S::ld4(g, q);
            S::st4(y, q, make_float4(silu_gate1(a.x, b.x), silu_gate1(a.y, b.y),
                                     silu_gate1(a.z, b.z), silu_gate1(a.w, b.w)));
        } else {
            for (int i = q * 4; i < q * 4 + 4 && i < n; i++)
                S::st(y, i, silu_gate1(S::ld(x, i), S::ld(g, i)));
        }
    }
}

#define KJ_SILU_ENTRY(name, S)                                                             \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK)                                 \
        name(const S::T *x, const S::T *g, S::T *y, int n)                                 \
    {                                                                                      \
        silu_gate_quads<S>(x, g, y, n);                                                    \
    }

KJ_SILU_ENTRY(silu_gate_f32, kj_s_f32)
KJ_SILU_ENTRY(silu_gate_f16, kj_s_f16)
KJ_SILU_ENTRY(silu_gate_bf16, kj_s_bf16)
