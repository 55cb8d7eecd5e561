/* cli.c: the kjit command, a thin shell over libkjit (kjit.h).  Its command
 * line, output and exit codes are the design's contract (docs/cli.md):
 *
 *   0 success, 1 the request failed, 2 usage error, 3 daemon unreachable.
 *
 * Every failure prints exactly one line "kjit: <what happened>; <what to
 * do>" on stderr (a compile error prints the compiler's log before it).
 * Each subcommand is one function taking (argc, argv) with argv[0] the
 * subcommand's name, parsed with getopt_long; the administrative ones are
 * one ADMIN request each, whose wire form docs/cli.md lists.  `kjit warm`
 * runs its GETs on -j threads, one kjit_client each.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccopts.h"
#include "detect.h"
#include "kjit.h"
#include "kj_limits.h"
#include "proto.h"
#include "util.h"

enum { EX_OK = 0, EX_FAIL = 1, EX_USAGE = 2, EX_DOWN = 3 };

/* Repeated options a command accepts at most (each a KJ_*_MAX_COUNT). */
#define MAX_REPEAT 512
/* Width of the progress bar of `kjit warm` on a terminal. */
#define BAR_WIDTH 24

struct cmd {
	const char *name;
	int (*fn)(const struct cmd *cmd, int argc, char **argv);
	const char *usage;
};

/* ---- output helpers ---- */

static int fail(int ex, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int ex, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("kjit: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return ex;
}

static int usage_error(const struct cmd *cmd, const char *what, const char *arg)
{
	return fail(EX_USAGE, "%s%s%s; usage: kjit %s", what, arg ? " " : "", arg ? arg : "",
		    cmd->usage);
}

/* Reports a getopt error (ch is '?' or ':'). */
static int option_error(const struct cmd *cmd, int ch, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : NULL;
	char shortopt[3] = { '-', (char)optopt, '\0' };
	char longopt[64];

	if (opt && strncmp(opt, "--", 2) == 0) {
		snprintf(longopt, sizeof longopt, "%.*s", (int)strcspn(opt, "="), opt);
		opt = longopt;
	} else if (optopt != 0) {
		opt = shortopt;
	}
	return usage_error(cmd, ch == ':' ? "missing argument to" : "unknown option", opt);
}

static int exit_for(int code)
{
	return code == KJIT_ECONNECT || code == KJIT_ETIMEDOUT ? EX_DOWN : EX_FAIL;
}

/* What to do about code, for messages that do not say already. */
static const char *hint(int code)
{
	switch (code) {
	case KJIT_ENOTARGET: return "pass --target or set the backend's variable (see `kjit targets`)";
	case KJIT_ETARGET: return "pass a supported --target (see `kjit targets`)";
	case KJIT_EBACKEND: return "install the backend's compiler or use another --backend";
	case KJIT_ENOKERNEL: return "check the name against the bundled kernels (kernels_src/)";
	case KJIT_EWORKER: return "retry; if it happens again, see kjitd's log";
	case KJIT_ETIMEDOUT: return "retry, or check that kjitd is not overloaded";
	case KJIT_ETOOBIG: return "make the input smaller";
	case KJIT_EINCLUDE: return "pass its directory with -I DIR or the header with --include-header";
	case KJIT_ENOENT: return "list the entries with `kjit ls`";
	case KJIT_ECORRUPT: return "run `kjit verify`";
	case KJIT_EBUSY: return "stop the other kjitd or use another cache directory";
	case KJIT_EDENIED: return "ask the administrator for access to kjitd's socket";
	case KJIT_ESHUTDOWN: return "retry in a moment";
	case KJIT_EPROTO: return "restart kjitd from the same kjit release";
	case KJIT_EINVAL: return "check the arguments";
	default: return "see kjitd's log";
	}
}

/* Prints a libkjit failure as one line and returns the exit code. */
static int report(int code, const char *msg)
{
	if (msg == NULL || *msg == '\0')
		msg = kjit_strerror(code);
	if (strchr(msg, ';') != NULL)
		return fail(exit_for(code), "%s", msg);
	return fail(exit_for(code), "%s; %s", msg, hint(code));
}

static int open_client(kjit_client **c, int no_autostart)
{
	kjit_open_options o = { .no_autostart = no_autostart };
	int r = kjit_open(c, &o);
	return r < 0 ? report(r, kjit_last_error(NULL)) : 0;
}

static void print_text(FILE *f, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0)
		return;
	fputs(s, f);
	if (s[n - 1] != '\n')
		fputc('\n', f);
}

/* Writes p to path whole or not at all: temporary file beside it, then
 * rename.  0 or -errno. */
static int write_atomic(const char *path, const void *p, size_t n)
{
	char *tmp = kj__asprintf("%s.tmp.XXXXXX", path);
	int r, fd;

	if (tmp == NULL)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		return r;
	}
	mode_t mask = umask(0);
	umask(mask);
	r = kj__write_all(fd, p, n);
	if (r == 0 && fchmod(fd, 0666 & ~mask) < 0)
		r = -errno;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
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

/* An absolute form of path (the daemon has another working directory). */
static char *absolute(const char *path)
{
	char cwd[4096];

	if (path[0] == '/')
		return kj__strdup(path);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	return kj__asprintf("%s/%s", cwd, path);
}

static int parse_backend(const struct cmd *cmd, const char *s, int *out)
{
	*out = kjit_backend_from_name(s);
	if (*out == KJIT_BACKEND_NONE)
		return usage_error(cmd, "unknown backend (use hip, cuda or vulkan):", s);
	return 0;
}

/* ---- kjit get ---- */

struct get_args {
	const char *source, *kernel, *target, *out;
	int backend, json;
	const char *entries[MAX_REPEAT], *opts[MAX_REPEAT], *headers[MAX_REPEAT];
	size_t n_entries, n_opts, n_headers;
};

static int push(const struct cmd *cmd, const char **v, size_t *n, const char *s, const char *opt)
{
	if (*n >= MAX_REPEAT)
		return usage_error(cmd, "too many", opt);
	v[(*n)++] = s;
	return 0;
}

static int get_parse(const struct cmd *cmd, int argc, char **argv, struct get_args *a)
{
	static const struct option lo[] = {
		{ "source", required_argument, NULL, 's' }, { "kernel", required_argument, NULL, 'k' },
		{ "backend", required_argument, NULL, 'b' }, { "target", required_argument, NULL, 't' },
		{ "entry", required_argument, NULL, 'e' }, { "opt", required_argument, NULL, 'O' },
		{ "include-header", required_argument, NULL, 'I' }, { "json", no_argument, NULL, 'J' },
		{ "output", required_argument, NULL, 'o' }, { NULL, 0, NULL, 0 }
	};
	int ch, r = 0;

	while (r == 0 && (ch = getopt_long(argc, argv, ":o:", lo, NULL)) != -1) {
		switch (ch) {
		case 's': a->source = optarg; break;
		case 'k': a->kernel = optarg; break;
		case 'b': r = parse_backend(cmd, optarg, &a->backend); break;
		case 't': a->target = optarg; break;
		case 'e': r = push(cmd, a->entries, &a->n_entries, optarg, "--entry"); break;
		case 'O': r = push(cmd, a->opts, &a->n_opts, optarg, "--opt"); break;
		case 'I': r = push(cmd, a->headers, &a->n_headers, optarg, "--include-header"); break;
		case 'o': a->out = optarg; break;
		case 'J': a->json = 1; break;
		default: return option_error(cmd, ch, argv);
		}
	}
	if (r != 0)
		return r;
	if (optind < argc)
		return usage_error(cmd, "unexpected argument", argv[optind]);
	if ((a->source == NULL) == (a->kernel == NULL))
		return usage_error(cmd, "give exactly one of --source and --kernel", NULL);
	if (a->backend == KJIT_BACKEND_NONE)
		return usage_error(cmd, "--backend is required", NULL);
	return 0;
}

/* Reads a file given on the command line; on failure prints and returns
 * the exit code. */
static int read_input(const char *path, size_t max, uint8_t **data, size_t *len)
{
	int r = kj__read_file(path, max, data, len);
	if (r == -EFBIG)
		return fail(EX_FAIL, "%s is over the cap of %zu bytes; make it smaller", path, max);
	if (r < 0)
		return fail(EX_FAIL, "cannot read %s: %s; check the path", path, strerror(-r));
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
			return fail(EX_FAIL, "out of memory");
		h[i].data = bufs[i];
		h[i].size = len;
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
	if (r == 0)
		r = kj__buf_printf(&b, "}\n");
	if (r == 0)
		fwrite(b.p, 1, b.len, stdout);
	kj__buf_free(&b);
	return r == 0 ? EX_OK : fail(EX_FAIL, "out of memory");
}

static int cmd_get(const struct cmd *cmd, int argc, char **argv)
{
	struct get_args a;
	kjit_header h[MAX_REPEAT];
	uint8_t *bufs[MAX_REPEAT] = { NULL };
	uint8_t *src = NULL;
	char *src_name = NULL;
	size_t src_len = 0;
	kjit_result res = { 0 };
	kjit_client *c = NULL;
	struct kj__ccopts cc; /* -I, -D, -U, -O, -std=, glslc's spellings (client/ccopts.c) */
	const char *all_opts[KJ_CCOPTS_MAX + MAX_REPEAT];
	char ccerr[256] = "";

	memset(&a, 0, sizeof a);
	memset(h, 0, sizeof h);
	int ex = kj__ccopts_take(&cc, &argc, argv, ccerr, sizeof ccerr) < 0 ? usage_error(cmd, ccerr, NULL) : 0;
	if (ex == 0)
		ex = get_parse(cmd, argc, argv, &a);
	if (ex == 0 && kj__ccopts_finish(&cc, a.backend, &a.target, ccerr, sizeof ccerr) < 0)
		ex = usage_error(cmd, ccerr, NULL);
	for (size_t i = 0; ex == 0 && i < cc.n_opts + a.n_opts; i++)
		all_opts[i] = i < cc.n_opts ? cc.opts[i] : a.opts[i - cc.n_opts];
	if (ex == 0 && a.source)
		ex = read_input(a.source, KJ_SOURCE_MAX, &src, &src_len);
	if (ex == 0 && a.source && (src_name = source_name_of(a.source)) == NULL)
		ex = fail(EX_FAIL, "out of memory");
	if (ex == 0)
		ex = load_headers(&a, h, bufs);
	if (ex == 0)
		ex = open_client(&c, 0);
	if (ex != 0)
		goto out;
	kjit_request req = {
		.backend = a.backend, .target = a.target, .kernel = a.kernel,
		.source = src, .source_size = src_len,
		.source_name = src_name,
		.entries = a.entries, .n_entries = a.n_entries,
		.options = all_opts, .n_options = cc.n_opts + a.n_opts,
		.headers = h, .n_headers = a.n_headers,
		.include_dirs = cc.dirs, .n_include_dirs = cc.n_dirs, .compiler = cc.compiler,
		.name_expressions = cc.exprs, .n_name_expressions = cc.n_exprs,
	};
	int r = kjit_get(c, &req, &res);
	if (r == KJIT_ECOMPILE) {
		print_text(stderr, res.log);
		ex = fail(EX_FAIL, "compile failed: %s; fix the source and retry",
			  res.error ? res.error : kjit_strerror(r));
		goto out;
	}
	if (r < 0) {
		ex = report(r, res.error);
		goto out;
	}
	if (a.out && (r = write_atomic(a.out, res.data, res.size)) < 0) {
		ex = fail(EX_FAIL, "cannot write %s: %s; check the path and free space", a.out,
			  strerror(-r));
		goto out;
	}
	fprintf(a.json ? stderr : stdout, "%s %s %s %zu bytes\n", kjit_status_name(res.status),
		res.key, res.target ? res.target : "-", res.size);
	for (size_t i = 0; i < res.n_lowered_names; i++) /* --name-expression */
		fprintf(a.json ? stderr : stdout, "lowered %s %s\n", cc.exprs[i],
			res.lowered_names[i] ? res.lowered_names[i] : "-");
	if (a.json)
		ex = get_print_json(&res);
out:
	kjit_result_free(&res);
	kjit_close(c);
	free(src);
	free(src_name);
	for (size_t i = 0; i < a.n_headers; i++) {
		free((char *)h[i].name);
		free(bufs[i]);
	}
	kj__ccopts_free(&cc);
	return ex;
}

/* ---- administrative commands ---- */

/* One ADMIN request; prints TEXT (or JSON with json) and maps the answer to
 * an exit code.  A failed command's report is printed before its error. */
static int admin_run(const char *cmdname, const char *arg, int json, int no_autostart)
{
	kjit_client *c = NULL;
	char *text = NULL, *js = NULL;
	int ex = open_client(&c, no_autostart);

	if (ex != 0)
		return ex;
	int r = kjit_admin(c, cmdname, arg, &text, &js);
	if (json && js)
		print_text(stdout, js);
	else if (!json || r == 0)
		print_text(stdout, text);
	ex = r < 0 ? report(r, kjit_last_error(c)) : EX_OK;
	free(text);
	free(js);
	kjit_close(c);
	return ex;
}

/* Parses [--json] [--target T]... [-o FILE] plus positionals for the
 * simple administrative commands.  want_pos: how many positionals. */
struct admin_args {
	int json;
	const char *targets[MAX_REPEAT];
	size_t n_targets;
	const char *out, *max_size;
	const char *pos;
	int zero;
	const char *prometheus;
};

enum { A_TARGET = 1, A_MULTI_TARGET = 2, A_OUT = 4, A_MAXSIZE = 8, A_STATS = 16 };

static int admin_parse(const struct cmd *cmd, int argc, char **argv, unsigned allow, int want_pos,
		       struct admin_args *a)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'J' }, { "target", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' }, { "max-size", required_argument, NULL, 'm' },
		{ "zero", no_argument, NULL, 'z' }, { "prometheus", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 }
	};
	int ch, r = 0;

	memset(a, 0, sizeof *a);
	while (r == 0 && (ch = getopt_long(argc, argv, ":o:", lo, NULL)) != -1) {
		switch (ch) {
		case 'J': a->json = 1; break;
		case 't':
			if (!(allow & (A_TARGET | A_MULTI_TARGET)))
				return usage_error(cmd, "unknown option", "--target");
			if (!(allow & A_MULTI_TARGET) && a->n_targets)
				return usage_error(cmd, "--target given twice", NULL);
			r = push(cmd, a->targets, &a->n_targets, optarg, "--target");
			break;
		case 'o':
			if (!(allow & A_OUT))
				return usage_error(cmd, "unknown option", "-o");
			a->out = optarg;
			break;
		case 'm':
			if (!(allow & A_MAXSIZE))
				return usage_error(cmd, "unknown option", "--max-size");
			a->max_size = optarg;
			break;
		case 'z': case 'p':
			if (!(allow & A_STATS))
				return usage_error(cmd, "unknown option", ch == 'z' ? "--zero" : "--prometheus");
			if (ch == 'z')
				a->zero = 1;
			else
				a->prometheus = optarg;
			break;
		default: return option_error(cmd, ch, argv);
		}
	}
	if (r != 0)
		return r;
	if (argc - optind > want_pos)
		return usage_error(cmd, "unexpected argument", argv[optind + want_pos]);
	if (argc - optind < want_pos)
		return usage_error(cmd, "an argument is missing", NULL);
	if (want_pos)
		a->pos = argv[optind];
	return 0;
}

static int cmd_simple_admin(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	unsigned allow = strcmp(cmd->name, "ls") == 0 || strcmp(cmd->name, "clear") == 0 ? A_TARGET : 0;
	int want_pos = strcmp(cmd->name, "show") == 0;
	int ex = admin_parse(cmd, argc, argv, allow, want_pos, &a);

	if (ex != 0)
		return ex;
	const char *arg = want_pos ? a.pos : a.n_targets ? a.targets[0] : NULL;
	return admin_run(cmd->name, arg, a.json, 0);
}

static int cmd_gc(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	char arg[32];
	uint64_t size = 0;
	int ex = admin_parse(cmd, argc, argv, A_MAXSIZE, 0, &a);

	if (ex != 0)
		return ex;
	if (a.max_size && kj__parse_size(a.max_size, &size) < 0)
		return usage_error(cmd, "bad --max-size (use e.g. 5G, 512M):", a.max_size);
	snprintf(arg, sizeof arg, "%llu", (unsigned long long)size);
	return admin_run("gc", a.max_size ? arg : NULL, a.json, 0);
}

static int cmd_stats(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	kjit_client *c = NULL;
	char *text = NULL;
	int ex = admin_parse(cmd, argc, argv, A_STATS, 0, &a);

	if (ex != 0)
		return ex;
	if (a.prometheus == NULL)
		return admin_run("stats", a.zero ? "zero" : NULL, a.json, 0);
	/* node_exporter's textfile collector reads whole files only. */
	ex = open_client(&c, 0);
	if (ex != 0)
		return ex;
	int r = kjit_admin(c, "stats", "prometheus", &text, NULL);
	if (r < 0)
		ex = report(r, kjit_last_error(c));
	else if ((r = write_atomic(a.prometheus, text ? text : "", text ? strlen(text) : 0)) < 0)
		ex = fail(EX_FAIL, "cannot write %s: %s; check the path", a.prometheus, strerror(-r));
	else if (a.zero && (r = kjit_admin(c, "stats", "zero", NULL, NULL)) < 0)
		ex = report(r, kjit_last_error(c));
	free(text);
	kjit_close(c);
	return ex;
}

static int cmd_verify(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);
	return ex != 0 ? ex : admin_run("verify", NULL, a.json, 0);
}

static int cmd_export(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	struct kj__buf b = { 0 };
	int ex = admin_parse(cmd, argc, argv, A_OUT | A_MULTI_TARGET, 0, &a);

	if (ex != 0)
		return ex;
	if (a.out == NULL)
		return usage_error(cmd, "-o FILE is required", NULL);
	if (strchr(a.out, ',') != NULL)
		return usage_error(cmd, "the export file name must not contain ','", NULL);
	char *path = absolute(a.out);
	if (path == NULL)
		return fail(EX_FAIL, "cannot make %s absolute: %s; give an absolute path", a.out,
			    strerror(errno));
	int r = kj__buf_printf(&b, "%s", path);
	for (size_t i = 0; r == 0 && i < a.n_targets; i++)
		r = kj__buf_printf(&b, ",%s", a.targets[i]);
	if (r == 0)
		r = kj__buf_append(&b, "", 1);
	ex = r < 0 ? fail(EX_FAIL, "out of memory") : admin_run("export", (char *)b.p, a.json, 0);
	kj__buf_free(&b);
	free(path);
	return ex;
}

static int cmd_import(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	int ex = admin_parse(cmd, argc, argv, 0, 1, &a);

	if (ex != 0)
		return ex;
	if (access(a.pos, R_OK) < 0)
		return fail(EX_FAIL, "cannot read %s: %s; check the path", a.pos, strerror(errno));
	char *path = absolute(a.pos);
	if (path == NULL)
		return fail(EX_FAIL, "cannot make %s absolute: %s; give an absolute path", a.pos,
			    strerror(errno));
	ex = admin_run("import", path, a.json, 0);
	free(path);
	return ex;
}

/* ---- kjit targets: the daemon's view plus this process's environment ---- */

static const int all_backends[] = { KJIT_BACKEND_HIP, KJIT_BACKEND_CUDA, KJIT_BACKEND_VULKAN };

static int env_json(struct kj__buf *b)
{
	int r = kj__buf_printf(b, "{");
	for (size_t i = 0; r == 0 && i < KJ_ARRAY_SIZE(all_backends); i++) {
		char t[KJ_TARGET_MAX] = "", v[KJ_VERSION_STR_MAX] = "", err[256] = "";
		const char *tf = NULL, *vf = NULL;
		int e = kj__resolve_env(all_backends[i], NULL, t, &tf, v, &vf, err, sizeof err);
		r = kj__buf_printf(b, "%s\"%s\":{\"target\":", i ? "," : "",
				   kjit_backend_name(all_backends[i]));
		if (r == 0)
			r = kj__json_str(b, e < 0 ? "" : t);
		if (r == 0 && e == 0 && tf && (r = kj__buf_printf(b, ",\"target_from\":")) == 0)
			r = kj__json_str(b, tf);
		if (r == 0)
			r = kj__buf_printf(b, ",\"version\":");
		if (r == 0)
			r = kj__json_str(b, e < 0 ? "" : v);
		if (r == 0 && e == 0 && vf && (r = kj__buf_printf(b, ",\"version_from\":")) == 0)
			r = kj__json_str(b, vf);
		if (r == 0 && e < 0 && (r = kj__buf_printf(b, ",\"error\":")) == 0)
			r = kj__json_str(b, err);
		if (r == 0)
			r = kj__buf_printf(b, "}");
	}
	return r ? r : kj__buf_printf(b, "}");
}

static void env_text(void)
{
	printf("this process's environment (it decides before the daemon):\n");
	for (size_t i = 0; i < KJ_ARRAY_SIZE(all_backends); i++) {
		char t[KJ_TARGET_MAX] = "", v[KJ_VERSION_STR_MAX] = "", err[256] = "";
		const char *tf = NULL, *vf = NULL, *name = kjit_backend_name(all_backends[i]);
		int e = kj__resolve_env(all_backends[i], NULL, t, &tf, v, &vf, err, sizeof err);
		if (e < 0)
			printf("  %s: error: %s\n", name, err);
		else if (t[0] == '\0')
			printf("  %s: no env target (the daemon decides; set %s to choose)\n", name,
			       kj__target_env_name(all_backends[i]));
		else
			printf("  %s: env target %s from %s\n", name, t, tf ? tf : "the environment");
		if (e == 0 && v[0])
			printf("  %s: env version %s from %s\n", name, v, vf ? vf : "the environment");
	}
}

/* Prints daemon (one JSON object) with "client":client added to it. */
static void print_merged_json(const char *daemon, const struct kj__buf *client)
{
	const char *p = daemon ? daemon : "{}";
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	if (*p != '{') {
		printf("{\"client\":%.*s}\n", (int)client->len, (const char *)client->p);
		return;
	}
	const char *q = p + 1;
	while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')
		q++;
	printf("{\"client\":%.*s%s%s", (int)client->len, (const char *)client->p,
	       *q == '}' ? "" : ",", q);
	if (q[0] == '\0' || q[strlen(q) - 1] != '\n')
		putchar('\n');
}

static int cmd_targets(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	struct kj__buf cj = { 0 };
	kjit_client *c = NULL;
	char *text = NULL, *js = NULL;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);

	if (ex != 0)
		return ex;
	if (a.json && env_json(&cj) < 0)
		return fail(EX_FAIL, "out of memory");
	if (!a.json)
		env_text();
	fflush(stdout);
	ex = open_client(&c, 0);
	if (ex == 0) {
		int r = kjit_admin(c, "targets", NULL, &text, &js);
		if (r < 0)
			ex = report(r, kjit_last_error(c));
		else if (a.json)
			print_merged_json(js, &cj);
		else {
			printf("kjitd:\n");
			print_text(stdout, text);
		}
	}
	free(text);
	free(js);
	kj__buf_free(&cj);
	kjit_close(c);
	return ex;
}

/* ---- kjit ping, kjit stop ---- */

static int cmd_ping(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	kjit_client *c = NULL;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);

	if (ex == 0)
		ex = open_client(&c, 0);
	if (ex != 0)
		return ex;
	uint64_t t0 = kj__now_us();
	int r = kjit_ping(c);
	uint64_t us = kj__now_us() - t0;
	if (r < 0)
		ex = report(r, kjit_last_error(c));
	else if (a.json)
		printf("{\"ok\":true,\"us\":%llu}\n", (unsigned long long)us);
	else
		printf("kjitd answered in %.3f ms\n", (double)us / 1000.0);
	kjit_close(c);
	return ex;
}

static int cmd_stop(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	kjit_client *c = NULL;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);

	if (ex == 0)
		ex = open_client(&c, 1); /* never start a daemon just to stop it */
	if (ex != 0)
		return ex;
	int r = kjit_stop(c);
	if (r < 0)
		ex = report(r, kjit_last_error(c));
	else
		printf(a.json ? "{\"stopping\":true}\n" : "kjitd is stopping\n");
	kjit_close(c);
	return ex;
}

/* ---- kjit warm ---- */

enum { J_PENDING, J_COMPILED, J_CACHED, J_FAILED, J_SKIPPED };

struct warm_group {
	int backend;
	const char *target; /* NULL: resolved (env, then daemon) */
	int implicit;       /* backend not asked for: no target or compiler means skip */
	char *skip_reason;  /* set when skipped */
};

struct warm_job {
	struct warm_group *g;
	char *kernel;
	int state;
	char *error;
};

struct warm {
	pthread_mutex_t mu;
	struct warm_job *jobs;
	size_t n, next, done, n_compiled, n_cached, n_failed, n_skipped;
	struct warm_group groups[3 * MAX_REPEAT];
	size_t n_groups;
	int tty, json;
	uint64_t t0;
	char *open_err;
};

static const char *target_label(const struct warm_group *g)
{
	return g->target ? g->target : "(resolved)";
}

/* Redraws the progress bar (terminal) or prints the job's line.  Called
 * with w->mu held. */
static void warm_progress(struct warm *w, const struct warm_job *j)
{
	if (w->tty) {
		size_t fill = w->n ? w->done * BAR_WIDTH / w->n : BAR_WIDTH;
		char bar[BAR_WIDTH + 1];
		double el = (double)(kj__now_us() - w->t0) / 1e6;
		double eta = w->done ? el / (double)w->done * (double)(w->n - w->done) : 0;
		for (size_t i = 0; i < BAR_WIDTH; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[BAR_WIDTH] = '\0';
		fprintf(stderr, "\r[%s] %zu/%zu %-16.16s %s %zu failed ETA %d:%02d\033[K", bar, w->done,
			w->n, j->kernel, kjit_backend_name(j->g->backend), w->n_failed,
			(int)eta / 60, (int)eta % 60);
		fflush(stderr);
		return;
	}
	if (w->json)
		return;
	static const char *const words[] = { "pending", "compiled", "cached", "FAILED", "skipped" };
	printf("[%zu/%zu] %s %s %s %s%s%s\n", w->done, w->n, words[j->state], j->kernel,
	       kjit_backend_name(j->g->backend), target_label(j->g), j->error ? ": " : "",
	       j->error ? j->error : "");
	fflush(stdout);
}

/* Takes the next job to run, skipping those of skipped groups.  NULL when
 * none is left.  With w->mu held. */
static struct warm_job *warm_take(struct warm *w)
{
	while (w->next < w->n) {
		struct warm_job *j = &w->jobs[w->next++];
		if (j->g->skip_reason == NULL)
			return j;
		j->state = J_SKIPPED;
		w->done++;
		w->n_skipped++;
	}
	return NULL;
}

static void warm_record(struct warm *w, struct warm_job *j, int r, const kjit_result *res)
{
	if (r == 0) {
		j->state = res->status == KJIT_STATUS_HIT ? J_CACHED : J_COMPILED;
		if (j->state == J_CACHED)
			w->n_cached++;
		else
			w->n_compiled++;
	} else if (j->g->implicit && (r == KJIT_ENOTARGET || r == KJIT_EBACKEND)) {
		j->state = J_SKIPPED;
		w->n_skipped++;
		if (j->g->skip_reason == NULL)
			j->g->skip_reason = kj__strdup(res->error ? res->error : kjit_strerror(r));
	} else {
		j->state = J_FAILED;
		w->n_failed++;
		j->error = kj__strdup(res->error ? res->error : kjit_strerror(r));
	}
	w->done++;
	warm_progress(w, j);
}

static void *warm_worker(void *arg)
{
	struct warm *w = arg;
	kjit_client *c = NULL;
	kjit_open_options o = { .no_autostart = 1 }; /* main() made sure it is up */

	int r = kjit_open(&c, &o);
	if (r < 0) {
		pthread_mutex_lock(&w->mu);
		if (w->open_err == NULL)
			w->open_err = kj__strdup(kjit_last_error(NULL));
		pthread_mutex_unlock(&w->mu);
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&w->mu);
		struct warm_job *j = warm_take(w);
		pthread_mutex_unlock(&w->mu);
		if (j == NULL)
			break;
		kjit_request req = { .backend = j->g->backend, .target = j->g->target, .kernel = j->kernel };
		kjit_result res;
		r = kjit_get(c, &req, &res);
		pthread_mutex_lock(&w->mu);
		warm_record(w, j, r, &res);
		pthread_mutex_unlock(&w->mu);
		kjit_result_free(&res);
	}
	kjit_close(c);
	return NULL;
}

static int backend_of_target(const char *t)
{
	if (strncmp(t, "gfx", 3) == 0)
		return KJIT_BACKEND_HIP;
	if (strncmp(t, "sm_", 3) == 0 || strncmp(t, "compute_", 8) == 0)
		return KJIT_BACKEND_CUDA;
	if (strncmp(t, "vulkan", 6) == 0)
		return KJIT_BACKEND_VULKAN;
	return KJIT_BACKEND_NONE;
}

struct warm_args {
	int backends[3];
	size_t n_backends;
	const char *targets[MAX_REPEAT], *kernels[MAX_REPEAT];
	size_t n_targets, n_kernels;
	long jobs;
	int replay, json;
};

static int warm_parse(const struct cmd *cmd, int argc, char **argv, struct warm_args *a)
{
	static const struct option lo[] = {
		{ "backend", required_argument, NULL, 'b' }, { "target", required_argument, NULL, 't' },
		{ "kernel", required_argument, NULL, 'k' }, { "jobs", required_argument, NULL, 'j' },
		{ "replay", no_argument, NULL, 'R' }, { "json", no_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 }
	};
	int ch, b, r = 0;
	char *end;

	while (r == 0 && (ch = getopt_long(argc, argv, ":j:", lo, NULL)) != -1) {
		switch (ch) {
		case 'b':
			r = parse_backend(cmd, optarg, &b);
			for (size_t i = 0; r == 0 && i < a->n_backends; i++)
				if (a->backends[i] == b)
					b = KJIT_BACKEND_NONE;
			if (r == 0 && b != KJIT_BACKEND_NONE)
				a->backends[a->n_backends++] = b;
			break;
		case 't': r = push(cmd, a->targets, &a->n_targets, optarg, "--target"); break;
		case 'k': r = push(cmd, a->kernels, &a->n_kernels, optarg, "--kernel"); break;
		case 'j':
			errno = 0;
			a->jobs = strtol(optarg, &end, 10);
			if (errno || *end || a->jobs < 1 || a->jobs > MAX_REPEAT)
				return usage_error(cmd, "bad -j (a number from 1 to 512):", optarg);
			break;
		case 'R': a->replay = 1; break;
		case 'J': a->json = 1; break;
		default: return option_error(cmd, ch, argv);
		}
	}
	if (r != 0)
		return r;
	if (optind < argc)
		return usage_error(cmd, "unexpected argument", argv[optind]);
	return 0;
}

/* Splits the requested backends and targets into groups.  Returns 0 or the
 * usage exit code. */
static int warm_groups(const struct cmd *cmd, const struct warm_args *a, struct warm *w)
{
	int explicit_b = a->n_backends > 0;
	int backends[3];
	size_t nb = 0;

	for (size_t i = 0; i < a->n_backends; i++)
		backends[nb++] = a->backends[i];
	for (size_t i = 0; !explicit_b && i < a->n_targets; i++) {
		int b = backend_of_target(a->targets[i]);
		if (b == KJIT_BACKEND_NONE)
			return usage_error(cmd, "cannot tell the backend of --target", a->targets[i]);
		size_t k = 0;
		while (k < nb && backends[k] != b)
			k++;
		if (k == nb)
			backends[nb++] = b;
	}
	for (size_t i = 0; nb == 0 && i < KJ_ARRAY_SIZE(all_backends); i++)
		backends[i] = all_backends[i];
	if (nb == 0)
		nb = KJ_ARRAY_SIZE(all_backends);
	for (size_t i = 0; i < a->n_targets; i++) {
		int b = backend_of_target(a->targets[i]);
		if (b == KJIT_BACKEND_NONE && nb > 1)
			return usage_error(cmd, "cannot tell the backend of --target", a->targets[i]);
		size_t k = 0;
		while (k < nb && b != KJIT_BACKEND_NONE && backends[k] != b)
			k++;
		if (k == nb)
			return usage_error(cmd, "no --backend given for --target", a->targets[i]);
	}
	for (size_t k = 0; k < nb; k++) {
		size_t before = w->n_groups;
		for (size_t i = 0; i < a->n_targets; i++) {
			int b = backend_of_target(a->targets[i]);
			if (b == backends[k] || (b == KJIT_BACKEND_NONE && nb == 1))
				w->groups[w->n_groups++] = (struct warm_group){ backends[k], a->targets[i], 0, NULL };
		}
		if (w->n_groups == before && a->n_targets == 0)
			w->groups[w->n_groups++] = (struct warm_group){ backends[k], NULL, !explicit_b, NULL };
	}
	return 0;
}

/* The bundled kernels of backend: the daemon's manifest ("NAME BACKEND"
 * lines) or the --kernel names.  Appends them to *names. */
static int warm_kernels(kjit_client *c, const struct warm_args *a, int backend, char ***names,
			size_t *n)
{
	char *text = NULL;

	if (a->n_kernels) {
		*names = calloc(a->n_kernels, sizeof **names);
		for (size_t i = 0; *names && i < a->n_kernels; i++)
			(*names)[(*n)++] = kj__strdup(a->kernels[i]);
		return *names ? 0 : KJIT_ENOMEM;
	}
	int r = kjit_admin(c, "kernels", kjit_backend_name(backend), &text, NULL);
	if (r < 0)
		return r;
	size_t cap = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *name = strtok(line, " \t"), *b = strtok(NULL, " \t");
		if (name == NULL || !kj__name_ok(name) || (b && kjit_backend_from_name(b) != backend))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			char **p = realloc(*names, cap * sizeof *p);
			if (p == NULL) {
				r = KJIT_ENOMEM;
				break;
			}
			*names = p;
		}
		(*names)[(*n)++] = kj__strdup(name);
	}
	free(text);
	return r;
}

static int warm_build_jobs(kjit_client *c, const struct warm_args *a, struct warm *w)
{
	int backends_done[4] = { 0 };
	char **names[4] = { NULL };
	size_t counts[4] = { 0 }, total = 0;
	int r = 0;

	for (size_t g = 0; r == 0 && g < w->n_groups; g++) {
		int b = w->groups[g].backend;
		if (!backends_done[b]) {
			backends_done[b] = 1;
			r = warm_kernels(c, a, b, &names[b], &counts[b]);
		}
		total += counts[b];
	}
	if (r == 0 && total && (w->jobs = calloc(total, sizeof *w->jobs)) == NULL)
		r = KJIT_ENOMEM;
	for (size_t g = 0; r == 0 && g < w->n_groups; g++) {
		int b = w->groups[g].backend;
		for (size_t i = 0; i < counts[b]; i++) {
			w->jobs[w->n].g = &w->groups[g];
			w->jobs[w->n++].kernel = kj__strdup(names[b][i] ? names[b][i] : "");
		}
	}
	for (int b = 0; b < 4; b++) {
		for (size_t i = 0; i < counts[b]; i++)
			free(names[b][i]);
		free(names[b]);
	}
	return r;
}

static void warm_summary_json(const struct warm *w)
{
	struct kj__buf b = { 0 };
	int r = kj__buf_printf(&b, "{\"compiled\":%zu,\"cached\":%zu,\"failed\":%zu,\"skipped\":%zu,"
			       "\"seconds\":%.3f,\"failures\":[", w->n_compiled, w->n_cached, w->n_failed,
			       w->n_skipped, (double)(kj__now_us() - w->t0) / 1e6);
	int first = 1;
	for (size_t i = 0; r == 0 && i < w->n; i++) {
		const struct warm_job *j = &w->jobs[i];
		if (j->state != J_FAILED)
			continue;
		r = kj__buf_printf(&b, "%s{\"kernel\":", first ? "" : ",");
		first = 0;
		if (r == 0)
			r = kj__json_str(&b, j->kernel);
		if (r == 0)
			r = kj__buf_printf(&b, ",\"backend\":\"%s\",\"target\":", kjit_backend_name(j->g->backend));
		if (r == 0)
			r = kj__json_str(&b, j->g->target ? j->g->target : "");
		if (r == 0)
			r = kj__buf_printf(&b, ",\"error\":");
		if (r == 0)
			r = kj__json_str(&b, j->error ? j->error : "");
		if (r == 0)
			r = kj__buf_printf(&b, "}");
	}
	if (r == 0)
		r = kj__buf_printf(&b, "],\"skipped_backends\":[");
	first = 1;
	for (size_t g = 0; r == 0 && g < w->n_groups; g++) {
		if (w->groups[g].skip_reason == NULL)
			continue;
		r = kj__buf_printf(&b, "%s{\"backend\":\"%s\",\"reason\":", first ? "" : ",",
				   kjit_backend_name(w->groups[g].backend));
		first = 0;
		if (r == 0)
			r = kj__json_str(&b, w->groups[g].skip_reason);
		if (r == 0)
			r = kj__buf_printf(&b, "}");
	}
	if (r == 0)
		r = kj__buf_printf(&b, "]}\n");
	if (r == 0)
		fwrite(b.p, 1, b.len, stdout);
	kj__buf_free(&b);
}

static void warm_summary(const struct warm *w)
{
	if (w->tty)
		fprintf(stderr, "\r\033[K");
	if (w->json) {
		warm_summary_json(w);
		return;
	}
	printf("warm: %zu compiled, %zu already cached, %zu failed", w->n_compiled, w->n_cached,
	       w->n_failed);
	if (w->n_skipped)
		printf(", %zu skipped", w->n_skipped);
	printf(" (%.1f s)\n", (double)(kj__now_us() - w->t0) / 1e6);
	for (size_t g = 0; g < w->n_groups; g++)
		if (w->groups[g].skip_reason)
			printf("  skipped %s: %s\n", kjit_backend_name(w->groups[g].backend),
			       w->groups[g].skip_reason);
	for (size_t i = 0; i < w->n; i++)
		if (w->jobs[i].state == J_FAILED)
			printf("  failed %s %s %s: %s\n", w->jobs[i].kernel,
			       kjit_backend_name(w->jobs[i].g->backend), target_label(w->jobs[i].g),
			       w->jobs[i].error ? w->jobs[i].error : "");
}

static int warm_run(struct warm *w, long jobs)
{
	pthread_t th[MAX_REPEAT];
	size_t nt = (size_t)jobs < w->n ? (size_t)jobs : w->n, started = 0;

	w->t0 = kj__now_us();
	for (size_t i = 0; i < nt; i++)
		if (pthread_create(&th[started], NULL, warm_worker, w) == 0)
			started++;
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (size_t i = 0; i < w->n; i++) {
		struct warm_job *j = &w->jobs[i];
		if (j->state != J_PENDING)
			continue;
		j->state = J_FAILED;
		j->error = kj__strdup(w->open_err ? w->open_err : "no worker thread could start");
		w->n_failed++;
		w->done++;
	}
	warm_summary(w);
	return w->n_failed ? EX_FAIL : EX_OK;
}

static int cmd_warm(const struct cmd *cmd, int argc, char **argv)
{
	struct warm_args a;
	struct warm *w = calloc(1, sizeof *w);
	kjit_client *c = NULL;
	int ex;

	memset(&a, 0, sizeof a);
	if (w == NULL)
		return fail(EX_FAIL, "out of memory");
	pthread_mutex_init(&w->mu, NULL);
	ex = warm_parse(cmd, argc, argv, &a);
	if (ex == 0 && a.replay) {
		ex = admin_run("replay", NULL, a.json, 0);
		goto out;
	}
	if (ex == 0)
		ex = warm_groups(cmd, &a, w);
	if (ex == 0)
		ex = open_client(&c, 0);
	if (ex != 0)
		goto out;
	int r = warm_build_jobs(c, &a, w);
	if (r < 0) {
		ex = report(r, kjit_last_error(c));
		goto out;
	}
	if (w->n == 0) {
		printf(a.json ? "{\"compiled\":0,\"cached\":0,\"failed\":0}\n"
			      : "warm: nothing to do (no bundled kernels listed)\n");
		goto out;
	}
	w->json = a.json;
	w->tty = isatty(STDERR_FILENO);
	if (a.jobs == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		a.jobs = n < 1 ? 1 : n > MAX_REPEAT ? MAX_REPEAT : n;
	}
	ex = warm_run(w, a.jobs);
out:
	kjit_close(c);
	for (size_t i = 0; i < w->n; i++) {
		free(w->jobs[i].kernel);
		free(w->jobs[i].error);
	}
	for (size_t g = 0; g < w->n_groups; g++)
		free(w->groups[g].skip_reason);
	free(w->jobs);
	free(w->open_err);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return ex;
}

/* ---- main ---- */

static const struct cmd cmds[] = {
	{ "get", cmd_get, "get (--source FILE | --kernel NAME) --backend B [--target T] [--entry E]... "
			  "[-I DIR]... [-D NAME[=V]]... [-U NAME]... [-O[N]] [-std=STD] [--compiler C] "
			  "[--name-expression EXPR]... "
			  "[--opt OPT]... [--include-header [NAME=]FILE]... [-o FILE] [--json]" },
	{ "warm", cmd_warm, "warm [--backend B]... [--target T]... [--kernel NAME]... [-j N] [--replay] [--json]" },
	{ "targets", cmd_targets, "targets [--json]" },
	{ "stats", cmd_stats, "stats [--json] [--zero] [--prometheus FILE]" },
	{ "ls", cmd_simple_admin, "ls [--target T] [--json]" },
	{ "show", cmd_simple_admin, "show KEY [--json]" },
	{ "gc", cmd_gc, "gc [--max-size SIZE] [--json]" },
	{ "verify", cmd_verify, "verify [--json]" },
	{ "clear", cmd_simple_admin, "clear [--target T] [--json]" },
	{ "export", cmd_export, "export -o FILE [--target T]... [--json]" },
	{ "import", cmd_import, "import FILE [--json]" },
	{ "ping", cmd_ping, "ping [--json]" },
	{ "stop", cmd_stop, "stop [--json]" },
};

static void help(FILE *f)
{
	fprintf(f, "kjit: client of kjitd, the shared JIT cache for GPU kernels\nusage:\n");
	for (size_t i = 0; i < KJ_ARRAY_SIZE(cmds); i++)
		fprintf(f, "  kjit %s\n", cmds[i].usage);
	fprintf(f, "exit status: 0 success, 1 the request failed, 2 usage error, 3 kjitd unreachable\n");
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return fail(EX_USAGE, "no command given; usage: kjit COMMAND [OPTIONS] (see `kjit --help`)");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		help(stdout);
		return EX_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("kjit %d.%d\n", KJIT_VERSION_MAJOR, KJIT_VERSION_MINOR);
		return EX_OK;
	}
	for (size_t i = 0; i < KJ_ARRAY_SIZE(cmds); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		for (int k = 2; k < argc; k++) {
			if (strcmp(argv[k], "--") == 0)
				break;
			if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
				printf("usage: kjit %s\n", cmds[i].usage);
				return EX_OK;
			}
		}
		opterr = 0;
		optind = 1;
		return cmds[i].fn(&cmds[i], argc - 1, argv + 1);
	}
	return fail(EX_USAGE, "unknown command \"%s\"; usage: kjit COMMAND [OPTIONS] (see `kjit --help`)",
		    argv[1]);
}
