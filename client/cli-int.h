/* cli-int.h: what the files of the kjit command share (client/cli.c and
 * client/cmd-*.c) and nothing else links to: the exit codes of the design,
 * the command table's entry, and the output helpers every subcommand uses
 * so that each failure is one line "kjit: <what>; <what to do>".
 */
#ifndef KJ_CLI_INT_H
#define KJ_CLI_INT_H

#include <stddef.h>
#include <stdio.h>

#include "kjit.h"

/* Exit codes of docs/cli.md. */
enum { EX_OK = 0, EX_FAIL = 1, EX_USAGE = 2, EX_DOWN = 3 };

/* Repeated options a command accepts at most (each a KJ_*_MAX_COUNT). */
#define MAX_REPEAT 512

/* One subcommand: fn gets (argc, argv) with argv[0] the subcommand's name
 * and getopt reset; it returns the process's exit code. */
struct cmd {
	const char *name;
	int (*fn)(const struct cmd *cmd, int argc, char **argv);
	const char *usage;
};

/* The subcommands (cmd-get.c, cmd-admin.c, cmd-warm.c). */
int kj__cmd_get(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_warm(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_targets(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_stats(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_simple_admin(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_gc(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_verify(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_export(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_import(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_ping(const struct cmd *cmd, int argc, char **argv);
int kj__cmd_stop(const struct cmd *cmd, int argc, char **argv);
/* cmd-run.c: `kjit run -- CMD`; and the drop-in's counters of this user
 * as lines for `kjit stats` (nothing when no drop-in ever ran). */
int kj__cmd_run(const struct cmd *cmd, int argc, char **argv);
/* cmd-help.c: `kjit COMMAND --help`: the usage line and what it does, on f. */
void kj__cli_help(FILE *f, const struct cmd *cmd);
void kj__cli_dropin_stats(FILE *f);
/* cmd-variant.c: when bundled kernel `kernel` (fetched for backend/target) is one
 * of several variants of an op, writes "variant: NAME of {...}: why" to out.
 * Returns 0 (nothing written when it has none) or a negative kjit error. */
int kj__variant_note(kjit_client *c, const char *kernel, int backend, const char *target,
		     FILE *out);

/* Every backend, in the order `kjit targets` and `kjit warm` walk them. */
#define KJ_CLI_N_BACKENDS 3
extern const int kj__cli_backends[KJ_CLI_N_BACKENDS];

/* Prints "kjit: " and the message as one line on stderr (stdout flushed
 * first); returns ex. */
int kj__cli_fail(int ex, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "kjit: <what> <arg>; usage: kjit <usage>"; returns EX_USAGE.  arg may be NULL. */
int kj__cli_usage_error(const struct cmd *cmd, const char *what, const char *arg);
/* Reports a getopt error (ch is '?' or ':'); returns EX_USAGE. */
int kj__cli_option_error(const struct cmd *cmd, int ch, char **argv);
/* Prints a libkjit failure (msg, or kjit_strerror(code) when empty) as one
 * line with a hint unless msg has one; returns EX_DOWN or EX_FAIL. */
int kj__cli_report(int code, const char *msg);
/* kjit_open with no_autostart; 0, or the reported failure's exit code. */
int kj__cli_open(kjit_client **c, int no_autostart);
/* Prints s (NULL or "" prints nothing) ending in one newline. */
void kj__cli_print_text(FILE *f, const char *s);
/* Writes n bytes of p to path as cp would (common/outfile.h: a regular
 * file replaced whole, a symlink followed, a device or FIFO written in
 * place), or to standard output for "-".  EX_OK, or EX_FAIL with one line
 * printed. */
int kj__cli_write_out(const char *path, const void *p, size_t n);
/* The backend named s into *out; 0 or a usage error's exit code. */
int kj__cli_parse_backend(const struct cmd *cmd, const char *s, int *out);
/* Appends s to v[*n] (at most MAX_REPEAT); 0 or a usage error naming opt. */
int kj__cli_push(const struct cmd *cmd, const char **v, size_t *n, const char *s, const char *opt);
/* One ADMIN request; prints TEXT (or JSON with json) and maps the answer to
 * an exit code.  A failed command's report is printed before its error. */
int kj__cli_admin_run(const char *cmdname, const char *arg, int json, int no_autostart);

#endif /* KJ_CLI_INT_H */
