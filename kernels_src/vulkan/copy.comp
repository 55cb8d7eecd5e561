// copy.comp: y = x over n4 vec4s (16-byte loads and stores, grid-stride), the shader
// copy that `vulkan_launch --bench --copy-spv` measures as the bandwidth floor of the
// memory-bound kernels beside vkCmdCopyBuffer (which NVIDIA runs on a copy engine at
// about a third of what the SMs reach).  A benchmark tool, not a bundled kernel: it has
// no MANIFEST line (scripts/gpu-run.sh compiles it with `kjit get --source`).
// Bindings: 0 x, 1 y.  Push constants: n4.  Dispatch x = min(ceil(n4 / KJ_BLOCK), 65535).
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer X { vec4 x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { vec4 y[]; };
layout(push_constant) uniform P { int n4; } p;

void main()
{
    int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int q = int(gl_GlobalInvocationID.x); q < p.n4; q += stride)
        y[q] = x[q];
}
