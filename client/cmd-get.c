/* cmd-get.c: `kjit get`, one GET by source file or bundled kernel name,
 * with its headers read from files (--include-header, or found through -I
 * by libkjit) and the compiler-style options client/ccopts.c takes; writes
 * the object to -o FILE as cp would (common/outfile.h; "-" is standard
 * output), and prints the result (a line, or JSON).  A compile error
 * prints the compiler's log, then the one-line error.  Several --kernel
 * options make one batch (kjit_get_many): one line per kernel as its
 * result arrives, each object written to -o DIR/NAME.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "ccopts.h"
#include "cli-int.h"
#include "kjit.h"
#include "kj_limits.h"
#include "util.h"

/* ---- kjit get ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* 1 when -o names standard output: "-", or a path that reaches the same
 * file as descriptor 1 (/dev/stdout, /proc/self/fd/1, into a pipe or a
 * terminal), whose bytes must then be the object's alone. */
static int names_stdout(const char *out)
{
	struct stat a, b;

	if (out == NULL)
		return 0;
	if (strcmp(out, "-") == 0)
		return 1;
	return stat(out, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* The source name sent for FILE: its base name with every character
 * outside [A-Za-z0-9._+-] made '_' (kjitd's rule for names), malloc'd. */
static char *source_name_of(const char *path)
{
	char *s = kj__strndup(base_name(path), strnlen(base_name(path), KJ_NAME_MAX));
	for (char *p = s; p && *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("._+-", *p)))
			*p = '_';
	if (s && (*s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)) {
		free(s);
		s = kj__strdup("source");
	}
	return s;
}


struct get_args {
	const char *source, *kernel, *target, *out;
	const char *kernels[MAX_REPEAT];
	size_t n_kernels;
	int backend, json, explain, print_headers;
	const char *entries[MAX_REPEAT], *opts[MAX_REPEAT], *headers[MAX_REPEAT];
	size_t n_entries, n_opts, n_headers;
};

static int get_parse(const struct cmd *cmd, int argc, char **argv, const struct kj__ccopts *cc, struct get_args *a)
{
	static const struct option lo[] = {
		{ "source", required_argument, NULL, 's' }, { "kernel", required_argument, NULL, 'k' },
		{ "backend", required_argument, NULL, 'b' }, { "target", required_argument, NULL, 't' },
		{ "entry", required_argument, NULL, 'e' }, { "opt", required_argument, NULL, 'O' },
		{ "include-header", required_argument, NULL, 'I' }, { "json", no_argument, NULL, 'J' },
		{ "explain", no_argument, NULL, 'X' }, { "print-headers", no_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' }, { NULL, 0, NULL, 0 }
	};
	int ch, r = 0;

	while (r == 0 && (ch = getopt_long(argc, argv, ":o:", lo, NULL)) != -1) {
		switch (ch) {
		case 's': a->source = optarg; break;
		case 'k':
			a->kernel = optarg;
			r = kj__cli_push(cmd, a->kernels, &a->n_kernels, optarg, "--kernel");
			break;
		case 'b': r = kj__cli_parse_backend(cmd, optarg, &a->backend); break;
		case 't': a->target = optarg; break;
		case 'e': r = kj__cli_push(cmd, a->entries, &a->n_entries, optarg, "--entry"); break;
		case 'O': r = kj__cli_push(cmd, a->opts, &a->n_opts, optarg, "--opt"); break;
		case 'I': r = kj__cli_push(cmd, a->headers, &a->n_headers, optarg, "--include-header"); break;
		case 'o': a->out = optarg; break;
		case 'J': a->json = 1; break;
		case 'X': a->explain = 1; break;
		case 'P': a->print_headers = 1; break;
		default: return kj__cli_option_error(cmd, ch, argv);
		}
	}
	if (r != 0)
		return r;
	if (optind < argc)
		return kj__cli_usage_error(cmd, "unexpected argument", argv[optind]);
	if ((a->source == NULL) == (a->kernel == NULL))
		return kj__cli_usage_error(cmd, "give exactly one of --source and --kernel", NULL);
	if (a->backend == KJIT_BACKEND_NONE) /* the target's or the suffix's (ccflags.c) */
		a->backend = kj__ccflags_backend(a->source, a->target ? a->target : cc->arch);
	if (a->backend == KJIT_BACKEND_NONE)
		return kj__cli_usage_error(cmd, a->source ? "--backend is required (the file's suffix, .cu, .hip, "
					   ".comp, .glsl or .hlsl, does not say)" : "--backend is required", NULL);
	if (a->n_kernels > 1 && (a->n_entries || a->n_headers))
		return kj__cli_usage_error(cmd, "--entry and --include-header go with one kernel, not a batch", NULL);
	if (a->n_kernels > 1 && names_stdout(a->out))
		return kj__cli_usage_error(cmd, "a batch writes -o DIR/NAME, not stdout", NULL);
	if (a->json && names_stdout(a->out))
		return kj__cli_usage_error(cmd, "-o - and --json both want standard output; give -o a file", NULL);
	return 0;
}

/* Makes glslc's -fentry-point=NAME the request's first entry (shaderc's
 * entry point); a --entry that names another first is a usage error. */
static int entry_point_first(const struct cmd *cmd, struct get_args *a, const char *ep)
{
	if (a->n_entries > 0 && strcmp(a->entries[0], ep) != 0)
		return kj__cli_usage_error(cmd, "-fentry-point= and the first --entry disagree", a->entries[0]);
	if (a->n_entries == 0)
		a->entries[a->n_entries++] = ep;
	return 0;
}

/* The headers of a --source request, found as its compiler would find
 * them: beside the source first, then -I (client/ccopts.c), with ".."
 * giving the source its place in the tree.  req's headers become *found,
 * its -I list is spent and its source name becomes *place.  0, or the exit
 * code of the reported failure. */
static int source_headers(kjit_request *req, const char *path, kjit_header **found, size_t *n_found, char **place)
{
	char why[512] = "";
	int r = kj__headers_for_source(req, path, req->include_dirs, req->n_include_dirs, found, n_found, place,
				       why, sizeof why);

	if (r < 0)
		return kj__cli_report(r, why[0] ? why : NULL);
	req->headers = *found;
	req->n_headers = *n_found;
	req->include_dirs = NULL;
	req->n_include_dirs = 0;
	req->source_name = *place;
	return 0;
}

/* Reads a file given on the command line; on failure prints and returns
 * the exit code. */
static int read_input(const char *path, size_t max, uint8_t **data, size_t *len)
{
	int r = kj__read_file(path, max, data, len);
	if (r == -EFBIG)
		return kj__cli_fail(EX_FAIL, "%s is over the cap of %zu bytes; make it smaller", path, max);
	if (r < 0)
		return kj__cli_fail(EX_FAIL, "cannot read %s: %s; check the path", path, strerror(-r));
	return 0;
}

/* Loads the --include-header files: NAME=FILE, or FILE included by its
 * base name. */
static int load_headers(const struct get_args *a, kjit_header *h, uint8_t **bufs)
{
	for (size_t i = 0; i < a->n_headers; i++) {
		const char *arg = a->headers[i], *eq = strchr(arg, '=');
		const char *file = eq ? eq + 1 : arg;
		size_t len;
		int r = read_input(file, KJ_HEADERS_MAX_TOTAL, &bufs[i], &len);
		if (r != 0)
			return r;
		h[i].name = eq ? kj__strndup(arg, (size_t)(eq - arg)) : kj__strdup(base_name(arg));
		if (h[i].name == NULL)
			return kj__cli_fail(EX_FAIL, "out of memory");
		h[i].data = bufs[i];
		h[i].size = len;
	}
	return 0;
}

/* -include FILE / --pre-include=FILE (issue 30): each file, looked for as
 * gcc does (the working directory, then each -I directory), becomes a
 * header, named as the user wrote it when that is a tree path ("pre.h",
 * "include/pre.h"), else by its base name, and the option
 * "--pre-include=NAME" (opts[i], malloc'd).  A tree path found in neither
 * is the compiler's own (-include cuda_fp16.h): the option alone.  Headers go after a's
 * (a->n_headers grows, so the caller frees them with the rest).  0, or the
 * exit code of the reported failure. */
static int load_pre_includes(const struct kj__ccopts *cc, struct get_args *a, kjit_header *h, uint8_t **bufs,
			     char **opts)
{
	for (size_t i = 0; i < cc->n_pre; i++) {
		const char *f = cc->pre[i], *name = kj__path_ok(f) ? f : base_name(f);
		char *path = access(f, R_OK) == 0 ? kj__strdup(f) : NULL;
		size_t len = 0;
		for (size_t d = 0; path == NULL && f[0] != '/' && d < cc->n_dirs; d++) {
			char *p = kj__asprintf("%s/%s", cc->dirs[d], f);
			if (p && access(p, R_OK) == 0)
				path = p;
			else
				free(p);
		}
		if (path == NULL && kj__path_ok(f)) { /* the compiler's own (-include cuda_fp16.h): its to find */
			if ((opts[i] = kj__asprintf("--pre-include=%s", f)) == NULL)
				return kj__cli_fail(EX_FAIL, "out of memory");
			continue;
		}
		if (path == NULL)
			return kj__cli_fail(EX_FAIL, "-include %s: not found", f);
		if (a->n_headers >= MAX_REPEAT) {
			free(path);
			return kj__cli_fail(EX_FAIL, "more than %d headers", MAX_REPEAT);
		}
		int r = read_input(path, KJ_HEADERS_MAX_TOTAL, &bufs[a->n_headers], &len);
		free(path);
		if (r != 0)
			return r;
		h[a->n_headers] = (kjit_header){ .name = kj__strdup(name), .data = bufs[a->n_headers], .size = len };
		a->n_headers++;
		if (h[a->n_headers - 1].name == NULL || (opts[i] = kj__asprintf("--pre-include=%s", name)) == NULL)
			return kj__cli_fail(EX_FAIL, "out of memory");
	}
	return 0;
}

static int get_print_json(const kjit_result *res)
{
	struct kj__buf b = { 0 };
	int r = kj__buf_printf(&b, "{\"status\":");
	if (r == 0)
		r = kj__json_str(&b, kjit_status_name(res->status));
	if (r == 0)
		r = kj__buf_printf(&b, ",\"key\":");
	if (r == 0)
		r = kj__json_str(&b, res->key);
	if (r == 0)
		r = kj__buf_printf(&b, ",\"target\":");
	if (r == 0)
		r = kj__json_str(&b, res->target ? res->target : "");
	if (r == 0)
		r = kj__buf_printf(&b, ",\"version\":");
	if (r == 0)
		r = kj__json_str(&b, res->runtime_version ? res->runtime_version : "");
	if (r == 0)
		r = kj__buf_printf(&b, ",\"size\":%zu,\"log\":", res->size);
	if (r == 0)
		r = kj__json_str(&b, res->log ? res->log : "");
	if (r == 0 && res->explain) /* --explain on a miss: kjitd's lines */
		r = kj__buf_printf(&b, ",\"explain\":");
	if (r == 0 && res->explain)
		r = kj__json_str(&b, res->explain);
	if (r == 0)
		r = kj__buf_printf(&b, "}\n");
	if (r == 0)
		fwrite(b.p, 1, b.len, stdout);
	kj__buf_free(&b);
	return r == 0 ? EX_OK : kj__cli_fail(EX_FAIL, "out of memory");
}

struct batch {
	const struct get_args *a;
	const struct kj__ccopts *cc;
	int ex;
};

/* One kernel of a batch is ready: its line, its file, or its error. */
static void batch_ready(void *arg, size_t i, int code, const kjit_result *res)
{
	struct batch *b = arg;
	const char *name = b->a->kernels[i];

	if (code < 0) {
		if (code == KJIT_ECOMPILE)
			kj__cli_print_text(stderr, res->log);
		fprintf(stderr, "kjit: %s: %s\n", name, res->error ? res->error : kjit_strerror(code));
		b->ex = EX_FAIL;
		return;
	}
	if (b->a->out) {
		char *path = kj__asprintf("%s/%s", b->a->out, name);
		if (path == NULL) {
			fprintf(stderr, "kjit: %s: out of memory\n", name);
			b->ex = EX_FAIL;
		} else if (kj__cli_write_out(path, res->data, res->size) != EX_OK) { /* as cp would; it says why */
			b->ex = EX_FAIL;
		}
		free(path);
	}
	fprintf(b->a->json ? stderr : stdout, "%s %s %s %s %zu bytes\n", name, kjit_status_name(res->status),
		res->key, res->target ? res->target : "-", res->size);
	for (size_t k = 0; k < res->n_lowered_names; k++) /* --name-expression */
		fprintf(b->a->json ? stderr : stdout, "%s lowered %s %s\n", name, b->cc->exprs[k],
			res->lowered_names[k] ? res->lowered_names[k] : "-");
	if (b->a->json && get_print_json(res) != EX_OK)
		b->ex = EX_FAIL;
}

/* `kjit get --kernel A --kernel B ...`: one kjit_get_many. */
static int get_batch(const struct get_args *a, const struct kj__ccopts *cc, const char **opts, size_t n_opts,
		     kjit_client *c)
{
	struct batch b = { .a = a, .cc = cc, .ex = EX_OK };
	kjit_request *reqs = calloc(a->n_kernels, sizeof *reqs);
	kjit_result *res = calloc(a->n_kernels, sizeof *res);

	if (reqs == NULL || res == NULL) {
		free(reqs);
		free(res);
		return kj__cli_fail(EX_FAIL, "out of memory");
	}
	for (size_t i = 0; i < a->n_kernels; i++)
		reqs[i] = (kjit_request){ .backend = a->backend, .target = a->target, .kernel = a->kernels[i],
					  .options = opts, .n_options = n_opts,
					  .include_dirs = cc->dirs, .n_include_dirs = cc->n_dirs,
					  .compiler = cc->compiler,
					  .name_expressions = cc->exprs, .n_name_expressions = cc->n_exprs };
	int r = kjit_get_many(c, reqs, a->n_kernels, res, NULL, batch_ready, &b);
	if (r == KJIT_EINVAL && res[0].error == NULL)
		b.ex = kj__cli_fail(EX_FAIL, "invalid batch");
	for (size_t i = 0; i < a->n_kernels; i++)
		kjit_result_free(&res[i]);
	free(reqs);
	free(res);
	return b.ex;
}

/* --explain: kjitd's lines, each as "explain: LINE". */
static void print_explain(FILE *f, const kjit_result *res)
{
	const char *p = res->explain;

	if (res->status == KJIT_STATUS_HIT)
		fprintf(f, "explain: a hit: nothing to explain\n");
	else if (p == NULL)
		fprintf(f, "explain: kjitd sent no explanation (an older kjitd)\n");
	while (p && *p) {
		size_t l = strcspn(p, "\n");
		fprintf(f, "explain: %.*s\n", (int)l, p);
		p += l + (p[l] == '\n');
	}
}

/* `kjit get` of one source or kernel: req sent, its object written to -o,
 * its line (and JSON) printed; a compile error prints the log first. */
static int get_one(const struct get_args *a, const struct kj__ccopts *cc, const kjit_request *req, kjit_client *c)
{
	kjit_result res = { 0 };
	int ex = EX_OK;
	int r = kjit_get(c, req, &res);

	if (r == KJIT_ECOMPILE) {
		kj__cli_print_text(stderr, res.log);
		ex = kj__cli_fail(EX_FAIL, "compile failed: %s; fix the source and retry",
			  res.error ? res.error : kjit_strerror(r));
		goto out;
	}
	if (r < 0) {
		ex = kj__cli_report(r, res.error);
		goto out;
	}
	if (a->out && (ex = kj__cli_write_out(a->out, res.data, res.size)) != EX_OK)
		goto out;
	/* With -o - (or /dev/stdout) the object has standard output to itself. */
	int to_stdout = names_stdout(a->out);
	fprintf(a->json || to_stdout ? stderr : stdout, "%s %s %s %zu bytes\n", kjit_status_name(res.status),
		res.key, res.target ? res.target : "-", res.size);
	for (size_t i = 0; i < res.n_lowered_names; i++) /* --name-expression, beside the status line */
		fprintf(a->json || to_stdout ? stderr : stdout, "lowered %s %s\n", cc->exprs[i],
			res.lowered_names[i] ? res.lowered_names[i] : "-");
	if (a->explain && !a->json)
		print_explain(a->json || to_stdout ? stderr : stdout, &res);
	if (a->kernel) /* which variant of the op this is, and why (a failure only loses the line) */
		(void)kj__variant_note(c, a->kernel, a->backend, res.target, stderr);
	if (a->json)
		ex = get_print_json(&res);
out:
	kjit_result_free(&res);
	return ex;
}

int kj__cmd_get(const struct cmd *cmd, int argc, char **argv)
{
	struct get_args a;
	kjit_header h[MAX_REPEAT];
	uint8_t *bufs[MAX_REPEAT] = { NULL };
	uint8_t *src = NULL;
	char *src_name = NULL;
	size_t src_len = 0;
	kjit_client *c = NULL;
	struct kj__ccopts cc; /* -I, -D, -U, -O, -std=, glslc's spellings (client/ccopts.c) */
	const char *all_opts[2 * KJ_CCOPTS_MAX + MAX_REPEAT];
	char *pre_opts[KJ_CCOPTS_MAX] = { NULL }; /* --pre-include=NAME of each -include FILE */
	char ccerr[256] = "", *place = NULL;
	kjit_header *found = NULL;
	size_t n_found = 0;

	memset(&a, 0, sizeof a);
	memset(h, 0, sizeof h);
	int ex = kj__ccopts_take(&cc, &argc, argv, ccerr, sizeof ccerr) < 0 ?
		 kj__cli_usage_error(cmd, ccerr, NULL) : 0;
	if (ex == 0)
		ex = get_parse(cmd, argc, argv, &cc, &a);
	if (ex == 0 && kj__ccopts_finish(&cc, a.backend, &a.target, ccerr, sizeof ccerr) < 0)
		ex = kj__cli_usage_error(cmd, ccerr, NULL);
	if (ex == 0 && cc.entry_point) /* glslc's -fentry-point=: the shader's entry, entries[0] */
		ex = entry_point_first(cmd, &a, cc.entry_point);
	for (size_t i = 0; ex == 0 && i < cc.n_opts + a.n_opts; i++)
		all_opts[i] = i < cc.n_opts ? cc.opts[i] : a.opts[i - cc.n_opts];
	if (ex == 0 && a.source)
		ex = read_input(a.source, KJ_SOURCE_MAX, &src, &src_len);
	if (ex == 0 && a.source && (src_name = source_name_of(a.source)) == NULL)
		ex = kj__cli_fail(EX_FAIL, "out of memory");
	if (ex == 0)
		ex = load_headers(&a, h, bufs);
	if (ex == 0)
		ex = load_pre_includes(&cc, &a, h, bufs, pre_opts);
	for (size_t i = 0; ex == 0 && i < cc.n_pre; i++)
		all_opts[cc.n_opts + a.n_opts + i] = pre_opts[i];
	if (ex == 0)
		ex = kj__cli_open(&c, 0);
	if (ex != 0)
		goto out;
	if (a.n_kernels > 1) {
		ex = get_batch(&a, &cc, all_opts, cc.n_opts + a.n_opts, c);
		goto out;
	}
	kjit_request req = {
		.backend = a.backend, .target = a.target, .kernel = a.kernel,
		.source = src, .source_size = src_len,
		.source_name = src_name,
		.entries = a.entries, .n_entries = a.n_entries,
		.options = all_opts, .n_options = cc.n_opts + a.n_opts + cc.n_pre,
		.headers = h, .n_headers = a.n_headers,
		.include_dirs = cc.dirs, .n_include_dirs = cc.n_dirs, .compiler = cc.compiler,
		.name_expressions = cc.exprs, .n_name_expressions = cc.n_exprs,
		.explain = a.explain,
	};
	if (a.source && (ex = source_headers(&req, a.source, &found, &n_found, &place)) != 0)
		goto out;
	for (size_t i = 0; a.print_headers && i < req.n_headers; i++) /* what the key covers (issue 30) */
		fprintf(stderr, "header: %s\n", req.headers[i].name);
	if (a.print_headers && req.source_name)
		fprintf(stderr, "source: %s\n", req.source_name);
	ex = get_one(&a, &cc, &req, c);
out:
	kj__headers_free(found, n_found);
	free(place);
	kjit_close(c);
	free(src);
	free(src_name);
	for (size_t i = 0; i < a.n_headers; i++) {
		free((char *)h[i].name);
		free(bufs[i]);
	}
	for (size_t i = 0; i < cc.n_pre; i++)
		free(pre_opts[i]);
	kj__ccopts_free(&cc);
	return ex;
}
