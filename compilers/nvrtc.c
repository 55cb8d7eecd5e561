/* nvrtc.c: the "nvrtc" family: CUDA sources to cubin (target sm_XX) or PTX
 * (target compute_XX) with NVIDIA's runtime compiler, loaded with dlopen
 * (libnvrtc.so.13, .so.12, then the usual /usr/local/cuda paths).
 *
 * Targets must be in nvrtcGetSupportedArchs (suffixes "a"/"f" ride on
 * their base number).  The cubin is checked to be an ELF with e_machine
 * EM_CUDA; the PTX is kept with its terminating NUL, as
 * cuModuleLoadData wants it.  Entries are not used by NVRTC (kernels are
 * expected to be extern "C"; they are the client's to look up).
 *
 * The toolkit's own headers (<cuda_fp16.h>, <cooperative_groups.h>,
 * <cuda/std/...>) come from the include directory of the toolkit NVRTC was
 * loaded from: "include" beside (or one level above) the library's
 * directory, and its "cccl" subdirectory where CUDA 13 keeps libcu++.  They
 * are passed as --include-path after the request's options, so the job's
 * headers come first.  -O, -O0..-O3 are accepted (they are in the key) and
 * not passed on: NVRTC always optimises device code.
 *
 * Identity: "nvrtc MAJ.MIN" from nvrtcVersion, then "; headers ID" with the
 * tree identity (treeid.c) of that include directory, or "; headers none".
 * Runtime version: "MAJ.MIN": the CUDA version the objects are built
 * against, since a cubin or PTX from NVRTC N loads with any driver that
 * supports CUDA N.
 *
 * Loading, the compile and the warm-up are the runtime compilers'
 * skeleton (rtc.c) driven by nvrtc_family below; what is NVRTC's own
 * here: its options (nvrtc_only beside the CUDA rules shared with nvcc),
 * the architectures and PTX, the toolkit's headers and the header aliases.
 */
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "targetid.h"
#include "util.h"

/* NVRTC's own calls beside the skeleton's (struct kj__rtc_api, whose
 * code_size and code are the cubin's). */
struct nvrtc_more {
	int (*num_archs)(int *);
	int (*archs)(int *);
	int (*ptx_size)(void *, size_t *);
	int (*ptx)(void *, char *);
};

#define NVRTC_ARCHS_MAX 128
#define KJ_NVRTC_HEAP_KEEP (256 << 20) /* freed heap a worker keeps for the next compile */

struct nvrtc_state {
	void *lib;
	struct kj__rtc_api api;      /* the cubin's */
	struct kj__rtc_api ptx_api;  /* the same with the PTX's code_size and code */
	struct nvrtc_more more;
	int archs[NVRTC_ARCHS_MAX];
	int n_archs;
	int major, minor;
	int no_cache;                    /* NVRTC 12.9+: --no-cache (docs/dropin.md, "NVRTC's own cache") */
	char inc_opt[2][PATH_MAX + 16];  /* "--include-path=DIR" and its cccl/, or "" */
	char tree[32];                   /* tree identity of the include directory, or "none" */
};

static const char *const nvrtc_libs[] = {
	"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
	"/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib/libnvrtc.so", NULL,
};

/* NVRTC's names and words for the runtime compilers' skeleton (rtc.c). */
static const struct kj__rtc_family nvrtc_family = {
	.name = "nvrtc",
	.title = "NVRTC",
	.libs = nvrtc_libs,
	.not_found = "NVRTC not found (libnvrtc.so.13/.12): install the CUDA toolkit's NVRTC",
	.lacks = "libnvrtc lacks an nvrtc* symbol (NVRTC 11.2 or later is needed)",
	.sym = { "nvrtcVersion", "nvrtcGetErrorString", "nvrtcCreateProgram", "nvrtcCompileProgram",
		 "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
		 "nvrtcDestroyProgram", "nvrtcAddNameExpression", "nvrtcGetLoweredName" },
	.no_object = "nvrtc returned no object or one over the size cap",
	.bad_object = "nvrtc returned a malformed object",
	.warm_file = "kjit_warmup.cu",
};

/* The CUDA options NVRTC and nvcc both take (nvcc.c adds its own to
 * them; the spellings checked against NVRTC 13.0 and nvcc 13.0).  A job's
 * option must match a rule of these or of the family's own; anything else
 * is refused. */
static const struct kj__opt_rule cuda_rules[] = {
	{ KJ_OPT_MACRO, "-D", NULL },
	{ KJ_OPT_MACRO, "-U", NULL },
	{ KJ_OPT_TEXT, "--pre-include=", NULL }, /* -include FILE: a header of the job (issue 30) */
	{ KJ_OPT_EXACT, "--use_fast_math", NULL },
	{ KJ_OPT_EXACT, "-use_fast_math", NULL },
	{ KJ_OPT_CHOICE, "-std=", "c++11|c++14|c++17|c++20" },
	{ KJ_OPT_CHOICE, "--std=", "c++11|c++14|c++17|c++20" },
	{ KJ_OPT_CHOICE, "--ftz=", "true|false" },
	{ KJ_OPT_CHOICE, "--prec-div=", "true|false" },
	{ KJ_OPT_CHOICE, "--prec-sqrt=", "true|false" },
	{ KJ_OPT_CHOICE, "--fmad=", "true|false" },
	{ KJ_OPT_UINT, "--maxrregcount=", NULL },
	{ KJ_OPT_UINT, "-maxrregcount=", NULL },
	{ KJ_OPT_EXACT, "-lineinfo", NULL },
	{ KJ_OPT_EXACT, "--generate-line-info", NULL },
	{ KJ_OPT_EXACT, "--extra-device-vectorization", NULL },
	{ KJ_OPT_EXACT, "-w", NULL },
	{ KJ_OPT_EXACT, "--disable-warnings", NULL },
	{ KJ_OPT_EXACT, "-O", NULL },
	{ KJ_OPT_CHOICE, "-O", "0|1|2|3" },
	{ KJ_OPT_CHOICE, "-ftz=", "true|false" },
	{ KJ_OPT_CHOICE, "-prec-div=", "true|false" },
	{ KJ_OPT_CHOICE, "-prec-sqrt=", "true|false" },
	{ KJ_OPT_CHOICE, "-fmad=", "true|false" },
	{ KJ_OPT_EXACT, "--restrict", NULL },
	{ KJ_OPT_EXACT, "-restrict", NULL },
	{ KJ_OPT_LIST, "-Xptxas=", KJ_PTXAS_VALUES },
	{ KJ_OPT_LIST, "--ptxas-options=", KJ_PTXAS_VALUES },
};

/* NVRTC's own options beside cuda_rules. */
static const struct kj__opt_rule nvrtc_only[] = {
	/* NVRTC has no -Wall/-Wextra/-Werror (it says "unrecognized option");
	 * its warnings are steered by number, as nvcc's --diag-*. */
	{ KJ_OPT_TEXT, "--diag-suppress=", NULL },
	{ KJ_OPT_TEXT, "--diag-warn=", NULL },
	{ KJ_OPT_TEXT, "--diag-error=", NULL },
	{ KJ_OPT_EXACT, "-default-device", NULL },
	{ KJ_OPT_EXACT, "--device-as-default-execution-space", NULL },
	{ KJ_OPT_TEXT, KJ_NAME_EXPR_OPT, NULL },
	{ KJ_OPT_EXACT, "--device-int128", NULL },
	{ KJ_OPT_EXACT, "-device-int128", NULL },
};

const struct kj__opt_rule *kj__cuda_option_rules(size_t *n)
{
	*n = KJ_ARRAY_SIZE(cuda_rules);
	return cuda_rules;
}

/* Is a directory with cuda_fp16.h in it at d (a malloc'd or stack path)? */
static int toolkit_include_at(const char *d)
{
	char p[PATH_MAX];
	struct stat st;

	return (size_t)snprintf(p, sizeof p, "%s/cuda_fp16.h", d) < sizeof p && stat(p, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

/* Finds the include directory of the toolkit the library came from, sets
 * the --include-path options and the tree identity.  A toolkit without one
 * (NVRTC alone) leaves them empty: <cuda_fp16.h> then fails in NVRTC's own
 * words.  0 or a negative code. */
static int find_toolkit_include(struct nvrtc_state *st)
{
	static const char *const rel[] = { "../include", "../../include", "../targets/x86_64-linux/include" };
	char lib[PATH_MAX], dir[PATH_MAX], real[PATH_MAX];
	Dl_info info;

	snprintf(st->tree, sizeof st->tree, "none");
	if (dladdr(*(void **)&st->api.version, &info) == 0 || info.dli_fname == NULL ||
	    realpath(info.dli_fname, lib) == NULL)
		return 0;
	char *slash = strrchr(lib, '/');
	if (slash == NULL)
		return 0;
	*slash = '\0';
	for (size_t i = 0; i < KJ_ARRAY_SIZE(rel); i++) {
		if ((size_t)snprintf(dir, sizeof dir, "%s/%s", lib, rel[i]) >= sizeof dir ||
		    realpath(dir, real) == NULL || !toolkit_include_at(real))
			continue;
		int r = kj__tree_id(real, st->tree, sizeof st->tree);
		if (r < 0)
			return r;
		snprintf(st->inc_opt[0], sizeof st->inc_opt[0], "--include-path=%s", real);
		if ((size_t)snprintf(dir, sizeof dir, "%s/cccl", real) < sizeof dir && access(dir, R_OK) == 0)
			snprintf(st->inc_opt[1], sizeof st->inc_opt[1], "--include-path=%s", dir);
		return 0;
	}
	return 0;
}

int kj__nvrtc_lib_dir(char *dir, size_t dirlen)
{
	void *lib = NULL, *sym;
	char path[PATH_MAX];
	Dl_info info;
	int r = KJIT_ENOENT;

	for (size_t i = 0; nvrtc_libs[i] != NULL && lib == NULL; i++)
		lib = kj__dlopen_compiler(nvrtc_libs[i], RTLD_LAZY | RTLD_LOCAL);
	if (lib == NULL)
		return KJIT_ENOENT;
	if ((sym = dlsym(lib, "nvrtcVersion")) != NULL && dladdr(sym, &info) != 0 && info.dli_fname &&
	    realpath(info.dli_fname, path) != NULL) {
		char *slash = strrchr(path, '/');
		if (slash && slash != path)
			*slash = '\0';
		r = (size_t)snprintf(dir, dirlen, "%s", path) < dirlen ? 0 : KJIT_ETOOBIG;
	}
	dlclose(lib);
	return r;
}

/* The skeleton's calls, then NVRTC's own; the PTX's table.  0 or
 * KJIT_EBACKEND with the reason in err. */
static int load_api(struct nvrtc_state *st, char *err, size_t errlen)
{
	int r = kj__rtc_load(&nvrtc_family, &st->lib, &st->api, err, errlen);

	if (r < 0)
		return r;
	*(void **)&st->more.num_archs = dlsym(st->lib, "nvrtcGetNumSupportedArchs");
	*(void **)&st->more.archs = dlsym(st->lib, "nvrtcGetSupportedArchs");
	*(void **)&st->more.ptx_size = dlsym(st->lib, "nvrtcGetPTXSize");
	*(void **)&st->more.ptx = dlsym(st->lib, "nvrtcGetPTX");
	if (!st->more.num_archs || !st->more.archs || !st->more.ptx_size || !st->more.ptx) {
		snprintf(err, errlen, "%s", nvrtc_family.lacks);
		return KJIT_EBACKEND;
	}
	st->ptx_api = st->api;
	st->ptx_api.code_size = st->more.ptx_size;
	st->ptx_api.code = st->more.ptx;
	return 0;
}

/* Splits "sm_90a" / "compute_90" into its number and PTX flag; 0 or -1. */
static int target_arch(const char *t, int *arch, int *ptx)
{
	const char *d;
	char *end = NULL;

	if (strncmp(t, "sm_", 3) == 0)
		d = t + 3, *ptx = 0;
	else if (strncmp(t, "compute_", 8) == 0)
		d = t + 8, *ptx = 1;
	else
		return -1;
	if (*d < '0' || *d > '9')
		return -1;
	long v = strtol(d, &end, 10);
	if (v <= 0 || v > 10000 || !(*end == '\0' || ((*end == 'a' || *end == 'f') && end[1] == '\0')))
		return -1;
	*arch = (int)v;
	return 0;
}

static int nvrtc_check_target(void *state, const char *target, char *err, size_t errlen)
{
	struct nvrtc_state *st = state;
	int arch = 0, ptx = 0;
	char why[256] = "";

	if (target == NULL || !kj__token_ok(target, KJ_TARGET_MAX) || target_arch(target, &arch, &ptx) < 0 ||
	    kj__cuda_target_parse(target, &ptx, why, sizeof why) < 0)
		goto bad;
	for (int i = 0; i < st->n_archs; i++)
		if (st->archs[i] == arch)
			return 0;
bad:
	snprintf(err, errlen, "target '%.64s' is not supported by nvrtc %d.%d (supported: sm_%d..sm_%d or compute_%d..compute_%d)",
		 target ? target : "", st->major, st->minor, st->n_archs ? st->archs[0] : 0,
		 st->n_archs ? st->archs[st->n_archs - 1] : 0, st->n_archs ? st->archs[0] : 0,
		 st->n_archs ? st->archs[st->n_archs - 1] : 0);
	return KJIT_ETARGET;
}

/* NVRTC matches an in-memory header by its exact name and does not look
 * beside the including header: "host_only.cuh" included from
 * "rw/common.cuh" is not "rw/host_only.cuh" to it.  So a header in a
 * directory is also given under each tail of its path ("b/c.h" and "c.h"
 * for "a/b/c.h"), unless a header of that name exists or two headers share
 * the tail.  The bytes are the job's, all in the key.  *names and *hdrs
 * (malloc'd, the strings borrowed from a) get the headers and aliases, *n
 * their count. */
static int is_tail(const char *name, const char *t)
{
	size_t n = strlen(name), l = strlen(t);
	return n > l && name[n - l - 1] == '/' && strcmp(name + n - l, t) == 0;
}

static int with_aliases(const struct kj__rtc_args *a, const char ***names, const char ***hdrs, int *n)
{
	int nh = a->n_headers, k = nh;
	size_t cap = (size_t)nh * 2 + 1;

	for (int i = 0; i < nh; i++)
		for (const char *p = a->names[i]; (p = strchr(p, '/')) != NULL; p++)
			cap++;
	*names = calloc(cap, sizeof **names);
	*hdrs = calloc(cap, sizeof **hdrs);
	if (*names == NULL || *hdrs == NULL)
		return KJIT_ENOMEM;
	for (int i = 0; i < nh; i++) {
		(*names)[i] = a->names[i];
		(*hdrs)[i] = a->hdrs[i];
	}
	for (int i = 0; i < nh; i++) {
		for (const char *t = strchr(a->names[i], '/'); t != NULL; t = strchr(t, '/')) {
			t++;
			int clash = 0;
			for (int j = 0; j < nh && !clash; j++)
				clash = strcmp(a->names[j], t) == 0 || (j != i && is_tail(a->names[j], t));
			if (!clash && *t) {
				(*names)[k] = t;
				(*hdrs)[k++] = a->hdrs[i];
			}
		}
	}
	*n = k;
	return 0;
}

/* NVRTC matches "../x.h" literally too: every quoted #include spelled with
 * ".." in a header (kj__includes_check let through only those landing on a
 * file of the job) is added under its spelling, as an alias of the header
 * it lands on, once.  The spellings are malloc'd into spell[] (*n_spell
 * of them; the caller frees them after the compile); *names and *hdrs
 * grow.  0 or KJIT_ENOMEM. */
static int dotdot_aliases(const char ***names, const char ***hdrs, int *n, char **spell, size_t *n_spell)
{
	char to[2 * KJ_NAME_MAX + 2];
	int n0 = *n;

	for (int i = 0; i < n0; i++) {
		for (const char *p = (*hdrs)[i]; p && (p = strstr(p, "#")) != NULL; p++) {
			const char *q = p + 1;
			while (*q == ' ' || *q == '\t')
				q++;
			if (strncmp(q, "include", 7) != 0)
				continue;
			q += 7;
			while (*q == ' ' || *q == '\t')
				q++;
			const char *e = *q == '"' ? strchr(q + 1, '"') : NULL;
			size_t l = e ? (size_t)(e - q - 1) : 0;
			if (e == NULL || l == 0 || l > KJ_NAME_MAX || memchr(q + 1, '\n', l) || !strstr(q + 1, "..") ||
			    strstr(q + 1, "..") > e || kj__tree_join((*names)[i], q + 1, l, to, sizeof to) < 0)
				continue;
			int hit = -1, dup = 0;
			for (int j = 0; j < *n; j++) {
				dup = dup || (strlen((*names)[j]) == l && strncmp((*names)[j], q + 1, l) == 0);
				if (j < n0 && strcmp((*names)[j], to) == 0)
					hit = j;
			}
			if (hit < 0 || dup || *n_spell >= KJ_HEADERS_MAX_COUNT)
				continue;
			const char **nn = realloc(*names, (size_t)(*n + 1) * sizeof *nn);
			if (nn)
				*names = nn;
			const char **nh = nn ? realloc(*hdrs, (size_t)(*n + 1) * sizeof *nh) : NULL;
			if (nh)
				*hdrs = nh;
			if (nh == NULL || (spell[*n_spell] = kj__strndup(q + 1, l)) == NULL)
				return KJIT_ENOMEM;
			(*names)[*n] = spell[(*n_spell)++];
			(*hdrs)[(*n)++] = (*hdrs)[hit];
		}
	}
	return 0;
}

static void nvrtc_fini(void *state)
{
	free(state); /* the library stays mapped */
}

/* Warm-up: the first compile loads the builtins library (the worker runs
 * it after its IDENT, before its walls close). */
static int nvrtc_warm(void *state, char *err, size_t errlen)
{
	struct nvrtc_state *st = state;
	char arch[48];

	snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d", st->archs[st->n_archs - 1]);
	return kj__rtc_warm(&nvrtc_family, &st->ptx_api, arch, st->no_cache ? "--no-cache" : NULL, 0, err, errlen);
}

static int nvrtc_init(void **state, char *err, size_t errlen)
{
	int r = KJIT_ENOMEM, n = 0;
	struct nvrtc_state *st = calloc(1, sizeof *st);

	if (st == NULL)
		goto out;
	if ((r = load_api(st, err, errlen)) < 0)
		goto out;
	r = KJIT_EBACKEND;
	if (st->api.version(&st->major, &st->minor) != 0 || st->more.num_archs(&n) != 0 || n <= 0 ||
	    n > NVRTC_ARCHS_MAX || st->more.archs(st->archs) != 0) {
		snprintf(err, errlen, "NVRTC does not report its version or architectures");
		goto out;
	}
	st->n_archs = n;
	st->no_cache = st->major > 12 || (st->major == 12 && st->minor >= 9);
	if ((r = find_toolkit_include(st)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the CUDA toolkit's include directory (%s)", kjit_strerror(r));
		goto out;
	}
	/* NVRTC's heap stays with the worker between jobs: without this glibc
	 * gives the freed top of the heap back after each compile and the next
	 * one faults it in again (issue 31: on the H200 machine's VM a warm
	 * worker's compile took 2-4x a warm in-process one). */
	mallopt(M_TRIM_THRESHOLD, KJ_NVRTC_HEAP_KEEP);
	mallopt(M_MMAP_THRESHOLD, KJ_NVRTC_HEAP_KEEP / 8);
	/* success */
	*state = st;
	st = NULL;
	r = 0;
out:
	nvrtc_fini(st);
	return r;
}

static int nvrtc_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen)
{
	struct nvrtc_state *st = state;

	if ((size_t)snprintf(id, idlen, "nvrtc %d.%d; headers %s", st->major, st->minor, st->tree) >= idlen ||
	    (size_t)snprintf(rv, rvlen, "%d.%d", st->major, st->minor) >= rvlen)
		return KJIT_ETOOBIG;
	return 0;
}

static int nvrtc_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	struct nvrtc_state *st = state;
	struct kj__rtc_args a;
	char err[256];
	int r, arch = 0, ptx = 0;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < job->n_options; i++)
		if (kj__cuda_fatbin_opt(job->options[i]))
			return kj__out_error(out, KJIT_EINVAL, "NVRTC makes a cubin or PTX, not a fatbin: --fatbin "
				"needs nvcc (--compiler nvcc)");
	if ((r = nvrtc_check_target(st, job->target, err, sizeof err)) < 0 ||
	    (r = kj__options_check2("nvrtc", cuda_rules, KJ_ARRAY_SIZE(cuda_rules), nvrtc_only,
				    KJ_ARRAY_SIZE(nvrtc_only), job, err, sizeof err)) < 0 ||
	    (r = kj__includes_check(job, err, sizeof err)) < 0)
		return kj__out_error(out, r, err);
	target_arch(job->target, &arch, &ptx);
	r = kj__rtc_args_build(job, &a, out);
	/* -O*: NVRTC always optimises.  Name expressions go to nvrtcAddNameExpression. */
	const char *exprs[KJ_OPTIONS_MAX_COUNT];
	int n_exprs = 0;
	for (int i = 0; r == 0 && i < a.n_opts; i++) {
		int expr = strncmp(a.opts[i], KJ_NAME_EXPR_OPT, strlen(KJ_NAME_EXPR_OPT)) == 0;
		if (expr)
			exprs[n_exprs++] = a.opts[i] + strlen(KJ_NAME_EXPR_OPT);
		if (expr || strncmp(a.opts[i], "-O", 2) == 0) {
			memmove(&a.opts[i], &a.opts[i + 1], (size_t)(a.n_opts - i - 1) * sizeof *a.opts);
			a.n_opts--;
			i--;
		}
	}
	for (size_t i = 0; r == 0 && i < KJ_ARRAY_SIZE(st->inc_opt); i++)
		if (st->inc_opt[i][0])
			r = kj__rtc_args_push(&a, st->inc_opt[i], out);
	if (r == 0 && st->no_cache) /* no driver cache, so no libcuda in the worker; same bytes */
		r = kj__rtc_args_push(&a, "--no-cache", out);
	const char **names = NULL, **hdrs = NULL;
	char *spell[KJ_HEADERS_MAX_COUNT];
	size_t n_spell = 0;
	int nh = 0;
	if (r == 0 && ((r = with_aliases(&a, &names, &hdrs, &nh)) < 0 ||
		       (r = dotdot_aliases(&names, &hdrs, &nh, spell, &n_spell)) < 0))
		kj__out_error(out, r, "out of memory");
	if (r == 0) {
		const struct kj__rtc_prog p = {
			.name = strchr(job->source_name, '/') ? KJ_RTC_WRAPPER_NAME : job->source_name, .src = a.src,
			.n_headers = nh, .hdrs = hdrs, .hdr_names = names,
			.n_opts = a.n_opts, .opts = a.opts, .n_exprs = n_exprs, .exprs = exprs,
			.machine = ptx ? 0 : KJ_EM_CUDA,
		};
		r = kj__rtc_run(&nvrtc_family, ptx ? &st->ptx_api : &st->api, &p, out);
	}
	while (n_spell > 0)
		free(spell[--n_spell]);
	free(names);
	free(hdrs);
	kj__rtc_args_free(&a);
	return r;
}

const struct kj__compiler_ops kj__compiler_nvrtc = {
	.name = "nvrtc",
	.backend = KJIT_BACKEND_CUDA,
	.init = nvrtc_init,
	.warm = nvrtc_warm,
	.fini = nvrtc_fini,
	.identity = nvrtc_identity,
	.check_target = nvrtc_check_target,
	.compile = nvrtc_compile,
};
