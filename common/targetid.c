/* targetid.c: GPU target names of every backend (see targetid.h).
 *
 * AMD target IDs are checked against a processor table copied from LLVM: the
 * AMDGCNGPUs table of llvm/lib/TargetParser/TargetParser.cpp (the same
 * FEATURE_XNACK / FEATURE_SRAMECC / FEATURE_WAVE32 columns AMDGPUUsage's
 * "AMDGPU Processors" table documents as "Target Features Supported").  A
 * processor listed here parses as known even when the installed comgr cannot
 * compile for it; the compiler worker rejects those separately.
 *
 * Invariants: a parsed struct kj__amd_target always names a processor of the
 * table and carries only features that processor supports; the canonical
 * text form is lower case with features sorted by name (sramecc, xnack).
 * Compatibility follows clang's isCompatibleTargetID (clang/lib/Basic/
 * TargetID.cpp): same processor, and every feature the object was built with
 * (not "any") must be given, with the same value, by the loading process.
 *
 * HSA_OVERRIDE_GFX_VERSION is read the way ROCm's thunk reads it
 * (libhsakmt/src/topology.c: sscanf "%u.%u.%u%c" == 3, major <= 63,
 * minor/stepping <= 255), only stricter: digits only, and minor and stepping
 * must each be one hex digit so that "gfx" major minor stepping names a
 * processor of the table (the runtime ignores a GPU whose overridden ISA it
 * does not know).  No state; every function is reentrant.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_types.h"
#include "targetid.h"
#include "util.h"

#define F_XNACK 1u   /* the processor supports the xnack feature */
#define F_SRAMECC 2u /* the processor supports the sramecc feature */
#define F_WAVE32 4u  /* default wavefront size is 32 (gfx10 and later) */

struct processor {
	const char *name;
	unsigned flags;
};

/* From LLVM's AMDGCNGPUs table (TargetParser.cpp), canonical names only. */
static const struct processor processors[] = {
	{ "gfx600", 0 }, { "gfx601", 0 }, { "gfx602", 0 },
	{ "gfx700", 0 }, { "gfx701", 0 }, { "gfx702", 0 }, { "gfx703", 0 },
	{ "gfx704", 0 }, { "gfx705", 0 },
	{ "gfx801", F_XNACK }, { "gfx802", 0 }, { "gfx803", 0 }, { "gfx805", 0 },
	{ "gfx810", F_XNACK },
	{ "gfx900", F_XNACK }, { "gfx902", F_XNACK }, { "gfx904", F_XNACK },
	{ "gfx906", F_XNACK | F_SRAMECC }, { "gfx908", F_XNACK | F_SRAMECC },
	{ "gfx909", F_XNACK }, { "gfx90a", F_XNACK | F_SRAMECC }, { "gfx90c", F_XNACK },
	{ "gfx940", F_XNACK | F_SRAMECC }, { "gfx941", F_XNACK | F_SRAMECC },
	{ "gfx942", F_XNACK | F_SRAMECC },
	{ "gfx1010", F_WAVE32 | F_XNACK }, { "gfx1011", F_WAVE32 | F_XNACK },
	{ "gfx1012", F_WAVE32 | F_XNACK }, { "gfx1013", F_WAVE32 | F_XNACK },
	{ "gfx1030", F_WAVE32 }, { "gfx1031", F_WAVE32 }, { "gfx1032", F_WAVE32 },
	{ "gfx1033", F_WAVE32 }, { "gfx1034", F_WAVE32 }, { "gfx1035", F_WAVE32 },
	{ "gfx1036", F_WAVE32 },
	{ "gfx1100", F_WAVE32 }, { "gfx1101", F_WAVE32 }, { "gfx1102", F_WAVE32 },
	{ "gfx1103", F_WAVE32 }, { "gfx1150", F_WAVE32 }, { "gfx1151", F_WAVE32 },
	{ "gfx1152", F_WAVE32 },
	{ "gfx1200", F_WAVE32 }, { "gfx1201", F_WAVE32 },
};

/* What a user may have meant, quoted in messages (never longer than this). */
#define QUOTE_MAX 48

static const struct processor *processor_find(const char *name, size_t len)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(processors); i++)
		if (strlen(processors[i].name) == len && memcmp(processors[i].name, name, len) == 0)
			return &processors[i];
	return NULL;
}

int kj__amd_processor_known(const char *name)
{
	return name != NULL && processor_find(name, strlen(name)) != NULL;
}

int kj__amd_processor_supports(const char *name, int *xnack, int *sramecc)
{
	const struct processor *p = name ? processor_find(name, strlen(name)) : NULL;

	if (p == NULL)
		return KJIT_ETARGET;
	if (xnack)
		*xnack = (p->flags & F_XNACK) != 0;
	if (sramecc)
		*sramecc = (p->flags & F_SRAMECC) != 0;
	return 0;
}

/* Copies at most n bytes of s into a printable, bounded quote buffer. */
static const char *quote(char out[QUOTE_MAX + 4], const char *s, size_t n)
{
	size_t k = 0;

	for (; k < n && k < QUOTE_MAX && s[k]; k++)
		out[k] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
	if (k < n && s[k]) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = '\0';
	return out;
}

/* Applies one "name+" / "name-" segment [seg, seg+len) to t. */
static int parse_feature(const struct processor *p, const char *seg, size_t len,
			 struct kj__amd_target *t, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];
	int *slot;
	unsigned need;

	if (len == 0) {
		kj__seterr(err, errlen, "empty target feature (features look like ':xnack+' or ':sramecc-')");
		return KJIT_ETARGET;
	}
	char sign = seg[len - 1];
	size_t nlen = (sign == '+' || sign == '-') ? len - 1 : len;
	if (nlen == 7 && memcmp(seg, "sramecc", 7) == 0) {
		slot = &t->sramecc;
		need = F_SRAMECC;
	} else if (nlen == 5 && memcmp(seg, "xnack", 5) == 0) {
		slot = &t->xnack;
		need = F_XNACK;
	} else {
		kj__seterr(err, errlen, "unknown target feature '%s' (known: sramecc, xnack)", quote(q, seg, nlen));
		return KJIT_ETARGET;
	}
	if (nlen == len) {
		kj__seterr(err, errlen, "target feature '%s' needs '+' or '-' (%s+ or %s-)", quote(q, seg, nlen),
		       q, q);
		return KJIT_ETARGET;
	}
	if (*slot != KJ_FEAT_ANY) {
		kj__seterr(err, errlen, "target feature '%s' given twice", quote(q, seg, nlen));
		return KJIT_ETARGET;
	}
	if (!(p->flags & need)) {
		kj__seterr(err, errlen, "%s does not support the %s feature (leave it out)", p->name,
		       quote(q, seg, nlen));
		return KJIT_ETARGET;
	}
	*slot = sign == '+' ? KJ_FEAT_ON : KJ_FEAT_OFF;
	return 0;
}

/* Rejects characters outside [a-z0-9:+-], with a hint for upper case. */
static int check_chars(const char *s, size_t n, char *err, size_t errlen)
{
	char lower[KJ_TARGET_MAX];
	int upper = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isupper(c) && n < sizeof lower) {
			upper = 1;
			continue;
		}
		if (!(islower(c) || isdigit(c) || c == ':' || c == '+' || c == '-')) {
			kj__seterr(err, errlen, "character '%c' not allowed in an AMD target ID (use e.g. gfx90a:xnack-)",
			       isprint(c) ? c : '?');
			return KJIT_ETARGET;
		}
	}
	if (upper) {
		for (size_t i = 0; i <= n; i++)
			lower[i] = (char)tolower((unsigned char)s[i]);
		kj__seterr(err, errlen, "AMD target IDs are lower case: write '%s'", lower);
		return KJIT_ETARGET;
	}
	return 0;
}

int kj__amd_target_parse(const char *s, struct kj__amd_target *t, char *err, size_t errlen)
{
	struct kj__amd_target r = { .xnack = KJ_FEAT_ANY, .sramecc = KJ_FEAT_ANY };
	char q[QUOTE_MAX + 4];
	int rc;

	if (s == NULL || s[0] == '\0') {
		kj__seterr(err, errlen, "empty AMD target ID (expected e.g. gfx90a or gfx90a:xnack-)");
		return KJIT_ETARGET;
	}
	size_t n = strlen(s);
	if (n >= KJ_TARGET_MAX) {
		kj__seterr(err, errlen, "AMD target ID longer than %d characters", KJ_TARGET_MAX - 1);
		return KJIT_ETARGET;
	}
	if ((rc = check_chars(s, n, err, errlen)) != 0)
		return rc;
	const char *colon = strchr(s, ':');
	size_t plen = colon ? (size_t)(colon - s) : n;
	if (memchr(s, '-', plen) != NULL && strncmp(s, "amdgcn", 6) == 0) {
		const char *tail = strstr(s, "--");
		kj__seterr(err, errlen, "give the target ID without the triple: '%s', not '%s'",
		       tail ? quote(q, tail + 2, strlen(tail + 2)) : "gfx90a", s);
		return KJIT_ETARGET;
	}
	const struct processor *p = processor_find(s, plen);
	if (p == NULL) {
		kj__seterr(err, errlen, "unknown AMD processor '%s' (expected e.g. gfx90a, gfx942, gfx1030, gfx1100)",
		       quote(q, s, plen));
		return KJIT_ETARGET;
	}
	while (colon != NULL) {
		const char *seg = colon + 1;
		colon = strchr(seg, ':');
		size_t len = colon ? (size_t)(colon - seg) : strlen(seg);
		if ((rc = parse_feature(p, seg, len, &r, err, errlen)) != 0)
			return rc;
	}
	snprintf(r.processor, sizeof r.processor, "%s", p->name);
	*t = r;
	return 0;
}

static const char *feature_sign(int state)
{
	return state == KJ_FEAT_ON ? "+" : "-";
}

int kj__amd_target_format(const struct kj__amd_target *t, char *out, size_t outlen)
{
	char buf[KJ_TARGET_MAX];
	int n;

	if (t == NULL || out == NULL || !kj__amd_processor_known(t->processor))
		return KJIT_EINVAL;
	if (t->xnack < KJ_FEAT_ANY || t->xnack > KJ_FEAT_OFF || t->sramecc < KJ_FEAT_ANY ||
	    t->sramecc > KJ_FEAT_OFF)
		return KJIT_EINVAL;
	/* Sorted by feature name: sramecc before xnack. */
	n = snprintf(buf, sizeof buf, "%s%s%s%s%s", t->processor,
		     t->sramecc ? ":sramecc" : "", t->sramecc ? feature_sign(t->sramecc) : "",
		     t->xnack ? ":xnack" : "", t->xnack ? feature_sign(t->xnack) : "");
	if (n < 0 || (size_t)n >= outlen)
		return KJIT_EINVAL;
	memcpy(out, buf, (size_t)n + 1);
	return 0;
}

int kj__amd_target_compatible(const struct kj__amd_target *built, const struct kj__amd_target *want)
{
	if (built == NULL || want == NULL || strcmp(built->processor, want->processor) != 0)
		return 0;
	if (built->xnack != KJ_FEAT_ANY && built->xnack != want->xnack)
		return 0;
	if (built->sramecc != KJ_FEAT_ANY && built->sramecc != want->sramecc)
		return 0;
	return 1;
}

int kj__amd_wavefront(const struct kj__amd_target *t)
{
	const struct processor *p = t ? processor_find(t->processor, strlen(t->processor)) : NULL;

	return p && (p->flags & F_WAVE32) ? 32 : 64;
}

int kj__amd_processor_from_version(unsigned major, unsigned minor, unsigned stepping, char *out,
				   size_t outlen)
{
	char buf[32];

	if (major == 0 || major > 99 || minor > 15 || stepping > 15)
		return KJIT_ETARGET;
	snprintf(buf, sizeof buf, "gfx%u%x%x", major, minor, stepping);
	if (!kj__amd_processor_known(buf) || strlen(buf) >= outlen)
		return KJIT_ETARGET;
	memcpy(out, buf, strlen(buf) + 1);
	return 0;
}

/* Parses one decimal field of at most 3 digits ending at stop.  -1 if bad. */
static long parse_field(const char **pp, char stop)
{
	const char *p = *pp;
	long v = 0;
	int digits = 0;

	while (isdigit((unsigned char)*p) && digits < 4) {
		v = v * 10 + (*p++ - '0');
		digits++;
	}
	if (digits == 0 || digits > 3 || *p != stop)
		return -1;
	*pp = stop ? p + 1 : p;
	return v;
}

int kj__hsa_override_to_processor(const char *s, char *out, size_t outlen, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];
	long major, minor, step;
	const char *p = s;

	if (s == NULL || s[0] == '\0') {
		kj__seterr(err, errlen, "empty; expected major.minor.stepping, e.g. 10.3.0");
		return KJIT_EINVAL;
	}
	if ((major = parse_field(&p, '.')) < 0 || (minor = parse_field(&p, '.')) < 0 ||
	    (step = parse_field(&p, '\0')) < 0) {
		kj__seterr(err, errlen, "'%s' is not major.minor.stepping, e.g. 10.3.0 or 9.0.10 (three decimal numbers)",
		       quote(q, s, strlen(s)));
		return KJIT_EINVAL;
	}
	if (major == 0 || major > 63 || minor > 15 || step > 15) {
		kj__seterr(err, errlen, "%ld.%ld.%ld is out of range: major 1..63, minor and stepping 0..15 "
		       "(expected major.minor.stepping, e.g. 10.3.0)", major, minor, step);
		return KJIT_EINVAL;
	}
	if (kj__amd_processor_from_version((unsigned)major, (unsigned)minor, (unsigned)step, out,
					   outlen) != 0) {
		kj__seterr(err, errlen, "%ld.%ld.%ld names no known AMD processor (gfx%ld%lx%lx); expected "
		       "major.minor.stepping, e.g. 10.3.0", major, minor, step, major, minor, step);
		return KJIT_EINVAL;
	}
	return 0;
}

int kj__cuda_target_parse(const char *s, int *ptx, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];
	const char *p;
	int is_ptx;

	if (s == NULL || s[0] == '\0') {
		kj__seterr(err, errlen, "empty CUDA target (expected sm_90 for cubin or compute_90 for PTX)");
		return KJIT_ETARGET;
	}
	if (strncmp(s, "sm_", 3) == 0) {
		p = s + 3;
		is_ptx = 0;
	} else if (strncmp(s, "compute_", 8) == 0) {
		p = s + 8;
		is_ptx = 1;
	} else {
		kj__seterr(err, errlen, "unknown CUDA target '%s' (expected sm_NN for cubin or compute_NN for PTX, "
		       "e.g. sm_90)", quote(q, s, strlen(s)));
		return KJIT_ETARGET;
	}
	size_t nd = strspn(p, "0123456789");
	/* Two digits (sm_50..sm_90) or three starting with 1 (sm_100, sm_120). */
	int ok = (nd == 2 && p[0] != '0') || (nd == 3 && p[0] == '1');
	const char *suffix = p + nd;
	if (ok && suffix[0] != '\0' && !((suffix[0] == 'a' || suffix[0] == 'f') && suffix[1] == '\0'))
		ok = 0;
	if (!ok) {
		kj__seterr(err, errlen, "malformed CUDA target '%s' (expected sm_NN, sm_NNa, compute_NN or "
		       "compute_NNa with NN the compute capability, e.g. sm_90)", quote(q, s, strlen(s)));
		return KJIT_ETARGET;
	}
	if (ptx)
		*ptx = is_ptx;
	return 0;
}

int kj__cuda_fatbin_opt(const char *opt)
{
	return opt && (strcmp(opt, "--fatbin") == 0 || strcmp(opt, "-fatbin") == 0);
}

int kj__vulkan_target_parse(const char *s, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 4];

	/* vulkan1.0: glslc's default target */
	if (s != NULL && (strcmp(s, "vulkan1.0") == 0 || strcmp(s, "vulkan1.1") == 0 || strcmp(s, "vulkan1.2") == 0 ||
			  strcmp(s, "vulkan1.3") == 0))
		return 0;
	kj__seterr(err, errlen, "unknown Vulkan target '%s' (expected vulkan1.0, vulkan1.1, vulkan1.2 or vulkan1.3)",
	       s ? quote(q, s, strlen(s)) : "");
	return KJIT_ETARGET;
}

int kj__target_canon(int backend, const char *s, char *out, size_t outlen, char *err, size_t errlen)
{
	struct kj__amd_target t;
	int rc;

	if (out == NULL || outlen == 0)
		return KJIT_EINVAL;
	switch (backend) {
	case KJIT_BACKEND_HIP:
		if ((rc = kj__amd_target_parse(s, &t, err, errlen)) != 0)
			return rc;
		return kj__amd_target_format(&t, out, outlen);
	case KJIT_BACKEND_CUDA:
		rc = kj__cuda_target_parse(s, NULL, err, errlen);
		break;
	case KJIT_BACKEND_VULKAN:
		rc = kj__vulkan_target_parse(s, err, errlen);
		break;
	default:
		kj__seterr(err, errlen, "unknown backend %d (expected hip, cuda or vulkan)", backend);
		return KJIT_EBACKEND;
	}
	if (rc != 0)
		return rc;
	if (strlen(s) >= outlen)
		return KJIT_EINVAL;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}
