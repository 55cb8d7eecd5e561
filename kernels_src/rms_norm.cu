/*
 * rms_norm.cu: y = x / sqrt(mean(x^2) + eps) * w over each row; entries rms_norm_f32,
 * rms_norm_f16, rms_norm_bf16 (x, w, y all in that type; f32 arithmetic).
 *
 * x, y: rows x cols row-major; w: cols.  One block per row (grid = any count up to rows;
 * rows are strided by gridDim.x), block = KJ_BLOCK threads.  When cols is a multiple of
 * the type's 16-byte vector (4 f32, 8 f16/bf16) and the row fits in registers
 * (KJ_VPT 16-byte vectors per thread: cols <= KJ_VPT * KJ_BLOCK * VEC) the row is read
 * once into registers with 16-byte loads and written once with 16-byte stores: one
 * pass over memory.  The vectors stay as raw bits in registers (kjit_rows.h: a 16-bit
 * row in half the registers of its f32 values; the first 16-bit version, which held
 * floats, ran 83% of copy on the H200 for f16) and stores convert pairs with one packed
 * instruction.  Otherwise a scalar two-pass loop handles any cols.  y may alias x.
 * The 16-byte path assumes x, y and w start on 16-byte boundaries (every buffer from
 * cuMemAlloc/hipMalloc/torch does; a view that starts mid-vector does not, and must be
 * copied to an aligned buffer first).
 */
#include "kjit_rows.h"

#ifndef KJ_VPT
#define KJ_VPT 8
#endif
#ifndef KJ_MINB /* blocks an SM the register budget is cut for (launch bounds) */
#define KJ_MINB 1
#endif

template <class S>
KJ_DEV void rms_norm_rows(const typename S::T *x, const typename S::T *w, typename S::T *y,
                          int rows, int cols, float eps)
{
    enum { V = S::VEC, NV = KJ_VPT }; /* elements per vector, vectors per thread */
    __shared__ float red[KJ_MAX_WARPS];
    const int nv = cols / V, tid = threadIdx.x, bd = blockDim.x;
    const bool in_regs = cols % V == 0 && nv <= NV * bd;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const typename S::T *xr = x + (kj_size)r * cols;
        typename S::T *yr = y + (kj_size)r * cols;
        float ss = 0.f;
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
                        ss += f[e] * f[e];
                }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
#pragma unroll
            for (int j = 0; j < NV; j++) {
                const int i = tid + j * bd;
                if (i < nv) {
                    float f[V], g[V];
                    kj_rv_get(S(), v[j], f);
                    kj_rv_get(S(), kj_rv_ldw(w, i), g);
#pragma unroll
                    for (int e = 0; e < V; e++)
                        g[e] *= f[e] * inv;
                    kj_rv_st(yr, i, kj_rv_put(S(), g));
                }
            }
        } else {
            for (int i = tid; i < cols; i += bd) {
                const float t = S::ld(xr, i);
                ss += t * t;
            }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
            for (int i = tid; i < cols; i += bd)
                S::st(yr, i, S::ld(xr, i) * inv * S::ld(w, i));
        }
    }
}

#define KJ_RMS_ENTRY(name, S)                                                              \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK, KJ_MINB)                        \
        name(const S::T *x, const S::T *w, S::T *y, int rows, int cols, float eps)         \
    {                                                                                      \
        rms_norm_rows<S>(x, w, y, rows, cols, eps);                                        \
    }

KJ_RMS_ENTRY(rms_norm_f32, kj_s_f32)
KJ_RMS_ENTRY(rms_norm_f16, kj_s_f16)
KJ_RMS_ENTRY(rms_norm_bf16, kj_s_bf16)
