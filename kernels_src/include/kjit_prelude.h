/*
 * kjit_prelude.h: the one header shared by every HIP/CUDA kernel in kernels_src.
 *
 * Each kernel source is compiled unchanged by hiprtc (HIP, AMD) and by NVRTC (CUDA).
 * Neither compiler may see a system header, so this file uses only what both provide
 * built in, and hides the differences:
 *   - KJ_HIP / KJ_CUDA: which compiler is reading the file;
 *   - KJ_WARP: lanes per warp/wavefront (32 on NVIDIA and RDNA wave32, 64 on CDNA).
 *     Code is written to be correct for either width: reductions loop over KJ_WARP,
 *     per-block scratch is sized for the smallest width (32);
 *   - kj_shfl_xor: butterfly shuffle within a warp/wavefront;
 *   - kj_dp4a: 4-way signed int8 dot with int32 accumulate (__dp4a on CUDA,
 *     __builtin_amdgcn_sdot4 on AMD targets that have dot1-insts, plain C otherwise);
 *   - kj_block_sum / kj_block_max: block-wide reductions returning the result to all
 *     threads.  They require blockDim.x to be a multiple of KJ_WARP and <= KJ_BLOCK;
 *   - storage types kj_s_f32 / kj_s_f16 / kj_s_bf16: load and store one or four values
 *     of f32, IEEE half or bfloat16 memory as f32 (16-bit values are plain unsigned
 *     shorts converted with one instruction or a shift, so no fp16 header is needed;
 *     conversions to 16 bits round to nearest even).
 * KJ_BLOCK is the block size the launcher uses (manifest option -DKJ_BLOCK=N; it must be
 * a multiple of 64 so that it is whole wavefronts on every target).
 */
#pragma once

#if defined(__HIPCC_RTC__) || defined(__HIP__) || defined(__HIP_DEVICE_COMPILE__)
#define KJ_HIP 1
#else
#define KJ_CUDA 1
#endif

#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
#if KJ_BLOCK % 64 != 0 || KJ_BLOCK > 1024
#error "KJ_BLOCK must be a multiple of 64 and at most 1024"
#endif

/* Scratch slots for one value per warp, sized for the narrowest warp (32 lanes). */
#define KJ_MAX_WARPS (KJ_BLOCK / 32)

#define KJ_DEV static __device__ __forceinline__

typedef unsigned long long kj_size;

#if defined(KJ_HIP)
#define KJ_INF __builtin_huge_valf()
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define KJ_WARP __AMDGCN_WAVEFRONT_SIZE
#else
#define KJ_WARP warpSize
#endif
KJ_DEV float kj_shfl_xor(float v, int mask) { return __shfl_xor(v, mask); }
#else
#define KJ_INF __int_as_float(0x7f800000)
#define KJ_WARP 32
KJ_DEV float kj_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
#endif

/* a·b over the four signed bytes of each word, plus c. */
KJ_DEV int kj_dp4a(int a, int b, int c)
{
#if defined(KJ_CUDA)
    return __dp4a(a, b, c);
#elif defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) ||                 \
    defined(__gfx1011__) || defined(__gfx1012__) || defined(__gfx1030__) ||                \
    defined(__gfx1031__) || defined(__gfx1032__) || defined(__gfx1033__) ||                \
    defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__)
    return __builtin_amdgcn_sdot4(a, b, c, false);
#else
    return c + (signed char)(a) * (signed char)(b) + (signed char)(a >> 8) * (signed char)(b >> 8) +
           (signed char)(a >> 16) * (signed char)(b >> 16) +
           (signed char)(a >> 24) * (signed char)(b >> 24);
#endif
}

KJ_DEV float4 kj_ld4(const float *p, kj_size i) { return reinterpret_cast<const float4 *>(p)[i]; }
KJ_DEV void kj_st4(float *p, kj_size i, float4 v) { reinterpret_cast<float4 *>(p)[i] = v; }

KJ_DEV float kj_warp_sum(float v)
{
    for (int o = KJ_WARP / 2; o > 0; o >>= 1)
        v += kj_shfl_xor(v, o);
    return v;
}

KJ_DEV float kj_warp_max(float v)
{
    for (int o = KJ_WARP / 2; o > 0; o >>= 1)
        v = fmaxf(v, kj_shfl_xor(v, o));
    return v;
}

/* Sum over the block, returned to every thread; `red` is __shared__ float[KJ_MAX_WARPS]. */
KJ_DEV float kj_block_sum(float v, float *red)
{
    const int nw = (int)blockDim.x / KJ_WARP;
    float t = 0.f;
    v = kj_warp_sum(v);
    if (threadIdx.x % KJ_WARP == 0)
        red[threadIdx.x / KJ_WARP] = v;
    __syncthreads();
    for (int i = 0; i < nw; i++)
        t += red[i];
    __syncthreads(); /* red may be reused at once */
    return t;
}

/* Max over the block, returned to every thread; same contract as kj_block_sum. */
KJ_DEV float kj_block_max(float v, float *red)
{
    const int nw = (int)blockDim.x / KJ_WARP;
    float t = -KJ_INF;
    v = kj_warp_max(v);
    if (threadIdx.x % KJ_WARP == 0)
        red[threadIdx.x / KJ_WARP] = v;
    __syncthreads();
    for (int i = 0; i < nw; i++)
        t = fmaxf(t, red[i]);
    __syncthreads();
    return t;
}

/* ---- 16-bit storage ------------------------------------------------------------------ */

KJ_DEV float kj_bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

KJ_DEV unsigned short kj_f32_to_bf16(float f)
{
#if defined(KJ_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned short h; /* one instruction (the same rounding as below) */
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays NaN */
        return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
#endif
}

KJ_DEV float kj_f16_to_f32(unsigned short h)
{
#if defined(KJ_CUDA)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    _Float16 x;
    __builtin_memcpy(&x, &h, 2);
    return (float)x;
#endif
}

KJ_DEV unsigned short kj_f32_to_f16(float f)
{
    unsigned short h;
#if defined(KJ_CUDA)
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
#else
    _Float16 x = (_Float16)f;
    __builtin_memcpy(&h, &x, 2);
#endif
    return h;
}

/* Storage policies: T is the element type in memory; ld/st move one element, ld4/st4
 * four consecutive ones (16-byte or 8-byte aligned), ldv/stv VEC consecutive ones with
 * one 16-byte access (vector index i: elements VEC*i .. VEC*i + VEC - 1), all as f32 in
 * registers. */
struct kj_s_f32 {
    typedef float T;
    enum { VEC = 4 };
    KJ_DEV void ldv(const T *p, kj_size i, float *r)
    {
        const float4 a = kj_ld4(p, i);
        r[0] = a.x, r[1] = a.y, r[2] = a.z, r[3] = a.w;
    }
    KJ_DEV void stv(T *p, kj_size i, const float *r) { kj_st4(p, i, make_float4(r[0], r[1], r[2], r[3])); }
    KJ_DEV float ld(const T *p, kj_size i) { return p[i]; }
    KJ_DEV void st(T *p, kj_size i, float v) { p[i] = v; }
    KJ_DEV float4 ld4(const T *p, kj_size i) { return kj_ld4(p, i); }
    KJ_DEV void st4(T *p, kj_size i, float4 v) { kj_st4(p, i, v); }
};

template <float (*To)(unsigned short), unsigned short (*From)(float)>
struct kj_s_16 {
    typedef unsigned short T;
    enum { VEC = 8 };
    KJ_DEV void ldv(const T *p, kj_size i, float *r)
    {
        const uint4 u = reinterpret_cast<const uint4 *>(p)[i];
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            r[2 * j] = To((unsigned short)(w[j] & 0xffffu));
            r[2 * j + 1] = To((unsigned short)(w[j] >> 16));
        }
    }
    KJ_DEV void stv(T *p, kj_size i, const float *r)
    {
        unsigned w[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            w[j] = (unsigned)From(r[2 * j]) | ((unsigned)From(r[2 * j + 1]) << 16);
        reinterpret_cast<uint4 *>(p)[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
    KJ_DEV float ld(const T *p, kj_size i) { return To(p[i]); }
    KJ_DEV void st(T *p, kj_size i, float v) { p[i] = From(v); }
    KJ_DEV float4 ld4(const T *p, kj_size i)
    {
        const uint2 u = reinterpret_cast<const uint2 *>(p)[i];
        return make_float4(To((unsigned short)(u.x & 0xffffu)), To((unsigned short)(u.x >> 16)),
                           To((unsigned short)(u.y & 0xffffu)), To((unsigned short)(u.y >> 16)));
    }
    KJ_DEV void st4(T *p, kj_size i, float4 v)
    {
        reinterpret_cast<uint2 *>(p)[i] =
            make_uint2((unsigned)From(v.x) | ((unsigned)From(v.y) << 16),
                       (unsigned)From(v.z) | ((unsigned)From(v.w) << 16));
    }
};
typedef kj_s_16<kj_f16_to_f32, kj_f32_to_f16> kj_s_f16;
typedef kj_s_16<kj_bf16_to_f32, kj_f32_to_bf16> kj_s_bf16;
