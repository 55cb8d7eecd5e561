/*
 * rope.cu: rotary position embedding (f32), both conventions.
 *
 * x, y: [T][H][D] (tokens, heads, head_dim; D even); cos, sin: [T][D/2], the tables for
 * each token's position (the caller computes them once per step).  For pair i < D/2:
 *   rope_neox_f32 (GPT-NeoX, half rotation): pairs (i, i + D/2);
 *   rope_gptj_f32 (GPT-J, interleaved):      pairs (2i, 2i + 1);
 *   y_a = x_a cos - x_b sin,  y_b = x_b cos + x_a sin.
 * One thread per quad of four pairs: launch block KJ_BLOCK, any grid (grid-stride;
 * natural grid ceil(ceil(T*H*D/2 / 4) / KJ_BLOCK)).  In place (y == x) is allowed.
 */
#include "kjit_prelude.h"

template <bool Neox>
KJ_DEV void rope_pair(const float *x, const float *cs, const float *sn, float *y, unsigned p,
                      unsigned heads, unsigned dim)
{
    const unsigned half = dim / 2, th = p / half, i = p - th * half, t = th / heads;
    const float c = cs[t * half + i], s = sn[t * half + i];
    const kj_size ia = (kj_size)th * dim + (Neox ? i : 2 * i), ib = ia + (Neox ? half : 1);
    const float xa = x[ia], xb = x[ib];
    y[ia] = xa * c - xb * s;
    y[ib] = xb * c + xa * s;
}

/* Each thread rotates a quad of four consecutive pairs of one head: with D % 8 == 0 that
 * is whole float4 loads of x, cos and sin; otherwise four scalar pairs.  32-bit index
 * arithmetic: T * H * D / 2 must be below 2^32. */
template <bool Neox>
KJ_DEV void rope_quads(const float *x, const float *cs, const float *sn, float *y, int t_count,
                       int heads, int dim)
{
    const unsigned half = (unsigned)dim / 2, n = (unsigned)t_count * heads * half;
    const unsigned nq = (n + 3) / 4;
    for (unsigned q = blockIdx.x * blockDim.x + threadIdx.x; q < nq; q += gridDim.x * blockDim.x) {
        if (half % 4 == 0) {
            const unsigned rq = half / 4, th = q / rq, i = (q - th * rq) * 4, t = th / heads;
            const float4 c = kj_ld4(cs + (kj_size)t * half, i / 4);
            const float4 s = kj_ld4(sn + (kj_size)t * half, i / 4);
            const float *xr = x + (kj_size)th * dim;
            float *yr = y + (kj_size)th * dim;
            if (Neox) {
                const float4 a = kj_ld4(xr, i / 4), b = kj_ld4(xr + half, i / 4);
                kj_st4(yr, i / 4, make_float4(a.x * c.x - b.x * s.x, a.y * c.y - b.y * s.y,
                                              a.z * c.z - b.z * s.z, a.w * c.w - b.w * s.w));
                kj_st4(yr + half, i / 4, make_float4(b.x * c.x + a.x * s.x, b.y * c.y + a.y * s.y,
                                                     b.z * c.z + a.z * s.z, b.w * c.w + a.w * s.w));
            } else {
                const float4 a = kj_ld4(xr, i / 2), b = kj_ld4(xr, i / 2 + 1);
                kj_st4(yr, i / 2, make_float4(a.x * c.x - a.y * s.x, a.y * c.x + a.x * s.x,
                                              a.z * c.y - a.w * s.y, a.w * c.y + a.z * s.y));
                kj_st4(yr, i / 2 + 1, make_float4(b.x * c.z - b.y * s.z, b.y * c.z + b.x * s.z,
                                                  b.z * c.w - b.w * s.w, b.w * c.w + b.z * s.w));
            }
        } else {
            for (unsigned p = q * 4; p < q * 4 + 4 && p < n; p++)
                rope_pair<Neox>(x, cs, sn, y, p, heads, dim);
        }
    }
}

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    rope_neox_f32(const float *x, const float *cs, const float *sn, float *y, int t_count,
                  int heads, int dim)
{
    rope_quads<true>(x, cs, sn, y, t_count, heads, dim);
}

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    rope_gptj_f32(const float *x, const float *cs, const float *sn, float *y, int t_count,
                  int heads, int dim)
{
    rope_quads<false>(x, cs, sn, y, t_count, heads, dim);
}
