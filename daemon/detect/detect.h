/* detect.h: what GPUs and runtimes this machine has (the daemon's half of
 * target choice; the client's half, resolution from the environment, is
 * common/resolve.h, included here because the daemon uses both).
 *
 * Detection runs in a short-lived child (`kjitd --detect`,
 * daemon/detect-run.c) so that no driver library is ever loaded into kjitd:
 * HIP from the KFD topology in sysfs
 * (<root>/class/kfd/kfd/topology/nodes/N/properties), rocminfo as fallback,
 * the ROCm version from what is installed; CUDA from libcuda loaded with
 * dlopen; Vulkan from the loader's physical devices.  None of it links into
 * libkjit.
 */
#ifndef KJ_DETECT_H
#define KJ_DETECT_H

#include <stddef.h>

#include "kj_limits.h"
#include "resolve.h"

struct kj__gpu {
	int backend;                        /* enum kjit_backend */
	char target[KJ_TARGET_MAX];         /* canonical: gfx90a:sramecc+:xnack-, sm_90, vulkan1.3 */
	char name[128];                     /* marketing or driver name, may be "" */
	char version[KJ_VERSION_STR_MAX];   /* runtime version: ROCm 5.2, CUDA 13.0, Vulkan API 1.3.239 */
};

/* Finds the GPUs of one backend.  sysfs_root NULL means "/sys".  Fills at
 * most max entries, sets *n, and writes into note a one-line reason when
 * none is found ("no AMD GPU: /sys/class/kfd absent; set KJIT_HIP_ARCH").
 * Returns 0 (also when none found) or a negative code. */
int kj__detect(int backend, const char *sysfs_root, struct kj__gpu *gpus, size_t max, size_t *n,
	       char *note, size_t notelen);

/* The installed runtime version for backend ("5.2" for ROCm from the
 * installed HIP runtime; "13.0" for CUDA from the driver or NVRTC), or ""
 * when unknown.  0 or a negative code. */
int kj__detect_runtime_version(int backend, char *out, size_t outlen);

/* Detection limits (candidates for kj_limits.h). */
#define KJ_DETECT_TOOL_TIMEOUT_MS 10000     /* rocminfo running longer is killed */
#define KJ_DETECT_TOOL_OUTPUT_MAX (1u << 20) /* rocminfo output kept (8 GPUs: ~60 KiB) */
#define KJ_DETECT_SYSFS_FILE_MAX (64u << 10) /* a KFD properties file is ~2 KiB */

/* The per-backend halves of kj__detect(), same contract.  kj__detect_hip
 * reads <root>/class/kfd/kfd/topology/nodes and, only when sysfs_root is
 * NULL and that directory is absent, runs rocminfo. */
int kj__detect_hip(const char *sysfs_root, struct kj__gpu *gpus, size_t max, size_t *n,
		   char *note, size_t notelen);
int kj__detect_cuda(struct kj__gpu *gpus, size_t max, size_t *n, char *note, size_t notelen);
int kj__detect_vulkan(struct kj__gpu *gpus, size_t max, size_t *n, char *note, size_t notelen);

/* The per-backend halves of kj__detect_runtime_version(), same contract:
 * ROCm from <ROCM_PATH or /opt/rocm>/.info/version, else the file name of
 * the installed libamdhip64.so.X.Y.Z; CUDA from the driver
 * (cuDriverGetVersion), else NVRTC (nvrtcVersion); Vulkan: the loader's
 * instance version (vkEnumerateInstanceVersion, "1.3.239"). */
int kj__hip_runtime_version(char *out, size_t outlen);
int kj__cuda_runtime_version(char *out, size_t outlen);
int kj__vulkan_runtime_version(char *out, size_t outlen);

/* Parses rocminfo's text: one entry per GPU agent, target from its ISA line
 * ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-") or else its "Name: gfx..."
 * line, name from "Marketing Name:".  Agents whose target does not parse are
 * skipped.  Sets *n; returns 0. */
int kj__hip_parse_rocminfo(const char *text, struct kj__gpu *gpus, size_t max, size_t *n);

#endif /* KJ_DETECT_H */
