/*
 * attn_decode.cu: decode attention, one query token per head, grouped-query heads,
 * run-time KV length, single-pass online softmax, split over the KV length
 * (flash-decoding), f32.
 *
 * q, o: [H][D]; k, v: [Hkv][cap][D] (a KV cache with room for `cap` positions, of which
 * the first kv_len >= 1 are valid).  Head h reads KV head h / (H / Hkv); H % Hkv == 0.
 *   o[h] = softmax_t(scale * q[h] . k[kvh][t], t < kv_len) . v[kvh][t]
 * D <= KJ_ATT_MAX_D (128 or 256: the manifest's two variants).  A batch folds into the
 * head counts (batch b, KV head j is KV head b * Hkv + j).
 *
 * GQA-aware: block (kvh, s) computes ALL the query heads of KV head kvh (up to
 * KJ_ATT_G = 4 per pass; larger groups take more passes over the same keys, which then
 * come from L2) over keys [s*ceil(L/S), (s+1)*ceil(L/S)), so each K/V row is read from
 * memory once, not once per query head.  Inside the block, lanes form groups of
 * KJ_ATT_LPK = KJ_ATT_MAX_D / 8 lanes (16 or 32); a group takes every ngroups-th key,
 * two at a time, each lane reading 8 dimensions of the K and V rows with two 16-byte
 * loads each (when D % 4 == 0 and the buffers are 16-byte aligned; scalar loads
 * otherwise), so a group reads a whole row in coalesced 16-byte pieces.  Every group
 * runs the same number of steps (the shuffles need the whole warp).  q.k is reduced
 * with shuffles inside the group; each group keeps a running max and sum per head
 * (online softmax, base 2: q is pre-scaled by scale * log2 e); groups merge through
 * shared memory at the end.
 *
 * Launch: block KJ_BLOCK; grid.x = Hkv, grid.y = S splits (1 <= S; a good S gives each
 * block a few hundred keys and the grid a few blocks per SM).  With S == 1 the block
 * writes o.  With S > 1 it writes its partials (max, sum, acc[D]) to ws[h][s] for each
 * of its heads, and the last block of KV head kvh to finish (counted in counters[kvh])
 * merges the S partials into o and resets counters[kvh] to 0: the split merge is fused.
 *   ws: H * S * (D + 2) floats of scratch; counters: >= Hkv uint32, zero before the
 *   first launch (each launch leaves them zero again).
 */
#include "kjit_prelude.h"

#ifndef KJ_ATT_MAX_D
#define KJ_ATT_MAX_D 256
#endif
#if KJ_ATT_MAX_D != 128 && KJ_ATT_MAX_D != 256
#error "KJ_ATT_MAX_D must be 128 or 256"
#endif
#define KJ_ATT_LPK (KJ_ATT_MAX_D / 8)         /* lanes per key; each holds 8 dims */
#define KJ_ATT_NG (KJ_BLOCK / KJ_ATT_LPK)     /* lane groups per block (KJ_BLOCK threads) */
#define KJ_ATT_G 4                            /* query heads per pass */
#define KJ_LOG2E 1.4426950408889634f

/* Dims 4*(j*LPK + sub) .. +3 for j = 0, 1 of row `row` into r[8]; zeros past D. */
KJ_DEV void att_load_row(const float *__restrict__ row, int sub, int D, bool vec, float r[8])
{
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int f = j * KJ_ATT_LPK + sub;
        if (vec) {
            const float4 a = 4 * f < D ? kj_ld4(row, f) : make_float4(0.f, 0.f, 0.f, 0.f);
            r[4 * j] = a.x, r[4 * j + 1] = a.y, r[4 * j + 2] = a.z, r[4 * j + 3] = a.w;
        } else {
#pragma unroll
            for (int c = 0; c < 4; c++)
                r[4 * j + c] = 4 * f + c < D ? row[4 * f + c] : 0.f;
        }
    }
}

/* Sum over the KJ_ATT_LPK lanes of a group (xor offsets stay inside the group). */
KJ_DEV float att_group_sum(float v)
{
#pragma unroll
    for (int off = KJ_ATT_LPK / 2; off > 0; off >>= 1)
        v += kj_shfl_xor(v, off);
    return v;
}

KJ_DEV float att_exp2(float x) { return exp2f(x); }

/* A load of what other blocks of this launch wrote: from L2, past this SM's L1. */
KJ_DEV float att_ldcg(const float *p)
{
#if defined(KJ_CUDA)
    return __ldcg(p);
#else
    return *(const volatile float *)p;
#endif
}

extern "C" __global__ void __launch_bounds__(KJ_BLOCK, 2)
    attn_decode_f32(const float *__restrict__ q, const float *__restrict__ k,
                    const float *__restrict__ v, float *o, float *ws, unsigned *counters,
                    int n_heads, int n_kv_heads, int kv_len, int kv_cap, int head_dim, float scale)
{
    __shared__ float sm_m[KJ_ATT_NG][KJ_ATT_G], sm_l[KJ_ATT_NG][KJ_ATT_G];
    __shared__ float sm_acc[KJ_ATT_NG][KJ_ATT_G][KJ_ATT_MAX_D];
    __shared__ float4 sm_q[KJ_ATT_G][KJ_ATT_MAX_D / 4]; /* scale * log2e * q, zero-padded */
    __shared__ int sm_last;
    const int kvh = blockIdx.x, s = blockIdx.y, S = gridDim.y, D = head_dim;
    const int gsz = n_heads / n_kv_heads; /* query heads per KV head */
    const int grp = threadIdx.x / KJ_ATT_LPK, sub = threadIdx.x % KJ_ATT_LPK;
    const int ng = blockDim.x / KJ_ATT_LPK;
    const int chunk = (kv_len + S - 1) / S, t0 = s * chunk;
    const int t1 = t0 + chunk < kv_len ? t0 + chunk : kv_len;
    const float *kb = k + (kj_size)kvh * kv_cap * D, *vb = v + (kj_size)kvh * kv_cap * D;
    const bool vec = (D & 3) == 0;

    if (kvh >= n_kv_heads || D > KJ_ATT_MAX_D || grp >= KJ_ATT_NG)
        return;
    for (int hp = 0; hp < gsz; hp += KJ_ATT_G) {
        float acc[KJ_ATT_G][8], m[KJ_ATT_G], l[KJ_ATT_G];
        /* q in shared memory, not registers: 32 fewer registers, two blocks per SM */
        for (int i = threadIdx.x; i < KJ_ATT_G * KJ_ATT_MAX_D; i += blockDim.x) {
            const int g = i / KJ_ATT_MAX_D, d = i % KJ_ATT_MAX_D;
            const float qv = hp + g < gsz && d < D ? q[(kj_size)(kvh * gsz + hp + g) * D + d] : 0.f;
            (&sm_q[g][0].x)[d] = qv * scale * KJ_LOG2E;
        }
        __syncthreads();
#pragma unroll
        for (int g = 0; g < KJ_ATT_G; g++) {
#pragma unroll
            for (int i = 0; i < 8; i++)
                acc[g][i] = 0.f;
            m[g] = -KJ_INF;
            l[g] = 0.f;
        }
        /* two keys per step per group: 8 16-byte loads in flight per lane.  The trip
         * count is the same for every group (base runs over the block's keys), so the
         * shuffles inside always find every lane of the warp; a group whose key is past
         * the end re-reads a valid row and gives it weight zero. */
        for (int base = t0; base < t1; base += 2 * ng) {
            const int ta = base + grp, tc = ta + ng;
            const bool va = ta < t1, vc = tc < t1;
            float ka[8], kc[8], wa[8], wc[8];
            att_load_row(kb + (kj_size)(va ? ta : t0) * D, sub, D, vec, ka);
            att_load_row(kb + (kj_size)(vc ? tc : t0) * D, sub, D, vec, kc);
            att_load_row(vb + (kj_size)(va ? ta : t0) * D, sub, D, vec, wa);
            att_load_row(vb + (kj_size)(vc ? tc : t0) * D, sub, D, vec, wc);
#pragma unroll
            for (int g = 0; g < KJ_ATT_G; g++) {
                const float4 q0 = sm_q[g][sub], q1 = sm_q[g][KJ_ATT_LPK + sub];
                const float qr[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
                float sa = 0.f, sc = 0.f;
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    sa += qr[i] * ka[i];
                    sc += qr[i] * kc[i];
                }
                sa = att_group_sum(sa); /* every lane, whatever its key */
                sc = att_group_sum(sc);
                sa = va ? sa : -KJ_INF;
                sc = vc ? sc : -KJ_INF;
                const float mn = fmaxf(m[g], fmaxf(sa, sc));
                const float mr = mn == -KJ_INF ? 0.f : mn; /* no key yet: keep zeros */
                const float corr = att_exp2(m[g] - mr), pa = att_exp2(sa - mr);
                const float pc = att_exp2(sc - mr);
                l[g] = l[g] * corr + pa + pc;
#pragma unroll
                for (int i = 0; i < 8; i++)
                    acc[g][i] = acc[g][i] * corr + pa * wa[i] + pc * wc[i];
                m[g] = mn;
            }
        }
        /* merge the lane groups of the block through shared memory */
#pragma unroll
        for (int g = 0; g < KJ_ATT_G; g++) {
            if (sub == 0) {
                sm_m[grp][g] = m[g];
                sm_l[grp][g] = l[g];
            }
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    const int d = 4 * (j * KJ_ATT_LPK + sub) + c;
                    if (d < D)
                        sm_acc[grp][g][d] = acc[g][4 * j + c];
                }
        }
        __syncthreads();
        for (int i = threadIdx.x; i < KJ_ATT_G * D; i += blockDim.x) {
            const int g = i / D, d = i % D, h = kvh * gsz + hp + g;
            if (hp + g >= gsz)
                continue;
            float bm = -KJ_INF, bl = 0.f, a = 0.f;
            for (int w = 0; w < ng; w++)
                bm = fmaxf(bm, sm_m[w][g]);
            for (int w = 0; w < ng; w++)
                if (sm_m[w][g] != -KJ_INF) { /* a group that saw no key */
                    const float f = att_exp2(sm_m[w][g] - bm);
                    bl += sm_l[w][g] * f;
                    a += sm_acc[w][g][d] * f;
                }
            if (S == 1) {
                o[(kj_size)h * D + d] = a / bl;
            } else {
                float *part = ws + ((kj_size)h * S + s) * (D + 2);
                part[2 + d] = a;
                if (d == 0) {
                    part[0] = bm;
                    part[1] = bl;
                }
            }
        }
        __syncthreads(); /* the shared arrays are reused by the next pass */
    }
    if (S == 1)
        return;

    /* the last block of KV head kvh to finish merges the S partials of its heads */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        sm_last = atomicAdd(&counters[kvh], 1u) == (unsigned)S - 1;
    __syncthreads();
    if (!sm_last)
        return;
    __threadfence();
    /* When they fit in the (now free) group-accumulator space: every partial's max and
     * sum in shared memory, then its weight exp2(m_j - max) and each head's total, so
     * the sum over splits below is 16 independent coalesced loads at a time (the first
     * version's loop, one dependent load after another, cost a 128-split merge about a
     * third of the kernel's time).  Otherwise each element recomputes them. */
    float *wsm = &sm_acc[0][0][0];
    const int n = gsz * S;
    const bool in_smem = 3 * n + gsz <= KJ_ATT_NG * KJ_ATT_G * KJ_ATT_MAX_D;
    const float *base = ws + (kj_size)kvh * n * (D + 2); /* this group's partials */
    if (in_smem) {
        float *pm = wsm, *pl = wsm + n, *pw = wsm + 2 * n, *gl = wsm + 3 * n;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            pm[i] = att_ldcg(base + (kj_size)i * (D + 2));
            pl[i] = att_ldcg(base + (kj_size)i * (D + 2) + 1);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const int g = i / S;
            float gm = -KJ_INF;
            for (int j = 0; j < S; j++)
                gm = fmaxf(gm, pm[g * S + j]);
            pw[i] = pm[i] == -KJ_INF ? 0.f : att_exp2(pm[i] - gm);
        }
        __syncthreads();
        for (int g = threadIdx.x; g < gsz; g += blockDim.x) {
            float t = 0.f;
            for (int j = 0; j < S; j++)
                t += pl[g * S + j] * pw[g * S + j];
            gl[g] = t;
        }
        __syncthreads();
        for (int i = threadIdx.x; i < gsz * D; i += blockDim.x) {
            const int g = i / D, d = i % D;
            const float *hp = base + (kj_size)g * S * (D + 2) + 2 + d, *wg = pw + g * S;
            float a[16];
#pragma unroll
            for (int u = 0; u < 16; u++)
                a[u] = 0.f;
            int j = 0;
            for (; j + 16 <= S; j += 16) {
                float x[16];
#pragma unroll
                for (int u = 0; u < 16; u++)
                    x[u] = att_ldcg(hp + (kj_size)(j + u) * (D + 2));
#pragma unroll
                for (int u = 0; u < 16; u++)
                    a[u] += x[u] * wg[j + u];
            }
            for (; j < S; j++)
                a[0] += att_ldcg(hp + (kj_size)j * (D + 2)) * wg[j];
            float t = 0.f;
#pragma unroll
            for (int u = 0; u < 16; u++)
                t += a[u];
            o[(kj_size)(kvh * gsz + g) * D + d] = t / gl[g];
        }
    } else {
        for (int i = threadIdx.x; i < gsz * D; i += blockDim.x) {
            const int g = i / D, d = i % D;
            const float *hp = base + (kj_size)g * S * (D + 2);
            float gm = -KJ_INF, gl = 0.f, a = 0.f;
            for (int j = 0; j < S; j++)
                gm = fmaxf(gm, att_ldcg(hp + (kj_size)j * (D + 2)));
            for (int j = 0; j < S; j++) {
                const float pm = att_ldcg(hp + (kj_size)j * (D + 2));
                const float f = pm == -KJ_INF ? 0.f : att_exp2(pm - gm);
                gl += att_ldcg(hp + (kj_size)j * (D + 2) + 1) * f;
                a += att_ldcg(hp + (kj_size)j * (D + 2) + 2 + d) * f;
            }
            o[(kj_size)(kvh * gsz + g) * D + d] = a / gl;
        }
    }
    if (threadIdx.x == 0)
        counters[kvh] = 0;
}
