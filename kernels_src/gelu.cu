/*
 * gelu.cu: GELU, elementwise over n floats (f32), in both common forms.
 *
 *   gelu_erf_f32:  y = 0.5 x (1 + erf(x/sqrt2)), computed as 0.5 x erfc(-x/sqrt2), which
 *                  keeps full relative accuracy for negative x (no 1 - 1 cancellation);
 *                  erfc from a fit good to ~1e-7 relative (kj_erfc below).
 *   gelu_tanh_f32: y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi)(x + 0.044715 x^3), computed as
 *                  x / (1 + exp(-2u)) (the same value, no cancellation near u = 0).
 * Launch as silu_gate: block KJ_BLOCK, grid-stride over quads; y may alias x.
 */
#include "kjit_prelude.h"

/* erfc(z) by the Chebyshev fit of Numerical Recipes (erfcc): fractional error below
 * 1.2e-7 for every z; the same formula as vulkan/gelu.comp.  One hardware reciprocal
 * and one hardware exp2 (each a few ulp): with libdevice's IEEE division and expf this
 * cost more ALU per element than the memory allows at full bandwidth (93% of copy). */
KJ_DEV float kj_erfc(float z)
{
    const float t = __fdividef(1.f, 1.f + 0.5f * fabsf(z));
    const float r =
        t * exp2f(1.4426950408889634f * (-z * z - 1.26551223f +
                 t * (1.00002368f +
                 t * (0.37409196f +
                 t * (0.09678418f +
                 t * (-0.18628806f +
                 t * (0.27886807f +
                 t * (-1.13520398f +
                 t * (1.48851587f +
                 t * (-0.82215223f +
                 t * 0.17087277f))))))))));
    return z >= 0.f ? r : 2.f - r;
}

KJ_DEV float gelu_erf1(float x) { return 0.5f * x * kj_erfc(-x * 0.70710678118654752f); }

KJ_DEV float gelu_tanh1(float x)
{
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.f + expf(-2.f * u));
}

#define KJ_GELU_ENTRY(name, fn)                                                            \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK) name(const float *x, float *y, int n) \
    {                                                                                      \
        const int nq = (n + 3) / 4;                                                        \
        for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < nq;                        \
             q += gridDim.x * blockDim.x) {                                                \
            if ((n & 3) == 0) {                                                            \
                const float4 a = kj_ld4(x, q);                                             \
                kj_st4(y, q, make_float4(fn(a.x), fn(a.y), fn(a.z), fn(a.w)));             \
            } else {                                                                       \
                for (int i = q * 4; i < q * 4 + 4 && i < n; i++)                           \
                    y[i] = fn(x[i]);                                                       \
            }                                                                              \
        }                                                                                  \
    }

KJ_GELU_ENTRY(gelu_erf_f32, gelu_erf1)
KJ_GELU_ENTRY(gelu_tanh_f32, gelu_tanh1)
