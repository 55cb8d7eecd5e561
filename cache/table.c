/* table.c: the in-memory entry table of a cache and its interned strings.
 *
 * Invariants:
 *  - The table mirrors the valid rows of the index: every row the hit path
 *    may serve has an entry here (key, size, tuple, use order), and nothing
 *    else does.  The hit path touches no SQLite: it finds the entry here and
 *    counts the hit in it; kj__cache_flush writes the counts later.
 *  - Entries are dense in c->ents[0..n) (64 bytes each: the digest stays in
 *    the index) and found through c->slots, an open-addressing array
 *    (linear probing, power of two, load <= 3/4) of entry index + 1.
 *    Removal shifts back (no tombstones) and moves the last entry into the
 *    hole, so indexes change on removal and are not kept across calls.
 *  - c->bytes is the sum of the entries' sizes, each its object's and its
 *    recipe's (KJ_ENT_BYTES).
 *  - An entry with pending > 0 has its key in c->dirty exactly once.
 *  - Target, version and extension are interned once per distinct
 *    (backend, target, version, ext) in c->tuples; an entry names its tuple
 *    by index.  Tuples live until close (there are a handful).
 * A million entries take about 64 MB + 8 MB.  LRU order is (last_used,
 * seq): seconds for people, a per-cache use sequence so the order is exact
 * within a second.  The table owns ents, slots, tuples and dirty.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache-int.h"
#include "kj_types.h"
#include "util.h"

#define TAB_MIN 1024                  /* smallest table, entries */

static size_t home_slot(const struct kj__cache *c, const uint8_t *key)
{
	uint64_t h;

	memcpy(&h, key, sizeof h); /* the key is a SHA-256: already uniform */
	return (size_t)h & (c->nslots - 1);
}

size_t kj__tab_find(const struct kj__cache *c, const uint8_t *key)
{
	if (c->nslots == 0)
		return NONE;
	for (size_t s = home_slot(c, key);; s = (s + 1) & (c->nslots - 1)) {
		uint32_t v = c->slots[s];
		if (v == 0)
			return NONE;
		if (memcmp(c->ents[v - 1].key, key, KJ_SHA256_LEN) == 0)
			return v - 1;
	}
}

/* The slot holding entry idx (which must be in the table). */
static size_t slot_of(const struct kj__cache *c, size_t idx)
{
	size_t s = home_slot(c, c->ents[idx].key);

	while (c->slots[s] != idx + 1)
		s = (s + 1) & (c->nslots - 1);
	return s;
}

static void slot_put(struct kj__cache *c, size_t idx)
{
	size_t s = home_slot(c, c->ents[idx].key);

	while (c->slots[s] != 0)
		s = (s + 1) & (c->nslots - 1);
	c->slots[s] = (uint32_t)(idx + 1);
}

int kj__tab_reserve(struct kj__cache *c, size_t want)
{
	if (want >= UINT32_MAX / 2)
		return KJIT_ENOMEM;
	if (want > c->cap) {
		size_t cap = c->cap + c->cap / 2;
		if (cap < want)
			cap = want;
		if (cap < TAB_MIN)
			cap = TAB_MIN;
		struct ent *p = c->mem->realloc(c->ents, cap * sizeof *p);
		if (p == NULL)
			return KJIT_ENOMEM;
		c->ents = p;
		c->cap = cap;
	}
	if (want * 4 >= c->nslots * 3) {
		size_t ns = TAB_MIN * 2;
		while (want * 4 >= ns * 3)
			ns *= 2;
		uint32_t *slots = c->mem->calloc(ns, sizeof *slots);
		if (slots == NULL)
			return KJIT_ENOMEM;
		c->mem->free(c->slots);
		c->slots = slots;
		c->nslots = ns;
		for (size_t i = 0; i < c->n; i++)
			slot_put(c, i);
	}
	return 0;
}

void kj__tab_add(struct kj__cache *c, const struct ent *en)
{
	c->ents[c->n] = *en;
	slot_put(c, c->n);
	c->n++;
	c->bytes += KJ_ENT_BYTES(en);
}

void kj__tab_put(struct kj__cache *c, struct ent *en, size_t prior, uint8_t *hot, const struct stat *st)
{
	if (prior == NONE) {
		kj__tab_add(c, en);
	} else {
		c->bytes -= KJ_ENT_BYTES(&c->ents[prior]);
		/* the row was replaced, its rsize with it: a publish with a recipe
		 * links and counts it again (recipe.c) */
		c->bytes += KJ_ENT_BYTES(en);
		en->pending = c->ents[prior].pending;
		c->ents[prior] = *en;
	}
	/* just published: likely asked for again soon; verified by the run */
	if (hot && st && st->st_ino != 0)
		kj__hot_put_owned(c, en->key, hot, en->size, st);
	else
		c->mem->free(hot);
}

/* Backward-shift deletion in the slots, then the last entry moves into idx. */
void kj__tab_remove(struct kj__cache *c, size_t idx)
{
	kj__hot_remove(c, c->ents[idx].key);
	size_t mask = c->nslots - 1, hole = slot_of(c, idx), j = hole;

	for (;;) {
		j = (j + 1) & mask;
		uint32_t v = c->slots[j];
		if (v == 0)
			break;
		size_t h = home_slot(c, c->ents[v - 1].key);
		int stays = hole < j ? (h > hole && h <= j) : (h > hole || h <= j);
		if (!stays) {
			c->slots[hole] = v;
			hole = j;
		}
	}
	c->slots[hole] = 0;
	c->bytes -= KJ_ENT_BYTES(&c->ents[idx]);
	size_t last = c->n - 1;
	if (idx != last) {
		size_t s = slot_of(c, last);
		c->ents[idx] = c->ents[last];
		c->slots[s] = (uint32_t)(idx + 1);
	}
	c->n--;
}

void kj__tab_clear(struct kj__cache *c)
{
	c->n = 0;
	c->bytes = 0;
	c->ndirty = 0;
	if (c->slots)
		memset(c->slots, 0, c->nslots * sizeof *c->slots);
}

int kj__tuple_intern(struct kj__cache *c, int backend, const char *target, const char *version,
		     const char *ext, uint32_t *out)
{
	struct tuple *t;

	for (size_t k = 0; k < c->ntuples; k++) {
		size_t i = (c->last_tuple + k) % c->ntuples;
		t = &c->tuples[i];
		if (t->backend == backend && strcmp(t->target, target) == 0 &&
		    strcmp(t->version, version) == 0 && strcmp(t->ext, ext) == 0) {
			c->last_tuple = i;
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (c->ntuples == c->captuples) {
		size_t cap = c->captuples ? c->captuples * 2 : 8;
		t = c->mem->realloc(c->tuples, cap * sizeof *t);
		if (t == NULL)
			return KJIT_ENOMEM;
		c->tuples = t;
		c->captuples = cap;
	}
	t = &c->tuples[c->ntuples];
	t->backend = backend;
	t->target = kj__cache_strdup(c, target);
	t->version = kj__cache_strdup(c, version);
	t->ext = kj__cache_strdup(c, ext);
	if (!t->target || !t->version || !t->ext) {
		c->mem->free(t->target);
		c->mem->free(t->version);
		c->mem->free(t->ext);
		return KJIT_ENOMEM;
	}
	c->last_tuple = c->ntuples;
	*out = (uint32_t)c->ntuples++;
	return 0;
}

void kj__tab_fill_entry(const struct kj__cache *c, const struct ent *en, struct kj__cache_entry *e)
{
	const struct tuple *t = &c->tuples[en->tuple];

	memset(e, 0, sizeof *e);
	kj__hex(en->key, e->key);
	e->backend = t->backend;
	snprintf(e->target, sizeof e->target, "%s", t->target);
	snprintf(e->version, sizeof e->version, "%s", t->version);
	snprintf(e->ext, sizeof e->ext, "%s", t->ext);
	e->size = en->size;
	e->last_used = en->last_used; /* sha256 stays empty: see kj__db_row_digest */
	e->compile_ms = en->compile_ms;
}

int kj__tab_touch(struct kj__cache *c, size_t idx)
{
	struct ent *en = &c->ents[idx];

	if (en->pending == 0) {
		if (c->ndirty == c->capdirty) {
			size_t cap = c->capdirty ? c->capdirty * 2 : 64;
			void *p = c->mem->realloc(c->dirty, cap * sizeof *c->dirty);
			if (p == NULL)
				return KJIT_ENOMEM;
			c->dirty = p;
			c->capdirty = cap;
		}
		memcpy(c->dirty[c->ndirty++], en->key, KJ_SHA256_LEN);
	}
	if (en->pending < UINT32_MAX)
		en->pending++;
	en->last_used = (uint32_t)kj__wall_s();
	en->seq = ++c->seq;
	return 0;
}

void kj__tab_free(struct kj__cache *c)
{
	for (size_t i = 0; i < c->ntuples; i++) {
		c->mem->free(c->tuples[i].target);
		c->mem->free(c->tuples[i].version);
		c->mem->free(c->tuples[i].ext);
	}
	c->mem->free(c->tuples);
	c->mem->free(c->ents);
	c->mem->free(c->slots);
	c->mem->free(c->dirty);
	c->tuples = NULL;
	c->ents = NULL;
	c->slots = NULL;
	c->dirty = NULL;
}
