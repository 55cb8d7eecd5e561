/* defs.c: what keeps a client's option values away from a shell, for the
 * families that run a compiler driver as a child process (nvcc, whose
 * steps run through `sh -c` with definitions inside double quotes, and
 * the hipcc perl wrapper, which builds one shell command line).
 *
 * Two rules (docs/reliability.md, "Attacks tried and their results"):
 *  1. No definition reaches the driver's command line.  The job's -D and -U
 *     options are written, in their order, to a header in the job's
 *     directory (KJ_DEFS_HEADER: "#define NAME VALUE" or "#undef NAME",
 *     each followed by an empty line so that a value ending in a
 *     line-splicing backslash can join nothing), which the compile
 *     includes first (-include).  The preprocessor reads it as data; no
 *     shell ever sees a value.  The options themselves are unchanged, so
 *     the cache key covers the definitions exactly as before.
 *  2. Every other argument kjit passes such a driver (its options, the
 *     job's paths and names) is made of bytes from a set no shell
 *     interprets (KJ_SHELL_SAFE); any other byte is refused with a
 *     one-line error naming it.
 * A value that a one-line #define cannot carry the way the command line
 * would is refused too: a newline or another control byte (also refused
 * for every family by kj__options_check), and a value that opens a
 * comment it does not close (in a header it would swallow the lines
 * after it).  No state: pure functions of the job.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "compint.h"
#include "kj_types.h"
#include "util.h"

/* Bytes an argument to a shell-driven compiler may hold: none of them means
 * anything to sh, inside or outside double quotes (hipcc.pl's own set of
 * bytes it leaves unescaped, plus ':' of AMD target features). */
#define KJ_SHELL_SAFE "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+,./:"

int kj__opt_is_macro(const char *opt)
{
	return opt && (strncmp(opt, "-D", 2) == 0 || strncmp(opt, "-U", 2) == 0);
}

/* How a byte is named in an error: 'c', or \xNN for a control byte. */
static void byte_name(unsigned char c, char *out, size_t outlen)
{
	if (c < 0x20 || c >= 0x7f)
		snprintf(out, outlen, "\\x%02x", c);
	else
		snprintf(out, outlen, "'%c'", c);
}

int kj__shell_safe(const char *family, const char *what, const char *arg, char *err, size_t errlen)
{
	size_t ok = strspn(arg, KJ_SHELL_SAFE), i;
	char b[8], shown[81];

	if (arg[ok] == '\0')
		return 0;
	byte_name((unsigned char)arg[ok], b, sizeof b);
	for (i = 0; arg[i] && i + 1 < sizeof shown; i++) /* the error stays one line */
		shown[i] = (unsigned char)arg[i] < 0x20 || arg[i] == 0x7f ? '?' : arg[i];
	shown[i] = '\0';
	snprintf(err, errlen, "%s '%s' holds %s, which kjit never passes to %s (its driver runs a shell): "
		 "only letters, digits and -_=+,./: may", what, shown, b, family);
	return KJIT_EINVAL;
}

/* 1 if v leaves a block comment open at its end (string and character
 * literals, with their escapes, are skipped). */
static int opens_comment(const char *v)
{
	char q = 0;

	for (const char *p = v; *p; p++) {
		if (q) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == q)
				q = 0;
		} else if (*p == '"' || *p == '\'') {
			q = *p;
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			if (e == NULL)
				return 1;
			p = e + 1;
		} else if (p[0] == '/' && p[1] == '/') {
			return 0;
		}
	}
	return 0;
}

/* Appends opt's directive to b.  0, KJIT_EINVAL (err set) or KJIT_ENOMEM. */
static int add_directive(struct kj__buf *b, const char *opt, char *err, size_t errlen)
{
	const char *name = opt + 2, *eq = strchr(name, '=');
	int nl = (int)(eq ? (size_t)(eq - name) : strlen(name));

	if (opt[1] == 'U')
		return kj__buf_printf(b, "#undef %s\n\n", name) < 0 ? KJIT_ENOMEM : 0;
	if (eq == NULL)
		return kj__buf_printf(b, "#define %s 1\n\n", name) < 0 ? KJIT_ENOMEM : 0;
	for (const char *c = eq + 1; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			snprintf(err, errlen, "the value of -D%.*s holds %s: a definition must be one line of "
				 "printable text", nl > 64 ? 64 : nl, name, *c == '\n' ? "a newline" : "a control byte");
			return KJIT_EINVAL;
		}
	if (opens_comment(eq + 1)) {
		snprintf(err, errlen, "the value of -D%.*s opens a /* comment it does not close", nl > 64 ? 64 : nl,
			 name);
		return KJIT_EINVAL;
	}
	size_t vl = strlen(eq + 1);
	/* a trailing backslash stays a stray token, as on the command line */
	const char *tail = vl > 0 && eq[vl] == '\\' ? "/**/" : "";
	return kj__buf_printf(b, "#define %.*s %s%s\n\n", nl, name, eq + 1, tail) < 0 ? KJIT_ENOMEM : 0;
}

int kj__defs_header(const struct kj__compile_job *job, struct kj__buf *b, char *err, size_t errlen)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < job->n_options; i++)
		if (kj__opt_is_macro(job->options[i]))
			r = add_directive(b, job->options[i], err, errlen);
	return r;
}

int kj__defs_write(const char *dir, const struct kj__compile_job *job, char *path, size_t pathlen, char *err,
		   size_t errlen)
{
	struct kj__buf b = { 0 };
	int r;

	path[0] = '\0';
	for (size_t i = 0; i < job->n_headers; i++)
		if (strcmp(job->headers[i].name, KJ_DEFS_HEADER) == 0) {
			snprintf(err, errlen, "header name '%s' is kjit's own (the job's definitions)", KJ_DEFS_HEADER);
			return KJIT_EINVAL;
		}
	if ((r = kj__defs_header(job, &b, err, errlen)) < 0)
		goto out;
	r = 0;
	if (b.len == 0)
		goto out; /* no definitions: no header, no -include */
	if ((size_t)snprintf(path, pathlen, "%s/%s", dir, KJ_DEFS_HEADER) >= pathlen) {
		snprintf(err, errlen, "temporary path too long");
		r = KJIT_EINTERNAL;
		goto out;
	}
	if ((r = kj__put_file(dir, KJ_DEFS_HEADER, b.p, b.len)) < 0) {
		snprintf(err, errlen, "cannot write the definitions into the temporary directory");
		r = KJIT_EIO;
	}
out:
	if (r < 0)
		path[0] = '\0';
	kj__buf_free(&b);
	return r;
}

int kj__argv_shell_safe(const char *family, const char *const *argv, char *err, size_t errlen)
{
	for (size_t i = 0; argv[i]; i++) {
		int r = kj__shell_safe(family, i == 0 ? "compiler path" : argv[i][0] == '-' ? "option" : "argument",
				       argv[i], err, errlen);
		if (r < 0)
			return r;
	}
	return 0;
}
