/* nvcc.c: the "nvcc" family: the CUDA family's alternative compiler, for
 * full .cu files (host code beside the kernels, <stdint.h>, <cstdio>) that
 * NVRTC cannot take.  `kjitd --cuda-compiler nvcc` chooses it.
 *
 * nvcc is the one of the toolkit NVRTC comes from: bin/nvcc beside the
 * directory of the library the nvrtc family loads (kj__nvrtc_lib_dir,
 * kj__nvcc_beside), else /usr/local/cuda/bin/nvcc, else /usr/bin/nvcc.
 * Each job runs as hipcc's do (the spawned compilers' skeleton,
 * spawn-family.c, driven by nvcc_family below): the worker's private job
 * directory at its fixed path (job->dir), the source under the name the
 * user gave it, given to nvcc relative to that directory (so __FILE__ and
 * the names nvcc hashes for anonymous-namespace types are the same on
 * every node and run), a clean environment, a process group killed past
 * the timeout, the log with the directory's path removed.  A
 * target sm_NN gives a cubin (`--cubin -arch=sm_NN`), compute_NN gives PTX
 * (`--ptx`), kept with a terminating NUL as cuModuleLoadData wants it; with
 * nvcc's own option --fatbin (kj__cuda_fatbin_opt) either gives a fatbin
 * (`--fatbin -arch=TARGET`: for sm_NN, SASS for sm_NN plus PTX for
 * compute_NN, which the driver JIT-compiles on a newer GPU; for
 * compute_NN, the PTX alone), checked by its magic and layout
 * (kj__fatbin_is).  The device code only: host code is compiled and
 * dropped.
 *
 * nvcc reads the toolkit's and the system's headers (read-only under the
 * sandbox): their tree identity (treeid.c) is part of the identity,
 * "nvcc RELEASE; system headers HASH", computed once per worker start.
 * Runtime version: MAJ.MIN of the release, as for NVRTC.
 *
 * nvcc runs its steps through `sh -c`: no definition reaches its command
 * line (they go to a header included first, defs.c) and every argument it
 * gets is checked against the shell-safe set before it runs.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compint.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "targetid.h"
#include "util.h"

#define NVCC_OUT "kjit-out.obj"
#define NVCC_ARCHS_MAX 128

/* Where nvcc is looked for when no toolkit is found beside NVRTC. */
static const char *const nvcc_paths[] = { "/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc" };

/* What a job asks nvcc for: its target and --fatbin decide. */
enum nvcc_output { OUT_CUBIN, OUT_PTX, OUT_FATBIN };
static const char *const output_flag[] = { "--cubin", "--ptx", "--fatbin" };

struct nvcc_state {
	struct kj__spawn_state base; /* first: the skeleton's (spawn-family.c) */
	int archs[NVCC_ARCHS_MAX];   /* sm_NN numbers of --list-gpu-code */
	int n_archs;
};

/* nvcc's own options beside the CUDA rules it shares with NVRTC
 * (kj__cuda_option_rules).  Anything else is refused. */
static const struct kj__opt_rule nvcc_only[] = {
	{ KJ_OPT_EXACT, "--expt-relaxed-constexpr", NULL },
	{ KJ_OPT_EXACT, "--expt-extended-lambda", NULL },
	/* nvcc's own warning options (it has no -Wall/-Wextra: "Unknown option") */
	{ KJ_OPT_CHOICE, "-Werror=", "all-warnings|cross-execution-space-call|reorder|default-stream-launch|"
				     "missing-launch-bounds|ext-lambda-captures-this|deprecated-declarations" },
	{ KJ_OPT_EXACT, "-Wno-deprecated-gpu-targets", NULL },
	{ KJ_OPT_EXACT, "-Wno-deprecated-declarations", NULL },
	{ KJ_OPT_EXACT, "-Wreorder", NULL },
	{ KJ_OPT_EXACT, "-Wdefault-stream-launch", NULL },
	{ KJ_OPT_EXACT, "-Wmissing-launch-bounds", NULL },
	{ KJ_OPT_EXACT, "-Wext-lambda-captures-this", NULL },
	{ KJ_OPT_EXACT, "--fatbin", NULL },
	{ KJ_OPT_EXACT, "-fatbin", NULL },
	/* the spellings build files carry (CUTLASS, CMake, PyTorch extensions) */
	{ KJ_OPT_EXACT, "--extended-lambda", NULL },
	{ KJ_OPT_EXACT, "-extended-lambda", NULL },
	{ KJ_OPT_EXACT, "-expt-extended-lambda", NULL },
	{ KJ_OPT_EXACT, "-expt-relaxed-constexpr", NULL },
	{ KJ_OPT_EXACT, "--resource-usage", NULL },
	{ KJ_OPT_EXACT, "-res-usage", NULL },
	{ KJ_OPT_EXACT, "-x cu", NULL }, /* what kjit does anyway: not passed on */
	{ KJ_OPT_EXACT, "-m64", NULL },
	{ KJ_OPT_UINT, "-ftemplate-backtrace-limit=", NULL },
	{ KJ_OPT_CHOICE, "--compress-mode=", "default|size|speed|balance|none" },
	{ KJ_OPT_LIST, "--diag-suppress=", "#|*" },
	{ KJ_OPT_LIST, "-diag-suppress=", "#|*" },
	{ KJ_OPT_LIST, "--diag-warn=", "#|*" },
	{ KJ_OPT_LIST, "-diag-warn=", "#|*" },
	{ KJ_OPT_LIST, "--diag-error=", "#|*" },
	{ KJ_OPT_LIST, "-diag-error=", "#|*" },
	/* values nvcc hands the host compiler (the host code is compiled and
	 * dropped): code-generation and warning flags only, never a file, a
	 * plugin or another program (-Wl, -Wa, -Wp are not -W*); ptxas's are
	 * in the shared rules */
	{ KJ_OPT_LIST, "-Xcompiler=", KJ_HOST_CC_VALUES },
	{ KJ_OPT_LIST, "--compiler-options=", KJ_HOST_CC_VALUES },
};

int kj__nvcc_beside(const char *libdir, char *out, size_t outlen)
{
	static const char *const rel[] = { "../bin", "../../bin", "../../../bin" };
	char p[PATH_MAX], real[PATH_MAX];

	for (size_t i = 0; libdir && i < KJ_ARRAY_SIZE(rel); i++)
		if ((size_t)snprintf(p, sizeof p, "%s/%s/nvcc", libdir, rel[i]) < sizeof p && access(p, X_OK) == 0 &&
		    realpath(p, real) != NULL && (size_t)snprintf(out, outlen, "%s", real) < outlen)
			return 0;
	return KJIT_ENOENT;
}

/* Sets st->path: beside NVRTC, else the fixed places.  0 or KJIT_EBACKEND. */
static int find_nvcc(struct kj__spawn_state *st)
{
	char lib[PATH_MAX];

	if (kj__nvrtc_lib_dir(lib, sizeof lib) == 0 && kj__nvcc_beside(lib, st->path, sizeof st->path) == 0)
		return 0;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(nvcc_paths); i++)
		if (access(nvcc_paths[i], X_OK) == 0) {
			snprintf(st->path, sizeof st->path, "%s", nvcc_paths[i]);
			return 0;
		}
	return KJIT_EBACKEND;
}

/* Fills the identity, runtime and architectures from nvcc itself. */
static int probe(struct kj__spawn_state *base, char *err, size_t errlen)
{
	struct nvcc_state *st = (struct nvcc_state *)base;
	char *ver = NULL, *codes = NULL, rel[KJ_VERSION_STR_MAX] = "", inc[PATH_MAX + 16], real[PATH_MAX];
	char sys[32];
	int maj = 0, min = 0, r;

	if (kj__spawn_query(base, "nvcc", "--version", &ver) < 0 ||
	    kj__spawn_query(base, "nvcc", "--list-gpu-code", &codes) < 0) {
		snprintf(err, errlen, "'%s --version' or '--list-gpu-code' failed", base->path);
		r = KJIT_EBACKEND;
		goto out;
	}
	const char *v = strstr(ver, ", V");
	if (v == NULL || sscanf(v + 3, "%63[0-9.]", rel) != 1 || sscanf(rel, "%d.%d", &maj, &min) != 2) {
		snprintf(err, errlen, "'%s --version' names no release", base->path);
		r = KJIT_EBACKEND;
		goto out;
	}
	for (const char *p = codes; (p = strstr(p, "sm_")) != NULL && st->n_archs < NVCC_ARCHS_MAX; p += 3)
		st->archs[st->n_archs++] = atoi(p + 3);
	/* the toolkit's include directory, beside bin/ */
	snprintf(inc, sizeof inc, "%s", base->path);
	char *slash = strrchr(inc, '/');
	if (slash)
		snprintf(slash, sizeof inc - (size_t)(slash - inc), "/../include");
	if ((r = kj__system_headers_id(realpath(inc, real) ? real : NULL, sys, sizeof sys)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the system include trees (%s)", kjit_strerror(r));
		goto out;
	}
	snprintf(base->identity, sizeof base->identity, "nvcc %s; system headers %s", rel, sys);
	snprintf(base->runtime, sizeof base->runtime, "%d.%d", maj, min);
	r = 0;
out:
	free(ver);
	free(codes);
	return r;
}

static int nvcc_check_target(void *state, const char *target, char *err, size_t errlen)
{
	struct nvcc_state *st = state;
	char why[256];
	int ptx = 0;

	if (target && kj__token_ok(target, KJ_TARGET_MAX) && kj__cuda_target_parse(target, &ptx, why, sizeof why) == 0) {
		int arch = atoi(target + (ptx ? 8 : 3));
		for (int i = 0; i < st->n_archs; i++)
			if (st->archs[i] == arch)
				return 0;
	}
	snprintf(err, errlen, "target '%.64s' is not supported by this nvcc (see nvcc --list-gpu-code)",
		 target ? target : "");
	return KJIT_ETARGET;
}

/* What a job asks nvcc for: its target and --fatbin decide. */
static enum nvcc_output output_of(const struct kj__compile_job *job)
{
	enum nvcc_output kind = strncmp(job->target, "compute_", 8) == 0 ? OUT_PTX : OUT_CUBIN;

	for (size_t i = 0; i < job->n_options; i++)
		if (kj__cuda_fatbin_opt(job->options[i]))
			kind = OUT_FATBIN;
	return kind;
}

static const char *output_flag_of(const struct kj__compile_job *job)
{
	return output_flag[output_of(job)];
}

/* Reads dir/NVCC_OUT: a CUDA ELF, PTX given a terminating NUL, or a fatbin. */
static int take_object(const char *dir, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	enum nvcc_output kind = output_of(job);
	char path[PATH_MAX];
	uint8_t *data = NULL;
	size_t len = 0;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, NVCC_OUT) >= sizeof path)
		return kj__out_error(out, KJIT_EINTERNAL, "temporary path too long");
	int r = kj__read_file(path, KJ_OBJECT_MAX, &data, &len);
	if (r < 0)
		return kj__out_error(out, r == -EFBIG ? KJIT_ETOOBIG : KJIT_EINTERNAL,
				     "nvcc succeeded but wrote no object (or one over the size cap)");
	if (kind == OUT_PTX && (len == 0 || data[len - 1] != '\0'))
		data[len++] = '\0'; /* kj__read_file leaves room for a NUL */
	if ((kind == OUT_CUBIN && !kj__elf_is(data, len, KJ_EM_CUDA, NULL)) ||
	    (kind == OUT_FATBIN && !kj__fatbin_is(data, len))) {
		free(data);
		return kj__out_error(out, KJIT_EINTERNAL, kind == OUT_CUBIN ? "nvcc's object is not a CUDA ELF"
									     : "nvcc's object is not a CUDA fatbin");
	}
	out->data = data;
	out->len = len;
	return 0;
}

/* The source is written under the user's name (with its place in the
 * include tree, "src/x.cu"); one that does not end in .cu (x.cuh, x.cpp,
 * "source") is compiled as CUDA all the same: `-x cu` goes before it.
 * ("source.cu" only for a name kjit cannot write.) */
static int needs_cu(const struct kj__compile_job *job, const char *name)
{
	size_t l = strlen(name);

	(void)job;
	return !(l > 3 && strcmp(name + l - 3, ".cu") == 0);
}

/* --fatbin is given once, as the output flag. */
static int passes(const char *opt)
{
	return !kj__cuda_fatbin_opt(opt);
}

static int nvcc_check(void *state, const struct kj__compile_job *job, char *err, size_t errlen)
{
	int r = nvcc_check_target(state, job->target, err, errlen);

	size_t n_rules;
	const struct kj__opt_rule *rules = kj__cuda_option_rules(&n_rules);

	return r < 0 ? r : kj__options_check2("nvcc", rules, n_rules, nvcc_only, KJ_ARRAY_SIZE(nvcc_only), job, err,
					      errlen);
}

/* nvcc's names and steps for the spawned compilers' skeleton (spawn-family.c). */
static const struct kj__spawn_family nvcc_family = {
	.name = "nvcc",
	.not_found = "nvcc not found (beside NVRTC, /usr/local/cuda/bin or /usr/bin): install the CUDA toolkit",
	.out_file = NVCC_OUT,
	.fallback = "source.cu",
	.lang = "cu",
	.arch_opt = "-arch=",
	.find = find_nvcc,
	.probe = probe,
	.check = nvcc_check,
	.needs_lang = needs_cu,
	.output_flag = output_flag_of,
	.passes = passes,
	.take = take_object,
};

static int nvcc_init(void **state, char *err, size_t errlen)
{
	return kj__spawn_init(&nvcc_family, sizeof(struct nvcc_state), state, err, errlen);
}

static int nvcc_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	return kj__spawn_compile(&nvcc_family, state, job, out);
}

const struct kj__compiler_ops kj__compiler_nvcc = {
	.name = "nvcc",
	.backend = KJIT_BACKEND_CUDA,
	.init = nvcc_init,
	.fini = kj__spawn_fini,
	.identity = kj__spawn_identity,
	.check_target = nvcc_check_target,
	.compile = nvcc_compile,
};
