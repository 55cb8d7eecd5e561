/* ccflags.c: the compiler flags users type by habit, taken by `kjit get`
 * as they come from build files (issue 30), beside client/ccopts.c's -I,
 * -D, -O, -std=: nvcc's and NVRTC's --use_fast_math, -lineinfo,
 * --expt-relaxed-constexpr, --extended-lambda, -restrict, --diag-suppress=,
 * -Xcompiler VALUE / -Xptxas VALUE (made "-Xcompiler=VALUE"), hipcc's and
 * hiprtc's -m flags and --gpu-max-threads-per-block=, glslc's
 * --target-spv= and binding bases ("-fubo-binding-base [comp] N", made
 * "-fubo-binding-base N"); the target-like flags (-arch=sm_90,
 * --gpu-architecture=, --offload-arch=gfx90a), which become the request's
 * target; and the backend a command line implies (kj__ccflags_backend:
 * from the target or the suffix; the family names are compilers/'s alone).
 * Which flag a family takes, and with which values, is its daemon-side
 * whitelist's say (compilers/, one file a family): this file only recognises the
 * spellings, so that an unknown one is never read as a cluster of
 * one-letter options.  No state outside the calls.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ccopts.h"
#include "kjit.h"
#include "util.h"

/* Flags taken as they are (no value, or their value after '='). */
static const char *const exact[] = {
	"--use_fast_math", "-use_fast_math", "-lineinfo", "--generate-line-info", "--expt-relaxed-constexpr",
	"-expt-relaxed-constexpr", "--expt-extended-lambda", "-expt-extended-lambda", "--extended-lambda",
	"-extended-lambda", "--restrict", "-restrict", "--device-int128", "-device-int128",
	"--extra-device-vectorization", "--disable-warnings", "--resource-usage", "-res-usage",
	"--device-as-default-execution-space", "-fPIC", "-fPIE", "-m64",
};
static const char *const prefixed[] = {
	"--ftz=", "--fmad=", "--prec-div=", "--prec-sqrt=", "-prec-div=", "-prec-sqrt=", "--maxrregcount=",
	"-maxrregcount=", "--diag-suppress=", "-diag-suppress=", "--diag-warn=", "-diag-warn=", "--diag-error=",
	"-diag-error=", "--compress-mode=", "--gpu-max-threads-per-block=", "--target-spv=", "-Xcompiler=",
	"-Xptxas=", "--compiler-options=", "--ptxas-options=",
};
/* Flags whose value may also follow as the next argument (nvcc's
 * "-Xcompiler -fPIC"): sent as "FLAG=VALUE", nvcc's other spelling. */
static const char *const valued[] = {
	"-Xcompiler", "-Xptxas", "--compiler-options", "--ptxas-options", "--diag-suppress", "-diag-suppress",
};
/* Target-like flags: their value is the request's target. */
static const char *const arch_flags[] = { "-arch", "--gpu-architecture", "--offload-arch", "--cuda-gpu-arch" };
/* Flags that name several targets or codes: one target a request. */
static const char *const multi_flags[] = { "-gencode", "--generate-code", "-code", "--gpu-code" };
/* glslc's binding bases: "-fKIND-binding-base [STAGE] N". */
static const char *const bases[] = { "image", "sampler", "texture", "ubo", "cbuffer", "ssbo", "uav" };

static int add(struct kj__ccopts *cc, const char *a, const char *sep, const char *b, char *err, size_t errlen)
{
	if (cc->n_opts >= KJ_CCOPTS_MAX) {
		kj__seterr(err, errlen, "more than %d compiler options", KJ_CCOPTS_MAX);
		return KJIT_EINVAL;
	}
	if ((cc->opts[cc->n_opts] = kj__asprintf("%s%s%s", a, sep, b)) == NULL)
		return KJIT_ENOMEM;
	cc->n_opts++;
	return 1;
}

/* The flag of table t[n] that a is ("-arch", "-arch=sm_90"): its length,
 * with *eq set when a value follows '='; 0 if none. */
static size_t flag_of(const char *const *t, size_t n, const char *a, int *eq)
{
	for (size_t k = 0; k < n; k++) {
		size_t l = strlen(t[k]);
		if (strncmp(a, t[k], l) == 0 && (a[l] == '\0' || a[l] == '=')) {
			*eq = a[l] == '=';
			return l;
		}
	}
	return 0;
}

/* A target-like flag: its value becomes cc->arch.  1 taken, or a code. */
static int take_arch(struct kj__ccopts *cc, const char *a, size_t l, int eq, const char *next, int *i, char *err,
		     size_t errlen)
{
	const char *v = eq ? a + l + 1 : next;

	if (v == NULL || *v == '\0') {
		kj__seterr(err, errlen, "missing argument to %.*s", (int)l, a);
		return KJIT_EINVAL;
	}
	if (!eq)
		(*i)++;
	if (strcmp(v, "native") == 0 || strncmp(v, "all", 3) == 0 || strchr(v, ',') != NULL) {
		kj__seterr(err, errlen, "%.*s %.64s: kjit compiles one target a request; name it with --target "
			   "(`kjit targets` lists this machine's)", (int)l, a, v);
		return KJIT_EINVAL;
	}
	if (cc->arch && strcmp(cc->arch, v) != 0) {
		kj__seterr(err, errlen, "%s and %.*s %.64s: kjit compiles one target a request; give it once, "
			   "with --target", cc->arch_opt, (int)l, a, v);
		return KJIT_EINVAL;
	}
	cc->arch = v;
	snprintf(cc->arch_opt, sizeof cc->arch_opt, "%.*s %.64s", (int)l, a, v);
	return 1;
}

/* glslc's "-fKIND-binding-base [STAGE] N" as "-fKIND-binding-base N".  1
 * taken, 0 not one, or a code. */
static int take_base(struct kj__ccopts *cc, int argc, char **argv, int *i, char *err, size_t errlen)
{
	const char *a = argv[*i];
	char flag[40];
	int k = *i + 1, ok = 0;

	for (size_t b = 0; b < KJ_ARRAY_SIZE(bases) && !ok; b++) {
		snprintf(flag, sizeof flag, "-f%s-binding-base", bases[b]);
		ok = strcmp(a, flag) == 0;
	}
	if (!ok)
		return 0;
	if (k < argc && argv[k][0] != '\0' && strspn(argv[k], "0123456789") != strlen(argv[k])) {
		if (strcmp(argv[k], "comp") != 0 && strcmp(argv[k], "compute") != 0) {
			kj__seterr(err, errlen, "%s %.32s: kjit builds compute shaders only (a stage of comp or none)",
				   a, argv[k]);
			return KJIT_EINVAL;
		}
		k++;
	}
	if (k >= argc || argv[k][0] == '\0' || strspn(argv[k], "0123456789") != strlen(argv[k])) {
		kj__seterr(err, errlen, "%s takes [comp] and a binding number", a);
		return KJIT_EINVAL;
	}
	*i = k;
	return add(cc, a, " ", argv[k], err, errlen);
}

int kj__ccflags_take(struct kj__ccopts *cc, int argc, char **argv, int *i, char *err, size_t errlen)
{
	const char *a = argv[*i], *next = *i + 1 < argc ? argv[*i + 1] : NULL;
	size_t l;
	int eq = 0, r;

	for (size_t k = 0; k < KJ_ARRAY_SIZE(exact); k++)
		if (strcmp(a, exact[k]) == 0)
			return add(cc, a, "", "", err, errlen);
	for (size_t k = 0; k < KJ_ARRAY_SIZE(prefixed); k++)
		if (strncmp(a, prefixed[k], strlen(prefixed[k])) == 0)
			return add(cc, a, "", "", err, errlen);
	if ((l = flag_of(valued, KJ_ARRAY_SIZE(valued), a, &eq)) > 0 && !eq) {
		if (next == NULL) {
			kj__seterr(err, errlen, "missing argument to %s", a);
			return KJIT_EINVAL;
		}
		(*i)++;
		return add(cc, a, "=", next, err, errlen);
	}
	if ((l = flag_of(arch_flags, KJ_ARRAY_SIZE(arch_flags), a, &eq)) > 0)
		return take_arch(cc, a, l, eq, next, i, err, errlen);
	if ((l = flag_of(multi_flags, KJ_ARRAY_SIZE(multi_flags), a, &eq)) > 0) {
		kj__seterr(err, errlen, "%.*s: kjit compiles one target a request; name it with --target (as "
			   "-arch=sm_90 or --offload-arch=gfx90a would)", (int)l, a);
		return KJIT_EINVAL;
	}
	if ((r = take_base(cc, argc, argv, i, err, errlen)) != 0)
		return r;
	/* -munsafe-fp-atomics, -mcumode, -mwavefrontsize64 (clang's -m flags) */
	if (a[0] == '-' && a[1] == 'm' && islower((unsigned char)a[2]))
		return add(cc, a, "", "", err, errlen);
	return 0;
}

/* 1 if name ends in suffix. */
static int ends(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s && strcmp(name + n - s, suffix) == 0;
}

int kj__ccflags_backend(const char *source, const char *target)
{
	static const struct { const char *s; int backend; } by_suffix[] = {
		{ ".cu", KJIT_BACKEND_CUDA }, { ".hip", KJIT_BACKEND_HIP }, { ".comp", KJIT_BACKEND_VULKAN },
		{ ".glsl", KJIT_BACKEND_VULKAN }, { ".hlsl", KJIT_BACKEND_VULKAN },
	};

	/* the target first: HIP sources are often named .cu */
	if (target && (strncmp(target, "sm_", 3) == 0 || strncmp(target, "compute_", 8) == 0))
		return KJIT_BACKEND_CUDA;
	if (target && strncmp(target, "gfx", 3) == 0)
		return KJIT_BACKEND_HIP;
	if (target && strncmp(target, "vulkan", 6) == 0)
		return KJIT_BACKEND_VULKAN;
	for (size_t k = 0; source && k < KJ_ARRAY_SIZE(by_suffix); k++)
		if (ends(source, by_suffix[k].s))
			return by_suffix[k].backend;
	return KJIT_BACKEND_NONE;
}
