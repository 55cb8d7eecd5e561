/* resolve.h: which target and runtime version a client process asks for,
 * from its own environment (the client's half of target choice; detection,
 * the daemon's half, is daemon/detect/).
 *
 * The environment of the process that will load the object decides, with
 * the precedence of docs/targets.md: explicit target > KJIT_HIP_ARCH /
 * KJIT_CUDA_ARCH / KJIT_VULKAN_ENV > HSA_OVERRIDE_GFX_VERSION (with
 * HSA_XNACK) > CANDLE_ROCM_ARCH > (daemon) configuration > detection.
 */
#ifndef KJ_RESOLVE_H
#define KJ_RESOLVE_H

#include <stddef.h>

#include "kj_limits.h"

/* Resolves from the environment alone.  getenv_fn NULL means getenv (tests
 * pass their own).  On 0: target is canonical or "" (nothing set: the
 * daemon decides), *target_from names the variable it came from (static
 * string) or NULL; likewise version.  KJIT_ETARGET / KJIT_EINVAL with a
 * one-line reason in err naming the variable for a malformed value. */
int kj__resolve_env(int backend, const char *(*getenv_fn)(const char *name),
		    char target[KJ_TARGET_MAX], const char **target_from,
		    char version[KJ_VERSION_STR_MAX], const char **version_from,
		    char *err, size_t errlen);

/* The variable a user sets to choose the target of backend
 * ("KJIT_HIP_ARCH"...), for error messages. */
const char *kj__target_env_name(int backend);

/* Applies the loading process's HSA_XNACK to an AMD target, as the ROCm
 * runtime does (flag.h: "1" on, "0" off, anything else leaves the mode
 * unchanged): sets xnack+ / xnack- when the processor supports xnack and
 * the target does not already fix it.  target is canonical on entry and on
 * return; *from (may be NULL) is set to "HSA_XNACK" when it changed.
 * getenv_fn NULL means getenv.  0, or KJIT_ETARGET if target does not parse. */
int kj__hsa_xnack_apply(char target[KJ_TARGET_MAX], const char *(*getenv_fn)(const char *name),
			const char **from);

#endif /* KJ_RESOLVE_H */
