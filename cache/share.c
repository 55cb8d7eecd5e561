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
 * Nothing here keeps state between calls.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "cache-int.h"
#include "kj_limits.h"
#include "kj_types.h"

struct owner {
	uid_t uid;
	uint64_t bytes;   /* what its objects take, less what pass 1 took */
	size_t taken;     /* its rows pass 1 took */
	size_t seen;      /* its rows pass 2 has passed */
};

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

/* Each owner's bytes, from the index. */
static int owner_totals(struct kj__cache *c, struct victims *v)
{
	sqlite3_stmt *st = NULL;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(c->db, "SELECT coalesce(owner, ?1), sum(size) FROM objects GROUP BY 1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return kj__db_fail(c, "owners");
	sqlite3_bind_int64(st, 1, (sqlite3_int64)c->dir_uid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		void *p = c->mem->realloc(v->own, (v->n_own + 1) * sizeof *v->own);
		if (p == NULL) {
			r = KJIT_ENOMEM;
			break;
		}
		v->own = p;
		v->own[v->n_own++] = (struct owner){ .uid = (uid_t)sqlite3_column_int64(st, 0),
						     .bytes = (uint64_t)sqlite3_column_int64(st, 1) };
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = kj__db_fail(c, "owners");
	sqlite3_finalize(st);
	return r;
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
		struct owner *o = owner_of(v, (uid_t)sqlite3_column_int64(st, 1));
		uint8_t k[KJ_SHA256_LEN];
		size_t i;
		if (!o || !hex || !kj__hex_ok(hex) || (kj__cache_unhex(hex, k), i = kj__tab_find(c, k)) == NONE)
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
	if ((r = owner_totals(c, &v)) < 0)
		goto out;
	if (sqlite3_prepare_v2(c->db, "SELECT key, coalesce(owner, ?1) FROM objects ORDER BY last_used, used_seq, key",
			       -1, &st, NULL) != SQLITE_OK) {
		r = kj__db_fail(c, "gc");
		goto out;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)c->dir_uid);
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
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = kj__cache_flush(c)) < 0)
		return rc;
	rc = sqlite3_prepare_v2(c->db, "SELECT coalesce(owner, ?1), sum(size), count(*) FROM objects GROUP BY 1 ORDER BY 1",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return kj__db_fail(c, "uid bytes");
	sqlite3_bind_int64(st, 1, (sqlite3_int64)c->dir_uid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn(arg, (uid_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
		   (uint64_t)sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : kj__db_fail(c, "uid bytes");
}
