/* targetid.h: GPU target names for every backend: parsing, validation,
 * canonical form and compatibility.
 *
 * AMD target IDs follow LLVM's AMDGPUUsage "Target ID" section: a processor
 * (gfx90a) then features in the order the table there gives, each "+" or "-"
 * (gfx90a:sramecc+:xnack-).  The canonical form has the processor in lower
 * case and the features sorted by name; an absent feature means "any".
 * CUDA targets are sm_XX (cubin) or compute_XX (PTX), or a fatbin of either
 * with nvcc's own option --fatbin (kj__cuda_fatbin_opt); Vulkan targets are
 * vulkan1.0, vulkan1.1, vulkan1.2, vulkan1.3.
 */
#ifndef KJ_TARGETID_H
#define KJ_TARGETID_H

#include <stddef.h>

#include "kj_limits.h"

enum kj__feature_state { KJ_FEAT_ANY = 0, KJ_FEAT_ON = 1, KJ_FEAT_OFF = 2 };

struct kj__amd_target {
	char processor[32];   /* "gfx90a" */
	int xnack;            /* enum kj__feature_state */
	int sramecc;          /* enum kj__feature_state */
};

/* Parses an AMD target ID ("gfx90a", "gfx90a:xnack-", "gfx90a:sramecc+:xnack-").
 * Rejects the full triple form "amdgcn-amd-amdhsa--gfx90a", unknown
 * processors (not in the AMDGPUUsage processor table this file carries),
 * unknown features, features the processor does not support (gfx1030:xnack-),
 * repeated features, and anything with characters outside [a-z0-9:+-].
 * Returns 0 or KJIT_ETARGET, with a one-line reason in err. */
int kj__amd_target_parse(const char *s, struct kj__amd_target *t, char *err, size_t errlen);
/* Writes the canonical ID ("gfx90a:sramecc+:xnack-").  0 or KJIT_EINVAL. */
int kj__amd_target_format(const struct kj__amd_target *t, char *out, size_t outlen);
/* 1 if an object built for `built` may be loaded by a process whose target
 * is `want` (clang's isCompatibleTargetID: same processor; every feature of
 * `built` that is not ANY equals `want`'s).  An object for gfx90a (any)
 * serves gfx90a:xnack+; an object for gfx90a:xnack+ never serves gfx90a. */
int kj__amd_target_compatible(const struct kj__amd_target *built, const struct kj__amd_target *want);
/* The wavefront size of the processor: 64, or 32 for gfx10 and later. */
int kj__amd_wavefront(const struct kj__amd_target *t);

/* Maps HSA_OVERRIDE_GFX_VERSION "major.minor.stepping" to a processor the
 * way the ROCm runtime does (10.3.0 -> gfx1030, 9.0.10 -> gfx90a: minor and
 * stepping printed in hex).  0 or KJIT_EINVAL with a reason. */
int kj__hsa_override_to_processor(const char *s, char *out, size_t outlen, char *err, size_t errlen);

/* Checks a CUDA target "sm_90", "sm_90a", "compute_90"; *ptx = 1 for
 * compute_.  0 or KJIT_ETARGET with a reason. */
int kj__cuda_target_parse(const char *s, int *ptx, char *err, size_t errlen);
/* 1 if opt asks nvcc for a fatbin ("--fatbin" or "-fatbin", as nvcc spells
 * it): the object is then a CUDA fat binary (magic 0xBA55ED50) holding SASS
 * for sm_NN and PTX for compute_NN (target sm_NN), or PTX alone (target
 * compute_NN), under the extension "fatbin".  The option is in the key like
 * any other, so cubin, PTX and fatbin of one source never share a key. */
int kj__cuda_fatbin_opt(const char *opt);
/* Checks a Vulkan target env "vulkan1.0" (glslc's default) | "vulkan1.1" | "vulkan1.2" | "vulkan1.3". */
int kj__vulkan_target_parse(const char *s, char *err, size_t errlen);

/* Canonicalises any backend's target into out (AMD: sorted features; others
 * as given after validation).  0, KJIT_ETARGET or KJIT_EBACKEND. */
int kj__target_canon(int backend, const char *s, char *out, size_t outlen, char *err, size_t errlen);

/* Added by the targetid module (declarations only; the above are unchanged). */

/* 1 if name is a processor of the table ("gfx90a"), else 0. */
int kj__amd_processor_known(const char *name);
/* Which target features processor name supports (*xnack, *sramecc: 1 or 0;
 * either pointer may be NULL).  0, or KJIT_ETARGET for an unknown name. */
int kj__amd_processor_supports(const char *name, int *xnack, int *sramecc);
/* The processor of gfx IP version major.minor.stepping ("gfx" major, then
 * minor and stepping as one hex digit each: 9.0.10 -> gfx90a), as KFD's
 * gfx_target_version and HSA_OVERRIDE_GFX_VERSION give it.  0, or
 * KJIT_ETARGET when that names no processor of the table or out is short. */
int kj__amd_processor_from_version(unsigned major, unsigned minor, unsigned stepping, char *out,
				   size_t outlen);

#endif /* KJ_TARGETID_H */
