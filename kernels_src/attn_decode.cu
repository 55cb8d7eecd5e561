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
 *  - registers (the default): each group takes every NG-th key of the block's range,
 *    two at a time, straight from global memory (two 16-byte loads per lane per row
 *    when D % 4 == 0, scalar loads otherwise).  On the H100 this ran 85% of copy at
 *    D = 128, L = 65536 where the cp.async path below ran 76-77%.
 *  - KJ_ATT_ASYNC on CUDA sm_80+, when D % 4 == 0 and k, v are 16-byte aligned: the
 *    block streams its keys through shared memory in tiles of KJ_ATT_TK = 16 keys
 *    (K and V) copied ns - 1 tiles ahead of the one being used (ns stages, as many as
 *    the dynamic shared memory holds, up to 6), so the loads in flight do not depend
 *    on registers; group g takes keys g, g + NG, ... of a tile.  KJ_ATT_ASYNC=1: every
 *    thread cp.async's 16-byte pieces; =2 (sm_90): one thread copies each tile's K and
 *    V rows with two cp.async.bulk completing on an mbarrier.  The manifest's choice
 *    for each entry is what measured best (bench/ figures, the commit log).
 *
 * Launch: block KJ_BLOCK; grid.x = Hkv, grid.y = S splits (1 <= S; a good S gives each
 * block a few hundred keys and the grid a few blocks per SM).  CUDA sm_80+: the shared
 * arrays are the launch's dynamic shared memory, at least 4 * (G * MAX_D + NG * G *
 * (MAX_D + 2)) bytes (34.8 KB for MAX_D = 128, 37.1 KB for 256) and, for the streamed
 * path, 4 * G * MAX_D + ns * 128 * D bytes with ns >= 2 (kcase.c: attn_smem); a launch
 * with less returns without writing o.  Other targets: static shared memory, none
 * dynamic.  With S == 1 the block writes o.  With S > 1 it writes its partials (max m,
 * sum l, acc[D]) to ws for each of its heads, and the last block of KV head kvh to
 * finish (counted in counters[kvh]) merges the S partials into o (att_merge) and resets
 * counters[kvh] to 0: the split merge is fused.
 *   ws: H * S * (D + 2) floats of scratch (acc of head h, split j at (h * S + j) * D;
 *   its m, l at H * S * D + (h * S + j) * 2); counters: >= Hkv uint32, zero before the
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
#define KJ_ATT_ILV 0
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
#ifndef KJ_ATT_ASYNC /* 1: stream K/V through shared memory by cp.async; 2: by bulk copy */
#define KJ_ATT_ASYNC 0
#endif
/* CUDA sm_80+: the shared arrays live in the launch's dynamic shared memory */
#if defined(KJ_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KJ_ATT_DYN 1
#else
#define KJ_ATT_DYN 0
#endif
#if KJ_ATT_ASYNC && KJ_ATT_DYN
#define KJ_ATT_CPASYNC 1
#else
#define KJ_ATT_CPASYNC 0
#endif
#if KJ_ATT_ASYNC == 2 && KJ_ATT_DYN && __CUDA_ARCH__ >= 900 /* cp.async.bulk: sm_90 */
#define KJ_ATT_BULK 1
#else
#define KJ_ATT_BULK 0
#endif

/* A 16-byte piece of a K/V row in global memory (GL) or shared memory; KJ_ATT_CS:
 * global rows are loaded evict-first (read once). */
template <bool GL> KJ_DEV float4 att_ld4(const float *row, int f)
{
#if defined(KJ_CUDA) && defined(KJ_ATT_CS)
    if (GL)
        return __ldcs(reinterpret_cast<const float4 *>(row) + f);
#endif
    return kj_ld4(row, f);
}

/* Dims 4*(j*LPK + sub) .. +3 for j = 0, 1 of row `row` into r[8]; zeros past D. */
template <bool GL>
KJ_DEV void att_load_row(const float *__restrict__ row, int sub, int D, bool vec, float r[8])
{
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int f = j * KJ_ATT_LPK + sub;
        if (vec) {
            const float4 a = 4 * f < D ? att_ld4<GL>(row, f) : make_float4(0.f, 0.f, 0.f, 0.f);
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

/* W consecutive floats written by other blocks of this launch (W = 4: one 16-byte load) */
template <int W> KJ_DEV void att_ldcgw(const float *p, float *r)
{
#if defined(KJ_CUDA)
    if (W == 4) {
        const float4 v = __ldcg(reinterpret_cast<const float4 *>(p));
        r[0] = v.x, r[W > 1 ? 1 : 0] = v.y, r[W > 2 ? 2 : 0] = v.z, r[W > 3 ? 3 : 0] = v.w;
    } else
#endif
    {
#pragma unroll
        for (int e = 0; e < W; e++)
            r[e] = att_ldcg(p + e);
    }
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

#if KJ_ATT_CPASYNC
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

#if KJ_ATT_BULK
KJ_DEV unsigned att_saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
KJ_DEV void att_bar_init(unsigned long long *bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(att_saddr(bar)) : "memory");
}
KJ_DEV void att_bar_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
/* wait until phase `parity` of bar has completed */
KJ_DEV void att_bar_wait(unsigned long long *bar, unsigned parity)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "ATT_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra ATT_WAIT;\n"
                 "}\n" ::"r"(att_saddr(bar)),
                 "r"(parity)
                 : "memory");
}
#endif

/* Start the copies of the K and V rows of keys kt .. t1 - 1 (t1 <= kt + TK) into stage
 * st: [K: TK][D] then [V: TK][D].  cp.async: every thread copies 16-byte pieces, rows
 * past t1 zero-filled, one commit group per tile.  Bulk (bar != 0): thread 0 copies
 * each tensor's rows in one cp.async.bulk completing on bar (rows past t1 keep what
 * they held: the reader zeroes them). */
KJ_DEV void att_issue(float *st, const float *kb, const float *vb, int kt, int t1, int D,
                      unsigned long long *bar)
{
    const int lim = (t1 - kt) * D; /* valid floats of a tensor */
    const kj_size off = (kj_size)kt * D;
#if KJ_ATT_BULK
    if (bar) {
        if (threadIdx.x == 0) {
            const unsigned bytes = 4u * (unsigned)lim, b = att_saddr(bar);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b),
                         "r"(2 * bytes)
                         : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1], %2, [%3];\n" ::"r"(att_saddr(st)),
                         "l"(kb + off), "r"(bytes), "r"(b)
                         : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1], %2, [%3];\n" ::"r"(att_saddr(st + KJ_ATT_TK * D)),
                         "l"(vb + off), "r"(bytes), "r"(b)
                         : "memory");
        }
        return;
    }
#endif
    const int nch = KJ_ATT_TK * D / 4; /* 16-byte chunks a tensor */
    for (int c = threadIdx.x; c < 2 * nch; c += KJ_BLOCK) {
        const int tv = c >= nch, cc = c - tv * nch;
        const bool ok = 4 * cc < lim;
        const float *base = tv ? vb : kb;
        att_cp16(st + tv * KJ_ATT_TK * D + 4 * cc, ok ? base + off + 4 * cc : base, ok);
    }
    att_commit();
}

/* The block's keys through ns shared-memory stages (KJ_ATT_CPASYNC): tile i is copied
 * ns - 1 tiles ahead of its use; a barrier a tile lets the stage used last be refilled.
 * bars: ns mbarriers (bulk copies) or null (cp.async); used: tiles that went through
 * the stages before (their phases), updated. */
KJ_DEV void att_keys_smem(float *stages, int ns, const float *kb, const float *vb, int s, int S,
                          int kv_len, int D, int grp, int sub, const float4 *sq,
                          unsigned long long *bars, int &used, float (&acc)[KJ_ATT_G][8],
                          float (&m)[KJ_ATT_G], float (&l)[KJ_ATT_G])
{
    int tb, step, lim;
    const int nt = att_tiles(s, S, kv_len, KJ_ATT_TK, &tb, &step, &lim);
    const int stage = 2 * KJ_ATT_TK * D, u0 = used;
    for (int i = 0; i < ns - 1; i++) /* the first ns - 1 tiles (a copy group each) */
        if (i < nt)
            att_issue(stages + ((u0 + i) % ns) * stage, kb, vb, tb + i * step,
                      att_imin(tb + i * step + KJ_ATT_TK, lim), D, bars ? bars + (u0 + i) % ns : 0);
        else if (!bars)
            att_commit();
    for (int i = 0; i < nt; i++) {
        const int u = u0 + i;
#if KJ_ATT_BULK
        if (bars)
            att_bar_wait(bars + u % ns, (unsigned)(u / ns) & 1u);
        else
#endif
            att_wait_n(ns - 2); /* this thread's copies of tile i have landed */
        __syncthreads();        /* everyone's have; and tile i - 1's stage is free */
        const int j = i + ns - 1;
        if (j < nt)
            att_issue(stages + ((u0 + j) % ns) * stage, kb, vb, tb + j * step,
                      att_imin(tb + j * step + KJ_ATT_TK, lim), D, bars ? bars + (u0 + j) % ns : 0);
        else if (!bars)
            att_commit();
        const float *kt = stages + (u % ns) * stage, *vt = kt + KJ_ATT_TK * D;
        const int t = tb + i * step, te = att_imin(t + KJ_ATT_TK, lim);
        float kr[KJ_ATT_NK][8], vr[KJ_ATT_NK][8];
        bool ok[KJ_ATT_NK];
#pragma unroll
        for (int n = 0; n < KJ_ATT_NK; n++) {
            const int kk = grp + n * KJ_ATT_NG;
            ok[n] = t + kk < te;
            att_load_row<false>(kt + kk * D, sub, D, true, kr[n]);
            att_load_row<false>(vt + kk * D, sub, D, true, vr[n]);
#pragma unroll
            for (int e = 0; e < 8; e++) { /* rows past te: zeros (bulk: stale, maybe NaN) */
                kr[n][e] = ok[n] ? kr[n][e] : 0.f;
                vr[n][e] = ok[n] ? vr[n][e] : 0.f;
            }
        }
        att_step<KJ_ATT_NK>(sq, sub, kr, vr, ok, acc, m, l);
    }
    if (!bars)
        att_wait<0>();
    used = u0 + nt;
    __syncthreads(); /* the merge after this reuses the stages' memory */
}
#endif

/* The block's keys straight from global memory into registers: two keys per step per
 * group (tiles of 2 * ng keys), 8 16-byte loads in flight per lane.  The trip count is
 * the same for every group; a group whose key is past the end re-reads a valid row with
 * weight zero. */
KJ_DEV void att_keys_regs(const float *kb, const float *vb, int s, int S, int kv_len, int D,
                          bool vec, int grp, int sub, int ng, const float4 *sq,
                          float (&acc)[KJ_ATT_G][8], float (&m)[KJ_ATT_G], float (&l)[KJ_ATT_G])
{
    int tb, step, lim;
    const int nt = att_tiles(s, S, kv_len, 2 * ng, &tb, &step, &lim);
    for (int i = 0; i < nt; i++) {
        const int base = tb + i * step, te = att_imin(base + 2 * ng, lim);
        const int ta = base + grp, tc = ta + ng;
        float kr[2][8], vr[2][8];
        const bool ok[2] = {ta < te, tc < te};
        att_load_row<true>(kb + (kj_size)(ok[0] ? ta : base) * D, sub, D, vec, kr[0]);
        att_load_row<true>(kb + (kj_size)(ok[1] ? tc : base) * D, sub, D, vec, kr[1]);
        att_load_row<true>(vb + (kj_size)(ok[0] ? ta : base) * D, sub, D, vec, vr[0]);
        att_load_row<true>(vb + (kj_size)(ok[1] ? tc : base) * D, sub, D, vec, vr[1]);
        att_step<2>(sq, sub, kr, vr, ok, acc, m, l);
    }
}

/* Columns of the split merge, W floats wide (4: float4 loads; 1: scalars): partial j of
 * head g of this KV head has acc at pa + (g * S + j) * D and weight pw[g * S + j]; P
 * threads share a column, each summing every P-th split with 8 independent loads in
 * flight, into red[part][item]; then one thread a column adds the P sums and writes o. */
template <int W>
KJ_DEV void att_merge_cols(const float *pa, const float *pw, const float *gl, float *red, float *o,
                           int kvh, int gsz, int S, int D, int P)
{
    const int cols = D / W, items = gsz * cols;
    for (int it = threadIdx.x; it < P * items; it += blockDim.x) {
        const int item = it % items, part = it / items, g = item / cols, c = item % cols;
        const float *hp = pa + (kj_size)g * S * D + W * c, *wg = pw + g * S;
        float a[W];
#pragma unroll
        for (int e = 0; e < W; e++)
            a[e] = 0.f;
        int j = part;
        for (; j + 7 * P < S; j += 8 * P) {
            float x[8][W];
#pragma unroll
            for (int u = 0; u < 8; u++)
                att_ldcgw<W>(hp + (kj_size)(j + u * P) * D, x[u]);
#pragma unroll
            for (int u = 0; u < 8; u++)
#pragma unroll
                for (int e = 0; e < W; e++)
                    a[e] += x[u][e] * wg[j + u * P];
        }
        for (; j < S; j += P) {
            float x[W];
            att_ldcgw<W>(hp + (kj_size)j * D, x);
#pragma unroll
            for (int e = 0; e < W; e++)
                a[e] += x[e] * wg[j];
        }
#pragma unroll
        for (int e = 0; e < W; e++)
            red[(part * items + item) * W + e] = a[e];
    }
    __syncthreads();
    for (int it = threadIdx.x; it < items; it += blockDim.x) {
        const int g = it / cols, c = it % cols;
#pragma unroll
        for (int e = 0; e < W; e++) {
            float t = 0.f;
            for (int p = 0; p < P; p++)
                t += red[(p * items + it) * W + e];
            o[(kj_size)(kvh * gsz + g) * D + W * c + e] = t / gl[g];
        }
    }
}

/* The fused split merge, run by the last block of KV head kvh: o[h] = sum_j w_j acc_j /
 * sum_j w_j l_j over the S partials of each of its gsz heads, w_j = exp2(m_j - max m).
 * ws layout: acc of (head h, split j) at ws + (h * S + j) * D, its (m, l) at
 * ws + H * S * D + (h * S + j) * 2.  sm: the block's free group-merge space
 * (NG * G * MAX_D floats).  When the partials' m, l and weights fit there, the sums
 * over splits run P threads a column (float4 columns when vec4), 8 loads in flight
 * each: the first merge, one dependent load after another, cost a 128-split merge
 * about a third of the kernel; the second, 16 loads in flight but 2 columns a thread
 * one after the other and 16 rounds of L2 latency, still ~5% at L = 65536 (80% of copy
 * against 86% at batch 16 x L = 4096 with 8 splits, on the H200).  Otherwise each
 * element recomputes everything from ws. */
KJ_DEV void att_merge(const float *ws, float *o, float *sm, int kvh, int gsz, int S, int D,
                      int n_heads, bool vec4)
{
    const int n = gsz * S, W = vec4 ? 4 : 1, items = gsz * (D / W);
    const float *pa = ws + (kj_size)kvh * n * D;                            /* acc */
    const float *pml = ws + (kj_size)n_heads * S * D + (kj_size)kvh * n * 2; /* m, l */
    int P = (int)blockDim.x / items;
    P = P < 1 ? 1 : P > 16 ? 16 : P;
    const int red_off = (3 * n + gsz + 3) & ~3;
    if (red_off + P * items * W <= KJ_ATT_NG * KJ_ATT_G * KJ_ATT_MAX_D) {
        float *pm = sm, *pl = sm + n, *pw = sm + 2 * n, *gl = sm + 3 * n;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            pm[i] = att_ldcg(pml + 2 * i);
            pl[i] = att_ldcg(pml + 2 * i + 1);
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
        if (vec4)
            att_merge_cols<4>(pa, pw, gl, sm + red_off, o, kvh, gsz, S, D, P);
        else
            att_merge_cols<1>(pa, pw, gl, sm + red_off, o, kvh, gsz, S, D, P);
    } else {
        for (int i = threadIdx.x; i < gsz * D; i += blockDim.x) {
            const int g = i / D, d = i % D;
            const float *hp = pa + (kj_size)g * S * D, *hml = pml + (kj_size)g * S * 2;
            float gm = -KJ_INF, gls = 0.f, a = 0.f;
            for (int j = 0; j < S; j++)
                gm = fmaxf(gm, att_ldcg(hml + 2 * j));
            for (int j = 0; j < S; j++) {
                const float pm = att_ldcg(hml + 2 * j);
                const float f = pm == -KJ_INF ? 0.f : att_exp2(pm - gm);
                gls += att_ldcg(hml + 2 * j + 1) * f;
                a += att_ldcg(hp + (kj_size)j * D + d) * f;
            }
            o[(kj_size)(kvh * gsz + g) * D + d] = a / gls;
        }
    }
}

extern "C" __global__ void __launch_bounds__(KJ_BLOCK, KJ_MINB)
    attn_decode_f32(const float *__restrict__ q, const float *__restrict__ k,
                    const float *__restrict__ v, float *o, float *ws, unsigned *counters,
                    int n_heads, int n_kv_heads, int kv_len, int kv_cap, int head_dim, float scale)
{
    /* shared memory: the scaled q [G][MAX_D] (zero-padded), then either the group merge
     * (m [NG][G], l [NG][G], acc [NG][G][MAX_D]) or, while keys stream, the stages */
#if KJ_ATT_DYN
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
#if KJ_ATT_CPASYNC
    int ns = (int)((dyn / 4 - KJ_ATT_QF) / (2u * KJ_ATT_TK * (unsigned)D)), used = 0;
    ns = ns > KJ_ATT_NS_MAX ? KJ_ATT_NS_MAX : ns;
    const bool async = vec && ns >= 2 && blockDim.x == KJ_BLOCK &&
                       (((unsigned long long)k | (unsigned long long)v) & 15) == 0;
    unsigned long long *bars = 0;
#if KJ_ATT_BULK
    __shared__ unsigned long long att_bars[KJ_ATT_NS_MAX];
    if (async) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < ns; i++)
                att_bar_init(att_bars + i);
            att_bar_fence();
        }
        bars = att_bars; /* initialised before the first use: the q barrier below */
    }
#endif
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
#if KJ_ATT_CPASYNC
        if (async)
            att_keys_smem(arena + KJ_ATT_QF, ns, kb, vb, s, S, kv_len, D, grp, sub, sq, bars, used,
                          acc, m, l);
        else
#endif
            att_keys_regs(kb, vb, s, S, kv_len, D, vec, grp, sub, ng, sq, acc, m, l);
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
                ws[((kj_size)h * S + s) * D + d] = a; /* layout: see att_merge */
                if (d == 0) {
                    float *ml = ws + (kj_size)n_heads * S * D + ((kj_size)h * S + s) * 2;
                    ml[0] = bm;
                    ml[1] = bl;
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
    att_merge(ws, o, sm_acc, kvh, gsz, S, D, n_heads, vec && (((unsigned long long)ws & 15) == 0));
    if (threadIdx.x == 0)
        counters[kvh] = 0;
}
