/* hipcc.c: the "hipcc" family: the alternative HIP compiler, running the
 * hipcc driver (perl + clang) as a child process, for systems where hiprtc
 * is missing or misbehaves.
 *
 * Each job gets a private directory (the worker's, at its fixed path:
 * job->dir) holding the source, under the name the user gave it and
 * passed to hipcc relative to the directory (__FILE__ is that name, the
 * same on every node and run), and the job's headers and nothing else;
 * hipcc runs there through posix_spawn with
 * a clean environment (PATH, HOME and TMPDIR pointing into the directory,
 * LC_ALL=C, HIP_PLATFORM=amd), its own process group (a job past
 * KJ_COMPILE_TIMEOUT_MS has the whole group killed) and stdout+stderr
 * captured as the log (capped at KJ_LOG_MAX, the directory's path removed).
 * The directory is emptied afterwards, whatever happened.  hipcc.pl
 * builds one shell command line: no definition reaches it (they go to a
 * header included first, defs.c) and every argument it gets is checked
 * against the shell-safe set before it runs.
 *
 * On Debian `hipcc --genco` writes a clang offload bundle
 * ("__CLANG_OFFLOAD_BUNDLE__" with an empty host entry and one
 * "hipv4-amdgcn-amd-amdhsa--TARGET" entry): the device ELF is cut out of it
 * here (compint.h: kj__bundle_find), so both HIP families hand back a plain
 * AMDGPU ELF.  A plain ELF (other hipcc builds) is taken as is.
 *
 * hipcc, unlike hiprtc, reads the system's headers (<cstdint>, <iostream>):
 * the sandbox lets it read the system trees, and their identity is part of
 * the compiler's.
 *
 * Identity: "hipcc HIPVERSION; clang VERSION; device-libs HASH; system
 * headers HASH" from `hipcc --version` run once in init and treeid.c's
 * kj__system_headers_id; runtime version: MAJOR.MINOR of the HIP
 * version.  A target is admitted when kj__amd_target_parse accepts it
 * and the device libs carry oclc_isa_version_NNN.bc for its processor.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

#define HIPCC_OUT "kjit-out.co"

static const char *const hipcc_paths[] = { "/usr/bin/hipcc", "/opt/rocm/bin/hipcc",
					   "/opt/rocm/hip/bin/hipcc" };

struct hipcc_state {
	char hipcc[PATH_MAX];
	char tmp_root[PATH_MAX];     /* where job directories are made */
	char identity[KJ_VERSION_STR_MAX * 2];
	char runtime[KJ_VERSION_STR_MAX];
};

/* hipcc's own beside the rules shared with hiprtc: -fPIC as CMake passes
 * it (host code only), and -x hip, which kjit gives every source anyway
 * (not passed on). */
static const struct kj__opt_rule hipcc_only[] = {
	{ KJ_OPT_EXACT, "-fPIC", NULL },
	{ KJ_OPT_EXACT, "-fpic", NULL },
	{ KJ_OPT_EXACT, "-x hip", NULL },
};

static int hipcc_check_target(void *state, const char *target, char *err, size_t errlen)
{
	char canon[KJ_TARGET_MAX], path[PATH_MAX];
	struct stat sb;
	const char *dir = kj__amd_bitcode_dir();
	int r = kj__amd_target_canon(target, canon, sizeof canon, err, errlen);

	(void)state;
	if (r < 0)
		return r;
	if (strcmp(canon, target) != 0) {
		snprintf(err, errlen, "target '%s' is not canonical (expected '%s')", target, canon);
		return KJIT_ETARGET;
	}
	size_t pl = strcspn(target, ":");
	if (dir == NULL || pl < 4 ||
	    (size_t)snprintf(path, sizeof path, "%s/oclc_isa_version_%.*s.bc", dir, (int)(pl - 3),
			     target + 3) >= sizeof path ||
	    stat(path, &sb) != 0) {
		snprintf(err, errlen, "target '%s': the installed device libraries have no '%.*s' (oclc_isa_version_%.*s.bc)",
			 target, (int)pl, target, (int)(pl > 3 ? pl - 3 : 0), target + (pl > 3 ? 3 : 0));
		return KJIT_ETARGET;
	}
	return 0;
}

static void hipcc_fini(void *state)
{
	free(state);
}

/* Fills st->identity and st->runtime from `hipcc --version`. */
static int probe_version(struct hipcc_state *st, char *err, size_t errlen)
{
	int r = KJIT_EBACKEND;
	char dir[PATH_MAX], hipv[KJ_VERSION_STR_MAX] = "", clangv[KJ_VERSION_STR_MAX] = "";
	char dl[KJ_VERSION_STR_MAX], sys[32];
	const char *argv[] = { st->hipcc, "--version", NULL };
	struct kj__proc_out po;
	int maj = 0, min = 0;

	memset(&po, 0, sizeof po);
	if (kj__make_job_dir(st->tmp_root, "hipcc", dir, sizeof dir) < 0) {
		snprintf(err, errlen, "cannot make a directory under %s", st->tmp_root);
		return KJIT_EIO;
	}
	if (kj__run_capture(argv, dir, KJ_COMPILE_TIMEOUT_MS, &po) < 0 || !WIFEXITED(po.status) ||
	    WEXITSTATUS(po.status) != 0 || kj__buf_append(&po.log, "", 1) < 0) {
		snprintf(err, errlen, "'%s --version' failed", st->hipcc);
		goto out;
	}
	const char *t = (const char *)po.log.p, *h = strstr(t, "HIP version: "), *c = strstr(t, "clang version ");
	if (h == NULL || sscanf(h + 13, "%63s", hipv) != 1 || sscanf(hipv, "%d.%d", &maj, &min) != 2) {
		snprintf(err, errlen, "'%s --version' names no HIP version", st->hipcc);
		goto out;
	}
	if (c)
		sscanf(c + 14, "%63s", clangv);
	if ((r = kj__amd_devlibs_id(dl, sizeof dl)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the device libraries");
		goto out;
	}
	if ((r = kj__system_headers_id(NULL, sys, sizeof sys)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the system include trees (%s)", kjit_strerror(r));
		goto out;
	}
	if ((size_t)snprintf(st->identity, sizeof st->identity, "hipcc %s; clang %s; %s; system headers %s", hipv,
			     clangv[0] ? clangv : "unknown", dl, sys) >= sizeof st->identity) {
		snprintf(err, errlen, "hipcc's identity is too long");
		r = KJIT_EBACKEND;
		goto out;
	}
	snprintf(st->runtime, sizeof st->runtime, "%d.%d", maj, min);
	r = 0;
out:
	kj__buf_free(&po.log);
	kj__rm_job_dir(dir);
	return r;
}

static int hipcc_init(void **state, char *err, size_t errlen)
{
	int r = KJIT_ENOMEM;
	struct hipcc_state *st = calloc(1, sizeof *st);
	const char *tmp = getenv("TMPDIR");

	if (st == NULL)
		goto out;
	r = KJIT_EBACKEND;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(hipcc_paths) && !st->hipcc[0]; i++)
		if (access(hipcc_paths[i], X_OK) == 0)
			snprintf(st->hipcc, sizeof st->hipcc, "%s", hipcc_paths[i]);
	if (!st->hipcc[0]) {
		snprintf(err, errlen, "hipcc not found (/usr/bin/hipcc, /opt/rocm/bin/hipcc): install hipcc");
		goto out;
	}
	snprintf(st->tmp_root, sizeof st->tmp_root, "%s",
		 tmp && tmp[0] == '/' && strlen(tmp) < PATH_MAX / 2 ? tmp : "/tmp");
	if ((r = probe_version(st, err, errlen)) < 0)
		goto out;
	/* success */
	*state = st;
	st = NULL;
	r = 0;
out:
	free(st);
	return r;
}

static int hipcc_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen)
{
	struct hipcc_state *st = state;

	if ((size_t)snprintf(id, idlen, "%s", st->identity) >= idlen ||
	    (size_t)snprintf(rv, rvlen, "%s", st->runtime) >= rvlen)
		return KJIT_ETOOBIG;
	return 0;
}

/* 1 if name ends in suffix (and is longer). */
static int ends_with(const char *name, const char *suffix)
{
	size_t l = strlen(name), s = strlen(suffix);
	return l > s && strcmp(name + l - s, suffix) == 0;
}

/* The file name the source is written under, so that hipcc's messages and
 * __FILE__ name the user's file (at its place in the include tree:
 * "src/main.hip", so that its "../include/x.h" lands where it does on the
 * user's disk): its own, as the user gave it; one that does not end in
 * .hip or .cu (x.cpp, as HIP programs are often named, or "source") gets
 * *as_hip: `-x hip` goes before it, whatever HIP_COMPILE_CXX_AS_HIP says.
 * "source.hip" only for a name kjit cannot write. */
static void source_file(const struct kj__compile_job *job, char *out, size_t outlen, int *as_hip)
{
	const char *name = job->source_name;
	int ok = kj__path_ok(name) && strcmp(name, HIPCC_OUT) != 0 && strcmp(name, KJ_DEFS_HEADER) != 0;

	*as_hip = ok && !ends_with(name, ".hip") && !ends_with(name, ".cu");
	for (size_t i = 0; ok && i < job->n_options; i++) /* the user's own -x hip */
		*as_hip |= strcmp(job->options[i], "-x hip") == 0;
	snprintf(out, outlen, "%s", ok ? name : "source.hip");
}

/* Reads dir/HIPCC_OUT and takes the device ELF for target out of it. */
static int take_object(const char *dir, const char *target, struct kj__compile_out *out)
{
	char path[PATH_MAX];
	uint8_t *data = NULL;
	size_t len = 0;
	const uint8_t *obj = NULL;
	size_t objlen = 0;
	int r;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, HIPCC_OUT) >= sizeof path)
		return kj__out_error(out, KJIT_EINTERNAL, "temporary path too long");
	if ((r = kj__read_file(path, KJ_OBJECT_MAX + (1u << 20), &data, &len)) < 0) {
		r = kj__out_error(out, r == -EFBIG ? KJIT_ETOOBIG : KJIT_EINTERNAL,
				  "hipcc succeeded but wrote no code object");
		goto out;
	}
	if (kj__elf_is(data, len, KJ_EM_AMDGPU, NULL)) {
		obj = data;
		objlen = len;
	} else if ((r = kj__bundle_find(data, len, target, &obj, &objlen)) < 0) {
		r = kj__out_error(out, KJIT_EINTERNAL, r == KJIT_ENOENT ?
				  "hipcc's offload bundle has no entry for the target" :
				  "hipcc wrote neither an ELF nor a clang offload bundle");
		goto out;
	}
	if (!kj__elf_is(obj, objlen, KJ_EM_AMDGPU, NULL) || objlen > KJ_OBJECT_MAX) {
		r = kj__out_error(out, KJIT_EINTERNAL, "hipcc's device object is not an AMDGPU ELF");
		goto out;
	}
	if ((out->data = malloc(objlen)) == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	memcpy(out->data, obj, objlen);
	out->len = objlen;
	r = 0;
out:
	free(data);
	return r;
}

/* Writes the job's headers, then its source as src, into dir.  0 or a
 * negative code with out->error. */
static int write_job(const char *dir, const struct kj__compile_job *job, const char *src,
		     struct kj__compile_out *out)
{
	for (size_t i = 0; i < job->n_headers; i++) {
		if (strcmp(job->headers[i].name, src) == 0 || strcmp(job->headers[i].name, HIPCC_OUT) == 0)
			continue; /* the source itself wins */
		if (kj__put_file(dir, job->headers[i].name, job->headers[i].data, job->headers[i].len) < 0)
			return kj__out_error(out, KJIT_EIO, "cannot write a header into the temporary directory");
	}
	if (kj__put_file(dir, src, job->source, job->source_len) < 0)
		return kj__out_error(out, KJIT_EIO, "cannot write the source into the temporary directory");
	return 0;
}

/* Runs `hipcc --genco` on dir/src into dir/HIPCC_OUT, with the log (its
 * private paths removed) in out->log.  0, or a negative code with
 * out->error (KJIT_ECOMPILE: hipcc rejected the source). */
static int run_hipcc(struct hipcc_state *st, const struct kj__compile_job *job, const char *dir, const char *src,
		     const char *defs, int as_hip, struct kj__compile_out *out)
{
	char err[256], arch[KJ_TARGET_MAX + 32], inc[PATH_MAX + 4];
	char srcpath[PATH_MAX + KJ_NAME_MAX], outpath[PATH_MAX + 32];
	const char **argv = NULL;
	size_t a = 0;
	struct kj__proc_out po;
	int r = KJIT_ENOMEM;

	memset(&po, 0, sizeof po);
	if ((argv = calloc(2 * job->n_options + 12, sizeof *argv)) == NULL)
		goto out;
	if ((size_t)snprintf(arch, sizeof arch, "--offload-arch=%s", job->target) >= sizeof arch ||
	    (size_t)snprintf(inc, sizeof inc, "-I%s", dir) >= sizeof inc ||
	    (size_t)snprintf(srcpath, sizeof srcpath, "%s%s", src[0] == '-' ? "./" : "", src) >= sizeof srcpath ||
	    (size_t)snprintf(outpath, sizeof outpath, "%s/%s", dir, HIPCC_OUT) >= sizeof outpath) {
		r = kj__out_error(out, KJIT_EINTERNAL, "temporary path too long");
		goto out;
	}
	argv[a++] = st->hipcc;
	argv[a++] = "--genco";
	argv[a++] = arch;
	for (size_t i = 0; i < job->n_options; i++) /* definitions: in defs; pre-includes and -x hip: below */
		if (!kj__opt_is_macro(job->options[i]) && !kj__opt_pre_include(job->options[i]) &&
		    strcmp(job->options[i], "-x hip") != 0)
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
	if (as_hip) { /* x.cpp: a HIP source under its C++ name */
		argv[a++] = "-x";
		argv[a++] = "hip";
	}
	argv[a++] = srcpath;
	argv[a] = NULL;
	if ((r = kj__argv_shell_safe("hipcc", argv, err, sizeof err)) < 0) {
		r = kj__out_error(out, r, err);
		goto out;
	}
	if ((r = kj__run_capture(argv, dir, KJ_COMPILE_TIMEOUT_MS, &po)) < 0) {
		r = kj__out_error(out, r, "cannot run hipcc");
		goto out;
	}
	out->log = kj__clean_log(&po, dir);
	if (po.timed_out) {
		r = kj__out_error(out, KJIT_ETIMEDOUT, "hipcc ran past the compile timeout and was killed");
		goto out;
	}
	if (!WIFEXITED(po.status) || WEXITSTATUS(po.status) != 0) {
		char status[64];
		snprintf(status, sizeof status, "hipcc failed (%s %d)", WIFEXITED(po.status) ? "exit status" : "signal",
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

static int hipcc_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	struct hipcc_state *st = state;
	char err[256], dir[PATH_MAX] = "", src[KJ_NAME_MAX + 16], defs[PATH_MAX + 32];
	int as_hip = 0, made = 0;
	size_t n_rules;
	const struct kj__opt_rule *rules = kj__hip_option_rules(&n_rules);
	int r;

	memset(out, 0, sizeof *out);
	if ((r = hipcc_check_target(st, job->target, err, sizeof err)) < 0 ||
	    (r = kj__options_check2("hipcc", rules, n_rules, hipcc_only, KJ_ARRAY_SIZE(hipcc_only), job, err,
				    sizeof err)) < 0 ||
	    (r = kj__includes_check(job, err, sizeof err)) < 0)
		return kj__out_error(out, r, err);
	if (kj__job_dir_open(job, st->tmp_root, "hipcc", dir, sizeof dir, &made) < 0)
		return kj__out_error(out, KJIT_EIO, "cannot make a temporary directory for hipcc");
	source_file(job, src, sizeof src, &as_hip);
	if ((r = write_job(dir, job, src, out)) == 0 &&
	    (r = kj__defs_write(dir, job, defs, sizeof defs, err, sizeof err)) < 0)
		r = kj__out_error(out, r, err);
	if (r == 0 && (r = run_hipcc(st, job, dir, src, defs, as_hip, out)) == 0)
		r = take_object(dir, job->target, out);
	if (made) /* else the worker empties its own */
		kj__rm_job_dir(dir);
	return r;
}

const struct kj__compiler_ops kj__compiler_hipcc = {
	.name = "hipcc",
	.backend = KJIT_BACKEND_HIP,
	.init = hipcc_init,
	.fini = hipcc_fini,
	.identity = hipcc_identity,
	.check_target = hipcc_check_target,
	.compile = hipcc_compile,
};
