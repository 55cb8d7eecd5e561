/*
 * matvec_q8.cu: y = W x with int8 weights and int8-quantised activations (q8_0 style).
 *
 * w: n rows x k int8, row-major; ws: n x k/32 f32 scales (one per 32-weight block);
 * xq: k int8; xs: k/32 f32 scales.  y[r] = sum_b ws[r][b] * xs[b] * sum_{i in b} w[r][i]*xq[i].
 * Requires k % 32 == 0 and 16-byte aligned buffers.  One warp/wavefront per pair of
 * rows: each lane loads 16 weight bytes (one int4) of each row at a time and does four
 * 4-way int8 dots per row (kj_dp4a: __dp4a / v_dot4_i32_i8 / fallback) against one
 * load of x; partial sums are reduced by shuffles.
 * Launch: block KJ_BLOCK, grid = ceil(n / (2 * KJ_BLOCK / 32)) (enough for 32-wide
 * warps; with 64-wide wavefronts the spare blocks find no row), or any smaller grid:
 * row pairs are strided.
 */
#include "kjit_prelude.h"

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    matvec_q8(const signed char *__restrict__ w, const float *__restrict__ ws,
              const signed char *__restrict__ xq, const float *__restrict__ xs, float *y, int n,
              int k)
{
    const int lane = threadIdx.x % KJ_WARP, wpb = blockDim.x / KJ_WARP;
    const int chunks = k / 16, nb = k / 32;
    const int4 *x4 = reinterpret_cast<const int4 *>(xq);

    /* two rows per warp: each x chunk and scale loaded once serves both rows, and
     * twice the independent weight loads are in flight */
    for (int r = 2 * (blockIdx.x * wpb + threadIdx.x / KJ_WARP); r < n; r += 2 * gridDim.x * wpb) {
        const bool two = r + 1 < n;
        const int4 *w4a = reinterpret_cast<const int4 *>(w + (kj_size)r * k);
        const int4 *w4b = reinterpret_cast<const int4 *>(w + (kj_size)(two ? r + 1 : r) * k);
        const float *wsa = ws + (kj_size)r * nb, *wsb = ws + (kj_size)(two ? r + 1 : r) * nb;
        float acc_a = 0.f, acc_b = 0.f;
#pragma unroll 4 /* several 16-byte loads in flight per lane */
        for (int c = lane; c < chunks; c += KJ_WARP) {
            const int4 a = w4a[c], b = w4b[c], x = x4[c];
            const float sx = xs[c >> 1];
            int da = kj_dp4a(a.x, x.x, 0), db = kj_dp4a(b.x, x.x, 0);
            da = kj_dp4a(a.y, x.y, da), db = kj_dp4a(b.y, x.y, db);
            da = kj_dp4a(a.z, x.z, da), db = kj_dp4a(b.z, x.z, db);
            da = kj_dp4a(a.w, x.w, da), db = kj_dp4a(b.w, x.w, db);
            acc_a += (float)da * (wsa[c >> 1] * sx);
            acc_b += (float)db * (wsb[c >> 1] * sx);
        }
        acc_a = kj_warp_sum(acc_a);
        acc_b = kj_warp_sum(acc_b);
        if (lane == 0) {
            y[r] = acc_a;
            if (two)
                y[r + 1] = acc_b;
        }
    }
}
