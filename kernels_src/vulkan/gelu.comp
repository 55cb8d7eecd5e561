// gelu.comp: GELU over n floats (f32); -DKJ_GELU_ERF or -DKJ_GELU_TANH picks the form.
// erf form: 0.5 x erfc(-x/sqrt2), with erfc from the Chebyshev fit of Numerical Recipes
// (erfcc, fractional error < 1.2e-7 everywhere), since GLSL has no erf.  tanh form:
// x / (1 + exp(-2u)), u = sqrt(2/pi)(x + 0.044715 x^3): the same value as
// 0.5 x (1 + tanh u) without cancellation.  Bindings: 0 x, 1 y.  Push constants: n.
// Dispatch as silu_gate.comp; when n % 4 == 0 each quad moves as one vec4.
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int n; } p;
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y4 { vec4 y4[]; };

float kj_erfc(float z)
{
    float t = 1.0 / (1.0 + 0.5 * abs(z));
    float r = t * exp(-z * z - 1.26551223 +
                      t * (1.00002368 +
                      t * (0.37409196 +
                      t * (0.09678418 +
                      t * (-0.18628806 +
                      t * (0.27886807 +
                      t * (-1.13520398 +
                      t * (1.48851587 +
                      t * (-0.82215223 +
                      t * 0.17087277)))))))));
    return z >= 0.0 ? r : 2.0 - r;
}

float gelu(float v)
{
#if defined(KJ_GELU_ERF)
    return 0.5 * v * kj_erfc(-v * 0.70710678118654752);
#elif defined(KJ_GELU_TANH)
    float u = 0.79788456080286536 * (v + 0.044715 * v * v * v);
    return v / (1.0 + exp(-2.0 * u));
#else
#error "define KJ_GELU_ERF or KJ_GELU_TANH"
#endif
}

void main()
{
    int nq = (p.n + 3) / 4;
    int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    if (p.n % 4 == 0) {
        for (int q = int(gl_GlobalInvocationID.x); q < nq; q += stride) {
            vec4 v = x4[q];
            y4[q] = vec4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w));
        }
        return;
    }
    for (int q = int(gl_GlobalInvocationID.x); q < nq; q += stride)
        for (int i = q * 4; i < q * 4 + 4 && i < p.n; i++)
            y[i] = gelu(x[i]);
}
