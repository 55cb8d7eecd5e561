/*
 * oracle.c: CPU reference implementations of the kernels in kernels_src (see oracle.h).
 *
 * Straightforward loops in double precision, written for obviousness rather than speed:
 * the tests compare GPU results against these.  Inputs are floats (what the GPU sees);
 * every intermediate is a double; each output is rounded to float once.
 */
#include "oracle.h"

#include <math.h>

void oracle_binary(enum oracle_binop op, const float *a, const float *b, float *y, int rows,
                   int cols, int b_bcast)
{
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c;
            double u = a[i], v = b_bcast ? b[c] : b[i], z = 0.0;
            switch (op) {
            case ORACLE_ADD: z = u + v; break;
            case ORACLE_SUB: z = u - v; break;
            case ORACLE_MUL: z = u * v; break;
            case ORACLE_DIV: z = u / v; break;
            case ORACLE_MIN: z = u < v ? u : v; break;
            case ORACLE_MAX: z = u > v ? u : v; break;
            }
            y[i] = (float)z;
        }
    }
}

void oracle_silu_gate(const float *x, const float *g, float *y, int n)
{
    for (int i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(v / (1.0 + exp(-v)) * g[i]);
    }
}

void oracle_gelu_erf(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(0.5 * v * erfc(-v / sqrt(2.0)));
    }
}

void oracle_gelu_tanh(const float *x, float *y, int n)
{
    const double k = sqrt(2.0 / 3.14159265358979323846);
    for (int i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
    }
}

void oracle_rms_norm(const float *x, const float *w, float *y, int rows, int cols, float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        double ss = 0.0;
        for (int c = 0; c < cols; c++)
            ss += (double)xr[c] * xr[c];
        double inv = 1.0 / sqrt(ss / cols + eps);
        for (int c = 0; c < cols; c++)
            y[(size_t)r * cols + c] = (float)(xr[c] * inv * w[c]);
    }
}

void oracle_layer_norm(const float *x, const float *w, const float *b, float *y, int rows,
                       int cols, float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        double s = 0.0, ss = 0.0;
        for (int c = 0; c < cols; c++)
            s += xr[c];
        double mean = s / cols;
        for (int c = 0; c < cols; c++)
            ss += (xr[c] - mean) * (xr[c] - mean);
        double inv = 1.0 / sqrt(ss / cols + eps);
        for (int c = 0; c < cols; c++)
            y[(size_t)r * cols + c] = (float)((xr[c] - mean) * inv * w[c] + b[c]);
    }
}

void oracle_add_rmsnorm(const float *x, const float *res, const float *w, float *h, float *y,
                        int rows, int cols, float eps)
{
    size_t n = (size_t)rows * cols;
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((double)x[i] + res[i]);
    oracle_rms_norm(h, w, y, rows, cols, eps);
}

void oracle_softmax(const float *x, float *y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        double m = xr[0], s = 0.0;
        for (int c = 1; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int c = 0; c < cols; c++)
            s += exp(xr[c] - m);
        for (int c = 0; c < cols; c++)
            y[(size_t)r * cols + c] = (float)(exp(xr[c] - m) / s);
    }
}

static void rope(const float *x, const float *cs, const float *sn, float *y, int t_count,
                 int heads, int dim, int neox)
{
    int half = dim / 2;
    for (int t = 0; t < t_count; t++) {
        for (int h = 0; h < heads; h++) {
            size_t base = ((size_t)t * heads + h) * dim;
            for (int i = 0; i < half; i++) {
                size_t ia = base + (neox ? (size_t)i : 2 * (size_t)i);
                size_t ib = ia + (neox ? (size_t)half : 1);
                double c = cs[(size_t)t * half + i], s = sn[(size_t)t * half + i];
                double xa = x[ia], xb = x[ib];
                y[ia] = (float)(xa * c - xb * s);
                y[ib] = (float)(xb * c + xa * s);
            }
        }
    }
}

void oracle_rope_neox(const float *x, const float *cs, const float *sn, float *y, int t_count,
                      int heads, int dim)
{
    rope(x, cs, sn, y, t_count, heads, dim, 1);
}

void oracle_rope_gptj(const float *x, const float *cs, const float *sn, float *y, int t_count,
                      int heads, int dim)
{
    rope(x, cs, sn, y, t_count, heads, dim, 0);
}

void oracle_matvec_q8(const int8_t *w, const float *ws, const int8_t *xq, const float *xs,
                      float *y, int n, int k)
{
    int nb = k / 32;
    for (int r = 0; r < n; r++) {
        double acc = 0.0;
        for (int b = 0; b < nb; b++) {
            long d = 0;
            for (int i = b * 32; i < b * 32 + 32; i++)
                d += (long)w[(size_t)r * k + i] * xq[i];
            acc += (double)d * ws[(size_t)r * nb + b] * xs[b];
        }
        y[r] = (float)acc;
    }
}

static double attn_score(const float *qh, const float *kt, int head_dim, float scale)
{
    double s = 0.0;
    for (int d = 0; d < head_dim; d++)
        s += (double)qh[d] * kt[d];
    return s * scale;
}

void oracle_attn_decode(const float *q, const float *k, const float *v, float *o, int n_heads,
                        int n_kv_heads, int kv_len, int kv_cap, int head_dim, float scale)
{
    int group = n_heads / n_kv_heads;
    double acc[ORACLE_ATT_MAX_D];

    if (head_dim > ORACLE_ATT_MAX_D || kv_len < 1 || group < 1)
        return;
    for (int h = 0; h < n_heads; h++) {
        const float *qh = q + (size_t)h * head_dim;
        const float *kh = k + (size_t)(h / group) * kv_cap * head_dim;
        const float *vh = v + (size_t)(h / group) * kv_cap * head_dim;
        double m = -INFINITY, l = 0.0;
        for (int t = 0; t < kv_len; t++) {
            double s = attn_score(qh, kh + (size_t)t * head_dim, head_dim, scale);
            m = s > m ? s : m;
        }
        for (int d = 0; d < head_dim; d++)
            acc[d] = 0.0;
        for (int t = 0; t < kv_len; t++) {
            double e = exp(attn_score(qh, kh + (size_t)t * head_dim, head_dim, scale) - m);
            l += e;
            for (int d = 0; d < head_dim; d++)
                acc[d] += e * vh[(size_t)t * head_dim + d];
        }
        for (int d = 0; d < head_dim; d++)
            o[(size_t)h * head_dim + d] = (float)(acc[d] / l);
    }
}

void oracle_gemm(const float *a, const float *b, float *c, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            const float *ar = a + (size_t)i * k, *br = b + (size_t)j * k;
            double s = 0.0;
            for (int p = 0; p < k; p++)
                s += (double)ar[p] * br[p];
            c[(size_t)i * n + j] = (float)s;
        }
}

void oracle_attn_prefill(const float *q, const float *k, const float *v, float *o, int t_count,
                         int n_heads, int n_kv_heads, int head_dim, float scale, int t0, int t1)
{
    const int group = n_kv_heads > 0 ? n_heads / n_kv_heads : 0, D = head_dim;
    double acc[ORACLE_ATT_MAX_D];

    if (D > ORACLE_ATT_MAX_D || group < 1)
        return;
    for (int t = t0 < 0 ? 0 : t0; t < t1 && t < t_count; t++)
        for (int h = 0; h < n_heads; h++) {
            const float *qh = q + ((size_t)t * n_heads + h) * D;
            const size_t kvs = (size_t)n_kv_heads * D, kvo = (size_t)(h / group) * D;
            double m = -INFINITY, l = 0.0;
            for (int u = 0; u <= t; u++) {
                double s = attn_score(qh, k + u * kvs + kvo, D, scale);
                m = s > m ? s : m;
            }
            for (int d = 0; d < D; d++)
                acc[d] = 0.0;
            for (int u = 0; u <= t; u++) {
                double e = exp(attn_score(qh, k + u * kvs + kvo, D, scale) - m);
                l += e;
                for (int d = 0; d < D; d++)
                    acc[d] += e * v[u * kvs + kvo + d];
            }
            for (int d = 0; d < D; d++)
                o[((size_t)t * n_heads + h) * D + d] = (float)(acc[d] / l);
        }
}
