/*
 * binary.cu: elementwise add, sub, mul, div, minimum, maximum, with optional
 * broadcasting of a row vector; entries NAME_f32, NAME_f16 and NAME_bf16 (16-bit
 * storage, f32 arithmetic, one rounding on store).
 *
 *   y[r][c] = a[r][c] OP b'[r][c],  b' = b[c] when b_bcast != 0 (b holds one row of
 *   `cols`), else b[r][c].  a, b, y are rows x cols, row-major, 16-byte aligned.
 * Launch: block KJ_BLOCK; grid.x = ceil(ceil(cols/4) / KJ_BLOCK), grid.y = any count
 * up to rows (rows are strided by gridDim.y).  Each thread owns four consecutive
 * columns: one 4-vector per operand when cols % 4 == 0, four scalars otherwise.
 * y may alias a or b.
 */
#include "kjit_prelude.h"

struct op_add { KJ_DEV float f(float p, float q) { return p + q; } };
struct op_sub { KJ_DEV float f(float p, float q) { return p - q; } };
struct op_mul { KJ_DEV float f(float p, float q) { return p * q; } };
struct op_div { KJ_DEV float f(float p, float q) { return p / q; } };
struct op_min { KJ_DEV float f(float p, float q) { return fminf(p, q); } };
struct op_max { KJ_DEV float f(float p, float q) { return fmaxf(p, q); } };

template <class Op, class S>
KJ_DEV void binary_rows(const typename S::T *a, const typename S::T *b, typename S::T *y, int rows,
                        int cols, int b_bcast)
{
    const int q = (int)(blockIdx.x * blockDim.x + threadIdx.x); /* column quad */
    if (q * 4 >= cols)
        return;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const kj_size off = (kj_size)r * cols;
        const typename S::T *br = b_bcast ? b : b + off;
        if ((cols & 3) == 0) {
            const float4 va = S::ld4(a + off, q), vb = S::ld4(br, q);
            S::st4(y + off, q,
                   make_float4(Op::f(va.x, vb.x), Op::f(va.y, vb.y), Op::f(va.z, vb.z), Op::f(va.w, vb.w)));
        } else {
            for (int c = q * 4; c < q * 4 + 4 && c < cols; c++)
                S::st(y, off + c, Op::f(S::ld(a, off + c), S::ld(br, c)));
        }
    }
}

#define KJ_BINARY_ENTRY(name, op, S)                                                       \
    extern "C" __global__ void __launch_bounds__(KJ_BLOCK)                                 \
        name(const S::T *a, const S::T *b, S::T *y, int rows, int cols, int b_bcast)       \
    {                                                                                      \
        binary_rows<op, S>(a, b, y, rows, cols, b_bcast);                                  \
    }

#define KJ_BINARY_TYPES(op, fn)                                                            \
    KJ_BINARY_ENTRY(op##_f32, fn, kj_s_f32)                                                \
    KJ_BINARY_ENTRY(op##_f16, fn, kj_s_f16)                                                \
    KJ_BINARY_ENTRY(op##_bf16, fn, kj_s_bf16)

KJ_BINARY_TYPES(add, op_add)
KJ_BINARY_TYPES(sub, op_sub)
KJ_BINARY_TYPES(mul, op_mul)
KJ_BINARY_TYPES(div, op_div)
KJ_BINARY_TYPES(minimum, op_min)
KJ_BINARY_TYPES(maximum, op_max)
