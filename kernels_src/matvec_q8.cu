/*
 * matvec_q8.cu: y = W x with int8 weights and int8-quantised activations (q8_0 style).
 *
 * w: n rows x k int8, row-major; ws: n x k/32 f32 scales (one per 32-weight block);
 * xq: k int8; xs: k/32 f32 scales.  y[r] = sum_b ws[r][b] * xs[b] * sum_{i in b} w[r][i]*xq[i].
 * Requires k % 32 == 0 and 16-byte aligned buffers.  One warp/wavefront per row: each
 * lane loads 16 weight bytes (one int4) at a time and does four 4-way int8 dots
 * (kj_dp4a: __dp4a / v_dot4_i32_i8 / fallback); partial sums are reduced by shuffles.
 * Launch: block KJ_BLOCK, grid = ceil(n / (KJ_BLOCK / 32)) (enough for 32-wide warps;
 * with 64-wide wavefronts the spare blocks find no row), or any smaller grid: rows are
 * strided.
 */
#include "kjit_prelude.h"

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    matvec_q8(const signed char *w, const float *ws, const signed char *xq, const float *xs,
              float *y, int n, int k)
{
    const int lane = threadIdx.x % KJ_WARP, wpb = blockDim.x / KJ_WARP;
    const int chunks = k / 16, nb = k / 32;
    const int4 *x4 = reinterpret_cast<const int4 *>(xq);

    for (int r = blockIdx.x * wpb + threadIdx.x / KJ_WARP; r < n; r += gridDim.x * wpb) {
        const int4 *w4 = reinterpret_cast<const int4 *>(w + (kj_size)r * k);
        const float *wsr = ws + (kj_size)r * nb;
        float acc = 0.f;
#pragma unroll 4 /* several 16-byte loads in flight per lane */
        for (int c = lane; c < chunks; c += KJ_WARP) {
            const int4 a = w4[c], b = x4[c];
            int d = kj_dp4a(a.x, b.x, 0);
            d = kj_dp4a(a.y, b.y, d);
            d = kj_dp4a(a.z, b.z, d);
            d = kj_dp4a(a.w, b.w, d);
            acc += (float)d * (wsr[c >> 1] * xs[c >> 1]);
        }
        acc = kj_warp_sum(acc);
        if (lane == 0)
            y[r] = acc;
    }
}
