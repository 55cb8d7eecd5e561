// softmax.comp: row-wise stable softmax (f32), as softmax.cu.  Bindings: 0 x, 1 y.
// Push constants: rows, cols.  One workgroup per row; dispatch x = up to min(rows, 65535).
// Rows of cols % 4 == 0 and cols <= KJ_BLOCK * 4 * KJ_VPT take the register path (x
// read once in 16-byte loads, max, sum and output from registers), as softmax.cu;
// other rows loop over scalars (x read three times).
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
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y4 { vec4 y4[]; };
layout(push_constant) uniform P { int rows; int cols; } p;
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
    float m = -3.4e38, s = 0.0;
    [[unroll]] for (int j = 0; j < KJ_VPT; j++) {
        int i = tid + j * KJ_BLOCK;
        v[j] = i < n4 ? x4[off4 + i] : vec4(-3.4e38);
        m = max(m, max(max(v[j].x, v[j].y), max(v[j].z, v[j].w)));
    }
    m = block_max(m);
    [[unroll]] for (int j = 0; j < KJ_VPT; j++) {
        v[j] = exp(v[j] - m); // padding lanes: exp(-huge) = 0
        s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    }
    float inv = 1.0 / block_sum(s);
    [[unroll]] for (int j = 0; j < KJ_VPT; j++) {
        int i = tid + j * KJ_BLOCK;
        if (i < n4)
            y4[off4 + i] = v[j] * inv;
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
        float m = -3.4e38, s = 0.0;
        for (int i = tid; i < p.cols; i += KJ_BLOCK)
            m = max(m, x[off + i]);
        m = block_max(m);
        for (int i = tid; i < p.cols; i += KJ_BLOCK)
            s += exp(x[off + i] - m);
        float inv = 1.0 / block_sum(s);
        for (int i = tid; i < p.cols; i += KJ_BLOCK)
            y[off + i] = exp(x[off + i] - m) * inv;
    }
}
