// silu_gate.comp: y = x * sigmoid(x) * g over n floats (f32), as silu_gate.cu.
// Bindings: 0 x, 1 g, 2 y.  Push constants: n.  Dispatch: x = up to
// min(ceil(ceil(n/4)/KJ_BLOCK), 65535) (grid-stride over quads of four elements).  When
// n % 4 == 0 each quad moves as one vec4 (16-byte loads and stores).
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer G { float g[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int n; } p;
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer G4 { vec4 g4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y4 { vec4 y4[]; };

void main()
{
    int nq = (p.n + 3) / 4;
    int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    if (p.n % 4 == 0) {
        for (int q = int(gl_GlobalInvocationID.x); q < nq; q += stride) {
            vec4 v = x4[q];
            y4[q] = v / (1.0 + exp(-v)) * g4[q];
        }
        return;
    }
    for (int q = int(gl_GlobalInvocationID.x); q < nq; q += stride)
        for (int i = q * 4; i < q * 4 + 4 && i < p.n; i++)
            y[i] = x[i] / (1.0 + exp(-x[i])) * g[i];
}
