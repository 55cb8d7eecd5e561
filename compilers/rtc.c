/* rtc.c: the runtime compilers' skeleton, shared by hiprtc and NVRTC.
 *
 * The two libraries have the same calls with the same shapes (a result is
 * an int, 0 for success; a program an opaque pointer): create a program
 * from a source and named in-memory headers, add name expressions, compile
 * with options, read the log, the object and the lowered names, destroy.
 * So one table of calls (struct kj__rtc_api) holds either's, loaded by the
 * names a family lists (struct kj__rtc_family), and one function runs a
 * compile through them: kj__rtc_run, also the warm-up of a worker's start
 * (kj__rtc_warm).  A family keeps only what differs: its libraries and
 * symbol names, its words in messages, its option rules and target checks,
 * and how it turns a job into a program (hiprtc.c: name lines and
 * -include; nvrtc.c: the toolkit's headers and header aliases).
 *
 * Also here: a job as the runtime compilers take it (struct kj__rtc_args:
 * NUL-terminated source and headers, the options after the target's).
 * No state outside the calls; the libraries stay loaded for the worker's
 * life (each registers atexit handlers).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

int kj__rtc_load(const struct kj__rtc_family *f, void **lib, struct kj__rtc_api *api, char *err, size_t errlen)
{
	const char *missing = NULL;

	*lib = NULL;
	for (size_t i = 0; f->libs[i] != NULL && *lib == NULL; i++)
		*lib = kj__dlopen_compiler(f->libs[i], RTLD_NOW | RTLD_LOCAL);
	if (*lib == NULL) {
		snprintf(err, errlen, "%s", f->not_found);
		return KJIT_EBACKEND;
	}
#define RTC_SYM(field)                                                 \
	do {                                                           \
		*(void **)&api->field = dlsym(*lib, f->sym.field);     \
		if (api->field == NULL && missing == NULL)             \
			missing = f->sym.field;                        \
	} while (0)
	RTC_SYM(version);
	RTC_SYM(errstr);
	RTC_SYM(create);
	RTC_SYM(compile);
	RTC_SYM(log_size);
	RTC_SYM(log);
	RTC_SYM(code_size);
	RTC_SYM(code);
	RTC_SYM(destroy);
#undef RTC_SYM
	/* name expressions came later to both: without them a job naming
	 * one is refused, the rest still compile */
	*(void **)&api->add_name = dlsym(*lib, f->sym.add_name);
	*(void **)&api->lowered = dlsym(*lib, f->sym.lowered);
	if (missing) {
		snprintf(err, errlen, "%s: %s", f->lacks, missing);
		return KJIT_EBACKEND;
	}
	return 0;
}

/* Copies the program's log into out->log (capped), with f's private
 * directory (if it names one) replaced by the user's names.  0 or
 * KJIT_ENOMEM. */
static int take_log(const struct kj__rtc_family *f, const struct kj__rtc_api *api, void *prog, const char *name,
		    struct kj__compile_out *out)
{
	size_t log_len = 0;
	char *log;

	if (api->log_size(prog, &log_len) != 0 || log_len <= 1 || log_len >= KJ_FRAME_MAX)
		return 0;
	if ((log = malloc(log_len + 1)) == NULL)
		return KJIT_ENOMEM;
	if (api->log(prog, log) == 0) {
		log[log_len] = '\0';
		char *clean = f->log_marker ? kj__log_scrub(log, f->log_marker, f->log_blind, name) : NULL;
		out->log = kj__log_dup(clean ? clean : log, strlen(clean ? clean : log));
		free(clean);
	}
	free(log);
	return 0;
}

/* Reads the compiled program's object into out->data, checked to be an
 * ELF of p->machine (when not 0).  0, or a negative code with out->error. */
static int take_object(const struct kj__rtc_family *f, const struct kj__rtc_api *api, void *prog,
		       const struct kj__rtc_prog *p, struct kj__compile_out *out)
{
	size_t len = 0;
	uint8_t *code;

	if (api->code_size(prog, &len) != 0 || len == 0 || len > KJ_OBJECT_MAX)
		return kj__out_error(out, len > KJ_OBJECT_MAX ? KJIT_ETOOBIG : KJIT_EINTERNAL, f->no_object);
	if ((code = malloc(len)) == NULL)
		return KJIT_ENOMEM;
	if (api->code(prog, (char *)code) != 0 || (p->machine && !kj__elf_is(code, len, p->machine, NULL))) {
		free(code);
		return kj__out_error(out, KJIT_EINTERNAL, f->bad_object);
	}
	out->data = code;
	out->len = len;
	return 0;
}

int kj__rtc_run(const struct kj__rtc_family *f, const struct kj__rtc_api *api, const struct kj__rtc_prog *p,
		struct kj__compile_out *out)
{
	void *prog = NULL;
	char msg[256];
	int r;

	int e = api->create(&prog, p->src, p->name, p->n_headers, p->hdrs, p->hdr_names);
	if (e != 0) {
		snprintf(msg, sizeof msg, "%s: %s", f->sym.create, api->errstr(e));
		return kj__out_error(out, KJIT_EINTERNAL, msg);
	}
	for (int i = 0; i < p->n_exprs; i++) {
		if (api->add_name == NULL || api->lowered == NULL || api->add_name(prog, p->exprs[i]) != 0) {
			snprintf(msg, sizeof msg, "this %s cannot take name expressions", f->title);
			r = kj__out_error(out, KJIT_EINVAL, msg);
			goto out;
		}
	}
	int ce = api->compile(prog, p->n_opts, p->opts);
	if ((r = take_log(f, api, prog, p->name, out)) < 0)
		goto out;
	if (ce != 0) {
		kj__log_reason(out->log, api->errstr(ce), msg, sizeof msg);
		r = kj__out_error(out, KJIT_ECOMPILE, msg);
		goto out;
	}
	if ((r = take_object(f, api, prog, p, out)) < 0)
		goto out;
	for (int i = 0; i < p->n_exprs; i++) {
		const char *low = NULL;
		if (api->lowered(prog, p->exprs[i], &low) != 0 || low == NULL) {
			snprintf(msg, sizeof msg, "%s has no lowered name for a --name-expression", f->name);
			r = kj__out_error(out, KJIT_ECOMPILE, msg);
			goto out;
		}
		if ((r = kj__lowered_add(out, p->exprs[i], low)) < 0)
			goto out;
	}
	r = 0;
out:
	if (r < 0) { /* the object only with its lowered names */
		free(out->data);
		out->data = NULL;
		out->len = 0;
	}
	if (prog)
		api->destroy(&prog);
	return r;
}

int kj__rtc_warm(const struct kj__rtc_family *f, const struct kj__rtc_api *api, const char *arch, const char *extra,
		 unsigned machine, char *err, size_t errlen)
{
	struct kj__compile_out o = { 0 };
	const char *opt[2] = { arch, extra };
	const struct kj__rtc_prog p = {
		.name = f->warm_file, .src = "extern \"C\" __global__ void kjit_warmup() {}\n",
		.n_opts = extra != NULL ? 2 : 1, .opts = opt, .machine = machine,
	};
	int r = kj__rtc_run(f, api, &p, &o);

	kj__compile_out_free(&o);
	if (r < 0)
		snprintf(err, errlen, "%s cannot compile a trivial kernel (%s)", f->title, kjit_strerror(r));
	return r;
}

int kj__rtc_args_build(const struct kj__compile_job *job, struct kj__rtc_args *a, struct kj__compile_out *out)
{
	size_t nh = job->n_headers;
	char err[256];
	int r;

	memset(a, 0, sizeof *a);
	a->hdrs = calloc(nh + 2, sizeof *a->hdrs);
	a->names = calloc(nh + 2, sizeof *a->names);
	a->opts = calloc(job->n_options + 1 + KJ_RTC_EXTRA_OPTS, sizeof *a->opts);
	if (a->hdrs == NULL || a->names == NULL || a->opts == NULL)
		return kj__out_error(out, KJIT_ENOMEM, "out of memory");
	if ((r = kj__cstr_dup(job->source, job->source_len, &a->src)) < 0)
		return kj__out_error(out, r, "the source holds a NUL byte");
	for (size_t i = 0; i < nh; i++, a->n_headers++) {
		a->names[i] = job->headers[i].name;
		if ((r = kj__cstr_dup(job->headers[i].data, job->headers[i].len, &a->hdrs[i])) < 0) {
			snprintf(err, sizeof err, "header '%.100s' holds a NUL byte", a->names[i]);
			return kj__out_error(out, r, err);
		}
	}
	/* A source with a place in the include tree ("src/main.hip": its
	 * "../include/x.h" climbs out of src/): the runtime compilers keep the
	 * program itself at their root, so the program is one line including
	 * the source, which is given as a header under its place. */
	if (strchr(job->source_name, '/') != NULL) {
		a->names[nh] = job->source_name;
		a->hdrs[nh] = a->src;
		a->n_headers++;
		if ((a->src = kj__asprintf("#include \"%s\"\n", job->source_name)) == NULL)
			return kj__out_error(out, KJIT_ENOMEM, "out of memory");
	}
	snprintf(a->arch, sizeof a->arch, "--gpu-architecture=%s", job->target);
	a->opts[0] = a->arch;
	for (size_t i = 0; i < job->n_options; i++)
		a->opts[i + 1] = job->options[i];
	a->n_opts = (int)job->n_options + 1;
	return 0;
}

int kj__rtc_args_push(struct kj__rtc_args *a, const char *opt, struct kj__compile_out *out)
{
	if (a->n_extra >= KJ_RTC_EXTRA_OPTS)
		return kj__out_error(out, KJIT_EINTERNAL, "too many compiler-added options");
	a->opts[a->n_opts++] = opt;
	a->n_extra++;
	return 0;
}

void kj__rtc_args_free(struct kj__rtc_args *a)
{
	for (size_t i = 0; a->hdrs && a->hdrs[i]; i++)
		free(a->hdrs[i]);
	free(a->hdrs);
	free(a->names);
	free(a->opts);
	free(a->src);
	memset(a, 0, sizeof *a);
}
