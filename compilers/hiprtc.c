/* hiprtc.c: the "hiprtc" family: HIP sources to AMDGPU code objects with
 * ROCm's runtime compiler, loaded with dlopen so kjit builds without ROCm.
 *
 * hiprtc lives in libamdhip64.so.5 (ROCm 5.x) or libhiprtc.so (6.x); comgr
 * (libamd_comgr.so.2) gives the list of ISAs it can build.  hiprtc 5.2
 * aborts the whole process for a target it does not know (gfx940, gfx1100,
 * "gfx1030:xnack-", the full triple form), so check_target admits only a
 * target that kj__amd_target_parse accepts and whose processor is in
 * comgr's ISA list; compile re-checks.  The object is the plain ELF
 * hiprtcGetCode returns (e_machine EM_AMDGPU).
 *
 * Identity: "hiprtc MAJ.MIN; comgr MAJ.MIN; device-libs HASH" (amd.c says
 * how the hash is made).  Runtime version: MAJOR.MINOR of the HIP runtime,
 * read from the real file name of the loaded library
 * (libamdhip64.so.5.2.21153 -> "5.2", via dlinfo + realpath), else from
 * the soname ("5").  State is one struct per worker; nothing is global.
 *
 * Loading, the compile and the warm-up are the runtime compilers'
 * skeleton (rtc.c) driven by hiprtc_family below; what is hiprtc's own
 * here: the comgr ISA list and target checks, the option rules (shared
 * with hipcc), the `#line` names and -include of the compile's front.
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

struct hiprtc_state {
	void *lib, *comgr;
	struct kj__rtc_api api;
	char **isas;          /* processors comgr lists, "gfx90a" */
	size_t n_isas;
	char identity[KJ_VERSION_STR_MAX * 2];
	char runtime[KJ_VERSION_STR_MAX];
};

static const char *const hip_libs[] = { "libamdhip64.so.5", "libhiprtc.so.6", "libhiprtc.so",
					"libamdhip64.so", NULL };

/* hiprtc's names and words for the runtime compilers' skeleton (rtc.c). */
static const struct kj__rtc_family hiprtc_family = {
	.name = "hiprtc",
	.title = "hiprtc",
	.libs = hip_libs,
	.not_found = "hiprtc not found (libamdhip64.so.5 / libhiprtc.so): install ROCm's hiprtc",
	.lacks = "hiprtc library lacks a hiprtc* symbol",
	.sym = { "hiprtcVersion", "hiprtcGetErrorString", "hiprtcCreateProgram", "hiprtcCompileProgram",
		 "hiprtcGetProgramLogSize", "hiprtcGetProgramLog", "hiprtcGetCodeSize", "hiprtcGetCode",
		 "hiprtcDestroyProgram", "hiprtcAddNameExpression", "hiprtcGetLoweredName" },
	.no_object = "hiprtc returned no code object or one over the size cap",
	.bad_object = "hiprtc returned something other than an AMDGPU ELF",
	/* comgr names the source "CompileSource" under its private
	 * .../comgr-XXXXXX/input/ directory, headers under include/: the
	 * log gets the user's names, no private path */
	.log_marker = "/comgr-",
	.log_blind = "CompileSource",
	.warm_file = "kjit_warmup.hip",
};

/* Clang options a HIP source may carry.  Anything else is refused. */
static const struct kj__opt_rule hip_rules[] = {
	{ KJ_OPT_MACRO, "-D", NULL },
	{ KJ_OPT_MACRO, "-U", NULL },
	{ KJ_OPT_TEXT, "--pre-include=", NULL }, /* -include FILE: a header of the job (issue 30) */
	{ KJ_OPT_CHOICE, "-O", "0|1|2|3" },
	{ KJ_OPT_EXACT, "-ffast-math", NULL },
	{ KJ_OPT_EXACT, "-fno-fast-math", NULL },
	{ KJ_OPT_CHOICE, "-ffp-contract=", "off|on|fast" },
	{ KJ_OPT_CHOICE, "-std=", "c++11|c++14|c++17|c++20|gnu++11|gnu++14|gnu++17|gnu++20" },
	{ KJ_OPT_EXACT, "-munsafe-fp-atomics", NULL },
	{ KJ_OPT_EXACT, "-mno-unsafe-fp-atomics", NULL },
	{ KJ_OPT_EXACT, "-mcumode", NULL },
	{ KJ_OPT_EXACT, "-mno-cumode", NULL },
	{ KJ_OPT_EXACT, "-w", NULL },
	{ KJ_OPT_EXACT, "-Wall", NULL },
	{ KJ_OPT_EXACT, "-Werror", NULL },
	{ KJ_OPT_WARN, "-W", NULL }, /* -Wextra, -Wno-unused-variable, -Werror=shadow ... */
	/* what AMD's hip-tests and CMake pass (checked against hiprtc and hipcc 5.2) */
	{ KJ_OPT_EXACT, "-fgpu-flush-denormals-to-zero", NULL },
	{ KJ_OPT_EXACT, "-fno-gpu-flush-denormals-to-zero", NULL },
	{ KJ_OPT_UINT, "--gpu-max-threads-per-block=", NULL },
	{ KJ_OPT_EXACT, "-ffinite-math-only", NULL },
	{ KJ_OPT_EXACT, "-fno-finite-math-only", NULL },
	{ KJ_OPT_EXACT, "-fno-gpu-rdc", NULL },
	{ KJ_OPT_EXACT, "-g", NULL },
	{ KJ_OPT_UINT, "-ftemplate-backtrace-limit=", NULL },
};

/* hiprtc's own: -fgpu-rdc still gives hiprtc a code object (hipcc 5.2's
 * --genco fails to link it). */
static const struct kj__opt_rule hiprtc_only[] = {
	{ KJ_OPT_EXACT, "-fgpu-rdc", NULL },
};

const struct kj__opt_rule *kj__hip_option_rules(size_t *n)
{
	*n = KJ_ARRAY_SIZE(hip_rules);
	return hip_rules;
}

/* Loads comgr, lists its ISAs into st->isas and appends "comgr X.Y" to id. */
static int load_isas(struct hiprtc_state *st, char *id, size_t idlen, char *err, size_t errlen)
{
	int (*get_version)(size_t *, size_t *);
	int (*isa_count)(size_t *);
	int (*isa_name)(size_t, const char **);
	static const char prefix[] = "amdgcn-amd-amdhsa--";
	size_t n = 0, maj = 0, min = 0;

	st->comgr = dlopen("libamd_comgr.so.2", RTLD_NOW | RTLD_LOCAL);
	if (st->comgr == NULL) {
		snprintf(err, errlen, "libamd_comgr.so.2 not found: install ROCm's comgr");
		return KJIT_EBACKEND;
	}
	*(void **)&get_version = dlsym(st->comgr, "amd_comgr_get_version");
	*(void **)&isa_count = dlsym(st->comgr, "amd_comgr_get_isa_count");
	*(void **)&isa_name = dlsym(st->comgr, "amd_comgr_get_isa_name");
	if (!get_version || !isa_count || !isa_name || isa_count(&n) != 0 || n > 1024) {
		snprintf(err, errlen, "comgr does not list its ISAs");
		return KJIT_EBACKEND;
	}
	get_version(&maj, &min);
	snprintf(id, idlen, "comgr %zu.%zu", maj, min);
	st->isas = calloc(n ? n : 1, sizeof *st->isas);
	if (st->isas == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *s = NULL;
		if (isa_name(i, &s) != 0 || s == NULL || strncmp(s, prefix, sizeof prefix - 1) != 0)
			continue;
		s += sizeof prefix - 1;
		if ((st->isas[st->n_isas] = kj__strndup(s, strcspn(s, ":"))) == NULL)
			return KJIT_ENOMEM;
		st->n_isas++;
	}
	return 0;
}

/* "5.2" from the real path of the loaded HIP library, else its soname. */
static void runtime_version(struct hiprtc_state *st)
{
	struct link_map *lm = NULL;
	char real[PATH_MAX];
	const char *v = NULL;
	int maj = 0, min = 0;

	snprintf(st->runtime, sizeof st->runtime, "unknown");
	if (dlinfo(st->lib, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name &&
	    realpath(lm->l_name, real) != NULL && (v = strstr(real, ".so.")) != NULL) {
		if (sscanf(v + 4, "%d.%d", &maj, &min) == 2) {
			snprintf(st->runtime, sizeof st->runtime, "%d.%d", maj, min);
			return;
		}
		if (sscanf(v + 4, "%d", &maj) == 1)
			snprintf(st->runtime, sizeof st->runtime, "%d", maj);
	}
}

static int hiprtc_check_target(void *state, const char *target, char *err, size_t errlen)
{
	struct hiprtc_state *st = state;
	int r = kj__amd_target_ok(target, err, errlen);

	if (r < 0)
		return r;
	size_t pl = strcspn(target, ":");
	for (size_t i = 0; i < st->n_isas; i++)
		if (strlen(st->isas[i]) == pl && strncmp(st->isas[i], target, pl) == 0)
			return 0;
	snprintf(err, errlen, "target '%s': processor '%.*s' is not supported by this hiprtc (comgr lists %s..%s)",
		 target, (int)pl, target, st->n_isas ? st->isas[0] : "none",
		 st->n_isas ? st->isas[st->n_isas - 1] : "none");
	return KJIT_ETARGET;
}

static void hiprtc_fini(void *state)
{
	struct hiprtc_state *st = state;

	if (st == NULL)
		return;
	for (size_t i = 0; i < st->n_isas; i++)
		free(st->isas[i]);
	free(st->isas);
	/* The libraries stay mapped: hiprtc registers atexit handlers. */
	free(st);
}

static int hiprtc_init(void **state, char *err, size_t errlen)
{
	int r = KJIT_ENOMEM;
	struct hiprtc_state *st = calloc(1, sizeof *st);
	char comgr_id[KJ_VERSION_STR_MAX] = "", dl_id[KJ_VERSION_STR_MAX] = "";
	int maj = 0, min = 0;

	if (st == NULL)
		goto out;
	if ((r = kj__rtc_load(&hiprtc_family, &st->lib, &st->api, err, errlen)) < 0)
		goto out;
	if ((r = load_isas(st, comgr_id, sizeof comgr_id, err, errlen)) < 0)
		goto out;
	if ((r = kj__amd_devlibs_id(dl_id, sizeof dl_id)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the device libraries");
		goto out;
	}
	if (st->api.version(&maj, &min) != 0) {
		snprintf(err, errlen, "hiprtcVersion failed");
		r = KJIT_EBACKEND;
		goto out;
	}
	if ((size_t)snprintf(st->identity, sizeof st->identity, "hiprtc %d.%d; %s; %s", maj, min,
			     comgr_id, dl_id) >= sizeof st->identity) {
		snprintf(err, errlen, "hiprtc's identity is too long");
		r = KJIT_EBACKEND;
		goto out;
	}
	runtime_version(st);
	/* success */
	*state = st;
	st = NULL;
	r = 0;
out:
	hiprtc_fini(st);
	return r;
}

/* Warm-up: the first compile loads comgr's LLVM and device libs (the
 * worker runs it after its IDENT, before its walls close). */
static int hiprtc_warm(void *state, char *err, size_t errlen)
{
	struct hiprtc_state *st = state;
	char arch[KJ_TARGET_MAX + 32];

	if (st->n_isas == 0)
		return 0;
	snprintf(arch, sizeof arch, "--gpu-architecture=%s", st->isas[st->n_isas - 1]);
	for (size_t i = 0; i < st->n_isas; i++)
		if (strcmp(st->isas[i], "gfx90a") == 0)
			snprintf(arch, sizeof arch, "--gpu-architecture=gfx90a");
	return kj__rtc_warm(&hiprtc_family, &st->api, arch, NULL, KJ_EM_AMDGPU, err, errlen);
}

static int hiprtc_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen)
{
	struct hiprtc_state *st = state;

	return kj__identity_put(st->identity, st->runtime, id, idlen, rv, rvlen);
}

/* Puts `#line 1 "NAME"` before *text (malloc'd; replaced): comgr compiles
 * the program and its headers as files of a randomly named directory of
 * its own (TMPDIR/comgr-XXXXXX/input/CompileSource, .../include/x.h), and
 * __FILE__ would carry that name into the object: with the line, __FILE__
 * and the diagnostics name the file as the user gave it, the same on
 * every node and run.  Line numbers are unchanged; quoted includes are
 * still looked up beside the real file.  0 or KJIT_ENOMEM. */
static int name_line(char **text, const char *name)
{
	/* a UTF-8 byte-order mark stays first, where clang skips it */
	int bom = strncmp(*text, "\xef\xbb\xbf", 3) == 0;
	char *t = kj__asprintf("%s#line 1 \"%s\"\n%s", bom ? "\xef\xbb\xbf" : "", name, *text + (bom ? 3 : 0));

	if (t == NULL)
		return KJIT_ENOMEM;
	free(*text);
	*text = t;
	return 0;
}

/* name_line over the program (unless it is the one-line wrapper of a
 * source with a place in the tree, itself a header here) and every header
 * (their names are kj__path_ok: nothing to escape in the string). */
static int name_lines(struct kj__rtc_args *a, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	int r = strchr(job->source_name, '/') ? 0 : name_line(&a->src, job->source_name);

	for (int i = 0; r == 0 && i < a->n_headers; i++)
		r = name_line(&a->hdrs[i], a->names[i]);
	return r < 0 ? kj__out_error(out, r, "out of memory") : 0;
}

static int hiprtc_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	struct hiprtc_state *st = state;
	struct kj__rtc_args a;
	char err[256];
	size_t n_rules;
	const struct kj__opt_rule *rules = kj__hip_option_rules(&n_rules);
	int r;

	memset(out, 0, sizeof *out);
	/* Name expressions (hiprtc only, not hipcc) go to hiprtcAddNameExpression;
	 * the other options to the whitelist shared with hipcc and to hiprtc. */
	const char *opts[KJ_OPTIONS_MAX_COUNT], *exprs[KJ_OPTIONS_MAX_COUNT];
	size_t n_opts = 0;
	int n_exprs = 0;
	for (size_t i = 0; i < job->n_options && i < KJ_OPTIONS_MAX_COUNT; i++) {
		const char *o = job->options[i];
		size_t el = strlen(KJ_NAME_EXPR_OPT);
		if (strncmp(o, KJ_NAME_EXPR_OPT, el) == 0 && o[el] && strlen(o + el) <= KJ_NAME_MAX)
			exprs[n_exprs++] = o + el;
		else
			opts[n_opts++] = o;
	}
	struct kj__compile_job j = *job;
	j.options = opts;
	j.n_options = job->n_options > KJ_OPTIONS_MAX_COUNT ? job->n_options : n_opts;
	if ((r = hiprtc_check_target(st, job->target, err, sizeof err)) < 0 ||
	    (r = kj__options_check2("hiprtc", rules, n_rules, hiprtc_only, KJ_ARRAY_SIZE(hiprtc_only), &j, err,
				    sizeof err)) < 0 ||
	    (r = kj__includes_check(job, err, sizeof err)) < 0)
		return kj__out_error(out, r, err);
	r = kj__rtc_args_build(&j, &a, out);
	/* --pre-include=NAME (-include FILE) is clang's -include NAME: its
	 * joined spelling keeps one option one string (issue 30) */
	char *pre[KJ_OPTIONS_MAX_COUNT];
	size_t n_pre = 0;
	for (int i = 0; r == 0 && i < a.n_opts && n_pre < KJ_OPTIONS_MAX_COUNT; i++)
		if (kj__opt_pre_include(a.opts[i])) {
			if ((pre[n_pre] = kj__asprintf("-include%s", kj__opt_pre_include(a.opts[i]))) == NULL)
				r = kj__out_error(out, KJIT_ENOMEM, "out of memory");
			else
				a.opts[i] = pre[n_pre++];
		}
	if (r == 0)
		r = name_lines(&a, job, out);
	if (r == 0) {
		const struct kj__rtc_prog p = {
			.name = job->source_name, .src = a.src,
			.n_headers = a.n_headers, .hdrs = (const char *const *)a.hdrs, .hdr_names = a.names,
			.n_opts = a.n_opts, .opts = a.opts, .n_exprs = n_exprs, .exprs = exprs,
			.machine = KJ_EM_AMDGPU,
		};
		r = kj__rtc_run(&hiprtc_family, &st->api, &p, out);
	}
	while (n_pre > 0)
		free(pre[--n_pre]);
	kj__rtc_args_free(&a);
	return r;
}

const struct kj__compiler_ops kj__compiler_hiprtc = {
	.name = "hiprtc",
	.backend = KJIT_BACKEND_HIP,
	.init = hiprtc_init,
	.warm = hiprtc_warm,
	.fini = hiprtc_fini,
	.identity = hiprtc_identity,
	.check_target = hiprtc_check_target,
	.compile = hiprtc_compile,
};
