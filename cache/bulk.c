/* bulk.c: many objects published at once (`kjit import`), with the
 * writing on another thread than the cache's: each object file is placed
 * whole (temporary file, fsync, rename), and every KJ_MAINT_DELETE_BATCH
 * objects their directories are fsync'd and their rows committed in one
 * transaction, through a connection of the bulk's own; the cache's thread
 * then enters the committed ones in its table (kj__cache_bulk_finish).
 *
 * Invariants:
 *  - finish enters at most max entries per call, so that the loop stays
 *    free between calls.
 *  - new, has, add and end run on one thread (any), and touch of the cache
 *    only what never changes after open (dir, fs, mem, log, modes), as
 *    jobrun.c does; finish and free run on the cache's thread.
 *  - A row is committed only after its file is in place and its directory
 *    fsync'd: a crash leaves at worst a file without a row (swept by gc
 *    and verify) or a temporary file (swept at the next open).
 *  - The write lock of the index is held only while a batch's rows are
 *    written, never across an fsync: the loop's own writes wait little.
 *  - A batch whose transaction fails is rolled back and its new files are
 *    removed: nothing of it is served.  Rows replace (INSERT OR REPLACE);
 *    finish skips a key the table has meanwhile (compiled while the import
 *    ran: same key, same object, and if not, a digest mismatch is a miss).
 *  - Temporary names carry ".b<n>", so they never meet the loop's own.
 *  - Entries enter the table with a new use sequence at finish; their
 *    rows keep use sequence 0 until their first hit is flushed.
 */
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

#define BULK_DIRS_MAX 16 /* directories a batch fsyncs by name; past that, at each add */

struct bulk_item {
	const struct kj__cache_entry *e; /* the caller's, valid until end */
	uint8_t key[KJ_SHA256_LEN];
	int backend;
	char target[128], version[64], ext[8];
	uint32_t size, compile_ms;
	int no_entries;                  /* e->entries NULL: the row may be under a legacy key */
	char final[PATH_MAX];
};

struct kj__cache_bulk {
	struct kj__cache *c;
	sqlite3 *db;
	sqlite3_stmt *ins, *has;
	struct bulk_item *items;  /* [0, done) committed; [done, n) in the open batch */
	size_t n, cap, done;
	size_t entered;           /* finish: items [0, entered) are in the table (or skipped) */
	uint64_t tmp_seq;
	char dirs[BULK_DIRS_MAX][PATH_MAX]; /* to fsync before the batch commits */
	size_t ndirs;
	int in_txn;
	int err;                  /* sticky: the first failure stops the bulk */
};

int kj__cache_bulk_new(struct kj__cache *c, struct kj__cache_bulk **out)
{
	struct kj__cache_bulk *b = c->mem->calloc(1, sizeof *b);
	char path[PATH_MAX];
	int r;

	*out = NULL;
	if (b == NULL)
		return KJIT_ENOMEM;
	b->c = c;
	if ((r = kj__cache_pathf(path, sizeof path, "%s/index.sqlite", c->dir)) < 0)
		goto fail;
	if (sqlite3_open_v2(path, &b->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL) !=
		    SQLITE_OK ||
	    (sqlite3_busy_timeout(b->db, KJ_MAINT_BUSY_MS),
	     sqlite3_prepare_v2(b->db, KJ_DB_INSERT_SQL, -1, &b->ins, NULL)) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db, "SELECT 1 FROM objects WHERE key = ?1", -1, &b->has, NULL) != SQLITE_OK) {
		kj__cache_say(c, "index %s: a bulk connection: %s", path, b->db ? sqlite3_errmsg(b->db) : "out of memory");
		r = KJIT_EIO;
		goto fail;
	}
	*out = b;
	return 0;
fail:
	kj__cache_bulk_free(b);
	return r;
}

int kj__cache_bulk_has(struct kj__cache_bulk *b, const char *key)
{
	uint8_t k[KJ_SHA256_LEN];

	/* The open batch's rows are not written yet: a bundle naming a key
	 * twice must not place a second file under the first one's row. */
	if (kj__hex_ok(key)) {
		kj__cache_unhex(key, k);
		for (size_t i = b->done; i < b->n; i++)
			if (memcmp(b->items[i].key, k, KJ_SHA256_LEN) == 0)
				return 1;
	}
	sqlite3_bind_text(b->has, 1, key, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(b->has);
	sqlite3_reset(b->has);
	return rc == SQLITE_ROW;
}

/* Removes the files of the open batch (its rows are not committed). */
static void batch_drop(struct kj__cache_bulk *b)
{
	for (size_t i = b->done; i < b->n; i++)
		if (b->c->fs->unlink(b->items[i].final) < 0 && errno != ENOENT)
			kj__cache_say(b->c, "cannot remove %s: %s", b->items[i].final, strerror(errno));
	b->n = b->done;
}

/* Ends the open batch, whose files are in place: fsyncs their
 * directories, then writes their rows in one transaction (the write lock
 * is held only for the rows, never across a file's fsync).  On a failure
 * the rows are rolled back and the files removed.  0 or KJIT_EIO. */
static int batch_end(struct kj__cache_bulk *b)
{
	struct kj__cache *c = b->c;

	if (b->n == b->done)
		return 0;
	for (size_t i = 0; i < b->ndirs; i++)
		kj__obj_fsync_dir(c, b->dirs[i]);
	b->ndirs = 0;
	if (sqlite3_exec(b->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	b->in_txn = 1;
	for (size_t i = b->done; i < b->n; i++) {
		kj__db_bind_entry(b->ins, b->items[i].e, 0);
		int rc = sqlite3_step(b->ins);
		sqlite3_reset(b->ins);
		sqlite3_clear_bindings(b->ins);
		if (rc != SQLITE_DONE)
			goto fail;
	}
	if (sqlite3_exec(b->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	b->in_txn = 0;
	b->done = b->n;
	return 0;
fail:
	kj__cache_say(c, "index %s/index.sqlite: import: %s", c->dir, sqlite3_errmsg(b->db));
	if (b->in_txn)
		sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
	b->in_txn = 0;
	batch_drop(b);
	return KJIT_EIO;
}

static void note_dir(struct kj__cache_bulk *b, const char *sub)
{
	for (size_t i = 0; i < b->ndirs; i++)
		if (strcmp(b->dirs[i], sub) == 0)
			return;
	if (b->ndirs < BULK_DIRS_MAX)
		snprintf(b->dirs[b->ndirs++], sizeof b->dirs[0], "%s", sub);
	else
		kj__obj_fsync_dir(b->c, sub);
}

/* Places data at it->final through a temporary file.  0 or KJIT_EIO. */
static int place(struct kj__cache_bulk *b, struct bulk_item *it, const uint8_t *data, size_t len)
{
	struct kj__cache *c = b->c;
	char sub[PATH_MAX], tmp[PATH_MAX], hex[KJ_SHA256_HEX_LEN + 1];
	int r, created = 0;

	kj__hex(it->key, hex);
	if ((r = kj__cache_pathf(sub, sizeof sub, "%s/%s-%s", c->dir, it->target, it->version)) < 0 ||
	    (r = kj__cache_pathf(it->final, sizeof it->final, "%s/%s.%s", sub, hex, it->ext)) < 0 ||
	    (r = kj__cache_pathf(tmp, sizeof tmp, "%s.tmp.%ld.b%llu", it->final, (long)getpid(),
				 (unsigned long long)++b->tmp_seq)) < 0)
		return r;
	if ((r = kj__obj_mkdir_below(c, sub)) < 0)
		return r;
	if ((r = kj__obj_write_tmp(c, tmp, data, len, &created)) == 0 && c->fs->rename(tmp, it->final) < 0) {
		kj__cache_say(c, "rename %s to %s: %s", tmp, it->final, strerror(errno));
		r = KJIT_EIO;
	}
	if (r < 0 && created && c->fs->unlink(tmp) < 0 && errno != ENOENT)
		kj__cache_say(c, "cannot remove %s: %s", tmp, strerror(errno));
	if (r == 0)
		note_dir(b, sub);
	return r;
}

int kj__cache_bulk_add(struct kj__cache_bulk *b, struct kj__cache_entry *e, const uint8_t *data, size_t len)
{
	uint8_t dg[KJ_SHA256_LEN];
	int r;

	if (b->err)
		return b->err;
	if ((r = kj__obj_entry_ok(e, data, len)) < 0 || (r = kj__sha256(data, len, dg)) < 0)
		return r;
	if ((r = kj__job_grow(b->c, (void **)&b->items, &b->cap, b->n + 1, sizeof *b->items)) < 0)
		return b->err = r;
	struct bulk_item *it = &b->items[b->n];
	memset(it, 0, sizeof *it);
	kj__cache_unhex(e->key, it->key);
	it->backend = e->backend;
	snprintf(it->target, sizeof it->target, "%s", e->target);
	snprintf(it->version, sizeof it->version, "%s", e->version);
	snprintf(it->ext, sizeof it->ext, "%s", e->ext);
	it->size = (uint32_t)len;
	it->no_entries = e->entries == NULL;
	it->compile_ms = e->compile_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)e->compile_ms;
	kj__hex(dg, e->sha256);
	e->size = len;
	e->created = e->last_used = kj__wall_s();
	e->hits = 0;
	it->e = e;
	if ((r = place(b, it, data, len)) < 0) {
		batch_end(b); /* what was placed before stays */
		return b->err = r;
	}
	b->n++;
	if (b->n - b->done >= KJ_MAINT_DELETE_BATCH && (r = batch_end(b)) < 0)
		return b->err = r;
	return 0;
}

int kj__cache_bulk_end(struct kj__cache_bulk *b)
{
	int r = batch_end(b);

	if (r < 0 && b->err == 0)
		b->err = r;
	return b->err;
}

int kj__cache_bulk_finish(struct kj__cache *c, struct kj__cache_bulk *b, size_t max, uint64_t *added)
{
	size_t end = b->done - b->entered > max ? b->entered + max : b->done;

	for (; b->entered < end; b->entered++) {
		const struct bulk_item *it = &b->items[b->entered];
		struct ent en;
		int r;
		if (kj__tab_find(c, it->key) != NONE)
			continue; /* published meanwhile */
		memset(&en, 0, sizeof en);
		memcpy(en.key, it->key, KJ_SHA256_LEN);
		if ((r = kj__tuple_intern(c, it->backend, it->target, it->version, it->ext, &en.tuple)) < 0 ||
		    (r = kj__tab_reserve(c, c->n + 1)) < 0)
			return r; /* the rest is back at the next open */
		en.size = it->size;
		en.compile_ms = it->compile_ms;
		en.last_used = (uint32_t)kj__wall_s();
		en.seq = ++c->seq;
		kj__tab_add(c, &en);
		c->legacy_rows |= it->no_entries;
		(*added)++;
	}
	return b->entered < b->done;
}

void kj__cache_bulk_free(struct kj__cache_bulk *b)
{
	if (b == NULL)
		return;
	if (b->n > b->done)
		batch_drop(b); /* placed, never indexed: end was not called */
	sqlite3_finalize(b->ins);
	sqlite3_finalize(b->has);
	sqlite3_close(b->db);
	b->c->mem->free(b->items);
	b->c->mem->free(b);
}
