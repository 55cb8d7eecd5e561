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
 * gc runs this on a thread of its own with a connection of its own
 * (cache/jobrun.c), so the owners and their totals come from the rows
 * (objects.owner, set with the table's copy by kj__cache_note_user), never
 * from the table in memory, which only the loop touches; `kjit stats`
 * totals them from the table.  The order is the index's objects_lru.  Nothing here keeps state between
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
_Static_assert(sizeof(struct ent) == 72, "struct ent grew");

struct victims {
	struct kj__cache *c;
	struct owner *own;
	size_t n_own;
	uint64_t total;
	int (*take)(void *arg, const uint8_t key[KJ_SHA256_LEN]);
	void *arg;
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

/* The uid a row's owner column counts against (column i of st). */
static uid_t row_owner(const struct kj__cache *c, sqlite3_stmt *st, int i)
{
	sqlite3_int64 o = sqlite3_column_int64(st, i);
	return sqlite3_column_type(st, i) == SQLITE_NULL || o < 0 || o >= UINT32_MAX ? c->dir_uid : (uid_t)o;
}

/* Adds bytes of one object to uid's total in *own (of *n owners). */
static int owner_add(struct kj__cache *c, struct owner **own, size_t *n, uid_t uid, uint64_t bytes)
{
	size_t k;

	for (k = 0; k < *n && (*own)[k].uid != uid; k++)
		;
	if (k == *n) {
		void *p = c->mem->realloc(*own, (*n + 1) * sizeof **own);
		if (p == NULL)
			return KJIT_ENOMEM;
		*own = p;
		(*own)[(*n)++] = (struct owner){ .uid = uid };
	}
	(*own)[k].bytes += bytes;
	(*own)[k].entries++;
	return 0;
}

/* Each owner's bytes and entries, from the table in memory: one pass,
 * no SQL (kjit stats). */
static int owner_totals(struct kj__cache *c, struct owner **out, size_t *n_out)
{
	struct owner *own = NULL;
	size_t n = 0;
	int r = 0;

	for (size_t i = 0; r == 0 && i < c->n; i++)
		r = owner_add(c, &own, &n, owner_uid(c, &c->ents[i]), KJ_ENT_BYTES(&c->ents[i]));
	if (r < 0) {
		c->mem->free(own);
		return r;
	}
	*out = own;
	*n_out = n;
	return 0;
}

/* The same totals from the rows of db (gc's thread: it may not read the
 * table, which only the loop touches). */
static int owner_totals_db(struct kj__cache *c, sqlite3 *db, struct owner **out, size_t *n_out)
{
	sqlite3_stmt *st = NULL;
	struct owner *own = NULL;
	size_t n = 0;
	int rc, r = 0;

	if (sqlite3_prepare_v2(db, "SELECT owner, size + coalesce(rsize, 0) FROM objects", -1, &st, NULL) != SQLITE_OK) {
		kj__cache_say(c, "index %s/index.sqlite: gc: %s", c->dir, sqlite3_errmsg(db));
		return KJIT_EIO;
	}
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		sqlite3_int64 size = sqlite3_column_int64(st, 1);
		r = owner_add(c, &own, &n, row_owner(c, st, 0), size > 0 ? (uint64_t)size : 0);
	}
	if (r == 0 && rc != SQLITE_DONE) {
		kj__cache_say(c, "index %s/index.sqlite: gc: %s", c->dir, sqlite3_errmsg(db));
		r = KJIT_EIO;
	}
	sqlite3_finalize(st);
	if (r < 0) {
		c->mem->free(own);
		return r;
	}
	*out = own;
	*n_out = n;
	return 0;
}

/* One pass over the rows in LRU order: pass 1 takes from owners over
 * share, pass 2 from anyone (after the rows pass 1 took). */
static int pass(struct victims *v, sqlite3 *db, sqlite3_stmt *st, uint64_t cap, uint64_t share, int second)
{
	int rc = SQLITE_DONE, r = 0;

	sqlite3_reset(st);
	while (v->total > cap && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *hex = kj__db_col_text(st, 0);
		sqlite3_int64 ssize = sqlite3_column_int64(st, 1);
		struct owner *o;
		uint8_t k[KJ_SHA256_LEN];
		if (!hex || !kj__hex_ok(hex) || ssize < 0 || (o = owner_of(v, row_owner(v->c, st, 2))) == NULL)
			continue; /* an invalid row: verify's business */
		uint64_t size = (uint64_t)ssize;
		if (second ? o->seen++ < o->taken : o->bytes <= share)
			continue;
		kj__cache_unhex(hex, k);
		if ((r = v->take(v->arg, k)) < 0)
			return r;
		v->total -= size < v->total ? size : v->total;
		o->bytes -= o->bytes < size ? o->bytes : size;
		o->taken += !second;
	}
	if (v->total > cap && rc != SQLITE_DONE) {
		kj__cache_say(v->c, "index %s/index.sqlite: gc: %s", v->c->dir, sqlite3_errmsg(db));
		return KJIT_EIO;
	}
	return 0;
}

int kj__share_victims(struct kj__cache *c, sqlite3 *db, uint64_t total, uint64_t cap, uint64_t share,
		      int (*take)(void *arg, const uint8_t key[KJ_SHA256_LEN]), void *arg)
{
	struct victims v = { .c = c, .total = total, .take = take, .arg = arg };
	sqlite3_stmt *st = NULL;
	int r;

	if ((r = owner_totals_db(c, db, &v.own, &v.n_own)) < 0)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT key, size + coalesce(rsize, 0), owner FROM objects ORDER BY last_used, used_seq, key", -1, &st,
			       NULL) != SQLITE_OK) {
		kj__cache_say(c, "index %s/index.sqlite: gc: %s", c->dir, sqlite3_errmsg(db));
		r = KJIT_EIO;
		goto out;
	}
	if ((r = pass(&v, db, st, cap, share, 0)) == 0)
		r = pass(&v, db, st, cap, share, 1);
out:
	sqlite3_finalize(st);
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
