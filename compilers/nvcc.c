/* nvcc.c: the "nvcc" family: the CUDA family's alternative compiler, for
 * full .cu files (host code beside the kernels, <stdint.h>, <cstdio>) that
 * NVRTC cannot take.  `kjitd --cuda-compiler nvcc` chooses it.
 *
 * nvcc is the one of the toolkit NVRTC comes from: bin/nvcc beside the
 * directory of the library the nvrtc family loads (kj__nvrtc_lib_dir,
 * kj__nvcc_beside), else /usr/local/cuda/bin/nvcc, else /usr/bin/nvcc.
 * Each job runs as hipcc's do (spawn.c): the worker's private job
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
#include <sys/wait.h>
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
	char nvcc[PATH_MAX];
	char tmp_root[PATH_MAX];
	char identity[KJ_VERSION_STR_MAX * 2];
	char runtime[KJ_VERSION_STR_MAX];
	int archs[NVCC_ARCHS_MAX];   /* sm_NN numbers of --list-gpu-code */
	int n_archs;
};

/* Options a CUDA source may carry through nvcc.  Anything else is refused. */
static const struct kj__opt_rule nvcc_rules[] = {
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
	{ KJ_OPT_EXACT, "--expt-relaxed-constexpr", NULL },
	{ KJ_OPT_EXACT, "--expt-extended-lambda", NULL },
	{ KJ_OPT_EXACT, "-w", NULL },
	{ KJ_OPT_EXACT, "--disable-warnings", NULL },
	/* nvcc's own warning options (it has no -Wall/-Wextra: "Unknown option") */
	{ KJ_OPT_CHOICE, "-Werror=", "all-warnings|cross-execution-space-call|reorder|default-stream-launch|"
				     "missing-launch-bounds|ext-lambda-captures-this|deprecated-declarations" },
	{ KJ_OPT_EXACT, "-Wno-deprecated-gpu-targets", NULL },
	{ KJ_OPT_EXACT, "-Wno-deprecated-declarations", NULL },
	{ KJ_OPT_EXACT, "-Wreorder", NULL },
	{ KJ_OPT_EXACT, "-Wdefault-stream-launch", NULL },
	{ KJ_OPT_EXACT, "-Wmissing-launch-bounds", NULL },
	{ KJ_OPT_EXACT, "-Wext-lambda-captures-this", NULL },
	{ KJ_OPT_EXACT, "-O", NULL },
	{ KJ_OPT_CHOICE, "-O", "0|1|2|3" },
	{ KJ_OPT_EXACT, "--fatbin", NULL },
	{ KJ_OPT_EXACT, "-fatbin", NULL },
	/* the spellings build files carry (CUTLASS, CMake, PyTorch extensions) */
	{ KJ_OPT_CHOICE, "-ftz=", "true|false" },
	{ KJ_OPT_CHOICE, "-prec-div=", "true|false" },
	{ KJ_OPT_CHOICE, "-prec-sqrt=", "true|false" },
	{ KJ_OPT_CHOICE, "-fmad=", "true|false" },
	{ KJ_OPT_EXACT, "--extended-lambda", NULL },
	{ KJ_OPT_EXACT, "-extended-lambda", NULL },
	{ KJ_OPT_EXACT, "-expt-extended-lambda", NULL },
	{ KJ_OPT_EXACT, "-expt-relaxed-constexpr", NULL },
	{ KJ_OPT_EXACT, "--restrict", NULL },
	{ KJ_OPT_EXACT, "-restrict", NULL },
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
	 * dropped) and ptxas: code-generation and warning flags only, never
	 * a file, a plugin or another program (-Wl, -Wa, -Wp are not -W*) */
	{ KJ_OPT_LIST, "-Xcompiler=", KJ_HOST_CC_VALUES },
	{ KJ_OPT_LIST, "--compiler-options=", KJ_HOST_CC_VALUES },
	{ KJ_OPT_LIST, "-Xptxas=", KJ_PTXAS_VALUES },
	{ KJ_OPT_LIST, "--ptxas-options=", KJ_PTXAS_VALUES },
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

/* Sets st->nvcc: beside NVRTC, else the fixed places.  0 or KJIT_EBACKEND. */
static int find_nvcc(struct nvcc_state *st)
{
	char lib[PATH_MAX];

	if (kj__nvrtc_lib_dir(lib, sizeof lib) == 0 && kj__nvcc_beside(lib, st->nvcc, sizeof st->nvcc) == 0)
		return 0;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(nvcc_paths); i++)
		if (access(nvcc_paths[i], X_OK) == 0) {
			snprintf(st->nvcc, sizeof st->nvcc, "%s", nvcc_paths[i]);
			return 0;
		}
	return KJIT_EBACKEND;
}

/* Runs `nvcc ARG` in a fresh directory; the output in *text (malloc'd). */
static int nvcc_query(const struct nvcc_state *st, const char *arg, char **text)
{
	char dir[PATH_MAX];
	const char *argv[] = { st->nvcc, arg, NULL };
	struct kj__proc_out po;
	int r = KJIT_EBACKEND;

	*text = NULL;
	memset(&po, 0, sizeof po);
	if (kj__make_job_dir(st->tmp_root, "nvcc", dir, sizeof dir) < 0)
		return KJIT_EIO;
	if (kj__run_capture(argv, dir, KJ_COMPILE_TIMEOUT_MS, &po) == 0 && WIFEXITED(po.status) &&
	    WEXITSTATUS(po.status) == 0 && kj__buf_append(&po.log, "", 1) == 0) {
		*text = (char *)po.log.p;
		po.log.p = NULL;
		r = 0;
	}
	kj__buf_free(&po.log);
	kj__rm_job_dir(dir);
	return r;
}

/* Fills the identity, runtime and architectures from nvcc itself. */
static int probe(struct nvcc_state *st, char *err, size_t errlen)
{
	char *ver = NULL, *codes = NULL, rel[KJ_VERSION_STR_MAX] = "", inc[PATH_MAX + 16], real[PATH_MAX];
	char sys[32];
	int maj = 0, min = 0, r;

	if (nvcc_query(st, "--version", &ver) < 0 || nvcc_query(st, "--list-gpu-code", &codes) < 0) {
		snprintf(err, errlen, "'%s --version' or '--list-gpu-code' failed", st->nvcc);
		r = KJIT_EBACKEND;
		goto out;
	}
	const char *v = strstr(ver, ", V");
	if (v == NULL || sscanf(v + 3, "%63[0-9.]", rel) != 1 || sscanf(rel, "%d.%d", &maj, &min) != 2) {
		snprintf(err, errlen, "'%s --version' names no release", st->nvcc);
		r = KJIT_EBACKEND;
		goto out;
	}
	for (const char *p = codes; (p = strstr(p, "sm_")) != NULL && st->n_archs < NVCC_ARCHS_MAX; p += 3)
		st->archs[st->n_archs++] = atoi(p + 3);
	/* the toolkit's include directory, beside bin/ */
	snprintf(inc, sizeof inc, "%s", st->nvcc);
	char *slash = strrchr(inc, '/');
	if (slash)
		snprintf(slash, sizeof inc - (size_t)(slash - inc), "/../include");
	if ((r = kj__system_headers_id(realpath(inc, real) ? real : NULL, sys, sizeof sys)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the system include trees (%s)", kjit_strerror(r));
		goto out;
	}
	snprintf(st->identity, sizeof st->identity, "nvcc %s; system headers %s", rel, sys);
	snprintf(st->runtime, sizeof st->runtime, "%d.%d", maj, min);
	r = 0;
out:
	free(ver);
	free(codes);
	return r;
}

static void nvcc_fini(void *state)
{
	free(state);
}

static int nvcc_init(void **state, char *err, size_t errlen)
{
	int r = KJIT_ENOMEM;
	struct nvcc_state *st = calloc(1, sizeof *st);
	const char *tmp = getenv("TMPDIR");

	if (st == NULL)
		goto out;
	if ((r = find_nvcc(st)) < 0) {
		snprintf(err, errlen, "nvcc not found (beside NVRTC, /usr/local/cuda/bin or /usr/bin): install the "
			 "CUDA toolkit");
		goto out;
	}
	snprintf(st->tmp_root, sizeof st->tmp_root, "%s",
		 tmp && tmp[0] == '/' && strlen(tmp) < PATH_MAX / 2 ? tmp : "/tmp");
	if ((r = probe(st, err, errlen)) < 0)
		goto out;
	/* success */
	*state = st;
	st = NULL;
	r = 0;
out:
	nvcc_fini(st);
	return r;
}

static int nvcc_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen)
{
	struct nvcc_state *st = state;

	if ((size_t)snprintf(id, idlen, "%s", st->identity) >= idlen ||
	    (size_t)snprintf(rv, rvlen, "%s", st->runtime) >= rvlen)
		return KJIT_ETOOBIG;
	return 0;
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

/* Runs nvcc on dir/src into dir/NVCC_OUT (log in out->log).  0, or a
 * negative code with out->error. */
static int run_nvcc(struct nvcc_state *st, const struct kj__compile_job *job, const char *dir, const char *src,
		    const char *defs, enum nvcc_output kind, int as_cu, struct kj__compile_out *out)
{
	char err[256], arch[KJ_TARGET_MAX + 16], inc[PATH_MAX + 4], srcpath[PATH_MAX + KJ_NAME_MAX],
		outpath[PATH_MAX + 32];
	const char **argv = calloc(2 * job->n_options + 14, sizeof *argv);
	struct kj__proc_out po;
	size_t a = 0;
	int r = KJIT_ENOMEM;

	memset(&po, 0, sizeof po);
	if (argv == NULL)
		goto out;
	/* The source by its name relative to dir, nvcc's working directory:
	 * __FILE__ is the name the user gave, as when they run nvcc beside it. */
	if ((size_t)snprintf(arch, sizeof arch, "-arch=%s", job->target) >= sizeof arch ||
	    (size_t)snprintf(inc, sizeof inc, "-I%s", dir) >= sizeof inc ||
	    (size_t)snprintf(srcpath, sizeof srcpath, "%s%s", src[0] == '-' ? "./" : "", src) >= sizeof srcpath ||
	    (size_t)snprintf(outpath, sizeof outpath, "%s/%s", dir, NVCC_OUT) >= sizeof outpath) {
		r = kj__out_error(out, KJIT_EINTERNAL, "temporary path too long");
		goto out;
	}
	argv[a++] = st->nvcc;
	argv[a++] = output_flag[kind];
	argv[a++] = arch;
	for (size_t i = 0; i < job->n_options; i++) /* fatbin given once, above; definitions in defs; pre-includes, -x cu below */
		if (!kj__cuda_fatbin_opt(job->options[i]) && !kj__opt_is_macro(job->options[i]) &&
		    !kj__opt_pre_include(job->options[i]) && strcmp(job->options[i], "-x cu") != 0)
			argv[a++] = job->options[i];
	if (defs[0]) {
		argv[a++] = "-include";
		argv[a++] = defs;
	}
	for (size_t i = 0; i < job->n_options; i++) /* after the -D's, as on a command line */
		if (kj__opt_pre_include(job->options[i])) {
			argv[a++] = "-include";
			argv[a++] = kj__opt_pre_include(job->options[i]);
		}
	argv[a++] = inc;
	argv[a++] = "-o";
	argv[a++] = outpath;
	if (as_cu) {
		argv[a++] = "-x";
		argv[a++] = "cu";
	}
	argv[a++] = srcpath;
	if ((r = kj__argv_shell_safe("nvcc", argv, err, sizeof err)) < 0) {
		r = kj__out_error(out, r, err);
		goto out;
	}
	if ((r = kj__run_capture(argv, dir, KJ_COMPILE_TIMEOUT_MS, &po)) < 0) {
		r = kj__out_error(out, r, "cannot run nvcc");
		goto out;
	}
	out->log = kj__clean_log(&po, dir);
	if (po.timed_out) {
		r = kj__out_error(out, KJIT_ETIMEDOUT, "nvcc ran past the compile timeout and was killed");
		goto out;
	}
	if (!WIFEXITED(po.status) || WEXITSTATUS(po.status) != 0) {
		char status[64];
		snprintf(status, sizeof status, "nvcc failed (%s %d)", WIFEXITED(po.status) ? "exit status" : "signal",
			 WIFEXITED(po.status) ? WEXITSTATUS(po.status) : WTERMSIG(po.status));
		kj__log_reason(out->log, status, err, sizeof err);
		r = kj__out_error(out, KJIT_ECOMPILE, err);
		goto out;
	}
	r = 0;
out:
	kj__buf_free(&po.log);
	free(argv);
	return r;
}

/* Reads dir/NVCC_OUT: a CUDA ELF, PTX given a terminating NUL, or a fatbin. */
static int take_object(const char *dir, enum nvcc_output kind, struct kj__compile_out *out)
{
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

/* The file name the source is written under: its own, as the user gave it
 * (kj__path_ok: with its place in the include tree, "src/x.cu"); one that
 * does not end in .cu (x.cuh, x.cpp, "source") is compiled as CUDA all
 * the same (*as_cu: `-x cu` goes before it).  "source.cu" only for a name
 * kjit cannot write. */
static void source_file(const char *name, char *out, size_t outlen, int *as_cu)
{
	size_t l = strlen(name);
	int ok = kj__path_ok(name) && strcmp(name, NVCC_OUT) != 0 && strcmp(name, KJ_DEFS_HEADER) != 0;

	*as_cu = ok && !(l > 3 && strcmp(name + l - 3, ".cu") == 0);
	snprintf(out, outlen, "%s", ok ? name : "source.cu");
}

static int nvcc_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	struct nvcc_state *st = state;
	char err[256], dir[PATH_MAX], src[KJ_NAME_MAX + 16], defs[PATH_MAX + 32];
	int r, made = 0, as_cu = 0;

	memset(out, 0, sizeof *out);
	if ((r = nvcc_check_target(st, job->target, err, sizeof err)) < 0 ||
	    (r = kj__options_check("nvcc", nvcc_rules, KJ_ARRAY_SIZE(nvcc_rules), job, err, sizeof err)) < 0 ||
	    (r = kj__includes_check(job, err, sizeof err)) < 0)
		return kj__out_error(out, r, err);
	if (kj__job_dir_open(job, st->tmp_root, "nvcc", dir, sizeof dir, &made) < 0)
		return kj__out_error(out, KJIT_EIO, "cannot make a temporary directory for nvcc");
	enum nvcc_output kind = strncmp(job->target, "compute_", 8) == 0 ? OUT_PTX : OUT_CUBIN;
	for (size_t i = 0; i < job->n_options; i++)
		if (kj__cuda_fatbin_opt(job->options[i]))
			kind = OUT_FATBIN;
	source_file(job->source_name, src, sizeof src, &as_cu);
	r = 0;
	for (size_t i = 0; r == 0 && i < job->n_headers; i++)
		if (strcmp(job->headers[i].name, src) != 0 && strcmp(job->headers[i].name, NVCC_OUT) != 0 &&
		    kj__put_file(dir, job->headers[i].name, job->headers[i].data, job->headers[i].len) < 0)
			r = kj__out_error(out, KJIT_EIO, "cannot write a header into the temporary directory");
	if (r == 0 && kj__put_file(dir, src, job->source, job->source_len) < 0)
		r = kj__out_error(out, KJIT_EIO, "cannot write the source into the temporary directory");
	if (r == 0 && (r = kj__defs_write(dir, job, defs, sizeof defs, err, sizeof err)) < 0)
		r = kj__out_error(out, r, err);
	if (r == 0 && (r = run_nvcc(st, job, dir, src, defs, kind, as_cu, out)) == 0)
		r = take_object(dir, kind, out);
	if (made) /* else the worker empties its own */
		kj__rm_job_dir(dir);
	return r;
}

const struct kj__compiler_ops kj__compiler_nvcc = {
	.name = "nvcc",
	.backend = KJIT_BACKEND_CUDA,
	.init = nvcc_init,
	.fini = nvcc_fini,
	.identity = nvcc_identity,
	.check_target = nvcc_check_target,
	.compile = nvcc_compile,
};
