/*
 * layer_norm.cu: y = (x - mean) / sqrt(var + eps) * w + b over each row (f32), with the
 * variance taken around the mean (two reductions, no E[x^2] - E[x]^2 cancellation).
 *
 * x, y: rows x cols; w, b: cols.  Launch and fast path as rms_norm.cu: one block of
 * KJ_BLOCK threads per row, row held in registers when cols % 4 == 0 and
 * cols <= 4 * KJ_VPT * KJ_BLOCK, scalar three-pass loop otherwise.  y may alias x.
 */
#include "kjit_prelude.h"

#ifndef KJ_VPT
#define KJ_VPT 8
#endif

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    layer_norm_f32(const float *x, const float *w, const float *b, float *y, int rows, int cols,
                   float eps)
{
    __shared__ float red[KJ_MAX_WARPS];
    const int n4 = cols >> 2, tid = threadIdx.x, bd = blockDim.x;
    const bool in_regs = (cols & 3) == 0 && n4 <= KJ_VPT * bd;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + (kj_size)r * cols;
        float *yr = y + (kj_size)r * cols;
        float s = 0.f, ss = 0.f;
        if (in_regs) {
            float4 v[KJ_VPT];
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    v[j] = kj_ld4(xr, i);
                    s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
                }
            }
            const float mean = kj_block_sum(s, red) / cols;
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    v[j].x -= mean, v[j].y -= mean, v[j].z -= mean, v[j].w -= mean;
                    ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
                }
            }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    const float4 g = kj_ld4(w, i), o = kj_ld4(b, i);
                    kj_st4(yr, i, make_float4(v[j].x * inv * g.x + o.x, v[j].y * inv * g.y + o.y,
                                              v[j].z * inv * g.z + o.z, v[j].w * inv * g.w + o.w));
                }
            }
        } else {
            for (int i = tid; i < cols; i += bd)
                s += xr[i];
            const float mean = kj_block_sum(s, red) / cols;
            for (int i = tid; i < cols; i += bd)
                ss += (xr[i] - mean) * (xr[i] - mean);
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
            for (int i = tid; i < cols; i += bd)
                yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
        }
    }
}
