/*
 * gpurun.h: the driver-neutral half of the CUDA and HIP launch examples.
 *
 * cuda_launch.c and hip_launch.c each load their driver library at run time (dlopen,
 * no toolkit headers) and fill a struct gpu_api with small wrappers; gpurun does the
 * rest the same way for both: load a code object (cubin / HSACO), build the test case
 * for each op (tests/kernels/kcase.h: random inputs, oracle answer), upload, poison the
 * outputs with NaN, launch with the manifest's block size, read back, compare with the
 * oracle, and in bench mode time each op with device events next to a device-to-device
 * copy measured in the same run.
 *
 * Every wrapper returns 0 or the driver's own nonzero status; api->errstr turns that
 * into words.  Device pointers travel as uint64_t.
 */
#ifndef KJIT_EXAMPLES_GPURUN_H
#define KJIT_EXAMPLES_GPURUN_H

#include <stddef.h>
#include <stdint.h>

struct gpu_api {
    const char *name;     /* "CUDA" or "HIP", for messages */
    const char *obj_ext;  /* "cubin" or "hsaco" */
    void *ctx;            /* the backend's state, passed to every call */
    char arch[32];        /* the device's target, e.g. "sm_90", "gfx90a" */
    char device[128];     /* the device's name */
    int (*load)(void *ctx, const void *image, void **module);
    int (*unload)(void *ctx, void *module);
    int (*function)(void *ctx, void *module, const char *name, void **fn);
    int (*alloc)(void *ctx, uint64_t *dptr, size_t bytes);
    int (*release)(void *ctx, uint64_t dptr);
    int (*htod)(void *ctx, uint64_t dst, const void *src, size_t bytes);
    int (*dtoh)(void *ctx, void *dst, uint64_t src, size_t bytes);
    int (*dtod)(void *ctx, uint64_t dst, uint64_t src, size_t bytes);
    int (*fill32)(void *ctx, uint64_t dst, uint32_t value, size_t count);
    /* smem: dynamic shared memory bytes (over 48 KB the CUDA launcher raises the
     * function's limit first) */
    int (*launch)(void *ctx, void *fn, const uint32_t grid[2], unsigned block, unsigned smem,
                  void **params);
    /* CUDA only (NULL elsewhere): encode into map (a CUtensorMap, 128 bytes) a 2-D tiled
     * tensor map over 16-bit elements at dptr (half 1: f16, 2: bf16), inner x outer of
     * them, row stride inner * 2 bytes, box box_inner x box_outer, 128-byte swizzle,
     * zeros read past the edges (tests/kernels/kcase.h, struct kcase_tmap) */
    int (*tmap2d)(void *ctx, void *map, uint64_t dptr, int half, uint64_t inner, uint64_t outer,
                  uint32_t box_inner, uint32_t box_outer);
    /* optional (NULL: unknown): *n = blocks of `block` threads of fn, without dynamic
     * shared memory, the device runs at once (SMs x blocks an SM); it caps decode
     * attention's KV splits at one wave (tests/kernels/kcase.h, slots) */
    int (*slots)(void *ctx, void *fn, unsigned block, int *n);
    int (*sync)(void *ctx);
    int (*timer_start)(void *ctx);             /* record the start event */
    int (*timer_stop)(void *ctx, float *ms);   /* record the stop event, wait, elapsed */
    const char *(*errstr)(void *ctx, int status);
};

struct gpurun_opts {
    const char *path;     /* a code object file, or a directory of NAME.ARCH.EXT files */
    const char *op;       /* with a file: the op it holds (default: file name up to '.') */
    const char *manifest; /* default kernels_src/MANIFEST */
    const char *backend;  /* manifest backend: "cuda" or "hip" */
    int bench;            /* time every op at rows x cols */
    int rows, cols, iters;
    int runs;             /* bench: timing rounds of `iters` launches; min/median/max shown */
    int slots;            /* > 0: blocks the device runs at once, instead of the driver's
                           * figure (decode attention's split rule; for measuring) */
    int splits;           /* > 0: decode attention's KV splits instead of the rule */
    int smem;             /* > 0: dynamic shared memory bytes for every launch (--smem) */
};

/* Parse the shared command line into o (defaults filled in).  Returns 0, or 2 after
 * printing usage. */
int gpurun_parse_args(int argc, char **argv, struct gpurun_opts *o, const char *backend);
/* Run the check (or bench) described by o on a ready api.  Prints one line per check
 * and ends with "N passed, N failed".  Returns the process exit status (0 all passed). */
int gpurun_main(struct gpu_api *api, const struct gpurun_opts *o);

#endif
