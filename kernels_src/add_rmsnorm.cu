/*
 * add_rmsnorm.cu: fused residual add and RMS norm (f32), two outputs:
 *   h = x + res;  y = h / sqrt(mean(h^2) + eps) * w.
 * x, res, h, y: rows x cols; w: cols.  Launch and fast path as rms_norm.cu (one block of
 * KJ_BLOCK threads per row; the row stays in registers when it fits, so x and res are
 * read once and h and y written once).  h may alias x or res; y may alias x or res.
 */
#include "kjit_prelude.h"

#ifndef KJ_VPT
#define KJ_VPT 8
#endif

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    add_rmsnorm_f32(const float *x, const float *res, const float *w, float *h, float *y, int rows,
                    int cols, float eps)
{
    __shared__ float red[KJ_MAX_WARPS];
    const int n4 = cols >> 2, tid = threadIdx.x, bd = blockDim.x;
    const bool in_regs = (cols & 3) == 0 && n4 <= KJ_VPT * bd;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const kj_size off = (kj_size)r * cols;
        float ss = 0.f;
        if (in_regs) {
            float4 v[KJ_VPT];
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    const float4 a = kj_ld4(x + off, i), c = kj_ld4(res + off, i);
                    v[j] = make_float4(a.x + c.x, a.y + c.y, a.z + c.z, a.w + c.w);
                    kj_st4(h + off, i, v[j]);
                    ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
                }
            }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
#pragma unroll
            for (int j = 0; j < KJ_VPT; j++) {
                const int i = tid + j * bd;
                if (i < n4) {
                    const float4 g = kj_ld4(w, i);
                    kj_st4(y + off, i, make_float4(v[j].x * inv * g.x, v[j].y * inv * g.y,
                                                   v[j].z * inv * g.z, v[j].w * inv * g.w));
                }
            }
        } else {
            /* each thread re-reads only the elements of h it wrote itself: no barrier needed */
            for (int i = tid; i < cols; i += bd) {
                const float t = x[off + i] + res[off + i];
                h[off + i] = t;
                ss += t * t;
            }
            const float inv = rsqrtf(kj_block_sum(ss, red) / cols + eps);
            for (int i = tid; i < cols; i += bd)
                y[off + i] = h[off + i] * inv * w[i];
        }
    }
}
