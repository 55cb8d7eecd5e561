/* explain.c: why a request was not a hit (`kjit get --explain`).
 *
 * For a GET that asked (KJ_F_EXPLAIN), the request's key components are
 * compared with the earlier entries of the same source name in the index
 * that the caller requested (kj__cache_foreach_of; an administrator: all,
 * as `kjit ls` and `kjit show` do): a user learns nothing of another's
 * options, headers or keys.  The nearest (fewest differing components; the
 * most recently used among equals) is said in a text the waiter keeps,
 * sent with the object (miss.c).  The components are the key's
 * (cache/key.c): compiler identity, target, runtime version, options (from
 * the objects table), and, from the entry's replay recipe (cache/recipe.c:
 * the request it was built from), the source bytes, the headers by name
 * and bytes (resolved as get.c resolves them), the names looked for and
 * found nowhere, and, for shaderc, the entry points.  An entry whose recipe
 * is gone is compared on the first four only, and the text says so.
 *
 * Two steps (issue 29): kj__explain_begin, on the loop, copies the
 * candidates' rows (at most KJ_EXPLAIN_CANDIDATES_MAX, plus the request's
 * own key should it be among them); kj__explain_run, on a thread of
 * libuv's pool with the rest of the request's resolution (offhash.c),
 * reads their recipes and compares.  The comparison is linear in the sizes
 * compared: option words and header names go through hash sets, at most
 * KJ_EXPLAIN_WORDS_MAX words a side (the text says when it stopped there).
 * Costs nothing unless asked; never fails a request: on any error the text
 * says the explanation is unavailable.  No state beyond one struct
 * kj__explain per request.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

#define CANDS_MAX (KJ_EXPLAIN_CANDIDATES_MAX + 1) /* the request's own key may be among them */

/* One request's explanation: what the loop copied for the thread. */
struct kj__explain {
	struct kj__cache *cache;
	char *incdir;          /* <kernels>/include, to resolve a recipe's headers */
	char *source_name;
	int backend;
	size_t n;
	struct kj__cache_entry e[CANDS_MAX];
	char recipe[CANDS_MAX][65]; /* "" when none is kept */
	int all;               /* the caller sees every entry (an administrator) */
	int capped;            /* set by the comparisons: a side had more than KJ_EXPLAIN_WORDS_MAX words */
	struct strset *opts_set; /* the request's option words, made once (explain_text); NULL: none */
};

/* The other entries of one source name: keys, most recently used first. */
struct candidates {
	const char *source_name;
	int backend;
	char keys[CANDS_MAX][65];
	size_t n;
};

static int collect(const struct kj__cache_entry *e, void *arg)
{
	struct candidates *cs = arg;

	if (e->backend == cs->backend && e->source_name && strcmp(e->source_name, cs->source_name) == 0)
		memcpy(cs->keys[cs->n++], e->key, 65);
	return cs->n == CANDS_MAX;
}

struct kj__explain *kj__explain_begin(struct kj__daemon *d, int backend, const char *source_name, uid_t uid, int all)
{
	struct kj__explain *x = calloc(1, sizeof *x);
	struct candidates cs = { .source_name = source_name ? source_name : "source", .backend = backend };

	if (x == NULL)
		return NULL;
	x->cache = d->cache;
	x->backend = backend;
	x->all = all;
	x->source_name = kj__strdup(cs.source_name);
	x->incdir = kj__asprintf("%s/include", d->cfg.kernels_dir);
	if (x->source_name == NULL || x->incdir == NULL) {
		kj__explain_free(x);
		return NULL;
	}
	if (all)
		kj__cache_foreach(d->cache, NULL, collect, &cs);
	else
		kj__cache_foreach_of(d->cache, NULL, uid, collect, &cs);
	for (size_t i = 0; i < cs.n; i++) {
		if (kj__cache_get(d->cache, cs.keys[i], &x->e[x->n]) < 0)
			continue;
		if (kj__cache_recipe_of(d->cache, cs.keys[i], x->recipe[x->n]) < 0)
			x->recipe[x->n][0] = '\0';
		x->n++;
	}
	return x;
}

void kj__explain_free(struct kj__explain *x)
{
	if (x == NULL)
		return;
	for (size_t i = 0; i < x->n; i++)
		kj__cache_entry_free(&x->e[i]);
	free(x->incdir);
	free(x->source_name);
	free(x);
}

/* What an earlier entry's recipe says: its request, its headers resolved. */
struct recipe_view {
	int have;
	struct kj__get_req q;
	struct kj__includes inc;
};

static void recipe_view_free(struct recipe_view *v)
{
	kj__get_req_clear(&v->q);
	kj__includes_free(&v->inc);
}

/* Loads a recipe into v (v->have 0 when there is none usable). */
static void recipe_view_load(const struct kj__explain *x, const char *recipe, struct recipe_view *v)
{
	char err[256];
	uint8_t *frame = NULL;
	size_t len = 0;
	struct kj__msg m;
	const char *dir = x->incdir;

	memset(v, 0, sizeof *v);
	if (recipe[0] == '\0' || kj__cache_recipe_load(x->cache, recipe, &frame, &len) < 0)
		return;
	if (len > KJ_FRAME_HDR_SIZE && kj__msg_decode(frame + KJ_FRAME_HDR_SIZE, len - KJ_FRAME_HDR_SIZE, &m) == 0) {
		if (kj__get_req_parse(&v->q, &m, err, sizeof err) == 0 && v->q.source) {
			/* as offhash.c resolves a request: its -D/-U and pre-includes too */
			struct kj__include_tree opts = { .options = (const char *const *)v->q.options,
							 .n_options = v->q.n_options };
			v->have = kj__includes_resolve_tree(v->q.source_name, v->q.source, v->q.source_len,
							    (const char *const *)v->q.hnames,
							    (const uint8_t *const *)v->q.hdata, v->q.hlen, v->q.n_headers,
							    &dir, 1, &opts, &v->inc, err, sizeof err) == 0;
		}
		kj__msg_free(&m);
	}
	free(frame);
}

/* One differing component: a line into b (when not NULL); returns 1. */
static int differs(struct kj__buf *b, const char *fmt, const char *x, const char *y)
{
	if (b)
		kj__buf_printf(b, fmt, x, y);
	return 1;
}

/* A set of byte strings (pointers into the caller's text), open
 * addressing: insert and look up in constant time on average. */
struct slice {
	const char *p;
	size_t l, i; /* i: its index in the caller's array (headers) */
};
struct strset {
	struct slice *s;
	size_t mask;
};

static uint64_t slice_hash(const char *p, size_t l)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (size_t i = 0; i < l; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

/* A set able to hold n strings.  0 or -1 (no memory). */
static int strset_init(struct strset *set, size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n + 1)
		cap <<= 1;
	set->s = calloc(cap, sizeof *set->s);
	set->mask = cap - 1;
	return set->s ? 0 : -1;
}

/* The slot of (p, l): where it is, else the empty slot where it goes. */
static struct slice *strset_slot(const struct strset *set, const char *p, size_t l)
{
	size_t i = (size_t)slice_hash(p, l) & set->mask;

	while (set->s[i].p && !(set->s[i].l == l && memcmp(set->s[i].p, p, l) == 0))
		i = (i + 1) & set->mask;
	return &set->s[i];
}

static void strset_add(struct strset *set, const char *p, size_t l, size_t i)
{
	struct slice *sl = strset_slot(set, p, l);

	if (sl->p == NULL)
		*sl = (struct slice){ p, l, i };
}

static int strset_has(const struct strset *set, const char *p, size_t l)
{
	return strset_slot(set, p, l)->p != NULL;
}

/* The next space-separated word of *p (skipping empty ones); 0 at the end. */
static int next_word(const char **p, const char **w, size_t *l)
{
	while (**p == ' ')
		(*p)++;
	if (**p == '\0')
		return 0;
	*w = *p;
	*l = strcspn(*p, " ");
	*p += *l;
	return 1;
}

/* The set of the words of b (its first KJ_EXPLAIN_WORDS_MAX; *capped set
 * when it has more).  0 or -1 (no memory). */
static int words_set(struct strset *set, const char *b, int *capped)
{
	const char *p = b, *w;
	size_t l, k = 0;

	while (k < KJ_EXPLAIN_WORDS_MAX && next_word(&p, &w, &l)) /* the set's size: b's words */
		k++;
	if (strset_init(set, k) < 0)
		return -1;
	for (p = b, k = 0; next_word(&p, &w, &l);) {
		if (k++ == KJ_EXPLAIN_WORDS_MAX) {
			*capped = 1;
			break;
		}
		strset_add(set, w, l, 0);
	}
	return 0;
}

/* Words of a (its first KJ_EXPLAIN_WORDS_MAX) not in set, into out when
 * not NULL; how many.  *capped set when a had more. */
static int not_in_set(const char *a, const struct strset *set, struct kj__buf *out, int *capped)
{
	const char *p = a, *w;
	size_t l, k = 0;
	int n = 0;

	while (next_word(&p, &w, &l)) {
		if (k++ == KJ_EXPLAIN_WORDS_MAX) {
			*capped = 1;
			break;
		}
		if (strset_has(set, w, l))
			continue;
		if (out)
			kj__buf_printf(out, "%s%.*s", out->len ? " " : "", (int)l, w);
		n++;
	}
	return n;
}

/* Words of a not words of b (the first KJ_EXPLAIN_WORDS_MAX of each): how
 * many, or -1 without memory. */
static int words_not_in(const char *a, const char *b, struct kj__buf *out, int *capped)
{
	struct strset set;

	if (words_set(&set, b, capped) < 0)
		return -1;
	int n = not_in_set(a, &set, out, capped);
	free(set.s);
	return n;
}

/* Options, entries: the words only here and only there; how many (each
 * word counts, so an entry one option away is nearer than one three away).
 * here_set: here's words, made once for every entry compared (NULL: made
 * here). */
static int diff_words(struct kj__buf *b, const char *what, const char *here, const struct strset *here_set,
		      const char *there, int *capped)
{
	struct kj__buf add = { 0 }, rem = { 0 };
	int n = words_not_in(here, there, b ? &add : NULL, capped);
	int m = here_set ? not_in_set(there, here_set, b ? &rem : NULL, capped)
			 : words_not_in(there, here, b ? &rem : NULL, capped);

	n = n < 0 || m < 0 ? 1 : n + m; /* without memory: "something differs" */
	if (n && b)
		kj__buf_printf(b, "  %s: %s%.*s%s%s%.*s\n", what, add.len ? "here " : "", (int)add.len,
			       add.len ? (const char *)add.p : "", add.len && rem.len ? "; " : "",
			       rem.len ? "there " : "", (int)rem.len, rem.len ? (const char *)rem.p : "");
	kj__buf_free(&add);
	kj__buf_free(&rem);
	return n;
}

/* A set of n names, each with its index.  0 or -1 (no memory). */
static int names_set(struct strset *set, const char *const *names, size_t n)
{
	if (strset_init(set, n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		strset_add(set, names[i], strlen(names[i]), i);
	return 0;
}

/* The index of name in set, or none. */
static size_t name_at(const struct strset *set, const char *name, size_t none)
{
	const struct slice *sl = strset_slot(set, name, strlen(name));

	return sl->p ? sl->i : none;
}

/* Headers by name and bytes, and the names found nowhere. */
static int diff_headers(struct kj__buf *b, const struct kj__key_input *ki, const struct kj__includes *old)
{
	struct strset olds = { 0 }, news = { 0 }, oldmiss = { 0 };
	int n = 0;

	if (names_set(&olds, (const char *const *)old->names, old->n) < 0 ||
	    names_set(&news, ki->header_names, ki->n_headers) < 0 ||
	    names_set(&oldmiss, (const char *const *)old->missing, old->n_missing) < 0) {
		n = differs(b, "  headers: not compared (kjitd is short of memory)%s%s\n", "", "");
		goto out;
	}
	for (size_t i = 0; i < ki->n_headers; i++) {
		size_t j = name_at(&olds, ki->header_names[i], old->n);
		if (j == old->n)
			n += differs(b, "  header %s: only here%s\n", ki->header_names[i], "");
		else if (old->len[j] != ki->header_len[i] || memcmp(old->data[j], ki->header_data[i], old->len[j]) != 0)
			n += differs(b, "  header %s: its bytes%s\n", ki->header_names[i], "");
	}
	for (size_t j = 0; j < old->n; j++)
		if (name_at(&news, old->names[j], ki->n_headers) == ki->n_headers)
			n += differs(b, "  header %s: only there%s\n", old->names[j], "");
	for (size_t i = 0; i < ki->n_missing; i++)
		if (name_at(&oldmiss, ki->missing[i], old->n_missing) == old->n_missing)
			n += differs(b, "  include %s: found nowhere here, found there%s\n", ki->missing[i], "");
out:
	free(olds.s);
	free(news.s);
	free(oldmiss.s);
	return n;
}

/* Counts (and with b, says) what differs between the request (ki, its
 * options joined in opts) and the entry e with its recipe view v. */
static int compare(struct kj__buf *b, struct kj__explain *x, const struct kj__key_input *ki, const char *opts,
		   const struct kj__cache_entry *e, const struct recipe_view *v)
{
	int n = 0;

	if (strcmp(ki->compiler, e->compiler ? e->compiler : "") != 0)
		n += differs(b, "  compiler identity: here %s; there %s\n", ki->compiler, e->compiler ? e->compiler : "?");
	if (strcmp(ki->target, e->target) != 0)
		n += differs(b, "  target: here %s; there %s\n", ki->target, e->target);
	if (strcmp(ki->version, e->version) != 0)
		n += differs(b, "  runtime version: here %s; there %s\n", ki->version, e->version);
	n += diff_words(b, "options", opts, x->opts_set, e->options ? e->options : "", &x->capped);
	if (!v->have)
		return n;
	if (ki->source_len != v->q.source_len || memcmp(ki->source, v->q.source, ki->source_len) != 0)
		n += differs(b, "  source: its bytes%s%s\n", "", "");
	n += diff_headers(b, ki, &v->inc);
	if (x->backend == KJIT_BACKEND_VULKAN) { /* only shaderc's entry points are in the key */
		char *here = kj__words_join(ki->entries, ki->n_entries);
		char *there = kj__words_join((const char *const *)v->q.entries, v->q.n_entries);
		if (here && there)
			n += diff_words(b, "entry points", here, NULL, there, &x->capped);
		free(here);
		free(there);
	}
	return n;
}

/* The nearest candidate other than key: its index into x (its view in
 * *bestv), or -1 when there is none. */
static int nearest(struct kj__explain *x, const char *key, const struct kj__key_input *ki, const char *opts,
		   struct recipe_view *bestv)
{
	int best = -1, best_n = -1;

	for (size_t i = 0; i < x->n; i++) {
		struct recipe_view v;
		if (strcmp(x->e[i].key, key) == 0)
			continue;
		recipe_view_load(x, x->recipe[i], &v);
		int n = compare(NULL, x, ki, opts, &x->e[i], &v);
		if (best_n < 0 || n < best_n) {
			recipe_view_free(bestv);
			*bestv = v;
			best = (int)i;
			best_n = n;
		} else {
			recipe_view_free(&v);
		}
	}
	return best;
}

/* The explanation for a request of x->source_name resolved to key (ki). */
static char *explain_text(struct kj__explain *x, const char *key, const struct kj__key_input *ki)
{
	struct kj__buf b = { 0 };
	struct recipe_view bestv = { 0 };
	char *opts = kj__words_join(ki->options, ki->n_options);
	int best;

	struct strset opts_set;

	if (opts == NULL)
		return NULL;
	x->opts_set = words_set(&opts_set, opts, &x->capped) == 0 ? &opts_set : NULL;
	best = nearest(x, key, ki, opts, &bestv);
	if (best < 0) {
		kj__buf_printf(&b, "no earlier entry of %s for this backend in %s: a first compile\n", x->source_name,
			       x->all ? "the cache" : "the entries you requested");
	} else {
		const struct kj__cache_entry *e = &x->e[best];
		kj__buf_printf(&b, "nearest earlier entry of %s: %.16s (%s, %s); what differs:\n", x->source_name, e->key,
			       e->target, e->version);
		if (compare(&b, x, ki, opts, e, &bestv) == 0)
			kj__buf_printf(&b, "  nothing compared: the rest of the key (the source, headers, "
					   "entry points)%s\n", bestv.have ? " is the same" : " was not kept for it");
		else if (!bestv.have)
			kj__buf_printf(&b, "  (its request was not kept: source, headers and entry points not compared)\n");
	}
	if (x->capped)
		kj__buf_printf(&b, "  (compared the first %d words of each side's options only)\n", KJ_EXPLAIN_WORDS_MAX);
	recipe_view_free(&bestv);
	if (x->opts_set)
		free(opts_set.s);
	x->opts_set = NULL;
	free(opts);
	if (kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

char *kj__explain_run(struct kj__explain *x, const char *key, const struct kj__key_input *ki)
{
	char *text = x ? explain_text(x, key, ki) : NULL;

	return text ? text : kj__strdup("no explanation: kjitd ran out of memory making it\n");
}
