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
 * memory once, not once per query head.  Inside the block, lanes form groups of
 * KJ_ATT_LPK = KJ_ATT_MAX_D / 8 lanes (16 or 32), each lane holding 8 dimensions of a
 * K or V row, so a group reads a whole row in 16-byte pieces.  q.k is reduced with
 * shuffles inside the group; each group keeps a running max and sum per head (online
 * softmax, base 2: q is pre-scaled by scale * log2 e); groups merge through shared
 * memory at the end.  Every group runs the same number of steps (the shuffles need the
 * whole warp; a key past the end gets weight zero).
 *
 * Each group takes every NG-th key of the block's range, two at a time, straight from
 * global memory into registers (two 16-byte loads per lane per row when D % 4 == 0,
 * scalar loads otherwise; KJ_ATT_CS picks the load: evict-first by default, plain loads
 * in the CUDA manifest lines since the H200 ran them 2-4 points nearer the copy).
 * Streaming K/V through shared memory instead (cp.async, 2-6 stages of 16 keys, or
 * sm_90 bulk copies on an mbarrier, in commit 03f0d3d) measured slower on the H100:
 * 75-81% of copy against this path's 84-90%.  On the H200 (issue 34, round 7) a
 * software-pipelined loop (one key a group a step, the next step's rows loaded into a
 * second set of registers before this step's math; two keys a step spill at the 128
 * registers of 2 blocks an SM) ran 92.4% where this loop ran 96.7% in the same call, and
 * summing a step's 8 dot products with one transposing butterfly (16 shuffles, not 32)
 * 94.1-94.5% against 94.3-94.8% (91-93% with KJ_ATT_LZ: spills); both in commit 04aa246.
 * Round 8 (H200): KJ_ATT_BULK (tiles of 16 keys by 1-D bulk copies on mbarriers, 2 static
 * stages) ran 91.5-92.9% against this loop's 94.8-95.4% in the same call, 4 stages in
 * dynamic shared memory (KJ_ATT_DYN) 73%; kept off, for measuring (bench/gpu-h200.md).
 * The dynamic split (KJ_ATT_DS, att_keys_dyn) ran 92-95.6% against this line's 96-97.7%
 * in the same calls (H200, 76f8af2); kept off, likewise.
 * Round 9 (H200, 688a288): L2 hints on the K/V loads (KJ_ATT_CS 4-7) 92-97.8%, 3 blocks
 * an SM and 4 keys a step spill (61%, 84%); the split merge's tail costs 3.5-6.6 us (the
 * kernel with it skipped, KJ_ATT_NOMERGE, ran 99-101% of copy); KJ_ATT_ML1 won at
 * L = 65536 only.  All kept off (bench/gpu-h200.md).  Round 10 (H200, a4ae2d1): the split
 * counter as one acq_rel atomic without the fences (KJ_ATT_AR) ran as before, the merge's
 * acc loaded with m and l (KJ_ATT_PA) 0.5-1.9 points slower; both kept off.  KJ_ATT_ML1 is
 * the manifest's CUDA line since (ahead at L = 65536 in 8 of 9 passes over three machines).
 * Round 12 (H200, 7245e74-7495a9d): KJ_ATT_CL = C (sm_90), the splits of a KV head merged
 * through the shared memory of a thread-block cluster (att_cl_merge).  Where the cluster
 * spans the head (S == C = 2, batch 16 x L = 4096) it takes the tail away: 98.6-101.1%
 * against this line's 97.1-98.6% on three machines, ahead in 18 of 18 passes over four
 * (0.1-2.5 us over the merge skipped, against 1.7-5.2 us); at L = 65536 (S = 32) clusters
 * of 4 and 8 do not fit one wave (the driver runs 62 x 4 and 30 x 8 blocks at once: 63%),
 * pairs merging first lose up to 3.3 points, and pairs left idle (KJ_ATT_CLG) 0.3 on
 * average.  The merge body, not its fence and counter, is the tail there
 * (KJ_ATT_NOMERGE=2), and running it dry in every block first (KJ_ATT_WM) did not shorten
 * it.  All kept off (and S % C != 0 cannot launch): bench/gpu-h200.md, round 12.
 *
 * Launch: block KJ_BLOCK; grid.x = Hkv, grid.y = S splits (1 <= S); no dynamic shared
 * memory.  A good S fills the device once and no more: Hkv x S within the blocks it runs
 * at once (2 an SM here: the registers), a power of two (tests/kernels/kcase.c,
 * att_splits).  On the H100 at 8 KV heads, S = 32 ran 96% of copy at D = 256 and 128
 * where S = 128 (512 or 256 keys a block, 3.9 waves) ran 85-89%.
 * Block s takes keys [s * ceil(L / S), (s + 1) * ceil(L / S)).  With S == 1 the block
 * writes o.  With S > 1 it writes its partials (max m, sum l, acc[D]) to ws for each of
 * its heads, and the last block of KV head kvh to finish (counted in counters[kvh])
 * merges the S partials into o (att_merge) and resets counters[kvh] to 0: the split
 * merge is fused.
 *   ws: H * S * (D + 2) floats of scratch (acc of head h, split j at (h * S + j) * D;
 *   its m, l at H * S * D + (h * S + j) * 2); counters: >= Hkv uint32, zero before the
 *   first launch (each launch leaves them zero again).  With KJ_ATT_DS (the dynamic
 *   split, att_keys_dyn) counters holds >= 2 * Hkv uint32: the second Hkv count chunks.
 */
#include "kjit_prelude.h"
#ifndef KJ_ATT_BULK /* 1 (CUDA sm_90): K/V through shared memory by bulk copies (att_keys_bulk) */
#define KJ_ATT_BULK 0
#endif
#if KJ_ATT_BULK
#include "kjit_wgmma.h"
#endif

#ifndef KJ_ATT_MAX_D
#define KJ_ATT_MAX_D 256
#endif
#if KJ_ATT_MAX_D != 128 && KJ_ATT_MAX_D != 256
#error "KJ_ATT_MAX_D must be 128 or 256"
#endif
#define KJ_ATT_LPK (KJ_ATT_MAX_D / 8)         /* lanes per key; each holds 8 dims */
#define KJ_ATT_NG (KJ_BLOCK / KJ_ATT_LPK)     /* lane groups per block (KJ_BLOCK threads) */
#define KJ_ATT_G 4                            /* query heads per pass */
#define KJ_ATT_QF (KJ_ATT_G * KJ_ATT_MAX_D)   /* floats of the scaled q */
#define KJ_ATT_MF (KJ_ATT_NG * KJ_ATT_G * (KJ_ATT_MAX_D + 2)) /* floats of the group merge */
#define KJ_LOG2E 1.4426950408889634f
#ifndef KJ_MINB /* blocks an SM the register budget is cut for (launch bounds) */
#define KJ_MINB 2
#endif
#ifndef KJ_ATT_MU /* split-merge loads in flight per thread */
#define KJ_ATT_MU 16
#endif
#ifndef KJ_ATT_NK /* keys a lane group takes a step (2 or 4) */
#define KJ_ATT_NK 2
#endif
#ifndef KJ_ATT_PF /* CUDA: L2 prefetch of the rows this many steps ahead (0: none) */
#define KJ_ATT_PF 0
#endif
#ifndef KJ_ATT_LZ /* 1: lazy rescale, the step's dot products reduced together (att_step) */
#define KJ_ATT_LZ 0
#endif
#ifndef KJ_ATT_DS /* > 0: the dynamic split, chunks of this many keys (att_keys_dyn) */
#define KJ_ATT_DS 0
#endif
#ifndef KJ_ATT_ML1 /* 1: the split merge loads each partial's m and l together */
#define KJ_ATT_ML1 0
#endif
#ifndef KJ_ATT_NOMERGE /* diagnostic (o not written), the split merge skipped: 1: whole; 2: its body
                        * (the fence and counter kept) */
#define KJ_ATT_NOMERGE 0
#endif
#ifndef KJ_ATT_AR /* CUDA, 1: the split counter one acq_rel atomic, no membar.gl either side */
#define KJ_ATT_AR 0
#endif
#ifndef KJ_ATT_PA /* 1 (with KJ_ATT_ML1): the merge loads its partials' acc with m and l */
#define KJ_ATT_PA 0
#endif
#ifndef KJ_ATT_WM /* CUDA, 1: every block runs the split merge, all but the last dry (att_st) */
#define KJ_ATT_WM 0
#endif
#ifndef KJ_ATT_CS /* CUDA: how K/V rows are loaded (att_ld4) */
#define KJ_ATT_CS 1
#endif

/* 16-byte piece f of a K/V row, read once: KJ_ATT_CS 1: evict-first (ld.global.cs; on
 * the H100 84.3 -> 88.9% of copy at D = 128, L = 65536, 81.6 -> 84.5% at D = 256);
 * 2: the read-only path without L1 allocation (ld.global.nc.L1::no_allocate); 3: that,
 * asking L2 for 256-byte pieces; 0: a plain load.  On the H200 (issue 34, L = 65536):
 * 0: 94.0-96.6% of copy over four calls, 1: 92.3%, 2: 92.2%, 3: 90.9%.  Round 9 (measuring
 * only, bench/gpu-h200.md): 4: a plain load asking L2 for 256-byte pieces; with an L2
 * evict-first cache policy (createpolicy) 5: the no-allocate read-only load, 6: a plain
 * load, 7: a plain load with the 256-byte hint. */
KJ_DEV float4 att_ld4(const float *row, int f)
{
#if defined(KJ_CUDA) && KJ_ATT_CS == 1
    return __ldcs(reinterpret_cast<const float4 *>(row) + f);
#elif defined(KJ_CUDA) && KJ_ATT_CS >= 2 && KJ_ATT_CS <= 4
    float4 r;
#if KJ_ATT_CS == 2
#define KJ_ATT_LDQ "ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];"
#elif KJ_ATT_CS == 3
#define KJ_ATT_LDQ "ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
#else
#define KJ_ATT_LDQ "ld.global.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
#endif
    asm volatile(KJ_ATT_LDQ
                 : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
                 : "l"(reinterpret_cast<const float4 *>(row) + f));
    return r;
#elif defined(KJ_CUDA) && KJ_ATT_CS >= 5 && KJ_ATT_CS <= 7
    /* an L2 evict-first policy for the streamed rows (not volatile: the compiler may
     * hoist the createpolicy out of the loop) */
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    float4 r;
#if KJ_ATT_CS == 5
#define KJ_ATT_LDQ "ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
#elif KJ_ATT_CS == 6
#define KJ_ATT_LDQ "ld.global.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
#else
#define KJ_ATT_LDQ "ld.global.L2::cache_hint.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
#endif
    asm volatile(KJ_ATT_LDQ
                 : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
                 : "l"(reinterpret_cast<const float4 *>(row) + f), "l"(pol));
    return r;
#else
    return kj_ld4(row, f);
#endif
}

/* Dims 4*(j*LPK + sub) .. +3 for j = 0, 1 of row `row` into r[8]; zeros past D. */
KJ_DEV void att_load_row(const float *__restrict__ row, int sub, int D, bool vec, float r[8])
{
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int f = j * KJ_ATT_LPK + sub;
        if (vec) {
            const float4 a = 4 * f < D ? att_ld4(row, f) : make_float4(0.f, 0.f, 0.f, 0.f);
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

#if KJ_ATT_DS == 0 || KJ_ATT_BULK
/* The keys of block s of S, in tiles of tk keys: returns the tile count; tile i starts
 * at key *tb + i * tk and ends at min(that + tk, *lim), within [s * ceil(L / S),
 * (s + 1) * ceil(L / S)).  (Giving block s the interleaved tiles s, s + S, ... instead,
 * so that the running blocks read neighbouring tiles, measured 1-2 points slower.) */
KJ_DEV int att_tiles(int s, int S, int kv_len, int tk, int *tb, int *lim)
{
    const int chunk = (kv_len + S - 1) / S, t0 = s * chunk;
    *tb = t0, *lim = t0 + chunk < kv_len ? t0 + chunk : kv_len;
    return *lim > t0 ? (*lim - t0 + tk - 1) / tk : 0;
}
#endif

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

/* *p = v unless live == 0.  KJ_ATT_WM (issue 34 round 12, measuring): the blocks that are
 * not the last of their KV head run the same merge code dry (its loads real, its stores
 * to o predicated off), so that the merge's instructions, cold after a launch's 0.5 GB
 * of K/V went through L2, are fetched before the last block needs them. */
#if KJ_ATT_WM
KJ_DEV void att_st(float *p, float v, unsigned live)
{
#if defined(KJ_CUDA)
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t@q st.global.f32 [%0], %1;\n\t}"
                 ::"l"(p), "f"(v), "r"(live) : "memory");
#else
    if (live)
        *p = v;
#endif
}
#endif

#ifndef KJ_ATT_CL /* CUDA sm_90, 2-8: the splits of a KV head in clusters of this many blocks */
#define KJ_ATT_CL 0
#endif
#ifndef KJ_ATT_CLG /* 1 (with KJ_ATT_CL): S > C merges all S partials in global memory */
#define KJ_ATT_CLG 0
#endif
#if KJ_ATT_CL > 1
/* KJ_ATT_CL = C (sm_90 thread-block clusters, issue 34 round 12): the launch's clusters
 * are (1, C, 1) (__cluster_dims__), so blocks y0 .. y0 + C - 1 of one KV head (y0 = a
 * multiple of C; S % C == 0, or the launch fails) are resident at once on one GPC and
 * read each other's shared memory.  Each block leaves its partial (m, l, acc of the
 * pass's heads) in its own shared memory (cp); after a cluster barrier each rank merges
 * a slice of the heads' columns over the C partials straight from the others' shared
 * memory (mapa + ld.shared::cluster) and writes o when S == C: no scratch, no counter,
 * no fence.  With S > C it writes the cluster's merged partial to ws as split y0 / C of
 * S / C, and the counter's last block merges those S / C (the hybrid); with KJ_ATT_CLG
 * each block's own partial goes to ws instead, as without clusters (the cluster unused). */
KJ_DEV void att_cl_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/* The float at `p` (this block's shared memory) in cluster rank r's copy. */
KJ_DEV float att_cl_ld(const float *p, unsigned r)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(r));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}

/* The cluster merge of one pass (heads hp .. hp + ng - 1 of KV head kvh): cp holds this
 * block's partial, acc [G][MAX_D] then m [G], l [G].  Rank r of C takes items r, r + C *
 * blockDim, ... of the ng * D columns, each with its 3 * C loads issued together. */
KJ_DEV void att_cl_merge(const float *cp, float *o, float *ws, int kvh, int gsz, int hp, int ng,
                         int S, int D, int n_heads)
{
    unsigned rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    att_cl_sync(); /* every rank's cp written */
    const int items = ng * D, S2 = S / KJ_ATT_CL, ci = (int)blockIdx.y / KJ_ATT_CL;
    for (int it = (int)(rank * blockDim.x + threadIdx.x); it < items; it += KJ_ATT_CL * blockDim.x) {
        const int g = it / D, d = it % D, h = kvh * gsz + hp + g;
        float pm[KJ_ATT_CL], pl[KJ_ATT_CL], pa[KJ_ATT_CL], M = -KJ_INF, L = 0.f, A = 0.f;
#pragma unroll
        for (int r = 0; r < KJ_ATT_CL; r++) {
            pm[r] = att_cl_ld(cp + KJ_ATT_G * KJ_ATT_MAX_D + g, (unsigned)r);
            pl[r] = att_cl_ld(cp + KJ_ATT_G * KJ_ATT_MAX_D + KJ_ATT_G + g, (unsigned)r);
            pa[r] = att_cl_ld(cp + g * KJ_ATT_MAX_D + d, (unsigned)r);
        }
#pragma unroll
        for (int r = 0; r < KJ_ATT_CL; r++)
            M = fmaxf(M, pm[r]);
#pragma unroll
        for (int r = 0; r < KJ_ATT_CL; r++) {
            const float w = pm[r] == -KJ_INF ? 0.f : att_exp2(pm[r] - M);
            L += pl[r] * w;
            A += pa[r] * w;
        }
        if (S2 == 1) {
            o[(kj_size)h * D + d] = A / L;
        } else { /* split ci of S2 in att_merge's layout */
            ws[((kj_size)h * S2 + ci) * D + d] = A;
            if (d == 0) {
                float *ml = ws + (kj_size)n_heads * S2 * D + ((kj_size)h * S2 + ci) * 2;
                ml[0] = M;
                ml[1] = L;
            }
        }
    }
    att_cl_sync(); /* every rank done reading cp: it may be rewritten, or the block exit */
}
#endif

#if !KJ_ATT_LZ
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
#else
/* att_step with KJ_ATT_LZ: the G * NK dot products of the step first, their group sums
 * issued together, then a lazy rescale: m moves (and acc, l are rescaled) only when a
 * score passes it by more than 8 (log2 units), so p <= 2^8 and most steps skip the
 * multiplies of acc * corr; (m, l, acc) stay one consistent partial, which the merges
 * take as any other.  On the H200 (issue 34, L = 65536, three pairs in one call) it ran
 * 0.3-0.5 us faster than the step above, 94.5-95.0% of copy against 94.3-94.8%. */
template <int NK>
KJ_DEV void att_step(const float4 *sq, int sub, const float (&kr)[NK][8], const float (&vr)[NK][8],
                     const bool (&ok)[NK], float (&acc)[KJ_ATT_G][8], float (&m)[KJ_ATT_G],
                     float (&l)[KJ_ATT_G])
{
    float t[KJ_ATT_G * NK];
#pragma unroll
    for (int g = 0; g < KJ_ATT_G; g++) {
        const float4 q0 = sq[g * (KJ_ATT_MAX_D / 4) + sub];
        const float4 q1 = sq[g * (KJ_ATT_MAX_D / 4) + KJ_ATT_LPK + sub];
        const float qr[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
#pragma unroll
        for (int n = 0; n < NK; n++) {
            float d = 0.f;
#pragma unroll
            for (int i = 0; i < 8; i++)
                d += qr[i] * kr[n][i];
            t[g * NK + n] = d;
        }
    }
#pragma unroll
    for (int i = 0; i < KJ_ATT_G * NK; i++)
        t[i] = att_group_sum(t[i]); /* every lane, whatever its key */
#pragma unroll
    for (int g = 0; g < KJ_ATT_G; g++) {
        float sc[NK], p[NK], mn = -KJ_INF;
#pragma unroll
        for (int n = 0; n < NK; n++) {
            sc[n] = ok[n] ? t[g * NK + n] : -KJ_INF;
            mn = fmaxf(mn, sc[n]);
        }
        if (mn > m[g] + 8.f) { /* the first key (m = -inf: corr 0), or a max 2^8 past m */
            const float corr = att_exp2(m[g] - mn);
            l[g] *= corr;
#pragma unroll
            for (int i = 0; i < 8; i++)
                acc[g][i] *= corr;
            m[g] = mn;
        }
        const float mr = m[g] == -KJ_INF ? 0.f : m[g]; /* no key yet: keep zeros */
        float ps = 0.f;
#pragma unroll
        for (int n = 0; n < NK; n++)
            ps += p[n] = att_exp2(sc[n] - mr);
        l[g] += ps;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float a = acc[g][i];
#pragma unroll
            for (int n = 0; n < NK; n++)
                a += p[n] * vr[n][i];
            acc[g][i] = a;
        }
    }
}
#endif

#if KJ_ATT_PF > 0
/* Ask L2 for the 16-byte pieces of row `row` this lane will load (KJ_ATT_PF). */
KJ_DEV void att_prefetch_row(const float *row, int sub, int D)
{
#if defined(KJ_CUDA)
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int f = j * KJ_ATT_LPK + sub;
        if (4 * f < D)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 4 * f));
    }
#endif
}
#endif

/* The block's keys straight from global memory into registers: KJ_ATT_NK keys per step
 * per group (tiles of NK * ng keys), 4 * NK 16-byte loads in flight per lane; with
 * KJ_ATT_PF = d > 0 the rows of step i + d are first asked of L2 (prefetch, no
 * registers).  The trip count is the same for every group; a group whose key is past
 * the end re-reads a valid row with weight zero. */
KJ_DEV void att_keys_span(const float *kb, const float *vb, int tb, int lim, int D, bool vec,
                          int grp, int sub, int ng, const float4 *sq,
                          float (&acc)[KJ_ATT_G][8], float (&m)[KJ_ATT_G], float (&l)[KJ_ATT_G])
{
    enum { NK = KJ_ATT_NK };
    const int nt = lim > tb ? (lim - tb + NK * ng - 1) / (NK * ng) : 0;
    for (int i = 0; i < nt; i++) {
        const int base = tb + i * NK * ng, te = att_imin(base + NK * ng, lim);
        float kr[NK][8], vr[NK][8];
        bool ok[NK];
#if KJ_ATT_PF > 0
        {
            const int pb = base + KJ_ATT_PF * NK * ng;
#pragma unroll
            for (int n = 0; n < NK; n++)
                if (pb + grp + n * ng < lim) {
                    att_prefetch_row(kb + (kj_size)(pb + grp + n * ng) * D, sub, D);
                    att_prefetch_row(vb + (kj_size)(pb + grp + n * ng) * D, sub, D);
                }
        }
#endif
#pragma unroll
        for (int n = 0; n < NK; n++) {
            const int t = base + grp + n * ng;
            ok[n] = t < te;
            att_load_row(kb + (kj_size)(ok[n] ? t : base) * D, sub, D, vec, kr[n]);
        }
#pragma unroll
        for (int n = 0; n < NK; n++)
            att_load_row(vb + (kj_size)(ok[n] ? base + grp + n * ng : base) * D, sub, D, vec, vr[n]);
        att_step<NK>(sq, sub, kr, vr, ok, acc, m, l);
    }
}

#if KJ_ATT_DS == 0
/* att_keys_span over block s's static share of the keys, [s, s + 1) * ceil(L / S). */
KJ_DEV void att_keys_regs(const float *kb, const float *vb, int s, int S, int kv_len, int D,
                          bool vec, int grp, int sub, int ng, const float4 *sq,
                          float (&acc)[KJ_ATT_G][8], float (&m)[KJ_ATT_G], float (&l)[KJ_ATT_G])
{
    int tb, lim;
    att_tiles(s, S, kv_len, 1, &tb, &lim);
    att_keys_span(kb, vb, tb, lim, D, vec, grp, sub, ng, sq, acc, m, l);
}
#else
/* KJ_ATT_DS = C > 0: the dynamic split.  The S blocks of KV head kvh take chunks of C
 * keys from the counter counters[Hkv + kvh] (atomicAdd) until none is left, so a block
 * that runs late or slow takes fewer and every SM streams to the end; the partial of
 * block s is over whatever chunks it took (the online softmax and both merges take any
 * set of keys).  Chunk numbers run on across the passes over the heads: chunk c is
 * chunk c % nc of pass c / nc (nc = ceil(L / C)); *next is the block's next chunk,
 * taken before this pass.  Thread 0 asks for the chunk after this one while the block
 * reads this one (nx[2]: the two in turn). */
KJ_DEV void att_keys_dyn(const float *kb, const float *vb, unsigned *ctr, int pass, int kv_len,
                         int D, bool vec, int grp, int sub, int ng, const float4 *sq, int *nx,
                         int *next, float (&acc)[KJ_ATT_G][8], float (&m)[KJ_ATT_G],
                         float (&l)[KJ_ATT_G])
{
    const int nc = (kv_len + KJ_ATT_DS - 1) / KJ_ATT_DS;
    int c = *next, b = 0;
    while (c < (pass + 1) * nc) {
        if (threadIdx.x == 0)
            nx[b] = (int)atomicAdd(ctr, 1u);
        const int t0 = (c - pass * nc) * KJ_ATT_DS;
        att_keys_span(kb, vb, t0, att_imin(t0 + KJ_ATT_DS, kv_len), D, vec, grp, sub, ng, sq,
                      acc, m, l);
        __syncthreads();
        c = nx[b];
        b ^= 1;
    }
    *next = c;
}
#endif

#if KJ_ATT_BULK
/* KJ_ATT_BULK (sm_90): the block's keys through shared memory.  Tiles of ng keys (one a
 * lane group a step) of K and of V, each tile one 1-D bulk copy (cp.async.bulk: the rows
 * are contiguous) completing on the stage's full mbarrier; KJ_ATT_NS stages (in the
 * group-merge space, which is unused during the loop); a warp arrives on the stage's
 * empty mbarrier once it has read its rows, and thread 0 waits for that before it
 * reuses the stage.  Tiles are numbered across passes by *gt (the mbarrier phases).
 * Needs D % 4 == 0 and 16-byte aligned k, v (the caller falls back to att_keys_regs). */
#ifndef KJ_ATT_NS
#define KJ_ATT_NS 2
#endif
#ifndef KJ_ATT_DYN /* 1: the stages in dynamic shared memory (KJ_ATT_NS * 2 * SF floats) */
#define KJ_ATT_DYN 0
#endif
#define KJ_ATT_SF (KJ_ATT_NG * KJ_ATT_MAX_D) /* floats of one tensor's tile */
static_assert(KJ_ATT_DYN || KJ_ATT_NS * 2 * KJ_ATT_SF <= KJ_ATT_MF,
              "KJ_ATT_NS: the stages exceed the merge space (KJ_ATT_DYN)");
KJ_DEV void att_bulk_tile(const float *kb, const float *vb, float *stage, unsigned bars, int g,
                          int base, int rows, int D)
{
    const int st = g % KJ_ATT_NS;
    const unsigned bytes = (unsigned)rows * D * 4, full = bars + 8 * st;
    const unsigned dst = (unsigned)__cvta_generic_to_shared(stage + st * 2 * KJ_ATT_SF);
    if (g >= KJ_ATT_NS) /* the stage's last use read by every warp */
        pf9_bar_wait(bars + 8 * (KJ_ATT_NS + st), (unsigned)(g / KJ_ATT_NS - 1) & 1);
    pf9_bar_expect(full, 2 * bytes);
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(dst), "l"(kb + (kj_size)base * D), "r"(bytes), "r"(full) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(dst + 4 * KJ_ATT_SF), "l"(vb + (kj_size)base * D), "r"(bytes), "r"(full) : "memory");
}

KJ_DEV void att_keys_bulk(const float *kb, const float *vb, int s, int S, int kv_len, int D,
                          int grp, int sub, int ng, const float4 *sq, float *stage,
                          unsigned bars, int *gt, float (&acc)[KJ_ATT_G][8],
                          float (&m)[KJ_ATT_G], float (&l)[KJ_ATT_G])
{
    int tb, lim;
    const int nt = att_tiles(s, S, kv_len, ng, &tb, &lim), g0 = *gt;
    if (threadIdx.x == 0)
        for (int i = 0; i < nt && i < KJ_ATT_NS; i++)
            att_bulk_tile(kb, vb, stage, bars, g0 + i, tb + i * ng, att_imin(ng, lim - tb - i * ng), D);
    for (int i = 0; i < nt; i++) {
        const int g = g0 + i, st = g % KJ_ATT_NS, base = tb + i * ng;
        float kr[1][8], vr[1][8];
        bool ok[1];
        pf9_bar_wait(bars + 8 * st, (unsigned)(g / KJ_ATT_NS) & 1);
        ok[0] = base + grp < att_imin(base + ng, lim);
        const float *ks = stage + st * 2 * KJ_ATT_SF + (ok[0] ? grp : 0) * D;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int f = j * KJ_ATT_LPK + sub;
            const float4 a = 4 * f < D ? reinterpret_cast<const float4 *>(ks)[f] : make_float4(0.f, 0.f, 0.f, 0.f);
            const float4 b = 4 * f < D ? reinterpret_cast<const float4 *>(ks + KJ_ATT_SF)[f] : make_float4(0.f, 0.f, 0.f, 0.f);
            kr[0][4 * j] = a.x, kr[0][4 * j + 1] = a.y, kr[0][4 * j + 2] = a.z, kr[0][4 * j + 3] = a.w;
            vr[0][4 * j] = b.x, vr[0][4 * j + 1] = b.y, vr[0][4 * j + 2] = b.z, vr[0][4 * j + 3] = b.w;
        }
        __syncwarp();
        if ((threadIdx.x & 31) == 0)
            pf9_bar_arrive(bars + 8 * (KJ_ATT_NS + st));
        if (threadIdx.x == 0 && i + KJ_ATT_NS < nt)
            att_bulk_tile(kb, vb, stage, bars, g + KJ_ATT_NS, base + KJ_ATT_NS * ng,
                          att_imin(ng, lim - base - KJ_ATT_NS * ng), D);
        att_step<1>(sq, sub, kr, vr, ok, acc, m, l);
    }
    *gt = g0 + nt;
    __syncthreads(); /* the group merge reuses the stages: every warp done reading them */
}
#endif

/* Columns of the split merge, W floats wide (4: float4 loads; 1: scalars): partial j of
 * head g of this KV head has acc at pa + (g * S + j) * D and weight pw[g * S + j]; P
 * threads share a column, each summing every P-th split with 8 independent loads in
 * flight, into red[part][item]; then one thread a column adds the P sums and writes o. */
template <int W>
KJ_DEV void att_merge_cols(const float *pa, const float *pw, const float *gl, float *red, float *o,
                           int kvh, int gsz, int S, int D, int P, unsigned live,
                           const float (*xa)[4] = nullptr)
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
        if (xa && it == (int)threadIdx.x) { /* KJ_ATT_PA: the first KJ_ATT_MU already loaded */
#pragma unroll
            for (int u = 0; u < KJ_ATT_MU; u++)
                if (j + u * P < S)
#pragma unroll
                    for (int e = 0; e < W; e++)
                        a[e] += xa[u][e] * wg[j + u * P];
            j += KJ_ATT_MU * P;
        }
        for (; j + (KJ_ATT_MU - 1) * P < S; j += KJ_ATT_MU * P) {
            float x[KJ_ATT_MU][W];
#pragma unroll
            for (int u = 0; u < KJ_ATT_MU; u++)
                att_ldcgw<W>(hp + (kj_size)(j + u * P) * D, x[u]);
#pragma unroll
            for (int u = 0; u < KJ_ATT_MU; u++)
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
#if KJ_ATT_WM
            att_st(o + (kj_size)(kvh * gsz + g) * D + W * c + e, t / gl[g], live);
#else
            o[(kj_size)(kvh * gsz + g) * D + W * c + e] = t / gl[g];
#endif
        }
    }
}

/* The fused split merge, run by the last block of KV head kvh: o[h] = sum_j w_j acc_j /
 * sum_j w_j l_j over the S partials of each of its gsz heads, w_j = exp2(m_j - max m).
 * ws layout: acc of (head h, split j) at ws + (h * S + j) * D, its (m, l) at
 * ws + H * S * D + (h * S + j) * 2.  sm: the block's free group-merge space
 * (NG * G * MAX_D floats).  When the partials' m, l and weights fit there, a warp a
 * head finds its max, weights and weighted l with shuffles, then the sums over splits
 * run P threads a column (float4 columns when vec4), KJ_ATT_MU loads in flight each.
 * History: the first merge, one dependent load after another, cost a 128-split merge
 * about a third of the kernel; the second, 16 loads in flight but 2 columns a thread
 * one after the other and 16 rounds of L2 latency, still ~5% at L = 65536 (80% of copy
 * against 86% at batch 16 x L = 4096 with 8 splits, on the H200); the third, 8 loads
 * in flight after serial loops over S for the max and l, 84.9% at D = 256, S = 128 on
 * the H100 where this one runs 87.0% (bench/gpu-h100-d256.log).  Otherwise each
 * element recomputes everything from ws. */
KJ_DEV void att_merge(const float *ws, float *o, float *sm, int kvh, int gsz, int S, int D,
                      int n_heads, bool vec4, unsigned live = 1)
{
    const int n = gsz * S, W = vec4 ? 4 : 1, items = gsz * (D / W);
    const float *pa = ws + (kj_size)kvh * n * D;                            /* acc */
    const float *pml = ws + (kj_size)n_heads * S * D + (kj_size)kvh * n * 2; /* m, l */
    int P = (int)blockDim.x / items;
    P = P < 1 ? 1 : P > 16 ? 16 : P;
    const int red_off = (3 * n + gsz + 3) & ~3;
    if (red_off + P * items * W <= KJ_ATT_NG * KJ_ATT_G * KJ_ATT_MAX_D) {
        float *pm = sm, *pw = sm + 2 * n, *gl = sm + 3 * n;
        const int lane = (int)threadIdx.x % KJ_WARP, nw = (int)blockDim.x / KJ_WARP;
#if KJ_ATT_PA && KJ_ATT_ML1
        /* this thread's first column of att_merge_cols (its mapping), its first KJ_ATT_MU
         * partials' acc loaded now, in flight with m and l: one L2 round trip for both */
        float xa[KJ_ATT_MU][4];
        const int it0 = (int)threadIdx.x, cols0 = D / W;
        const int item0 = it0 % items, part0 = it0 / items;
        const float *hp0 = pa + (kj_size)(item0 / cols0) * S * D + W * (item0 % cols0);
        if (it0 < P * items) {
#pragma unroll
            for (int u = 0; u < KJ_ATT_MU; u++) {
                const int j = part0 + u * P;
                if (j < S) {
                    if (vec4)
                        att_ldcgw<4>(hp0 + (kj_size)j * D, xa[u]);
                    else
                        att_ldcgw<1>(hp0 + (kj_size)j * D, xa[u]);
                }
            }
        }
#endif
        for (int g = (int)threadIdx.x / KJ_WARP; g < gsz; g += nw) { /* a warp a head */
            float gm = -KJ_INF, t = 0.f;
            for (int j = lane; j < S; j += KJ_WARP) {
                pm[g * S + j] = att_ldcg(pml + 2 * (g * S + j));
#if KJ_ATT_ML1 /* l with m: one L2 round trip, not two (l parked in pw) */
                pw[g * S + j] = att_ldcg(pml + 2 * (g * S + j) + 1);
#endif
                gm = fmaxf(gm, pm[g * S + j]);
            }
            gm = kj_warp_max(gm);
            for (int j = lane; j < S; j += KJ_WARP) { /* the lane's own pm: no barrier */
                const float w = pm[g * S + j] == -KJ_INF ? 0.f : att_exp2(pm[g * S + j] - gm);
#if KJ_ATT_ML1
                t += pw[g * S + j] * w;
                pw[g * S + j] = w;
#else
                pw[g * S + j] = w;
                t += att_ldcg(pml + 2 * (g * S + j) + 1) * w;
#endif
            }
            t = kj_warp_sum(t);
            if (lane == 0)
                gl[g] = t;
        }
        __syncthreads();
#if KJ_ATT_PA && KJ_ATT_ML1
        if (vec4)
            att_merge_cols<4>(pa, pw, gl, sm + red_off, o, kvh, gsz, S, D, P, live, xa);
        else
            att_merge_cols<1>(pa, pw, gl, sm + red_off, o, kvh, gsz, S, D, P, live, xa);
#else
        if (vec4)
            att_merge_cols<4>(pa, pw, gl, sm + red_off, o, kvh, gsz, S, D, P, live);
        else
            att_merge_cols<1>(pa, pw, gl, sm + red_off, o, kvh, gsz, S, D, P, live);
#endif
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
#if KJ_ATT_WM
            att_st(o + (kj_size)(kvh * gsz + g) * D + d, a / gls, live);
#else
            o[(kj_size)(kvh * gsz + g) * D + d] = a / gls;
#endif
        }
    }
}

#if KJ_ATT_CL > 1
#define KJ_ATT_CLDIMS __cluster_dims__(1, KJ_ATT_CL, 1)
#else
#define KJ_ATT_CLDIMS
#endif
extern "C" __global__ void __launch_bounds__(KJ_BLOCK, KJ_MINB) KJ_ATT_CLDIMS
    attn_decode_f32(const float *__restrict__ q, const float *__restrict__ k,
                    const float *__restrict__ v, float *o, float *ws, unsigned *counters,
                    int n_heads, int n_kv_heads, int kv_len, int kv_cap, int head_dim, float scale)
{
    /* shared memory: the scaled q [G][MAX_D] (zero-padded), then the group merge
     * (m [NG][G], l [NG][G], acc [NG][G][MAX_D]), whose space the split merge reuses */
    __shared__ float4 att_sm[(KJ_ATT_QF + KJ_ATT_MF) / 4];
    float *arena = reinterpret_cast<float *>(att_sm);
    const float4 *sq = reinterpret_cast<const float4 *>(arena);
    float *sm_m = arena + KJ_ATT_QF, *sm_l = sm_m + KJ_ATT_NG * KJ_ATT_G;
    float *sm_acc = sm_l + KJ_ATT_NG * KJ_ATT_G; /* [w][g][d] at (w * G + g) * MAX_D + d */
    __shared__ int sm_last;
#if KJ_ATT_CL > 1
    __shared__ float att_cp[KJ_ATT_G * (KJ_ATT_MAX_D + 2)]; /* the block's partial: att_cl_merge */
#endif
    const int kvh = blockIdx.x, s = blockIdx.y, S = gridDim.y, D = head_dim;
    const int gsz = n_heads / n_kv_heads; /* query heads per KV head */
    const int grp = threadIdx.x / KJ_ATT_LPK, sub = threadIdx.x % KJ_ATT_LPK;
    const int ng = blockDim.x / KJ_ATT_LPK;
    const float *kb = k + (kj_size)kvh * kv_cap * D, *vb = v + (kj_size)kvh * kv_cap * D;
    const bool vec = (D & 3) == 0;
#if KJ_ATT_CL > 1
    const bool clm = !KJ_ATT_CLG || S == KJ_ATT_CL; /* the partials merged in the cluster */
#endif

    if (kvh >= n_kv_heads || D > KJ_ATT_MAX_D || grp >= KJ_ATT_NG)
        return;
#if KJ_ATT_BULK
    __shared__ unsigned long long att_bars[2 * KJ_ATT_NS]; /* full, then empty */
    const unsigned bars = (unsigned)__cvta_generic_to_shared(att_bars);
    bool bulk = vec && (((unsigned long long)k | (unsigned long long)v) & 15) == 0;
    float *stage = sm_m;
#if KJ_ATT_DYN
    extern __shared__ float4 att_dyn[];
    unsigned dyn_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn_bytes));
    bulk = bulk && dyn_bytes >= KJ_ATT_NS * 2 * KJ_ATT_SF * 4; /* else the register path */
    stage = reinterpret_cast<float *>(att_dyn);
#endif
    int gt = 0;
    if (threadIdx.x == 0)
        for (int i = 0; i < KJ_ATT_NS; i++) {
            pf9_bar_init(bars + 8 * i, 1);
            pf9_bar_init(bars + 8 * (KJ_ATT_NS + i), blockDim.x / 32);
        }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    __syncthreads();
#endif
#if KJ_ATT_DS > 0
    __shared__ int att_nx[2];
    unsigned *dctr = counters + n_kv_heads + kvh;
    if (threadIdx.x == 0)
        att_nx[0] = (int)atomicAdd(dctr, 1u);
    __syncthreads();
    int dnext = att_nx[0];
    __syncthreads();
#endif
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
#if KJ_ATT_BULK
        if (bulk)
            att_keys_bulk(kb, vb, s, S, kv_len, D, grp, sub, ng, sq, stage, bars, &gt, acc, m, l);
        else
#endif
#if KJ_ATT_DS > 0
            att_keys_dyn(kb, vb, dctr, hp / KJ_ATT_G, kv_len, D, vec, grp, sub, ng, sq, att_nx,
                         &dnext, acc, m, l);
#else
            att_keys_regs(kb, vb, s, S, kv_len, D, vec, grp, sub, ng, sq, acc, m, l);
#endif
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
#if KJ_ATT_CL > 1
            if (clm) {
                att_cp[g * KJ_ATT_MAX_D + d] = a;
                if (d == 0) {
                    att_cp[KJ_ATT_G * KJ_ATT_MAX_D + g] = bm;
                    att_cp[KJ_ATT_G * KJ_ATT_MAX_D + KJ_ATT_G + g] = bl;
                }
                continue;
            }
#endif
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
#if KJ_ATT_CL > 1
        if (clm) /* uniform over the cluster: S is */
            att_cl_merge(att_cp, o, ws, kvh, gsz, hp, att_imin(KJ_ATT_G, gsz - hp), S, D, n_heads);
#endif
        __syncthreads(); /* the shared arrays are reused by the next pass */
    }
#if KJ_ATT_CL > 1
    if (clm && S == KJ_ATT_CL) /* the clusters wrote o */
        return;
#endif
    if (S == 1) {
#if KJ_ATT_DS > 0
        if (threadIdx.x == 0) /* the only block of kvh, done taking chunks */
            counters[n_kv_heads + kvh] = 0;
#endif
        return;
    }

#if KJ_ATT_NOMERGE == 1 /* diagnostic only (wrong results): the split merge skipped */
    return;
#endif
    /* the last block of KV head kvh to finish merges the S partials of its heads */
#if KJ_ATT_AR && KJ_ATT_WM
#error "KJ_ATT_WM goes with the fenced counter (KJ_ATT_AR=0)"
#endif
#if KJ_ATT_AR && defined(KJ_CUDA)
    /* One atomic both ways at GPU scope: its release makes this block's partials (every
     * thread's, ordered before it by the barrier: release is cumulative) visible to
     * whoever acquires the counter after; its acquire, in the last block, orders that
     * block's loads of the others' partials (after the next barrier) after their writes.
     * No membar.gl in any block, before or after. */
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned prev;
        asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(prev) : "l"(&counters[kvh]) : "memory");
        sm_last = prev == (unsigned)S - 1;
    }
    __syncthreads();
    if (!sm_last)
        return;
#else
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        sm_last = atomicAdd(&counters[kvh], 1u) == (unsigned)S - 1;
    __syncthreads();
#if KJ_ATT_WM
    const unsigned live = sm_last; /* 0: the merge below runs dry */
    if (live)
        __threadfence();
#else
    if (!sm_last)
        return;
    __threadfence();
#endif
#endif
#if KJ_ATT_NOMERGE == 2
    if (threadIdx.x == 0)
        counters[kvh] = 0;
    return;
#endif
#if KJ_ATT_CL > 1
    const int Sm = clm ? S / KJ_ATT_CL : S; /* clm: the clusters' partials */
#else
    const int Sm = S;
#endif
#if KJ_ATT_WM
    att_merge(ws, o, sm_acc, kvh, gsz, Sm, D, n_heads, vec && (((unsigned long long)ws & 15) == 0), live);
    if (!live)
        return;
#else
    att_merge(ws, o, sm_acc, kvh, gsz, Sm, D, n_heads, vec && (((unsigned long long)ws & 15) == 0));
#endif
    if (threadIdx.x == 0) {
        counters[kvh] = 0;
#if KJ_ATT_DS > 0
        counters[n_kv_heads + kvh] = 0; /* every block of kvh is done taking chunks */
#endif
    }
}
