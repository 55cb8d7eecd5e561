/*
 * cuda_launch: run kjit's CUDA kernels through the CUDA driver API, loaded at run time.
 *
 * No CUDA toolkit is needed to build or run this: libcuda.so.1 (the driver) is dlopened
 * and the dozen types and entry points used are declared below.  Given a cubin (or a
 * directory of NAME.sm_XY.cubin for every cuda kernel of kernels_src/MANIFEST) it checks
 * each op against the CPU oracle, and with --bench times each op at 16384 x 8192 f32
 * next to a device-to-device copy (see gpurun.h for the shared part):
 *
 *   KJIT_OBJ_DIR=build/cubins sh tests/kernels/test-kernels-compile.sh   # make cubins
 *   cuda_launch build/cubins            # check every op      (make test-gpu)
 *   cuda_launch --bench build/cubins    # GB/s table          (make bench-gpu)
 *   cuda_launch build/cubins/rms_norm_f32.sm_90.cubin
 *
 * On a machine without the driver it prints "no CUDA driver: libcuda.so.1 not found"
 * and exits 1.  The context, events and library handle are owned by main's struct cuda
 * and released on every path.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpurun.h"

/* The CUDA driver API subset we use, declared by hand (cuda.h is not needed). */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUevent, *CUstream;

#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_EVENT_DEFAULT 0
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8 /* CUfunction_attribute, cuda.h */
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1 /* the kernel's static shared memory */

struct cuda {
    void *lib;
    CUcontext ctx;
    CUdevice dev;
    CUevent ev[2];
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice);
    CUresult (*cuCtxDestroy)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
    /* optional: blocks an SM (the launcher's KV split count; NULL if absent) */
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    /* optional (CUDA 12+ drivers): the tensor maps of gemm_sm90_*; NULL if absent */
    CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const unsigned long long *,
                                       const unsigned long long *, const unsigned *,
                                       const unsigned *, int, int, int, int);
};

/* CUtensorMap enums (cuda.h) */
#define CU_TENSOR_MAP_DATA_TYPE_FLOAT16 6
#define CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 9
#define CU_TENSOR_MAP_INTERLEAVE_NONE 0
#define CU_TENSOR_MAP_SWIZZLE_128B 3
#define CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3
#define CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0 /* zeros past the edges */

/* Resolve every entry point; versioned names are the ones the driver exports. */
static int cuda_load(struct cuda *c)
{
    static const struct {
        const char *sym;
        size_t off;
    } tab[] = {
#define E(field, sym) {sym, offsetof(struct cuda, field)}
        E(cuInit, "cuInit"), E(cuDeviceGetCount, "cuDeviceGetCount"),
        E(cuDeviceGet, "cuDeviceGet"), E(cuDeviceGetName, "cuDeviceGetName"),
        E(cuDeviceGetAttribute, "cuDeviceGetAttribute"), E(cuCtxCreate, "cuCtxCreate_v2"),
        E(cuCtxDestroy, "cuCtxDestroy_v2"), E(cuCtxSynchronize, "cuCtxSynchronize"),
        E(cuModuleLoadData, "cuModuleLoadData"), E(cuModuleUnload, "cuModuleUnload"),
        E(cuModuleGetFunction, "cuModuleGetFunction"), E(cuMemAlloc, "cuMemAlloc_v2"),
        E(cuMemFree, "cuMemFree_v2"), E(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
        E(cuMemcpyDtoH, "cuMemcpyDtoH_v2"), E(cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
        E(cuMemsetD32, "cuMemsetD32_v2"), E(cuLaunchKernel, "cuLaunchKernel"),
        E(cuEventCreate, "cuEventCreate"), E(cuEventDestroy, "cuEventDestroy_v2"),
        E(cuEventRecord, "cuEventRecord"), E(cuEventSynchronize, "cuEventSynchronize"),
        E(cuEventElapsedTime, "cuEventElapsedTime"), E(cuGetErrorString, "cuGetErrorString"),
        E(cuFuncSetAttribute, "cuFuncSetAttribute"), E(cuFuncGetAttribute, "cuFuncGetAttribute"),
#undef E
    };
    if (!(c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "no CUDA driver: libcuda.so.1 not found\n");
        return -1;
    }
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        void *p = dlsym(c->lib, tab[i].sym);
        if (!p) {
            fprintf(stderr, "CUDA driver too old: %s missing from libcuda.so.1\n", tab[i].sym);
            return -1;
        }
        memcpy((char *)c + tab[i].off, &p, sizeof p); /* object-to-function pointer, POSIX */
    }
    void *p = dlsym(c->lib, "cuTensorMapEncodeTiled");
    if (p)
        memcpy(&c->cuTensorMapEncodeTiled, &p, sizeof p);
    if ((p = dlsym(c->lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor")) != NULL)
        memcpy(&c->cuOccupancyMaxActiveBlocksPerMultiprocessor, &p, sizeof p);
    return 0;
}

static const char *cu_errstr(void *ctx, int st)
{
    struct cuda *c = ctx;
    const char *s = NULL;
    if (c->cuGetErrorString && c->cuGetErrorString(st, &s) == 0 && s)
        return s;
    return "unknown CUDA error";
}

static int cu_load_module(void *ctx, const void *img, void **m)
{
    return ((struct cuda *)ctx)->cuModuleLoadData(m, img);
}
static int cu_unload(void *ctx, void *m) { return ((struct cuda *)ctx)->cuModuleUnload(m); }
static int cu_function(void *ctx, void *m, const char *name, void **fn)
{
    return ((struct cuda *)ctx)->cuModuleGetFunction(fn, m, name);
}
static int cu_alloc(void *ctx, uint64_t *p, size_t n)
{
    CUdeviceptr d = 0;
    int st = ((struct cuda *)ctx)->cuMemAlloc(&d, n);
    *p = d;
    return st;
}
static int cu_release(void *ctx, uint64_t p) { return ((struct cuda *)ctx)->cuMemFree(p); }
static int cu_htod(void *ctx, uint64_t d, const void *s, size_t n)
{
    return ((struct cuda *)ctx)->cuMemcpyHtoD(d, s, n);
}
static int cu_dtoh(void *ctx, void *d, uint64_t s, size_t n)
{
    return ((struct cuda *)ctx)->cuMemcpyDtoH(d, s, n);
}
static int cu_dtod(void *ctx, uint64_t d, uint64_t s, size_t n)
{
    return ((struct cuda *)ctx)->cuMemcpyDtoD(d, s, n);
}
static int cu_fill32(void *ctx, uint64_t d, uint32_t v, size_t count)
{
    return ((struct cuda *)ctx)->cuMemsetD32(d, v, count);
}
static int cu_launch(void *ctx, void *fn, const uint32_t g[2], unsigned block, unsigned smem,
                     void **params)
{
    struct cuda *c = ctx;
    int stat = 0; /* a block gets over 48 KB, static and dynamic together, only once the
                   * dynamic limit is raised (not only when the dynamic part alone is over) */
    if (smem > 0) {
        int st = c->cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
        if (st != 0)
            return st;
    }
    if (smem + (unsigned)stat > 48 * 1024) {
        int st = c->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
        if (st != 0)
            return st;
    }
    return c->cuLaunchKernel(fn, g[0], g[1], 1, block, 1, 1, smem, NULL, params, NULL);
}
static int cu_tmap2d(void *ctx, void *map, uint64_t dptr, int half, uint64_t inner,
                     uint64_t outer, uint32_t box_inner, uint32_t box_outer)
{
    struct cuda *c = ctx;
    const unsigned long long dim[2] = {inner, outer}, stride[1] = {inner * 2};
    const unsigned box[2] = {box_inner, box_outer}, estride[2] = {1, 1};
    if (!c->cuTensorMapEncodeTiled)
        return 801; /* CUDA_ERROR_NOT_SUPPORTED: the driver has no tensor maps */
    return c->cuTensorMapEncodeTiled(map, half == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                     2, (void *)(uintptr_t)dptr, dim, stride, box, estride,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}
static int cu_slots(void *ctx, void *fn, unsigned block, int *n)
{
    struct cuda *c = ctx;
    int sms = 0, per_sm = 0, st;
    *n = 0;
    if (!c->cuOccupancyMaxActiveBlocksPerMultiprocessor)
        return 500; /* CUDA_ERROR_NOT_FOUND: the driver lacks the occupancy query */
    st = c->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev);
    if (st != 0 || (st = c->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (int)block, 0)) != 0)
        return st;
    *n = sms * per_sm;
    return 0;
}
static int cu_sync(void *ctx) { return ((struct cuda *)ctx)->cuCtxSynchronize(); }
static int cu_timer_start(void *ctx)
{
    struct cuda *c = ctx;
    return c->cuEventRecord(c->ev[0], NULL);
}
static int cu_timer_stop(void *ctx, float *ms)
{
    struct cuda *c = ctx;
    int st = c->cuEventRecord(c->ev[1], NULL);
    if (st == 0)
        st = c->cuEventSynchronize(c->ev[1]);
    if (st == 0)
        st = c->cuEventElapsedTime(ms, c->ev[0], c->ev[1]);
    return st;
}

#define CU(call)                                                                           \
    do {                                                                                   \
        CUresult st_ = (call);                                                             \
        if (st_ != 0) {                                                                    \
            fprintf(stderr, "CUDA: %s failed: %s\n", #call, cu_errstr(&cu, st_));          \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    struct gpurun_opts o;
    struct cuda cu;
    struct gpu_api api = {
        .name = "CUDA", .obj_ext = "cubin", .ctx = &cu, .load = cu_load_module,
        .unload = cu_unload, .function = cu_function, .alloc = cu_alloc, .release = cu_release,
        .htod = cu_htod, .dtoh = cu_dtoh, .dtod = cu_dtod, .fill32 = cu_fill32,
        .launch = cu_launch, .tmap2d = cu_tmap2d, .slots = cu_slots, .sync = cu_sync,
        .timer_start = cu_timer_start,
        .timer_stop = cu_timer_stop, .errstr = cu_errstr};
    int r = 1, n = 0, major = 0, minor = 0;

    memset(&cu, 0, sizeof cu);
    if ((r = gpurun_parse_args(argc, argv, &o, "cuda")) != 0)
        return r;
    r = 1;
    if (cuda_load(&cu) != 0)
        goto out;
    CU(cu.cuInit(0));
    CU(cu.cuDeviceGetCount(&n));
    if (n < 1) {
        fprintf(stderr, "no CUDA device: the driver found none\n");
        goto out;
    }
    CU(cu.cuDeviceGet(&cu.dev, 0));
    CU(cu.cuDeviceGetName(api.device, (int)sizeof api.device, cu.dev));
    CU(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu.dev));
    CU(cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu.dev));
    snprintf(api.arch, sizeof api.arch, "sm_%d%d", major, minor);
    CU(cu.cuCtxCreate(&cu.ctx, 0, cu.dev));
    CU(cu.cuEventCreate(&cu.ev[0], CU_EVENT_DEFAULT));
    CU(cu.cuEventCreate(&cu.ev[1], CU_EVENT_DEFAULT));
    r = gpurun_main(&api, &o);
out:
    for (int i = 0; i < 2; i++)
        if (cu.ev[i])
            cu.cuEventDestroy(cu.ev[i]);
    if (cu.ctx)
        cu.cuCtxDestroy(cu.ctx);
    /* libcuda stays loaded until exit: unloading a driver library is not worth the risk */
    return r;
}
