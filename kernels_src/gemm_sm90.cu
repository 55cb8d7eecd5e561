/*
 * gemm_sm90.cu: the Hopper variant of gemm.cu's product, C = A . B^T with 16-bit inputs
 * and f32 accumulation (A [M][K], B [N][K], C [M][N], all row-major); entries
 * gemm_sm90_f16 and gemm_sm90_bf16.  Compiled for sm_90a (wgmma and setmaxnreg exist
 * only there); the launcher picks it over gemm_f16 / gemm_bf16 on a device of compute
 * capability 9.0 when K % 8 == 0 and A, B are 16-byte aligned (the tensor maps' row
 * stride, K * 2 bytes, must be a multiple of 16).  Any M, N >= 1 and such K >= 8.
 *
 * Arguments: (A, B, C, M, N, K, tmA, tmB): gemm.cu's six, then two CUtensorMaps (128
 * bytes each, passed by value) that the launcher builds with cuTensorMapEncodeTiled:
 *   tmA: A as 2-D {K, M} (innermost first), row stride K * 2 bytes, box {64, 128};
 *   tmB: B as 2-D {K, N}, row stride K * 2 bytes, box {64, 256};
 *   both FLOAT16 (gemm_sm90_f16) or BFLOAT16 (gemm_sm90_bf16), no interleave,
 *   CU_TENSOR_MAP_SWIZZLE_128B, any L2 promotion, OOB fill NONE (zeros: ragged M, N and
 *   K read zeros past the edges, and the stores are masked).
 * Launch: block KJ_BLOCK = 384 (3 warpgroups), grid.x = ceil(N / 256), grid.y =
 * ceil(M / 128), dynamic shared memory GM9_SMEM_BYTES (197888: above 48 KB the launcher
 * raises the function's limit first; one block an SM).
 *
 * sm_90a path: a 128 x 256 tile per block, K in slabs of 64 through GM9_STAGES = 4
 * shared-memory stages (48 KB each), warp-specialized: warpgroup 0 is the producer (one
 * thread issues the bulk tensor copies, cp.async.bulk.tensor, each stage completing on
 * its `full` mbarrier with the byte count), warpgroups 1 and 2 the consumers (rows 0-63
 * and 64-127 of the tile: four wgmma m64n256k16 a slab from the 128-byte-swizzled
 * tiles, 128 f32 accumulators a thread; a slab is handed back on its `empty` mbarrier
 * once the next one's wgmma are issued and it is done).  setmaxnreg moves registers
 * from the producer (24) to the consumers (240).  Blocks walk the tiles in groups of 16
 * tile rows so that a wave's operands stay in L2.  A barrier wait that never completes
 * (a bug, not a shape) traps after about 2^28 polls instead of hanging the device.
 * Other CUDA targets (where no launcher picks this entry; it compiles so that every
 * CUDA target the project checks builds it): each thread of the 128 x 256 tile computes
 * its outputs with plain f32 dot products from A and B.
 */
#include "kjit_mma.h"

#if KJ_BLOCK != 384
#error "gemm_sm90.cu is written for KJ_BLOCK=384"
#endif
#if defined(KJ_HIP)
#error "gemm_sm90.cu is CUDA only"
#endif

#define GM9_BM 128
#define GM9_BN 256
#define GM9_BK 64
#define GM9_STAGES 4
#define GM9_GROUP 16                                      /* tile rows a raster group */
#define GM9_A_BYTES (GM9_BM * GM9_BK * 2)                 /* 16 KB */
#define GM9_B_BYTES (GM9_BN * GM9_BK * 2)                 /* 32 KB */
#define GM9_STAGE_BYTES (GM9_A_BYTES + GM9_B_BYTES)
#define GM9_SMEM_BYTES (GM9_STAGES * GM9_STAGE_BYTES + 1024 + 256) /* + alignment, barriers */

/* CUtensorMap's size and alignment, without cuda.h */
struct __align__(64) kj_tmap {
    unsigned long long w[16];
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* ---- sm_90a: TMA + wgmma, warp-specialized ----------------------------------------- */

#include "kjit_wgmma.h" /* mbarriers, bulk tensor copies, descriptors, fences (pf9_*) */

#define GM9_D8(i)                                                                          \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]),             \
        "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define GM9_WGMMA(S, TY)                                                                   \
    KJ_DEV void gm9_mma(S, float d[128], unsigned long long da, unsigned long long db)      \
    {                                                                                      \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                           \
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {"         \
                     "%0, %1, %2, %3, %4, %5, %6, %7,"                                     \
                     "%8, %9, %10, %11, %12, %13, %14, %15,"                               \
                     "%16, %17, %18, %19, %20, %21, %22, %23,"                             \
                     "%24, %25, %26, %27, %28, %29, %30, %31,"                             \
                     "%32, %33, %34, %35, %36, %37, %38, %39,"                             \
                     "%40, %41, %42, %43, %44, %45, %46, %47,"                             \
                     "%48, %49, %50, %51, %52, %53, %54, %55,"                             \
                     "%56, %57, %58, %59, %60, %61, %62, %63,"                             \
                     "%64, %65, %66, %67, %68, %69, %70, %71,"                             \
                     "%72, %73, %74, %75, %76, %77, %78, %79,"                             \
                     "%80, %81, %82, %83, %84, %85, %86, %87,"                             \
                     "%88, %89, %90, %91, %92, %93, %94, %95,"                             \
                     "%96, %97, %98, %99, %100, %101, %102, %103,"                         \
                     "%104, %105, %106, %107, %108, %109, %110, %111,"                     \
                     "%112, %113, %114, %115, %116, %117, %118, %119,"                     \
                     "%120, %121, %122, %123, %124, %125, %126, %127},"                    \
                     " %128, %129, p, 1, 1, 0, 0;\n}\n"                                    \
                     : GM9_D8(0), GM9_D8(8), GM9_D8(16), GM9_D8(24), GM9_D8(32), GM9_D8(40), \
                       GM9_D8(48), GM9_D8(56), GM9_D8(64), GM9_D8(72), GM9_D8(80), GM9_D8(88), \
                       GM9_D8(96), GM9_D8(104), GM9_D8(112), GM9_D8(120)                   \
                     : "l"(da), "l"(db), "r"(1));                                          \
    }
GM9_WGMMA(kj_s_f16, "f16")
GM9_WGMMA(kj_s_bf16, "bf16")

/* the block's tile (tm, tn): blocks in launch order cover GM9_GROUP tile rows at a time */
KJ_DEV void gm9_tile(int *tm, int *tn)
{
    const int nx = (int)gridDim.x, ny = (int)gridDim.y;
    const int id = (int)(blockIdx.y * gridDim.x + blockIdx.x), per = GM9_GROUP * nx;
    const int first = id / per * GM9_GROUP, rows = min(ny - first, GM9_GROUP), in = id % per;
    *tm = first + in % rows;
    *tn = in / rows;
}

template <class S>
KJ_DEV void gm9_consumer(unsigned base, unsigned bars, unsigned short *C, int M, int N, int KT,
                         int m0, int n0, int wg)
{
    float d[128];
    const int t = threadIdx.x % 128;
#pragma unroll
    for (int i = 0; i < 128; i++)
        d[i] = 0.f;
    for (int kt = 0; kt < KT; kt++) {
        const int s = kt % GM9_STAGES;
        const unsigned a = base + s * GM9_STAGE_BYTES + wg * (64 * 128), b = base + s * GM9_STAGE_BYTES + GM9_A_BYTES;
        pf9_bar_wait(bars + s * 8, (unsigned)(kt / GM9_STAGES) & 1);
        pf9_fence();
#pragma unroll
        for (int kk = 0; kk < GM9_BK / 16; kk++) /* 16 halves = 32 bytes along the row */
            gm9_mma(S(), d, pf9_desc_k(a + kk * 32), pf9_desc_k(b + kk * 32));
        pf9_commit();
        pf9_wait<1>(); /* the previous slab's wgmma are done: hand its stage back */
        if (kt > 0 && t == 0)
            pf9_bar_arrive(bars + (GM9_STAGES + (kt - 1) % GM9_STAGES) * 8);
    }
    pf9_wait<0>();
    /* accumulator layout, per warp of the warpgroup: d[4j..4j+1] at row lane/4, columns
     * 8j + 2 (lane % 4) + {0, 1}; d[4j+2..4j+3] the same 8 rows further down */
    const int r = m0 + wg * 64 + (t / 32) * 16 + (t % 32) / 4, c0 = n0 + (t % 4) * 2;
    if (m0 + GM9_BM <= M && n0 + GM9_BN <= N && (N & 1) == 0) { /* interior tile */
        unsigned short *p = C + (kj_size)r * N + c0;
#pragma unroll
        for (int j = 0; j < 32; j++) {
            *reinterpret_cast<unsigned *>(p + j * 8) = kj_pack2(S(), d[4 * j], d[4 * j + 1]);
            *reinterpret_cast<unsigned *>(p + (kj_size)8 * N + j * 8) = kj_pack2(S(), d[4 * j + 2], d[4 * j + 3]);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 32; j++) {
            kj_store2<S>(C, M, N, r, c0 + j * 8, d[4 * j], d[4 * j + 1]);
            kj_store2<S>(C, M, N, r + 8, c0 + j * 8, d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

template <class S>
KJ_DEV void gm9_body(unsigned short *C, int M, int N, int K, const kj_tmap *tmA,
                     const kj_tmap *tmB)
{
    extern __shared__ __align__(1024) unsigned char gm9_dyn[]; /* GM9_SMEM_BYTES */
    const unsigned raw = kj_smem_addr(gm9_dyn), base = (raw + 1023) & ~1023u;
    const unsigned bars = base + GM9_STAGES * GM9_STAGE_BYTES; /* full[s], then empty[s] */
    const int wg = threadIdx.x / 128, KT = (K + GM9_BK - 1) / GM9_BK;
    int tm, tn;
    gm9_tile(&tm, &tn);
    const int m0 = tm * GM9_BM, n0 = tn * GM9_BN;

    if (threadIdx.x == 0) {
        for (int s = 0; s < GM9_STAGES; s++) {
            pf9_bar_init(bars + s * 8, 1);                      /* the producer's expect_tx */
            pf9_bar_init(bars + (GM9_STAGES + s) * 8, 2);       /* one arrive a consumer */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < KT; kt++) {
                const int s = kt % GM9_STAGES;
                const unsigned a = base + s * GM9_STAGE_BYTES, full = bars + s * 8;
                if (kt >= GM9_STAGES) /* the consumers' release of this stage's last use */
                    pf9_bar_wait(bars + (GM9_STAGES + s) * 8, (unsigned)(kt / GM9_STAGES - 1) & 1);
                pf9_bar_expect(full, GM9_STAGE_BYTES);
                pf9_tma_load(a, tmA, full, kt * GM9_BK, m0);
                pf9_tma_load(a + GM9_A_BYTES, tmB, full, kt * GM9_BK, n0);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
        gm9_consumer<S>(base, bars, C, M, N, KT, m0, n0, wg - 1);
    }
}
#define GM9_BODY(A, B, C, M, N, K, tmA, tmB) gm9_body<S>(C, M, N, K, &tmA, &tmB)

#else
/* ---- other CUDA targets: plain dot products (never picked by the launcher) --------- */
template <class S>
KJ_DEV void gm9_plain(const unsigned short *A, const unsigned short *B, unsigned short *C,
                      int M, int N, int K)
{
    const int m0 = blockIdx.y * GM9_BM, n0 = blockIdx.x * GM9_BN;
    for (int i = threadIdx.x; i < GM9_BM * GM9_BN / 2; i += blockDim.x) {
        const int r = m0 + i / (GM9_BN / 2), c = n0 + (i % (GM9_BN / 2)) * 2;
        float s0 = 0.f, s1 = 0.f;
        for (int k = 0; r < M && c < N && k < K; k++) {
            const float a = S::ld(A, (kj_size)r * K + k);
            s0 += a * S::ld(B, (kj_size)c * K + k);
            if (c + 1 < N)
                s1 += a * S::ld(B, (kj_size)(c + 1) * K + k);
        }
        kj_store2<S>(C, M, N, r, c, s0, s1);
    }
}
#define GM9_BODY(A, B, C, M, N, K, tmA, tmB) gm9_plain<S>(A, B, C, M, N, K)
#endif

#define KJ_GEMM9_ENTRY(name, St)                                                           \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK, 1)                              \
        name(const unsigned short *A, const unsigned short *B, unsigned short *C, int M,   \
             int N, int K, const __grid_constant__ kj_tmap tmA,                            \
             const __grid_constant__ kj_tmap tmB)                                          \
    {                                                                                      \
        typedef St S;                                                                      \
        GM9_BODY(A, B, C, M, N, K, tmA, tmB);                                              \
    }

KJ_GEMM9_ENTRY(gemm_sm90_f16, kj_s_f16)
KJ_GEMM9_ENTRY(gemm_sm90_bf16, kj_s_bf16)
