/*
 * kcase.c: the manifest parser and per-op test cases (see kcase.h).
 *
 * Inputs come from a splitmix64 generator seeded per case, so every run of every runner
 * sees the same numbers.  Values are kept away from zero (|v| >= 0.05) and divisors
 * away from zero (|v| >= 0.5), so relative errors are meaningful.  Each case owns its
 * buffers; kcase_free releases them all.
 */
#define _POSIX_C_SOURCE 200809L
#include "kcase.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels_src/oracle/oracle.h"

#define KCASE_EPS 1e-5f
#define KCASE_MANIFEST_LINE 1024

/* ---- manifest ---------------------------------------------------------------------- */

static int parse_line(char *line, struct kmanifest_entry *e, char *err, size_t errlen, int lineno)
{
    char *tok[4 + KCASE_MAX_OPTS + 1], *save = NULL, *t;
    int n = 0;

    for (t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == (int)(sizeof tok / sizeof tok[0])) {
            snprintf(err, errlen, "MANIFEST line %d: too many options", lineno);
            return -1;
        }
        tok[n++] = t;
    }
    if (n < 4) {
        snprintf(err, errlen, "MANIFEST line %d: need NAME BACKEND FILE ENTRY", lineno);
        return -1;
    }
    memset(e, 0, sizeof *e);
    for (const char *p = tok[0]; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')) {
            snprintf(err, errlen, "MANIFEST line %d: bad name %s", lineno, tok[0]);
            return -1;
        }
    if (strcmp(tok[1], "hip") && strcmp(tok[1], "cuda") && strcmp(tok[1], "vulkan")) {
        snprintf(err, errlen, "MANIFEST line %d: bad backend %s", lineno, tok[1]);
        return -1;
    }
    if (strlen(tok[0]) >= sizeof e->name || strlen(tok[2]) >= sizeof e->file ||
        strlen(tok[3]) >= sizeof e->entries) {
        snprintf(err, errlen, "MANIFEST line %d: field too long", lineno);
        return -1;
    }
    strcpy(e->name, tok[0]);
    strcpy(e->backend, tok[1]);
    strcpy(e->file, tok[2]);
    strcpy(e->entries, tok[3]);
    for (int i = 4; i < n; i++) {
        if (strlen(tok[i]) >= sizeof e->opts[0]) {
            snprintf(err, errlen, "MANIFEST line %d: option too long", lineno);
            return -1;
        }
        strcpy(e->opts[e->nopts++], tok[i]);
        if (!strncmp(tok[i], "-DKJ_BLOCK=", 11))
            e->block = (unsigned)strtoul(tok[i] + 11, NULL, 10);
    }
    return 0;
}

int kmanifest_load(const char *path, struct kmanifest_entry **out, int *count, char *err,
                   size_t errlen)
{
    FILE *f = fopen(path, "r");
    struct kmanifest_entry *v = NULL, *nv;
    char line[KCASE_MANIFEST_LINE];
    int n = 0, cap = 0, lineno = 0, r = -1;

    if (!f) {
        snprintf(err, errlen, "cannot open manifest %s", path);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        lineno++;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '#' || *p == '\0')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            if (!(nv = realloc(v, (size_t)cap * sizeof *v))) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            v = nv;
        }
        if (parse_line(p, &v[n], err, errlen, lineno) != 0)
            goto out;
        n++;
    }
    *out = v;
    *count = n;
    v = NULL;
    r = 0;
out:
    free(v);
    fclose(f);
    return r;
}

const struct kmanifest_entry *kmanifest_find(const struct kmanifest_entry *e, int count,
                                             const char *name, const char *backend)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(e[i].name, name) && !strcmp(e[i].backend, backend))
            return &e[i];
    return NULL;
}

/* ---- 16-bit storage ---------------------------------------------------------------- */

static uint16_t f32_to_f16(float f) /* round to nearest even */
{
    uint32_t x, sign, mant, h, rem, halfway;
    int32_t e;
    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000u;
    mant = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    e = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal half */
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        h = mant >> shift;
        rem = mant & ((1u << shift) - 1);
        halfway = 1u << (shift - 1);
    } else {
        h = ((uint32_t)e << 10) | (mant >> 13);
        rem = mant & 0x1fffu;
        halfway = 0x1000u;
    }
    if (rem > halfway || (rem == halfway && (h & 1u)))
        h++; /* a carry into the exponent is the correct result */
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                       : ldexpf((float)(m | 0x400u), (int)e - 25);
    return (h & 0x8000u) ? -v : v;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float round16(int half, float v)
{
    return half == 1 ? f16_to_f32(f32_to_f16(v)) : half == 2 ? bf16_to_f32(f32_to_bf16(v)) : v;
}

/* Replace buffer b's floats by 2-byte elements of type `half`; returns 0 or -2. */
static int to16(struct kcase_buf *b, int half)
{
    uint16_t *h = malloc(b->count ? b->count * 2 : 2);
    const float *f = b->host;
    if (!h)
        return -2;
    for (size_t i = 0; i < b->count; i++)
        h[i] = half == 1 ? f32_to_f16(f[i]) : f32_to_bf16(f[i]);
    free(b->host);
    b->host = h;
    b->bytes = b->count * 2;
    b->half = half;
    b->poison32 = half == 1 ? 0x7e007e00u : 0x7fc07fc0u;
    return 0;
}

/* ---- inputs ------------------------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi) with |v| >= floor (sign kept). */
static float rnd(uint64_t *s, float lo, float hi, float floor_abs)
{
    float v = lo + (hi - lo) * (float)((splitmix(s) >> 40) * (1.0 / 16777216.0));
    if (fabsf(v) < floor_abs)
        v = v < 0 ? -floor_abs : floor_abs;
    return v;
}

static float *add_buf(struct kcase *c, size_t count, size_t elem, int is_output, size_t row_len)
{
    struct kcase_buf *b = &c->bufs[c->nbufs];
    b->bytes = count * elem;
    b->count = count;
    b->poison32 = 0x7fc00000u;
    b->host = malloc(b->bytes ? b->bytes : 1);
    b->is_output = is_output;
    b->row_len = row_len ? row_len : count;
    if (is_output)
        b->ref = malloc(b->bytes ? b->bytes : 1);
    if (!b->host || (is_output && !b->ref))
        return NULL;
    c->nbufs++;
    c->bytes_moved += (double)b->bytes;
    return b->host;
}

/* The magnitude array for output buffer i (allocated on first use). */
static float *mag_of(struct kcase *c, int i)
{
    struct kcase_buf *b = &c->bufs[i];
    if (!b->mag)
        b->mag = calloc(b->count ? b->count : 1, sizeof(float));
    return b->mag;
}

static float *fill(struct kcase *c, size_t count, uint64_t *s, float lo, float hi, float floor_abs)
{
    float *p = add_buf(c, count, sizeof(float), 0, 0);
    if (p)
        for (size_t i = 0; i < count; i++)
            p[i] = round16(c->half, rnd(s, lo, hi, floor_abs));
    return p;
}

static void push_i(struct kcase *c, int v) { memcpy(&c->scalars[c->nscalars++], &v, 4); }
static void push_f(struct kcase *c, float v) { memcpy(&c->scalars[c->nscalars++], &v, 4); }

/* ---- cases ------------------------------------------------------------------------- */

static const struct {
    const char *name;
    enum oracle_binop op;
} binops[] = {
    {"add_f32", ORACLE_ADD}, {"sub_f32", ORACLE_SUB},     {"mul_f32", ORACLE_MUL},
    {"div_f32", ORACLE_DIV}, {"minimum_f32", ORACLE_MIN}, {"maximum_f32", ORACLE_MAX},
};

static int is_binary(const char *name)
{
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
        if (!strcmp(name, binops[i].name))
            return 1;
    return 0;
}

static int build_binary(struct kcase *c, enum oracle_binop op, const struct kcase_dims *d, uint64_t *s)
{
    size_t n = (size_t)d->rows * d->cols;
    float *a = fill(c, n, s, -2.f, 2.f, 0.05f);
    float *b = fill(c, d->bcast ? (size_t)d->cols : n, s, -2.f, 2.f, op == ORACLE_DIV ? 0.5f : 0.05f);
    float *y = add_buf(c, n, 4, 1, (size_t)d->cols);
    if (!a || !b || !y)
        return -2;
    oracle_binary(op, a, b, c->bufs[2].ref, d->rows, d->cols, d->bcast);
    if (op == ORACLE_ADD || op == ORACLE_SUB) {
        float *mag = mag_of(c, 2);
        if (!mag)
            return -2;
        for (size_t i = 0; i < n; i++)
            mag[i] = fabsf(a[i]) + fabsf(b[d->bcast ? i % (size_t)d->cols : i]);
    }
    push_i(c, d->rows), push_i(c, d->cols), push_i(c, d->bcast);
    c->geom = KCASE_GEOM_COLQUADS;
    c->items = (uint64_t)d->cols, c->rows = (uint64_t)d->rows;
    return 0;
}

static int build_unary(struct kcase *c, const char *op, const struct kcase_dims *d, uint64_t *s)
{
    size_t n = (size_t)d->rows * d->cols;
    int gated = !strcmp(op, "silu_gate_f32");
    float *x = fill(c, n, s, -6.f, 6.f, 0.05f), *g = gated ? fill(c, n, s, -2.f, 2.f, 0.05f) : x;
    float *y = add_buf(c, n, 4, 1, (size_t)d->cols);
    if (!x || !g || !y)
        return -2;
    float *ref = c->bufs[c->nbufs - 1].ref;
    if (gated)
        oracle_silu_gate(x, g, ref, (int)n);
    else if (!strcmp(op, "gelu_erf_f32"))
        oracle_gelu_erf(x, ref, (int)n);
    else
        oracle_gelu_tanh(x, ref, (int)n);
    push_i(c, (int)n);
    c->geom = KCASE_GEOM_QUADS;
    /* 16-bit silu_gate takes 8 elements a thread (one 16-byte vector): half the quads */
    c->items = c->half && gated ? (n + 1) / 2 : n, c->rows = 1;
    return 0;
}

static int build_rows(struct kcase *c, const char *op, const struct kcase_dims *d, uint64_t *s)
{
    size_t n = (size_t)d->rows * d->cols, cols = (size_t)d->cols;
    c->geom = KCASE_GEOM_ROWS;
    c->items = 1, c->rows = (uint64_t)d->rows;
    if (!strcmp(op, "softmax_f32")) {
        float *x = fill(c, n, s, -8.f, 8.f, 0.05f), *y = add_buf(c, n, 4, 1, cols);
        if (!x || !y)
            return -2;
        oracle_softmax(x, c->bufs[1].ref, d->rows, d->cols);
        push_i(c, d->rows), push_i(c, d->cols);
        return 0;
    }
    if (!strcmp(op, "rms_norm_f32")) {
        float *x = fill(c, n, s, -2.f, 2.f, 0.05f), *w = fill(c, cols, s, 0.5f, 1.5f, 0.05f);
        float *y = add_buf(c, n, 4, 1, cols);
        if (!x || !w || !y)
            return -2;
        oracle_rms_norm(x, w, c->bufs[2].ref, d->rows, d->cols, KCASE_EPS);
    } else if (!strcmp(op, "layer_norm_f32")) {
        float *x = fill(c, n, s, -1.f, 3.f, 0.05f), *w = fill(c, cols, s, 0.5f, 1.5f, 0.05f);
        float *b = fill(c, cols, s, -0.5f, 0.5f, 0.05f), *y = add_buf(c, n, 4, 1, cols);
        if (!x || !w || !b || !y)
            return -2;
        oracle_layer_norm(x, w, b, c->bufs[3].ref, d->rows, d->cols, KCASE_EPS);
        float *mag = mag_of(c, 3);
        if (!mag)
            return -2;
        /* terms: x inv w, mean inv w (they cancel in x - mean), b */
        for (int r = 0; r < d->rows; r++) {
            const float *xr = x + (size_t)r * cols;
            double s1 = 0, s2 = 0, mean, inv;
            for (size_t j = 0; j < cols; j++)
                s1 += xr[j];
            mean = s1 / (double)cols;
            for (size_t j = 0; j < cols; j++)
                s2 += (xr[j] - mean) * (xr[j] - mean);
            inv = 1.0 / sqrt(s2 / (double)cols + KCASE_EPS);
            for (size_t j = 0; j < cols; j++)
                mag[(size_t)r * cols + j] =
                    (float)((fabs(xr[j]) + fabs(mean)) * inv * fabs(w[j]) + fabs(b[j]));
        }
    } else {
        float *x = fill(c, n, s, -2.f, 2.f, 0.05f), *r = fill(c, n, s, -2.f, 2.f, 0.05f);
        float *w = fill(c, cols, s, 0.5f, 1.5f, 0.05f);
        float *h = add_buf(c, n, 4, 1, cols), *y = h ? add_buf(c, n, 4, 1, cols) : NULL;
        if (!x || !r || !w || !h || !y)
            return -2;
        oracle_add_rmsnorm(x, r, w, c->bufs[3].ref, c->bufs[4].ref, d->rows, d->cols, KCASE_EPS);
    }
    push_i(c, d->rows), push_i(c, d->cols), push_f(c, KCASE_EPS);
    return 0;
}

static int build_rope(struct kcase *c, int neox, const struct kcase_dims *d, uint64_t *s)
{
    int t_count = d->rows, half = d->head_dim / 2;
    size_t n = (size_t)t_count * d->heads * d->head_dim, nt = (size_t)t_count * half;
    if (d->head_dim % 2 || d->heads < 1)
        return -1;
    float *x = fill(c, n, s, -2.f, 2.f, 0.05f);
    float *cs = add_buf(c, nt, 4, 0, 0), *sn = cs ? add_buf(c, nt, 4, 0, 0) : NULL;
    float *y = sn ? add_buf(c, n, 4, 1, (size_t)d->head_dim) : NULL;
    if (!x || !cs || !sn || !y)
        return -2;
    for (int t = 0; t < t_count; t++)
        for (int i = 0; i < half; i++) {
            double ang = (t + 3) * pow(10000.0, -2.0 * i / d->head_dim);
            cs[(size_t)t * half + i] = (float)cos(ang);
            sn[(size_t)t * half + i] = (float)sin(ang);
        }
    (neox ? oracle_rope_neox : oracle_rope_gptj)(x, cs, sn, c->bufs[3].ref, t_count, d->heads,
                                                 d->head_dim);
    float *mag = mag_of(c, 3);
    if (!mag)
        return -2;
    for (size_t p = 0; p < n / 2; p++) {
        size_t th = p / (size_t)half, i = p % (size_t)half, t = th / (size_t)d->heads;
        size_t ia = th * (size_t)d->head_dim + (neox ? i : 2 * i), ib = ia + (neox ? (size_t)half : 1);
        float cv = fabsf(cs[t * half + i]), sv = fabsf(sn[t * half + i]);
        mag[ia] = fabsf(x[ia]) * cv + fabsf(x[ib]) * sv;
        mag[ib] = fabsf(x[ib]) * cv + fabsf(x[ia]) * sv;
    }
    push_i(c, t_count), push_i(c, d->heads), push_i(c, d->head_dim);
    c->geom = KCASE_GEOM_QUADS; /* one thread per four pairs */
    c->items = n / 2, c->rows = 1;
    return 0;
}

static int build_matvec(struct kcase *c, const struct kcase_dims *d, uint64_t *s)
{
    int n = d->rows, k = d->cols, nb = k / 32;
    if (k % 32 || n < 1)
        return -1;
    int8_t *w = (int8_t *)add_buf(c, (size_t)n * k, 1, 0, 0);
    float *ws = w ? fill(c, (size_t)n * nb, s, 0.001f, 0.02f, 0.001f) : NULL;
    int8_t *xq = ws ? (int8_t *)add_buf(c, (size_t)k, 1, 0, 0) : NULL;
    float *xs = xq ? fill(c, (size_t)nb, s, 0.001f, 0.02f, 0.001f) : NULL;
    float *y = xs ? add_buf(c, (size_t)n, 4, 1, (size_t)n) : NULL;
    if (!y)
        return -2;
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = (int8_t)((int)(splitmix(s) % 255) - 127);
    for (int i = 0; i < k; i++)
        xq[i] = (int8_t)((int)(splitmix(s) % 255) - 127);
    oracle_matvec_q8(w, ws, xq, xs, c->bufs[4].ref, n, k);
    {
        int8_t *aw = malloc((size_t)n * k), *ax = malloc((size_t)k);
        float *mag = mag_of(c, 4);
        if (!aw || !ax || !mag) {
            free(aw);
            free(ax);
            return -2;
        }
        for (size_t i = 0; i < (size_t)n * k; i++)
            aw[i] = (int8_t)abs(w[i]);
        for (int i = 0; i < k; i++)
            ax[i] = (int8_t)abs(xq[i]);
        oracle_matvec_q8(aw, ws, ax, xs, mag, n, k);
        free(aw);
        free(ax);
    }
    push_i(c, n), push_i(c, k);
    c->geom = KCASE_GEOM_WARPROWS;
    c->items = 1, c->rows = (uint64_t)n;
    return 0;
}

/* KV splits for attn_decode_f32 on CUDA/HIP: about KCASE_ATT_KEYS_PER_SPLIT keys per
 * block (half as many for D > 128: the same bytes), at most KCASE_ATT_MAX_SPLITS
 * blocks per head, and, where the launcher knows the device's slots (d->slots: SMs x
 * blocks an SM), at most the largest power of two with Hkv x S <= slots: one wave.
 * On the H100 (132 SMs, 2 blocks an SM) at Hkv = 8 that is S = 32 for 128: 96% of copy
 * against 85-89% at D = 256 and 128 (S = 33, the full 264 slots: 94-95%; S = 66: 90-93%;
 * S = 49, 99, 132: 85-89%), and at batch 16 (Hkv = 128) S = 2 for 8: 95-96% against
 * 88-90% (bench/gpu-h100-d256.log): fewer, longer blocks and no partial wave. */
#define KCASE_ATT_KEYS_PER_SPLIT 512
#define KCASE_ATT_MAX_SPLITS 128

static int att_splits(const struct kcase_dims *d)
{
    const int kps = d->head_dim > 128 ? KCASE_ATT_KEYS_PER_SPLIT / 2 : KCASE_ATT_KEYS_PER_SPLIT;
    int S = (d->kv_len + kps - 1) / kps, cap = 1;
    if (d->splits > 0) /* the launcher's --splits */
        return d->splits;
    S = S > KCASE_ATT_MAX_SPLITS ? KCASE_ATT_MAX_SPLITS : S;
    if (d->slots > 0) {
        while (2 * cap * d->kv_heads <= d->slots)
            cap *= 2;
        S = S > cap ? cap : S;
    }
    return S;
}

static int build_attn(struct kcase *c, const struct kcase_dims *d, uint64_t *s, int max_d)
{
    int H = d->heads, Hkv = d->kv_heads, D = d->head_dim, L = d->kv_len, cap = L + 5;
    if (Hkv < 1 || H % Hkv || D > ORACLE_ATT_MAX_D || D > max_d || L < 1)
        return -1;
    const int S = att_splits(d);
    size_t nkv = (size_t)Hkv * cap * D, nws = (size_t)H * S * (D + 2);
    float *q = fill(c, (size_t)H * D, s, -1.f, 1.f, 0.05f);
    float *k = fill(c, nkv, s, -1.f, 1.f, 0.05f), *v = fill(c, nkv, s, -1.f, 1.f, 0.05f);
    float *o = add_buf(c, (size_t)H * D, 4, 1, (size_t)D);
    float *ws = o ? add_buf(c, nws, 4, 0, 0) : NULL;           /* scratch */
    /* zeroed; 2 * H >= 2 * Hkv: the dynamic split's chunk counters too (KJ_ATT_DS) */
    uint32_t *cnt = ws ? (uint32_t *)add_buf(c, (size_t)2 * H, 4, 0, 0) : NULL;
    if (!q || !k || !v || !o || !ws || !cnt)
        return -2;
    memset(ws, 0, nws * 4);
    memset(cnt, 0, (size_t)2 * H * 4);
    float scale = (float)(1.0 / sqrt((double)D)) * 2.f; /* sharper than usual: a real max */
    oracle_attn_decode(q, k, v, c->bufs[3].ref, H, Hkv, L, cap, D, scale);
    {
        float *av = malloc(nkv * sizeof(float)), *mag = mag_of(c, 3);
        if (!av || !mag) {
            free(av);
            return -2;
        }
        for (size_t i = 0; i < nkv; i++)
            av[i] = fabsf(v[i]);
        oracle_attn_decode(q, k, av, mag, H, Hkv, L, cap, D, scale);
        free(av);
    }
    push_i(c, H), push_i(c, Hkv), push_i(c, L), push_i(c, cap), push_i(c, D), push_f(c, scale);
    /* the kernel reads only the valid part of the cache and not the scratch */
    c->bytes_moved -= 2.0 * (double)Hkv * (cap - L) * D * 4 + (double)nws * 4 + (double)H * 4;
    c->geom = KCASE_GEOM_HEADS;
    c->items = (uint64_t)S, c->rows = (uint64_t)H, c->kv_heads = (uint64_t)Hkv;
    return 0;
}

/* Rows [0, m) of a product or attention whose exact answer costs more than about this
 * many multiply-adds are checked on a sample only (kcase.h: NaN in ref = unchecked). */
#define KCASE_ORACLE_BUDGET 1500000000.0

/* gemm_sm90.cu: GM9_SMEM_BYTES (4 stages of a 128 x 64 and a 256 x 64 tile of halves,
 * 1 KB to align them, the barriers) */
#define KCASE_GEMM9_SMEM (4 * (128 + 256) * 64 * 2 + 1024 + 256)

/* sm90: the gemm_sm90_* variant (128 x 256 tiles, tensor maps over A and B) */
static int build_gemm(struct kcase *c, const struct kcase_dims *d, uint64_t *s, int sm90)
{
    const int M = d->rows, N = d->cols, K = d->inner;
    if (M < 1 || N < 1 || K < 1)
        return -1;
    float *a = fill(c, (size_t)M * K, s, -1.f, 1.f, 0.05f);
    float *b = a ? fill(c, (size_t)N * K, s, -1.f, 1.f, 0.05f) : NULL;
    float *y = b ? add_buf(c, (size_t)M * N, 4, 1, (size_t)N) : NULL;
    float *ref = y ? c->bufs[2].ref : NULL, *mag = y ? mag_of(c, 2) : NULL;
    float *aa = malloc((size_t)K * sizeof(float)), *ab = malloc((size_t)N * K * sizeof(float));
    int r = -2;
    if (!y || !mag || !aa || !ab)
        goto out;
    for (size_t i = 0; i < (size_t)N * K; i++)
        ab[i] = fabsf(b[i]);
    /* every row when affordable, else an even sample including the first and last */
    const double per_row = 2.0 * N * K;
    int step = per_row * M <= KCASE_ORACLE_BUDGET ? 1 : (int)ceil(per_row * M / KCASE_ORACLE_BUDGET);
    for (size_t i = 0; i < (size_t)M * N; i++)
        ref[i] = NAN;
    for (int i = 0; i < M; i += step) {
        const int row = i + step >= M ? M - 1 : i;
        oracle_gemm(a + (size_t)row * K, b, ref + (size_t)row * N, 1, N, K);
        for (int p = 0; p < K; p++)
            aa[p] = fabsf(a[(size_t)row * K + p]);
        oracle_gemm(aa, ab, mag + (size_t)row * N, 1, N, K);
    }
    push_i(c, M), push_i(c, N), push_i(c, K);
    c->geom = KCASE_GEOM_TILES;
    c->tile = 128, c->items = (uint64_t)N, c->rows = ((uint64_t)M + 127) / 128;
    c->vk_x = ((uint64_t)M * N + 2 * 64 - 1) / (2 * 64), c->vk_y = 1; /* 2 elements/invocation */
    c->flops = 2.0 * M * N * K;
    c->tc_smem = 3 * 2 * 128 * 64 * 2; /* gemm.cu: GM_STAGES x {A, B} x GM_BM x GM_BK halves */
    if (sm90) {
        if (K % 8) { /* the tensor maps' row stride must be a multiple of 16 bytes */
            r = -1;
            goto out;
        }
        c->tile = 256, c->tc_smem = KCASE_GEMM9_SMEM, c->ntmaps = 2;
        c->tmaps[0] = (struct kcase_tmap){0, (uint64_t)K, (uint64_t)M, 64, 128};
        c->tmaps[1] = (struct kcase_tmap){1, (uint64_t)K, (uint64_t)N, 64, 256};
    }
    r = 0;
out:
    free(aa);
    free(ab);
    return r;
}

/* Query rows of a prefill case the oracle computes: all, or windows at the start,
 * middle and end when the sequence is long. */
#define KCASE_PF_WINDOW 8

/* attn_prefill_sm90.cu: PF9_SMEM_BYTES (Q and 2 stages of K and V, 128-row tiles at
 * D = 128, 1 KB to align them, the barriers) */
#define KCASE_PF9_SMEM ((1 + 2 * 2) * 128 * 128 * 2 + 1024 + 256)

/* sm90: the attn_prefill_sm90_* variant (128-row tiles, tensor maps over q, k and v) */
static int build_prefill(struct kcase *c, const struct kcase_dims *d, uint64_t *s, int sm90)
{
    const int T = d->rows, H = d->heads, Hkv = d->kv_heads, D = d->head_dim;
    if (T < 1 || Hkv < 1 || H % Hkv || D > ORACLE_ATT_MAX_D || D < 1)
        return -1;
    if (sm90 && D != 64 && D != 128)
        return -1;
    const size_t nq = (size_t)T * H * D, nkv = (size_t)T * Hkv * D;
    float *q = fill(c, nq, s, -1.f, 1.f, 0.05f);
    float *k = q ? fill(c, nkv, s, -1.f, 1.f, 0.05f) : NULL;
    float *v = k ? fill(c, nkv, s, -1.f, 1.f, 0.05f) : NULL;
    float *o = v ? add_buf(c, nq, 4, 1, (size_t)D) : NULL;
    float *av = o ? malloc(nkv * sizeof(float)) : NULL, *mag = av ? mag_of(c, 3) : NULL;
    float *ref = o ? c->bufs[3].ref : NULL;
    const float scale = (float)(1.0 / sqrt((double)D)) * 2.f; /* sharper than usual */
    if (!mag) {
        free(av);
        return -2;
    }
    for (size_t i = 0; i < nkv; i++)
        av[i] = fabsf(v[i]);
    const double work = 2.0 * H * D * (double)T * (T + 1) / 2;
    if (work <= KCASE_ORACLE_BUDGET) {
        oracle_attn_prefill(q, k, v, ref, T, H, Hkv, D, scale, 0, T);
        oracle_attn_prefill(q, k, av, mag, T, H, Hkv, D, scale, 0, T);
    } else {
        const int w0[3] = {0, T / 2, T - KCASE_PF_WINDOW};
        for (size_t i = 0; i < nq; i++)
            ref[i] = NAN;
        for (int i = 0; i < 3; i++) {
            oracle_attn_prefill(q, k, v, ref, T, H, Hkv, D, scale, w0[i], w0[i] + KCASE_PF_WINDOW);
            oracle_attn_prefill(q, k, av, mag, T, H, Hkv, D, scale, w0[i], w0[i] + KCASE_PF_WINDOW);
        }
    }
    free(av);
    /* P is rounded to the input type before P.V (as in every flash attention), then the
     * output: two roundings of the type, so twice its tolerance */
    c->tol *= 2;
    push_i(c, T), push_i(c, H), push_i(c, Hkv), push_i(c, D), push_f(c, scale);
    c->geom = KCASE_GEOM_TILES;
    c->tile = 64, c->items = (uint64_t)T, c->rows = (uint64_t)H; /* 64 queries x 1 head */
    c->vk_x = (uint64_t)T, c->vk_y = (uint64_t)H;              /* one query row x head */
    c->flops = 4.0 * H * D * (double)T * (T + 1) / 2; /* causal: q.k and p.v */
    if (sm90) { /* boxes of 64 halves x 128 rows over [T][H * D] and [T][Hkv * D] */
        c->tile = 128, c->tc_smem = KCASE_PF9_SMEM, c->ntmaps = 3;
        c->tmaps[0] = (struct kcase_tmap){0, (uint64_t)H * D, (uint64_t)T, 64, 128};
        c->tmaps[1] = (struct kcase_tmap){1, (uint64_t)Hkv * D, (uint64_t)T, 64, 128};
        c->tmaps[2] = (struct kcase_tmap){2, (uint64_t)Hkv * D, (uint64_t)T, 64, 128};
    }
    return 0;
}

int kcase_build(struct kcase *c, const char *name, const struct kcase_dims *d, uint64_t seed)
{
    char op[KCASE_NAME_MAX];
    const char *sg = strstr(name, "_sg_");
    uint64_t s = seed;
    int r = -1;

    size_t nl = strlen(name);
    int half = 0;

    memset(c, 0, sizeof *c);
    if (nl >= sizeof op - 2 || d->rows < 1 || d->cols < 1)
        return -1;
    const char *s9 = strstr(name, "_sm90_");
    const int sm90 = s9 && (!strncmp(name, "gemm_", 5) || !strncmp(name, "attn_prefill_", 13));
    if (sg) /* rms_norm_sg_f32 -> rms_norm_f32 */
        snprintf(op, sizeof op, "%.*s%s", (int)(sg - name), name, sg + 3);
    else if (sm90) /* gemm_sm90_f16 -> gemm_f16, attn_prefill_sm90_bf16 -> attn_prefill_bf16 */
        snprintf(op, sizeof op, "%.*s%s", (int)(s9 - name), name, s9 + 5);
    else
        strcpy(op, name);
    if (nl > 4 && !strcmp(op + strlen(op) - 4, "_f16"))
        half = 1;
    else if (nl > 5 && !strcmp(op + strlen(op) - 5, "_bf16"))
        half = 2;
    if (half) { /* add_bf16 -> add_f32 with 16-bit inputs */
        snprintf(op + strlen(op) - (half == 1 ? 4 : 5), 8, "_f32");
        if (!is_binary(op) && strcmp(op, "silu_gate_f32") && strcmp(op, "rms_norm_f32") &&
            strcmp(op, "layer_norm_f32") && strcmp(op, "gemm_f32") && strcmp(op, "attn_prefill_f32"))
            return -1;
    }
    c->half = half;
    c->tol = half == 1 ? 1e-3 : half == 2 ? 8e-3 : 1e-5;
    snprintf(c->op, sizeof c->op, "%s", name);
    snprintf(c->shape, sizeof c->shape, "%dx%d", d->rows, d->cols);
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
        if (!strcmp(op, binops[i].name)) {
            r = build_binary(c, binops[i].op, d, &s);
            snprintf(c->shape, sizeof c->shape, "%dx%d%s", d->rows, d->cols, d->bcast ? " bcast" : "");
        }
    if (!strcmp(op, "silu_gate_f32") || !strcmp(op, "gelu_erf_f32") || !strcmp(op, "gelu_tanh_f32"))
        r = build_unary(c, op, d, &s);
    else if (!strcmp(op, "rms_norm_f32") || !strcmp(op, "layer_norm_f32") ||
             !strcmp(op, "add_rmsnorm_f32") || !strcmp(op, "softmax_f32"))
        r = build_rows(c, op, d, &s);
    else if (!strcmp(op, "rope_neox_f32") || !strcmp(op, "rope_gptj_f32")) {
        r = build_rope(c, !strcmp(op, "rope_neox_f32"), d, &s);
        snprintf(c->shape, sizeof c->shape, "T=%d H=%d D=%d", d->rows, d->heads, d->head_dim);
    } else if (!strcmp(op, "matvec_q8") || !strcmp(op, "matvec_q8_dp4"))
        r = build_matvec(c, d, &s);
    else if (!strcmp(op, "attn_decode_f32") || !strcmp(op, "attn_decode_d256_f32")) {
        r = build_attn(c, d, &s, strstr(op, "_d256") ? 256 : 128);
        snprintf(c->shape, sizeof c->shape, "H=%d Hkv=%d D=%d L=%d", d->heads, d->kv_heads,
                 d->head_dim, d->kv_len);
    } else if (!strcmp(op, "gemm_f32")) {
        r = build_gemm(c, d, &s, sm90);
        snprintf(c->shape, sizeof c->shape, "M=%d N=%d K=%d", d->rows, d->cols, d->inner);
    } else if (!strcmp(op, "attn_prefill_f32")) {
        r = build_prefill(c, d, &s, sm90);
        snprintf(c->shape, sizeof c->shape, "T=%d H=%d Hkv=%d D=%d", d->rows, d->heads,
                 d->kv_heads, d->head_dim);
    }
    for (int i = 0; r == 0 && half && i < c->nbufs; i++)
        r = to16(&c->bufs[i], half);
    if (half)
        c->bytes_moved /= 2;
    if (r != 0)
        kcase_free(c);
    return r;
}

void kcase_free(struct kcase *c)
{
    if (!c)
        return;
    for (int i = 0; i < KCASE_MAX_BUFS; i++) {
        free(c->bufs[i].host);
        free(c->bufs[i].ref);
        free(c->bufs[i].mag);
        c->bufs[i].host = NULL;
        c->bufs[i].ref = NULL;
        c->bufs[i].mag = NULL;
    }
    c->nbufs = 0;
}

void kcase_poison(struct kcase *c)
{
    for (int i = 0; i < c->nbufs; i++) {
        struct kcase_buf *b = &c->bufs[i];
        if (!b->is_output)
            continue;
        for (size_t j = 0; j < b->count; j++) {
            if (b->half)
                ((uint16_t *)b->host)[j] = (uint16_t)b->poison32;
            else
                ((float *)b->host)[j] = NAN;
        }
    }
}

int kcase_test_shapes(const char *name, struct kcase_dims *d, int max)
{
    static const struct kcase_dims rowsh[] = {
        {7, 1000, 0, 0, 0, 0, 0, 0, 0, 0}, {33, 1024, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 4099, 0, 0, 0, 0, 0, 0, 0, 0},
        {4, 8192, 0, 0, 0, 0, 0, 0, 0, 0}, {2, 12288, 0, 0, 0, 0, 0, 0, 0, 0}};
    static const struct kcase_dims binsh[] = {
        {7, 1003, 0, 0, 0, 0, 0, 0, 0, 0}, {33, 1024, 1, 0, 0, 0, 0, 0, 0, 0}, {5, 517, 1, 0, 0, 0, 0, 0, 0, 0},
        {3, 8192, 0, 0, 0, 0, 0, 0, 0, 0}};
    static const struct kcase_dims ropesh[] = {
        {5, 1, 0, 4, 0, 64, 0, 0, 0, 0}, {3, 1, 0, 2, 0, 128, 0, 0, 0, 0}, {2, 1, 0, 3, 0, 80, 0, 0, 0, 0},
        {3, 1, 0, 5, 0, 84, 0, 0, 0, 0}};
    static const struct kcase_dims mvsh[] = {
        {37, 1024, 0, 0, 0, 0, 0, 0, 0, 0}, {256, 4096, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 32, 0, 0, 0, 0, 0, 0, 0, 0}};
    static const struct kcase_dims attsh[] = {
        {1, 1, 0, 8, 2, 128, 300, 0, 0, 0}, {1, 1, 0, 4, 4, 64, 1, 0, 0, 0}, {1, 1, 0, 8, 1, 80, 1000, 0, 0, 0},
        {1, 1, 0, 2, 1, 256, 77, 0, 0, 0}, {1, 1, 0, 6, 3, 128, 5000, 0, 0, 0},
        {1, 1, 0, 10, 2, 66, 700, 0, 0, 0}}; /* 5 heads a group: two passes; D % 4 != 0 */
    static const struct kcase_dims gemmsh[] = { /* M, N, K: ragged, exact, odd N, K % 8 */
        {37, 45, 0, 0, 0, 0, 0, 29, 0, 0}, {128, 128, 0, 0, 0, 0, 0, 64, 0, 0}, {200, 130, 0, 0, 0, 0, 0, 72, 0, 0},
        {64, 257, 0, 0, 0, 0, 0, 520, 0, 0}, {1, 33, 0, 0, 0, 0, 0, 8, 0, 0}, {300, 260, 0, 0, 0, 0, 0, 1000, 0, 0}};
    static const struct kcase_dims gemm9sh[] = { /* K % 8 == 0; whole 128 x 256 tiles too */
        {128, 128, 0, 0, 0, 0, 0, 64, 0, 0}, {200, 130, 0, 0, 0, 0, 0, 72, 0, 0}, {64, 257, 0, 0, 0, 0, 0, 520, 0, 0},
        {1, 33, 0, 0, 0, 0, 0, 8, 0, 0}, {300, 260, 0, 0, 0, 0, 0, 1000, 0, 0}, {256, 512, 0, 0, 0, 0, 0, 776, 0, 0}};
    static const struct kcase_dims pfsh[] = { /* T, H, Hkv, D */
        {37, 1, 0, 4, 2, 64, 0, 0, 0, 0}, {130, 1, 0, 8, 2, 128, 0, 0, 0, 0}, {1, 1, 0, 2, 1, 64, 0, 0, 0, 0},
        {200, 1, 0, 3, 1, 128, 0, 0, 0, 0}, {64, 1, 0, 4, 4, 64, 0, 0, 0, 0},
        {384, 1, 0, 4, 2, 64, 0, 0, 0, 0}, {300, 1, 0, 2, 1, 128, 0, 0, 0, 0}}; /* 3 tiles of 128 */
    const struct kcase_dims *src = rowsh;
    int n = (int)(sizeof rowsh / sizeof rowsh[0]);
    char f32name[KCASE_NAME_MAX];
    size_t nl = strlen(name);

    /* add_bf16 is checked at the shapes of add_f32 */
    if (nl > 5 && !strcmp(name + nl - 5, "_bf16"))
        snprintf(f32name, sizeof f32name, "%.*s_f32", (int)(nl - 5), name);
    else if (nl > 4 && !strcmp(name + nl - 4, "_f16"))
        snprintf(f32name, sizeof f32name, "%.*s_f32", (int)(nl - 4), name);
    else
        snprintf(f32name, sizeof f32name, "%s", name);
    if (is_binary(f32name))
        src = binsh, n = (int)(sizeof binsh / sizeof binsh[0]);
    else if (!strncmp(name, "rope_", 5))
        src = ropesh, n = (int)(sizeof ropesh / sizeof ropesh[0]);
    else if (!strcmp(name, "matvec_q8") || !strcmp(name, "matvec_q8_dp4"))
        src = mvsh, n = (int)(sizeof mvsh / sizeof mvsh[0]);
    else if (!strncmp(name, "attn_decode", 11))
        src = attsh, n = (int)(sizeof attsh / sizeof attsh[0]);
    else if (!strncmp(name, "gemm_sm90_", 10))
        src = gemm9sh, n = (int)(sizeof gemm9sh / sizeof gemm9sh[0]);
    else if (!strncmp(name, "gemm_", 5))
        src = gemmsh, n = (int)(sizeof gemmsh / sizeof gemmsh[0]);
    else if (!strncmp(name, "attn_prefill", 12))
        src = pfsh, n = (int)(sizeof pfsh / sizeof pfsh[0]);
    int out = 0;
    for (int i = 0; i < n && out < max; i++) /* attn_decode_f32 is built for D <= 128 */
        if (strcmp(name, "attn_decode_f32") || src[i].head_dim <= 128)
            d[out++] = src[i];
    return out;
}

void kcase_bench_dims(const char *name, int rows, int cols, struct kcase_dims *d)
{
    memset(d, 0, sizeof *d);
    d->rows = rows;
    d->cols = cols;
    if (!strncmp(name, "rope_", 5)) {
        d->head_dim = 128;
        d->heads = cols / 128 > 0 ? cols / 128 : 1;
    } else if (!strncmp(name, "attn_decode", 11)) { /* the D <= 256 entry at D = 256 */
        d->heads = 32;
        d->kv_heads = 8;
        d->head_dim = strstr(name, "_d256") ? 256 : 128;
        d->kv_len = (int)((long long)rows * cols / (2 * 8 * d->head_dim));
        if (d->kv_len < 1)
            d->kv_len = 1;
    } else if (!strncmp(name, "gemm_", 5)) {
        d->rows = d->cols = d->inner = 4096;
    } else if (!strncmp(name, "attn_prefill", 12)) {
        d->rows = 4096, d->cols = 1, d->heads = 32, d->kv_heads = 8, d->head_dim = 128;
    }
}

int kcase_bench_shapes(const char *name, int rows, int cols, struct kcase_dims *d, int max)
{
    int n = 0;
    if (max < 1)
        return 0;
    kcase_bench_dims(name, rows, cols, &d[n++]);
    if (!strncmp(name, "attn_decode", 11) && n < max) { /* batch 16 of L = 4096 (same bytes) */
        d[n] = d[0];
        d[n].heads = 16 * 32, d[n].kv_heads = 16 * 8, d[n].kv_len = 4096 * 128 / d[0].head_dim;
        n++;
    }
    if (!strncmp(name, "attn_decode_d256", 16) && n < max) { /* and at D = 128, half idle */
        d[n] = d[0];
        d[n].head_dim = 128, d[n].kv_len = 2 * d[0].kv_len;
        n++;
    }
    if (!strncmp(name, "gemm_", 5) && n < max) {
        d[n] = d[0];
        d[n].rows = d[n].cols = d[n].inner = 8192;
        n++;
    }
    if (!strncmp(name, "attn_prefill", 12) && n < max) {
        d[n] = d[0];
        d[n].head_dim = 64;
        n++;
    }
    return n;
}

const char *kcase_variant(const char *name, const char *backend, const char *arch,
                          const struct kcase_dims *d, char *why, size_t n)
{
    int sm = 0, tc;
    if (!strncmp(name, "attn_decode", 11)) {
        const int g = d->kv_heads > 0 ? d->heads / d->kv_heads : 0;
        const char *pick = d->head_dim <= 128 ? "attn_decode_f32" : "attn_decode_d256_f32";
        snprintf(why, n, "%s: head_dim %d %s 128%s; %s: %d query heads per KV head from one "
                 "read of K/V", pick, d->head_dim, d->head_dim <= 128 ? "<=" : ">",
                 d->head_dim <= 128 ? " (16 lanes a key; the D <= 256 entry would idle half)" : "",
                 strcmp(backend, "vulkan") ? "grid KV heads x splits" : "one workgroup a head", g);
        return pick;
    }
    if (strncmp(name, "gemm_", 5) && strncmp(name, "attn_prefill", 12))
        return NULL;
    if (!strcmp(backend, "cuda") && !strncmp(arch, "sm_", 3))
        sm = atoi(arch + 3);
    if (!strncmp(name, "attn_prefill", 12) && (sm == 90 || strstr(name, "_sm90_"))) {
        const char *pick = kcase_launch_variant(name, backend, arch, d);
        pick = pick ? pick : name;
        if (strstr(pick, "_sm90_")) {
            snprintf(why, n, "%s: wgmma m64n128k16 (S = Q K^T) and m64n%dk16 (O += P V, P from "
                     "registers) on TMA-loaded 128-key tiles, producer warp and 2 consumer "
                     "warpgroups, causal tiles skipped (%s)", pick, d->head_dim,
                     sm != 90 ? "needs sm_90a: plain dot products here"
                              : "device sm_90, compiled for sm_90a; D is 64 or 128");
            return pick;
        }
        snprintf(why, n, "%s: tensor-core path, mma.sync m16n8k16 (device sm_90, but D = %d: "
                 "the sm_90a variant takes D = 64 or 128)", name, d->head_dim);
        return name;
    }
    if (!strncmp(name, "gemm_", 5) && (sm == 90 || !strncmp(name, "gemm_sm90_", 10))) {
        const char *pick = kcase_launch_variant(name, backend, arch, d);
        pick = pick ? pick : name;
        if (!strncmp(pick, "gemm_sm90_", 10)) {
            snprintf(why, n, "%s: wgmma m64n256k16 from TMA-loaded 128-byte-swizzled tiles, "
                     "128 x 256 a block (%s)", pick, sm != 90 ? "needs sm_90a: plain dot products here"
                     : "device sm_90, compiled for sm_90a; K % 8 == 0: 16-byte tensor-map rows");
            return pick;
        }
        if (sm == 90) {
            snprintf(why, n, "%s: tensor-core path, mma.sync m16n8k16 (device sm_90, but K %% 8 "
                     "!= 0: the sm_90a variant's tensor maps need 16-byte rows); plain tile loads", name);
            return name;
        }
    }
    tc = sm >= 80;
    snprintf(why, n, "%s: %s (%s)%s", name,
             tc ? "tensor-core path, mma.sync m16n8k16" : "plain path, f32 multiply-adds",
             tc ? "CUDA sm_80 or newer" : !strcmp(backend, "cuda") ? "CUDA older than sm_80"
                                                                    : "no mma.sync on this backend",
             !strncmp(name, "gemm_", 5) && tc ? d->inner % 8 == 0 ? "; K % 8 == 0: cp.async tile loads"
                                                                  : "; K % 8 != 0: plain tile loads"
                                              : "");
    return name;
}

const char *kcase_launch_variant(const char *name, const char *backend, const char *arch,
                                 const struct kcase_dims *d)
{
    if (strcmp(backend, "cuda") || strncmp(arch, "sm_90", 5))
        return NULL;
    if (!strcmp(name, "attn_prefill_f16") || !strcmp(name, "attn_prefill_bf16")) {
        if (d->head_dim != 64 && d->head_dim != 128)
            return NULL;
        return !strcmp(name, "attn_prefill_f16") ? "attn_prefill_sm90_f16" : "attn_prefill_sm90_bf16";
    }
    if (d->inner % 8 != 0)
        return NULL;
    if (!strcmp(name, "gemm_f16"))
        return "gemm_sm90_f16";
    if (!strcmp(name, "gemm_bf16"))
        return "gemm_sm90_bf16";
    return NULL;
}

int kcase_target(const char *name, const char *backend, const char *arch, char *out, size_t n)
{
    if ((!strncmp(name, "gemm_sm90_", 10) || !strncmp(name, "attn_prefill_sm90_", 18)) &&
        !strcmp(backend, "cuda")) {
        if (strcmp(arch, "sm_90") && strcmp(arch, "sm_90a"))
            return -1;
        snprintf(out, n, "sm_90a");
        return 0;
    }
    snprintf(out, n, "%s", arch);
    return 0;
}

uint32_t kcase_dyn_smem(const struct kcase *c, const char *backend, const char *arch)
{
    if (strcmp(backend, "cuda") || strncmp(arch, "sm_", 3) || atoi(arch + 3) < 80)
        return 0;
    if (c->ntmaps && atoi(arch + 3) != 90) /* gemm_sm90_*: plain path off sm_90a */
        return 0;
    return c->tc_smem;
}

static uint32_t cap32(uint64_t v, uint32_t max)
{
    if (v < 1)
        return 1;
    return v > max ? max : (uint32_t)v;
}

void kcase_grid(const struct kcase *c, unsigned block, int vulkan, uint32_t max_x, uint32_t max_y,
                uint32_t grid[2])
{
    uint64_t b = block ? block : 1;
    grid[1] = 1;
    switch (c->geom) {
    case KCASE_GEOM_COLQUADS:
        grid[0] = cap32(((c->items + 3) / 4 + b - 1) / b, max_x);
        grid[1] = cap32(c->rows, max_y);
        break;
    case KCASE_GEOM_QUADS:
        grid[0] = cap32(((c->items + 3) / 4 + b - 1) / b, max_x);
        break;
    case KCASE_GEOM_ITEMS:
        grid[0] = cap32((c->items + b - 1) / b, max_x);
        break;
    case KCASE_GEOM_WARPROWS:
        /* CUDA/HIP: one 32-lane warp per 4 rows (matvec_q8.cu, KJ_MV_ROWS) */
        grid[0] = cap32(vulkan ? c->rows : ((c->rows + 3) / 4 + b / 32 - 1) / (b / 32), max_x);
        break;
    case KCASE_GEOM_ROWS:
        grid[0] = cap32(c->rows, max_x);
        break;
    case KCASE_GEOM_TILES:
        grid[0] = cap32(vulkan ? c->vk_x : (c->items + c->tile - 1) / (c->tile ? c->tile : 1), max_x);
        grid[1] = cap32(vulkan ? c->vk_y : c->rows, max_y);
        break;
    case KCASE_GEOM_HEADS: /* x: KV heads, y: KV splits (Vulkan: query heads, no split) */
        grid[0] = cap32(vulkan ? c->rows : c->kv_heads, max_x);
        grid[1] = vulkan ? 1 : cap32(c->items, max_y);
        break;
    }
}

double kcase_max_rel_err(const struct kcase *c, int i)
{
    const struct kcase_buf *b = &c->bufs[i];
    size_t n = b->count, rl = b->row_len ? b->row_len : n;
    double worst = 0.0;

    for (size_t r0 = 0; r0 < n; r0 += rl) {
        double rowmax = 0.0;
        for (size_t j = r0; j < r0 + rl && j < n; j++)
            if (!isnan(b->ref[j]))
                rowmax = fmax(rowmax, fabs((double)b->ref[j]));
        for (size_t j = r0; j < r0 + rl && j < n; j++) {
            double ref = b->ref[j];
            if (isnan(ref)) /* not checked (see kcase.h) */
                continue;
            double g = b->half == 1   ? f16_to_f32(((const uint16_t *)b->host)[j])
                       : b->half == 2 ? bf16_to_f32(((const uint16_t *)b->host)[j])
                                      : ((const float *)b->host)[j];
            if (!isfinite(g))
                return INFINITY;
            double den = fmax(fmax(fabs(ref), b->mag ? (double)b->mag[j] : 0.0), 1e-3 * rowmax);
            double e = den > 0 ? fabs(g - ref) / den : fabs(g - ref);
            worst = fmax(worst, e);
        }
    }
    return worst;
}
