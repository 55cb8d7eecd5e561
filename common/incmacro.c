/* incmacro.c: computed includes (`#define H(x) <cuda/std/x>` then
 * `#include H(cstdint)`), expanded as the preprocessor does, with every
 * definition the scan could see (the third half of include resolution:
 * common/include.c scans, common/incfind.c looks names up).
 *
 * The scan evaluates no #if, so it cannot know which definition of a
 * macro is live where an include uses it.  It records every #define of
 * every file it reads (a pointer into the file's kept text, no copy) and
 * the request's -D/-U options, defers each computed include to the end of
 * the scan, and then expands it with each definition of each macro it
 * meets, in every combination: each header name one of those expansions
 * spells is looked up (found: sent and keyed; not found: keyed as
 * missing).  That over-approximates what the compiler reads and never
 * under-approximates it.  An expansion that spells no header name is one
 * the compiler would reject; when none spells one (a macro defined in no
 * file the scan read) the include is refused, naming it.
 *
 * Expansion follows C11 6.10.3: object-like and function-like macros,
 * arguments fully expanded before substitution except beside # and ##,
 * stringizing, token pasting (with placemarkers), __VA_ARGS__ (and GNU's
 * named "args..."), and hide sets (a macro is not expanded again inside its
 * own expansion).  Not modelled: __VA_OPT__, a macro undefined at the
 * include's point while defined elsewhere (that spells the name
 * unexpanded: a missing name at worst, which only the compiler's identity
 * could cover), predefined macros of the compilers (no real code computes
 * an include from them).  Bounds: KJ_INC_EXPANSIONS_MAX names and
 * KJ_INC_EXPAND_STEPS_MAX replacements per include.  No state outside the
 * resolver the caller holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "include-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

enum { T_ID, T_NUM, T_STR, T_PUNCT, T_PM /* placemarker: an empty argument beside ## */ };

struct tok {
	const char *s;
	size_t n;
	uint64_t hs;    /* hide set: the macros (bits of struct mx's hs table) that made it */
	unsigned char kind;
	unsigned char ws;    /* whitespace before it */
	unsigned char paste; /* a ## of a macro's body (not one an argument brought) */
};

struct tseq {
	struct tok *v;
	size_t n, cap;
};

struct tlist {
	struct tseq *v;
	size_t n, cap;
};

/* One expansion run: the definitions' index and what it allocated. */
struct mx {
	struct resolver *rv;
	const char *hs_name[64];
	size_t hs_len[64];
	int n_hs;
	char **arena;        /* spellings made by # and ## */
	size_t n_arena, arena_cap;
	long steps;
	int overflow;        /* 1: too many steps or names, 2: over 64 macros in one include */
};

/* A parsed definition. */
struct def {
	int func;            /* function-like */
	int variadic;
	size_t n_params;
	struct tok params[64];
	struct tseq body;
};

static int ident_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}

static int ident_char(unsigned char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

/* Is s (n bytes) a string or character literal's prefix? */
static int string_prefix(const char *s, size_t n)
{
	static const char *const pre[] = { "L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R" };

	for (size_t i = 0; i < KJ_ARRAY_SIZE(pre); i++)
		if (strlen(pre[i]) == n && memcmp(pre[i], s, n) == 0)
			return 1;
	return 0;
}

static int push(struct tseq *q, struct tok t)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct tok *v = realloc(q->v, cap * sizeof *v);
		if (v == NULL)
			return KJIT_ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	q->v[q->n++] = t;
	return 0;
}

/* Skips blanks and comments from p (not a newline outside a comment). */
static const char *skip_ws(const char *p, const char *end, int *ws)
{
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\f' || *p == '\v' || *p == '\r'))
			p++, *ws = 1;
		if (p + 1 < end && p[0] == '/' && p[1] == '*') {
			for (p += 2; p + 1 < end && !(p[0] == '*' && p[1] == '/'); p++)
				;
			p = p + 2 <= end ? p + 2 : end;
			*ws = 1;
		} else if (p + 1 < end && p[0] == '/' && p[1] == '/') {
			return end; /* to the end of the line: nothing more */
		} else {
			return p;
		}
	}
}

/* Lexes p..end (stopping at a newline outside a comment) into q. */
static int lex(const char *p, const char *end, struct tseq *q)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	int r = 0, ws = 0;

	if (nl && !(memchr(p, '/', (size_t)(nl - p)))) /* no comment can hide the newline */
		end = nl;
	while (r == 0) {
		p = skip_ws(p, end, &ws);
		if (p >= end || *p == '\n')
			break;
		const char *s = p;
		int kind = T_PUNCT;
		unsigned char c = (unsigned char)*p;
		if (ident_start(c)) {
			while (p < end && ident_char((unsigned char)*p))
				p++;
			kind = T_ID;
			if (p < end && (*p == '"' || *p == '\'') && string_prefix(s, (size_t)(p - s))) /* L"", u8'' */
				kind = T_STR;
		} else if ((c >= '0' && c <= '9') || (c == '.' && p + 1 < end && p[1] >= '0' && p[1] <= '9')) {
			for (p++; p < end; p++) {
				if ((*p == '+' || *p == '-') && strchr("eEpP", p[-1]))
					continue;
				if (!ident_char((unsigned char)*p) && *p != '.' && *p != '\'')
					break;
			}
			kind = T_NUM;
		} else if (c == '#' && p + 1 < end && p[1] == '#') {
			s = "##", p += 2;
		} else if (c == '%' && p + 3 < end && memcmp(p, "%:%:", 4) == 0) {
			s = "##", p += 4;
		} else if (c == '%' && p + 1 < end && p[1] == ':') {
			s = "#", p += 2;
		} else if (c != '"' && c != '\'') {
			p++;
		}
		if (p < end && (*p == '"' || *p == '\'') && (kind == T_STR || p == s)) {
			char q0 = *p++;
			while (p < end && *p != q0 && *p != '\n')
				p += *p == '\\' && p + 1 < end ? 2 : 1;
			p = p < end && *p == q0 ? p + 1 : p;
			kind = T_STR;
		}
		size_t n = s[0] == '#' && (s[1] == '#' || s[1] == '\0') ? strlen(s) : (size_t)(p - s);
		r = push(q, (struct tok){ .s = s, .n = n, .kind = (unsigned char)kind, .ws = (unsigned char)ws });
		ws = 0;
	}
	return r;
}

static int is_punct(const struct tok *t, const char *what)
{
	return t->kind == T_PUNCT && t->n == strlen(what) && memcmp(t->s, what, t->n) == 0;
}

/* A spelling made by # or ##, kept until the run ends. */
static char *arena_alloc(struct mx *m, size_t n)
{
	if (m->n_arena == m->arena_cap) {
		size_t cap = m->arena_cap ? m->arena_cap * 2 : 16;
		char **a = realloc(m->arena, cap * sizeof *a);
		if (a == NULL)
			return NULL;
		m->arena = a;
		m->arena_cap = cap;
	}
	char *p = malloc(n + 1);
	if (p)
		m->arena[m->n_arena++] = p;
	return p;
}

/* The hide-set bit of macro (s, n), or -1 past 64 distinct macros. */
static int hs_bit(struct mx *m, const char *s, size_t n)
{
	for (int i = 0; i < m->n_hs; i++)
		if (m->hs_len[i] == n && memcmp(m->hs_name[i], s, n) == 0)
			return i;
	if (m->n_hs == 64)
		return -1;
	m->hs_name[m->n_hs] = s;
	m->hs_len[m->n_hs] = n;
	return m->n_hs++;
}

/* Parses a definition's parameters and body.  0, 1 malformed (ignored:
 * the compiler rejects it), or KJIT_ENOMEM. */
static int parse_def(const struct kj__inc_def *d, struct def *out)
{
	const char *p = d->rest, *end = d->end;

	memset(out, 0, sizeof *out);
	if (p < end && *p == '(') {
		struct tseq q = { 0 };
		const char *close = p;
		while (close < end && *close != ')' && *close != '\n')
			close++;
		if (close >= end || *close != ')')
			return 1;
		if (lex(p + 1, close, &q) < 0)
			return KJIT_ENOMEM;
		out->func = 1;
		for (size_t i = 0; i < q.n; i++) {
			struct tok *t = &q.v[i];
			if (out->n_params == 64) { /* more than the arguments a call may have: never called */
				free(q.v);
				return 1;
			}
			if (t->kind == T_ID) {
				out->params[out->n_params++] = *t;
			} else if (is_punct(t, ".") && i + 2 < q.n && is_punct(t + 1, ".") && is_punct(t + 2, ".")) {
				if (i == 0 || q.v[i - 1].kind != T_ID || is_punct(&q.v[i - 1], ","))
					out->params[out->n_params++] = (struct tok){ .s = "__VA_ARGS__", .n = 11, .kind = T_ID };
				out->variadic = 1;
				i += 2;
			} else if (!is_punct(t, ",")) {
				free(q.v);
				return 1;
			}
		}
		free(q.v);
		p = close + 1;
		if (d->opt && p < end && *p == '=') /* -D'f(a,b)=body' */
			p++;
	}
	return lex(p, end, &out->body) < 0 ? KJIT_ENOMEM : 0;
}

static int param_of(const struct def *d, const struct tok *t)
{
	if (!d->func || t->kind != T_ID)
		return -1;
	for (size_t i = 0; i < d->n_params; i++)
		if (d->params[i].n == t->n && memcmp(d->params[i].s, t->s, t->n) == 0)
			return (int)i;
	return -1;
}

static void tlist_free(struct tlist *l)
{
	for (size_t i = 0; l && i < l->n; i++)
		free(l->v[i].v);
	if (l)
		free(l->v);
}

static int tlist_add(struct mx *m, struct tlist *l, const struct tseq *q)
{
	struct tseq c = { 0 };

	if (l->n >= KJ_INC_EXPANSIONS_MAX) {
		m->overflow = 1;
		return KJIT_EINCLUDE;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4;
		struct tseq *v = realloc(l->v, cap * sizeof *v);
		if (v == NULL)
			return KJIT_ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (q->n && (c.v = malloc(q->n * sizeof *c.v)) == NULL)
		return KJIT_ENOMEM;
	if (q->n)
		memcpy(c.v, q->v, q->n * sizeof *c.v);
	c.n = c.cap = q->n;
	l->v[l->n++] = c;
	return 0;
}

static int expand(struct mx *m, const struct tseq *in, size_t pos, struct tlist *out, int depth);

/* A call's arguments: the ranges [a[k], b[k]) of in, from the '(' at i. *
 * The index after ')' into *after; -1 when unbalanced or too many. */
static int split_args(const struct tseq *in, size_t i, size_t a[65], size_t b[65], size_t *n, size_t *after)
{
	int level = 0;

	*n = 0;
	a[0] = i + 1;
	for (size_t j = i + 1; j < in->n; j++) {
		const struct tok *t = &in->v[j];
		if (is_punct(t, "("))
			level++;
		else if (is_punct(t, ")") && level-- == 0) {
			b[(*n)++] = j;
			*after = j + 1;
			return 0;
		} else if (is_punct(t, ",") && level == 0) {
			if (*n >= 64)
				return -1;
			b[(*n)++] = j;
			a[*n] = j + 1;
		}
	}
	return -1;
}

/* The spelling of tokens [a, b) of in as # makes it: one string literal. */
static int stringize(struct mx *m, const struct tseq *in, size_t a, size_t b, struct tok *out)
{
	size_t n = 2;
	for (size_t j = a; j < b; j++)
		n += 2 * in->v[j].n + 1;
	char *s = arena_alloc(m, n), *w = s;
	if (s == NULL)
		return KJIT_ENOMEM;
	*w++ = '"';
	for (size_t j = a; j < b; j++) {
		const struct tok *t = &in->v[j];
		if (j > a && t->ws)
			*w++ = ' ';
		for (size_t k = 0; k < t->n; k++) {
			if (t->kind == T_STR && (t->s[k] == '"' || t->s[k] == '\\'))
				*w++ = '\\';
			*w++ = t->s[k];
		}
	}
	*w++ = '"';
	*out = (struct tok){ .s = s, .n = (size_t)(w - s), .kind = T_STR };
	return 0;
}

/* Pastes the ## of q (placemarkers as empty), in place. */
static int paste_all(struct mx *m, struct tseq *q)
{
	size_t k = 0;

	for (size_t j = 0; j < q->n; j++) {
		if (q->v[j].paste && k > 0 && j + 1 < q->n) {
			struct tok *l = &q->v[k - 1], *rt = &q->v[j + 1];
			char *s = arena_alloc(m, l->n + rt->n);
			if (s == NULL)
				return KJIT_ENOMEM;
			memcpy(s, l->s, l->n);
			memcpy(s + l->n, rt->s, rt->n);
			unsigned char c = l->n ? (unsigned char)s[0] : rt->n ? (unsigned char)s[0] : 0;
			int kind = l->n + rt->n == 0 ? T_PM : ident_start(c) ? T_ID : (c >= '0' && c <= '9') ? T_NUM
				   : c == '"' ? T_STR : T_PUNCT;
			*l = (struct tok){ .s = s, .n = l->n + rt->n, .hs = l->hs, .kind = (unsigned char)kind, .ws = l->ws };
			j++;
			continue;
		}
		q->v[k++] = q->v[j];
	}
	q->n = k;
	size_t w = 0; /* placemarkers go */
	for (size_t j = 0; j < q->n; j++)
		if (q->v[j].kind != T_PM)
			q->v[w++] = q->v[j];
	q->n = w;
	return 0;
}

/* Builds the replacement of d at in[i] (arguments at a/b, each expanded
 * argument chosen as alt[k]) and expands on from it. */
static int substitute(struct mx *m, const struct tseq *in, size_t i, size_t after, const struct def *d,
		      uint64_t hs, const size_t *a, const size_t *b, const struct tseq *const *alt,
		      struct tlist *out, int depth)
{
	struct tseq q = { 0 };
	int r = 0;

	for (size_t j = 0; r == 0 && j < i; j++)
		r = push(&q, in->v[j]);
	for (size_t j = 0; r == 0 && j < d->body.n; j++) {
		struct tok t = d->body.v[j];
		int p = param_of(d, &t);
		if (is_punct(&t, "#") && d->func && j + 1 < d->body.n && (p = param_of(d, &d->body.v[j + 1])) >= 0) {
			struct tok s;
			if ((r = stringize(m, in, a[p], b[p], &s)) == 0) {
				s.ws = t.ws, s.hs = hs;
				r = push(&q, s);
			}
			j++;
			continue;
		}
		if (p < 0) {
			t.paste = is_punct(&t, "##");
			t.hs |= hs;
			r = push(&q, t);
			continue;
		}
		int raw = (j > 0 && d->body.v[j - 1].kind == T_PUNCT && is_punct(&d->body.v[j - 1], "##")) ||
			  (j + 1 < d->body.n && is_punct(&d->body.v[j + 1], "##"));
		size_t n0 = q.n;
		if (raw) {
			for (size_t k = a[p]; r == 0 && k < b[p]; k++)
				r = push(&q, in->v[k]);
			if (r == 0 && q.n == n0)
				r = push(&q, (struct tok){ .s = "", .kind = T_PM });
		} else {
			for (size_t k = 0; r == 0 && k < alt[p]->n; k++)
				r = push(&q, alt[p]->v[k]);
		}
		for (size_t k = n0; k < q.n; k++)
			q.v[k].hs |= hs;
		if (q.n > n0)
			q.v[n0].ws = t.ws;
	}
	if (r == 0)
		r = paste_all(m, &q);
	for (size_t j = after; r == 0 && j < in->n; j++)
		r = push(&q, in->v[j]);
	if (r == 0)
		r = expand(m, &q, i, out, depth + 1);
	free(q.v);
	return r;
}

/* Every combination of the arguments' expansions, from argument k on. */
static int combine(struct mx *m, const struct tseq *in, size_t i, size_t after, const struct def *d, uint64_t hs,
		   const size_t *a, const size_t *b, struct tlist *alts, const struct tseq **pick, size_t k,
		   struct tlist *out, int depth)
{
	if (k == d->n_params)
		return substitute(m, in, i, after, d, hs, a, b, pick, out, depth);
	for (size_t j = 0; j < alts[k].n; j++) {
		pick[k] = &alts[k].v[j];
		int r = combine(m, in, i, after, d, hs, a, b, alts, pick, k + 1, out, depth);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A function-like d called at in[i]: 0 (expanded on), 1 not a call here,
 * or a negative code. */
static int call(struct mx *m, const struct tseq *in, size_t i, const struct def *d, uint64_t hs,
		struct tlist *out, int depth)
{
	size_t a[65], b[65], n = 0, after = 0;
	struct tlist alts[64];
	const struct tseq *pick[64];
	int r = 0;

	if (i + 1 >= in->n || !is_punct(&in->v[i + 1], "(") || split_args(in, i + 1, a, b, &n, &after) < 0)
		return 1;
	if (d->variadic && n > d->n_params) { /* the variadic parameter takes the rest, commas and all */
		b[d->n_params - 1] = b[n - 1];
		n = d->n_params;
	}
	if (d->variadic && n + 1 == d->n_params) { /* f(x) of f(x, ...): an empty variadic argument */
		a[n] = b[n] = b[n - 1];
		n++;
	}
	if (n == 1 && d->n_params == 0 && a[0] == b[0])
		n = 0;
	if (n != d->n_params)
		return 1; /* the compiler says "wrong number of arguments" */
	hs |= in->v[i].hs;
	memset(alts, 0, sizeof alts);
	for (size_t k = 0; r == 0 && k < n; k++) {
		struct tseq arg = { .v = in->v + a[k], .n = b[k] - a[k] };
		r = expand(m, &arg, 0, &alts[k], depth + 1);
	}
	if (r == 0)
		r = combine(m, in, i, after, d, hs, a, b, alts, pick, 0, out, depth);
	for (size_t k = 0; k < n; k++)
		tlist_free(&alts[k]);
	return r;
}

/* Every full expansion of in from pos into out. */
static int expand(struct mx *m, const struct tseq *in, size_t pos, struct tlist *out, int depth)
{
	if (++m->steps > KJ_INC_EXPAND_STEPS_MAX || depth > KJ_INC_EXPAND_DEPTH_MAX || in->n > KJ_INC_TOKENS_MAX) {
		m->overflow = 1;
		return KJIT_EINCLUDE;
	}
	for (size_t i = pos; i < in->n; i++) {
		const struct tok *t = &in->v[i];
		size_t lo, hi;
		if (t->kind != T_ID || !kj__inc_defs_find(m->rv, t->s, t->n, &lo, &hi))
			continue;
		int bit = hs_bit(m, t->s, t->n), stays = 0, any = 0, r = 0;
		if (bit < 0) {
			m->overflow = 2;
			return KJIT_EINCLUDE;
		}
		if (t->hs & ((uint64_t)1 << bit))
			continue;
		for (size_t k = lo; r >= 0 && k < hi; k++) {
			struct def d;
			r = parse_def(&m->rv->defs[m->rv->order[k]], &d);
			if (r == 0 && !d.func) {
				r = substitute(m, in, i, i + 1, &d, t->hs | ((uint64_t)1 << bit), NULL, NULL, NULL, out,
					       depth);
				any = 1;
			} else if (r == 0) {
				r = call(m, in, i, &d, (uint64_t)1 << bit, out, depth);
				stays |= r == 1;
				any |= r == 0;
			}
			free(d.body.v);
			r = r < 0 ? r : 0;
		}
		if (r < 0)
			return r;
		if (stays || !any) /* a definition under which the name is left as it is */
			return expand(m, in, i + 1, out, depth + 1);
		return 0;
	}
	return tlist_add(m, out, in);
}

/* The header name q spells: '"' or '<' into *open and the name into buf;
 * 0 when it spells none. */
static int spelled_name(const struct tseq *q, char *open, char *buf, size_t cap)
{
	size_t k = 0;

	if (q->n == 0)
		return 0;
	const struct tok *t = &q->v[0];
	if (t->kind == T_STR && t->n >= 2 && t->s[0] == '"' && t->s[t->n - 1] == '"') {
		if (t->n - 2 >= cap)
			return 0;
		memcpy(buf, t->s + 1, t->n - 2);
		buf[t->n - 2] = '\0';
		*open = '"';
		return 1;
	}
	if (!is_punct(t, "<"))
		return 0;
	for (size_t j = 1; j < q->n; j++) {
		t = &q->v[j];
		if (is_punct(t, ">")) {
			buf[k] = '\0';
			*open = '<';
			return k > 0;
		}
		if (k + t->n + 2 >= cap)
			return 0;
		if (j > 1 && t->ws)
			buf[k++] = ' ';
		memcpy(buf + k, t->s, t->n);
		k += t->n;
	}
	return 0;
}

static int cmp_seen(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

int kj__inc_expand(struct resolver *rv, const struct kj__inc_pending *p, kj__inc_name_fn fn, void *ctx)
{
	struct mx m = { .rv = rv };
	struct tseq q = { 0 };
	struct tlist out = { 0 };
	char buf[KJ_NAME_MAX + 2], open, seen[KJ_INC_EXPANSIONS_MAX][KJ_NAME_MAX + 2];
	size_t n_seen = 0;
	const char *e = memchr(p->op, '\n', (size_t)(p->op_end - p->op));
	int r = kj__inc_defs_index(rv);

	if (r == 0)
		r = lex(p->op, p->op_end, &q);
	if (r == 0)
		r = expand(&m, &q, 0, &out, 0);
	for (size_t i = 0; r == 0 && i < out.n; i++) {
		if (!spelled_name(&out.v[i], &open, buf + 1, sizeof buf - 1))
			continue;
		buf[0] = open;
		size_t j = 0;
		while (j < n_seen && strcmp(seen[j], buf) != 0)
			j++;
		if (j == n_seen)
			memcpy(seen[n_seen++], buf, strlen(buf) + 1);
	}
	/* in name order: what is found, and the first error, depend on the
	 * set of definitions only, not on the order they were recorded in */
	qsort(seen, n_seen, sizeof seen[0], cmp_seen);
	for (size_t i = 0; r == 0 && i < n_seen; i++)
		r = fn(rv, p, seen[i][0], seen[i] + 1, ctx);
	if (r == 0 && n_seen == 0)
		r = kj__inc_fail(rv, KJIT_EINCLUDE, p->where, p->line, 0, p->op, (size_t)((e ? e : p->op_end) - p->op),
				 "computed #include: its macros, as the scan saw them defined (in the files it read "
				 "and by -D), spell no header name; define them with -D or include their header");
	else if (r == KJIT_EINCLUDE && m.overflow)
		r = kj__inc_fail(rv, KJIT_EINCLUDE, p->where, p->line, 0, p->op, (size_t)((e ? e : p->op_end) - p->op),
				 m.overflow == 2 ? "computed #include: more than 64 macros in one expansion"
						 : "computed #include: its macros' definitions combine in more than %d ways, "
						   "or expand past %d replacements, %d levels or %d tokens",
				 KJ_INC_EXPANSIONS_MAX, KJ_INC_EXPAND_STEPS_MAX, KJ_INC_EXPAND_DEPTH_MAX, KJ_INC_TOKENS_MAX);
	tlist_free(&out);
	free(q.v);
	for (size_t i = 0; i < m.n_arena; i++)
		free(m.arena[i]);
	free(m.arena);
	return r;
}
