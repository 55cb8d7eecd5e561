/*
 * kjit_mma.h: the tensor-core building blocks shared by gemm.cu and attn_prefill.cu,
 * as inline PTX so NVRTC needs no header (<mma.h> is not among the includes kjitd
 * resolves).  Only defined for CUDA sm_80 and newer (KJ_MMA is then 1); other targets
 * take the kernels' plain paths.
 *   kj_cp16(dst, src, valid)   16-byte cp.async global -> shared, zero-filled when !valid
 *   kj_cp_commit / kj_cp_wait<N>  cp.async groups: wait until at most N are pending
 *   kj_ldsm4 / kj_ldsm4_t      ldmatrix.x4 (plain / transposed) from a shared address
 *   kj_mma(S(), d, a, b)       d += a . b, m16n8k16, f32 accumulators, S = kj_s_f16 or
 *                              kj_s_bf16 picks the input type
 *   kj_pack2(S(), lo, hi)      two f32 rounded to the 16-bit type, one 32-bit register
 *   kj_from_f32(S(), v)        one f32 to the 16-bit type (round to nearest even)
 *   kj_store2<S>(C, M, N, r, c, v0, v1)  C[r][c], C[r][c + 1] of a row-major M x N 16-bit
 *                              matrix from two f32, masked at the edges (one 32-bit
 *                              store when aligned): the GEMMs' epilogue
 */
#pragma once
#include "kjit_prelude.h"

KJ_DEV unsigned short kj_from_f32(kj_s_f16, float v) { return kj_f32_to_f16(v); }
KJ_DEV unsigned short kj_from_f32(kj_s_bf16, float v) { return kj_f32_to_bf16(v); }

template <class S>
KJ_DEV void kj_store2(unsigned short *C, int M, int N, int r, int c, float v0, float v1)
{
    if (r >= M || c >= N)
        return;
    unsigned short *p = C + (kj_size)r * N + c;
    if (c + 1 < N && (((kj_size)p) & 3) == 0) {
        *reinterpret_cast<unsigned *>(p) = (unsigned)kj_from_f32(S(), v0) | ((unsigned)kj_from_f32(S(), v1) << 16);
    } else {
        p[0] = kj_from_f32(S(), v0);
        if (c + 1 < N)
            p[1] = kj_from_f32(S(), v1);
    }
}

#if defined(KJ_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KJ_MMA 1

KJ_DEV unsigned kj_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

KJ_DEV void kj_cp16(unsigned dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0));
}
KJ_DEV void kj_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> KJ_DEV void kj_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

KJ_DEV void kj_ldsm4(unsigned addr, unsigned r[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
KJ_DEV void kj_ldsm4_t(unsigned addr, unsigned r[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

KJ_DEV void kj_mma(kj_s_f16, float d[4], const unsigned a[4], const unsigned b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
KJ_DEV void kj_mma(kj_s_bf16, float d[4], const unsigned a[4], const unsigned b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* lo in bits 0..15, hi in 16..31 (the cvt puts its first source in the upper half) */
KJ_DEV unsigned kj_pack2(kj_s_f16, float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
KJ_DEV unsigned kj_pack2(kj_s_bf16, float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
#endif
