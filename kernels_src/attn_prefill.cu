/*
 * attn_prefill.cu: causal prefill attention with grouped-query heads, 16-bit inputs
 * and output, f32 accumulation; entries attn_prefill_f16, attn_prefill_bf16.
 *
 * q, o: [T][H][D]; k, v: [T][Hkv][D] (row-major, the layout a fused QKV projection
 * gives; batch 1).  Head h reads KV head h / (H / Hkv); H % Hkv == 0; D = 64 or 128
 * (other D leave o untouched); buffers 16-byte aligned.
 *   o[t][h] = softmax_{u <= t}(scale q[t][h] . k[u][kvh]) . v[u][kvh]
 *
 * Two paths, chosen at compile time:
 *  - tensor cores (CUDA sm_80 and newer; flash-attention-2 style): block (tile, h) takes
 *    64 query rows of head h, 4 warps of 16 rows each; Q stays in registers as mma
 *    fragments; K and V tiles of 64 keys come through cp.async into swizzled shared
 *    memory (V's load overlaps S = Q K^T, the next K's overlaps softmax and P V);
 *    S and P V are mma.sync m16n8k16 with f32 accumulators, P goes from the S
 *    accumulators to A fragments in registers (rounded to the input type, as in every
 *    flash attention), the softmax is online in base 2 with f32 row max and sum.  Only
 *    the tiles at or left of the diagonal are visited, the diagonal one masked; query
 *    tiles are taken last-first so the longest blocks start first.
 *  - plain (HIP, older CUDA): the same grid; two threads per query row, each holding
 *    half of q and of the output, keys 32 at a time from shared memory (f32), scalar
 *    online softmax.
 * Launch: block KJ_BLOCK = 128; grid.x = ceil(T / 64), grid.y = H.
 * On sm_90 devices launchers run attn_prefill_sm90.cu instead when D is 64 or 128
 * (wgmma on TMA-loaded tiles; 1.5-2.2x this kernel on the H200, issue 34).
 */
#include "kjit_mma.h"

#if KJ_BLOCK != 128
#error "attn_prefill.cu is written for KJ_BLOCK=128"
#endif
#define PF_BM 64 /* query rows per block */
#define PF_LOG2E 1.4426950408889634f

#if defined(KJ_MMA)
#define PF_BN 64 /* keys per tile */

/* byte offset of (row, 16-byte chunk) in a tile of rows of D halves: chunk ^ (row % 8),
 * so the 8 rows of one ldmatrix hit 8 different 16-byte bank groups */
template <int D> KJ_DEV unsigned pf_off(int row, int chunk)
{
    return (unsigned)((row * (D / 8) + (chunk ^ (row & 7))) * 16);
}

/* rows [t0, t0 + 64) of a [T][stride] 16-bit matrix at column offset `col` (D wide) */
template <int D>
KJ_DEV void pf_load(unsigned char *tile, const unsigned short *x, int T, int stride, int col, int t0)
{
#pragma unroll
    for (int i = 0; i < PF_BN * (D / 8) / KJ_BLOCK; i++) {
        const int id = threadIdx.x + i * KJ_BLOCK, row = id / (D / 8), ch = id % (D / 8);
        const int t = t0 + row;
        const unsigned short *src = x + (t < T ? (kj_size)t * stride + col + ch * 8 : 0);
        kj_cp16(kj_smem_addr(tile + pf_off<D>(row, ch)), src, t < T);
    }
}

/* shared memory: the Q, K and V tiles (64 rows of up to 128 16-bit values each) */
#define PF_SMEM (3 * PF_BN * 128 * 2)

template <class S, int D>
KJ_DEV void prefill_tc(unsigned char *sm, const unsigned short *q, const unsigned short *k,
                       const unsigned short *v, unsigned short *o, int T, int H, int Hkv,
                       float scale)
{
    unsigned char *smq = sm, *smk = sm + PF_BN * 128 * 2, *smv = sm + 2 * PF_BN * 128 * 2;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, kvh = h / (H / Hkv);
    const int q0 = qt * PF_BM, nkv = qt + 1; /* key tiles 0..qt (PF_BM == PF_BN) */
    const float sl2 = scale * PF_LOG2E;
    unsigned qf[D / 16][4];
    float acc[D / 8][4], m[2] = {-KJ_INF, -KJ_INF}, l[2] = {0.f, 0.f};

    pf_load<D>(smq, q, T, H * D, h * D, q0);
    kj_cp_commit();
    pf_load<D>(smk, k, T, Hkv * D, kvh * D, 0);
    kj_cp_commit();
    kj_cp_wait<1>(); /* Q is in */
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        const int row = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, ch = kk * 2 + (lane >> 4);
        kj_ldsm4(kj_smem_addr(smq + pf_off<D>(row, ch)), qf[kk]);
    }
#pragma unroll
    for (int i = 0; i < D / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[i][e] = 0.f;

    for (int j = 0; j < nkv; j++) {
        pf_load<D>(smv, v, T, Hkv * D, kvh * D, j * PF_BN);
        kj_cp_commit();
        kj_cp_wait<1>(); /* K_j is in (V_j may still be on its way) */
        __syncthreads();
        float s[PF_BN / 8][4];
#pragma unroll
        for (int i = 0; i < PF_BN / 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[i][e] = 0.f;
#pragma unroll
        for (int n16 = 0; n16 < PF_BN / 16; n16++)
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                const int row = n16 * 16 + (lane & 7) + (lane >> 4) * 8;
                const int ch = kk * 2 + ((lane >> 3) & 1);
                unsigned r[4];
                kj_ldsm4(kj_smem_addr(smk + pf_off<D>(row, ch)), r);
                const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                kj_mma(S(), s[2 * n16], qf[kk], b0);
                kj_mma(S(), s[2 * n16 + 1], qf[kk], b1);
            }
        __syncthreads(); /* every warp is done with K_j */
        if (j + 1 < nkv)
            pf_load<D>(smk, k, T, Hkv * D, kvh * D, (j + 1) * PF_BN);
        kj_cp_commit();

        /* mask (causal, and keys past T), then the online softmax of rows g and g + 8 */
        const int qa = q0 + warp * 16 + lane / 4;
        float mx[2] = {-KJ_INF, -KJ_INF};
#pragma unroll
        for (int nt = 0; nt < PF_BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int key = j * PF_BN + nt * 8 + (lane % 4) * 2 + (e & 1), qr = qa + (e >> 1) * 8;
                const float x = s[nt][e] * sl2;
                s[nt][e] = key > qr || key >= T ? -KJ_INF : x;
                mx[e >> 1] = fmaxf(mx[e >> 1], s[nt][e]);
            }
        float corr[2], rs[2] = {0.f, 0.f};
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float mn = fmaxf(m[r], mx[r]); /* finite: key j*64 <= every row's query */
            corr[r] = exp2f(m[r] - mn);
            m[r] = mn;
        }
        unsigned pa[PF_BN / 16][4];
#pragma unroll
        for (int nt = 0; nt < PF_BN / 8; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[nt][e] = exp2f(s[nt][e] - m[e >> 1]);
                rs[e >> 1] += s[nt][e];
            }
            /* A fragment of P for keys 16*(nt/2)..: a0/a1 from the even n8 tile, a2/a3 odd */
            pa[nt / 2][(nt & 1) * 2] = kj_pack2(S(), s[nt][0], s[nt][1]);
            pa[nt / 2][(nt & 1) * 2 + 1] = kj_pack2(S(), s[nt][2], s[nt][3]);
        }
#pragma unroll
        for (int r = 0; r < 2; r++)
            l[r] = l[r] * corr[r] + rs[r];
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            acc[i][0] *= corr[0], acc[i][1] *= corr[0];
            acc[i][2] *= corr[1], acc[i][3] *= corr[1];
        }
        kj_cp_wait<1>(); /* V_j is in (K_{j+1} may still be on its way) */
        __syncthreads();
#pragma unroll
        for (int kt = 0; kt < PF_BN / 16; kt++)
#pragma unroll
            for (int d16 = 0; d16 < D / 16; d16++) {
                const int row = kt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, ch = d16 * 2 + (lane >> 4);
                unsigned r[4];
                kj_ldsm4_t(kj_smem_addr(smv + pf_off<D>(row, ch)), r);
                const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                kj_mma(S(), acc[2 * d16], pa[kt], b0);
                kj_mma(S(), acc[2 * d16 + 1], pa[kt], b1);
            }
        __syncthreads(); /* every warp is done with V_j */
    }
    kj_cp_wait<0>();
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        l[r] = 1.f / l[r];
    }
    const int qa = q0 + warp * 16 + lane / 4;
#pragma unroll
    for (int i = 0; i < D / 8; i++) {
        const int d = i * 8 + (lane % 4) * 2;
        if (qa < T)
            *reinterpret_cast<unsigned *>(o + ((kj_size)qa * H + h) * D + d) =
                kj_pack2(S(), acc[i][0] * l[0], acc[i][1] * l[0]);
        if (qa + 8 < T)
            *reinterpret_cast<unsigned *>(o + ((kj_size)(qa + 8) * H + h) * D + d) =
                kj_pack2(S(), acc[i][2] * l[1], acc[i][3] * l[1]);
    }
}
#define PF_BODY prefill_tc
#define PF_BOUNDS __launch_bounds__(KJ_BLOCK)

#else
/* ---- plain path ------------------------------------------------------------------- */
#define PF_PN 32 /* keys per shared-memory tile */

/* shared memory: K and V tiles of PF_PN keys x up to 128 dims, f32 */
#define PF_SMEM (2 * PF_PN * 128 * 4)

template <class S, int D>
KJ_DEV void prefill_plain(unsigned char *sm, const unsigned short *q, const unsigned short *k,
                          const unsigned short *v, unsigned short *o, int T, int H, int Hkv,
                          float scale)
{
    float(*sk)[D] = reinterpret_cast<float(*)[D]>(sm);
    float(*sv)[D] = reinterpret_cast<float(*)[D]>(sm + PF_PN * D * 4);
    const int row = threadIdx.x / 2, half = threadIdx.x % 2; /* two threads per query row */
    const int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, kvh = h / (H / Hkv);
    const int q0 = qt * PF_BM, t = q0 + row, last = q0 + PF_BM - 1 < T - 1 ? q0 + PF_BM - 1 : T - 1;
    float qv[D / 2], acc[D / 2], m = -KJ_INF, l = 0.f;

    for (int i = 0; i < D / 2; i++) {
        qv[i] = t < T ? S::ld(q, ((kj_size)t * H + h) * D + half * (D / 2) + i) * scale * PF_LOG2E : 0.f;
        acc[i] = 0.f;
    }
    for (int u0 = 0; u0 <= last; u0 += PF_PN) {
        for (int id = threadIdx.x; id < PF_PN * D; id += blockDim.x) {
            const int u = u0 + id / D, d = id % D;
            const kj_size at = ((kj_size)u * Hkv + kvh) * D + d;
            sk[id / D][d] = u < T ? S::ld(k, at) : 0.f;
            sv[id / D][d] = u < T ? S::ld(v, at) : 0.f;
        }
        __syncthreads();
        for (int i = 0; i < PF_PN && u0 + i <= last; i++) {
            float p = 0.f;
            for (int d = 0; d < D / 2; d++)
                p += qv[d] * sk[i][half * (D / 2) + d];
            p += kj_shfl_xor(p, 1); /* the row's other half */
            if (u0 + i > t)         /* causal (and rows past T see nothing new) */
                continue;
            const float mn = fmaxf(m, p), corr = exp2f(m - mn), e = exp2f(p - mn);
            l = l * corr + e;
            for (int d = 0; d < D / 2; d++)
                acc[d] = acc[d] * corr + e * sv[i][half * (D / 2) + d];
            m = mn;
        }
        __syncthreads();
    }
    if (t < T)
        for (int d = 0; d < D / 2; d++)
            S::st(o, ((kj_size)t * H + h) * D + half * (D / 2) + d, acc[d] / l);
}
#define PF_BODY prefill_plain
#define PF_BOUNDS __launch_bounds__(KJ_BLOCK)
#endif

#define KJ_PREFILL_ENTRY(name, St)                                                         \
    extern "C" __global__ void PF_BOUNDS name(const unsigned short *q, const unsigned short *k, \
                                              const unsigned short *v, unsigned short *o,  \
                                              int T, int H, int Hkv, int head_dim, float scale) \
    {                                                                                      \
        __shared__ __align__(128) unsigned char sm[PF_SMEM]; /* one copy for both D */     \
        if (head_dim == 64)                                                                \
            PF_BODY<St, 64>(sm, q, k, v, o, T, H, Hkv, scale);                             \
        else if (head_dim == 128)                                                          \
            PF_BODY<St, 128>(sm, q, k, v, o, T, H, Hkv, scale);                            \
    }

KJ_PREFILL_ENTRY(attn_prefill_f16, kj_s_f16)
KJ_PREFILL_ENTRY(attn_prefill_bf16, kj_s_bf16)
