/* explain.c: why a request was not a hit (`kjit get --explain`).
 *
 * For a GET that asked (KJ_F_EXPLAIN) and is about to be compiled or joined,
 * kj__explain_text (called by the flight module as the waiter enters its
 * flight) compares its key's components with the earlier entries of the
 * same source name in the index, picks the nearest (fewest differing
 * components; the most recently used among equals) and writes what differs
 * into a text the waiter keeps, sent with the object (flight-serve.c).  The
 * components are the key's (cache/key.c): compiler identity, target,
 * runtime version, options (from the objects table), and, from the entry's
 * replay recipe (cache/recipe.c: the request it was built from), the source
 * bytes, the headers by name and bytes (resolved as get.c resolves them),
 * the names looked for and found nowhere, and, for shaderc, the entry
 * points.  An entry whose recipe is gone is compared on the first four only,
 * and the text says so.  Costs nothing unless asked; never fails a request:
 * on any error the text says the explanation is unavailable.  No state of
 * its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

/* The other entries of one source name: keys, most recently used first. */
struct candidates {
	const char *source_name, *self;
	int backend;
	char keys[KJ_EXPLAIN_CANDIDATES_MAX][65];
	size_t n;
};

static int collect(const struct kj__cache_entry *e, void *arg)
{
	struct candidates *cs = arg;

	if (e->backend == cs->backend && e->source_name && strcmp(e->source_name, cs->source_name) == 0 &&
	    strcmp(e->key, cs->self) != 0)
		memcpy(cs->keys[cs->n++], e->key, 65);
	return cs->n == KJ_EXPLAIN_CANDIDATES_MAX;
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

/* Loads key's recipe into v (v->have 0 when there is none usable). */
static void recipe_view_load(struct kj__daemon *d, const char *key, struct recipe_view *v)
{
	char recipe[65], err[256];
	uint8_t *frame = NULL;
	size_t len = 0;
	struct kj__msg m;
	char *incdir = NULL;
	const char *dir;

	memset(v, 0, sizeof *v);
	if (kj__cache_recipe_of(d->cache, key, recipe) < 0 || kj__cache_recipe_load(d->cache, recipe, &frame, &len) < 0)
		return;
	if (len > KJ_FRAME_HDR_SIZE && kj__msg_decode(frame + KJ_FRAME_HDR_SIZE, len - KJ_FRAME_HDR_SIZE, &m) == 0) {
		if (kj__get_req_parse(&v->q, &m, err, sizeof err) == 0 && v->q.source &&
		    (incdir = kj__asprintf("%s/include", d->cfg.kernels_dir)) != NULL) {
			dir = incdir;
			v->have = kj__includes_resolve(v->q.source_name, v->q.source, v->q.source_len,
						       (const char *const *)v->q.hnames, (const uint8_t *const *)v->q.hdata,
						       v->q.hlen, v->q.n_headers, &dir, 1, &v->inc, err, sizeof err) == 0;
		}
		kj__msg_free(&m);
	}
	free(incdir);
	free(frame);
}

/* One differing component: a line into b (when not NULL); returns 1. */
static int differs(struct kj__buf *b, const char *fmt, const char *x, const char *y)
{
	if (b)
		kj__buf_printf(b, fmt, x, y);
	return 1;
}

/* Space-separated words of a that are not words of b, into out; how many. */
static int words_not_in(const char *a, const char *b, struct kj__buf *out)
{
	size_t bl = strlen(b);
	int n = 0;

	for (const char *p = a; *p;) {
		size_t l = strcspn(p, " ");
		int found = 0;
		for (const char *q = b; !found && q < b + bl;) {
			size_t ql = strcspn(q, " ");
			found = ql == l && strncmp(p, q, l) == 0;
			q += ql + (q[ql] == ' ');
		}
		if (l && !found) {
			kj__buf_printf(out, "%s%.*s", out->len ? " " : "", (int)l, p);
			n++;
		}
		p += l + (p[l] == ' ');
	}
	return n;
}

/* Options, entries: the words only here and only there; how many (each
 * word counts, so an entry one option away is nearer than one three away). */
static int diff_words(struct kj__buf *b, const char *what, const char *here, const char *there)
{
	struct kj__buf add = { 0 }, rem = { 0 };
	int n = words_not_in(here, there, &add);

	n += words_not_in(there, here, &rem);
	if (n && b)
		kj__buf_printf(b, "  %s: %s%.*s%s%s%.*s\n", what, add.len ? "here " : "", (int)add.len,
			       add.len ? (const char *)add.p : "", add.len && rem.len ? "; " : "",
			       rem.len ? "there " : "", (int)rem.len, rem.len ? (const char *)rem.p : "");
	kj__buf_free(&add);
	kj__buf_free(&rem);
	return n;
}

static char *join_words(const char *const *v, size_t n)
{
	struct kj__buf b = { 0 };

	for (size_t i = 0; i < n; i++)
		kj__buf_printf(&b, "%s%s", i ? " " : "", v[i]);
	if (kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

/* Headers by name and bytes, and the names found nowhere. */
static int diff_headers(struct kj__buf *b, const struct kj__key_input *ki, const struct kj__includes *old)
{
	int n = 0;

	for (size_t i = 0; i < ki->n_headers; i++) {
		size_t j = 0;
		while (j < old->n && strcmp(old->names[j], ki->header_names[i]) != 0)
			j++;
		if (j == old->n)
			n += differs(b, "  header %s: only here%s\n", ki->header_names[i], "");
		else if (old->len[j] != ki->header_len[i] || memcmp(old->data[j], ki->header_data[i], old->len[j]) != 0)
			n += differs(b, "  header %s: its bytes%s\n", ki->header_names[i], "");
	}
	for (size_t j = 0; j < old->n; j++) {
		size_t i = 0;
		while (i < ki->n_headers && strcmp(old->names[j], ki->header_names[i]) != 0)
			i++;
		if (i == ki->n_headers)
			n += differs(b, "  header %s: only there%s\n", old->names[j], "");
	}
	for (size_t i = 0; i < ki->n_missing; i++) {
		size_t j = 0;
		while (j < old->n_missing && strcmp(old->missing[j], ki->missing[i]) != 0)
			j++;
		if (j == old->n_missing)
			n += differs(b, "  include %s: found nowhere here, found there%s\n", ki->missing[i], "");
	}
	return n;
}

/* Counts (and with b, says) what differs between the request (ki) and the
 * entry e with its recipe view v. */
static int compare(struct kj__buf *b, int backend, const struct kj__key_input *ki, const char *opts,
		   const struct kj__cache_entry *e, const struct recipe_view *v)
{
	int n = 0;

	if (strcmp(ki->compiler, e->compiler ? e->compiler : "") != 0)
		n += differs(b, "  compiler identity: here %s; there %s\n", ki->compiler, e->compiler ? e->compiler : "?");
	if (strcmp(ki->target, e->target) != 0)
		n += differs(b, "  target: here %s; there %s\n", ki->target, e->target);
	if (strcmp(ki->version, e->version) != 0)
		n += differs(b, "  runtime version: here %s; there %s\n", ki->version, e->version);
	n += diff_words(b, "options", opts, e->options ? e->options : "");
	if (!v->have)
		return n;
	if (ki->source_len != v->q.source_len || memcmp(ki->source, v->q.source, ki->source_len) != 0)
		n += differs(b, "  source: its bytes%s%s\n", "", "");
	n += diff_headers(b, ki, &v->inc);
	if (backend == KJIT_BACKEND_VULKAN) { /* only shaderc's entry points are in the key */
		char *here = join_words(ki->entries, ki->n_entries);
		char *there = join_words((const char *const *)v->q.entries, v->q.n_entries);
		if (here && there)
			n += diff_words(b, "entry points", here, there);
		free(here);
		free(there);
	}
	return n;
}

/* The explanation for a request of source_name resolved to key (ki). */
static char *explain_text(struct kj__daemon *d, int backend, const char *source_name, const char *key,
			  const struct kj__key_input *ki)
{
	struct candidates cs = { .source_name = source_name, .self = key, .backend = backend };
	struct kj__buf b = { 0 };
	struct kj__cache_entry best = { 0 };
	struct recipe_view bestv = { 0 };
	int best_n = -1;
	char *opts = join_words(ki->options, ki->n_options);

	if (opts == NULL)
		return NULL;
	kj__cache_foreach(d->cache, NULL, collect, &cs);
	for (size_t i = 0; i < cs.n; i++) {
		struct kj__cache_entry e;
		struct recipe_view v;
		if (kj__cache_get(d->cache, cs.keys[i], &e) < 0)
			continue;
		recipe_view_load(d, cs.keys[i], &v);
		int n = compare(NULL, backend, ki, opts, &e, &v);
		if (best_n < 0 || n < best_n) {
			kj__cache_entry_free(&best);
			recipe_view_free(&bestv);
			best = e;
			bestv = v;
			best_n = n;
		} else {
			kj__cache_entry_free(&e);
			recipe_view_free(&v);
		}
	}
	if (best_n < 0) {
		kj__buf_printf(&b, "no earlier entry of %s for this backend in the cache: a first compile\n",
			       source_name);
	} else {
		kj__buf_printf(&b, "nearest earlier entry of %s: %.16s (%s, %s); what differs:\n", source_name, best.key,
			       best.target, best.version);
		if (compare(&b, backend, ki, opts, &best, &bestv) == 0)
			kj__buf_printf(&b, "  nothing compared: the rest of the key (the source, headers, "
					   "entry points)%s\n", bestv.have ? " is the same" : " was not kept for it");
		else if (!bestv.have)
			kj__buf_printf(&b, "  (its request was not kept: source, headers and entry points not compared)\n");
	}
	kj__cache_entry_free(&best);
	recipe_view_free(&bestv);
	free(opts);
	if (kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

char *kj__explain_text(struct kj__daemon *d, int backend, const char *source_name, const char *key,
		       const struct kj__key_input *ki)
{
	char *text = explain_text(d, backend, source_name ? source_name : "source", key, ki);

	return text ? text : kj__strdup("no explanation: kjitd ran out of memory making it\n");
}
