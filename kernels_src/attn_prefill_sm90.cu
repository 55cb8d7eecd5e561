/*
 * attn_prefill_sm90.cu: the Hopper variant of attn_prefill.cu (same arguments first,
 * same result): causal prefill attention, grouped-query heads, 16-bit in and out, f32
 * accumulation; entries attn_prefill_sm90_f16, attn_prefill_sm90_bf16.  Compiled for
 * sm_90a (wgmma, setmaxnreg); the launcher picks it over attn_prefill_f16/_bf16 on a
 * device of compute capability 9.0 when D is 64 or 128.
 *
 * Arguments: (q, k, v, o, T, H, Hkv, head_dim, scale, tmQ, tmK, tmV): attn_prefill.cu's
 * nine (q, o [T][H][D], k, v [T][Hkv][D]), then three CUtensorMaps, passed by value,
 * that the launcher builds with cuTensorMapEncodeTiled, each 2-D {H * D or Hkv * D, T}
 * (innermost first), row stride that many halves, box {64, 128}, FLOAT16 or BFLOAT16,
 * 128-byte swizzle, OOB fill NONE (rows past T read zeros).
 * Launch: block KJ_BLOCK = 384 (3 warpgroups), grid.x = ceil(T / 128), grid.y = H,
 * dynamic shared memory PF9_SMEM_BYTES (above 48 KB: the launcher raises the limit).
 *
 * sm_90a path, flash-attention-3 style: block (tile, h) takes 128 query rows of head h.
 * Warpgroup 0 is the producer: one thread loads the Q tile once and the K and V tiles
 * of 128 keys (key tiles 0..tile only: causal tiles past the diagonal are skipped)
 * with bulk tensor copies into PF9_STAGES shared-memory stages, each completing on its
 * mbarrier; K and V of a stage have their own barriers, so S = Q K^T starts before V
 * is in.  Warpgroups 1 and 2 are the consumers, 64 query rows each: S by wgmma
 * m64n128k16 from the swizzled Q and K tiles (K-major, D / 16 steps), the online
 * softmax in base 2 on the f32 accumulators (the diagonal tile masked), P rounded to
 * the input type straight into wgmma A fragments (registers), O += P V by wgmma
 * m64nDk16 with V read transposed (MN-major) from its tile; the stage goes back to the
 * producer on its `empty` barrier.  The two consumers run out of step, so one's
 * softmax overlaps the other's matmuls.  K/V of a KV head are read by the H / Hkv
 * query heads of its group from L2 (never expanded).  Query tiles are taken
 * last-first, so the longest blocks start first.
 * Other CUDA targets (where no launcher picks this entry; it compiles so that every
 * CUDA target the project checks builds it): one thread a query row, f32 dot products.
 */
#include "kjit_mma.h"

#if KJ_BLOCK != 384
#error "attn_prefill_sm90.cu is written for KJ_BLOCK=384"
#endif
#if defined(KJ_HIP)
#error "attn_prefill_sm90.cu is CUDA only"
#endif

#define PF9_BM 128 /* query rows a block */
#define PF9_BN 128 /* keys a tile */
#ifndef PF9_STAGES
#define PF9_STAGES 2
#endif
#define PF9_TILE (128 * 128 * 2) /* bytes of a 128-row tile at D = 128 (two 64-wide boxes) */
#define PF9_BOX (128 * 128)      /* bytes of one box: 128 rows of 64 halves */
#define PF9_SMEM_BYTES ((1 + 2 * PF9_STAGES) * PF9_TILE + 1024 + 256)
#define PF9_LOG2E 1.4426950408889634f
#ifndef PF9_SOFT /* 1: weights by one multiply-add and ex2.approx.ftz (pf9_softmax) */
#define PF9_SOFT 1
#endif

struct __align__(64) kj_tmap {
    unsigned long long w[16];
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "kjit_wgmma.h"

/* barriers after the tiles: qfull, kfull[ST], vfull[ST], empty[ST] (8 bytes each) */
#define PF9_QFULL(b) (b)
#define PF9_KFULL(b, s) ((b) + 8 * (1 + (s)))
#define PF9_VFULL(b, s) ((b) + 8 * (1 + PF9_STAGES + (s)))
#define PF9_EMPTY(b, s) ((b) + 8 * (1 + 2 * PF9_STAGES + (s)))

template <int D>
KJ_DEV void pf9_producer(unsigned base, unsigned bars, const kj_tmap *tq, const kj_tmap *tk,
                         const kj_tmap *tv, int h, int kvh, int q0, int nkv)
{
    pf9_bar_expect(PF9_QFULL(bars), PF9_BM * D * 2);
    for (int c = 0; c < D / 64; c++)
        pf9_tma_load(base + c * PF9_BOX, tq, PF9_QFULL(bars), h * D + c * 64, q0);
    for (int j = 0; j < nkv; j++) {
        const int s = j % PF9_STAGES;
        const unsigned kb = base + (1 + s) * PF9_TILE, vb = base + (1 + PF9_STAGES + s) * PF9_TILE;
        if (j >= PF9_STAGES) /* both consumers are done with this stage's last tiles */
            pf9_bar_wait(PF9_EMPTY(bars, s), (unsigned)(j / PF9_STAGES - 1) & 1);
        pf9_bar_expect(PF9_KFULL(bars, s), PF9_BN * D * 2);
        for (int c = 0; c < D / 64; c++)
            pf9_tma_load(kb + c * PF9_BOX, tk, PF9_KFULL(bars, s), kvh * D + c * 64, j * PF9_BN);
        pf9_bar_expect(PF9_VFULL(bars, s), PF9_BN * D * 2);
        for (int c = 0; c < D / 64; c++)
            pf9_tma_load(vb + c * PF9_BOX, tv, PF9_VFULL(bars, s), kvh * D + c * 64, j * PF9_BN);
    }
}

/* 2^x in one instruction (flush to zero: the softmax weights need no subnormals) */
KJ_DEV float pf9_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The online softmax of one tile of raw scores s (64 rows x 128 keys, wgmma layout:
 * this thread holds rows r0 and r0 + 8, keys 8 i + 2 (lane % 4) + {0, 1} for i < 16)
 * into P fragments pa; m (base-2 units, scale * log2 e applied), l (this thread's part
 * of the sum): the rows' running max and sum; corr: the factor the rows' O accumulators
 * take.  MASK: the diagonal tile (keys past the row or past T get nothing).  The max is
 * taken on the raw scores and each weight is one multiply-add and one ex2 (PF9_SOFT 0:
 * the first version, scaling every score first and exp2f: 222 TFLOP/s at D = 64, f16). */
template <class S, bool MASK>
KJ_DEV void pf9_softmax(float (&s)[64], unsigned (&pa)[8][4], float (&m)[2], float (&l)[2],
                        float (&corr)[2], float sl2, int key0, int r0, int T)
{
    const int c2 = (threadIdx.x % 4) * 2;
    float mx[2] = {-KJ_INF, -KJ_INF}, rs[2] = {0.f, 0.f}, ms[2];
#pragma unroll
    for (int i = 0; i < 16; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (MASK) {
                const int key = key0 + 8 * i + c2 + (e & 1), row = r0 + (e >> 1) * 8;
                s[4 * i + e] = key > row || key >= T ? -KJ_INF : s[4 * i + e];
            }
            mx[e >> 1] = fmaxf(mx[e >> 1], s[4 * i + e]);
        }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float mn = fmaxf(m[r], mx[r] * sl2); /* finite: the tile's first key is every row's */
        corr[r] = pf9_exp2(m[r] - mn);
        m[r] = mn;
        ms[r] = -mn;
    }
#pragma unroll
    for (int i = 0; i < 16; i++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
#if PF9_SOFT
            s[4 * i + e] = pf9_exp2(fmaf(s[4 * i + e], sl2, ms[e >> 1]));
#else
            s[4 * i + e] = exp2f(s[4 * i + e] * sl2 + ms[e >> 1]);
#endif
            rs[e >> 1] += s[4 * i + e];
        }
        /* keys 16 kt ..: a0/a1 rows r0 / r0 + 8 of the even 8 keys, a2/a3 the odd 8 */
        pa[i / 2][(i & 1) * 2] = kj_pack2(S(), s[4 * i], s[4 * i + 1]);
        pa[i / 2][(i & 1) * 2 + 1] = kj_pack2(S(), s[4 * i + 2], s[4 * i + 3]);
    }
#pragma unroll
    for (int r = 0; r < 2; r++)
        l[r] = l[r] * corr[r] + rs[r];
}

template <class S, int D>
KJ_DEV void pf9_consumer(unsigned base, unsigned bars, unsigned short *o, int T, int H, int h,
                         int q0, int nkv, float sl2, int cw)
{
    const int t = threadIdx.x % 128, lane = t % 32;
    const int r0 = q0 + cw * 64 + (t / 32) * 16 + lane / 4; /* this thread's first row */
    float acc[D / 2], m[2] = {-KJ_INF, -KJ_INF}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        acc[i] = 0.f;
    pf9_bar_wait(PF9_QFULL(bars), 0);
    const unsigned qa = base + cw * 64 * 128; /* this warpgroup's 64 rows of each box */
    for (int j = 0; j < nkv; j++) {
        const int s = j % PF9_STAGES;
        const unsigned ph = (unsigned)(j / PF9_STAGES) & 1;
        const unsigned kb = base + (1 + s) * PF9_TILE, vb = base + (1 + PF9_STAGES + s) * PF9_TILE;
        float sc[64];
        unsigned pa[8][4];
        float corr[2];
        pf9_bar_wait(PF9_KFULL(bars, s), ph);
        pf9_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) /* 16 halves = 32 bytes along a 128-byte row */
            pf9_qk(S(), sc, pf9_desc_k(qa + (kk / 4) * PF9_BOX + (kk % 4) * 32),
                   pf9_desc_k(kb + (kk / 4) * PF9_BOX + (kk % 4) * 32), kk > 0);
        pf9_commit();
        pf9_wait<0>();
        if (j == nkv - 1) /* the diagonal tile */
            pf9_softmax<S, true>(sc, pa, m, l, corr, sl2, j * PF9_BN, r0, T);
        else
            pf9_softmax<S, false>(sc, pa, m, l, corr, sl2, j * PF9_BN, r0, T);
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            acc[4 * i] *= corr[0], acc[4 * i + 1] *= corr[0];
            acc[4 * i + 2] *= corr[1], acc[4 * i + 3] *= corr[1];
        }
        pf9_bar_wait(PF9_VFULL(bars, s), ph);
        pf9_fence();
#pragma unroll
        for (int kt = 0; kt < PF9_BN / 16; kt++) /* 16 keys = 16 rows of 128 bytes */
            pf9_pv(S(), acc, pa[kt], pf9_desc_mn(vb + kt * 16 * 128));
        pf9_commit();
        pf9_wait<0>();
        if (t == 0) /* this warpgroup is done with stage s */
            pf9_bar_arrive(PF9_EMPTY(bars, s));
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        l[r] = 1.f / l[r];
    }
#pragma unroll
    for (int i = 0; i < D / 8; i++) {
        const int d = i * 8 + (lane % 4) * 2;
        if (r0 < T)
            *reinterpret_cast<unsigned *>(o + ((kj_size)r0 * H + h) * D + d) =
                kj_pack2(S(), acc[4 * i] * l[0], acc[4 * i + 1] * l[0]);
        if (r0 + 8 < T)
            *reinterpret_cast<unsigned *>(o + ((kj_size)(r0 + 8) * H + h) * D + d) =
                kj_pack2(S(), acc[4 * i + 2] * l[1], acc[4 * i + 3] * l[1]);
    }
}

template <class S, int D>
KJ_DEV void pf9_body(unsigned short *o, int T, int H, int Hkv, float scale, const kj_tmap *tq,
                     const kj_tmap *tk, const kj_tmap *tv)
{
    extern __shared__ __align__(1024) unsigned char pf9_dyn[]; /* PF9_SMEM_BYTES */
    const unsigned raw = kj_smem_addr(pf9_dyn), base = (raw + 1023) & ~1023u;
    const unsigned bars = base + (1 + 2 * PF9_STAGES) * PF9_TILE;
    const int wg = threadIdx.x / 128, qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y;
    const int kvh = h / (H / Hkv), q0 = qt * PF9_BM, nkv = qt + 1; /* PF9_BM == PF9_BN */

    if (threadIdx.x == 0) {
        pf9_bar_init(PF9_QFULL(bars), 1);
        for (int s = 0; s < PF9_STAGES; s++) {
            pf9_bar_init(PF9_KFULL(bars, s), 1); /* the producer's expect_tx */
            pf9_bar_init(PF9_VFULL(bars, s), 1);
            pf9_bar_init(PF9_EMPTY(bars, s), 2); /* one arrive a consumer */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
        if (threadIdx.x == 0)
            pf9_producer<D>(base, bars, tq, tk, tv, h, kvh, q0, nkv);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
        pf9_consumer<S, D>(base, bars, o, T, H, h, q0, nkv, scale * PF9_LOG2E, wg - 1);
    }
}
#define PF9_BODY(D) pf9_body<S, D>(o, T, H, Hkv, scale, &tmQ, &tmK, &tmV)

#else
/* ---- other CUDA targets: one thread a query row (never picked by the launcher) ----- */
template <class S, int D>
KJ_DEV void pf9_plain(const unsigned short *q, const unsigned short *k, const unsigned short *v,
                      unsigned short *o, int T, int H, int Hkv, float scale)
{
    const int t = (gridDim.x - 1 - blockIdx.x) * PF9_BM + threadIdx.x, h = blockIdx.y;
    const int kvh = h / (H / Hkv);
    float acc[D], m = -KJ_INF, l = 0.f;
    if (threadIdx.x >= PF9_BM || t >= T)
        return;
    for (int d = 0; d < D; d++)
        acc[d] = 0.f;
    for (int u = 0; u <= t; u++) {
        float p = 0.f;
        for (int d = 0; d < D; d++)
            p += S::ld(q, ((kj_size)t * H + h) * D + d) *
                 S::ld(k, ((kj_size)u * Hkv + kvh) * D + d);
        p *= scale * PF9_LOG2E;
        const float mn = fmaxf(m, p), corr = exp2f(m - mn), e = exp2f(p - mn);
        l = l * corr + e;
        for (int d = 0; d < D; d++)
            acc[d] = acc[d] * corr + e * S::ld(v, ((kj_size)u * Hkv + kvh) * D + d);
        m = mn;
    }
    for (int d = 0; d < D; d++)
        S::st(o, ((kj_size)t * H + h) * D + d, acc[d] / l);
}
#define PF9_BODY(D) pf9_plain<S, D>(q, k, v, o, T, H, Hkv, scale)
#endif

#define KJ_PREFILL9_ENTRY(name, St)                                                        \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK, 1)                              \
        name(const unsigned short *q, const unsigned short *k, const unsigned short *v,    \
             unsigned short *o, int T, int H, int Hkv, int head_dim, float scale,          \
             const __grid_constant__ kj_tmap tmQ, const __grid_constant__ kj_tmap tmK,     \
             const __grid_constant__ kj_tmap tmV)                                          \
    {                                                                                      \
        typedef St S;                                                                      \
        if (head_dim == 64)                                                                \
            PF9_BODY(64);                                                                  \
        else if (head_dim == 128)                                                          \
            PF9_BODY(128);                                                                 \
    }

KJ_PREFILL9_ENTRY(attn_prefill_sm90_f16, kj_s_f16)
KJ_PREFILL9_ENTRY(attn_prefill_sm90_bf16, kj_s_bf16)
