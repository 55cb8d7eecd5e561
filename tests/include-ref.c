/* include-ref.c: the include scan as it was at main 197e918 (common/include.c
 * before issue 25 made it skip plain bytes), kept verbatim as the reference
 * tests/test-include.c compares the fast scan against on a large corpus.
 * Only the entry point is renamed (ref_includes_resolve_tree) and made
 * static; it shares common/incfind.c with the real scan.  Not built on its
 * own: test-include.c includes it.  Do not "improve" it: it is the oracle.
 *
 * Changed where issue 30 changed the behaviour on purpose, each change
 * written plainly (byte by byte) and marked "issue 30": the lexer's
 * variants (a backslash and blanks before a newline, trigraphs: the file is
 * scanned once per variant it holds), #define lines recorded and computed
 * includes deferred to the end of the scan (recorded as met, where the
 * fast scan gathers them only once a computed include is seen), then
 * expanded by the shared
 * common/incmacro.c (so this checks that the fast scan finds the same
 * definitions and operands; the expansion itself is tested on its own),
 * and pre-included files.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "includes.h"
#include "include-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

static int scan(struct resolver *rv, const char *where, const uint8_t *src, size_t len, int depth);
static int include_name(struct resolver *rv, const char *where, size_t line, char open, const char *buf, int depth);

/* issue 30: a computed include kept for the end of the scan. */
static int defer(struct resolver *rv, const char *where, size_t line, const char *p, const char *op_end, int depth)
{
	if (rv->n_pending >= KJ_HEADERS_MAX_COUNT)
		return kj__inc_fail(rv, KJIT_ETOOBIG, where, line, 0, p, 0, "more than %d computed includes",
				    KJ_HEADERS_MAX_COUNT);
	if (rv->n_pending == rv->pending_cap) {
		size_t cap = rv->pending_cap ? rv->pending_cap * 2 : 8;
		struct kj__inc_pending *v = realloc(rv->pending, cap * sizeof *v);
		if (v == NULL)
			return KJIT_ENOMEM;
		rv->pending = v;
		rv->pending_cap = cap;
	}
	rv->pending[rv->n_pending++] = (struct kj__inc_pending){ where, line, p, op_end, depth };
	return 0;
}

/* Reads the operand of an #include starting at p into buf (NUL-terminated)
 * and *open ('"' or '<').  0, or KJIT_EINCLUDE with err written. */
static int include_operand(struct resolver *rv, const char *where, size_t line, const char *p,
			   const char *end, char *open, char buf[KJ_NAME_MAX + 1])
{
	const char *name, *q;
	size_t n;

	*open = p < end ? *p : '\0';
	if (*open != '"' && *open != '<')
		return 1; /* issue 30: computed, deferred */
	char close_ch = *open == '<' ? '>' : '"';
	name = p + 1;
	for (q = name; q < end && *q != close_ch && *q != '\n'; q++)
		;
	n = (size_t)(q - name);
	if (q >= end || *q != close_ch)
		return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, 0, p, n + 1, "unterminated name");
	const char *why = memchr(name, '\0', n) ? "NUL in name" : kj__inc_name_problem(name, n);
	if (why)
		return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, *open, name, n, "%s", why);
	memcpy(buf, name, n);
	buf[n] = '\0';
	return 0;
}

/* Handles one #include whose operand starts at p (after whitespace).  A
 * quoted name is looked for next to the including file first, then, like a
 * bracketed one, among the request's headers and the allowed directories.
 * A name found nowhere is the compiler's business (its own or the system's
 * headers, or an error of its own): it is recorded in out->missing, not
 * refused. */
static int directive(struct resolver *rv, const char *where, size_t line, const char *p,
		     const char *end, int depth)
{
	char open, buf[KJ_NAME_MAX + 1];
	int r;

	if ((r = include_operand(rv, where, line, p, end, &open, buf)) < 0)
		return r;
	if (r == 1) /* issue 30 */
		return defer(rv, where, line, p, end, depth);
	return include_name(rv, where, line, open, buf, depth);
}

/* issue 30: directive's second half, for computed includes' names too. */
static int include_name(struct resolver *rv, const char *where, size_t line, char open, const char *buf, int depth)
{
	char rel[2 * KJ_NAME_MAX + 2];
	size_t idx;
	int r = 0, climb = 0, dots;

	dots = kj__inc_has_dots(buf);
	if (open == '"') {
		int j = kj__inc_tree_join(where, buf, rel, sizeof rel, &climb);
		if (j < 0 || (j == 0 && strlen(rel) > KJ_NAME_MAX))
			return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, buf, strlen(buf), "name too long");
		if (j > 0) {
			if (climb > rv->climb)
				rv->climb = climb;
			return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, buf, strlen(buf),
				    "\"..\" leaves every include root (the source's folder and the -I directories)");
		}
		r = kj__inc_lookup(rv, rel, &idx, where, line, open, 1, buf);
		if (r == 0 && dots) /* only the including file's place gives ".." a meaning */
			return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, buf, strlen(buf),
				    "\"..\" names no file inside the include roots (the source's folder and the -I "
				    "directories)");
		if (r == 0 && strcmp(rel, buf) != 0)
			r = kj__inc_add_missing(rv, rel);
	} else if (dots) {
		return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, buf, strlen(buf),
			    "\"..\" in path (a <...> name is looked up in the -I directories only)");
	}
	if (r == 0)
		r = kj__inc_lookup(rv, buf, &idx, where, line, open, 0, buf);
	if (r == 0)
		return kj__inc_add_missing(rv, buf);
	if (r < 0 || r == 2)
		return r < 0 ? r : 0; /* seen before: already followed (this also ends cycles) */
	if (depth + 1 > KJ_INCLUDE_DEPTH_MAX)
		return kj__inc_fail(rv, KJIT_EINCLUDE, where, line, open, buf, strlen(buf),
			    "nested more than %d levels deep", KJ_INCLUDE_DEPTH_MAX);
	/* names[idx] stays valid: out only grows, the strings do not move. */
	return scan(rv, rv->out->names[idx], rv->out->data[idx], rv->out->len[idx], depth + 1);
}

/* issue 30: trigraphs replaced (variant 2), then backslash-newline pairs
 * removed, also with blanks between them (variant 1), into a malloc'd,
 * NUL-terminated copy; *seen gets the variants the file holds. */
static int splice(const uint8_t *src0, size_t len0, int v, char **out, size_t *outlen, int *seen)
{
	static const char from[] = "=/'()!<>-", to[] = "#\\^[]|{}~";
	char *p = malloc(len0 + 1);
	uint8_t *src = malloc(len0 + 1);
	size_t k = 0, len = 0;

	if (p == NULL || src == NULL) {
		free(p);
		free(src);
		return KJIT_ENOMEM;
	}
	*seen = 0;
	for (size_t i = 0; i < len0; i++) {
		const char *f = i + 2 < len0 && src0[i] == '?' && src0[i + 1] == '?' && src0[i + 2] ?
					strchr(from, src0[i + 2]) : NULL;
		if (f)
			*seen |= 2;
		if (f && (v & 2)) {
			src[len++] = (uint8_t)to[f - from];
			i += 2;
		} else {
			src[len++] = src0[i];
		}
	}
	for (size_t i = 0; i < len; i++) {
		size_t j = i + 1;
		while (src[i] == '\\' && j < len && (src[j] == ' ' || src[j] == '\t' || src[j] == '\f' || src[j] == '\v'))
			j++;
		int nl = src[i] == '\\' && j < len && src[j] == '\n' ? 1 :
			 src[i] == '\\' && j + 1 < len && src[j] == '\r' && src[j + 1] == '\n' ? 2 : 0;
		if (nl && j > i + 1)
			*seen |= 1;
		if (nl && (j == i + 1 || (v & 1))) {
			i = j + (size_t)nl - 1;
			continue;
		}
		p[k++] = (char)src[i];
	}
	p[k] = '\0';
	free(src);
	*out = p;
	*outlen = k;
	return 0;
}

static int ident_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '_';
}

/* Is the quote at s[i] the start of a raw string literal (R"delim(...)delim")? */
static int raw_string_start(const char *s, size_t i)
{
	if (i == 0 || s[i - 1] != 'R')
		return 0;
	size_t j = i - 1; /* at R; the prefix before it may be u8, u, U, L or nothing */
	if (j == 0 || !ident_char(s[j - 1]))
		return 1;
	if (s[j - 1] == 'L' || s[j - 1] == 'U')
		return j - 1 == 0 || !ident_char(s[j - 2]);
	if (s[j - 1] == 'u')
		return j - 1 == 0 || !ident_char(s[j - 2]);
	if (s[j - 1] == '8' && j >= 2 && s[j - 2] == 'u')
		return j - 2 == 0 || !ident_char(s[j - 3]);
	return 0;
}

/* Is the ' at s[i] a C++14 digit separator (1'000)?  It is if it follows a
 * pp-number character that is not a character-literal prefix. */
static int digit_separator(const char *s, size_t i)
{
	if (i == 0 || !isalnum((unsigned char)s[i - 1]))
		return 0;
	size_t j = i;
	while (j > 0 && (ident_char(s[j - 1]) || s[j - 1] == '.'))
		j--;
	return isdigit((unsigned char)s[j]) || s[j] == '.';
}

/* One file's text being scanned: position, line and the conditional state. */
struct scanner {
	const char *s;
	size_t n, i, line;
	int bol;                /* only whitespace and comments since the last newline */
	int depth_if;           /* #if nesting depth */
	int dead_from;          /* depth_if of the innermost "#if 0" being skipped, or 0 */
};

/* Skips a // or block comment at sc->i. */
static void skip_comment(struct scanner *sc)
{
	const char *s = sc->s;
	size_t i = sc->i, n = sc->n;

	if (s[i + 1] == '/') {
		while (i < n && s[i] != '\n')
			i++;
	} else {
		for (i += 2; i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/'); i++)
			if (s[i] == '\n')
				sc->line++; /* a comment spanning lines: still "start of line" after it */
		i += 2;
	}
	sc->i = i < n ? i : n;
}

/* Skips a raw string literal whose quote is at sc->i. */
static void skip_raw_string(struct scanner *sc)
{
	const char *s = sc->s;
	size_t n = sc->n, d = 0, j = sc->i + 1, i;
	char delim[20];

	while (j < n && s[j] != '(' && d < 16)
		delim[d++] = s[j++];
	sc->bol = 0;
	if (j >= n || s[j] != '(') {
		sc->i = j; /* malformed: let the compiler complain */
		return;
	}
	delim[d] = '\0';
	for (i = j + 1; i < n; i++) {
		if (s[i] == '\n')
			sc->line++;
		if (s[i] == ')' && i + 1 + d < n && strncmp(s + i + 1, delim, d) == 0 && s[i + 1 + d] == '"') {
			i += d + 2;
			break;
		}
	}
	sc->i = i < n ? i : n;
}

/* Skips a string or character literal: it ends at the closing quote or,
 * unterminated, at the newline. */
static void skip_quoted(struct scanner *sc)
{
	const char *s = sc->s;
	char ch = s[sc->i];
	size_t i, n = sc->n;

	for (i = sc->i + 1; i < n && s[i] != ch && s[i] != '\n'; i++)
		if (s[i] == '\\' && i + 1 < n && s[i + 1] != '\n')
			i++;
	if (i < n && s[i] == ch)
		i++;
	sc->i = i;
	sc->bol = 0;
}

/* Is the rest of the line from p a literal "0" (an "#if 0")?  Comments
 * after it are not looked at: anything else keeps the group live. */
static int is_if_zero(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= end || *p != '0')
		return 0;
	p++;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p >= end || *p == '\n' || (*p == '/' && p + 1 < end && (p[1] == '/' || p[1] == '*'));
}

static int word_is(const char *w, size_t n, const char *lit)
{
	return strlen(lit) == n && strncmp(w, lit, n) == 0;
}

/* Tracks #if nesting: only a group opened by a literal "#if 0" is dead (its
 * #else or #elif branch is live again); every other condition is treated as
 * possibly true, so both of its branches are scanned.  Returns 1 while the
 * current line is in a dead group. */
static int conditional(struct scanner *sc, const char *w, size_t wn, const char *rest)
{
	if (word_is(w, wn, "if") || word_is(w, wn, "ifdef") || word_is(w, wn, "ifndef")) {
		sc->depth_if++;
		if (sc->dead_from == 0 && word_is(w, wn, "if") && is_if_zero(rest, sc->s + sc->n))
			sc->dead_from = sc->depth_if;
	} else if (word_is(w, wn, "else") || word_is(w, wn, "elif") || word_is(w, wn, "elifdef") ||
		   word_is(w, wn, "elifndef")) {
		if (sc->dead_from == sc->depth_if)
			sc->dead_from = 0;
	} else if (word_is(w, wn, "endif") && sc->depth_if > 0) {
		if (sc->dead_from == sc->depth_if)
			sc->dead_from = 0;
		sc->depth_if--;
	}
	return sc->dead_from != 0;
}

/* Handles the directive whose '#' is at sc->i and moves past its line. */
/* Skips what the preprocessor reads as one space from j: blanks (space,
 * tab, form feed, vertical tab, CR) and block comments, which may span
 * lines (sc->line counts them).  Backslash-newlines are already spliced.
 * Returns the index of the next token. */
static size_t skip_blank(struct scanner *sc, size_t j)
{
	const char *s = sc->s;
	size_t n = sc->n;

	for (;;) {
		while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f' || s[j] == '\v' || s[j] == '\r'))
			j++;
		if (!(j + 1 < n && s[j] == '/' && s[j + 1] == '*'))
			return j;
		for (j += 2; j < n && !(s[j] == '*' && j + 1 < n && s[j + 1] == '/'); j++)
			if (s[j] == '\n')
				sc->line++;
		j = j + 2 <= n ? j + 2 : n;
	}
}

/* __has_include("x.h") / __has_include_next(<x.h>) in a live #if or #elif
 * line from k: the compiler probes those names, so each is resolved (and
 * refused) like an #include; a found header is followed, erring on the
 * side of one header too many in the key.  0 or a negative code. */
static int has_include_probes(struct resolver *rv, struct scanner *sc, const char *where, int depth, size_t k)
{
	static const char word[] = "__has_include";
	const char *s = sc->s;
	size_t n = sc->n, wl = sizeof word - 1;
	int r = 0;

	for (size_t j = k; r == 0 && j + wl < n && s[j] != '\n'; j++) {
		if (strncmp(s + j, word, wl) != 0 || (j > 0 && ident_char(s[j - 1])))
			continue;
		size_t p = j + wl;
		if (strncmp(s + p, "_next", 5) == 0)
			p += 5;
		if (ident_char(s[p]))
			continue;
		p = skip_blank(sc, p);
		if (p >= n || s[p] != '(') /* "defined __has_include": no operand */
			continue;
		p = skip_blank(sc, p + 1);
		size_t close = p; /* issue 30: a computed operand ends at the matching ')' */
		for (int level = 0; close < n && s[close] != '\n'; close++) {
			if (s[close] == ')' && level == 0)
				break;
			level += s[close] == '(' ? 1 : s[close] == ')' ? -1 : 0;
		}
		r = directive(rv, where, sc->line, s + p, s + close, depth);
		j = p;
	}
	return r;
}

/* Handles the directive whose introducer ('#', or the digraph "%:", hlen
 * bytes) is at sc->i and moves past its line.  Comments and blanks may
 * stand between the introducer and the directive's name, and between the
 * name and its operand, as the preprocessor allows. */
static int hash_line(struct resolver *rv, struct scanner *sc, const char *where, int depth, size_t hlen)
{
	const char *s = sc->s;
	size_t n = sc->n, j = skip_blank(sc, sc->i + hlen);
	int r = 0;

	size_t k = j;
	while (k < n && ident_char(s[k]))
		k++;
	sc->bol = 0;
	sc->i = k;
	int dead = conditional(sc, s + j, k - j, s + k);
	if (!dead && (word_is(s + j, k - j, "if") || word_is(s + j, k - j, "elif")))
		r = has_include_probes(rv, sc, where, depth, k);
	if (!dead && word_is(s + j, k - j, "define")) { /* issue 30: kept for computed includes */
		size_t line = sc->line, d = skip_blank(sc, k), e = d;
		sc->line = line;
		while (e < n && ident_char(s[e]))
			e++;
		if (e == d || isdigit((unsigned char)s[d]))
			return 0;
		return kj__inc_define(rv, s + d, e - d, s + e, s + n);
	}
	if (r < 0 || dead || !(word_is(s + j, k - j, "include") || word_is(s + j, k - j, "include_next") ||
				       word_is(s + j, k - j, "import")))
		return r; /* the rest of the line is scanned as usual */
	k = skip_blank(sc, k);
	sc->i = k;
	r = directive(rv, where, sc->line, s + k, s + n, depth);
	while (sc->i < n && s[sc->i] != '\n')
		sc->i++;
	return r;
}

/* Scans one file's text for #include lines (and follows them); issue 30:
 * once per lexer variant the file holds, each text kept when a definition
 * or a computed include points into it. */
static int scan_one(struct resolver *rv, const char *where, const uint8_t *src, size_t len, int depth, int v,
		    int *seen);

static int scan(struct resolver *rv, const char *where, const uint8_t *src, size_t len, int depth)
{
	int seen = 0, r = scan_one(rv, where, src, len, depth, 0, &seen);

	for (int v = 1; r == 0 && v <= 3; v++) {
		int s2;
		if ((v & ~seen) == 0)
			r = scan_one(rv, where, src, len, depth, v, &s2);
	}
	return r;
}

static int scan_one(struct resolver *rv, const char *where, const uint8_t *src, size_t len, int depth, int v,
		    int *seen)
{
	struct scanner sc = { .line = 1, .bol = 1 };
	char *text = NULL;
	int r;

	if ((r = splice(src, len, v, &text, &sc.n, seen)) < 0)
		return r;
	size_t defs = rv->n_defs, pend = rv->n_pending;
	sc.s = text;
	while (r == 0 && sc.i < sc.n) {
		char ch = sc.s[sc.i];
		if (ch == '\n') {
			sc.line++;
			sc.bol = 1;
			sc.i++;
		} else if (ch == '/' && sc.i + 1 < sc.n && (sc.s[sc.i + 1] == '/' || sc.s[sc.i + 1] == '*')) {
			skip_comment(&sc);
		} else if (ch == '"' && raw_string_start(sc.s, sc.i)) {
			skip_raw_string(&sc);
		} else if (ch == '"' || (ch == '\'' && !digit_separator(sc.s, sc.i))) {
			skip_quoted(&sc);
		} else if (ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v' || ch == '\r') {
			sc.i++;
		} else if (ch == '#' && sc.bol) {
			r = hash_line(rv, &sc, where, depth, 1);
		} else if (ch == '%' && sc.i + 1 < sc.n && sc.s[sc.i + 1] == ':' && sc.bol) { /* digraph "%:" */
			r = hash_line(rv, &sc, where, depth, 2);
		} else {
			sc.bol = 0;
			sc.i++;
		}
	}
	if (rv->n_defs != defs || rv->n_pending != pend) {
		char **kept = realloc(rv->kept, (rv->n_kept + 1) * sizeof *kept);
		if (kept == NULL) {
			free(text);
			return KJIT_ENOMEM;
		}
		rv->kept = kept;
		rv->kept[rv->n_kept++] = text;
		rv->kept_cap = rv->n_kept;
	} else {
		free(text);
	}
	return r;
}

/* issue 30: each name a computed include spells. */
static int computed_name(struct resolver *rv, const struct kj__inc_pending *p, char open, const char *name,
			 void *ctx)
{
	(void)ctx;
	const char *why = kj__inc_name_problem(name, strlen(name));
	if (why)
		return kj__inc_fail(rv, KJIT_EINCLUDE, p->where, p->line, open, name, strlen(name), "%s", why);
	return include_name(rv, p->where, p->line, open, name, p->depth);
}

/* issue 30: computed includes, to a fixed point, and pre-included files. */
static int expand_pending(struct resolver *rv)
{
	size_t done = 0, defs = (size_t)-1;

	while (done < rv->n_pending || defs != rv->n_defs) {
		size_t upto = rv->n_pending, from = defs == rv->n_defs ? done : 0;
		defs = rv->n_defs;
		for (size_t i = from; i < upto; i++) {
			struct kj__inc_pending p = rv->pending[i];
			int r = kj__inc_expand(rv, &p, computed_name, NULL);
			if (r < 0)
				return r;
		}
		done = upto;
		if (defs == rv->n_defs && done == rv->n_pending)
			break;
	}
	return 0;
}

static int pre_includes(struct resolver *rv, const char *source_name)
{
	size_t pl = strlen(KJ_PRE_INCLUDE_OPT);

	for (size_t i = 0; i < rv->n_options; i++) {
		const char *o = rv->options[i];
		if (o == NULL || strncmp(o, KJ_PRE_INCLUDE_OPT, pl) != 0)
			continue;
		o += pl;
		const char *why = kj__inc_name_problem(o, strlen(o));
		if (why == NULL && kj__inc_has_dots(o))
			why = "\"..\" or \".\" in path";
		if (why)
			return kj__inc_fail(rv, KJIT_EINCLUDE, source_name, 0, '<', o, strlen(o),
					    "%s (a pre-included file is named as a request header)", why);
		int r = include_name(rv, source_name, 0, '<', o, 0);
		if (r < 0)
			return r;
	}
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

static int sort_out(struct kj__includes *out)
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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ref_includes_resolve_tree(const char *source_name, const uint8_t *source, size_t source_len,
				      const char *const *req_names, const uint8_t *const *req_data, const size_t *req_len,
				      size_t n_req, const char *const *allowed_dirs, size_t n_dirs,
				      struct kj__include_tree *tree, struct kj__includes *out, char *err, size_t errlen)
{
	struct resolver rv = {
		.req_names = req_names, .req_data = req_data, .req_len = req_len, .n_req = n_req,
		.n_dirs = n_dirs, .out = out, .err = err, .errlen = errlen,
	};
	int r;

	memset(out, 0, sizeof *out);
	if (err && errlen)
		err[0] = '\0';
	if ((source_len && source == NULL) || (n_req && (!req_names || !req_data || !req_len)) ||
	    (n_dirs && allowed_dirs == NULL))
		return KJIT_EINVAL;
	for (size_t i = 0; i < n_req; i++)
		if (req_names[i] == NULL || (req_len[i] && req_data[i] == NULL))
			return KJIT_EINVAL;
	/* A request header no safe #include could name ("/etc/passwd") is a
	 * malformed request, whether or not anything includes it. */
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
	if (tree) { /* issue 30 */
		rv.options = tree->options;
		rv.n_options = tree->options ? tree->n_options : 0;
	}
	rv.record = 1; /* the reference records every #define as it goes */
	r = kj__inc_open_roots(&rv, allowed_dirs, n_dirs, tree);
	if (r == 0)
		r = kj__inc_define_options(&rv);
	if (r == 0)
		r = pre_includes(&rv, source_name ? source_name : "source");
	if (r == 0)
		r = scan(&rv, source_name ? source_name : "source", source, source_len, 0);
	if (r == 0)
		r = expand_pending(&rv);
	if (tree)
		tree->climb = rv.climb;
	if (r == 0)
		r = sort_out(out);
	if (r == 0 && out->n_missing > 1)
		qsort(out->missing, out->n_missing, sizeof *out->missing, cmp_str);
	if (r < 0) {
		if (err && errlen && err[0] == '\0')
			snprintf(err, errlen, "resolving includes: %s", kjit_strerror(r));
		kj__includes_free(out);
	}
	for (size_t i = 0; rv.dirs && i < n_dirs; i++)
		free(rv.dirs[i]);
	for (size_t i = 0; rv.roots && i < rv.n_roots; i++)
		free(rv.roots[i]);
	free(rv.dirs);
	free(rv.roots);
	free(rv.anc);
	kj__inc_macros_free(&rv);
	return r;
}
