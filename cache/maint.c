/* maint.c: the maintenance of a cache: gc (evict least recently used
 * objects down to a size), verify (re-hash every object from disk, drop
 * the corrupt and the invalid rows) and clear (remove everything, or one
 * target).
 *
 * Invariants:
 *  - Removal keeps the order of store.c: the rows go first, in one
 *    transaction, then the files, then the table entries.  A transaction
 *    that fails removes nothing.
 *  - gc evicts in LRU order (last_used, then the use sequence), owners
 *    over their share of the cache first (share.c picks the victims),
 *    after a flush so that order includes the hits counted in memory.
 *  - verify reads from disk, never from the hot set, and treats an I/O
 *    error as "unknown" (the object stays), corruption as "drop".
 *  - gc and verify also sweep files no row names (orphans of a crash).
 * Nothing here keeps state between calls.
 */
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache-int.h"
#include "kj_types.h"
#include "util.h"

/* Deletes the rows of keys[0..n) in one transaction, then
 * their files, then drops them from the table.  0 or KJIT_EIO (nothing
 * removed). */
static int remove_entries(struct kj__cache *c, uint8_t (*keys)[KJ_SHA256_LEN], size_t n)
{
	char hex[KJ_SHA256_HEX_LEN + 1];
	int r;

	if (n == 0)
		return 0;
	if ((r = kj__db_begin(c)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		kj__hex(keys[i], hex);
		if ((r = kj__db_delete_row(c, hex)) < 0) {
			kj__db_rollback(c);
			return r;
		}
	}
	if ((r = kj__db_commit(c)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		size_t k = kj__tab_find(c, keys[i]);
		if (k == NONE)
			continue;
		kj__obj_unlink(c, &c->ents[k]);
		kj__tab_remove(c, k);
	}
	return 0;
}

int kj__cache_gc(struct kj__cache *c, uint64_t max_size, uint64_t *evicted, uint64_t *freed)
{
	uint64_t cap = max_size ? max_size : c->max_size, total = c->bytes, gone = 0;
	uint8_t (*keys)[KJ_SHA256_LEN] = NULL;
	size_t n = 0;
	int r;

	if (evicted)
		*evicted = 0;
	if (freed)
		*freed = 0;
	if ((r = kj__cache_flush(c)) < 0)
		return r;
	kj__obj_sweep(c, 1);
	if (total <= cap)
		return 0;
	if ((r = kj__share_victims(c, cap, kj__cache_share(c, max_size), &keys, &n, &gone)) < 0)
		goto out;
	if ((r = remove_entries(c, keys, n)) < 0)
		goto out;
	if (n) {
		kj__cache_counter_add(c, "evictions", (int64_t)n);
		kj__cache_say(c, "gc: evicted %zu object(s), %llu bytes, to stay under %llu bytes", n,
			      (unsigned long long)gone, (unsigned long long)cap);
	}
	if (evicted)
		*evicted = n;
	if (freed)
		*freed = gone;
	r = 0;
out:
	c->mem->free(keys);
	return r;
}

/* The keys of invalid rows, NUL-separated, in memory from c->mem. */
struct key_text {
	char *p;
	size_t len, cap;
};

static int key_text_add(struct kj__cache *c, struct key_text *t, const char *key)
{
	size_t n = strlen(key) + 1;

	if (t->cap - t->len < n) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		while (cap - t->len < n)
			cap *= 2;
		char *p = c->mem->realloc(t->p, cap);
		if (p == NULL)
			return KJIT_ENOMEM;
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, key, n);
	t->len += n;
	return 0;
}

/* Drops rows the load skipped (bad fields): they are in the index only.
 * Their keys are collected first, then deleted in one transaction. */
static int drop_bad_rows(struct kj__cache *c, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
			 void *arg, uint64_t *bad)
{
	sqlite3_stmt *st = NULL;
	struct kj__cache_entry e;
	struct key_text keys = { 0 };
	size_t n = 0;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(c->db, "SELECT " ENTRY_COLS " FROM objects", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return kj__db_fail(c, "verify");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint8_t k[KJ_SHA256_LEN];
		const char *key = kj__db_col_text(st, 0) ? kj__db_col_text(st, 0) : "";
		kj__db_row_entry(st, &e);
		if (kj__hex_ok(key) && (kj__cache_unhex(key, k), kj__tab_find(c, k)) != NONE)
			continue;
		if (fn)
			fn(&e, "invalid index row", arg);
		if ((r = key_text_add(c, &keys, key)) < 0)
			goto out;
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = kj__db_fail(c, "verify");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((r = kj__db_begin(c)) < 0)
		goto out;
	for (size_t off = 0; off < keys.len; off += strlen(keys.p + off) + 1) {
		if ((r = kj__db_delete_row(c, keys.p + off)) < 0) {
			kj__db_rollback(c);
			goto out;
		}
	}
	if ((r = kj__db_commit(c)) < 0)
		goto out;
	c->bad_rows = 0;
	*bad += n;
out:
	sqlite3_finalize(st);
	c->mem->free(keys.p);
	return r;
}

int kj__cache_verify(struct kj__cache *c, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
		     void *arg, uint64_t *checked, uint64_t *bad)
{
	uint64_t nchecked = 0, nbad = 0;
	int r, first = 0;

	/* Downwards: dropping entry i moves the last entry, already checked,
	 * into i. */
	for (size_t i = c->n; i-- > 0;) {
		struct kj__cache_entry e;
		uint8_t *buf = NULL;
		char why[128];
		struct stat st;
		nchecked++;
		r = kj__obj_read(c, &c->ents[i], &buf, &st, why, sizeof why); /* the disk, not the hot set */
		c->mem->free(buf);
		if (r == KJIT_ECORRUPT) {
			kj__tab_fill_entry(c, &c->ents[i], &e);
			kj__cache_say(c, "object %s corrupt (%s); dropped, will recompile", e.key, why);
			if (fn)
				fn(&e, why, arg);
			kj__obj_drop(c, i);
			kj__cache_counter_add(c, "corrupt", 1);
			nbad++;
		} else if (r < 0 && first == 0) {
			first = r; /* logged; the object stays */
		}
	}
	if (c->bad_rows && (r = drop_bad_rows(c, fn, arg, &nbad)) < 0 && first == 0)
		first = r;
	kj__obj_sweep(c, 1);
	if (checked)
		*checked = nchecked;
	if (bad)
		*bad = nbad;
	return first;
}

int kj__cache_clear(struct kj__cache *c, const char *target, uint64_t *removed)
{
	uint8_t (*keys)[KJ_SHA256_LEN] = NULL;
	size_t n = 0;
	int r;

	if (removed)
		*removed = 0;
	if (c->n) {
		keys = c->mem->malloc(c->n * sizeof *keys);
		if (keys == NULL)
			return KJIT_ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++)
		if (target == NULL || strcmp(c->tuples[c->ents[i].tuple].target, target) == 0)
			memcpy(keys[n++], c->ents[i].key, KJ_SHA256_LEN);
	r = remove_entries(c, keys, n);
	c->mem->free(keys);
	if (r < 0)
		return r;
	if (target == NULL)
		kj__tab_clear(c); /* also forgets dirty keys */
	if (removed)
		*removed = n;
	return 0;
}
