/* maint.c: the maintenance of a cache: gc (evict least recently used
 * objects down to a size), verify (re-hash every object from disk, drop
 * the corrupt and the invalid rows) and clear (remove everything, or one
 * target), here as calls that do it all on the caller's thread; job.c
 * runs the same steps with the slow part on another thread (kjitd).
 * Here also: gc's choice of victims (kj__maint_victims) and the dropping
 * of invalid rows.
 *
 * Invariants:
 *  - gc evicts in LRU order (last_used, then the use sequence), owners
 *    over their share of the cache first (share.c picks the victims),
 *    after a flush so that order includes the hits counted in memory.
 *  - verify reads from disk, never from the hot set, and treats an I/O
 *    error as "unknown" (the object stays), corruption as "drop".
 *  - gc and verify also sweep files no row names (orphans of a crash).
 *  - Removal: the entries leave the table, then their rows go (in
 *    batches), then their files (job.c says why in that order).
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

int kj__maint_victims(struct kj__cache *c, sqlite3 *db, uint64_t total, uint64_t cap,
		      int (*take)(void *arg, const uint8_t key[KJ_SHA256_LEN]), void *arg)
{
	return kj__share_victims(c, db, total, cap, kj__cache_share(c, cap), take, arg);
}

/* begin, run and finish in a row, on the caller's thread (job.c). */
static int job_sync(struct kj__cache *c, int kind, uint64_t max_size, const char *target,
		    void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg), void *arg,
		    struct kj__cache_job_result *res)
{
	struct kj__cache_job *j = NULL;
	int r;

	memset(res, 0, sizeof *res);
	if ((r = kj__cache_job_begin(c, kind, max_size, target, &j)) < 0)
		return r;
	do {
		kj__cache_job_run(j);
		r = kj__cache_job_finish(j, fn, arg);
	} while (r == 1);
	kj__cache_job_result(j, res);
	kj__cache_job_free(j);
	return r;
}

int kj__cache_gc(struct kj__cache *c, uint64_t max_size, uint64_t *evicted, uint64_t *freed)
{
	struct kj__cache_job_result res;
	int r = job_sync(c, KJ_CACHE_JOB_GC, max_size, NULL, NULL, NULL, &res);

	if (evicted)
		*evicted = res.evicted;
	if (freed)
		*freed = res.freed;
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
int kj__maint_drop_bad_rows(struct kj__cache *c, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
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
	struct kj__cache_job_result res;
	int r = job_sync(c, KJ_CACHE_JOB_VERIFY, 0, NULL, fn, arg, &res);

	if (checked)
		*checked = res.checked;
	if (bad)
		*bad = res.bad;
	return r;
}

int kj__cache_clear(struct kj__cache *c, const char *target, uint64_t *removed)
{
	struct kj__cache_job_result res;
	int r = job_sync(c, KJ_CACHE_JOB_CLEAR, 0, target, NULL, NULL, &res);

	if (removed)
		*removed = res.removed;
	return r;
}
