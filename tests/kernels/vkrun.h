/*
 * vkrun.h: a small Vulkan compute runner for tests and examples.
 *
 * vkrun_create opens the Vulkan loader's first compute-capable physical device (or the
 * one at index $KJIT_VK_DEVICE): lavapipe on a machine without a GPU, the real GPU
 * elsewhere.  vkrun_dispatch runs one SPIR-V compute module (entry point "main") with N
 * storage buffers bound at set 0, bindings 0..N-1 in order, and a push-constant block,
 * then copies the buffers marked read_back back into host memory.  Every Vulkan call is
 * checked; a failure returns -1 and vkrun_error() says which call failed and with what
 * VkResult.  Buffers live in host-visible, coherent memory and are created and destroyed
 * per dispatch: simple and correct, not a benchmark of device-local memory.
 */
#ifndef KJIT_TESTS_VKRUN_H
#define KJIT_TESTS_VKRUN_H

#include <stddef.h>
#include <stdint.h>

#define VKRUN_MAX_BUFS 8
#define VKRUN_MAX_PUSH 128 /* the minimum maxPushConstantsSize every device offers */

struct vkrun;

struct vkrun_buf {
    void *data;    /* uploaded before the dispatch; receives the result if read_back */
    size_t bytes;
    int read_back;
};

/* Create a runner.  Returns 0, or -1 with a one-line reason in err; *out is owned by
 * the caller and released with vkrun_destroy. */
int vkrun_create(struct vkrun **out, char *err, size_t errlen);
/* Release everything; NULL is a no-op. */
void vkrun_destroy(struct vkrun *r);
/* The chosen device's name (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"). */
const char *vkrun_device_name(const struct vkrun *r);
/* The reason for the last failure, or "" */
const char *vkrun_error(const struct vkrun *r);
/* Run `spirv` (len bytes, a multiple of 4) over groups[0] x groups[1] x groups[2]
 * workgroups, iters >= 1 times (each submission waited for).  If median_ms is not NULL
 * it receives the median host-measured time of one submission.  Returns 0 or -1. */
int vkrun_dispatch(struct vkrun *r, const uint8_t *spirv, size_t len, struct vkrun_buf *bufs,
                   int nbufs, const void *push, size_t push_bytes, const uint32_t groups[3],
                   int iters, double *median_ms);

#endif
