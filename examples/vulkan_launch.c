/*
 * vulkan_launch: run kjit's Vulkan kernels on the Vulkan loader's device (lavapipe on a
 * CPU-only machine, the GPU elsewhere), show that they are right, and how fast.
 *
 *   vulkan_launch [--op NAME[,NAME...]] [--bench] [--rows R] [--cols C] [--iters N]
 *                 [--runs N] [--manifest FILE] PATH
 *
 * PATH is one op's SPIR-V (the op is --op, default rms_norm_f32) or a directory of
 * NAME.spv files (`kjit get --kernel NAME --backend vulkan -o DIR/NAME.spv`, as
 * scripts/gpu-run.sh does), run for each NAME of --op.  The op's workgroup size is read
 * from the manifest.  Inputs are random (fixed seed); outputs are poisoned with NaN
 * first; results are compared with the CPU oracle at the case's tolerance.  Buffers live
 * in device memory, filled through staging buffers (tests/kernels/vkrun.h).  With
 * --bench each op is then timed with GPU timestamps: `runs` rounds of `iters`
 * dispatches, the median round shown with the fastest and slowest, as GB/s (every input
 * read once, every output written once) and as a share of a device-to-device
 * vkCmdCopyBuffer of rows x cols floats timed the same way in the same run, or, with
 * --copy-spv, of kernels_src/vulkan/copy.comp (16-byte loads and stores: what the SMs
 * reach; NVIDIA runs vkCmdCopyBuffer on a copy engine at about a third of that).  Before the
 * ops it prints what the device reports and which variant of each op family it would
 * choose, and why (subgroup arithmetic, integer dot product).  Prints one line per op
 * ("ok ..." / "not ok ...") and ends with "N passed, N failed"; exits 1 on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../tests/kernels/kcase.h"
#include "../tests/kernels/vkrun.h"

#define VK_MAX_GROUPS 65535u
#define VL_SEED 1

struct opts {
    const char *ops, *manifest, *path, *copy_spv;
    int bench, rows, cols, iters, runs;
};

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
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

static int usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--op NAME[,NAME...]] [--bench] [--rows R] [--cols C] [--iters N] [--runs N]\n"
            "          [--manifest FILE] [--copy-spv FILE] PATH\n"
            "  PATH: one op's SPIR-V, or a directory of NAME.spv for each op of --op\n"
            "  --copy-spv: kernels_src/vulkan/copy.comp's SPIR-V; --bench then measures ops\n"
            "  against that shader copy as well as against vkCmdCopyBuffer\n",
            prog);
    return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){"rms_norm_f32", "kernels_src/MANIFEST", NULL, NULL, 0, 1024, 4096, 10, 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--op") && more)
            o->ops = argv[++i];
        else if (!strcmp(a, "--bench"))
            o->bench = 1, o->rows = 16384, o->cols = 8192;
        else if (!strcmp(a, "--rows") && more)
            o->rows = atoi(argv[++i]);
        else if (!strcmp(a, "--cols") && more)
            o->cols = atoi(argv[++i]);
        else if (!strcmp(a, "--iters") && more)
            o->iters = atoi(argv[++i]);
        else if (!strcmp(a, "--runs") && more)
            o->runs = atoi(argv[++i]);
        else if (!strcmp(a, "--manifest") && more)
            o->manifest = argv[++i];
        else if (!strcmp(a, "--copy-spv") && more)
            o->copy_spv = argv[++i];
        else if (a[0] != '-' && !o->path)
            o->path = a;
        else
            return usage(argv[0]);
    }
    if (!o->path || o->rows < 1 || o->cols < 1 || o->iters < 1 || o->iters > VKRUN_MAX_ITERS ||
        o->runs < 1 || o->runs > VKRUN_MAX_RUNS)
        return usage(argv[0]);
    return 0;
}

/* What the device reports, in one line. */
static void print_caps(const struct vkrun_caps *k)
{
    printf("caps:          Vulkan %u.%u, subgroup %u (arithmetic %s), integer dot product %s, "
           "shared memory %u KB, buffers in %s, timing by %s (%.3g ns a tick)\n",
           k->api_version >> 22, (k->api_version >> 12) & 0x3ffu, k->subgroup_size,
           k->subgroup_arith ? "yes" : "no",
           k->int_dot ? (k->int_dot_accel ? "yes, 4x8 packed signed accelerated" : "yes, not accelerated")
                      : "no",
           k->shared_bytes / 1024, k->device_local ? "device-local memory through staging" : "host-visible memory",
           k->timestamps ? "GPU timestamps" : "host clock (no timestamps on this queue)", k->ts_period_ns);
}

/* The variant of op `name`'s family this device takes, and why (NULL: one variant). */
static const char *device_variant(const char *name, const struct vkrun_caps *k, char *why, size_t n)
{
    static const char *const sg[][2] = {{"rms_norm_f32", "rms_norm_sg_f32"},
                                        {"layer_norm_f32", "layer_norm_sg_f32"},
                                        {"add_rmsnorm_f32", "add_rmsnorm_sg_f32"},
                                        {"softmax_f32", "softmax_sg_f32"}};
    for (size_t i = 0; i < sizeof sg / sizeof sg[0]; i++)
        if (!strcmp(name, sg[i][0]) || !strcmp(name, sg[i][1])) {
            snprintf(why, n, "%s: %s", sg[i][k->subgroup_arith],
                     k->subgroup_arith ? "the device has subgroup arithmetic in compute shaders"
                                       : "no subgroup arithmetic: shared-memory reductions");
            return sg[i][k->subgroup_arith];
        }
    if (!strcmp(name, "matvec_q8") || !strcmp(name, "matvec_q8_dp4")) {
        const char *pick = k->int_dot ? "matvec_q8_dp4" : "matvec_q8";
        snprintf(why, n, "%s: %s", pick,
                 !k->int_dot ? "no shaderIntegerDotProduct: bitfieldExtract and multiply-adds"
                 : k->int_dot_accel ? "OpSDot on packed 4x8 (shaderIntegerDotProduct; the device "
                                      "reports it accelerated)"
                                    : "OpSDot on packed 4x8 (shaderIntegerDotProduct; the device "
                                      "does not report it accelerated)");
        return pick;
    }
    return NULL;
}

/* Run (and with --bench time) op `name` from `spv`; 1 passed, 0 failed. */
static int run_op(struct vkrun *vk, const struct opts *o, const struct kmanifest_entry *m,
                  int count, const char *name, const uint8_t *spv, size_t len, double copy_gbs)
{
    const struct kmanifest_entry *e = kmanifest_find(m, count, name, "vulkan");
    struct kcase_dims d = {o->rows, o->cols, 0, 0, 0, 0, 0, 0, 0, 0};
    struct vkrun_buf bufs[KCASE_MAX_BUFS];
    struct kcase c;
    uint32_t groups[3] = {1, 1, 1};
    double ms[VKRUN_MAX_RUNS], err = 0;
    char extra[160] = "";
    int ok;

    char why[256];

    kcase_bench_dims(name, o->rows, o->cols, &d);
    if (kcase_variant(name, "vulkan", "vulkan1.1", &d, why, sizeof why)) /* shape-chosen paths */
        printf("# variant for %s: %s\n", name, why);
    if (kcase_build(&c, name, &d, VL_SEED) != 0) {
        printf("not ok %-20s no test case for this op (or out of memory)\n", name);
        return 0;
    }
    kcase_poison(&c);
    for (int i = 0; i < c.nbufs; i++)
        bufs[i] = (struct vkrun_buf){c.bufs[i].host, c.bufs[i].bytes, c.bufs[i].is_output};
    kcase_grid(&c, e && e->block ? e->block : 256, 1, VK_MAX_GROUPS, VK_MAX_GROUPS, groups);
    if (vkrun_dispatch(vk, spv, len, bufs, c.nbufs, c.scalars, (size_t)c.nscalars * 4, groups,
                       o->iters, o->runs, o->bench ? ms : NULL) != 0) {
        printf("not ok %-20s %-22s %s\n", name, c.shape, vkrun_error(vk));
        kcase_free(&c);
        return 0;
    }
    for (int i = 0; i < c.nbufs; i++)
        if (c.bufs[i].is_output)
            err = fmax(err, kcase_max_rel_err(&c, i));
    ok = err <= c.tol;
    if (o->bench) {
        const double med = ms[o->runs / 2], gbs = c.bytes_moved / (med * 1e-3) / 1e9;
        snprintf(extra, sizeof extra, "%9.1f us %8.1f GB/s %5.1f%% of copy (runs %.1f..%.1f%%)",
                 med * 1e3, gbs, 100.0 * gbs / copy_gbs,
                 100.0 * c.bytes_moved / (ms[o->runs - 1] * 1e-3) / 1e9 / copy_gbs,
                 100.0 * c.bytes_moved / (ms[0] * 1e-3) / 1e9 / copy_gbs);
    }
    printf("%s %-20s %-22s err %.3g %s\n", ok ? "ok" : "not ok", name, c.shape, err, extra);
    kcase_free(&c);
    return ok;
}

/* The SPIR-V of op `name`: PATH itself, or PATH/NAME.spv. */
static uint8_t *op_spirv(const char *path, const char *name, size_t *len)
{
    struct stat sb;
    char file[KCASE_PATH_MAX + KCASE_NAME_MAX + 8];

    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return read_file(path, len);
    snprintf(file, sizeof file, "%s/%s.spv", path, name);
    return read_file(file, len);
}

/* The bandwidth (GB/s, read + write) of copy.comp over `bytes`: *gbs; 0 or -1. */
static int shader_copy(struct vkrun *vk, const struct opts *o, size_t bytes, double *gbs)
{
    size_t len = 0, n = bytes / sizeof(float);
    uint8_t *spv = read_file(o->copy_spv, &len);
    float *src = malloc(bytes), *dst = malloc(bytes);
    const uint32_t n4 = (uint32_t)(n / 4);
    uint32_t groups[3] = {(n4 + 255) / 256 < VK_MAX_GROUPS ? (n4 + 255) / 256 : VK_MAX_GROUPS, 1, 1};
    double ms[VKRUN_MAX_RUNS];
    int rc = -1;

    if (!spv || !src || !dst) {
        fprintf(stderr, "shader copy: cannot read %s (or out of memory)\n", o->copy_spv);
        goto out;
    }
    for (size_t i = 0; i < n; i++) /* a pattern, never zeros */
        src[i] = (float)(i % 1000003) + 0.5f, dst[i] = -1.0f;
    struct vkrun_buf b[2] = {{src, bytes, 0}, {dst, bytes, 1}};
    if (vkrun_dispatch(vk, spv, len, b, 2, &n4, sizeof n4, groups, o->iters, o->runs, ms) != 0) {
        fprintf(stderr, "shader copy: %s\n", vkrun_error(vk));
        goto out;
    }
    if (memcmp(src, dst, (size_t)n4 * 16) != 0) { /* whole vec4s: what copy.comp moves */
        fprintf(stderr, "shader copy: the copy differs from its source\n");
        goto out;
    }
    *gbs = 2.0 * (double)bytes / (ms[o->runs / 2] * 1e-3) / 1e9;
    printf("shader copy:   copy.comp (vec4, %u groups of 256) %zu MB: %.1f us, %.1f GB/s (runs %.1f..%.1f "
           "GB/s)\n", groups[0], bytes >> 20, ms[o->runs / 2] * 1e3, *gbs,
           2.0 * (double)bytes / (ms[o->runs - 1] * 1e-3) / 1e9, 2.0 * (double)bytes / (ms[0] * 1e-3) / 1e9);
    rc = 0;
out:
    free(spv);
    free(src);
    free(dst);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct kmanifest_entry *m = NULL;
    struct vkrun *vk = NULL;
    char msg[256], list[KCASE_PATH_MAX * 4];
    int count = 0, passed = 0, failed = 0, r = 1;
    double copy_gbs = 0, ms[VKRUN_MAX_RUNS];

    if (parse(argc, argv, &o) != 0)
        return 2;
    if (kmanifest_load(o.manifest, &m, &count, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        goto out;
    }
    if (vkrun_create(&vk, msg, sizeof msg) != 0) {
        fprintf(stderr, "Vulkan: %s\n", msg);
        goto out;
    }
    printf("device:        %s\n", vkrun_device_name(vk));
    print_caps(vkrun_caps(vk));
    if (o.bench) {
        const size_t bytes = (size_t)o.rows * (size_t)o.cols * sizeof(float);
        if (vkrun_copy(vk, bytes, o.iters, o.runs, ms) != 0) {
            fprintf(stderr, "Vulkan copy: %s\n", vkrun_error(vk));
            goto out;
        }
        copy_gbs = 2.0 * (double)bytes / (ms[o.runs / 2] * 1e-3) / 1e9;
        printf("copy:          vkCmdCopyBuffer %zu MB device to device: %.1f us, %.1f GB/s (read + "
               "write; runs %.1f..%.1f GB/s)\n", bytes >> 20, ms[o.runs / 2] * 1e3, copy_gbs,
               2.0 * (double)bytes / (ms[o.runs - 1] * 1e-3) / 1e9, 2.0 * (double)bytes / (ms[0] * 1e-3) / 1e9);
        if (o.copy_spv) { /* the SMs' copy: the floor the ops are measured against */
            if (shader_copy(vk, &o, bytes, &copy_gbs) != 0)
                goto out;
            printf("floor:         the shader copy (%% of copy below); vkCmdCopyBuffer reached %.0f%% of it\n",
                   100.0 * 2.0 * (double)bytes / (ms[o.runs / 2] * 1e-3) / 1e9 / copy_gbs);
        }
    }
    snprintf(list, sizeof list, "%s", o.ops);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        size_t len = 0;
        uint8_t *spv = op_spirv(o.path, name, &len);
        char why[256];
        if (device_variant(name, vkrun_caps(vk), why, sizeof why))
            printf("# variant for %s on this device: %s\n", name, why);
        if (!spv) {
            printf("not ok %-20s cannot read its SPIR-V under %s\n", name, o.path);
            failed++;
            continue;
        }
        if (run_op(vk, &o, m, count, name, spv, len, copy_gbs))
            passed++;
        else
            failed++;
        free(spv);
    }
    printf("%d passed, %d failed\n", passed, failed);
    r = failed ? 1 : 0;
out:
    vkrun_destroy(vk);
    free(m);
    return r;
}
