/*
 * hip_launch: run kjit's HIP kernels through the HIP module API, loaded at run time.
 *
 * libamdhip64.so.5 is dlopened and the few types and entry points used are declared
 * below, so this builds without ROCm headers.  Given an HSACO code object (or a
 * directory of NAME.gfxXXX.hsaco for every hip kernel of kernels_src/MANIFEST) it loads
 * it with hipModuleLoadData, launches with hipModuleLaunchKernel and checks every op
 * against the CPU oracle; --bench times each op next to a device copy (gpurun.h):
 *
 *   KJIT_OBJ_DIR=build/hsaco sh tests/kernels/test-kernels-compile.sh
 *   hip_launch build/hsaco        (the device's target from $KJIT_HIP_ARCH, else HIP)
 *   hip_launch build/hsaco/rms_norm_f32.gfx90a.hsaco
 *
 * It runs only where an AMD GPU and its kernel driver exist; elsewhere it says so in one
 * line ("no AMD GPU: ...") and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpurun.h"

/* The HIP API subset we use, declared by hand (no ROCm headers needed). */
typedef int hipError_t;
typedef void *hipModule_t, *hipFunction_t, *hipEvent_t, *hipStream_t, *hipDeviceptr_t;

#define HIP_PROPS_BYTES 8192 /* larger than hipDeviceProp_t of any ROCm release */

struct hip {
    void *lib;
    hipEvent_t ev[2];
    hipError_t (*hipInit)(unsigned);
    hipError_t (*hipGetDeviceCount)(int *);
    hipError_t (*hipSetDevice)(int);
    hipError_t (*hipGetDeviceProperties)(void *, int);
    hipError_t (*hipModuleLoadData)(hipModule_t *, const void *);
    hipError_t (*hipModuleUnload)(hipModule_t);
    hipError_t (*hipModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
    hipError_t (*hipMalloc)(void **, size_t);
    hipError_t (*hipFree)(void *);
    hipError_t (*hipMemcpyHtoD)(hipDeviceptr_t, void *, size_t);
    hipError_t (*hipMemcpyDtoH)(void *, hipDeviceptr_t, size_t);
    hipError_t (*hipMemcpyDtoD)(hipDeviceptr_t, hipDeviceptr_t, size_t);
    hipError_t (*hipMemsetD32)(hipDeviceptr_t, int, size_t);
    hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, hipStream_t, void **, void **);
    hipError_t (*hipDeviceSynchronize)(void);
    hipError_t (*hipEventCreate)(hipEvent_t *);
    hipError_t (*hipEventDestroy)(hipEvent_t);
    hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
    hipError_t (*hipEventSynchronize)(hipEvent_t);
    hipError_t (*hipEventElapsedTime)(float *, hipEvent_t, hipEvent_t);
    const char *(*hipGetErrorString)(hipError_t);
};

static int hip_load(struct hip *h)
{
    static const struct {
        const char *sym;
        size_t off;
    } tab[] = {
#define E(field) {#field, offsetof(struct hip, field)}
        E(hipInit), E(hipGetDeviceCount), E(hipSetDevice), E(hipGetDeviceProperties),
        E(hipModuleLoadData), E(hipModuleUnload), E(hipModuleGetFunction), E(hipMalloc),
        E(hipFree), E(hipMemcpyHtoD), E(hipMemcpyDtoH), E(hipMemcpyDtoD), E(hipMemsetD32),
        E(hipModuleLaunchKernel), E(hipDeviceSynchronize), E(hipEventCreate),
        E(hipEventDestroy), E(hipEventRecord), E(hipEventSynchronize), E(hipEventElapsedTime),
        E(hipGetErrorString),
#undef E
    };
    if (!(h->lib = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL)) &&
        !(h->lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "no HIP runtime: libamdhip64.so.5 not found\n");
        return -1;
    }
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        void *p = dlsym(h->lib, tab[i].sym);
        if (!p) {
            fprintf(stderr, "HIP runtime too old: %s missing from libamdhip64\n", tab[i].sym);
            return -1;
        }
        memcpy((char *)h + tab[i].off, &p, sizeof p); /* object-to-function pointer, POSIX */
    }
    return 0;
}

static const char *hip_errstr(void *ctx, int st)
{
    struct hip *h = ctx;
    const char *s = h->hipGetErrorString ? h->hipGetErrorString(st) : NULL;
    return s ? s : "unknown HIP error";
}

static void *dptr(uint64_t p) { return (void *)(uintptr_t)p; }

static int hip_load_module(void *ctx, const void *img, void **m)
{
    return ((struct hip *)ctx)->hipModuleLoadData(m, img);
}
static int hip_unload(void *ctx, void *m) { return ((struct hip *)ctx)->hipModuleUnload(m); }
static int hip_function(void *ctx, void *m, const char *name, void **fn)
{
    return ((struct hip *)ctx)->hipModuleGetFunction(fn, m, name);
}
static int hip_alloc(void *ctx, uint64_t *p, size_t n)
{
    void *d = NULL;
    int st = ((struct hip *)ctx)->hipMalloc(&d, n);
    *p = (uint64_t)(uintptr_t)d;
    return st;
}
static int hip_release(void *ctx, uint64_t p) { return ((struct hip *)ctx)->hipFree(dptr(p)); }
static int hip_htod(void *ctx, uint64_t d, const void *s, size_t n)
{
    return ((struct hip *)ctx)->hipMemcpyHtoD(dptr(d), (void *)(uintptr_t)s, n);
}
static int hip_dtoh(void *ctx, void *d, uint64_t s, size_t n)
{
    return ((struct hip *)ctx)->hipMemcpyDtoH(d, dptr(s), n);
}
static int hip_dtod(void *ctx, uint64_t d, uint64_t s, size_t n)
{
    return ((struct hip *)ctx)->hipMemcpyDtoD(dptr(d), dptr(s), n);
}
static int hip_fill32(void *ctx, uint64_t d, uint32_t v, size_t count)
{
    int iv;
    memcpy(&iv, &v, sizeof iv);
    return ((struct hip *)ctx)->hipMemsetD32(dptr(d), iv, count);
}
static int hip_launch(void *ctx, void *fn, const uint32_t g[2], unsigned block, unsigned smem,
                      void **params)
{
    /* kcase_dyn_smem asks for none on HIP (no HIP kernel takes the tensor-core path) */
    return ((struct hip *)ctx)->hipModuleLaunchKernel(fn, g[0], g[1], 1, block, 1, 1, smem, NULL,
                                                      params, NULL);
}
static int hip_sync(void *ctx) { return ((struct hip *)ctx)->hipDeviceSynchronize(); }
static int hip_timer_start(void *ctx)
{
    struct hip *h = ctx;
    return h->hipEventRecord(h->ev[0], NULL);
}
static int hip_timer_stop(void *ctx, float *ms)
{
    struct hip *h = ctx;
    int st = h->hipEventRecord(h->ev[1], NULL);
    if (st == 0)
        st = h->hipEventSynchronize(h->ev[1]);
    if (st == 0)
        st = h->hipEventElapsedTime(ms, h->ev[0], h->ev[1]);
    return st;
}

/* The device's target: $KJIT_HIP_ARCH, else the gcnArchName field of hipDeviceProp_t,
 * found as the first "gfx" string after the name (its offset differs between ROCm
 * releases, and we carry no header that would give it).  Features (":xnack-") dropped. */
static int device_arch(struct hip *h, char *name, size_t namelen, char *arch, size_t archlen)
{
    const char *env = getenv("KJIT_HIP_ARCH");
    unsigned char *props = calloc(1, HIP_PROPS_BYTES);
    int st;

    if (!props)
        return -1;
    if ((st = h->hipGetDeviceProperties(props, 0)) != 0) {
        fprintf(stderr, "HIP: hipGetDeviceProperties failed: %s\n", hip_errstr(h, st));
        free(props);
        return -1;
    }
    props[255] = '\0'; /* name[256] leads the struct in every release */
    memcpy(name, props, namelen - 1);
    name[namelen - 1] = '\0';
    arch[0] = '\0';
    if (env && *env)
        snprintf(arch, archlen, "%s", env);
    for (size_t i = 256; !arch[0] && i + 4 < HIP_PROPS_BYTES; i++)
        if (!memcmp(props + i, "gfx", 3) && (i == 0 || props[i - 1] == '\0'))
            snprintf(arch, archlen, "%.*s", (int)strcspn((const char *)props + i, ":"),
                     (const char *)props + i);
    free(props);
    if (!arch[0])
        snprintf(arch, archlen, "unknown (set KJIT_HIP_ARCH)");
    return 0;
}

#define HIPCHECK(call)                                                                     \
    do {                                                                                   \
        hipError_t st_ = (call);                                                           \
        if (st_ != 0) {                                                                    \
            fprintf(stderr, "HIP: %s failed: %s\n", #call, hip_errstr(&h, st_));           \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    struct gpurun_opts o;
    struct hip h;
    struct gpu_api api = {
        .name = "HIP", .obj_ext = "hsaco", .ctx = &h, .load = hip_load_module,
        .unload = hip_unload, .function = hip_function, .alloc = hip_alloc,
        .release = hip_release, .htod = hip_htod, .dtoh = hip_dtoh, .dtod = hip_dtod,
        .fill32 = hip_fill32, .launch = hip_launch, .sync = hip_sync,
        .timer_start = hip_timer_start, .timer_stop = hip_timer_stop, .errstr = hip_errstr};
    int r, n = 0, st;

    memset(&h, 0, sizeof h);
    if ((r = gpurun_parse_args(argc, argv, &o, "hip")) != 0)
        return r;
    r = 1;
    if (hip_load(&h) != 0)
        goto out;
    if ((st = h.hipInit(0)) != 0 || (st = h.hipGetDeviceCount(&n)) != 0 || n < 1) {
        fprintf(stderr, "no AMD GPU: HIP found no device (%s); this example runs only where "
                        "an AMD GPU and /dev/kfd exist\n", st ? hip_errstr(&h, st) : "count 0");
        goto out;
    }
    HIPCHECK(h.hipSetDevice(0));
    if (device_arch(&h, api.device, sizeof api.device, api.arch, sizeof api.arch) != 0)
        goto out;
    HIPCHECK(h.hipEventCreate(&h.ev[0]));
    HIPCHECK(h.hipEventCreate(&h.ev[1]));
    r = gpurun_main(&api, &o);
out:
    for (int i = 0; i < 2; i++)
        if (h.ev[i])
            h.hipEventDestroy(h.ev[i]);
    return r;
}
