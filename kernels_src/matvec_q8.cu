/*
 * matvec_q8.cu: y = W x with int8 weights and int8-quantised activations (q8_0 style).
 *
 * w: n rows x k int8, row-major; ws: n x k/32 f32 scales (one per 32-weight block);
 * xq: k int8; xs: k/32 f32 scales.  y[r] = sum_b ws[r][b] * xs[b] * sum_{i in b} w[r][i]*xq[i].
 * Requires k % 32 == 0 and 16-byte aligned buffers.  One warp/wavefront per KJ_MV_ROWS
 * (4) rows: each lane loads 16 weight bytes (one int4) of each row at a time and does
 * four 4-way int8 dots per row (kj_dp4a: __dp4a / v_dot4_i32_i8 / fallback) against one
 * load of x, which serves all the rows; partial sums are reduced by shuffles.  Weights
 * are read once, so on CUDA they are loaded evict-first (KJ_MV_CS, default on) and x
 * and the scales keep the caches.
 * Launch: block KJ_BLOCK, grid = ceil(n / (KJ_MV_ROWS * KJ_BLOCK / 32)) (enough for
 * 32-wide warps; with 64-wide wavefronts the blocks stride over the rest), or any
 * smaller grid: row groups are strided.  On the H100/H200 that grid (512 blocks at
 * n = 16384) is one wave with the 4 blocks an SM that the launch bounds ask for: the
 * first version (2 rows a warp, 1024 blocks, 5 an SM: 1.55 waves) ran 77% of copy.
 */
#include "kjit_prelude.h"

#ifndef KJ_MV_ROWS
#define KJ_MV_ROWS 4
#endif
#ifndef KJ_MV_UNROLL
#define KJ_MV_UNROLL 2
#endif
#ifndef KJ_MV_CS
#define KJ_MV_CS 1
#endif
#ifndef KJ_MINB /* blocks an SM the register budget is cut for (launch bounds) */
#define KJ_MINB 1
#endif

KJ_DEV int4 mv_ldw(const int4 *p)
{
#if defined(KJ_CUDA) && KJ_MV_CS
    return __ldcs(p); /* read once: evict first */
#else
    return *p;
#endif
}

extern "C" __global__ void __launch_bounds__(KJ_BLOCK, KJ_MINB)
    matvec_q8(const signed char *__restrict__ w, const float *__restrict__ ws,
              const signed char *__restrict__ xq, const float *__restrict__ xs, float *y, int n,
              int k)
{
    enum { R = KJ_MV_ROWS, U = KJ_MV_UNROLL };
    const int lane = threadIdx.x % KJ_WARP, wpb = blockDim.x / KJ_WARP;
    const int chunks = k / 16, nb = k / 32;
    const int4 *x4 = reinterpret_cast<const int4 *>(xq);

    for (int r0 = R * (blockIdx.x * wpb + threadIdx.x / KJ_WARP); r0 < n; r0 += R * gridDim.x * wpb) {
        /* rows r0 .. r0 + R - 1 are consecutive: one base, a stride of `chunks` int4 */
        const int4 *w0 = reinterpret_cast<const int4 *>(w + (kj_size)r0 * k);
        const float *s0 = ws + (kj_size)r0 * nb;
        const int nr = n - r0 < R ? n - r0 : R; /* rows past n are not read */
        float acc[R];
#pragma unroll
        for (int i = 0; i < R; i++)
            acc[i] = 0.f;
#pragma unroll(U) /* R * KJ_MV_UNROLL 16-byte weight loads in flight per lane */
        for (int c = lane; c < chunks; c += KJ_WARP) {
            int4 a[R];
#pragma unroll
            for (int i = 0; i < R; i++)
                a[i] = i < nr ? mv_ldw(w0 + (kj_size)i * chunks + c) : make_int4(0, 0, 0, 0);
            const int4 x = x4[c];
            const float sx = xs[c >> 1];
#pragma unroll
            for (int i = 0; i < R; i++) {
                int d = kj_dp4a(a[i].x, x.x, 0);
                d = kj_dp4a(a[i].y, x.y, d);
                d = kj_dp4a(a[i].z, x.z, d);
                d = kj_dp4a(a[i].w, x.w, d);
                acc[i] += (float)d * ((i < nr ? s0[(kj_size)i * nb + (c >> 1)] : 0.f) * sx);
            }
        }
#pragma unroll
        for (int i = 0; i < R; i++)
            acc[i] = kj_warp_sum(acc[i]);
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < R; i++)
                if (r0 + i < n)
                    y[r0 + i] = acc[i];
        }
    }
}
