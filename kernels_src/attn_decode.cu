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
 * come from L2) over its share of the keys, so each K/V row is read from
 * memory once, not once per query head (the keys of block s: att_tiles, interleaved
 * tiles by default).  Inside the block, lanes form groups of
 * KJ_ATT_LPK = KJ_ATT_MAX_D / 8 lanes (16 or 32), each lane holding 8 dimensions of a
 * K or V row, so a group reads a whole row in 16-byte pieces.  q.k is reduced with
 * shuffles inside the group; each group keeps a running max and sum per head (online
 * softmax, base 2: q is pre-scaled by scale * log2 e); groups merge through shared
 * memory at the end.  Every group runs the same number of steps (the shuffles need the
 * whole warp; a key past the end gets weight zero).
 *
 * Two ways to bring the keys in:
 *  - CUDA sm_80+ (KJ_ATT_ASYNC), when D % 4 == 0 and k, v are 16-byte aligned: the
 *    block streams its keys through shared memory in tiles of KJ_ATT_TK = 16 keys
 *    (K and V), cp.async'd ns - 1 tiles ahead of the one being used (ns stages, as many
 *    as the dynamic shared memory holds, up to 6): the loads in flight no longer
 *    depend on registers, and the block computes while they land.  The first version,
 *    two keys a group straight into 32 registers a lane (121 registers, 2 blocks an SM),
 *    ran 80% of copy at L = 65536 on the H200.  Group g takes keys g, g + NG, ... of a
 *    tile (1 key a tile with 16-lane groups, 2 with 32-lane ones).
 *  - otherwise (HIP, older CUDA, D % 4 != 0): each group takes every NG-th key, two at
 *    a time, straight from global memory into registers (two 16-byte loads per lane
 *    per row when D % 4 == 0, scalar loads otherwise).
 *
 * Launch: block KJ_BLOCK; grid.x = Hkv, grid.y = S splits (1 <= S; a good S gives each
 * block a few hundred keys and the grid a few blocks per SM).  CUDA sm_80+: dynamic
 * shared memory of at least KJ_ATT_SMEM_MIN = 4 * (G * MAX_D + NG * G * (MAX_D + 2))
 * bytes (34.8 KB for D <= 128, 37.1 KB for D <= 256), and for the streamed path
 * 4 * G * MAX_D + ns * 128 * D bytes with ns >= 2 (kcase.c passes 4 stages' worth for
 * D <= 128 and 3 above); a launch with less returns without writing o.  Other targets
 * take no dynamic shared memory.  With S == 1 the block writes o.  With S > 1 it writes
 * its partials (max, sum, acc[D]) to ws[h][s] for each of its heads, and the last block
 * of KV head kvh to finish (counted in counters[kvh]) merges the S partials into o and
 * resets counters[kvh] to 0: the split merge is fused.
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
#ifndef KJ_ATT_TK
#define KJ_ATT_TK 16                          /* keys a shared-memory tile */
#endif
#ifndef KJ_ATT_ILV /* 1: block s takes tiles s, s + S, ...; 0: one contiguous range */
#define KJ_ATT_ILV 1
#endif
#define KJ_ATT_NK (KJ_ATT_TK / KJ_ATT_NG)     /* keys a group takes from a tile */
#define KJ_ATT_NS_MAX 6                       /* shared-memory stages at most */
#define KJ_ATT_QF (KJ_ATT_G * KJ_ATT_MAX_D)   /* floats of the scaled q */
#define KJ_ATT_MF (KJ_ATT_NG * KJ_ATT_G * (KJ_ATT_MAX_D + 2)) /* floats of the group merge */
#define KJ_LOG2E 1.4426950408889634f
#if KJ_ATT_TK % KJ_ATT_NG != 0
#error "KJ_BLOCK / (KJ_ATT_MAX_D / 8) lane groups must divide a 16-key tile"
#endif
#ifndef KJ_MINB /* blocks an SM the register budget is cut for (launch bounds) */
#define KJ_MINB 2
#endif
#if defined(KJ_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(KJ_ATT_NOASYNC)
#define KJ_ATT_ASYNC 1
#else
#define KJ_ATT_ASYNC 0
#endif

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
KJ_DEV int att_imin(int a, int b) { return a < b ? a : b; }

/* The keys of block s of S, in tiles of tk keys: returns the tile count; tile i starts
 * at key *tb + i * *step and ends at min(that + tk, *lim).  KJ_ATT_ILV: the tiles s,
 * s + S, s + 2S, ... of the whole sequence, so the blocks running at once read
 * neighbouring tiles (one front moving through memory, as a copy's); otherwise the
 * contiguous range [s * ceil(L / S), (s + 1) * ceil(L / S)), whose S fronts 256 KB
 * apart (512 keys of D = 128) ran 76-80% of copy. */
KJ_DEV int att_tiles(int s, int S, int kv_len, int tk, int *tb, int *step, int *lim)
{
#if KJ_ATT_ILV
    const int ntot = (kv_len + tk - 1) / tk;
    *tb = s * tk, *step = S * tk, *lim = kv_len;
    return s < ntot ? (ntot - 1 - s) / S + 1 : 0;
#else
    const int chunk = (kv_len + S - 1) / S, t0 = s * chunk;
    *tb = t0, *step = tk, *lim = t0 + chunk < kv_len ? t0 + chunk : kv_len;
    return *lim > t0 ? (*lim - t0 + tk - 1) / tk : 0;
#endif
}

/* A load of what other blocks of this launch wrote: from L2, past this SM's L1. */
KJ_DEV float att_ldcg(const float *p)
{
#if defined(KJ_CUDA)
    return __ldcg(p);
#else
    return *(const volatile float *)p;
#endif
}

/* One online-softmax step of a lane group over NK keys (rows kr, vr; ok: the key is
 * valid) for the KJ_ATT_G heads of this pass; sq: the scaled q, [G][MAX_D / 4]. */
template <int NK>
KJ_DEV void att_step(const float4 *sq, int sub, const float (&kr)[NK][8], const float (&vr)[NK][8],
                     const bool (&ok)[NK], float (&acc)[KJ_ATT_G][8], float (&m)[KJ_ATT_G],
                     float (&l)[KJ_ATT_G])
{
#pragma unroll
    for (int g = 0; g < KJ_ATT_G; g++) {
        const float4 q0 = sq[g * (KJ_ATT_MAX_D / 4) + sub];
        const float4 q1 = sq[g * (KJ_ATT_MAX_D / 4) + KJ_ATT_LPK + sub];
        const float qr[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        float sc[NK], p[NK];
        float mn = m[g];
#pragma unroll
        for (int n = 0; n < NK; n++) {
            float t = 0.f;
#pragma unroll
            for (int i = 0; i < 8; i++)
                t += qr[i] * kr[n][i];
            t = att_group_sum(t); /* every lane, whatever its key */
            sc[n] = ok[n] ? t : -KJ_INF;
            mn = fmaxf(mn, sc[n]);
        }
        const float mr = mn == -KJ_INF ? 0.f : mn; /* no key yet: keep zeros */
        const float corr = att_exp2(m[g] - mr);
        float ps = 0.f;
#pragma unroll
        for (int n = 0; n < NK; n++)
            ps += p[n] = att_exp2(sc[n] - mr);
        l[g] = l[g] * corr + ps;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float a = acc[g][i] * corr;
#pragma unroll
            for (int n = 0; n < NK; n++)
                a += p[n] * vr[n][i];
            acc[g][i] = a;
        }
        m[g] = mn;
    }
}

#if KJ_ATT_ASYNC
KJ_DEV void att_cp16(float *dst, const float *src, bool valid)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
#if defined(KJ_ATT_L2PF) /* ask L2 for whole 128-byte lines */
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
#endif
}
KJ_DEV void att_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> KJ_DEV void att_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
/* wait until at most n of this thread's copy groups are pending (n < NS_MAX - 1) */
KJ_DEV void att_wait_n(int n)
{
    switch (n) {
    case 4: att_wait<4>(); break;
    case 3: att_wait<3>(); break;
    case 2: att_wait<2>(); break;
    case 1: att_wait<1>(); break;
    default: att_wait<0>(); break;
    }
}

/* Start the copies of the K and V rows of keys kt .. kt + TK - 1 (those < t1; the rest
 * of the tile is zero-filled) into stage st: [K: TK][D] then [V: TK][D], and commit
 * them as one group. */
KJ_DEV void att_issue(float *st, const float *kb, const float *vb, int kt, int t1, int D)
{
    const int nch = KJ_ATT_TK * D / 4, lim = (t1 - kt) * D; /* chunks a tensor; valid floats */
    const kj_size off = (kj_size)kt * D;
    for (int c = threadIdx.x; c < 2 * nch; c += KJ_BLOCK) {
        const int tv = c >= nch, cc = c - tv * nch;
        const bool ok = 4 * cc < lim;
        const float *base = tv ? vb : kb;
        att_cp16(st + tv * KJ_ATT_TK * D + 4 * cc, ok ? base + off + 4 * cc : base, ok);
    }
    att_commit();
}
#endif

extern "C" __global__ void __launch_bounds__(KJ_BLOCK, KJ_MINB)
    attn_decode_f32(const float *__restrict__ q, const float *__restrict__ k,
                    const float *__restrict__ v, float *o, float *ws, unsigned *counters,
                    int n_heads, int n_kv_heads, int kv_len, int kv_cap, int head_dim, float scale)
{
    /* shared memory: the scaled q [G][MAX_D] (zero-padded), then either the group merge
     * (m [NG][G], l [NG][G], acc [NG][G][MAX_D]) or, while keys stream, the stages */
#if KJ_ATT_ASYNC
    extern __shared__ float4 att_dyn[];
    float *arena = reinterpret_cast<float *>(att_dyn);
    unsigned dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < 4u * (KJ_ATT_QF + KJ_ATT_MF))
        return; /* launched without its shared memory */
#else
    __shared__ float4 att_static[(KJ_ATT_QF + KJ_ATT_MF) / 4];
    float *arena = reinterpret_cast<float *>(att_static);
#endif
    const float4 *sq = reinterpret_cast<const float4 *>(arena);
    float *sm_m = arena + KJ_ATT_QF, *sm_l = sm_m + KJ_ATT_NG * KJ_ATT_G;
    float *sm_acc = sm_l + KJ_ATT_NG * KJ_ATT_G; /* [w][g][d] at (w * G + g) * MAX_D + d */
    __shared__ int sm_last;
    const int kvh = blockIdx.x, s = blockIdx.y, S = gridDim.y, D = head_dim;
    const int gsz = n_heads / n_kv_heads; /* query heads per KV head */
    const int grp = threadIdx.x / KJ_ATT_LPK, sub = threadIdx.x % KJ_ATT_LPK;
    const int ng = blockDim.x / KJ_ATT_LPK;
    const float *kb = k + (kj_size)kvh * kv_cap * D, *vb = v + (kj_size)kvh * kv_cap * D;
    const bool vec = (D & 3) == 0;
#if KJ_ATT_ASYNC
    int ns = (int)((dyn / 4 - KJ_ATT_QF) / (2u * KJ_ATT_TK * (unsigned)D));
    ns = ns > KJ_ATT_NS_MAX ? KJ_ATT_NS_MAX : ns;
    const bool async = vec && ns >= 2 && blockDim.x == KJ_BLOCK &&
                       (((unsigned long long)k | (unsigned long long)v) & 15) == 0;
    float *stages = arena + KJ_ATT_QF; /* ns x {K, V} x TK x D floats */
#endif

    if (kvh >= n_kv_heads || D > KJ_ATT_MAX_D || grp >= KJ_ATT_NG)
        return;
    for (int hp = 0; hp < gsz; hp += KJ_ATT_G) {
        float acc[KJ_ATT_G][8], m[KJ_ATT_G], l[KJ_ATT_G];
        /* q in shared memory, not registers: 32 fewer registers */
        for (int i = threadIdx.x; i < KJ_ATT_QF; i += blockDim.x) {
            const int g = i / KJ_ATT_MAX_D, d = i % KJ_ATT_MAX_D;
            const float qv = hp + g < gsz && d < D ? q[(kj_size)(kvh * gsz + hp + g) * D + d] : 0.f;
            arena[i] = qv * scale * KJ_LOG2E;
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
#if KJ_ATT_ASYNC
        if (async) {
            int tb, step, lim;
            const int nt = att_tiles(s, S, kv_len, KJ_ATT_TK, &tb, &step, &lim);
            const int stage = 2 * KJ_ATT_TK * D;
            for (int i = 0; i < ns - 1; i++) /* the first ns - 1 tiles (a group each) */
                if (i < nt)
                    att_issue(stages + i * stage, kb, vb, tb + i * step,
                              att_imin(tb + i * step + KJ_ATT_TK, lim), D);
                else
                    att_commit();
            for (int i = 0; i < nt; i++) {
                att_wait_n(ns - 2); /* this thread's copies of tile i have landed */
                __syncthreads();    /* everyone's have; and tile i - 1's stage is free */
                const int j = i + ns - 1;
                if (j < nt)
                    att_issue(stages + (j % ns) * stage, kb, vb, tb + j * step,
                              att_imin(tb + j * step + KJ_ATT_TK, lim), D);
                else
                    att_commit();
                const float *kt = stages + (i % ns) * stage, *vt = kt + KJ_ATT_TK * D;
                const int t = tb + i * step, te = att_imin(t + KJ_ATT_TK, lim);
                float kr[KJ_ATT_NK][8], vr[KJ_ATT_NK][8];
                bool ok[KJ_ATT_NK];
#pragma unroll
                for (int n = 0; n < KJ_ATT_NK; n++) {
                    const int kk = grp + n * KJ_ATT_NG;
                    ok[n] = t + kk < te; /* rows past te are zeros */
                    att_load_row(kt + kk * D, sub, D, true, kr[n]);
                    att_load_row(vt + kk * D, sub, D, true, vr[n]);
                }
                att_step<KJ_ATT_NK>(sq, sub, kr, vr, ok, acc, m, l);
            }
            att_wait<0>();
            __syncthreads(); /* the merge below reuses the stages' memory */
        } else
#endif
        {
            /* two keys per step per group (tiles of 2 * ng keys): 8 16-byte loads in
             * flight per lane.  The trip count is the same for every group; a group
             * whose key is past the end re-reads a valid row with weight zero. */
            int tb, step, lim;
            const int nt = att_tiles(s, S, kv_len, 2 * ng, &tb, &step, &lim);
            for (int i = 0; i < nt; i++) {
                const int base = tb + i * step, te = att_imin(base + 2 * ng, lim);
                const int ta = base + grp, tc = ta + ng;
                float kr[2][8], vr[2][8];
                const bool ok[2] = {ta < te, tc < te};
                att_load_row(kb + (kj_size)(ok[0] ? ta : base) * D, sub, D, vec, kr[0]);
                att_load_row(kb + (kj_size)(ok[1] ? tc : base) * D, sub, D, vec, kr[1]);
                att_load_row(vb + (kj_size)(ok[0] ? ta : base) * D, sub, D, vec, vr[0]);
                att_load_row(vb + (kj_size)(ok[1] ? tc : base) * D, sub, D, vec, vr[1]);
                att_step<2>(sq, sub, kr, vr, ok, acc, m, l);
            }
        }
        /* merge the lane groups of the block through shared memory */
#pragma unroll
        for (int g = 0; g < KJ_ATT_G; g++) {
            if (sub == 0) {
                sm_m[grp * KJ_ATT_G + g] = m[g];
                sm_l[grp * KJ_ATT_G + g] = l[g];
            }
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    const int d = 4 * (j * KJ_ATT_LPK + sub) + c;
                    if (d < D)
                        sm_acc[(grp * KJ_ATT_G + g) * KJ_ATT_MAX_D + d] = acc[g][4 * j + c];
                }
        }
        __syncthreads();
        for (int i = threadIdx.x; i < KJ_ATT_G * D; i += blockDim.x) {
            const int g = i / D, d = i % D, h = kvh * gsz + hp + g;
            if (hp + g >= gsz)
                continue;
            float bm = -KJ_INF, bl = 0.f, a = 0.f;
            for (int w = 0; w < ng; w++)
                bm = fmaxf(bm, sm_m[w * KJ_ATT_G + g]);
            for (int w = 0; w < ng; w++)
                if (sm_m[w * KJ_ATT_G + g] != -KJ_INF) { /* a group that saw no key */
                    const float f = att_exp2(sm_m[w * KJ_ATT_G + g] - bm);
                    bl += sm_l[w * KJ_ATT_G + g] * f;
                    a += sm_acc[(w * KJ_ATT_G + g) * KJ_ATT_MAX_D + d] * f;
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
    float *wsm = sm_acc;
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
