/* detect-cuda.c: which NVIDIA GPUs the driver shows, and which CUDA it is.
 *
 * The driver library is loaded at run time (dlopen "libcuda.so.1", the name
 * the driver installs; no CUDA headers or toolkit needed to build): cuInit,
 * then per device the compute capability (attributes 75 and 76, major and
 * minor) as target sm_<major><minor>, cuDeviceGetName, and
 * cuDriverGetVersion (13000 -> "13.0") as version.  The library is closed
 * again before returning; detection is meant to run in a short-lived child.
 * The runtime version falls back to NVRTC's own (nvrtcVersion) when there is
 * no driver, so that a GPU-less build machine still keys its PTX correctly.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "detect.h"
#include "kj_types.h"
#include "util.h"

/* The few driver API types and values used, from cuda.h's stable ABI. */
typedef int kj_CUresult;  /* CUresult: 0 is CUDA_SUCCESS */
typedef int kj_CUdevice;  /* CUdevice: an ordinal */
#define KJ_CU_ATTR_CC_MAJOR 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define KJ_CU_ATTR_CC_MINOR 76 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
#define KJ_CU_ERROR_NO_DEVICE 100

struct cuda_api {
	kj_CUresult (*init)(unsigned flags);
	kj_CUresult (*driver_version)(int *v);
	kj_CUresult (*device_count)(int *n);
	kj_CUresult (*device_get)(kj_CUdevice *d, int ordinal);
	kj_CUresult (*attribute)(int *v, int attr, kj_CUdevice d);
	kj_CUresult (*name)(char *name, int len, kj_CUdevice d);
};

/* Resolves the entry points.  0, or -1 naming the missing one in *missing. */
static int cuda_bind(void *h, struct cuda_api *a, const char **missing)
{
	static const char *const names[] = { "cuInit", "cuDriverGetVersion", "cuDeviceGetCount",
					     "cuDeviceGet", "cuDeviceGetAttribute", "cuDeviceGetName" };
	void *p[KJ_ARRAY_SIZE(names)];

	for (size_t i = 0; i < KJ_ARRAY_SIZE(names); i++) {
		if ((p[i] = dlsym(h, names[i])) == NULL) {
			*missing = names[i];
			return -1;
		}
	}
	/* POSIX guarantees object and function pointers convert (dlsym). */
	memcpy(&a->init, &p[0], sizeof p[0]);
	memcpy(&a->driver_version, &p[1], sizeof p[1]);
	memcpy(&a->device_count, &p[2], sizeof p[2]);
	memcpy(&a->device_get, &p[3], sizeof p[3]);
	memcpy(&a->attribute, &p[4], sizeof p[4]);
	memcpy(&a->name, &p[5], sizeof p[5]);
	return 0;
}

static void version_string(int v, char *out, size_t outlen)
{
	snprintf(out, outlen, "%d.%d", v / 1000, v % 1000 / 10);
}

int kj__detect_cuda(struct kj__gpu *gpus, size_t max, size_t *n, char *note, size_t notelen)
{
	struct cuda_api a;
	const char *missing = NULL;
	char version[KJ_VERSION_STR_MAX] = "";
	int count = 0, dv = 0;
	kj_CUresult cr;
	void *h;

	*n = 0;
	if (note && notelen)
		note[0] = '\0';
	if ((h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) == NULL) {
		kj__seterr(note, notelen, "no NVIDIA GPU: libcuda.so.1 not found; set KJIT_CUDA_ARCH (e.g. sm_90)");
		return 0;
	}
	if (cuda_bind(h, &a, &missing) != 0) {
		kj__seterr(note, notelen, "no NVIDIA GPU: libcuda.so.1 lacks %s; set KJIT_CUDA_ARCH (e.g. sm_90)",
			 missing);
		goto out;
	}
	if ((cr = a.init(0)) != 0) {
		kj__seterr(note, notelen, "no NVIDIA GPU: cuInit failed (CUDA error %d%s); set KJIT_CUDA_ARCH "
			 "(e.g. sm_90)", cr, cr == KJ_CU_ERROR_NO_DEVICE ? ", no device" : "");
		goto out;
	}
	if (a.driver_version(&dv) == 0)
		version_string(dv, version, sizeof version);
	if (a.device_count(&count) != 0 || count <= 0) {
		kj__seterr(note, notelen, "no NVIDIA GPU: the driver reports none; set KJIT_CUDA_ARCH (e.g. sm_90)");
		goto out;
	}
	for (int i = 0; i < count && *n < max; i++) {
		kj_CUdevice d;
		int major = 0, minor = 0;
		if (a.device_get(&d, i) != 0 || a.attribute(&major, KJ_CU_ATTR_CC_MAJOR, d) != 0 ||
		    a.attribute(&minor, KJ_CU_ATTR_CC_MINOR, d) != 0 || major <= 0 || major > 19 ||
		    minor < 0 || minor > 9)
			continue;
		struct kj__gpu *g = &gpus[(*n)++];
		memset(g, 0, sizeof *g);
		g->backend = KJIT_BACKEND_CUDA;
		snprintf(g->target, sizeof g->target, "sm_%d%d", major, minor);
		if (a.name(g->name, (int)sizeof g->name, d) != 0)
			g->name[0] = '\0';
		g->name[sizeof g->name - 1] = '\0';
		snprintf(g->version, sizeof g->version, "%s", version);
	}
	if (*n == 0)
		kj__seterr(note, notelen, "no NVIDIA GPU: no device answered; set KJIT_CUDA_ARCH (e.g. sm_90)");
out:
	dlclose(h);
	return 0;
}

/* NVRTC's version, for machines with the toolkit but no driver. */
static int nvrtc_version(char *out, size_t outlen)
{
	static const char *const libs[] = { "libnvrtc.so.13", "libnvrtc.so.12",
					    "/usr/local/cuda/lib64/libnvrtc.so.13",
					    "/usr/local/cuda/lib64/libnvrtc.so.12" };
	int (*fn)(int *, int *) = NULL;
	int major = 0, minor = 0, r = -1;

	for (size_t i = 0; i < KJ_ARRAY_SIZE(libs) && r != 0; i++) {
		void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
		if (h == NULL)
			continue;
		void *p = dlsym(h, "nvrtcVersion");
		if (p != NULL) {
			memcpy(&fn, &p, sizeof p);
			if (fn(&major, &minor) == 0) {
				snprintf(out, outlen, "%d.%d", major, minor);
				r = 0;
			}
		}
		dlclose(h);
	}
	return r;
}

int kj__cuda_runtime_version(char *out, size_t outlen)
{
	struct cuda_api a;
	const char *missing;
	int v = 0;
	void *h;

	out[0] = '\0';
	if ((h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) != NULL) {
		if (cuda_bind(h, &a, &missing) == 0 && a.driver_version(&v) == 0 && v > 0)
			version_string(v, out, outlen);
		dlclose(h);
	}
	if (out[0] == '\0' && nvrtc_version(out, outlen) != 0)
		out[0] = '\0';
	return 0;
}
