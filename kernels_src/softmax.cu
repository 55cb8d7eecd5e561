/*
 * softmax.cu: row-wise numerically stable softmax (f32): y = exp(x - max) / sum.
 *
 * x, y: rows x cols.  One block of KJ_BLOCK threads per row (rows strided by gridDim.x).
 * When cols % 4 == 0 and cols <= 4 * KJ_VPT * KJ_BLOCK the row is read once into
 * registers (max, exp and sum all from registers) and written once; otherwise a scalar
 * three-pass loop handles any cols.  y may alias x.
 */
#include "kjit_prelude.h"

#ifndef KJ_VPT
#define KJ_VPT 8
#endif

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    softmax_f32(const float *x, float *y, int rows, int cols)
{
    __shared__ float red[KJ_MAX_WARPS];
    const int n4 = cols >> 2, tid = threadIdx.x, bd = blockDim.x;
    const bool in_regs = (cols & 3) == 0 && n4 <= KJ_VPT * bd;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + (kj_size)r * cols;
        float *yr = y + (kj_size)r * cols;
        float m = -KJ_INF, s = 0.f;
        if (in_regs) {
            float4 v[KJ_VPT];
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    v[j] = kj_ld4(xr, i);
                    m = fmaxf(fmaxf(m, fmaxf(v[j].x, v[j].y)), fmaxf(v[j].z, v[j].w));
                }
            }
            m = kj_block_max(m, red);
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    v[j] = make_float4(expf(v[j].x - m), expf(v[j].y - m), expf(v[j].z - m),
                                       expf(v[j].w - m));
                    s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
                }
            }
            const float inv = 1.f / kj_block_sum(s, red);
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4)
                    kj_st4(yr, i, make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv));
            }
        } else {
            for (int i = tid; i < cols; i += bd)
                m = fmaxf(m, xr[i]);
            m = kj_block_max(m, red);
            for (int i = tid; i < cols; i += bd)
                s += expf(xr[i] - m);
            const float inv = 1.f / kj_block_sum(s, red);
            for (int i = tid; i < cols; i += bd)
                yr[i] = expf(xr[i] - m) * inv;
        }
    }
}
