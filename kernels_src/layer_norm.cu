/*
 * layer_norm.cu: y = (x - mean) / sqrt(var + eps) * w + b over each row, with the
 * variance taken around the mean (two reductions, no E[x^2] - E[x]^2 cancellation);
 * entries layer_norm_f32, layer_norm_f16, layer_norm_bf16 (x, w, b, y all in that
 * type; f32 arithmetic).
 *
 * x, y: rows x cols; w, b: cols.  Launch and fast path as rms_norm.cu: one block of
 * KJ_BLOCK threads per row, row held in registers (16-byte loads and stores) when cols
 * is a multiple of the type's 16-byte vector and cols <= 4 * KJ_VPT * KJ_BLOCK, scalar
 * three-pass loop otherwise.  y may alias x.
 */
#include "kjit_prelude.h"

#ifndef KJ_VPT
#define KJ_VPT 8
#endif

template <class S>
KJ_DEV void layer_norm_rows(const typename S::T *x, const typename S::T *w,
                            const typename S::T *b, typename S::T *y, int rows, int cols,
                            float eps)
{
    enum { V = S::VEC, NV = KJ_VPT * 4 / S::VEC };
    __shared__ float red[KJ_MAX_WARPS];
    const int nv = cols / V, tid = threadIdx.x, bd = blockDim.x;
    const bool in_regs = cols % V == 0 && nv <= NV * bd;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const typename S::T *xr = x + (kj_size)r * cols;
        typename S::T *yr = y + (kj_size)r * cols;
        float s = 0.f, ss = 0.f;
        if (in_regs) {
            float v[NV][V];
#pragma unroll
            for (int j = 0; j < NV; j++) {
                const int i = tid + j * bd;
                if (i < nv) {
                    S::ldv(xr, i, v[j]);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        s += v[j][e];
                }
            }
            const float mean = kj_block_sum(s, red) / cols;
#pragma unroll
            for (int j = 0; j < NV; j++) {
                const int i = tid + j * bd;
                if (i < nv) {
#pragma unroll
                    for (int e = 0; e < V; e++) {
                        v[j][e] -= mean;
                        ss += v[j][e] * v[j][e];
                    }
                }
            }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
#pragma unroll
            for (int j = 0; j < NV; j++) {
                const int i = tid + j * bd;
                if (i < nv) {
                    float g[V], o[V];
                    S::ldv(w, i, g);
                    S::ldv(b, i, o);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        g[e] = v[j][e] * inv * g[e] + o[e];
                    S::stv(yr, i, g);
                }
            }
        } else {
            for (int i = tid; i < cols; i += bd)
                s += S::ld(xr, i);
            const float mean = kj_block_sum(s, red) / cols;
            for (int i = tid; i < cols; i += bd)
                ss += (S::ld(xr, i) - mean) * (S::ld(xr, i) - mean);
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
            for (int i = tid; i < cols; i += bd)
                S::st(yr, i, (S::ld(xr, i) - mean) * inv * S::ld(w, i) + S::ld(b, i));
        }
    }
}

#define KJ_LN_ENTRY(name, S)                                                               \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK)                                 \
        name(const S::T *x, const S::T *w, const S::T *b, S::T *y, int rows, int cols,     \
             float eps)                                                                    \
    {                                                                                      \
        layer_norm_rows<S>(x, w, b, y, rows, cols, eps);                                   \
    }

KJ_LN_ENTRY(layer_norm_f32, kj_s_f32)
KJ_LN_ENTRY(layer_norm_f16, kj_s_f16)
KJ_LN_ENTRY(layer_norm_bf16, kj_s_bf16)
