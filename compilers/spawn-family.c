/* spawn-family.c: the skeleton of the families that run a full compiler
 * as a child process (hipcc, nvcc), on top of spawn.c's runs.
 *
 * A compile goes the same way for both: the family checks the job's
 * target and options (its own rules), the job's includes are checked, the
 * job gets its private directory (the worker's, at its fixed path, or a
 * fresh one outside a worker), the headers and then the source are
 * written there under the names the user gave them (a source name kjit
 * cannot write becomes the family's fallback), the definitions go to a
 * header (defs.c), and the compiler runs:
 *
 *   COMPILER OUTPUT-FLAG ARCH-OPT=TARGET [job options] [-include DEFS]
 *            [-include PRE]... -I DIR -o DIR/OUT [-x LANG] SOURCE
 *
 * with every argument checked shell-safe, the log captured with the
 * directory's path removed; then the family takes its object out of
 * DIR/OUT and the directory is emptied.  The family's table (struct
 * kj__spawn_family) holds only what differs: names, the output flag and
 * language, which options it keeps off the command line, and how it
 * reads its object.  Also here: the start every such family shares (find
 * the compiler, the temporary root, a probe run of `COMPILER --version`)
 * and its identity.  No state outside the calls.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "buf.h"
#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

int kj__spawn_init(const struct kj__spawn_family *f, size_t size, void **state, char *err, size_t errlen)
{
	struct kj__spawn_state *st = calloc(1, size);
	const char *tmp = getenv("TMPDIR");
	int r;

	if (st == NULL)
		return KJIT_ENOMEM;
	if ((r = f->find(st)) < 0) {
		snprintf(err, errlen, "%s", f->not_found);
		goto out;
	}
	snprintf(st->tmp_root, sizeof st->tmp_root, "%s",
		 tmp && tmp[0] == '/' && strlen(tmp) < PATH_MAX / 2 ? tmp : "/tmp");
	if ((r = f->probe(st, err, errlen)) < 0)
		goto out;
	/* success */
	*state = st;
	st = NULL;
	r = 0;
out:
	free(st);
	return r;
}

void kj__spawn_fini(void *state)
{
	free(state);
}

int kj__spawn_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen)
{
	const struct kj__spawn_state *st = state;

	return kj__identity_put(st->identity, st->runtime, id, idlen, rv, rvlen);
}

int kj__spawn_query(const struct kj__spawn_state *st, const char *family, const char *arg, char **text)
{
	char dir[PATH_MAX];
	const char *argv[] = { st->path, arg, NULL };
	struct kj__proc_out po;
	int r = KJIT_EBACKEND;

	*text = NULL;
	memset(&po, 0, sizeof po);
	if (kj__make_job_dir(st->tmp_root, family, dir, sizeof dir) < 0)
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

/* The file name the source is written under: the user's (kj__path_ok, so
 * with its place in the include tree: "src/x.cu"), unless it is one kjit
 * writes itself, then f's fallback.  *as_lang: `-x LANG` goes before it. */
static void source_file(const struct kj__spawn_family *f, const struct kj__compile_job *job, char *out,
			size_t outlen, int *as_lang)
{
	const char *name = job->source_name;
	int ok = kj__path_ok(name) && strcmp(name, f->out_file) != 0 && strcmp(name, KJ_DEFS_HEADER) != 0;

	*as_lang = ok && f->needs_lang(job, name);
	snprintf(out, outlen, "%s", ok ? name : f->fallback);
}

/* Writes the job's headers, then its source as src, into dir.  0 or a
 * negative code with out->error. */
static int write_job(const struct kj__spawn_family *f, const char *dir, const struct kj__compile_job *job,
		     const char *src, struct kj__compile_out *out)
{
	for (size_t i = 0; i < job->n_headers; i++) {
		if (strcmp(job->headers[i].name, src) == 0 || strcmp(job->headers[i].name, f->out_file) == 0)
			continue; /* the source itself wins */
		if (kj__put_file(dir, job->headers[i].name, job->headers[i].data, job->headers[i].len) < 0)
			return kj__out_error(out, KJIT_EIO, "cannot write a header into the temporary directory");
	}
	if (kj__put_file(dir, src, job->source, job->source_len) < 0)
		return kj__out_error(out, KJIT_EIO, "cannot write the source into the temporary directory");
	return 0;
}

/* 1 if the job option opt goes on the command line as it is: not a
 * definition (in defs), a pre-include (after defs) or the user's own
 * `-x LANG` (kjit gives it where needed), and one f keeps. */
static int passes(const struct kj__spawn_family *f, const char *opt)
{
	return !kj__opt_is_macro(opt) && !kj__opt_pre_include(opt) &&
	       !(strncmp(opt, "-x ", 3) == 0 && strcmp(opt + 3, f->lang) == 0) && (f->passes == NULL || f->passes(opt));
}

/* The command line (the top of this file) into argv (room for 2 *
 * n_options + 14).  0, or KJIT_EINTERNAL when a path is too long. */
struct cmd_bufs {
	char arch[KJ_TARGET_MAX + 32], inc[PATH_MAX + 4], srcpath[PATH_MAX + KJ_NAME_MAX], outpath[PATH_MAX + 32];
};
static int command(const struct kj__spawn_family *f, const struct kj__spawn_state *st,
		   const struct kj__compile_job *job, const char *dir, const char *src, const char *defs, int as_lang,
		   struct cmd_bufs *b, const char **argv)
{
	size_t a = 0;

	if ((size_t)snprintf(b->arch, sizeof b->arch, "%s%s", f->arch_opt, job->target) >= sizeof b->arch ||
	    (size_t)snprintf(b->inc, sizeof b->inc, "-I%s", dir) >= sizeof b->inc ||
	    (size_t)snprintf(b->srcpath, sizeof b->srcpath, "%s%s", src[0] == '-' ? "./" : "", src) >= sizeof b->srcpath ||
	    (size_t)snprintf(b->outpath, sizeof b->outpath, "%s/%s", dir, f->out_file) >= sizeof b->outpath)
		return KJIT_EINTERNAL;
	argv[a++] = st->path;
	argv[a++] = f->output_flag(job);
	argv[a++] = b->arch;
	for (size_t i = 0; i < job->n_options; i++)
		if (passes(f, job->options[i]))
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
	argv[a++] = b->inc;
	argv[a++] = "-o";
	argv[a++] = b->outpath;
	if (as_lang) { /* x.cpp: a HIP or CUDA source under another name */
		argv[a++] = "-x";
		argv[a++] = f->lang;
	}
	argv[a++] = b->srcpath;
	argv[a] = NULL;
	return 0;
}

/* Runs the compiler on dir/src into dir/OUT, with the log (its private
 * paths removed) in out->log.  0, or a negative code with out->error
 * (KJIT_ECOMPILE: the compiler rejected the source). */
static int run(const struct kj__spawn_family *f, const struct kj__spawn_state *st, const struct kj__compile_job *job,
	       const char *dir, const char *src, const char *defs, int as_lang, struct kj__compile_out *out)
{
	char err[256], msg[64];
	struct cmd_bufs b;
	const char **argv = calloc(2 * job->n_options + 14, sizeof *argv);
	struct kj__proc_out po;
	int r = KJIT_ENOMEM;

	memset(&po, 0, sizeof po);
	if (argv == NULL)
		goto out;
	if ((r = command(f, st, job, dir, src, defs, as_lang, &b, argv)) < 0) {
		r = kj__out_error(out, r, "temporary path too long");
		goto out;
	}
	if ((r = kj__argv_shell_safe(f->name, argv, err, sizeof err)) < 0) {
		r = kj__out_error(out, r, err);
		goto out;
	}
	if ((r = kj__run_capture(argv, dir, KJ_COMPILE_TIMEOUT_MS, &po)) < 0) {
		snprintf(msg, sizeof msg, "cannot run %s", f->name);
		r = kj__out_error(out, r, msg);
		goto out;
	}
	out->log = kj__clean_log(&po, dir);
	if (po.timed_out) {
		snprintf(err, sizeof err, "%s ran past the compile timeout and was killed", f->name);
		r = kj__out_error(out, KJIT_ETIMEDOUT, err);
		goto out;
	}
	if (!WIFEXITED(po.status) || WEXITSTATUS(po.status) != 0) {
		snprintf(msg, sizeof msg, "%s failed (%s %d)", f->name, WIFEXITED(po.status) ? "exit status" : "signal",
			 WIFEXITED(po.status) ? WEXITSTATUS(po.status) : WTERMSIG(po.status));
		kj__log_reason(out->log, msg, err, sizeof err);
		r = kj__out_error(out, KJIT_ECOMPILE, err);
		goto out;
	}
	r = 0;
out:
	kj__buf_free(&po.log);
	free(argv);
	return r;
}

int kj__spawn_compile(const struct kj__spawn_family *f, void *state, const struct kj__compile_job *job,
		      struct kj__compile_out *out)
{
	const struct kj__spawn_state *st = state;
	char err[256], dir[PATH_MAX] = "", src[KJ_NAME_MAX + 16], defs[PATH_MAX + 32];
	int r, made = 0, as_lang = 0;

	memset(out, 0, sizeof *out);
	if ((r = f->check(state, job, err, sizeof err)) < 0 || (r = kj__includes_check(job, err, sizeof err)) < 0)
		return kj__out_error(out, r, err);
	if (kj__job_dir_open(job, st->tmp_root, f->name, dir, sizeof dir, &made) < 0) {
		snprintf(err, sizeof err, "cannot make a temporary directory for %s", f->name);
		return kj__out_error(out, KJIT_EIO, err);
	}
	source_file(f, job, src, sizeof src, &as_lang);
	if ((r = write_job(f, dir, job, src, out)) == 0 &&
	    (r = kj__defs_write(dir, job, defs, sizeof defs, err, sizeof err)) < 0)
		r = kj__out_error(out, r, err);
	if (r == 0 && (r = run(f, st, job, dir, src, defs, as_lang, out)) == 0)
		r = f->take(dir, job, out);
	if (made) /* else the worker empties its own */
		kj__rm_job_dir(dir);
	return r;
}
