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
 *
 * This file holds kjit_cli_main (the command's entry point, kjit.h), the
 * command table and the output helpers of cli-int.h; the subcommands live
 * in cmd-*.c.  All of them are part of libkjit, so that the kjit binary
 * (kjit-main.c, a main calling kjit_cli_main) and `python3 -m kjit`
 * (python/kjit/__main__.py, through ctypes) run one parser: one place to
 * add a flag, the same errors from both.  Nothing here keeps state between
 * calls: getopt is reset at every call and output flushed before return.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cli-int.h"
#include "outfile.h"
#include "kjit.h"
#include "util.h"

/* ---- output helpers ---- */

int kj__cli_fail(int ex, const char *fmt, ...)
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

int kj__cli_usage_error(const struct cmd *cmd, const char *what, const char *arg)
{
	return kj__cli_fail(EX_USAGE, "%s%s%s; usage: kjit %s", what, arg ? " " : "", arg ? arg : "",
		    cmd->usage);
}

/* Reports a getopt error (ch is '?' or ':'). */
/* The argument a short option's error is about: getopt has moved past it
 * when the option letter was its last (argv[optind - 1]), else not yet
 * (argv[optind]); NULL when neither is a single-dash argument with it. */
static const char *short_arg(char **argv)
{
	const char *prev = optind > 0 ? argv[optind - 1] : NULL, *cur = argv[optind];
	size_t pl = prev ? strlen(prev) : 0;

	if (prev && prev[0] == '-' && prev[1] != '-' && pl > 1 && prev[pl - 1] == (char)optopt)
		return prev;
	if (cur && cur[0] == '-' && cur[1] != '-' && strchr(cur + 1, optopt) != NULL)
		return cur;
	return NULL;
}

int kj__cli_option_error(const struct cmd *cmd, int ch, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : NULL;
	char shortopt[3] = { '-', (char)optopt, '\0' };
	char longopt[64];

	if (opt && strncmp(opt, "--", 2) == 0) {
		snprintf(longopt, sizeof longopt, "%.*s", (int)strcspn(opt, "="), opt);
		opt = longopt;
	} else if (optopt != 0) {
		/* the whole argument ("-lineinfo"), not its first letter */
		opt = ch != ':' && short_arg(argv) ? short_arg(argv) : shortopt;
		if (opt != shortopt) {
			snprintf(longopt, sizeof longopt, "%.*s", (int)strcspn(opt, "="), opt);
			opt = longopt;
		}
	}
	return kj__cli_usage_error(cmd, ch == ':' ? "missing argument to" : "unknown option", opt);
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
int kj__cli_report(int code, const char *msg)
{
	if (msg == NULL || *msg == '\0')
		msg = kjit_strerror(code);
	if (strchr(msg, ';') != NULL)
		return kj__cli_fail(exit_for(code), "%s", msg);
	return kj__cli_fail(exit_for(code), "%s; %s", msg, hint(code));
}

int kj__cli_open(kjit_client **c, int no_autostart)
{
	kjit_open_options o = { .no_autostart = no_autostart };
	int r = kjit_open(c, &o);
	return r < 0 ? kj__cli_report(r, kjit_last_error(NULL)) : 0;
}

void kj__cli_print_text(FILE *f, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0)
		return;
	fputs(s, f);
	if (s[n - 1] != '\n')
		fputc('\n', f);
}

int kj__cli_write_out(const char *path, const void *p, size_t n)
{
	char err[PATH_MAX + 160];

	if (strcmp(path, "-") == 0) {
		if (fwrite(p, 1, n, stdout) != n || fflush(stdout) != 0)
			return kj__cli_fail(EX_FAIL, "writing to standard output failed: %s", strerror(errno));
		return EX_OK;
	}
	if (kj__outfile_write(path, p, n, 0, err, sizeof err) < 0)
		return kj__cli_fail(EX_FAIL, "%s", err);
	return EX_OK;
}


int kj__cli_parse_backend(const struct cmd *cmd, const char *s, int *out)
{
	*out = kjit_backend_from_name(s);
	if (*out == KJIT_BACKEND_NONE)
		return kj__cli_usage_error(cmd, "unknown backend (use hip, cuda or vulkan):", s);
	return 0;
}

int kj__cli_push(const struct cmd *cmd, const char **v, size_t *n, const char *s, const char *opt)
{
	if (*n >= MAX_REPEAT)
		return kj__cli_usage_error(cmd, "too many", opt);
	v[(*n)++] = s;
	return 0;
}

/* ---- main ---- */

static const struct cmd cmds[] = {
	{ "get", kj__cmd_get, "get (--source FILE | --kernel NAME) [--backend B] [--target T] [--entry E]... "
			  "[-I DIR]... [-D NAME[=V]]... [-U NAME]... [-O[N]] [-std=STD] [--compiler C] "
			  "[--name-expression EXPR]... "
			  "[--opt OPT]... [--include-header [NAME=]FILE]... [-o FILE] [--json] [--explain] [--print-headers]" },
	{ "warm", kj__cmd_warm, "warm [--backend B]... [--target T]... [--kernel NAME]... [-j N] [--replay] [--remote-only] [--json]" },
	{ "targets", kj__cmd_targets, "targets [--json]" },
	{ "kernels", kj__cmd_simple_admin, "kernels [--json]" },
	{ "stats", kj__cmd_stats, "stats [--json] [--zero] [--prometheus FILE]" },
	{ "ls", kj__cmd_simple_admin, "ls [--target T] [--json]" },
	{ "show", kj__cmd_simple_admin, "show KEY|PREFIX [--json]" },
	{ "gc", kj__cmd_gc, "gc [--max-size SIZE] [--json]" },
	{ "verify", kj__cmd_verify, "verify [--json]" },
	{ "clear", kj__cmd_simple_admin, "clear [--target T] [--json]" },
	{ "export", kj__cmd_export, "export -o FILE [--target T]... [--json]" },
	{ "import", kj__cmd_import, "import FILE|- [--json]   (the bundle is read here and streamed to kjitd)" },
	{ "ping", kj__cmd_ping, "ping [--json]" },
	{ "config", kj__cmd_simple_admin, "config [--json]   (kjitd's settings, and where each came from)" },
	{ "stop", kj__cmd_stop, "stop [--json]" },
	{ "run", kj__cmd_run, "run [--no-preload] [--quiet] [--] CMD [ARGS]   (CMD with kjit's libnvrtc/libhiprtc)" },
};

static void help(FILE *f)
{
	fprintf(f, "kjit: client of kjitd, the shared JIT cache for GPU kernels\nusage:\n");
	for (size_t i = 0; i < KJ_ARRAY_SIZE(cmds); i++)
		fprintf(f, "  kjit %s\n", cmds[i].usage);
	fprintf(f, "exit status: 0 success, 1 the request failed, 2 usage error, 3 kjitd unreachable\n");
}

/* 1 if argv (a command's) asks for --json, before any "--". */
static int wants_json(int argc, char **argv)
{
	for (int k = 2; k < argc && strcmp(argv[k], "--") != 0; k++)
		if (strcmp(argv[k], "--json") == 0)
			return 1;
	return 0;
}

/* Runs cmd; with --json, a failure also prints one JSON object on stdout,
 * {"error": the line the command wrote on stderr, "exit": its status},
 * for scripts that parse stdout only.  stderr goes to a memfd meanwhile and
 * is copied to the real stderr afterwards. */
static int run_cmd(const struct cmd *cmd, int argc, char **argv)
{
	/* run's arguments after CMD are CMD's own: its stderr is never held back */
	int json = strcmp(cmd->name, "run") != 0 && wants_json(argc + 1, argv - 1);
	int saved = json ? dup(2) : -1, mem = saved >= 0 ? memfd_create("kjit-stderr", MFD_CLOEXEC) : -1;

	if (mem >= 0 && dup2(mem, 2) < 0) {
		close(mem);
		mem = -1;
	}
	int ex = cmd->fn(cmd, argc, argv);
	if (mem < 0) {
		if (saved >= 0)
			close(saved);
		return ex;
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	struct kj__buf err = { 0 }, out = { 0 };
	char chunk[4096];
	ssize_t n;
	lseek(mem, 0, SEEK_SET);
	while ((n = read(mem, chunk, sizeof chunk)) > 0)
		if (kj__buf_append(&err, chunk, (size_t)n) < 0)
			break;
	close(mem);
	if (err.len && fwrite(err.p, 1, err.len, stderr) != err.len)
		ex = ex ? ex : EX_FAIL;
	if (ex != EX_OK && kj__buf_append(&err, "", 1) == 0) {
		/* the last "kjit: ..." line is the failure */
		char *line = (char *)err.p, *last = NULL;
		for (char *p = strstr(line, "kjit: "); p; p = strstr(p + 1, "\nkjit: "))
			last = p[0] == '\n' ? p + 1 : p;
		const char *msg = last ? last + 6 : "failed";
		size_t len = strcspn(msg, "\n");
		char *one = kj__strndup(msg, len);
		if (one && kj__buf_printf(&out, "{\"error\":") == 0 && kj__json_str(&out, one) == 0 &&
		    kj__buf_printf(&out, ",\"exit\":%d}\n", ex) == 0)
			fwrite(out.p, 1, out.len, stdout);
		free(one);
	}
	kj__buf_free(&err);
	kj__buf_free(&out);
	return ex;
}

static int cli_run(int argc, char **argv)
{
	if (argc < 2 || argv == NULL)
		return kj__cli_fail(EX_USAGE, "no command given; usage: kjit COMMAND [OPTIONS] (see `kjit --help`)");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		help(stdout);
		return EX_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("kjit %s\n", KJ_PACKAGE_VERSION); /* python/kjit/_version.py, through the Makefile */
		return EX_OK;
	}
	for (size_t i = 0; i < KJ_ARRAY_SIZE(cmds); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		for (int k = 2; k < argc; k++) {
			if (strcmp(argv[k], "--") == 0)
				break;
			if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
				kj__cli_help(stdout, &cmds[i]);
				return EX_OK;
			}
		}
		opterr = 0;
		optind = 0; /* glibc: a full reset, for a second call in one process */
		return run_cmd(&cmds[i], argc - 1, argv + 1);
	}
	return kj__cli_fail(EX_USAGE, "unknown command \"%s\"; usage: kjit COMMAND [OPTIONS] (see `kjit --help`)",
		    argv[1]);
}


KJIT_EXPORT int kjit_cli_main(int argc, char **argv)
{
	int r = cli_run(argc, argv);

	/* As at the binary's exit (a failed flush is not reported there either):
	 * a caller that stays, Python, sees the output before it prints its own. */
	(void)fflush(stdout);
	(void)fflush(stderr);
	return r;
}
