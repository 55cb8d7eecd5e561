/* cmd-admin.c: the administrative commands of kjit: gc, stats, verify,
 * export, import, targets, ping, stop, ls, show and clear.  Each is one
 * ADMIN (or PING / STOP) request whose wire form docs/cli.md lists;
 * `targets` adds what this process's environment resolves to (the target a
 * GET from here would ask for).  ping, stats, targets and stop never start
 * a daemon (a health check must not start what it checks, and a script that
 * starts `kjitd --foreground` and pings it must not race into two daemons);
 * the other commands autostart as get and warm do.
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
#include "cli-int.h"
#include "client_int.h"
#include "resolve.h"
#include "kjit.h"
#include "kj_limits.h"
#include "util.h"

/* ---- administrative commands ---- */

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


/* One ADMIN request; prints TEXT (or JSON with json) and maps the answer to
 * an exit code.  A failed command's report is printed before its error. */
int kj__cli_admin_run(const char *cmdname, const char *arg, int json, int no_autostart)
{
	kjit_client *c = NULL;
	char *text = NULL, *js = NULL;
	int ex = kj__cli_open(&c, no_autostart);

	if (ex != 0)
		return ex;
	int r = kjit_admin(c, cmdname, arg, &text, &js);
	if (json && js)
		kj__cli_print_text(stdout, js);
	else if (!json || r == 0)
		kj__cli_print_text(stdout, text);
	ex = r < 0 ? kj__cli_report(r, kjit_last_error(c)) : EX_OK;
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
				return kj__cli_usage_error(cmd, "unknown option", "--target");
			if (!(allow & A_MULTI_TARGET) && a->n_targets)
				return kj__cli_usage_error(cmd, "--target given twice", NULL);
			r = kj__cli_push(cmd, a->targets, &a->n_targets, optarg, "--target");
			break;
		case 'o':
			if (!(allow & A_OUT))
				return kj__cli_usage_error(cmd, "unknown option", "-o");
			a->out = optarg;
			break;
		case 'm':
			if (!(allow & A_MAXSIZE))
				return kj__cli_usage_error(cmd, "unknown option", "--max-size");
			a->max_size = optarg;
			break;
		case 'z': case 'p':
			if (!(allow & A_STATS))
				return kj__cli_usage_error(cmd, "unknown option", ch == 'z' ? "--zero" : "--prometheus");
			if (ch == 'z')
				a->zero = 1;
			else
				a->prometheus = optarg;
			break;
		default: return kj__cli_option_error(cmd, ch, argv);
		}
	}
	if (r != 0)
		return r;
	if (argc - optind > want_pos)
		return kj__cli_usage_error(cmd, "unexpected argument", argv[optind + want_pos]);
	if (argc - optind < want_pos)
		return kj__cli_usage_error(cmd, "an argument is missing", NULL);
	if (want_pos)
		a->pos = argv[optind];
	return 0;
}

int kj__cmd_simple_admin(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	unsigned allow = strcmp(cmd->name, "ls") == 0 || strcmp(cmd->name, "clear") == 0 ? A_TARGET : 0;
	int want_pos = strcmp(cmd->name, "show") == 0;
	int ex = admin_parse(cmd, argc, argv, allow, want_pos, &a);

	if (ex != 0)
		return ex;
	const char *arg = want_pos ? a.pos : a.n_targets ? a.targets[0] : NULL;
	return kj__cli_admin_run(cmd->name, arg, a.json, 0);
}

int kj__cmd_gc(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	char arg[32];
	uint64_t size = 0;
	int ex = admin_parse(cmd, argc, argv, A_MAXSIZE, 0, &a);

	if (ex != 0)
		return ex;
	if (a.max_size && kj__parse_size(a.max_size, &size) < 0)
		return kj__cli_usage_error(cmd, "bad --max-size (use e.g. 5G, 512M):", a.max_size);
	snprintf(arg, sizeof arg, "%llu", (unsigned long long)size);
	return kj__cli_admin_run("gc", a.max_size ? arg : NULL, a.json, 0);
}

int kj__cmd_stats(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	kjit_client *c = NULL;
	char *text = NULL;
	int ex = admin_parse(cmd, argc, argv, A_STATS, 0, &a);

	if (ex != 0)
		return ex;
	if (a.prometheus == NULL) {
		ex = kj__cli_admin_run("stats", a.zero ? "zero" : NULL, a.json, 1);
		if (!a.json && !a.zero) /* the drop-in's counters are local: shown with kjitd down too */
			kj__cli_dropin_stats(stdout);
		return ex;
	}
	/* node_exporter's textfile collector reads whole files only. */
	ex = kj__cli_open(&c, 1);
	if (ex != 0)
		return ex;
	int r = kjit_admin(c, "stats", "prometheus", &text, NULL);
	if (r < 0)
		ex = kj__cli_report(r, kjit_last_error(c));
	else if ((ex = kj__cli_write_out(a.prometheus, text ? text : "", text ? strlen(text) : 0)) != EX_OK)
		;
	else if (a.zero && (r = kjit_admin(c, "stats", "zero", NULL, NULL)) < 0)
		ex = kj__cli_report(r, kjit_last_error(c));
	free(text);
	kjit_close(c);
	return ex;
}

int kj__cmd_verify(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);
	return ex != 0 ? ex : kj__cli_admin_run("verify", NULL, a.json, 0);
}

/* `kjit export -o -`: kjitd writes the bundle by path, so it goes to a
 * private directory of ours first (export is for kjitd's own uid and
 * root, who can write there), then to standard output. */
static int export_to_stdout(const char *targets, int json)
{
	const char *tmpdir = getenv("TMPDIR");
	char *dir = kj__asprintf("%s/kjit-export.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	char *file = NULL, *arg = NULL;
	uint8_t *data = NULL;
	size_t len = 0;
	int ex;

	if (dir == NULL || mkdtemp(dir) == NULL) {
		ex = kj__cli_fail(EX_FAIL, "cannot make a temporary directory for the bundle: %s; set TMPDIR",
				  strerror(dir ? errno : ENOMEM));
		free(dir);
		return ex;
	}
	file = kj__asprintf("%s/bundle", dir);
	arg = file ? kj__asprintf("%s%s", file, targets) : NULL;
	if (arg == NULL) {
		ex = kj__cli_fail(EX_FAIL, "out of memory");
		goto out;
	}
	fflush(stdout);
	/* the summary goes to stderr: stdout carries the bundle */
	int saved = dup(STDOUT_FILENO);
	if (saved < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		ex = kj__cli_fail(EX_FAIL, "cannot redirect the summary: %s", strerror(errno));
		if (saved >= 0)
			close(saved);
		goto out;
	}
	ex = kj__cli_admin_run("export", arg, json, 0);
	fflush(stdout);
	if (dup2(saved, STDOUT_FILENO) < 0)
		ex = kj__cli_fail(EX_FAIL, "cannot restore standard output: %s", strerror(errno));
	close(saved);
	if (ex != EX_OK)
		goto out;
	int r = kj__read_file(file, (size_t)1 << 40 /* the bundle kjitd just wrote */, &data, &len);
	if (r < 0)
		ex = kj__cli_fail(EX_FAIL, "cannot read the exported bundle: %s", strerror(-r));
	else
		ex = kj__cli_write_out("-", data, len);
out:
	if (file)
		unlink(file);
	rmdir(dir);
	free(data);
	free(arg);
	free(file);
	free(dir);
	return ex;
}

int kj__cmd_export(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	struct kj__buf b = { 0 }, t = { 0 };
	int ex = admin_parse(cmd, argc, argv, A_OUT | A_MULTI_TARGET, 0, &a);

	if (ex != 0)
		return ex;
	if (a.out == NULL)
		return kj__cli_usage_error(cmd, "-o FILE is required", NULL);
	if (strchr(a.out, ',') != NULL)
		return kj__cli_usage_error(cmd, "the export file name must not contain ','", NULL);
	int r = kj__buf_append(&t, "", 0);
	for (size_t i = 0; r == 0 && i < a.n_targets; i++)
		r = kj__buf_printf(&t, ",%s", a.targets[i]);
	if (r == 0)
		r = kj__buf_append(&t, "", 1);
	if (r < 0) {
		kj__buf_free(&t);
		return kj__cli_fail(EX_FAIL, "out of memory");
	}
	if (strcmp(a.out, "-") == 0) {
		ex = export_to_stdout((char *)t.p, a.json);
		kj__buf_free(&t);
		return ex;
	}
	char *path = absolute(a.out);
	if (path == NULL) {
		kj__buf_free(&t);
		return kj__cli_fail(EX_FAIL, "cannot make %s absolute: %s; give an absolute path", a.out,
				    strerror(errno));
	}
	r = kj__buf_printf(&b, "%s%s", path, (char *)t.p);
	if (r == 0)
		r = kj__buf_append(&b, "", 1);
	ex = r < 0 ? kj__cli_fail(EX_FAIL, "out of memory") : kj__cli_admin_run("export", (char *)b.p, a.json, 0);
	kj__buf_free(&b);
	kj__buf_free(&t);
	free(path);
	return ex;
}

/* Streams FILE (or stdin for "-") to kjitd in chunks (ADMIN import-data,
 * daemon/net/upload.c): kjitd never opens the user's path, which a sandboxed
 * system daemon could not see.  An exit status. */
static int upload_bundle(const char *path, int json)
{
	enum { CHUNK = 8u << 20 };
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	kjit_client *c = NULL;
	uint64_t off = 0;
	char arg[32];
	int ex;

	if (fd < 0)
		return kj__cli_fail(EX_FAIL, "cannot read %s: %s; check the path", path, strerror(errno));
	uint8_t *buf = malloc(CHUNK);
	if (buf == NULL || (ex = kj__cli_open(&c, 0)) != 0) {
		free(buf);
		if (fd > 0)
			close(fd);
		return buf ? ex : kj__cli_fail(EX_FAIL, "out of memory");
	}
	for (;;) {
		size_t n = 0;
		ssize_t k = 1;
		while (n < CHUNK && (k = read(fd, buf + n, CHUNK - n)) != 0) {
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				break;
			n += (size_t)k;
		}
		if (k < 0) {
			ex = kj__cli_fail(EX_FAIL, "cannot read %s: %s", strcmp(path, "-") ? path : "stdin", strerror(errno));
			break;
		}
		if (n == 0 && off > 0) {
			ex = EX_OK;
			break;
		}
		if (n == 0) {
			ex = kj__cli_fail(EX_FAIL, "%s is empty; give a bundle made by `kjit export`",
					  strcmp(path, "-") ? path : "stdin");
			break;
		}
		snprintf(arg, sizeof arg, "%llu", (unsigned long long)off);
		int r = kj__admin_data(c, "import-data", arg, buf, n);
		if (r < 0) {
			ex = kj__cli_report(r, kjit_last_error(c));
			break;
		}
		off += n;
	}
	(void)json;
	free(buf);
	if (fd > 0)
		close(fd);
	kjit_close(c);
	return ex;
}

int kj__cmd_import(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	int ex = admin_parse(cmd, argc, argv, 0, 1, &a);

	if (ex != 0)
		return ex;
	if ((ex = upload_bundle(a.pos, a.json)) != EX_OK)
		return ex;
	return kj__cli_admin_run("import", "-", a.json, 0);
}

/* ---- kjit targets: the daemon's view plus this process's environment ---- */

const int kj__cli_backends[KJ_CLI_N_BACKENDS] = { KJIT_BACKEND_HIP, KJIT_BACKEND_CUDA, KJIT_BACKEND_VULKAN };

static int env_json(struct kj__buf *b)
{
	int r = kj__buf_printf(b, "{");
	for (size_t i = 0; r == 0 && i < KJ_ARRAY_SIZE(kj__cli_backends); i++) {
		char t[KJ_TARGET_MAX] = "", v[KJ_VERSION_STR_MAX] = "", err[256] = "";
		const char *tf = NULL, *vf = NULL;
		int e = kj__resolve_env(kj__cli_backends[i], NULL, t, &tf, v, &vf, err, sizeof err);
		r = kj__buf_printf(b, "%s\"%s\":{\"target\":", i ? "," : "",
				   kjit_backend_name(kj__cli_backends[i]));
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
	for (size_t i = 0; i < KJ_ARRAY_SIZE(kj__cli_backends); i++) {
		char t[KJ_TARGET_MAX] = "", v[KJ_VERSION_STR_MAX] = "", err[256] = "";
		const char *tf = NULL, *vf = NULL, *name = kjit_backend_name(kj__cli_backends[i]);
		int e = kj__resolve_env(kj__cli_backends[i], NULL, t, &tf, v, &vf, err, sizeof err);
		if (e < 0)
			printf("  %s: error: %s\n", name, err);
		else if (t[0] == '\0')
			printf("  %s: no env target (the daemon decides; set %s to choose)\n", name,
			       kj__target_env_name(kj__cli_backends[i]));
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

int kj__cmd_targets(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	struct kj__buf cj = { 0 };
	kjit_client *c = NULL;
	char *text = NULL, *js = NULL;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);

	if (ex != 0)
		return ex;
	if (a.json && env_json(&cj) < 0)
		return kj__cli_fail(EX_FAIL, "out of memory");
	if (!a.json)
		env_text();
	fflush(stdout);
	ex = kj__cli_open(&c, 1); /* a report never starts what it reports on */
	if (ex == 0) {
		int r = kjit_admin(c, "targets", NULL, &text, &js);
		if (r < 0)
			ex = kj__cli_report(r, kjit_last_error(c));
		else if (a.json)
			print_merged_json(js, &cj);
		else {
			printf("kjitd:\n");
			kj__cli_print_text(stdout, text);
		}
	}
	free(text);
	free(js);
	kj__buf_free(&cj);
	kjit_close(c);
	return ex;
}

/* ---- kjit ping, kjit stop ---- */

/* "socket":PATH,"found":HOW[,"passed_over":NOTE] into b (no braces). */
static int ping_where_json(struct kj__buf *b, kjit_client *c)
{
	const char *how, *note, *path = kjit_socket_path(c, &how, &note);
	int r = kj__buf_printf(b, "\"socket\":");

	if (r == 0)
		r = kj__json_str(b, path);
	if (r == 0)
		r = kj__buf_printf(b, ",\"found\":");
	if (r == 0)
		r = kj__json_str(b, how);
	if (r == 0 && *note)
		r = kj__buf_printf(b, ",\"passed_over\":");
	if (r == 0 && *note)
		r = kj__json_str(b, note);
	return r;
}

int kj__cmd_ping(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	kjit_client *c = NULL;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);

	if (ex == 0)
		ex = kj__cli_open(&c, 1); /* a health check never starts what it checks */
	if (ex != 0)
		return ex;
	uint64_t t0 = kj__now_us();
	int r = kjit_ping(c);
	uint64_t us = kj__now_us() - t0;
	if (r < 0)
		ex = kj__cli_report(r, kjit_last_error(c));
	else if (a.json) {
		/* The fleet tier's state: {"remote":{...}} or {"remote":null}
		 * (an older kjitd without it: left out). */
		char *json = NULL;
		const char *rest = "";
		if (kjit_admin(c, "remote", NULL, NULL, &json) == 0 && json && json[0] == '{' && json[1] != '}')
			rest = json + 1;
		struct kj__buf where = { 0 };
		if (ping_where_json(&where, c) < 0)
			ex = kj__cli_report(KJIT_ENOMEM, NULL);
		else
			printf("{\"ok\":true,\"us\":%llu,%.*s%s%s\n", (unsigned long long)us, (int)where.len,
			       (const char *)where.p, *rest ? "," : "}", rest);
		kj__buf_free(&where);
		free(json);
	}
	else {
		const char *how, *note, *path = kjit_socket_path(c, &how, &note);
		printf("kjitd answered in %.3f ms on %s (found: %s%s%s)\n", (double)us / 1000.0, path, how,
		       *note ? "; passed over: " : "", note);
	}
	kjit_close(c);
	return ex;
}

int kj__cmd_stop(const struct cmd *cmd, int argc, char **argv)
{
	struct admin_args a;
	kjit_client *c = NULL;
	int ex = admin_parse(cmd, argc, argv, 0, 0, &a);

	if (ex == 0)
		ex = kj__cli_open(&c, 1); /* never start a daemon just to stop it */
	if (ex != 0)
		return ex;
	int r = kjit_stop(c);
	if (r < 0)
		ex = kj__cli_report(r, kjit_last_error(c));
	else
		printf(a.json ? "{\"stopping\":true}\n" : "kjitd is stopping\n");
	kjit_close(c);
	return ex;
}
