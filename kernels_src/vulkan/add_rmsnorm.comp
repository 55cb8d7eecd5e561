// add_rmsnorm.comp: fused residual add and RMS norm (f32), two outputs, as
// add_rmsnorm.cu: h = x + res; y = h / sqrt(mean(h^2) + eps) * w.
// Bindings: 0 x, 1 res, 2 w, 3 h, 4 y.  Push constants: rows, cols, eps.  One workgroup
// per row; dispatch x = up to min(rows, 65535).
// Rows of cols % 4 == 0 and cols <= KJ_BLOCK * 4 * KJ_VPT take the register path (x
// and res read once in 16-byte loads, h written once, y from registers), as
// add_rmsnorm.cu; other rows loop over scalars.
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
layout(local_size_x = KJ_BLOCK) in;
#ifndef KJ_VPT
#define KJ_VPT 8 // vec4s an invocation keeps in registers: rows up to KJ_BLOCK * 4 * KJ_VPT
#endif
#extension GL_EXT_control_flow_attributes : require
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer R { float res[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 3) buffer H { float h[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer R4 { vec4 res4[]; };
layout(std430, set = 0, binding = 2) readonly buffer W4 { vec4 w4[]; };
layout(std430, set = 0, binding = 3) writeonly buffer H4 { vec4 h4[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y4 { vec4 y4[]; };
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

void row_regs(int r, int tid)
{
    int n4 = p.cols / 4, off4 = r * n4;
    vec4 v[KJ_VPT];
    float ss = 0.0;
    [[unroll]] for (int j = 0; j < KJ_VPT; j++) {
        int i = tid + j * KJ_BLOCK;
        v[j] = i < n4 ? x4[off4 + i] + res4[off4 + i] : vec4(0.0);
        ss += dot(v[j], v[j]);
    }
    [[unroll]] for (int j = 0; j < KJ_VPT; j++) {
        int i = tid + j * KJ_BLOCK;
        if (i < n4)
            h4[off4 + i] = v[j];
    }
    float inv = inversesqrt(block_sum(ss) / float(p.cols) + p.eps);
    [[unroll]] for (int j = 0; j < KJ_VPT; j++) {
        int i = tid + j * KJ_BLOCK;
        if (i < n4)
            y4[off4 + i] = v[j] * inv * w4[i];
    }
}

void main()
{
    int tid = int(gl_LocalInvocationID.x);
    if (p.cols % 4 == 0 && p.cols <= KJ_BLOCK * 4 * KJ_VPT) {
        for (int r = int(gl_WorkGroupID.x); r < p.rows; r += int(gl_NumWorkGroups.x))
            row_regs(r, tid);
        return;
    }
    for (int r = int(gl_WorkGroupID.x); r < p.rows; r += int(gl_NumWorkGroups.x)) {
        int off = r * p.cols;
        float ss = 0.0;
        // each invocation re-reads only the h elements it wrote itself
        for (int i = tid; i < p.cols; i += KJ_BLOCK) {
            float t = x[off + i] + res[off + i];
            h[off + i] = t;
            ss += t * t;
        }
        float inv = inversesqrt(block_sum(ss) / float(p.cols) + p.eps);
        for (int i = tid; i < p.cols; i += KJ_BLOCK)
            y[off + i] = h[off + i] * inv * w[i];
    }
}
