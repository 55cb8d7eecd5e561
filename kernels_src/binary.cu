/*
 * binary.cu: elementwise add, sub, mul, div, minimum, maximum (f32), with optional
 * broadcasting of a row vector.
 *
 *   y[r][c] = a[r][c] OP b'[r][c],  b' = b[c] when b_bcast != 0 (b holds one row of
 *   `cols`), else b[r][c].  a, b, y are rows x cols, row-major, 16-byte aligned.
 * Launch: block KJ_BLOCK; grid.x = ceil(ceil(cols/4) / KJ_BLOCK), grid.y = any count
 * up to rows (rows are strided by gridDim.y).  Each thread owns four consecutive
 * columns: one float4 per operand when cols % 4 == 0, four scalars otherwise.
 * y may alias a or b.
 */
#include "kjit_prelude.h"

struct op_add { KJ_DEV float f(float p, float q) { return p + q; } };
struct op_sub { KJ_DEV float f(float p, float q) { return p - q; } };
struct op_mul { KJ_DEV float f(float p, float q) { return p * q; } };
struct op_div { KJ_DEV float f(float p, float q) { return p / q; } };
struct op_min { KJ_DEV float f(float p, float q) { return fminf(p, q); } };
struct op_max { KJ_DEV float f(float p, float q) { return fmaxf(p, q); } };

template <class Op>
KJ_DEV void binary_rows(const float *a, const float *b, float *y, int rows, int cols, int b_bcast)
{
    const int q = (int)(blockIdx.x * blockDim.x + threadIdx.x); /* column quad */
    if (q * 4 >= cols)
        return;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const kj_size off = (kj_size)r * cols;
        const float *br = b_bcast ? b : b + off;
        if ((cols & 3) == 0) {
            const float4 va = kj_ld4(a + off, q), vb = kj_ld4(br, q);
            kj_st4(y + off, q,
                   make_float4(Op::f(va.x, vb.x), Op::f(va.y, vb.y), Op::f(va.z, vb.z), Op::f(va.w, vb.w)));
        } else {
            for (int c = q * 4; c < q * 4 + 4 && c < cols; c++)
                y[off + c] = Op::f(a[off + c], br[c]);
        }
    }
}

#define KJ_BINARY_ENTRY(name, op)                                                          \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK)                                 \
        name(const float *a, const float *b, float *y, int rows, int cols, int b_bcast)    \
    {                                                                                      \
        binary_rows<op>(a, b, y, rows, cols, b_bcast);                                     \
    }

KJ_BINARY_ENTRY(add_f32, op_add)
KJ_BINARY_ENTRY(sub_f32, op_sub)
KJ_BINARY_ENTRY(mul_f32, op_mul)
KJ_BINARY_ENTRY(div_f32, op_div)
KJ_BINARY_ENTRY(minimum_f32, op_min)
KJ_BINARY_ENTRY(maximum_f32, op_max)
