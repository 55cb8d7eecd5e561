/*
 * gemm.cu: C = A . B^T with 16-bit inputs and f32 accumulation (the linear layer's
 * product: A activations [M][K], B weights [N][K], C [M][N], all row-major);
 * entries gemm_f16 (IEEE half in and out) and gemm_bf16 (bfloat16 in and out).
 * Any M, N, K >= 1 (ragged edges are zero-filled on load and masked on store).
 *
 * Two paths, chosen at compile time:
 *  - tensor cores (CUDA, sm_80 and newer): a 128 x 128 tile per block of 256 threads
 *    (8 warps, 2 x 4, each a 64 x 32 piece), K in steps of GM_BK = 64 through a
 *    GM_STAGES = 3 stage cp.async pipeline in DYNAMIC shared memory (GM_SMEM_BYTES =
 *    96 KB: the launcher must pass that many bytes and, above 48 KB, first raise the
 *    function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; two blocks fit an SM of
 *    sm_80/sm_90), 16-byte chunks swizzled so ldmatrix is free of bank conflicts,
 *    ldmatrix.x4 fragments and mma.sync m16n8k16 with f32 accumulators, all through
 *    inline PTX (NVRTC needs no header).  When K % 8 != 0 or a buffer is not 16-byte
 *    aligned, the tiles are filled with plain loads instead of cp.async (slower, same
 *    result).
 *  - plain (HIP, older CUDA): a 64 x 64 tile per block, 4 x 4 outputs a thread, f32
 *    multiply-adds from shared memory; the same launch geometry with 128-wide tiles
 *    mapped onto it (each block does its 128 x 128 tile as four 64 x 64 ones).
 * Launch: block KJ_BLOCK = 256; grid.x = ceil(N / 128), grid.y = ceil(M / 128) (<= 65535);
 * dynamic shared memory GM_SMEM_BYTES on the tensor-core path, none on the plain one.
 */
#include "kjit_mma.h"

#if KJ_BLOCK != 256
#error "gemm.cu is written for KJ_BLOCK=256"
#endif

#define GM_BM 128
#define GM_BN 128

#if defined(KJ_MMA)
/* ---- tensor-core path ------------------------------------------------------------- */
#ifndef GM_BK
#define GM_BK 64
#endif
#ifndef GM_STAGES
#define GM_STAGES 3
#endif
#define GM_CHUNKS (GM_BK / 8)                 /* 16-byte chunks per tile row */
#define GM_TILE_BYTES (GM_BM * GM_BK * 2)     /* one operand's tile of one stage */
#define GM_SMEM_BYTES (GM_STAGES * 2 * GM_TILE_BYTES)
#if GM_BK != 32 && GM_BK != 64
#error "gm_off's swizzle is written for GM_BK = 32 or 64"
#endif

/* byte offset of (row, 16-byte chunk) in one operand tile of a stage: the chunk index
 * is xored with a function of the row so the 8 consecutive rows one ldmatrix reads hit
 * 8 different 16-byte bank groups (64-byte rows, BK = 32: (row / 2) % 4, two rows a
 * 128-byte line; 128-byte rows, BK = 64: row % 8) */
KJ_DEV unsigned gm_off(int row, int chunk)
{
#if GM_BK == 32
    return (unsigned)((row * GM_CHUNKS + (chunk ^ ((row >> 1) & 3))) * 16);
#else
    return (unsigned)((row * GM_CHUNKS + (chunk ^ (row & 7))) * 16);
#endif
}

/* Load the BK-wide slab at k0 of rows [r0, r0 + 128) of X ([R][K]) into tile t. */
KJ_DEV void gm_load_tile(unsigned char *t, const unsigned short *X, int R, int K, int r0, int k0,
                         bool async)
{
#pragma unroll
    for (int i = 0; i < GM_BM * GM_CHUNKS / KJ_BLOCK; i++) {
        const int id = threadIdx.x + i * KJ_BLOCK, row = id / GM_CHUNKS, ch = id % GM_CHUNKS;
        const int gr = r0 + row, gk = k0 + ch * 8;
        const unsigned off = gm_off(row, ch);
        if (async) {
            const bool ok = gr < R && gk < K; /* K % 8 == 0: a chunk is all in or all out */
            const unsigned short *src = ok ? X + (kj_size)gr * K + gk : X;
            kj_cp16(kj_smem_addr(t + off), src, ok);
        } else {
            unsigned w[4];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const unsigned short lo = gr < R && gk + 2 * j < K ? X[(kj_size)gr * K + gk + 2 * j] : 0;
                const unsigned short hi = gr < R && gk + 2 * j + 1 < K ? X[(kj_size)gr * K + gk + 2 * j + 1] : 0;
                w[j] = (unsigned)lo | ((unsigned)hi << 16);
            }
            *reinterpret_cast<uint4 *>(t + off) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

template <class S>
KJ_DEV void gemm_tc(const unsigned short *A, const unsigned short *B, unsigned short *C, int M,
                    int N, int K)
{
    extern __shared__ __align__(128) unsigned char gm_dyn[]; /* GM_SMEM_BYTES */
    unsigned char(*sm)[2][GM_TILE_BYTES] = reinterpret_cast<unsigned char(*)[2][GM_TILE_BYTES]>(gm_dyn);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / 4, wn = warp % 4; /* warp tile: rows wm*64.., cols wn*32.. */
    const int m0 = blockIdx.y * GM_BM, n0 = blockIdx.x * GM_BN;
    const int KT = (K + GM_BK - 1) / GM_BK;
    const bool async = (K & 7) == 0 && ((((kj_size)A) | ((kj_size)B)) & 15) == 0;
    float acc[4][4][4];

#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.f;

#pragma unroll
    for (int s = 0; s < GM_STAGES - 1; s++) {
        if (s < KT) {
            gm_load_tile(sm[s][0], A, M, K, m0, s * GM_BK, async);
            gm_load_tile(sm[s][1], B, N, K, n0, s * GM_BK, async);
        }
        kj_cp_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        kj_cp_wait<GM_STAGES - 2>();
        __syncthreads();
        {
            const int nk = kt + GM_STAGES - 1, ns = nk % GM_STAGES;
            if (nk < KT) {
                gm_load_tile(sm[ns][0], A, M, K, m0, nk * GM_BK, async);
                gm_load_tile(sm[ns][1], B, N, K, n0, nk * GM_BK, async);
            }
            kj_cp_commit();
        }
        const unsigned char *ta = sm[kt % GM_STAGES][0], *tb = sm[kt % GM_STAGES][1];
#pragma unroll
        for (int kk = 0; kk < GM_BK / 16; kk++) {
            unsigned af[4][4], bf[4][2];
#pragma unroll
            for (int i = 0; i < 4; i++) { /* A: 16 x 16 at rows wm*64 + i*16 */
                const int row = wm * 64 + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                const int ch = kk * 2 + (lane >> 4);
                kj_ldsm4(kj_smem_addr(ta + gm_off(row, ch)), af[i]);
            }
#pragma unroll
            for (int j = 0; j < 2; j++) { /* B: two n8 tiles x k16 per ldmatrix.x4 */
                const int row = wn * 32 + j * 16 + (lane & 7) + (lane >> 4) * 8;
                const int ch = kk * 2 + ((lane >> 3) & 1);
                unsigned r[4];
                kj_ldsm4(kj_smem_addr(tb + gm_off(row, ch)), r);
                bf[2 * j][0] = r[0], bf[2 * j][1] = r[1];
                bf[2 * j + 1][0] = r[2], bf[2 * j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    kj_mma(S(), acc[i][j], af[i], bf[j]);
        }
    }
    kj_cp_wait<0>();
    /* accumulator layout: c0,c1 at (g, 2t..2t+1), c2,c3 at (g + 8, ..); g = lane/4 */
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int r = m0 + wm * 64 + i * 16 + lane / 4, c = n0 + wn * 32 + j * 8 + (lane % 4) * 2;
            kj_store2<S>(C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
            kj_store2<S>(C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
        }
}
#define GM_BODY gemm_tc<S>
#define GM_BOUNDS __launch_bounds__(KJ_BLOCK, 2)

#else
/* ---- plain path ------------------------------------------------------------------- */
#define GM_PT 64 /* tile edge */
#define GM_PK 16

template <class S>
KJ_DEV void gemm_plain(const unsigned short *A, const unsigned short *B, unsigned short *C,
                       int M, int N, int K)
{
    __shared__ float sa[GM_PK][GM_PT + 1], sb[GM_PK][GM_PT + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16; /* 16 x 16 threads, 4 x 4 each */
    for (int q = 0; q < 4; q++) {
        const int m0 = blockIdx.y * GM_BM + (q / 2) * GM_PT, n0 = blockIdx.x * GM_BN + (q % 2) * GM_PT;
        float acc[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                acc[i][j] = 0.f;
        for (int k0 = 0; k0 < K; k0 += GM_PK) {
            for (int id = threadIdx.x; id < GM_PT * GM_PK; id += blockDim.x) {
                const int r = id / GM_PK, kk = id % GM_PK, gk = k0 + kk;
                sa[kk][r] = m0 + r < M && gk < K ? S::ld(A, (kj_size)(m0 + r) * K + gk) : 0.f;
                sb[kk][r] = n0 + r < N && gk < K ? S::ld(B, (kj_size)(n0 + r) * K + gk) : 0.f;
            }
            __syncthreads();
            for (int kk = 0; kk < GM_PK; kk++) {
                float a[4], b[4];
                for (int i = 0; i < 4; i++) {
                    a[i] = sa[kk][ty * 4 + i];
                    b[i] = sb[kk][tx * 4 + i];
                }
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++)
                        acc[i][j] += a[i] * b[j];
            }
            __syncthreads();
        }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j += 2)
                kj_store2<S>(C, M, N, m0 + ty * 4 + i, n0 + tx * 4 + j, acc[i][j], acc[i][j + 1]);
    }
}
#define GM_BODY gemm_plain<S>
#define GM_BOUNDS __launch_bounds__(KJ_BLOCK)
#endif

#define KJ_GEMM_ENTRY(name, St)                                                            \
    extern "C" __global__ void GM_BOUNDS name(const unsigned short *A,                     \
                                              const unsigned short *B, unsigned short *C,  \
                                              int M, int N, int K)                         \
    {                                                                                      \
        typedef St S;                                                                      \
        GM_BODY(A, B, C, M, N, K);                                                         \
    }

KJ_GEMM_ENTRY(gemm_f16, kj_s_f16)
KJ_GEMM_ENTRY(gemm_bf16, kj_s_bf16)
