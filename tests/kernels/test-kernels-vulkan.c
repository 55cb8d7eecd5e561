/*
 * test-kernels-vulkan: run every Vulkan kernel of kernels_src/MANIFEST on the local
 * Vulkan device (lavapipe on the CPU-only build machine) and compare it with the CPU
 * oracle.
 *
 * For each vulkan manifest entry and each of a few shapes (odd sizes, sizes that are
 * not multiples of 4, broadcasting, GQA, kv_len 1): inputs are random with a fixed
 * seed and never zero; every output buffer is filled with NaN before the launch, so an
 * element the kernel fails to write fails the check; the result must be within a max
 * relative error of 1e-5 of the oracle (f32; the 16-bit ops, within their type's
 * rounding, kcase.h).  The error measure is
 * |got - ref| / max(|ref|, 1e-3 * rowmax), rowmax = largest |ref| in that row: see
 * tests/kernels/kcase.h for why.  A last check runs a deliberately short dispatch and
 * asserts that the NaN poison catches it.
 *
 * Variants for device features (_sg: subgroup arithmetic; _dp4: integer dot product as
 * well) run where the device reports the feature and print "# skip" where it does not.
 * Prints one line per check ("ok NAME ..." or "not ok NAME ...", the format tests/run.sh
 * counts) and ends with "N passed, N failed"; exits 1 on any failure.
 * The kernels directory is $KJIT_KERNELS_DIR, else ./kernels_src.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcase.h"
#include "kjit.h"
#include "vkrun.h"

extern char **environ;

#define TOL_F32 1e-5
#define SEED 0x6b6a6974ull
#define VK_MAX_GROUPS 65535u

struct tally {
    int passed, failed;
};

static const char *kernels_dir(void)
{
    const char *d = getenv("KJIT_KERNELS_DIR");
    return d && *d ? d : "kernels_src";
}

/* The SPIR-V of a bundled kernel, fetched the way applications do: from
 * kjitd through libkjit ($KJIT_SOCKET; the test script starts the daemon). */
static int fetch_spirv(const char *name, uint8_t **bytes, size_t *len)
{
    kjit_client *c = NULL;
    kjit_result res = { 0 };
    kjit_request req = { .backend = KJIT_BACKEND_VULKAN, .target = "vulkan1.1", .kernel = name };
    int r = kjit_open(&c, NULL);

    if (r < 0) {
        fprintf(stderr, "fetch_spirv: %s\n", kjit_last_error(NULL));
        return -1;
    }
    r = kjit_get(c, &req, &res);
    if (r < 0) {
        fprintf(stderr, "fetch_spirv: %s: %s\n", name, res.error ? res.error : kjit_strerror(r));
        if (res.log)
            fprintf(stderr, "%s\n", res.log);
    } else {
        *bytes = res.data; /* handed over: kjit_result_free must not free it */
        *len = res.size;
        res.data = NULL;
    }
    kjit_result_free(&res);
    kjit_close(c);
    return r < 0 ? -1 : 0;
}

static void report(struct tally *t, int ok, const char *what, const char *shape, const char *msg)
{
    printf("%s %-20s %-22s %s\n", ok ? "ok" : "not ok", what, shape, msg);
    if (ok)
        t->passed++;
    else
        t->failed++;
}

/* Launch case c with `spirv`; grid_x_override > 0 replaces the computed grid x. */
static int launch(struct vkrun *vk, const uint8_t *spirv, size_t len, struct kcase *c,
                  unsigned block, uint32_t grid_x_override)
{
    struct vkrun_buf b[KCASE_MAX_BUFS];
    uint32_t g[3] = {1, 1, 1};

    kcase_grid(c, block, 1, VK_MAX_GROUPS, VK_MAX_GROUPS, g);
    if (grid_x_override)
        g[0] = grid_x_override;
    kcase_poison(c);
    for (int i = 0; i < c->nbufs; i++)
        b[i] = (struct vkrun_buf){c->bufs[i].host, c->bufs[i].bytes, c->bufs[i].is_output};
    if (vkrun_dispatch(vk, spirv, len, b, c->nbufs, c->scalars, (size_t)c->nscalars * 4, g, 1, 1,
                       NULL) != 0) {
        fprintf(stderr, "%s: %s\n", c->op, vkrun_error(vk));
        return -1;
    }
    return 0;
}

static void test_entry(struct vkrun *vk, const struct kmanifest_entry *e, struct tally *t)
{
    uint8_t *spv = NULL;
    size_t len = 0;
    struct kcase_dims dims[KCASE_MAX_SHAPES];
    int n = kcase_test_shapes(e->name, dims, KCASE_MAX_SHAPES);

    if (fetch_spirv(e->name, &spv, &len) != 0) {
        report(t, 0, e->name, "", "cannot get SPIR-V");
        return;
    }
    for (int s = 0; s < n; s++) {
        struct kcase c;
        if (kcase_build(&c, e->name, &dims[s], SEED + (uint64_t)s) != 0) {
            report(t, 0, e->name, "", "no test case for this kernel");
            break;
        }
        if (launch(vk, spv, len, &c, e->block, 0) != 0) {
            report(t, 0, e->name, c.shape, "launch failed");
            kcase_free(&c);
            continue;
        }
        for (int i = 0; i < c.nbufs; i++) {
            if (!c.bufs[i].is_output)
                continue;
            double err = kcase_max_rel_err(&c, i);
            char what[96];
            snprintf(what, sizeof what, "%s%s", e->name, i == 3 && !strcmp(e->name, "add_rmsnorm_f32") ? ".h" : "");
            char msg[64];
            snprintf(msg, sizeof msg, "max rel err %.3g", err);
            /* f32 ops at 1e-5; 16-bit ones (gemm, prefill) at their type's rounding */
            report(t, err <= c.tol && (c.half || c.tol <= TOL_F32), what, c.shape, msg);
        }
        kcase_free(&c);
    }
    free(spv);
}

/* One workgroup (256 invocations x 4 columns) over rows of 4096 columns leaves three
 * quarters of the output unwritten: the NaN poison must make that check fail. */
static void test_poison(struct vkrun *vk, struct tally *t)
{
    const struct kcase_dims wide = {3, 4096, 0, 0, 0, 0, 0, 0, 0, 0};
    uint8_t *spv = NULL;
    size_t len = 0;
    struct kcase c;
    double err = 0;
    int ok = 0;
    char msg[96];

    if (fetch_spirv("add_f32", &spv, &len) == 0 && kcase_build(&c, "add_f32", &wide, SEED) == 0) {
        if (launch(vk, spv, len, &c, 256, 1) == 0) {
            err = kcase_max_rel_err(&c, 2);
            ok = isinf(err);
        }
        kcase_free(&c);
    }
    free(spv);
    snprintf(msg, sizeof msg, "short dispatch: err %g (must be inf)", err);
    report(t, ok, "poison-detect", "add_f32 3x4096", msg);
}

int main(void)
{
    char mpath[512], err[256];
    struct kmanifest_entry *m = NULL;
    struct tally t = {0, 0};
    struct vkrun *vk = NULL;
    int count = 0;

    snprintf(mpath, sizeof mpath, "%s/MANIFEST", kernels_dir());
    if (kmanifest_load(mpath, &m, &count, err, sizeof err) != 0) {
        fprintf(stderr, "test-kernels-vulkan: %s\n", err);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    if (vkrun_create(&vk, err, sizeof err) != 0) {
        fprintf(stderr, "test-kernels-vulkan: %s\n", err);
        printf("0 passed, 1 failed\n");
        free(m);
        return 1;
    }
    printf("device: %s\n", vkrun_device_name(vk));
    const struct vkrun_caps *k = vkrun_caps(vk);
    printf("device caps: subgroup %u (arithmetic %s), integer dot product %s\n", k->subgroup_size,
           k->subgroup_arith ? "yes" : "no", k->int_dot ? "yes" : "no");
    for (int i = 0; i < count; i++) {
        if (strcmp(m[i].backend, "vulkan"))
            continue;
        /* variants for features this device lacks: said loudly, never counted as passed */
        if ((strstr(m[i].name, "_sg_") || strstr(m[i].name, "_dp4")) && !k->subgroup_arith)
            printf("# skip %s: the device has no subgroup arithmetic\n", m[i].name);
        else if (strstr(m[i].name, "_dp4") && !k->int_dot)
            printf("# skip %s: the device has no shaderIntegerDotProduct\n", m[i].name);
        else
            test_entry(vk, &m[i], &t);
    }
    test_poison(vk, &t);
    vkrun_destroy(vk);
    free(m);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
