/*
 * vkrun.h: a small Vulkan compute runner for tests, examples and the GPU bench.
 *
 * vkrun_create opens the Vulkan loader's first compute-capable physical device (or the
 * one at index $KJIT_VK_DEVICE): lavapipe on a machine without a GPU, the real GPU
 * elsewhere, and enables what the kernels' variants may use (integer dot product where
 * the device has it).  vkrun_caps says what the device reports, so a launcher can choose
 * a variant.  vkrun_dispatch runs one SPIR-V compute module (entry point "main") with N
 * storage buffers bound at set 0, bindings 0..N-1 in order, and a push-constant block,
 * the way an application on a GPU does: buffers in DEVICE_LOCAL memory, filled and read
 * back through host-visible staging buffers (on a device whose only memory is
 * host-visible, lavapipe, the buffers are mapped directly); timing by GPU timestamps
 * around each dispatch alone.  vkrun_copy times a device-to-device vkCmdCopyBuffer of
 * the same kind, the floor a memory-bound kernel is measured against.  Every Vulkan call
 * is checked; a failure returns -1 and vkrun_error() says which call failed and with
 * what VkResult.
 */
#ifndef KJIT_TESTS_VKRUN_H
#define KJIT_TESTS_VKRUN_H

#include <stddef.h>
#include <stdint.h>

#define VKRUN_MAX_BUFS 8
#define VKRUN_MAX_PUSH 128 /* the minimum maxPushConstantsSize every device offers */
#define VKRUN_MAX_ITERS 1000 /* timed dispatches in one round */
#define VKRUN_MAX_RUNS 50    /* timing rounds */

struct vkrun;

struct vkrun_buf {
    void *data;    /* uploaded before the dispatch; receives the result if read_back */
    size_t bytes;
    int read_back;
};

/* What the chosen device reports, for choosing kernel variants and reading figures. */
struct vkrun_caps {
    uint32_t api_version;   /* the device's Vulkan version (VK_MAKE_API_VERSION) */
    uint32_t subgroup_size; /* invocations per subgroup (32 on NVIDIA) */
    int subgroup_arith;     /* compute shaders have subgroup arithmetic (subgroupAdd...) */
    int int_dot;            /* shaderIntegerDotProduct is enabled (SPV_KHR_integer_dot_product) */
    int int_dot_accel;      /* the device says packed signed 4x8 dot products are accelerated */
    uint32_t shared_bytes;  /* maxComputeSharedMemorySize */
    int device_local;       /* buffers live in device-only memory, moved through staging */
    int timestamps;         /* GPU timestamps on the compute queue (else host timing) */
    double ts_period_ns;    /* nanoseconds per timestamp tick */
};

/* Create a runner.  Returns 0, or -1 with a one-line reason in err; *out is owned by
 * the caller and released with vkrun_destroy. */
int vkrun_create(struct vkrun **out, char *err, size_t errlen);
/* Release everything; NULL is a no-op. */
void vkrun_destroy(struct vkrun *r);
/* The chosen device's name (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"). */
const char *vkrun_device_name(const struct vkrun *r);
/* The chosen device's capabilities (valid until vkrun_destroy). */
const struct vkrun_caps *vkrun_caps(const struct vkrun *r);
/* The reason for the last failure, or "" */
const char *vkrun_error(const struct vkrun *r);
/* Run `spirv` (len bytes, a multiple of 4) over groups[0] x groups[1] x groups[2]
 * workgroups once, and read back the buffers marked read_back.  With ms != NULL, then
 * time it: warm-up rounds for half a second (clocks and memory settle), then `runs` rounds (1..VKRUN_MAX_RUNS) of `iters`
 * (1..VKRUN_MAX_ITERS) dispatches, each dispatch between two GPU timestamps with a
 * barrier before the next; ms[0..runs-1] receives each round's median dispatch time in
 * milliseconds, sorted ascending.  Returns 0 or -1. */
int vkrun_dispatch(struct vkrun *r, const uint8_t *spirv, size_t len, struct vkrun_buf *bufs,
                   int nbufs, const void *push, size_t push_bytes, const uint32_t groups[3],
                   int iters, int runs, double *ms);
/* Time a device-to-device vkCmdCopyBuffer of `bytes` (a multiple of 4) the same way as
 * vkrun_dispatch times a dispatch: ms[0..runs-1], sorted ascending.  Returns 0 or -1. */
int vkrun_copy(struct vkrun *r, size_t bytes, int iters, int runs, double *ms);

#endif
