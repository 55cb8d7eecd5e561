/* incfind.c: where an #include's name leads (the half of include
 * resolution that is not the scan: common/include.c scans).
 *
 * Names are tree paths: relative, '/'-separated, without "." or "..".  The
 * tree is the request's headers, plus, for a client, the allowed
 * directories and the tree root's folder on disk (anc, for quoted
 * includes: the source's folder or the ancestor its place in the tree
 * implies).  kj__inc_tree_join resolves ".." against the including file's
 * place and refuses what climbs above the tree root; every file read from
 * disk must lie, symlinks resolved, under one of the roots (the -I
 * directories and the source's folder), so no file outside them can change
 * a key or leak into a log.  Found headers are kept in the caller's
 * kj__includes, each once; names found nowhere are listed as missing for
 * the key.  No state outside the resolver the caller holds.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

/* Writes "where:line: #include <name>: why" into err, with anything not
 * printable in name shown as '?'.  Returns KJIT_EINCLUDE (or code). */
int kj__inc_fail(struct resolver *rv, int code, const char *where, size_t line, char open,
		const char *name, size_t n, const char *fmt, ...)
{
	char shown[KJ_NAME_MAX + 8], why[256];
	size_t k = 0;
	va_list ap;

	for (size_t i = 0; i < n && k < sizeof shown - 4; i++)
		shown[k++] = isprint((unsigned char)name[i]) ? name[i] : '?';
	if (n > k)
		for (int i = 0; i < 3; i++)
			shown[k++] = '.';
	shown[k] = '\0';
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (rv->err && rv->errlen) {
		if (open)
			snprintf(rv->err, rv->errlen, "%s:%zu: #include %c%s%c: %s", where, line, open,
				 shown, open == '<' ? '>' : '"', why);
		else
			snprintf(rv->err, rv->errlen, "%s:%zu: #include %s: %s", where, line, shown, why);
	}
	return code;
}

/* Refuses names that could leave the allowed places.  NULL if fine, else
 * why not. */
const char *kj__inc_name_problem(const char *name, size_t n)
{
	if (n == 0)
		return "empty name";
	if (n > KJ_NAME_MAX)
		return "name too long";
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch < 0x20 || ch == 0x7f)
			return "control character in name";
		if (ch == '\\')
			return "backslash in name";
	}
	if (name[0] == '/')
		return "absolute path";
	return NULL;
}

/* 1 if name has a "." or ".." component. */
int kj__inc_has_dots(const char *name)
{
	for (const char *p = name; *p;) {
		size_t l = strcspn(p, "/");
		if ((l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return 1;
		p += l;
		if (*p == '/')
			p++;
	}
	return 0;
}

/* The tree path of name included from the file at tree path where: the
 * folder of where, then name's components, "." dropped and ".." taking
 * one back, into out (NUL-terminated).  0; 1 when it climbs above the tree
 * root (*climb: by how many levels); -1 when out is too small. */
int kj__inc_tree_join(const char *where, const char *name, char *out, size_t outlen, int *climb)
{
	const char *slash = strrchr(where, '/');
	size_t k = slash ? (size_t)(slash - where) : 0;
	int above = 0;

	if (k + 1 > outlen)
		return -1;
	memcpy(out, where, k);
	for (const char *p = name; *p;) {
		size_t l = strcspn(p, "/");
		if (l == 2 && p[0] == '.' && p[1] == '.') {
			if (k == 0)
				above++;
			while (k > 0 && out[k - 1] != '/')
				k--;
			if (k > 0)
				k--; /* the slash before the dropped component */
		} else if (l > 0 && !(l == 1 && p[0] == '.')) {
			if (above) /* "../../x" once above the root: the rest cannot come back */
				break;
			if (k + (k > 0) + l + 1 > outlen)
				return -1;
			if (k > 0)
				out[k++] = '/';
			memcpy(out + k, p, l);
			k += l;
		}
		p += l;
		if (*p == '/')
			p++;
	}
	out[k] = '\0';
	*climb = above;
	return above ? 1 : k == 0 ? 1 : 0;
}

static size_t kj__inc_find_resolved(const struct kj__includes *out, const char *name)
{
	for (size_t i = 0; i < out->n; i++)
		if (strcmp(out->names[i], name) == 0)
			return i;
	return (size_t)-1;
}

/* Takes ownership of name and data. */
static int kj__inc_add_resolved(struct resolver *rv, char *name, uint8_t *data, size_t len)
{
	struct kj__includes *out = rv->out;

	if (out->n >= KJ_HEADERS_MAX_COUNT || len > KJ_HEADERS_MAX_TOTAL - rv->total) {
		free(name);
		free(data);
		return KJIT_ETOOBIG;
	}
	if (out->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 16;
		char **names = realloc(out->names, cap * sizeof *names);
		if (names)
			out->names = names;
		uint8_t **d = names ? realloc(out->data, cap * sizeof *d) : NULL;
		if (d)
			out->data = d;
		size_t *l = d ? realloc(out->len, cap * sizeof *l) : NULL;
		if (l == NULL) {
			free(name);
			free(data);
			return KJIT_ENOMEM;
		}
		out->len = l;
		rv->cap = cap;
	}
	out->names[out->n] = name;
	out->data[out->n] = data;
	out->len[out->n] = len;
	out->n++;
	rv->total += len;
	return 0;
}

/* 1 if the real path real lies under one of rv's roots. */
static int kj__inc_under_a_root(const struct resolver *rv, const char *real)
{
	for (size_t i = 0; i < rv->n_roots; i++) {
		const char *d = rv->roots[i];
		size_t dl = d ? strlen(d) : 0;
		if (d && strncmp(real, d, dl) == 0 && (real[dl] == '/' || strcmp(d, "/") == 0))
			return 1;
	}
	return 0;
}

/* Reads dir/name if it exists and lies under a root: 1 read (*data, *len),
 * 0 not there, or a negative code with err written. */
static int kj__inc_read_under(struct resolver *rv, const char *dir, const char *name, uint8_t **data, size_t *len,
		     const char *where, size_t line, char open, const char *shown)
{
	char path[PATH_MAX], real[PATH_MAX];
	int n = snprintf(path, sizeof path, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= sizeof path || realpath(path, real) == NULL)
		return 0; /* not there (or a dangling link) */
	if (!kj__inc_under_a_root(rv, real))
		return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, shown, strlen(shown),
			    "resolves outside the allowed include directories");
	int r = kj__read_file(real, KJ_HEADERS_MAX_TOTAL, data, len);
	if (r == -EFBIG)
		return kj__inc_fail(rv, KJIT_ETOOBIG, where, line, open, shown, strlen(shown), "header too large");
	if (r < 0)
		return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, shown, strlen(shown), "cannot read it: %s",
			    strerror(-r));
	return 1;
}

/* Looks name (a tree path) up: the request's headers, then (with use_anc)
 * the tree root's folder on disk, then the allowed directories.  2
 * resolved before (*idx set), 1 found now (added to out, *idx set), 0 not
 * found, or a negative code with err written. */
int kj__inc_lookup(struct resolver *rv, const char *name, size_t *idx, const char *where,
		  size_t line, char open, int use_anc, const char *shown)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int r;

	if ((*idx = kj__inc_find_resolved(rv->out, name)) != (size_t)-1)
		return 2;
	for (size_t i = 0; i < rv->n_req; i++) {
		if (strcmp(rv->req_names[i], name) != 0)
			continue;
		len = rv->req_len[i];
		data = malloc(len + 1);
		char *copy = kj__strdup(name);
		if (data == NULL || copy == NULL) {
			free(data);
			free(copy);
			return KJIT_ENOMEM;
		}
		if (len)
			memcpy(data, rv->req_data[i], len);
		data[len] = '\0';
		*idx = rv->out->n;
		r = kj__inc_add_resolved(rv, copy, data, len);
		return r < 0 ? r : 1;
	}
	for (size_t i = 0; i <= rv->n_dirs; i++) {
		const char *dir = i == 0 ? (use_anc ? rv->anc : NULL) : rv->dirs[i - 1];
		if (dir == NULL)
			continue;
		if ((r = kj__inc_read_under(rv, dir, name, &data, &len, where, line, open, shown)) <= 0) {
			if (r < 0)
				return r;
			continue;
		}
		char *copy = kj__strdup(name);
		if (copy == NULL) {
			free(data);
			return KJIT_ENOMEM;
		}
		*idx = rv->out->n;
		r = kj__inc_add_resolved(rv, copy, data, len);
		return r < 0 ? r : 1;
	}
	return 0;
}

/* Records a name that was looked for and not found, once.  The key covers
 * these names, so a header that appears under one of them later changes
 * the key instead of being silently picked up. */
int kj__inc_add_missing(struct resolver *rv, const char *name)
{
	struct kj__includes *out = rv->out;

	for (size_t i = 0; i < out->n_missing; i++)
		if (strcmp(out->missing[i], name) == 0)
			return 0;
	if (out->n_missing >= KJ_HEADERS_MAX_COUNT)
		return KJIT_ETOOBIG;
	if (out->n_missing == rv->missing_cap) {
		size_t cap = rv->missing_cap ? rv->missing_cap * 2 : 8;
		char **m = realloc(out->missing, cap * sizeof *m);
		if (m == NULL)
			return KJIT_ENOMEM;
		out->missing = m;
		rv->missing_cap = cap;
	}
	if ((out->missing[out->n_missing] = kj__strdup(name)) == NULL)
		return KJIT_ENOMEM;
	out->n_missing++;
	return 0;
}

/* Fills rv's realpaths: the directories, the tree's folder on disk and the
 * roots (the directories and the source's folder).  0 or KJIT_ENOMEM. */
int kj__inc_open_roots(struct resolver *rv, const char *const *allowed_dirs, size_t n_dirs,
		      const struct kj__include_tree *tree)
{
	if ((rv->dirs = calloc(n_dirs + 1, sizeof *rv->dirs)) == NULL ||
	    (rv->roots = calloc(n_dirs + 1, sizeof *rv->roots)) == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < n_dirs; i++) { /* a missing directory holds nothing */
		rv->dirs[i] = allowed_dirs[i] ? realpath(allowed_dirs[i], NULL) : NULL;
		if (rv->dirs[i] && (rv->roots[rv->n_roots++] = kj__strdup(rv->dirs[i])) == NULL)
			return KJIT_ENOMEM;
	}
	if (tree && tree->src_dir && (rv->roots[rv->n_roots] = realpath(tree->src_dir, NULL)) != NULL)
		rv->n_roots++;
	if (tree && tree->anc)
		rv->anc = realpath(tree->anc, NULL);
	return 0;
}
