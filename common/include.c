/* include.c: which headers may a source include, and are they allowed?
 *
 * kj__includes_resolve scans the source's #include lines (skipping
 * comments, string and character literals, and splicing backslash-newline
 * as the preprocessor does; seeing every spelling the preprocessor takes:
 * the digraph "%:", blanks, form feeds and comments between '#' and the
 * name and before the operand, and the names __has_include and
 * __has_include_next probe in a live #if/#elif), looks each name up
 * (common/incfind.c: the including file's place in the tree first, ".."
 * resolved against it, then the request's headers and the allowed
 * directories), and follows what it finds, to KJ_INCLUDE_DEPTH_MAX levels.
 * A name that could reach outside those places (absolute, a ".." leaving
 * the tree, control characters, a symlink leaving the roots) is refused,
 * so no file outside them can change a cache key or leak into a compile
 * log.
 *
 * Issue 30: the scan reads as the compilers' lexers do, in each variant
 * they disagree on (a backslash and blanks before a newline, trigraphs:
 * kj__inc_splice; a file holding one is scanned once per variant), the
 * request's --pre-include= headers come first, and a computed include
 * (#include H(cstdint)) is deferred to the end of the scan, then expanded
 * (common/incmacro.c) with every #define of every file read and the
 * request's -D/-U, each name it spells followed like a written one, to a
 * fixed point.  #define lines are gathered only once a computed include is
 * met (collect_defines): a scan without one pays nothing for them.
 *
 * A name found in none of those places is not an error here: it may be the
 * compiler's own header (<cuda_fp16.h>, "hip/hip_runtime.h" as hipify
 * writes it), a system header a full compiler reads (<cstdint>), or a
 * header named in a branch the compiler never takes (#ifndef
 * __CUDACC_RTC__).  Such names are listed in out->missing so the cache key
 * covers them: if one appears later, the key changes.  The compiler's and
 * the system's headers are covered by the compiler's identity instead.
 *
 * The scan is deliberately conservative: it evaluates no #if condition
 * except a literal "#if 0", so both branches of every other conditional are
 * followed.  Seeing one include too many costs at worst a header too many
 * in the key; missing one could serve a stale object.  A quoted include
 * inside a header that lives in a subdirectory ("sub/a.h") is first tried
 * relative to it ("sub/x.h"), as compilers do.  Files are read with plain
 * libc calls (this is not the object store; cache.h's fsys table is for
 * that).  No state outside the call.
 *
 * Speed (issue 25): once past a line's first token, only a newline, '/',
 * '"' or '\'' can change what the scan finds, so it jumps to the next of
 * those sixteen or eight bytes at a time (skip_plain); comments end by
 * memchr.  Every shortcut must leave the result exactly that of the plain
 * byte-by-byte scan, kept in tests/include-ref.c: test-include and
 * fuzz-include compare the two on every input they have.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__) && !defined(KJ_SCAN_NO_SSE2)
#include <emmintrin.h>
#endif

#include "includes.h"
#include "include-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

static int scan(struct resolver *rv, const char *where, const uint8_t *src, size_t len, int depth);

/* Reads the operand of an #include starting at p into buf (NUL-terminated)
 * and *open ('"' or '<').  0; 1 when the operand is not a header name (a
 * computed include); or KJIT_EINCLUDE with err written. */
static int include_operand(struct resolver *rv, const char *where, size_t line, const char *p,
			   const char *end, char *open, char buf[KJ_NAME_MAX + 1])
{
	const char *name, *q;
	size_t n;

	*open = p < end ? *p : '\0';
	if (*open != '"' && *open != '<')
		return 1; /* computed: expanded once the scan has seen every definition */
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

/* Handles one #include of the name buf (open '"' or '<').  A quoted name
 * is looked for next to the including file first, then, like a bracketed
 * one, among the request's headers and the allowed directories.  A name
 * found nowhere is the compiler's business (its own or the system's
 * headers, or an error of its own): it is recorded in out->missing, not
 * refused. */
static int include_name(struct resolver *rv, const char *where, size_t line, char open, const char *buf, int depth)
{
	char rel[2 * KJ_NAME_MAX + 2];
	size_t idx;
	int r = 0, climb = 0, dots = kj__inc_has_dots(buf);

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

/* Keeps a computed include (operand p..op_end) for the end of the scan. */
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

/* Handles one #include whose operand starts at p (after whitespace):
 * a header name now, a computed one (a macro) at the end of the scan. */
static int directive(struct resolver *rv, const char *where, size_t line, const char *p,
		     const char *end, int depth)
{
	char open, buf[KJ_NAME_MAX + 1];
	int r = include_operand(rv, where, line, p, end, &open, buf);

	if (r == 1)
		return defer(rv, where, line, p, end, depth);
	return r < 0 ? r : include_name(rv, where, line, open, buf, depth);
}

/* The blanks of a line: space, tab, form feed, vertical tab, CR. */
static int blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v' || ch == '\r';
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

/* A word of eight bytes with each byte's high bit set where w's byte is c.
 * Exact about whether some byte matches and about the first (lowest
 * addressed) match; a flag above a match may be wrong (the borrow), so no
 * flag after the first one is used. */
static inline uint64_t has_byte(uint64_t w, unsigned char c)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	uint64_t x = w ^ (ones * c);
	return (x - ones) & ~x & highs;
}

/* The index of the first byte from i that the scan must look at when not
 * at the start of a line (a newline, '/', '"' or '\''), or n.  Every other
 * byte there only moves the scan on: a '#' or "%:" starts a directive only
 * at the start of a line, and blanks and other bytes leave "not at the start
 * of a line" as it is.  Sixteen bytes at a time with SSE2 (x86-64), eight
 * in a 64-bit word (elsewhere, and SSE2's last few), then byte by byte;
 * -DKJ_SCAN_NO_SSE2 builds the word path alone, to test it on x86. */
static size_t skip_plain(const char *s, size_t i, size_t n)
{
#if defined(__SSE2__) && !defined(KJ_SCAN_NO_SSE2)
	const __m128i nl = _mm_set1_epi8('\n'), sl = _mm_set1_epi8('/'), dq = _mm_set1_epi8('"'),
		      sq = _mm_set1_epi8('\'');
	while (i + 16 <= n) { /* sixteen bytes at a time; the rest as below */
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		__m128i e = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, nl), _mm_cmpeq_epi8(v, sl)),
					 _mm_or_si128(_mm_cmpeq_epi8(v, dq), _mm_cmpeq_epi8(v, sq)));
		unsigned m = (unsigned)_mm_movemask_epi8(e);
		if (m)
			return i + (size_t)__builtin_ctz(m);
		i += 16;
	}
#endif
	while (i + 8 <= n) {
		uint64_t w, m;
		memcpy(&w, s + i, 8);
		m = has_byte(w, '\n') | has_byte(w, '/') | has_byte(w, '"') | has_byte(w, '\'');
		if (m) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return i + (size_t)__builtin_ctzll(m) / 8; /* the first byte's flag is exact */
#else
			break;
#endif
		}
		i += 8;
	}
	while (i < n && s[i] != '\n' && s[i] != '/' && s[i] != '"' && s[i] != '\'')
		i++;
	return i;
}

/* One file's text being scanned: position, line and the conditional state. */
struct scanner {
	const char *s;
	size_t n, i, line;
	int bol;                /* only whitespace and comments since the last newline */
	int depth_if;           /* #if nesting depth */
	int dead_from;          /* depth_if of the innermost "#if 0" being skipped, or 0 */
};

/* The number of newlines in s[a, b). */
static size_t count_lines(const char *s, size_t a, size_t b)
{
	size_t c = 0;
	const char *p = s + a, *e = s + b;

	while (p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
		c++;
		p++;
	}
	return c;
}

/* Skips a // or block comment at sc->i (a block comment ends at the first
 * "*" "/" after its opening two bytes, or at the end of the text). */
static void skip_comment(struct scanner *sc)
{
	const char *s = sc->s, *q;
	size_t i = sc->i, n = sc->n;

	if (s[i + 1] == '/') {
		q = memchr(s + i, '\n', n - i);
		sc->i = q ? (size_t)(q - s) : n;
		return;
	}
	for (i += 2; i < n; i++) {
		q = memchr(s + i, '*', n - i);
		i = q ? (size_t)(q - s) : n;
		if (i + 1 < n && s[i + 1] == '/')
			break;
	}
	/* a comment spanning lines: still "start of line" after it */
	sc->line += count_lines(s, sc->i + 2, i < n ? i : n);
	i += 2;
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
	return strlen(lit) == n && memcmp(w, lit, n) == 0;
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
		if (s[j] != '_' || strncmp(s + j, word, wl) != 0 || (j > 0 && ident_char(s[j - 1])))
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
		size_t close = p, level = 0; /* a computed operand ends at the matching ')' */
		while (close < n && s[close] != '\n' && !(s[close] == ')' && level == 0))
			level += s[close] == '(' ? 1 : s[close] == ')' ? (size_t)-1 : 0, close++;
		r = directive(rv, where, sc->line, s + p, s + close, depth);
		j = p;
	}
	return r;
}

/* Keeps the #define whose name follows k (a pointer into the text, which
 * scan keeps), for computed includes.  The line itself is scanned on as
 * usual.  0 or a negative code. */
static int record_define(struct resolver *rv, struct scanner *sc, size_t k)
{
	size_t line = sc->line, j = skip_blank(sc, k), e = j;

	sc->line = line; /* the main loop counts a comment's lines when it passes it */
	while (e < sc->n && ident_char(sc->s[e]))
		e++;
	if (e == j || isdigit((unsigned char)sc->s[j]))
		return 0; /* no name: the compiler's error */
	return kj__inc_define(rv, sc->s + j, e - j, sc->s + e, sc->s + sc->n);
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
	if (!dead && !rv->collect && (word_is(s + j, k - j, "if") || word_is(s + j, k - j, "elif")))
		r = has_include_probes(rv, sc, where, depth, k);
	if (!dead && rv->record && word_is(s + j, k - j, "define"))
		return record_define(rv, sc, k);
	if (r < 0 || dead || !(word_is(s + j, k - j, "include") || word_is(s + j, k - j, "include_next") ||
			       word_is(s + j, k - j, "import")))
		return r; /* the rest of the line is scanned as usual */
	k = skip_blank(sc, k);
	sc->i = k;
	if (!rv->collect) /* a pass for the definitions alone skips the line as this one does */
		r = directive(rv, where, sc->line, s + k, s + n, depth);
	while (sc->i < n && s[sc->i] != '\n')
		sc->i++;
	return r;
}

/* Scans one variant of a file's spliced text (sc) for #include lines
 * (and follows them). */
static int scan_text(struct resolver *rv, struct scanner *sc_, const char *where, int depth)
{
	struct scanner sc = *sc_;
	int r = 0;

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
		} else if (blank(ch)) {
			if (!sc.bol)
				sc.i = skip_plain(sc.s, sc.i + 1, sc.n);
			else /* indentation: blanks keep the start of the line */
				while (++sc.i < sc.n && blank(sc.s[sc.i]))
					;
		} else if (ch == '#' && sc.bol) {
			r = hash_line(rv, &sc, where, depth, 1);
		} else if (ch == '%' && sc.i + 1 < sc.n && sc.s[sc.i + 1] == ':' && sc.bol) { /* digraph "%:" */
			r = hash_line(rv, &sc, where, depth, 2);
		} else { /* not at the start of a line now: on to the next byte that matters */
			sc.bol = 0;
			sc.i = skip_plain(sc.s, sc.i + 1, sc.n);
		}
	}
	*sc_ = sc;
	return r;
}

/* Scans one file (each of its lexer variants) for #include lines and
 * follows them.  A variant's text is kept (rv->kept) when a #define or a
 * computed include points into it. */
static int scan(struct resolver *rv, const char *where, const uint8_t *src, size_t len, int depth)
{
	int seen = 0, r = 0;

	for (int v = 0; r == 0 && v <= (KJ_SPLICE_BLANKS | KJ_SPLICE_TRIGRAPHS); v++) {
		struct scanner sc = { .line = 1, .bol = 1 };
		char *text = NULL;
		int s2;
		if (v & ~seen)
			continue; /* this file has nothing that variant reads otherwise */
		if ((r = kj__inc_splice(src, len, v, &text, &sc.n, v == 0 ? &seen : &s2)) < 0)
			return r;
		size_t defs = rv->n_defs, pend = rv->n_pending;
		sc.s = text;
		r = scan_text(rv, &sc, where, depth);
		if (rv->n_defs == defs && rv->n_pending == pend) {
			free(text);
		} else if (rv->n_kept == rv->kept_cap) {
			size_t cap = rv->kept_cap ? rv->kept_cap * 2 : 16;
			char **k = realloc(rv->kept, cap * sizeof *k);
			if (k == NULL) {
				free(text);
				return KJIT_ENOMEM;
			}
			rv->kept = k;
			rv->kept_cap = cap;
			rv->kept[rv->n_kept++] = text;
		} else {
			rv->kept[rv->n_kept++] = text;
		}
	}
	return r;
}

/* kj__inc_expand's callback: one header name a computed include spells. */
static int computed_name(struct resolver *rv, const struct kj__inc_pending *p, char open, const char *name,
			 void *ctx)
{
	(void)ctx;
	const char *why = kj__inc_name_problem(name, strlen(name));
	if (why)
		return kj__inc_fail(rv, KJIT_EINCLUDE, p->where, p->line, open, name, strlen(name), "%s", why);
	return include_name(rv, p->where, p->line, open, name, p->depth);
}

/* The definitions for computed includes, gathered only once one is met
 * (a scan without one records none: recording cost the plain scan a third
 * on directive-heavy text): every file scanned so far is read again for
 * its #define lines alone, and files scanned from now on record theirs as
 * they go.  The source is named source_name. */
static int collect_defines(struct resolver *rv, const char *source_name, const uint8_t *source, size_t len)
{
	int r;

	rv->record = rv->collect = 1;
	r = scan(rv, source_name, source, len, 0);
	for (size_t i = 0; r == 0 && i < rv->out->n; i++)
		r = scan(rv, rv->out->names[i], rv->out->data[i], rv->out->len[i], 0);
	rv->collect = 0;
	return r;
}

/* Expands the computed includes once every file is scanned, with every
 * definition seen; what they find is scanned too (more definitions, more
 * computed includes), so this runs to a fixed point: a round that adds no
 * definition and no computed include ends it. */
static int expand_pending(struct resolver *rv)
{
	size_t done = 0, defs = (size_t)-1;

	while (done < rv->n_pending || defs != rv->n_defs) {
		size_t upto = rv->n_pending, from = defs == rv->n_defs ? done : 0;
		defs = rv->n_defs;
		for (size_t i = from; i < upto; i++) {
			struct kj__inc_pending p = rv->pending[i]; /* the array may move while it runs */
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

/* The request's pre-included files (-include FILE, NVRTC's
 * --pre-include=FILE, both spelled "--pre-include=NAME" in a request): each
 * a header read before the source, as if its first line included it. */
static int pre_includes(struct resolver *rv, const char *source_name)
{
	for (size_t i = 0; i < rv->n_options; i++) {
		const char *o = rv->options[i];
		if (o == NULL || strncmp(o, KJ_PRE_INCLUDE_OPT, strlen(KJ_PRE_INCLUDE_OPT)) != 0)
			continue;
		o += strlen(KJ_PRE_INCLUDE_OPT);
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

int kj__includes_resolve_tree(const char *source_name, const uint8_t *source, size_t source_len,
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
	if ((r = kj__inc_check_request(source, source_len, req_names, req_data, req_len, n_req, allowed_dirs,
					n_dirs, err, errlen)) < 0)
		return r;
	if (tree) {
		rv.options = tree->options;
		rv.n_options = tree->options ? tree->n_options : 0;
	}
	r = kj__inc_open_roots(&rv, allowed_dirs, n_dirs, tree);
	if (r == 0)
		r = kj__inc_define_options(&rv);
	if (r == 0)
		r = pre_includes(&rv, source_name ? source_name : "source");
	if (r == 0)
		r = scan(&rv, source_name ? source_name : "source", source, source_len, 0);
	if (r == 0 && rv.n_pending > 0)
		r = collect_defines(&rv, source_name ? source_name : "source", source, source_len);
	if (r == 0)
		r = expand_pending(&rv);
	if (tree)
		tree->climb = rv.climb;
	if (r == 0)
		r = kj__inc_sort_out(out);
	if (r == 0 && out->n_missing > 1)
		qsort(out->missing, out->n_missing, sizeof *out->missing, kj__inc_cmp_str);
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
