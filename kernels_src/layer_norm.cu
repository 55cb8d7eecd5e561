/*
 * layer_norm.cu: y = (x - mean) / sqrt(var + eps) * w + b over each row, with the
 * variance taken around the mean (two reductions, no E[x^2] - E[x]^2 cancellation);
 * entries layer_norm_f32, layer_norm_f16, layer_norm_bf16 (x, w, b, y all in that
 * type; f32 arithmetic).
 *
 * x, y: rows x cols; w, b: cols.  Launch and fast path as rms_norm.cu: one block of
 * KJ_BLOCK threads per row, row held in registers as raw 16-byte vectors (kjit_rows.h;
 * converted again for each of the three passes over the registers, which costs less
 * than the 116 registers the bf16 row took as floats) when cols is a multiple of the
 * type's 16-byte vector and cols <= KJ_VPT * KJ_BLOCK * VEC, scalar three-pass loop
 * otherwise.  y may alias x.  Alignment: as rms_norm.cu (x, y, w, b 16-byte aligned).
 */
#include "kjit_rows.h"

#ifndef KJ_VPT
#define KJ_VPT 8
#endif
#ifndef KJ_MINB /* blocks an SM the register budget is cut for (launch bounds) */
#define KJ_MINB 1
#endif

template <class S>
KJ_DEV void layer_norm_rows(const typename S::T *x, const typename S::T *w,
                            const typename S::T *b, typename S::T *y, int rows, int cols,
                            float eps)
{
    enum { V = S::VEC, NV = KJ_VPT }; /* elements per vector, vectors per thread */
    __shared__ float red[KJ_MAX_WARPS];
    const int nv = cols / V, tid = threadIdx.x, bd = blockDim.x;
    const bool in_regs = cols % V == 0 && nv <= NV * bd;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const typename S::T *xr = x + (kj_size)r * cols;
        typename S::T *yr = y + (kj_size)r * cols;
        float s = 0.f, ss = 0.f;
        if (in_regs) {
            uint4 v[NV]; /* the row's vectors as loaded */
#pragma unroll
            for (int j = 0; j < NV; j++)
                if (tid + j * bd < nv)
                    v[j] = kj_rv_ld(xr, tid + j * bd);
#pragma unroll
            for (int j = 0; j < NV; j++)
                if (tid + j * bd < nv) {
                    float f[V];
                    kj_rv_get(S(), v[j], f);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        s += f[e];
                }
            const float mean = kj_block_sum(s, red) / cols;
#pragma unroll
            for (int j = 0; j < NV; j++)
                if (tid + j * bd < nv) {
                    float f[V];
                    kj_rv_get(S(), v[j], f);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        ss += (f[e] - mean) * (f[e] - mean);
                }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
#pragma unroll
            for (int j = 0; j < NV; j++) {
                const int i = tid + j * bd;
                if (i < nv) {
                    float f[V], g[V], o[V];
                    kj_rv_get(S(), v[j], f);
                    kj_rv_get(S(), kj_rv_ldw(w, i), g);
                    kj_rv_get(S(), kj_rv_ldw(b, i), o);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        g[e] = (f[e] - mean) * inv * g[e] + o[e];
                    kj_rv_st(yr, i, kj_rv_put(S(), g));
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
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK, KJ_MINB)                        \
        name(const S::T *x, const S::T *w, const S::T *b, S::T *y, int rows, int cols,     \
             float eps)                                                                    \
    {                                                                                      \
        layer_norm_rows<S>(x, w, b, y, rows, cols, eps);                                   \
    }

KJ_LN_ENTRY(layer_norm_f32, kj_s_f32)
KJ_LN_ENTRY(layer_norm_f16, kj_s_f16)
KJ_LN_ENTRY(layer_norm_bf16, kj_s_bf16)
