/* share.c: each uid's share of the cache (issue 21, item 4): the bytes
 * each owner's objects take, and the order gc evicts in.
 *
 * An object counts against its owner, the uid that first requested it
 * (objects.owner, schema 4, set by kj__cache_note_user); objects without
 * one (imported, fetched from the fleet, or from an older index without
 * requesters) count against the cache directory's owner.  Hits and later
 * requesters never change the owner, so asking for another user's objects
 * neither moves them into the asker's share nor out of their owner's: a
 * user cannot evict another's objects by requesting them.  (Charging the
 * first requester lets a user who guesses another's sources compile them
 * first, into its own share, where its own flood evicts them; splitting
 * the charge between requesters would let any requester shrink an
 * owner's share the same way.  First requester is the simpler of the two.)
 *
 * Eviction order (kj__share_victims), while the cache is over its cap:
 *  1. the objects of owners over their share, least recently used first
 *     (last_used, used_seq, key), each owner only down to its share;
 *  2. then everything else, least recently used first.
 * With one owner this is plain LRU.  Both passes read the rows in the
 * same order, so the second skips exactly the first k rows of each owner
 * the first took (an owner's victims are a prefix of its rows).
 * The owners' totals come from the table in memory (struct ent's owner,
 * loaded with the index and set with the row by kj__cache_note_user); the
 * order from the index's objects_lru.  Nothing here keeps state between
 * calls.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "cache-int.h"
#include "kj_limits.h"
#include "kj_types.h"

struct owner {
	uid_t uid;
	uint64_t entries;
	uint64_t bytes;   /* what its objects take, less what pass 1 took */
	size_t taken;     /* its rows pass 1 took */
	size_t seen;      /* its rows pass 2 has passed */
};

/* The owner fits struct ent's padding: a million entries stay 64 MB. */
_Static_assert(sizeof(struct ent) == 64, "struct ent grew");

struct victims {
	struct owner *own;
	size_t n_own;
	uint8_t (*keys)[KJ_SHA256_LEN];
	size_t n, cap;
	uint64_t total, gone;
};

static struct owner *owner_of(struct victims *v, uid_t uid)
{
	for (size_t i = 0; i < v->n_own; i++)
		if (v->own[i].uid == uid)
			return &v->own[i];
	return NULL;
}

/* The uid an entry counts against. */
static uid_t owner_uid(const struct kj__cache *c, const struct ent *en)
{
	return en->owner ? (uid_t)(en->owner - 1) : c->dir_uid;
}

/* Each owner's bytes and entries, from the table in memory: one pass,
 * no SQL (gc runs every second while a full cache takes compiles). */
static int owner_totals(struct kj__cache *c, struct owner **out, size_t *n_out)
{
	struct owner *own = NULL, *o;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < c->n; i++) {
		uid_t uid = owner_uid(c, &c->ents[i]);
		if (k >= n || own[k].uid != uid) /* runs of one owner are common: try the last first */
			for (k = 0; k < n && own[k].uid != uid; k++)
				;
		if (k == n) {
			void *p = c->mem->realloc(own, (n + 1) * sizeof *own);
			if (p == NULL) {
				c->mem->free(own);
				return KJIT_ENOMEM;
			}
			own = p;
			own[n++] = (struct owner){ .uid = uid };
		}
		o = &own[k];
		o->bytes += c->ents[i].size;
		o->entries++;
	}
	*out = own;
	*n_out = n;
	return 0;
}

static int take(struct kj__cache *c, struct victims *v, const uint8_t *k, uint64_t size)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		void *p = c->mem->realloc(v->keys, cap * sizeof *v->keys);
		if (p == NULL)
			return KJIT_ENOMEM;
		v->keys = p;
		v->cap = cap;
	}
	memcpy(v->keys[v->n++], k, KJ_SHA256_LEN);
	v->total -= size;
	v->gone += size;
	return 0;
}

/* One pass over the rows in LRU order: pass 1 takes from owners over
 * share, pass 2 from anyone (after the rows pass 1 took). */
static int pass(struct kj__cache *c, sqlite3_stmt *st, struct victims *v, uint64_t cap, uint64_t share, int second)
{
	int rc = SQLITE_DONE, r = 0;

	sqlite3_reset(st);
	while (v->total > cap && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *hex = kj__db_col_text(st, 0);
		struct owner *o;
		uint8_t k[KJ_SHA256_LEN];
		size_t i;
		if (!hex || !kj__hex_ok(hex) || (kj__cache_unhex(hex, k), i = kj__tab_find(c, k)) == NONE ||
		    (o = owner_of(v, owner_uid(c, &c->ents[i]))) == NULL)
			continue; /* an invalid row: verify's business */
		if (second ? o->seen++ < o->taken : o->bytes <= share)
			continue;
		if ((r = take(c, v, k, c->ents[i].size)) < 0)
			return r;
		o->bytes -= o->bytes < c->ents[i].size ? o->bytes : c->ents[i].size;
		o->taken += !second;
	}
	if (v->total > cap && rc != SQLITE_DONE)
		return kj__db_fail(c, "gc");
	return 0;
}

int kj__share_victims(struct kj__cache *c, uint64_t cap, uint64_t share, uint8_t (**keys)[KJ_SHA256_LEN],
		      size_t *n, uint64_t *gone)
{
	struct victims v = { .total = c->bytes };
	sqlite3_stmt *st = NULL;
	int r;

	*keys = NULL;
	*n = 0;
	*gone = 0;
	if ((r = owner_totals(c, &v.own, &v.n_own)) < 0)
		goto out;
	if (sqlite3_prepare_v2(c->db, "SELECT key FROM objects ORDER BY last_used, used_seq, key", -1, &st, NULL) !=
	    SQLITE_OK) {
		r = kj__db_fail(c, "gc");
		goto out;
	}
	if ((r = pass(c, st, &v, cap, share, 0)) < 0 || (r = pass(c, st, &v, cap, share, 1)) < 0)
		goto out;
	*keys = v.keys;
	*n = v.n;
	*gone = v.gone;
	v.keys = NULL;
out:
	sqlite3_finalize(st);
	c->mem->free(v.keys);
	c->mem->free(v.own);
	return r;
}

uint64_t kj__cache_share(const struct kj__cache *c, uint64_t cap)
{
	if (c->max_per_uid)
		return c->max_per_uid;
	return (cap ? cap : c->max_size) / KJ_CACHE_SHARE_DIV;
}

int kj__cache_uid_bytes(struct kj__cache *c, void (*fn)(void *arg, uid_t uid, uint64_t bytes, uint64_t n), void *arg)
{
	struct owner *own = NULL;
	size_t n = 0;
	int r;

	if ((r = owner_totals(c, &own, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) { /* in uid order: a few owners, a selection sort */
		size_t m = i;
		for (size_t j = i + 1; j < n; j++)
			if (own[j].uid < own[m].uid)
				m = j;
		struct owner t = own[i];
		own[i] = own[m];
		own[m] = t;
		fn(arg, own[i].uid, own[i].bytes, own[i].entries);
	}
	c->mem->free(own);
	return 0;
}
