/*
 * rms_norm.cu: y = x / sqrt(mean(x^2) + eps) * w over each row; entries rms_norm_f32,
 * rms_norm_f16, rms_norm_bf16 (x, w, y all in that type; f32 arithmetic).
 *
 * x, y: rows x cols row-major; w: cols.  One block per row (grid = any count up to rows;
 * rows are strided by gridDim.x), block = KJ_BLOCK threads.  When cols % 4 == 0 and the
 * row fits in KJ_VPT 4-vectors per thread (cols <= 4 * KJ_VPT * KJ_BLOCK, 8192 with the
 * defaults) the row is read once into registers and written once: one pass over memory.
 * Otherwise a scalar two-pass loop handles any cols.  y may alias x.
 */
#include "kjit_prelude.h"

#ifndef KJ_VPT
#define KJ_VPT 8
#endif

template <class S>
KJ_DEV void rms_norm_rows(const typename S::T *x, const typename S::T *w, typename S::T *y,
                          int rows, int cols, float eps)
{
    __shared__ float red[KJ_MAX_WARPS];
    const int n4 = cols >> 2, tid = threadIdx.x, bd = blockDim.x;
    const bool in_regs = (cols & 3) == 0 && n4 <= KJ_VPT * bd;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const typename S::T *xr = x + (kj_size)r * cols;
        typename S::T *yr = y + (kj_size)r * cols;
        float ss = 0.f;
        if (in_regs) {
            float4 v[KJ_VPT];
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    v[j] = S::ld4(xr, i);
                    ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
                }
            }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    const float4 g = S::ld4(w, i);
                    S::st4(yr, i, make_float4(v[j].x * inv * g.x, v[j].y * inv * g.y,
                                              v[j].z * inv * g.z, v[j].w * inv * g.w));
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
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK)                                 \
        name(const S::T *x, const S::T *w, S::T *y, int rows, int cols, float eps)         \
    {                                                                                      \
        rms_norm_rows<S>(x, w, y, rows, cols, eps);                                        \
    }

KJ_RMS_ENTRY(rms_norm_f32, kj_s_f32)
KJ_RMS_ENTRY(rms_norm_f16, kj_s_f16)
KJ_RMS_ENTRY(rms_norm_bf16, kj_s_bf16)
