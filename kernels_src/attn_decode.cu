/*
 * attn_decode.cu: decode attention, one query token per head, grouped-query heads,
 * run-time KV length, single-pass online softmax, split over the KV length (f32).
 *
 * q, o: [H][D]; k, v: [Hkv][cap][D] (a KV cache with room for `cap` positions, of which
 * the first kv_len >= 1 are valid).  Head h reads KV head h / (H / Hkv); H % Hkv == 0.
 *   o[h] = softmax_t(scale * q[h] . k[kvh][t], t < kv_len) . v[kvh][t]
 * D <= KJ_ATT_MAX_D.
 *
 * Launch: block KJ_BLOCK; grid.x = H, grid.y = S splits (1 <= S; a good S gives each
 * block a few hundred keys and the grid a few blocks per SM).  Block (h, s) takes keys
 * [s*ceil(L/S), (s+1)*ceil(L/S)).  Inside a block each warp takes every nw-th key: its
 * lanes hold strided slices of q and of the output accumulator, reduce q.k with
 * shuffles and keep a running max and sum (online softmax); warps merge through shared
 * memory.  Each warp takes its keys two at a time.  With S == 1 the block writes o.  With S > 1 it writes its partial
 * (max, sum, acc[D]) to ws[h][s] and the last block of head h to finish (counted in
 * counters[h]) merges the S partials into o and resets counters[h] to 0.
 *   ws: H * S * (D + 2) floats of scratch; counters: H uint32, zero before the first
 *   launch (each launch leaves them zero again).
 * grid.x is the fastest-varying block index, so the heads of one KV group work on the
 * same stretch of the cache at about the same time and share it through L2.
 */
#include "kjit_prelude.h"

#ifndef KJ_ATT_MAX_D
#define KJ_ATT_MAX_D 256
#endif
#define KJ_ATT_DPL (KJ_ATT_MAX_D / 32) /* dims per lane for the narrowest warp */

extern "C" __global__ void __launch_bounds__(KJ_BLOCK)
    attn_decode_f32(const float *q, const float *k, const float *v, float *o, float *ws,
                    unsigned *counters, int n_heads, int n_kv_heads, int kv_len, int kv_cap,
                    int head_dim, float scale)
{
    __shared__ float sm_m[KJ_MAX_WARPS], sm_l[KJ_MAX_WARPS];
    __shared__ float sm_acc[KJ_MAX_WARPS][KJ_ATT_MAX_D];
    __shared__ int sm_last;
    const int h = blockIdx.x, s = blockIdx.y, S = gridDim.y;
    const int lane = threadIdx.x % KJ_WARP, warp = threadIdx.x / KJ_WARP;
    const int nw = blockDim.x / KJ_WARP, D = head_dim;
    const int kvh = h / (n_heads / n_kv_heads);
    const int chunk = (kv_len + S - 1) / S, t0 = s * chunk;
    const int t1 = t0 + chunk < kv_len ? t0 + chunk : kv_len;
    const float *kb = k + (kj_size)kvh * kv_cap * D, *vb = v + (kj_size)kvh * kv_cap * D;
    float qr[KJ_ATT_DPL], acc[KJ_ATT_DPL], m = -KJ_INF, l = 0.f;

    if (h >= n_heads || D > KJ_ATT_MAX_D)
        return;
#pragma unroll
    for (int j = 0; j < KJ_ATT_DPL; j++) {
        const int d = lane + j * KJ_WARP;
        qr[j] = d < D ? q[(kj_size)h * D + d] * scale : 0.f;
        acc[j] = 0.f;
    }
    /* two keys per step: twice the loads in flight, two interleaved reductions */
    for (int t = t0 + warp; t < t1; t += 2 * nw) {
        const bool two = t + nw < t1;
        const float *ka = kb + (kj_size)t * D, *va = vb + (kj_size)t * D;
        const float *kc = kb + (kj_size)(two ? t + nw : t) * D, *vc = vb + (kj_size)(two ? t + nw : t) * D;
        float sa = 0.f, sb = 0.f, vra[KJ_ATT_DPL], vrb[KJ_ATT_DPL];
#pragma unroll
        for (int j = 0; j < KJ_ATT_DPL; j++) {
            const int d = lane + j * KJ_WARP;
            vra[j] = d < D ? va[d] : 0.f;
            vrb[j] = d < D ? vc[d] : 0.f;
            if (d < D) {
                sa += qr[j] * ka[d];
                sb += qr[j] * kc[d];
            }
        }
        for (int off = KJ_WARP / 2; off > 0; off >>= 1) {
            sa += kj_shfl_xor(sa, off);
            sb += kj_shfl_xor(sb, off);
        }
        const float mn = fmaxf(m, two ? fmaxf(sa, sb) : sa);
        const float corr = expf(m - mn), pa = expf(sa - mn), pb = two ? expf(sb - mn) : 0.f;
        l = l * corr + pa + pb;
#pragma unroll
        for (int j = 0; j < KJ_ATT_DPL; j++)
            acc[j] = acc[j] * corr + pa * vra[j] + pb * vrb[j];
        m = mn;
    }
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int j = 0; j < KJ_ATT_DPL; j++) {
        const int d = lane + j * KJ_WARP;
        if (d < D)
            sm_acc[warp][d] = acc[j];
    }
    __syncthreads();

    /* merge the warps: block max bm, block sum bl, block accumulator per dimension */
    float bm = -KJ_INF, bl = 0.f;
    for (int w = 0; w < nw; w++)
        bm = fmaxf(bm, sm_m[w]);
    for (int w = 0; w < nw; w++)
        if (sm_m[w] != -KJ_INF) /* a warp that saw no key */
            bl += sm_l[w] * expf(sm_m[w] - bm);
    float *part = ws + ((kj_size)h * S + s) * (D + 2);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float a = 0.f;
        for (int w = 0; w < nw; w++)
            if (sm_m[w] != -KJ_INF)
                a += sm_acc[w][d] * expf(sm_m[w] - bm);
        if (S == 1)
            o[(kj_size)h * D + d] = a / bl;
        else
            part[2 + d] = a;
    }
    if (S == 1)
        return;
    if (threadIdx.x == 0) {
        part[0] = bm;
        part[1] = bl;
    }

    /* the last block of head h to finish merges the S partials */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        sm_last = atomicAdd(&counters[h], 1u) == (unsigned)S - 1;
    __syncthreads();
    if (!sm_last)
        return;
    __threadfence();
    const volatile float *hp = ws + (kj_size)h * S * (D + 2);
    float gm = -KJ_INF, gl = 0.f;
    for (int i = 0; i < S; i++)
        gm = fmaxf(gm, hp[(kj_size)i * (D + 2)]);
    for (int i = 0; i < S; i++) {
        const float pm = hp[(kj_size)i * (D + 2)];
        if (pm != -KJ_INF)
            gl += hp[(kj_size)i * (D + 2) + 1] * expf(pm - gm);
    }
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float a = 0.f;
        for (int i = 0; i < S; i++) {
            const float pm = hp[(kj_size)i * (D + 2)];
            if (pm != -KJ_INF)
                a += hp[(kj_size)i * (D + 2) + 2 + d] * expf(pm - gm);
        }
        o[(kj_size)h * D + d] = a / gl;
    }
    if (threadIdx.x == 0)
        counters[h] = 0;
}
