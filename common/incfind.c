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
 * the key.  A caller may keep the texts of headers read from an allowed
 * directory (kj__inc_keep: kjitd's loop takes a kept text a stat proves
 * current, after the same realpath and root check).  Also here, for the
 * scan: the sorting and freeing of a result, and the record of macro
 * definitions (#define lines, -D/-U) and its index by name, which
 * common/incmacro.c expands computed includes with (the lexer's phases 1
 * and 2 are common/incsplice.c's).  No state outside the resolver the
 * caller holds.
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

/* The scan's budget ran out: stop (the caller scans again without one). */
static int over_budget(struct resolver *rv)
{
	*rv->over = 1;
	if (rv->err && rv->errlen)
		snprintf(rv->err, rv->errlen, "the include scan is too large for kjitd's loop");
	return KJIT_EBUSY;
}

/* A header the scan may not open (on kjitd's loop): its kept text when
 * the caller has one a stat proves current (kj__inc_keep), else the
 * budget ran out.  1 (*data, *len, pf filled) or KJIT_EBUSY. */
static int kept_or_over(struct resolver *rv, uint8_t **data, size_t *len, struct kj__inc_proof *pf)
{
	if (!pf->from_dir || rv->keep == NULL || rv->keep->kept == NULL ||
	    rv->keep->kept(rv->keep->arg, pf->real, data, len, &pf->st, &pf->read_at) != 1)
		return over_budget(rv);
	pf->kept = 1;
	return 1;
}

/* Reads dir/name if it exists and lies under a root: 1 read (*data, *len),
 * 0 not there, or a negative code with err written.  pf->from_dir set by
 * the caller (dir is an allowed directory, not the tree's folder): with a
 * caller keeping texts (rv->keep), pf gets the real path and the read's
 * proof (kj__read_file_st), or the kept text's. */
static int kj__inc_read_under(struct resolver *rv, const char *dir, const char *name, uint8_t **data, size_t *len,
		     const char *where, size_t line, char open, const char *shown, struct kj__inc_proof *pf)
{
	char path[PATH_MAX], *real = pf->real;
	int n = snprintf(path, sizeof path, "%s/%s", dir, name), r;

	if (rv->budget && rv->probes_left-- == 0) /* a scan on kjitd's loop: only a few looks */
		return over_budget(rv);
	/* realpath runs even for a kept text: a stat follows a link that now
	 * leads outside the roots, where the same file may be hard-linked */
	if (n < 0 || (size_t)n >= sizeof path || realpath(path, real) == NULL)
		return 0; /* not there (or a dangling link) */
	if (!kj__inc_under_a_root(rv, real))
		return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, shown, strlen(shown),
			    "resolves outside the allowed include directories");
	if (rv->budget) /* found: never opened on kjitd's loop */
		return kept_or_over(rv, data, len, pf);
	if (pf->from_dir && rv->keep)
		r = kj__read_file_st(real, KJ_HEADERS_MAX_TOTAL, data, len, &pf->st, &pf->read_at);
	else
		r = kj__read_file(real, KJ_HEADERS_MAX_TOTAL, data, len);
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
		struct kj__inc_proof pf; /* not zeroed whole: 4 KiB a probe; read_under fills what is used */

		pf.from_dir = i > 0;
		pf.kept = 0;
		if (dir == NULL)
			continue;
		if ((r = kj__inc_read_under(rv, dir, name, &data, &len, where, line, open, shown, &pf)) <= 0) {
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
		if ((r = kj__inc_add_resolved(rv, copy, data, len)) < 0)
			return r;
		if (pf.from_dir && rv->keep && rv->keep->seen)
			rv->keep->seen(rv->keep->arg, name, pf.real, rv->out->data[*idx], len, &pf.st, &pf.read_at,
				       pf.kept);
		return 1;
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
		      struct kj__include_tree *tree)
{
	if (tree) { /* a budget: a scan on kjitd's loop (daemon/miss/offhash.c) */
		tree->over = 0;
		rv->budget = tree->probes_max != 0;
		rv->probes_left = tree->probes_max;
		rv->over = &tree->over;
		rv->keep = tree->keep;
	}
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

struct name_sort {
	char *name;
	uint8_t *data;
	size_t len;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name_sort *)a)->name, ((const struct name_sort *)b)->name);
}

int kj__inc_sort_out(struct kj__includes *out)
{
	struct name_sort *v;

	if (out->n < 2)
		return 0;
	v = malloc(out->n * sizeof *v);
	if (v == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < out->n; i++)
		v[i] = (struct name_sort){ out->names[i], out->data[i], out->len[i] };
	qsort(v, out->n, sizeof *v, cmp_name);
	for (size_t i = 0; i < out->n; i++) {
		out->names[i] = v[i].name;
		out->data[i] = v[i].data;
		out->len[i] = v[i].len;
	}
	free(v);
	return 0;
}

int kj__inc_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void kj__includes_free(struct kj__includes *inc)
{
	if (inc == NULL)
		return;
	for (size_t i = 0; i < inc->n; i++) {
		free(inc->names[i]);
		free(inc->data[i]);
	}
	for (size_t i = 0; i < inc->n_missing; i++)
		free(inc->missing[i]);
	free(inc->missing);
	free(inc->names);
	free(inc->data);
	free(inc->len);
	memset(inc, 0, sizeof *inc);
}

static int macro_ident_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}

static int macro_ident_char(unsigned char c)
{
	return macro_ident_start(c) || (c >= '0' && c <= '9');
}

int kj__inc_define(struct resolver *rv, const char *name, size_t name_len, const char *rest, const char *end)
{
	if (rv->n_defs >= KJ_INC_DEFS_MAX)
		return KJIT_ETOOBIG;
	if (rv->n_defs == rv->defs_cap) {
		size_t cap = rv->defs_cap ? rv->defs_cap * 2 : 64;
		struct kj__inc_def *d = realloc(rv->defs, cap * sizeof *d);
		if (d == NULL)
			return KJIT_ENOMEM;
		rv->defs = d;
		rv->defs_cap = cap;
	}
	rv->defs[rv->n_defs++] = (struct kj__inc_def){ name, name_len, rest, end, 0 };
	return 0;
}

/* The -D/-U of one option, or NULL: "-DX", "-D X", "--define-macro=X". */
static const char *macro_opt(const char *o, int *undef)
{
	*undef = 0;
	if (strncmp(o, "--define-macro=", 15) == 0)
		return o + 15;
	if (strncmp(o, "--undefine-macro=", 17) == 0) {
		*undef = 1;
		return o + 17;
	}
	if (o[0] != '-' || (o[1] != 'D' && o[1] != 'U'))
		return NULL;
	*undef = o[1] == 'U';
	o += 2;
	while (*o == ' ')
		o++;
	return o;
}

int kj__inc_define_options(struct resolver *rv)
{
	for (size_t i = 0; i < rv->n_options; i++) {
		int undef, r;
		const char *o = rv->options[i] ? macro_opt(rv->options[i], &undef) : NULL;
		if (o == NULL || !macro_ident_start((unsigned char)*o))
			continue;
		size_t n = 1;
		while (macro_ident_char((unsigned char)o[n]))
			n++;
		if (undef) { /* drops the -D's of that name before it (a #define may still define it) */
			size_t k = 0;
			for (size_t j = 0; j < rv->n_defs; j++)
				if (!(rv->defs[j].name_len == n && memcmp(rv->defs[j].name, o, n) == 0))
					rv->defs[k++] = rv->defs[j];
			rv->n_defs = k;
			continue;
		}
		const char *rest = o + n, *end = rest + strlen(rest);
		if (*rest == '=')
			rest++;
		else if (*rest == '\0')
			rest = "1", end = rest + 1;
		else if (*rest != '(')
			continue; /* the compiler says what is wrong */
		if (*rest == '(') { /* "f(a,b)=body": parse_def skips the '=' after ')' */
			const char *close = strchr(rest, ')');
			if (close == NULL || close[1] != '=')
				continue;
		}
		if ((r = kj__inc_define(rv, o, n, rest, end)) < 0)
			return r;
		rv->defs[rv->n_defs - 1].opt = 1;
	}
	return 0;
}

static int cmp_def(const struct kj__inc_def *a, const struct kj__inc_def *b)
{
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, n);
	return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* The length of a definition's line (its rest up to the first newline;
 * a -D's, all of it): two definitions of one name with the same line are
 * one alternative, not two. */
static size_t def_line(const struct kj__inc_def *d)
{
	const char *nl = d->opt ? NULL : memchr(d->rest, '\n', (size_t)(d->end - d->rest));
	return (size_t)((nl ? nl : d->end) - d->rest);
}

static int same_def(const struct kj__inc_def *a, const struct kj__inc_def *b)
{
	size_t la = def_line(a);
	return cmp_def(a, b) == 0 && la == def_line(b) && memcmp(a->rest, b->rest, la) == 0;
}

int kj__inc_defs_index(struct resolver *rv)
{
	size_t *order, n_order;

	if (rv->order && rv->order_defs == rv->n_defs)
		return 0;
	free(rv->order);
	rv->order = NULL;
	if ((order = malloc((rv->n_defs + 1) * sizeof *order)) == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < rv->n_defs; i++)
		order[i] = i;
	n_order = rv->n_defs;
	/* a merge sort: stable (equal names keep the order they were met in),
	 * and no comparison context to pass (qsort has none) */
	size_t *tmp = malloc((rv->n_defs + 1) * sizeof *tmp);
	if (tmp == NULL) {
		free(order);
		return KJIT_ENOMEM;
	}
	for (size_t w = 1; w < n_order; w *= 2) {
		for (size_t lo = 0; lo < n_order; lo += 2 * w) {
			size_t mid = lo + w < n_order ? lo + w : n_order;
			size_t hi = lo + 2 * w < n_order ? lo + 2 * w : n_order, a = lo, b = mid, k = lo;
			while (a < mid || b < hi)
				tmp[k++] = b >= hi || (a < mid && cmp_def(&rv->defs[order[a]], &rv->defs[order[b]]) <= 0)
						   ? order[a++] : order[b++];
		}
		memcpy(order, tmp, n_order * sizeof *tmp);
	}
	free(tmp);
	size_t k = 0, run = 0; /* run: where the current name's definitions start in the kept ones */
	for (size_t i = 0; i < n_order; i++) {
		const struct kj__inc_def *d = &rv->defs[order[i]];
		if (k == 0 || cmp_def(&rv->defs[order[k - 1]], d) != 0)
			run = k;
		size_t j = run;
		while (j < k && !same_def(&rv->defs[order[j]], d))
			j++;
		if (j == k)
			order[k++] = order[i];
	}
	n_order = k;
	rv->order = order;
	rv->n_order = k;
	rv->order_defs = rv->n_defs;
	return 0;
}

int kj__inc_defs_find(const struct resolver *rv, const char *s, size_t n, size_t *lo, size_t *hi)
{
	struct kj__inc_def key = { .name = s, .name_len = n };
	size_t a = 0, b = rv->n_order;

	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (cmp_def(&rv->defs[rv->order[mid]], &key) < 0)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	while (b < rv->n_order && cmp_def(&rv->defs[rv->order[b]], &key) == 0)
		b++;
	*hi = b > a ? b : a;
	return *hi > *lo;
}

void kj__inc_macros_free(struct resolver *rv)
{
	for (size_t i = 0; i < rv->n_kept; i++)
		free(rv->kept[i]);
	free(rv->kept);
	free(rv->defs);
	free(rv->pending);
	free(rv->order);
	rv->order = NULL;
	rv->kept = NULL;
	rv->defs = NULL;
	rv->pending = NULL;
	rv->n_kept = rv->n_defs = rv->n_pending = 0;
}

/* The arguments of kj__includes_resolve_tree, and the request's header
 * names: a request header no safe #include could name ("/etc/passwd") is a
 * malformed request, whether or not anything includes it.  0,
 * KJIT_EINVAL, or KJIT_EINCLUDE with err written. */
int kj__inc_check_request(const uint8_t *source, size_t source_len, const char *const *req_names,
			  const uint8_t *const *req_data, const size_t *req_len, size_t n_req,
			  const char *const *allowed_dirs, size_t n_dirs, char *err, size_t errlen)
{
	if ((source_len && source == NULL) || (n_req && (!req_names || !req_data || !req_len)) ||
	    (n_dirs && allowed_dirs == NULL))
		return KJIT_EINVAL;
	for (size_t i = 0; i < n_req; i++)
		if (req_names[i] == NULL || (req_len[i] && req_data[i] == NULL))
			return KJIT_EINVAL;
	for (size_t i = 0; i < n_req; i++) {
		const char *why = kj__inc_name_problem(req_names[i], strlen(req_names[i]));
		if (why == NULL && kj__inc_has_dots(req_names[i]))
			why = "\"..\" or \".\" in path";
		if (why) {
			if (err && errlen)
				snprintf(err, errlen, "request header %zu: %s (a header is named as an #include "
					 "names it: a relative path without \"..\")", i + 1, why);
			return KJIT_EINCLUDE;
		}
	}
	return 0;
}

int kj__includes_resolve(const char *source_name, const uint8_t *source, size_t source_len,
			 const char *const *req_names, const uint8_t *const *req_data, const size_t *req_len,
			 size_t n_req, const char *const *allowed_dirs, size_t n_dirs,
			 struct kj__includes *out, char *err, size_t errlen)
{
	return kj__includes_resolve_tree(source_name, source, source_len, req_names, req_data, req_len, n_req,
					 allowed_dirs, n_dirs, NULL, out, err, errlen);
}
