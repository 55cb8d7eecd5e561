// layer_norm.comp: y = (x - mean) / sqrt(var + eps) * w + b per row (f32), variance
// around the mean, as layer_norm.cu.  Bindings: 0 x, 1 w, 2 b, 3 y.  Push constants:
// rows, cols, eps.  One workgroup per row; dispatch x = up to min(rows, 65535).
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bi { float b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int rows; int cols; float eps; } p;
// Block reductions (whole workgroup, result to every invocation; call from uniform
// control flow).  With -DKJ_SUBGROUP they use subgroup arithmetic and one shared slot
// per subgroup (needs VK_KHR subgroup arithmetic, universal on desktop GPUs); without
// it, a portable shared-memory tree.
#ifdef KJ_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
shared float red[KJ_BLOCK];

float block_sum(float v)
{
#ifdef KJ_SUBGROUP
    v = subgroupAdd(v);
    if (subgroupElect())
        red[gl_SubgroupID] = v;
    barrier();
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++)
        t += red[i];
#else
    uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint s = KJ_BLOCK / 2; s > 0u; s >>= 1) {
        if (tid < s)
            red[tid] += red[tid + s];
        barrier();
    }
    float t = red[0];
#endif
    barrier();
    return t;
}

float block_max(float v)
{
#ifdef KJ_SUBGROUP
    v = subgroupMax(v);
    if (subgroupElect())
        red[gl_SubgroupID] = v;
    barrier();
    float t = red[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++)
        t = max(t, red[i]);
#else
    uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    for (uint s = KJ_BLOCK / 2; s > 0u; s >>= 1) {
        if (tid < s)
            red[tid] = max(red[tid], red[tid + s]);
        barrier();
    }
    float t = red[0];
#endif
    barrier();
    return t;
}

void main()
{
    int tid = int(gl_LocalInvocationID.x);
    for (int r = int(gl_WorkGroupID.x); r < p.rows; r += int(gl_NumWorkGroups.x)) {
        int off = r * p.cols;
        float s = 0.0, ss = 0.0;
        for (int i = tid; i < p.cols; i += KJ_BLOCK)
            s += x[off + i];
        float mean = block_sum(s) / float(p.cols);
        for (int i = tid; i < p.cols; i += KJ_BLOCK)
            ss += (x[off + i] - mean) * (x[off + i] - mean);
        float inv = inversesqrt(block_sum(ss) / float(p.cols) + p.eps);
        for (int i = tid; i < p.cols; i += KJ_BLOCK)
            y[off + i] = (x[off + i] - mean) * inv * w[i] + b[i];
    }
}
