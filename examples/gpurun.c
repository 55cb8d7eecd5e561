/*
 * gpurun.c: check and benchmark every bundled op through a struct gpu_api (gpurun.h).
 *
 * Each op must match the oracle within its case's tolerance (kcase.h: 1e-5 for f32,
 * the type's rounding for f16/bf16).  Check mode runs each op at the shapes of tests/kernels (odd sizes, broadcasting, GQA,
 * rows too long for the register path) plus one large shape; bench mode runs each op
 * once at rows x cols (default 16384 x 8192 f32), checks it against the oracle, then
 * times `runs` rounds of `iters` launches with device events and reports the median
 * round with the fastest and slowest round beside it (one round's figure moved by 5%
 * between runs before), the bytes each
 * launch must move (every input read once, every output written once) as GB/s, and that
 * as a fraction of the device-to-device copy bandwidth measured in the same run.
 * Device buffers of one case are allocated and freed around it (one exit, goto out).
 */
#define _POSIX_C_SOURCE 200809L
#include "gpurun.h"
#include "kjit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../kernels_src/oracle/oracle.h"
#include "../tests/kernels/kcase.h"

#define GPURUN_SEED 0x6b6a6974ull
#define GPURUN_MAX_GRID_X 0x7fffffffu
#define GPURUN_MAX_GRID_Y 65535u
#define GPURUN_WARMUP 3
#define GPURUN_MAX_ITERS 1000
#define GPURUN_MAX_RUNS 20 /* timing rounds per op in bench mode */

struct tally {
    int passed, failed;
};

static int usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--op NAME[,NAME...]] [--bench] [--rows R] [--cols C] [--iters N]\n"
            "          [--runs N] [--slots N] [--splits N] [--smem BYTES]\n"
            "          [--manifest FILE] [PATH]\n"
            "  without PATH: every op of the manifest (or --op), each fetched from kjitd\n"
            "        through libkjit for this device's target, as an application would\n"
            "  PATH  a code object (the op is --op, or the file name up to its first '.'),\n"
            "        or a directory of NAME.ARCH.EXT objects for every op of the manifest\n"
            "        (tests/kernels/test-kernels-compile.sh writes one with KJIT_OBJ_DIR=DIR)\n"
            "  default: check every op against the CPU oracle; --bench: also time each op at\n"
            "  R x C (default 16384 x 8192) next to a device-to-device copy: N rounds (default\n"
            "  5) of `iters` launches each, reported as the median round and the range\n"
            "  --slots N: take N as the blocks the device runs at once (decode attention's\n"
            "        split rule) instead of asking the driver, to measure other split counts\n"
            "  --splits N: N KV splits for decode attention instead of the split rule\n"
            "  --smem BYTES: dynamic shared memory for every launch instead of the op's own\n"
            "        (a kernel variant that stages in it, e.g. attn_decode's KJ_ATT_DYN)\n",
            prog);
    return 2;
}

int gpurun_parse_args(int argc, char **argv, struct gpurun_opts *o, const char *backend)
{
    memset(o, 0, sizeof *o);
    o->manifest = "kernels_src/MANIFEST";
    o->backend = backend;
    o->rows = 16384;
    o->cols = 8192;
    o->iters = 20;
    o->runs = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--bench"))
            o->bench = 1;
        else if (!strcmp(a, "--op") && v)
            o->op = argv[++i];
        else if (!strcmp(a, "--manifest") && v)
            o->manifest = argv[++i];
        else if (!strcmp(a, "--rows") && v)
            o->rows = atoi(argv[++i]);
        else if (!strcmp(a, "--cols") && v)
            o->cols = atoi(argv[++i]);
        else if (!strcmp(a, "--iters") && v)
            o->iters = atoi(argv[++i]);
        else if (!strcmp(a, "--runs") && v)
            o->runs = atoi(argv[++i]);
        else if (!strcmp(a, "--slots") && v)
            o->slots = atoi(argv[++i]);
        else if (!strcmp(a, "--splits") && v)
            o->splits = atoi(argv[++i]);
        else if (!strcmp(a, "--smem") && v)
            o->smem = atoi(argv[++i]);
        else if (a[0] != '-' && !o->path)
            o->path = a;
        else
            return usage(argv[0]);
    }
    if (o->rows < 1 || o->cols < 1 || o->iters < 1 || o->iters > GPURUN_MAX_ITERS ||
        o->runs < 1 || o->runs > GPURUN_MAX_RUNS || o->slots < 0 || o->splits < 0 || o->smem < 0 ||
        o->smem > 227 * 1024)
        return usage(argv[0]);
    return 0;
}

static void *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n))) {
        if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
            *len = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

#define API(call)                                                                          \
    do {                                                                                   \
        int st_ = (call);                                                                  \
        if (st_ != 0) {                                                                    \
            fprintf(stderr, "%s: %s failed: %s\n", api->name, #call, api->errstr(api->ctx, st_)); \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* `runs` rounds, each the median of `iters` timed launches of fn over case c (already
 * uploaded to dev), sorted ascending into ms[0..runs-1]: min, median and max of the
 * rounds show how far one round's figure can be trusted. */
static int time_case(struct gpu_api *api, void *fn, const uint32_t grid[2], unsigned block,
                     unsigned smem, void **params, int iters, int runs, double *ms)
{
    float t[GPURUN_MAX_ITERS];
    int r = -1;

    for (int i = 0; i < GPURUN_WARMUP; i++)
        API(api->launch(api->ctx, fn, grid, block, smem, params));
    API(api->sync(api->ctx));
    for (int k = 0; k < runs; k++) {
        for (int i = 0; i < iters; i++) {
            API(api->timer_start(api->ctx));
            API(api->launch(api->ctx, fn, grid, block, smem, params));
            API(api->timer_stop(api->ctx, &t[i]));
        }
        qsort(t, (size_t)iters, sizeof t[0], cmp_float);
        ms[k] = t[iters / 2];
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
    r = 0;
out:
    return r;
}

/* Run case c with fn (`smem` bytes of dynamic shared memory, kcase_dyn_smem); *err =
 * worst max-rel-error over the outputs; if iters > 0 also ms[0..runs-1] (see time_case). */
static int run_case(struct gpu_api *api, void *fn, struct kcase *c, unsigned block,
                    unsigned smem, int iters, int runs, double *err, double *ms)
{
    uint64_t dev[KCASE_MAX_BUFS] = {0};
    void *params[KCASE_MAX_BUFS + KCASE_MAX_SCALARS + KCASE_MAX_TMAPS];
    _Alignas(64) unsigned char maps[KCASE_MAX_TMAPS][128]; /* CUtensorMap, by value */
    uint32_t grid[2];
    int r = -1, np = 0;

    for (int i = 0; i < c->nbufs; i++) {
        const size_t words = (c->bufs[i].bytes + 3) / 4; /* 2-byte types: round up */
        API(api->alloc(api->ctx, &dev[i], words * 4));
        if (c->bufs[i].is_output) /* every element NaN, so an unwritten one fails */
            API(api->fill32(api->ctx, dev[i], c->bufs[i].poison32, words));
        else
            API(api->htod(api->ctx, dev[i], c->bufs[i].host, c->bufs[i].bytes));
        params[np++] = &dev[i];
    }
    for (int i = 0; i < c->nscalars; i++)
        params[np++] = &c->scalars[i];
    for (int i = 0; i < c->ntmaps; i++) { /* after the scalars (gemm_sm90_*) */
        const struct kcase_tmap *t = &c->tmaps[i];
        if (!api->tmap2d) {
            fprintf(stderr, "%s: this launcher cannot build tensor maps\n", api->name);
            goto out;
        }
        if (dev[t->buf] % 16 || t->inner * 2 % 16) { /* TMA: 16-byte base and row stride */
            fprintf(stderr, "%s: tensor map over buffer %d: address or row stride not a multiple of "
                    "16 bytes\n", api->name, t->buf);
            goto out;
        }
        API(api->tmap2d(api->ctx, maps[i], dev[t->buf], c->half, t->inner, t->outer, t->box_inner,
                        t->box_outer));
        params[np++] = maps[i];
    }
    kcase_grid(c, block, 0, GPURUN_MAX_GRID_X, GPURUN_MAX_GRID_Y, grid);
    API(api->launch(api->ctx, fn, grid, block, smem, params));
    API(api->sync(api->ctx));
    *err = 0;
    for (int i = 0; i < c->nbufs; i++) {
        if (!c->bufs[i].is_output)
            continue;
        API(api->dtoh(api->ctx, c->bufs[i].host, dev[i], c->bufs[i].bytes));
        *err = fmax(*err, kcase_max_rel_err(c, i));
    }
    if (iters > 0 && time_case(api, fn, grid, block, smem, params, iters, runs, ms) != 0)
        goto out;
    r = 0;
out:
    for (int i = 0; i < c->nbufs; i++)
        if (dev[i])
            api->release(api->ctx, dev[i]);
    return r;
}

/* Device-to-device copy bandwidth over `bytes`, in GB/s (read + write): the median of
 * `runs` rounds, each the median of `iters` copies; min and max of the rounds too. */
static int copy_bandwidth(struct gpu_api *api, size_t bytes, int iters, int runs, double gbs[3])
{
    uint64_t a = 0, b = 0;
    float t[GPURUN_MAX_ITERS];
    double rd[GPURUN_MAX_RUNS];
    int r = -1;

    API(api->alloc(api->ctx, &a, bytes));
    API(api->alloc(api->ctx, &b, bytes));
    API(api->fill32(api->ctx, a, 0x3f800000u, bytes / 4));
    for (int i = 0; i < GPURUN_WARMUP; i++)
        API(api->dtod(api->ctx, b, a, bytes));
    API(api->sync(api->ctx));
    for (int k = 0; k < runs; k++) {
        for (int i = 0; i < iters; i++) {
            API(api->timer_start(api->ctx));
            API(api->dtod(api->ctx, b, a, bytes));
            API(api->timer_stop(api->ctx, &t[i]));
        }
        qsort(t, (size_t)iters, sizeof t[0], cmp_float);
        rd[k] = 2.0 * (double)bytes / (t[iters / 2] * 1e-3) / 1e9;
    }
    qsort(rd, (size_t)runs, sizeof rd[0], cmp_double);
    gbs[0] = rd[0], gbs[1] = rd[runs / 2], gbs[2] = rd[runs - 1];
    r = 0;
out:
    if (a)
        api->release(api->ctx, a);
    if (b)
        api->release(api->ctx, b);
    return r;
}

/* The code object for op `name`: the file itself, or DIR/NAME.ARCH.EXT. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The code object of a bundled kernel, for this device's target, from kjitd
 * through libkjit (starting a per-user daemon if none runs): the way an
 * application gets it.  NULL with a message on failure. */
static void *fetch_object(const struct gpurun_opts *o, const char *name, const char *target)
{
    kjit_client *c = NULL;
    kjit_result res = { 0 };
    kjit_request req = { .backend = kjit_backend_from_name(o->backend), .target = target, .kernel = name };
    void *img = NULL;
    int r = kjit_open(&c, NULL);

    if (r < 0) {
        fprintf(stderr, "%s: %s\n", name, kjit_last_error(NULL));
        return NULL;
    }
    uint64_t t0 = now_ns();
    r = kjit_get(c, &req, &res);
    if (r < 0) {
        fprintf(stderr, "%s: kjit: %s\n%s", name, res.error ? res.error : kjit_strerror(r), res.log ? res.log : "");
    } else {
        printf("# %s: %s from kjitd for %s in %.3f ms (%zu bytes)\n", name,
               kjit_status_name(res.status), target, (now_ns() - t0) / 1e6, res.size);
        img = res.data;
        res.data = NULL;
    }
    kjit_result_free(&res);
    kjit_close(c);
    return img;
}

/* The code object of entry `name` compiled for `target` (kcase_target: the device's, or
 * sm_90a for the Hopper variants), from kjitd or a file. */
static void *load_object(struct gpu_api *api, const struct gpurun_opts *o, const char *name,
                         const char *target, int is_dir)
{
    char path[1024];
    size_t len = 0;
    void *img, *module = NULL;
    int st;

    if (!o->path) {
        if (!(img = fetch_object(o, name, target)))
            return NULL;
        if ((st = api->load(api->ctx, img, &module)) != 0) {
            fprintf(stderr, "%s: loading the object from kjitd failed: %s\n", name, api->errstr(api->ctx, st));
            module = NULL;
        }
        free(img);
        return module;
    }
    if (is_dir)
        snprintf(path, sizeof path, "%s/%s.%s.%s", o->path, name, target, api->obj_ext);
    else
        snprintf(path, sizeof path, "%s", o->path);
    if (!(img = read_file(path, &len))) {
        fprintf(stderr, "%s: cannot read code object %s\n", name, path);
        return NULL;
    }
    if ((st = api->load(api->ctx, img, &module)) != 0) {
        fprintf(stderr, "%s: loading %s failed: %s\n", name, path, api->errstr(api->ctx, st));
        module = NULL;
    }
    free(img);
    return module;
}

static void report(struct tally *t, int ok, const char *name, const char *shape, double err,
                   const char *extra)
{
    printf("%s %-20s %-28s max rel err %-9.3g %s\n", ok ? "ok" : "not ok", name, shape, err, extra);
    if (ok)
        t->passed++;
    else
        t->failed++;
}

/* One manifest entry's kernel, loaded on first use (failed: tried, and it did not load). */
struct opfn {
    const struct kmanifest_entry *e;
    void *module, *fn;
    int failed;
};

static void *opfn_get(struct gpu_api *api, const struct gpurun_opts *o, struct opfn *f, int is_dir)
{
    char entry[KCASE_NAME_MAX], target[32];
    int st;

    if (f->fn || f->failed)
        return f->fn;
    f->failed = 1;
    snprintf(entry, sizeof entry, "%.*s", (int)strcspn(f->e->entries, ","), f->e->entries);
    if (kcase_target(f->e->name, o->backend, api->arch, target, sizeof target) != 0 ||
        !(f->module = load_object(api, o, f->e->name, target, is_dir)))
        return NULL;
    if ((st = api->function(api->ctx, f->module, entry, &f->fn)) != 0) {
        fprintf(stderr, "%s: no entry %s: %s\n", f->e->name, entry, api->errstr(api->ctx, st));
        f->fn = NULL;
        return NULL;
    }
    f->failed = 0;
    return f->fn;
}

static void opfn_drop(struct gpu_api *api, struct opfn *f)
{
    if (f->module)
        api->unload(api->ctx, f->module);
    memset(f, 0, sizeof *f);
}

/* "; S KV splits ..." for a decode attention case (KV heads x splits grid), else "". */
static const char *splits_note(const struct kcase *c, int slots, char *buf, size_t n)
{
    if (c->geom != KCASE_GEOM_HEADS)
        return "";
    if (slots > 0)
        snprintf(buf, n, "; %llu KV splits (%d blocks fit the device at once)",
                 (unsigned long long)c->items, slots);
    else
        snprintf(buf, n, "; %llu KV splits", (unsigned long long)c->items);
    return buf;
}

/* Op e at each of its shapes; a shape a device-specific variant serves
 * (kcase_launch_variant: gemm_f16 -> gemm_sm90_f16 on sm_90) runs that entry of m. */
static void run_op(struct gpu_api *api, const struct gpurun_opts *o,
                   const struct kmanifest_entry *m, int count, const struct kmanifest_entry *e,
                   int is_dir, double copy_gbs, struct tally *t)
{
    struct kcase_dims dims[KCASE_MAX_SHAPES];
    struct opfn own = {e, NULL, NULL, 0}, alt = {NULL, NULL, NULL, 0};
    char target[32];
    int n;

    if (kcase_target(e->name, o->backend, api->arch, target, sizeof target) != 0) {
        printf("# %s: skipped, not for a %s device\n", e->name, api->arch);
        return;
    }
    if (o->bench) {
        n = kcase_bench_shapes(e->name, o->rows, o->cols, dims, KCASE_MAX_SHAPES);
    } else {
        n = kcase_test_shapes(e->name, dims, KCASE_MAX_SHAPES);
    }
    for (int s = 0; s < n; s++) {
        struct kcase c;
        double err = NAN, ms[GPURUN_MAX_RUNS];
        char extra[160] = "", why[256], note[96];
        const char *vname = kcase_launch_variant(e->name, o->backend, api->arch, &dims[s]);
        const struct kmanifest_entry *ve = vname ? kmanifest_find(m, count, vname, o->backend) : NULL;
        struct opfn *use = ve ? &alt : &own;
        if (ve && alt.e != ve) {
            opfn_drop(api, &alt);
            alt.e = ve;
        }
        void *fn = opfn_get(api, o, use, is_dir);
        if (!fn) {
            report(t, 0, e->name, use->e->name, NAN, "could not load the kernel");
            continue;
        }
        if (o->slots > 0)
            dims[s].slots = o->slots;
        else if (api->slots && api->slots(api->ctx, fn, use->e->block, &dims[s].slots) != 0)
            dims[s].slots = 0; /* unknown: the split count goes by keys alone */
        dims[s].splits = o->splits;
        if (kcase_build(&c, use->e->name, &dims[s], GPURUN_SEED + (uint64_t)s) != 0) {
            report(t, 0, e->name, "", NAN, "no test case for this op (or out of memory)");
            continue;
        }
        if (vname && !ve) /* a manifest without the variant (a sweep's): the op itself runs */
            printf("# variant for %s: %s (%s is not in %s)\n", c.shape, e->name, vname, o->manifest);
        else if (kcase_variant(e->name, o->backend, api->arch, &dims[s], why, sizeof why))
            printf("# variant for %s: %s%s\n", c.shape, why, /* which path runs, and why */
                   splits_note(&c, dims[s].slots, note, sizeof note));
        if (run_case(api, fn, &c, use->e->block, o->smem ? (unsigned)o->smem : kcase_dyn_smem(&c, o->backend, api->arch), o->bench ? o->iters : 0, o->runs, &err, ms) != 0) {
            report(t, 0, e->name, c.shape, NAN, "launch failed");
        } else {
            if (o->bench && c.flops > 0) { /* matrix ops: arithmetic rate, fastest..slowest */
                snprintf(extra, sizeof extra, "%9.1f us %7.1f TFLOP/s (runs %.1f..%.1f)",
                         ms[o->runs / 2] * 1e3, c.flops / (ms[o->runs / 2] * 1e-3) / 1e12,
                         c.flops / (ms[o->runs - 1] * 1e-3) / 1e12, c.flops / (ms[0] * 1e-3) / 1e12);
            } else if (o->bench) { /* median round, and the spread of the rounds */
                double gbs = c.bytes_moved / (ms[o->runs / 2] * 1e-3) / 1e9;
                snprintf(extra, sizeof extra,
                         "%9.1f us %8.1f GB/s %5.1f%% of copy (runs %.1f..%.1f%%)",
                         ms[o->runs / 2] * 1e3, gbs, 100.0 * gbs / copy_gbs,
                         100.0 * c.bytes_moved / (ms[o->runs - 1] * 1e-3) / 1e9 / copy_gbs,
                         100.0 * c.bytes_moved / (ms[0] * 1e-3) / 1e9 / copy_gbs);
            }
            report(t, err <= c.tol, e->name, c.shape, err, extra);
        }
        kcase_free(&c);
    }
    opfn_drop(api, &own);
    opfn_drop(api, &alt);
}

/* Whether `name` is one of the comma-separated names in list. */
static int in_list(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strcspn(p, ",") == n && !strncmp(p, name, n))
            return 1;
    }
    return 0;
}

int gpurun_main(struct gpu_api *api, const struct gpurun_opts *o)
{
    struct kmanifest_entry *m = NULL;
    struct tally t = {0, 0};
    struct stat sb;
    char err[256], fname[KCASE_NAME_MAX] = "";
    double copy_gbs[3] = {0, 0, 0};
    int count = 0, is_dir, ran = 0;

    if (o->path && stat(o->path, &sb) != 0) {
        fprintf(stderr, "%s: no such file or directory\n", o->path);
        return 1;
    }
    is_dir = !o->path || S_ISDIR(sb.st_mode); /* no path: every op, from kjitd */
    if (kmanifest_load(o->manifest, &m, &count, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (!is_dir && !o->op) { /* rms_norm_f32.sm_90.cubin -> rms_norm_f32 */
        const char *base = strrchr(o->path, '/') ? strrchr(o->path, '/') + 1 : o->path;
        snprintf(fname, sizeof fname, "%.*s", (int)strcspn(base, "."), base);
    } else if (o->op) {
        snprintf(fname, sizeof fname, "%s", o->op);
    }
    /* a line at a time: a log cut off by a time limit still shows how far the run got */
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("device: %s (%s), %s\n", api->device, api->arch, o->bench ? "bench" : "check");
    if (o->bench) {
        if (copy_bandwidth(api, (size_t)o->rows * o->cols * sizeof(float), o->iters, o->runs,
                           copy_gbs) != 0) {
            free(m);
            return 1;
        }
        printf("device-to-device copy, %d x %d f32: %.1f GB/s (read + write; %d runs of %d: "
               "%.1f..%.1f)\n", o->rows, o->cols, copy_gbs[1], o->runs, o->iters, copy_gbs[0],
               copy_gbs[2]);
    }
    for (int i = 0; i < count; i++) {
        if (strcmp(m[i].backend, o->backend))
            continue;
        if (!is_dir && strcmp(m[i].name, fname))
            continue;
        if (is_dir && o->op && !in_list(o->op, m[i].name))
            continue;
        run_op(api, o, m, count, &m[i], is_dir, copy_gbs[1], &t);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "no %s kernel named %s in %s\n", o->backend, fname, o->manifest);
        t.failed++;
    }
    free(m);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
