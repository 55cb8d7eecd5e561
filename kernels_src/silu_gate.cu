/*
 * silu_gate.cu: y = silu(x) * g = x * sigmoid(x) * g, elementwise over n elements;
 * entries silu_gate_f32, silu_gate_f16, silu_gate_bf16 (16-bit storage, f32 math).
 *
 * Launch: block KJ_BLOCK, any grid (grid-stride over 16-byte vectors: 4 f32 or 8
 * f16/bf16 elements; the natural grid is ceil(ceil(n/VEC) / KJ_BLOCK), VEC = 4 for
 * f32 and 8 for 16-bit types).  16-byte loads when n % VEC == 0; buffers 16-byte
 * aligned.  y may alias x or g.
 */
#include "kjit_prelude.h"

/* hardware exp2 and reciprocal (a few ulp each): libdevice's expf and IEEE division
 * (with its out-of-line slow path) left the bf16 entry short of full bandwidth */
KJ_DEV float silu_gate1(float x, float g)
{
    return __fdividef(x, 1.f + exp2f(-1.4426950408889634f * x)) * g;
}

template <class S>
KJ_DEV void silu_gate_vecs(const typename S::T *x, const typename S::T *g, typename S::T *y, int n)
{
    enum { V = S::VEC };
    const int nq = (n + V - 1) / V;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < nq; q += gridDim.x * blockDim.x) {
        if (n % V == 0) {
            float a[V], b[V];
            S::ldv(x, q, a);
            S::ldv(g, q, b);
#pragma unroll
            for (int e = 0; e < V; e++)
                a[e] = silu_gate1(a[e], b[e]);
            S::stv(y, q, a);
        } else {
            for (int i = q * V; i < q * V + V && i < n; i++)
                S::st(y, i, silu_gate1(S::ld(x, i), S::ld(g, i)));
        }
    }
}

#define KJ_SILU_ENTRY(name, S)                                                             \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK)                                 \
        name(const S::T *x, const S::T *g, S::T *y, int n)                                 \
    {                                                                                      \
        silu_gate_vecs<S>(x, g, y, n);                                                    \
    }

KJ_SILU_ENTRY(silu_gate_f32, kj_s_f32)
KJ_SILU_ENTRY(silu_gate_f16, kj_s_f16)
KJ_SILU_ENTRY(silu_gate_bf16, kj_s_bf16)
