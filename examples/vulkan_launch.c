/*
 * vulkan_launch: run one of kjit's Vulkan kernels (rms_norm by default) on the Vulkan
 * loader's device (lavapipe on a CPU-only machine, the GPU elsewhere) and show that it
 * is right and how fast it is.
 *
 *   vulkan_launch [--op NAME] [--rows R] [--cols C] [--iters N] [--manifest FILE] FILE.spv
 *
 * FILE.spv is the SPIR-V of the op (e.g. from `glslangValidator -V --target-env
 * vulkan1.1 -DKJ_BLOCK=256 kernels_src/vulkan/rms_norm.comp -o rms_norm.spv`, or from
 * tests/kernels/test-kernels-compile.sh with KJIT_OBJ_DIR set).  The op's workgroup size
 * is read from the manifest.  Inputs are random (fixed seed); the output is poisoned
 * with NaN first; the result is compared with the CPU oracle.  Prints the device, the
 * max relative error (tests/kernels/kcase.h defines it) and the median time of N runs;
 * exits 1 if the error exceeds 1e-5 or anything fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/kernels/kcase.h"
#include "../tests/kernels/vkrun.h"

#define TOL_F32 1e-5
#define VK_MAX_GROUPS 65535u

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
    fprintf(stderr, "usage: %s [--op NAME] [--rows R] [--cols C] [--iters N] [--manifest FILE] FILE.spv\n",
            prog);
    return 2;
}

int main(int argc, char **argv)
{
    const char *op = "rms_norm_f32", *manifest = "kernels_src/MANIFEST", *path = NULL;
    struct kcase_dims d = {1024, 4096, 0, 0, 0, 0, 0, 0, 0};
    struct kmanifest_entry *m = NULL;
    const struct kmanifest_entry *e;
    struct vkrun *vk = NULL;
    struct vkrun_buf bufs[KCASE_MAX_BUFS];
    struct kcase c = {0};
    uint8_t *spv = NULL;
    size_t len = 0;
    uint32_t groups[3] = {1, 1, 1};
    unsigned block = 256;
    int iters = 10, count = 0, r = 1;
    double ms = 0, err = 0;
    char msg[256];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--op") && more)
            op = argv[++i];
        else if (!strcmp(a, "--rows") && more)
            d.rows = atoi(argv[++i]);
        else if (!strcmp(a, "--cols") && more)
            d.cols = atoi(argv[++i]);
        else if (!strcmp(a, "--iters") && more)
            iters = atoi(argv[++i]);
        else if (!strcmp(a, "--manifest") && more)
            manifest = argv[++i];
        else if (a[0] != '-' && !path)
            path = a;
        else
            return usage(argv[0]);
    }
    if (!path || d.rows < 1 || d.cols < 1 || iters < 1 || iters > 1000)
        return usage(argv[0]);
    kcase_bench_dims(op, d.rows, d.cols, &d);
    {
        char why[256];
        if (kcase_variant(op, "vulkan", "vulkan1.1", &d, why, sizeof why))
            printf("variant: %s\n", why); /* which path runs, and why */
    }
    if (kmanifest_load(manifest, &m, &count, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        goto out;
    }
    if ((e = kmanifest_find(m, count, op, "vulkan")) && e->block)
        block = e->block;
    if (!(spv = read_file(path, &len))) {
        fprintf(stderr, "cannot read SPIR-V file %s\n", path);
        goto out;
    }
    if (kcase_build(&c, op, &d, 1) != 0) {
        fprintf(stderr, "no test case for op %s (or out of memory)\n", op);
        goto out;
    }
    if (vkrun_create(&vk, msg, sizeof msg) != 0) {
        fprintf(stderr, "Vulkan: %s\n", msg);
        goto out;
    }
    kcase_poison(&c);
    for (int i = 0; i < c.nbufs; i++)
        bufs[i] = (struct vkrun_buf){c.bufs[i].host, c.bufs[i].bytes, c.bufs[i].is_output};
    kcase_grid(&c, block, 1, VK_MAX_GROUPS, VK_MAX_GROUPS, groups);
    if (vkrun_dispatch(vk, spv, len, bufs, c.nbufs, c.scalars, (size_t)c.nscalars * 4, groups,
                       iters, &ms) != 0) {
        fprintf(stderr, "Vulkan: %s\n", vkrun_error(vk));
        goto out;
    }
    for (int i = 0; i < c.nbufs; i++)
        if (c.bufs[i].is_output) {
            double e1 = kcase_max_rel_err(&c, i);
            err = e1 > err ? e1 : err;
        }
    printf("device:        %s\n", vkrun_device_name(vk));
    printf("op:            %s %s (workgroup %u, %u x %u groups)\n", op, c.shape, block, groups[0],
           groups[1]);
    printf("max rel error: %.3g vs CPU oracle (%s, limit %g)\n", err, err <= TOL_F32 ? "ok" : "FAIL",
           TOL_F32);
    printf("median time:   %.3f ms over %d runs (%.2f GB/s, host-timed submit+wait)\n", ms, iters,
           c.bytes_moved / (ms * 1e-3) / 1e9);
    r = err <= TOL_F32 ? 0 : 1;
out:
    vkrun_destroy(vk);
    kcase_free(&c);
    free(spv);
    free(m);
    return r;
}
