/* detect.c: detection dispatch: kj__detect and kj__detect_runtime_version
 * pick the per-backend half (detect-hip.c, detect-cuda.c, detect-vulkan.c;
 * see detect.h).  Runs only in `kjitd --detect` (daemon/detect-run.c), a
 * short-lived child, so no driver library is ever loaded into kjitd and
 * none into libkjit.  No state.
 */
#include <stdio.h>

#include "detect.h"
#include "kj_types.h"
#include "util.h"

int kj__detect(int backend, const char *sysfs_root, struct kj__gpu *gpus, size_t max, size_t *n,
	       char *note, size_t notelen)
{
	if (n == NULL || (gpus == NULL && max > 0))
		return KJIT_EINVAL;
	switch (backend) {
	case KJIT_BACKEND_HIP:
		return kj__detect_hip(sysfs_root, gpus, max, n, note, notelen);
	case KJIT_BACKEND_CUDA:
		return kj__detect_cuda(gpus, max, n, note, notelen);
	case KJIT_BACKEND_VULKAN:
		return kj__detect_vulkan(gpus, max, n, note, notelen);
	default:
		*n = 0;
		kj__seterr(note, notelen, "unknown backend %d (expected hip, cuda or vulkan)", backend);
		return KJIT_EBACKEND;
	}
}

int kj__detect_runtime_version(int backend, char *out, size_t outlen)
{
	if (out == NULL || outlen == 0)
		return KJIT_EINVAL;
	out[0] = '\0';
	switch (backend) {
	case KJIT_BACKEND_HIP:
		return kj__hip_runtime_version(out, outlen);
	case KJIT_BACKEND_CUDA:
		return kj__cuda_runtime_version(out, outlen);
	case KJIT_BACKEND_VULKAN:
		return kj__vulkan_runtime_version(out, outlen);
	default:
		return KJIT_EBACKEND;
	}
}
