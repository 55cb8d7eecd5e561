/* fakegpu.c: a stand-in for libcuda.so.1 and libamdhip64.so, so that
 * kjit.cuda and kjit.hip are tested end to end on a machine without a GPU:
 * their ctypes prototypes, the packing of kernel arguments, the launch
 * geometry and stream, and error names.
 *
 * "Device" memory is host memory (cuMemAlloc is malloc).  A module is the
 * code object's bytes, which must be ELF (a cubin or HSACO from kjitd); the
 * only function it has is rms_norm_f32, and a launch of it runs
 * kernels_src/rms_norm.cu's arithmetic on the CPU with the arguments as the
 * driver would pass them (void *params[]: x, w, y, rows, cols, eps).  The
 * last launch's geometry and stream are kept for fake_last() to report.
 * Built by tests/python/test_kjit.py (cc -shared); one process, one thread.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define E_INVALID_VALUE 1
#define E_INVALID_IMAGE 200
#define E_NOT_FOUND 500

static void *current_ctx;
static unsigned last[8]; /* grid x y z, block x y z, shared, stream != NULL */

static const char *err_name(int r)
{
	switch (r) {
	case E_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
	case E_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
	default: return "CUDA_ERROR_INVALID_VALUE";
	}
}

static int load(void **m, const void *img)
{
	if (img == NULL || memcmp(img, "\177ELF", 4) != 0)
		return E_INVALID_IMAGE;
	*m = (void *)0x5678;
	return 0;
}

static int get_function(void **f, void *m, const char *name)
{
	static char rms[] = "rms_norm_f32";

	if (m != (void *)0x5678 || strcmp(name, rms) != 0)
		return E_NOT_FOUND;
	*f = rms;
	return 0;
}

static int launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		  unsigned bz, unsigned shared, void *stream, void **params)
{
	unsigned g[8] = { gx, gy, gz, bx, by, bz, shared, stream != NULL };

	if (f == NULL || strcmp(f, "rms_norm_f32") != 0 || params == NULL || bx != 256 || by != 1 ||
	    bz != 1 || gx == 0)
		return E_INVALID_VALUE;
	memcpy(last, g, sizeof last);
	const float *x = *(float **)params[0], *w = *(float **)params[1];
	float *y = *(float **)params[2];
	int rows = *(int *)params[3], cols = *(int *)params[4];
	float eps = *(float *)params[5];
	for (int r = 0; r < rows; r++) {
		float ss = 0.f;
		for (int i = 0; i < cols; i++)
			ss += x[(size_t)r * cols + i] * x[(size_t)r * cols + i];
		float inv = 1.f / sqrtf(ss / cols + eps);
		for (int i = 0; i < cols; i++)
			y[(size_t)r * cols + i] = x[(size_t)r * cols + i] * inv * w[i];
	}
	return 0;
}

/* What the test reads back: the last launch's geometry and stream. */
unsigned fake_last(int i);
unsigned fake_last(int i)
{
	return i >= 0 && i < 8 ? last[i] : 0;
}

/* ---- the CUDA driver API subset kjit.cuda uses ---- */

int cuInit(unsigned flags);
int cuDeviceGetCount(int *n);
int cuDeviceGet(int *d, int ordinal);
int cuDeviceGetAttribute(int *v, int attr, int dev);
int cuDevicePrimaryCtxRetain(void **ctx, int dev);
int cuCtxSetCurrent(void *ctx);
int cuCtxGetCurrent(void **ctx);
int cuCtxSynchronize(void);
int cuModuleLoadData(void **m, const void *img);
int cuModuleUnload(void *m);
int cuModuleGetFunction(void **f, void *m, const char *name);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shared, void *stream, void **params, void **extra);
int cuGetErrorName(int r, const char **s);
int cuMemAlloc_v2(uint64_t *p, size_t n);
int cuMemFree_v2(uint64_t p);
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n);
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n);

int cuInit(unsigned flags) { return flags == 0 ? 0 : E_INVALID_VALUE; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : E_INVALID_VALUE; }
int cuDeviceGetAttribute(int *v, int attr, int dev)
{
	*v = attr == 75 ? 9 : 0; /* compute capability 9.0 */
	return dev == 0 && (attr == 75 || attr == 76) ? 0 : E_INVALID_VALUE;
}
int cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = (void *)0x1234; return dev == 0 ? 0 : E_INVALID_VALUE; }
int cuCtxSetCurrent(void *ctx) { current_ctx = ctx; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = current_ctx; return 0; }
int cuCtxSynchronize(void) { return current_ctx ? 0 : E_INVALID_VALUE; }
int cuModuleLoadData(void **m, const void *img) { return current_ctx ? load(m, img) : E_INVALID_VALUE; }
int cuModuleUnload(void *m) { return m == (void *)0x5678 ? 0 : E_INVALID_VALUE; }
int cuModuleGetFunction(void **f, void *m, const char *name) { return get_function(f, m, name); }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
	if (current_ctx == NULL || extra != NULL)
		return E_INVALID_VALUE;
	return launch(f, gx, gy, gz, bx, by, bz, shared, stream, params);
}
int cuGetErrorName(int r, const char **s) { *s = err_name(r); return 0; }
int cuMemAlloc_v2(uint64_t *p, size_t n) { *p = (uintptr_t)malloc(n); return *p ? 0 : 2; }
int cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }

/* ---- the HIP runtime subset kjit.hip uses ---- */

int hipInit(unsigned flags);
int hipGetDeviceCount(int *n);
int hipSetDevice(int d);
int hipGetDevice(int *d);
int hipDeviceSynchronize(void);
int hipModuleLoadData(void **m, const void *img);
int hipModuleUnload(void *m);
int hipModuleGetFunction(void **f, void *m, const char *name);
int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			  unsigned bz, unsigned shared, void *stream, void **params, void **extra);
const char *hipGetErrorName(int r);
int hipMalloc(void **p, size_t n);
int hipFree(void *p);
int hipMemcpyHtoD(uint64_t d, const void *s, size_t n);
int hipMemcpyDtoH(void *d, uint64_t s, size_t n);

static int hip_device = -1;
int hipInit(unsigned flags) { return flags == 0 ? 0 : E_INVALID_VALUE; }
int hipGetDeviceCount(int *n) { *n = 1; return 0; }
int hipSetDevice(int d) { hip_device = d; return d == 0 ? 0 : E_INVALID_VALUE; }
int hipGetDevice(int *d) { *d = hip_device; return 0; }
int hipDeviceSynchronize(void) { return 0; }
int hipModuleLoadData(void **m, const void *img) { return hip_device == 0 ? load(m, img) : E_INVALID_VALUE; }
int hipModuleUnload(void *m) { return m == (void *)0x5678 ? 0 : E_INVALID_VALUE; }
int hipModuleGetFunction(void **f, void *m, const char *name) { return get_function(f, m, name); }
int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			  unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
	if (hip_device != 0 || extra != NULL)
		return E_INVALID_VALUE;
	return launch(f, gx, gy, gz, bx, by, bz, shared, stream, params);
}
const char *hipGetErrorName(int r) { return err_name(r); }
int hipMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int hipFree(void *p) { free(p); return 0; }
int hipMemcpyHtoD(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
int hipMemcpyDtoH(void *d, uint64_t s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
