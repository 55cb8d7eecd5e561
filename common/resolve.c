/* resolve.c: client-side resolution of targets and runtime versions from
 * the environment (see resolve.h, docs/targets.md).
 *
 * Resolution reads only the environment of the process that will load the
 * object (through a getenv the caller may replace, for tests), first match
 * wins, and only the winning variable is validated: a malformed one is an
 * error naming the variable, its value and the expected form, never a silent
 * fall-through to a lower one.  Empty values count as unset.
 *   hip:    KJIT_HIP_ARCH > HSA_OVERRIDE_GFX_VERSION (+ HSA_XNACK) > CANDLE_ROCM_ARCH
 *           versions: KJIT_ROCM_VERSION > CANDLE_ROCM_VERSION
 *   cuda:   KJIT_CUDA_ARCH;   version KJIT_CUDA_VERSION
 *   vulkan: KJIT_VULKAN_ENV;  no version variable
 * Detection, the daemon's half, lives in daemon/detect/.  No state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"
#include "kj_types.h"
#include "targetid.h"
#include "util.h"

#define QUOTE_MAX 64 /* longest piece of a user's value echoed in a message */

const char *kj__target_env_name(int backend)
{
	switch (backend) {
	case KJIT_BACKEND_HIP: return "KJIT_HIP_ARCH";
	case KJIT_BACKEND_CUDA: return "KJIT_CUDA_ARCH";
	case KJIT_BACKEND_VULKAN: return "KJIT_VULKAN_ENV";
	default: return "KJIT_HIP_ARCH, KJIT_CUDA_ARCH or KJIT_VULKAN_ENV";
	}
}

static const char *real_getenv(const char *name)
{
	return getenv(name);
}

/* The variable's value, or NULL when unset or empty. */
static const char *env(const char *(*get)(const char *), const char *name)
{
	const char *v = get(name);
	return v && v[0] ? v : NULL;
}

/* A printable, bounded copy of a user's value for messages. */
static const char *quote(char out[QUOTE_MAX + 4], const char *s)
{
	size_t k = 0;

	for (; k < QUOTE_MAX && s[k]; k++)
		out[k] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
	if (s[k]) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = '\0';
	return out;
}

/* 1 if v looks like N(.N)* and is a safe token. */
static int version_ok(const char *v)
{
	if (!kj__token_ok(v, KJ_VERSION_STR_MAX))
		return 0;
	for (const char *p = v;;) {
		size_t d = strspn(p, "0123456789");
		if (d == 0)
			return 0;
		p += d;
		if (*p == '\0')
			return 1;
		if (*p++ != '.')
			return 0;
	}
}

/* Canonicalises the value of var for backend into target. */
static int target_from_var(int backend, const char *var, const char *v, char target[KJ_TARGET_MAX],
			   char *err, size_t errlen)
{
	char why[256], q[QUOTE_MAX + 4];
	int rc = kj__target_canon(backend, v, target, KJ_TARGET_MAX, why, sizeof why);

	if (rc != 0) {
		target[0] = '\0';
		kj__seterr(err, errlen, "%s=%s: %s", var, quote(q, v), why);
		return rc == KJIT_EINVAL ? KJIT_ETARGET : rc;
	}
	return 0;
}

/* The xnack state HSA_XNACK asks for: ON, OFF, or ANY (unset / other). */
static int xnack_from_env(const char *(*get)(const char *))
{
	const char *v = get("HSA_XNACK");

	if (v && strcmp(v, "1") == 0)
		return KJ_FEAT_ON;
	if (v && strcmp(v, "0") == 0)
		return KJ_FEAT_OFF;
	return KJ_FEAT_ANY;
}

int kj__hsa_xnack_apply(char target[KJ_TARGET_MAX], const char *(*getenv_fn)(const char *name),
			const char **from)
{
	const char *(*get)(const char *) = getenv_fn ? getenv_fn : real_getenv;
	struct kj__amd_target t;
	int has_xnack = 0;

	if (kj__amd_target_parse(target, &t, NULL, 0) != 0)
		return KJIT_ETARGET;
	int x = xnack_from_env(get);
	kj__amd_processor_supports(t.processor, &has_xnack, NULL);
	if (x == KJ_FEAT_ANY || !has_xnack || t.xnack != KJ_FEAT_ANY)
		return kj__amd_target_format(&t, target, KJ_TARGET_MAX) == 0 ? 0 : KJIT_ETARGET;
	t.xnack = x;
	if (kj__amd_target_format(&t, target, KJ_TARGET_MAX) != 0)
		return KJIT_ETARGET;
	if (from)
		*from = "HSA_XNACK";
	return 0;
}

/* HSA_OVERRIDE_GFX_VERSION, with HSA_XNACK when the processor has xnack. */
static int hip_override(const char *(*get)(const char *), const char *v, char target[KJ_TARGET_MAX],
			const char **from, char *err, size_t errlen)
{
	char proc[32], why[256], q[QUOTE_MAX + 4];

	if (kj__hsa_override_to_processor(v, proc, sizeof proc, why, sizeof why) != 0) {
		kj__seterr(err, errlen, "HSA_OVERRIDE_GFX_VERSION=%s: %s", quote(q, v), why);
		return KJIT_EINVAL;
	}
	snprintf(target, KJ_TARGET_MAX, "%s", proc);
	*from = "HSA_OVERRIDE_GFX_VERSION";
	const char *xfrom = NULL;
	if (kj__hsa_xnack_apply(target, get, &xfrom) != 0)
		return KJIT_EINTERNAL;
	if (xfrom)
		*from = "HSA_OVERRIDE_GFX_VERSION+HSA_XNACK";
	return 0;
}

static int resolve_version(const char *(*get)(const char *), const char *const *vars, size_t nvars,
			   char version[KJ_VERSION_STR_MAX], const char **version_from, char *err,
			   size_t errlen)
{
	char q[QUOTE_MAX + 4];

	for (size_t i = 0; i < nvars; i++) {
		const char *v = env(get, vars[i]);
		if (v == NULL)
			continue;
		if (!version_ok(v)) {
			kj__seterr(err, errlen, "%s=%s: expected a version like 5.2 or 6.1.3 (digits and dots)",
			       vars[i], quote(q, v));
			return KJIT_EINVAL;
		}
		snprintf(version, KJ_VERSION_STR_MAX, "%s", v);
		*version_from = vars[i];
		return 0;
	}
	return 0;
}

int kj__resolve_env(int backend, const char *(*getenv_fn)(const char *name),
		    char target[KJ_TARGET_MAX], const char **target_from,
		    char version[KJ_VERSION_STR_MAX], const char **version_from,
		    char *err, size_t errlen)
{
	static const char *const hip_versions[] = { "KJIT_ROCM_VERSION", "CANDLE_ROCM_VERSION" };
	static const char *const cuda_versions[] = { "KJIT_CUDA_VERSION" };
	const char *(*get)(const char *) = getenv_fn ? getenv_fn : real_getenv;
	const char *v, *tfrom = NULL, *vfrom = NULL;
	int rc = 0;

	target[0] = '\0';
	version[0] = '\0';
	if (target_from)
		*target_from = NULL;
	if (version_from)
		*version_from = NULL;
	if (err && errlen)
		err[0] = '\0';
	switch (backend) {
	case KJIT_BACKEND_HIP:
		if ((v = env(get, "KJIT_HIP_ARCH")) != NULL) {
			tfrom = "KJIT_HIP_ARCH";
			rc = target_from_var(backend, tfrom, v, target, err, errlen);
		} else if ((v = env(get, "HSA_OVERRIDE_GFX_VERSION")) != NULL) {
			rc = hip_override(get, v, target, &tfrom, err, errlen);
		} else if ((v = env(get, "CANDLE_ROCM_ARCH")) != NULL) {
			tfrom = "CANDLE_ROCM_ARCH";
			rc = target_from_var(backend, tfrom, v, target, err, errlen);
		}
		if (rc == 0)
			rc = resolve_version(get, hip_versions, KJ_ARRAY_SIZE(hip_versions), version, &vfrom,
					     err, errlen);
		break;
	case KJIT_BACKEND_CUDA:
		if ((v = env(get, "KJIT_CUDA_ARCH")) != NULL) {
			tfrom = "KJIT_CUDA_ARCH";
			rc = target_from_var(backend, tfrom, v, target, err, errlen);
		}
		if (rc == 0)
			rc = resolve_version(get, cuda_versions, KJ_ARRAY_SIZE(cuda_versions), version,
					     &vfrom, err, errlen);
		break;
	case KJIT_BACKEND_VULKAN:
		if ((v = env(get, "KJIT_VULKAN_ENV")) != NULL) {
			tfrom = "KJIT_VULKAN_ENV";
			rc = target_from_var(backend, tfrom, v, target, err, errlen);
		}
		break;
	default:
		kj__seterr(err, errlen, "unknown backend %d (expected hip, cuda or vulkan)", backend);
		return KJIT_EBACKEND;
	}
	if (rc != 0) {
		target[0] = '\0';
		version[0] = '\0';
		tfrom = vfrom = NULL;
	}
	if (target_from)
		*target_from = target[0] ? tfrom : NULL;
	if (version_from)
		*version_from = version[0] ? vfrom : NULL;
	return rc;
}
