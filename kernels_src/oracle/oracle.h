/*
 * oracle.h: CPU reference implementations of every kernel in kernels_src.
 *
 * One function per op, with the same arguments in the same order as the kernel entry
 * point (buffers, then sizes), so a test can feed both from one argument list.  Every
 * function accumulates in double and rounds once to float on store; none allocates,
 * none keeps state.  Layouts are those documented in the kernel sources:
 * row-major, rows x cols; rope [T][H][D] with tables [T][D/2]; attention q/o [H][D],
 * k/v [Hkv][cap][D].  Output buffers must not alias inputs.
 */
#ifndef KJIT_ORACLE_H
#define KJIT_ORACLE_H

#include <stddef.h>
#include <stdint.h>

enum oracle_binop { ORACLE_ADD, ORACLE_SUB, ORACLE_MUL, ORACLE_DIV, ORACLE_MIN, ORACLE_MAX };

/* y[r][c] = a[r][c] op (b_bcast ? b[c] : b[r][c]). */
void oracle_binary(enum oracle_binop op, const float *a, const float *b, float *y, int rows,
                   int cols, int b_bcast);
/* y = x * sigmoid(x) * g over n elements. */
void oracle_silu_gate(const float *x, const float *g, float *y, int n);
/* y = 0.5 x (1 + erf(x / sqrt 2)). */
void oracle_gelu_erf(const float *x, float *y, int n);
/* y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void oracle_gelu_tanh(const float *x, float *y, int n);
/* y = x / sqrt(mean(x^2) + eps) * w per row. */
void oracle_rms_norm(const float *x, const float *w, float *y, int rows, int cols, float eps);
/* y = (x - mean) / sqrt(var + eps) * w + b per row (population variance). */
void oracle_layer_norm(const float *x, const float *w, const float *b, float *y, int rows,
                       int cols, float eps);
/* h = x + res; y = rms_norm(h) * w, with h rounded to float first as the kernel stores it. */
void oracle_add_rmsnorm(const float *x, const float *res, const float *w, float *h, float *y,
                        int rows, int cols, float eps);
/* y = exp(x - max) / sum per row. */
void oracle_softmax(const float *x, float *y, int rows, int cols);
/* Rotary embedding, pairs (i, i + D/2) (neox) or (2i, 2i + 1) (gptj). */
void oracle_rope_neox(const float *x, const float *cs, const float *sn, float *y, int t_count,
                      int heads, int dim);
void oracle_rope_gptj(const float *x, const float *cs, const float *sn, float *y, int t_count,
                      int heads, int dim);
/* y[r] = sum over 32-blocks b of ws[r][b] xs[b] sum_i w[r][i] xq[i]; k % 32 == 0. */
void oracle_matvec_q8(const int8_t *w, const float *ws, const int8_t *xq, const float *xs,
                      float *y, int n, int k);
/* Largest head_dim oracle_attn_decode accepts (it keeps one row of double sums). */
#define ORACLE_ATT_MAX_D 256

/* o[h] = softmax_t(scale q[h].k[kvh][t]) . v[kvh][t], t < kv_len, kvh = h / (H / Hkv).
 * head_dim <= ORACLE_ATT_MAX_D and kv_len >= 1, else o is left untouched.  (The
 * kernel's two scratch buffers after o have no counterpart here.) */
void oracle_attn_decode(const float *q, const float *k, const float *v, float *o, int n_heads,
                        int n_kv_heads, int kv_len, int kv_cap, int head_dim, float scale);
/* C[m][n] = sum_k A[m][k] B[n][k] (C = A B^T: A [M][K], B [N][K], C [M][N]). */
void oracle_gemm(const float *a, const float *b, float *c, int m, int n, int k);
/* Causal prefill attention, grouped-query heads: q, o [T][H][D]; k, v [T][Hkv][D];
 * o[t][h] = softmax_{u <= t}(scale q[t][h].k[u][kvh]) . v[u][kvh], kvh = h / (H / Hkv).
 * Only query rows t with t0 <= t < t1 are computed (the rest of o is untouched), so a
 * test can check a sample of a long sequence.  D <= ORACLE_ATT_MAX_D. */
void oracle_attn_prefill(const float *q, const float *k, const float *v, float *o, int t_count,
                         int n_heads, int n_kv_heads, int head_dim, float scale, int t0, int t1);

#endif
