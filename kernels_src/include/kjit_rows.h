/*
 * kjit_rows.h: 16-byte row vectors kept as raw bits, for the row kernels (rms_norm.cu,
 * layer_norm.cu).
 *
 * A vector is S::VEC elements of storage type S (f32: 4, f16/bf16: 8) held in one uint4
 * exactly as in memory and converted to f32 where it is used.  A row held in registers
 * then costs 4 registers a vector whatever the type (8 floats for a converted 16-bit
 * vector): fewer registers, more blocks an SM, more loads in flight.  Stores convert
 * pairs with one packed instruction (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32) on CUDA
 * sm_80+, not one conversion an element; both round to nearest even, as the prelude's.
 *   kj_rv_ld(p, i)        vector i of p (plain load; KJ_ROWS_CS: evict-first, .cs)
 *   kj_rv_ldw(p, i)       vector i of a read-only operand (weights) through the
 *                         non-coherent read-only path on CUDA
 *   kj_rv_st(p, i, v)     store vector i (KJ_ROWS_CS: .cs)
 *   kj_rv_get(S(), v, r)  the VEC values of v as f32 into r
 *   kj_rv_put(S(), r)     VEC f32 values rounded to S, as one vector
 */
#pragma once
#include "kjit_prelude.h"

KJ_DEV uint4 kj_rv_ld(const void *p, kj_size i)
{
#if defined(KJ_CUDA) && defined(KJ_ROWS_CS)
    return __ldcs(reinterpret_cast<const uint4 *>(p) + i);
#else
    return reinterpret_cast<const uint4 *>(p)[i];
#endif
}

KJ_DEV uint4 kj_rv_ldw(const void *p, kj_size i)
{
#if defined(KJ_CUDA)
    return __ldg(reinterpret_cast<const uint4 *>(p) + i);
#else
    return reinterpret_cast<const uint4 *>(p)[i];
#endif
}

KJ_DEV void kj_rv_st(void *p, kj_size i, uint4 v)
{
#if defined(KJ_CUDA) && defined(KJ_ROWS_CS)
    __stcs(reinterpret_cast<uint4 *>(p) + i, v);
#else
    reinterpret_cast<uint4 *>(p)[i] = v;
#endif
}

KJ_DEV void kj_rv_get(kj_s_f32, uint4 u, float r[4])
{
    r[0] = __uint_as_float(u.x), r[1] = __uint_as_float(u.y);
    r[2] = __uint_as_float(u.z), r[3] = __uint_as_float(u.w);
}

KJ_DEV void kj_rv_get(kj_s_f16, uint4 u, float r[8])
{
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
        r[2 * j] = kj_f16_to_f32((unsigned short)(w[j] & 0xffffu));
        r[2 * j + 1] = kj_f16_to_f32((unsigned short)(w[j] >> 16));
    }
}

KJ_DEV void kj_rv_get(kj_s_bf16, uint4 u, float r[8])
{
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
        r[2 * j] = __uint_as_float(w[j] << 16);
        r[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
    }
}

KJ_DEV uint4 kj_rv_put(kj_s_f32, const float r[4])
{
    return make_uint4(__float_as_uint(r[0]), __float_as_uint(r[1]), __float_as_uint(r[2]),
                      __float_as_uint(r[3]));
}

/* lo in the low half, hi in the high half, each rounded to nearest even */
KJ_DEV unsigned kj_rv_pair(kj_s_f16, float lo, float hi)
{
#if defined(KJ_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned u;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(hi), "f"(lo));
    return u;
#else
    return (unsigned)kj_f32_to_f16(lo) | ((unsigned)kj_f32_to_f16(hi) << 16);
#endif
}

KJ_DEV unsigned kj_rv_pair(kj_s_bf16, float lo, float hi)
{
#if defined(KJ_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned u;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(hi), "f"(lo));
    return u;
#else
    return (unsigned)kj_f32_to_bf16(lo) | ((unsigned)kj_f32_to_bf16(hi) << 16);
#endif
}

template <class S> KJ_DEV uint4 kj_rv_put(S s, const float r[8])
{
    return make_uint4(kj_rv_pair(s, r[0], r[1]), kj_rv_pair(s, r[2], r[3]),
                      kj_rv_pair(s, r[4], r[5]), kj_rv_pair(s, r[6], r[7]));
}
