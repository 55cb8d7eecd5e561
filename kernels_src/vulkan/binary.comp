// binary.comp: elementwise add/sub/mul/div/minimum/maximum (f32) with row-vector
// broadcasting; the operation is chosen at compile time by one of -DKJ_OP_ADD,
// -DKJ_OP_SUB, -DKJ_OP_MUL, -DKJ_OP_DIV, -DKJ_OP_MIN, -DKJ_OP_MAX.
// Bindings (set 0): 0 a, 1 b, 2 y.  Push constants: rows, cols, b_bcast (b is one row of
// cols when b_bcast != 0).  Dispatch: x = ceil(ceil(cols/4) / KJ_BLOCK), y = up to
// min(rows, 65535) (rows strided); each invocation owns four consecutive columns,
// exactly as binary.cu.  When cols % 4 == 0 the four columns move as one vec4 (16-byte
// loads and stores, coalesced across the subgroup: what reaches the copy bandwidth);
// otherwise as four scalars.
#version 450
#ifndef KJ_BLOCK
#define KJ_BLOCK 256
#endif
layout(local_size_x = KJ_BLOCK) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int rows; int cols; int b_bcast; } p;
layout(std430, set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y4 { vec4 y4[]; };

float op(float u, float v)
{
#if defined(KJ_OP_ADD)
    return u + v;
#elif defined(KJ_OP_SUB)
    return u - v;
#elif defined(KJ_OP_MUL)
    return u * v;
#elif defined(KJ_OP_DIV)
    return u / v;
#elif defined(KJ_OP_MIN)
    return min(u, v);
#elif defined(KJ_OP_MAX)
    return max(u, v);
#else
#error "define one of KJ_OP_ADD/SUB/MUL/DIV/MIN/MAX"
#endif
}

void main()
{
    int c0 = int(gl_GlobalInvocationID.x) * 4;
    if (c0 >= p.cols)
        return;
    if (p.cols % 4 == 0) {
        int q = c0 / 4, n4 = p.cols / 4;
        for (int r = int(gl_WorkGroupID.y); r < p.rows; r += int(gl_NumWorkGroups.y)) {
            vec4 u = a4[r * n4 + q], v = b4[(p.b_bcast != 0 ? 0 : r * n4) + q];
            y4[r * n4 + q] = vec4(op(u.x, v.x), op(u.y, v.y), op(u.z, v.z), op(u.w, v.w));
        }
        return;
    }
    for (int r = int(gl_WorkGroupID.y); r < p.rows; r += int(gl_NumWorkGroups.y)) {
        int off = r * p.cols;
        int boff = p.b_bcast != 0 ? 0 : off;
        for (int c = c0; c < c0 + 4 && c < p.cols; c++)
            y[off + c] = op(a[off + c], b[boff + c]);
    }
}
