/* index.c: the SQLite index of a cache, <dir>/index.sqlite (WAL):
 * opening (and rebuilding a damaged index; the schema and its upgrades are
 * schema.c's), loading the table, rows, hit counters and their flush,
 * named counters, metadata and who requested each object (recipes:
 * recipe.c).
 *
 * Invariants:
 *  - The index is the durable truth; the table (table.c) is loaded from it
 *    at open and changed only after the index was.  A row is inserted only
 *    after its file was renamed into place (store.c), and deleted before
 *    its file is, so a crash leaves an orphan file, never a row without
 *    its file.
 *  - Rows the load finds invalid are counted in c->bad_rows, left out of
 *    the table and dropped by verify (maint.c).
 *  - Hits are counted in the table; kj__cache_flush writes every pending
 *    count in one transaction and clears them only once it committed.
 *  - An index that SQLite reports corrupt, or that fails quick_check after
 *    a close that was not clean, is moved aside (with its WAL) and rebuilt
 *    empty: objects are recompiled, never served from a damaged index.
 *  - The handle is opened without SQLite's mutex: one thread uses it.
 * c->db and the statements c->st[] are owned here (kj__db_close).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache-int.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

#define BUSY_TIMEOUT_MS 5000          /* only kjit tools open the index besides us */
#define BUSY_NAP_US 100               /* one nap while another connection writes */

static const char *const stmt_sql[ST_COUNT] = {
	[ST_INSERT] = KJ_DB_INSERT_SQL,
	[ST_DELETE] = "DELETE FROM objects WHERE key = ?1",
	[ST_TOUCH] = "UPDATE objects SET hits = hits + ?1, last_used = max(last_used, ?2),"
		     " used_seq = ?3 WHERE key = ?4",
	[ST_COUNTER_ADD] = "INSERT INTO counters(name, value) VALUES(?1, ?2)"
			   " ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
	[ST_COUNTER_GET] = "SELECT value FROM counters WHERE name = ?1",
	[ST_GET] = "SELECT " ENTRY_COLS " FROM objects WHERE key = ?1",
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_DIGEST] = "SELECT sha256 FROM objects WHERE key = ?1",
	[ST_NOTE_USER] = "INSERT OR IGNORE INTO object_uids(key, uid) SELECT ?1, ?2"
			 " WHERE EXISTS (SELECT 1 FROM objects WHERE key = ?1)",
	[ST_HAS_USER] = "SELECT 1 FROM object_uids WHERE key = ?1 AND uid = ?2",
	[ST_SET_OWNER] = "UPDATE objects SET owner = ?2 WHERE key = ?1 AND owner IS NULL",
	[ST_ENTRIES] = "SELECT entries FROM objects WHERE key = ?1",
	[ST_SET_ENTRIES] = "UPDATE objects SET entries = ?2 WHERE key = ?1 AND entries IS NULL",
	[ST_RECIPE_OF] = "INSERT OR REPLACE INTO recipe_of(key, recipe) VALUES(?1, ?2)",
	[ST_SET_RSIZE] = "UPDATE objects SET rsize = ?2 WHERE key = ?1",
	[ST_SAVEPOINT] = "SAVEPOINT publish",
	[ST_RELEASE] = "RELEASE publish",
	[ST_ROLLBACK_TO] = "ROLLBACK TO publish",
};

int kj__db_fail(const struct kj__cache *c, const char *what)
{
	kj__cache_say(c, "index %s/index.sqlite: %s: %s", c->dir, what, sqlite3_errmsg(c->db));
	return KJIT_EIO;
}

int kj__db_run(struct kj__cache *c, enum stmt_id id, const char *what)
{
	sqlite3_stmt *st = c->st[id];
	int rc = sqlite3_step(st), r = 0;

	if (rc != SQLITE_DONE)
		r = kj__db_fail(c, what);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

int kj__db_begin(struct kj__cache *c)
{
	return kj__db_run(c, ST_BEGIN, "begin");
}

int kj__db_commit(struct kj__cache *c)
{
	int r = kj__db_run(c, ST_COMMIT, "commit");
	if (r < 0 && !sqlite3_get_autocommit(c->db))
		kj__db_run(c, ST_ROLLBACK, "rollback");
	return r;
}

void kj__db_rollback(struct kj__cache *c)
{
	if (!sqlite3_get_autocommit(c->db))
		kj__db_run(c, ST_ROLLBACK, "rollback");
}

/* ---- opening and loading ---- */

int kj__db_corrupt_rc(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

int kj__db_exec(struct kj__cache *c, const char *sql, int *corrupt)
{
	char *msg = NULL;
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);

	if (rc == SQLITE_OK)
		return 0;
	*corrupt = kj__db_corrupt_rc(rc);
	kj__cache_say(c, "index %s/index.sqlite: %s: %s", c->dir, sql, msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return KJIT_EIO;
}

/* Runs a one-value query into *out (text copied into buf when given). */
static int db_value(struct kj__cache *c, const char *sql, int64_t *out, char *buf, size_t size,
		    int *corrupt)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			if (out)
				*out = sqlite3_column_int64(st, 0);
			if (buf) {
				const unsigned char *t = sqlite3_column_text(st, 0);
				snprintf(buf, size, "%s", t ? (const char *)t : "");
			}
			rc = SQLITE_OK;
		}
	}
	if (rc != SQLITE_OK) {
		*corrupt = kj__db_corrupt_rc(rc);
		kj__cache_say(c, "index %s/index.sqlite: %s: %s", c->dir, sql, sqlite3_errmsg(c->db));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : KJIT_EIO;
}

void kj__db_close(struct kj__cache *c)
{
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(c->st[i]);
		c->st[i] = NULL;
	}
	if (c->db && sqlite3_close(c->db) != SQLITE_OK)
		kj__cache_say(c, "index %s/index.sqlite: close: %s", c->dir, sqlite3_errmsg(c->db));
	c->db = NULL;
}

/* SQLite creates its files with 0644 less the umask and gives the -wal and
 * -shm the main file's mode: create the index first with ours. */
static int precreate_index(struct kj__cache *c, const char *path)
{
	int fd = c->fs->open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, c->file_mode);

	if (fd < 0) {
		kj__cache_say(c, "cannot open %s: %s%s", path, strerror(errno),
			      errno == ELOOP ? " (a symlink: remove it)" : "");
		return errno == ELOOP ? KJIT_EDENIED : KJIT_EIO;
	}
	if (c->fs->close(fd) < 0) {
		kj__cache_say(c, "close %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	return 0;
}

/* The loop's wait for a write lock a maintenance thread holds (one batch
 * of its rows, cache/job.c): short naps instead of SQLite's default, which
 * sleeps 1, 2, 5, 10 ms... on successive tries, so that a lock freed
 * after 300 us costs the loop about that, not a 10 ms nap.  Gives up
 * after BUSY_TIMEOUT_MS, as before. */
static int busy_nap(void *arg, int count)
{
	struct timespec nap = { 0, BUSY_NAP_US * 1000 };

	(void)arg;
	if ((long long)count * BUSY_NAP_US >= (long long)BUSY_TIMEOUT_MS * 1000)
		return 0;
	nanosleep(&nap, NULL);
	return 1;
}

/* Opens, checks and if need be creates the index.  *corrupt tells the
 * caller that moving the file aside may help. */
static int open_index(struct kj__cache *c, const char *path, int *corrupt)
{
	char mode[16], check[64];
	int64_t version = 0;
	int rc, r;

	*corrupt = 0;
	if ((r = precreate_index(c, path)) < 0)
		return r;
	/* One thread uses the handle: no mutex (it costs ~10% of the load).
	 * NOFOLLOW: an index replaced by a symlink is refused. */
	rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			     SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		*corrupt = kj__db_corrupt_rc(rc);
		kj__cache_say(c, "cannot open index %s: %s", path, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
		return KJIT_EIO;
	}
	sqlite3_busy_handler(c->db, busy_nap, NULL);
	if ((r = db_value(c, "PRAGMA journal_mode=WAL", NULL, mode, sizeof mode, corrupt)) < 0)
		return r;
	if (strcmp(mode, "wal") != 0) {
		kj__cache_say(c, "index %s: cannot use WAL mode (got %s)", path, mode);
		return KJIT_EIO;
	}
	if ((r = kj__db_exec(c, "PRAGMA synchronous=NORMAL", corrupt)) < 0)
		return r;
	/* quick_check reads the whole index (about a second at a million
	 * entries): only after a close that was not clean. */
	if (c->check_index && (r = db_value(c, "PRAGMA quick_check", NULL, check, sizeof check, corrupt)) < 0)
		return r;
	if (c->check_index && strcmp(check, "ok") != 0) {
		kj__cache_say(c, "index %s fails its integrity check: %s", path, check);
		*corrupt = 1;
		return KJIT_EIO;
	}
	if ((r = db_value(c, "PRAGMA user_version", &version, NULL, 0, corrupt)) < 0)
		return r;
	if (version > KJ_SCHEMA_VERSION) {
		kj__cache_say(c, "index %s has schema %lld, newer than this kjit's %d: use a newer kjit"
			      " or another KJIT_CACHE_DIR", path, (long long)version, KJ_SCHEMA_VERSION);
		return KJIT_EIO;
	}
	if ((r = kj__db_schema(c, version, corrupt)) < 0)
		return r;
	for (int i = 0; i < ST_COUNT; i++) {
		rc = sqlite3_prepare_v2(c->db, stmt_sql[i], -1, &c->st[i], NULL);
		if (rc != SQLITE_OK) {
			*corrupt = kj__db_corrupt_rc(rc);
			return kj__db_fail(c, "prepare");
		}
	}
	return 0;
}

int kj__cache_may_hold_legacy(const struct kj__cache *c)
{
	return c->legacy_rows;
}

/* Moves a damaged index (and its WAL) out of the way. */
static int db_move_aside(struct kj__cache *c, const char *path)
{
	char to[PATH_MAX], from[PATH_MAX];
	long long now = (long long)kj__wall_s();
	int r;

	if ((r = kj__cache_pathf(to, sizeof to, "%s.corrupt-%lld", path, now)) < 0)
		return r;
	if (c->fs->rename(path, to) < 0 && errno != ENOENT) {
		kj__cache_say(c, "cannot move the damaged index %s aside: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	/* A WAL left behind would be replayed into the new, empty index. */
	if ((r = kj__cache_pathf(from, sizeof from, "%s-wal", path)) < 0 ||
	    (r = kj__cache_pathf(to, sizeof to, "%s.corrupt-%lld-wal", path, now)) < 0)
		return r;
	if (c->fs->rename(from, to) < 0 && errno != ENOENT) {
		kj__cache_say(c, "cannot move %s aside: %s", from, strerror(errno));
		return KJIT_EIO;
	}
	if ((r = kj__cache_pathf(from, sizeof from, "%s-shm", path)) < 0)
		return r;
	if (c->fs->unlink(from) < 0 && errno != ENOENT) {
		kj__cache_say(c, "cannot remove %s: %s", from, strerror(errno));
		return KJIT_EIO;
	}
	kj__cache_say(c, "warning: index %s was damaged; moved aside to %s.corrupt-%lld and rebuilt empty"
		      " (objects will be recompiled)", path, path, now);
	return 0;
}

int kj__db_open(struct kj__cache *c, const char *path)
{
	int r, corrupt = 0;

	r = open_index(c, path, &corrupt);
	if (r < 0 && corrupt) {
		kj__db_close(c);
		if ((r = db_move_aside(c, path)) < 0)
			return r;
		r = open_index(c, path, &corrupt);
	}
	return r;
}

/* One prepared SELECT. */
int kj__db_load(struct kj__cache *c)
{
	sqlite3_stmt *st = NULL;
	int64_t count = 0;
	int corrupt, rc, r;

	if ((r = db_value(c, "SELECT count(*) FROM objects", &count, NULL, 0, &corrupt)) < 0)
		return r;
	if ((r = kj__tab_reserve(c, (size_t)count)) < 0)
		return r;
	rc = sqlite3_prepare_v2(c->db, "SELECT key, backend, target, version, ext, size, compile_ms,"
				" last_used, used_seq, owner, rsize, entries IS NULL FROM objects", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return kj__db_fail(c, "prepare load");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		int backend = sqlite3_column_int(st, 1);
		const char *target = (const char *)sqlite3_column_text(st, 2);
		const char *version = (const char *)sqlite3_column_text(st, 3);
		const char *ext = (const char *)sqlite3_column_text(st, 4);
		int64_t size = sqlite3_column_int64(st, 5);
		int64_t last_used = sqlite3_column_int64(st, 7);
		int64_t seq = sqlite3_column_int64(st, 8);
		struct ent en;

		if (!key || !target || !version || !ext || !kj__hex_ok(key) || !kjit_backend_name(backend) ||
		    !kj__token_ok(target, KJ_TARGET_MAX) || !kj__token_ok(version, KJ_VERSION_STR_MAX) ||
		    !kj__cache_ext_ok(ext) || size <= 0 || size > KJ_OBJECT_MAX || last_used < 0 ||
		    last_used > UINT32_MAX || seq < 0) {
			c->bad_rows++;
			continue;
		}
		memset(&en, 0, sizeof en);
		kj__cache_unhex(key, en.key);
		int64_t cms = sqlite3_column_int64(st, 6);
		en.compile_ms = cms < 0 ? 0 : cms > UINT32_MAX ? UINT32_MAX : (uint32_t)cms;
		en.size = (uint32_t)size;
		en.last_used = (uint32_t)last_used;
		en.seq = (uint64_t)seq;
		int64_t rsize = sqlite3_column_int64(st, 10); /* NULL (none, or older than schema 6): 0 */
		en.rsize = rsize > 0 && rsize <= UINT32_MAX ? (uint32_t)rsize : 0;
		if (sqlite3_column_type(st, 9) == SQLITE_INTEGER) {
			int64_t owner = sqlite3_column_int64(st, 9);
			en.owner = owner >= 0 && owner < UINT32_MAX ? (uint32_t)owner + 1 : 0;
		}
		if (en.seq > c->seq)
			c->seq = en.seq;
		/* A row without entries was written before entries left hip's and
		 * cuda's keys (schema 5), or imported from such a cache: only then
		 * may a request's legacy key find something (kj__cache_may_hold_legacy). */
		c->legacy_rows |= sqlite3_column_int(st, 11) != 0;
		if ((r = kj__tuple_intern(c, backend, target, version, ext, &en.tuple)) < 0 ||
		    (r = kj__tab_reserve(c, c->n + 1)) < 0)
			goto out;
		kj__tab_add(c, &en); /* key is the primary key: no duplicates */
	}
	if (rc != SQLITE_DONE) {
		r = kj__db_fail(c, "load");
		goto out;
	}
	if (c->bad_rows)
		kj__cache_say(c, "index %s/index.sqlite: %zu invalid row(s) ignored (kjit verify drops them)",
			      c->dir, c->bad_rows);
	r = 0;
out:
	sqlite3_finalize(st);
	return r;
}

/* ---- rows ---- */

int kj__db_row_digest(struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], uint8_t out[KJ_SHA256_LEN])
{
	sqlite3_stmt *st = c->st[ST_DIGEST];
	char hex[KJ_SHA256_HEX_LEN + 1];
	int rc, r = KJIT_ENOENT;

	kj__hex(key, hex);
	sqlite3_bind_text(st, 1, hex, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *sha = (const char *)sqlite3_column_text(st, 0);
		if (sha && kj__hex_ok(sha)) {
			kj__cache_unhex(sha, out);
			r = 0;
		}
	} else if (rc != SQLITE_DONE) {
		r = kj__db_fail(c, "digest");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

void kj__db_bind_entry(sqlite3_stmt *st, const struct kj__cache_entry *e, uint64_t seq)
{
	sqlite3_bind_text(st, 1, e->key, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, e->backend);
	sqlite3_bind_text(st, 3, e->target, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, e->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, e->ext, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)e->size);
	sqlite3_bind_text(st, 7, e->sha256, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, e->created);
	sqlite3_bind_int64(st, 9, e->last_used);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)seq);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)e->compile_ms);
	sqlite3_bind_text(st, 12, e->source_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 13, e->options, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 14, e->compiler, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 15, e->log, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 16, e->lowered, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 17, e->entries, -1, SQLITE_STATIC);
}

int kj__db_insert_row(struct kj__cache *c, const struct kj__cache_entry *e, uint64_t seq)
{
	kj__db_bind_entry(c->st[ST_INSERT], e, seq);
	return kj__db_run(c, ST_INSERT, "insert");
}

int kj__db_recipe_row(struct kj__cache *c, const char *key, const char *recipe, uint32_t rsize)
{
	int r;

	sqlite3_bind_text(c->st[ST_RECIPE_OF], 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(c->st[ST_RECIPE_OF], 2, recipe, -1, SQLITE_STATIC);
	if ((r = kj__db_run(c, ST_RECIPE_OF, "recipe")) < 0)
		return r;
	sqlite3_bind_text(c->st[ST_SET_RSIZE], 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(c->st[ST_SET_RSIZE], 2, rsize);
	return kj__db_run(c, ST_SET_RSIZE, "recipe size");
}

int kj__db_publish_rows(struct kj__cache *c, const struct kj__cache_entry *e, uint64_t seq,
			const struct kj__pub_rows *w)
{
	int outer = !sqlite3_get_autocommit(c->db), owned, r;

	if ((r = kj__db_run(c, ST_SAVEPOINT, "savepoint")) < 0)
		return r;
	kj__db_bind_entry(c->st[ST_INSERT], e, seq);
	r = kj__db_run(c, ST_INSERT, "insert");
	if (r == 0 && w->recipe)
		r = kj__db_recipe_row(c, e->key, w->recipe, w->rsize);
	for (size_t i = 0; r == 0 && i < w->n_uids; i++)
		r = kj__db_user_rows(c, e->key, w->uids[i], &owned);
	if (r == 0 && (r = kj__db_run(c, ST_RELEASE, "commit")) == 0)
		return 0;
	/* a failed RELEASE of the outermost savepoint (the commit) leaves it
	 * open: undo it as any other failure; gone already, nothing to undo */
	if (outer || !sqlite3_get_autocommit(c->db)) {
		kj__db_run(c, ST_ROLLBACK_TO, "rollback");
		kj__db_run(c, ST_RELEASE, "rollback");
	}
	return r;
}

int kj__db_delete_row(struct kj__cache *c, const char *hex)
{
	sqlite3_bind_text(c->st[ST_DELETE], 1, hex, -1, SQLITE_STATIC);
	return kj__db_run(c, ST_DELETE, "delete");
}

/* ---- counters, flush, metadata ---- */

int kj__cache_flush(struct kj__cache *c)
{
	sqlite3_stmt *st = c->st[ST_TOUCH];
	char hex[KJ_SHA256_HEX_LEN + 1];
	int r;

	if (c->ndirty == 0)
		return 0;
	if ((r = kj__db_begin(c)) < 0)
		return r;
	for (size_t i = 0; i < c->ndirty; i++) {
		size_t k = kj__tab_find(c, c->dirty[i]);
		if (k == NONE || c->ents[k].pending == 0)
			continue;
		kj__hex(c->dirty[i], hex);
		sqlite3_bind_int64(st, 1, c->ents[k].pending);
		sqlite3_bind_int64(st, 2, c->ents[k].last_used);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)c->ents[k].seq);
		sqlite3_bind_text(st, 4, hex, -1, SQLITE_STATIC);
		if ((r = kj__db_run(c, ST_TOUCH, "update hits")) < 0) {
			kj__db_rollback(c);
			return r;
		}
	}
	if ((r = kj__db_commit(c)) < 0)
		return r;
	for (size_t i = 0; i < c->ndirty; i++) {
		size_t k = kj__tab_find(c, c->dirty[i]);
		if (k != NONE)
			c->ents[k].pending = 0;
	}
	c->ndirty = 0;
	return 0;
}

int kj__cache_counter_add(struct kj__cache *c, const char *name, int64_t delta)
{
	sqlite3_stmt *st = c->st[ST_COUNTER_ADD];

	if (name == NULL || *name == '\0')
		return KJIT_EINVAL;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, delta);
	return kj__db_run(c, ST_COUNTER_ADD, "counter");
}

int kj__cache_counter_get(struct kj__cache *c, const char *name, int64_t *value)
{
	sqlite3_stmt *st = c->st[ST_COUNTER_GET];
	int rc, r = 0;

	*value = 0;
	if (name == NULL || *name == '\0')
		return KJIT_EINVAL;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*value = sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_DONE)
		r = kj__db_fail(c, "counter");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

const char *kj__db_col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

void kj__db_row_entry(sqlite3_stmt *st, struct kj__cache_entry *e)
{
	memset(e, 0, sizeof *e);
	snprintf(e->key, sizeof e->key, "%s", kj__db_col_text(st, 0) ? kj__db_col_text(st, 0) : "");
	e->backend = sqlite3_column_int(st, 1);
	snprintf(e->target, sizeof e->target, "%s", kj__db_col_text(st, 2) ? kj__db_col_text(st, 2) : "");
	snprintf(e->version, sizeof e->version, "%s", kj__db_col_text(st, 3) ? kj__db_col_text(st, 3) : "");
	snprintf(e->ext, sizeof e->ext, "%s", kj__db_col_text(st, 4) ? kj__db_col_text(st, 4) : "");
	e->size = (uint64_t)sqlite3_column_int64(st, 5);
	snprintf(e->sha256, sizeof e->sha256, "%s", kj__db_col_text(st, 6) ? kj__db_col_text(st, 6) : "");
	e->created = sqlite3_column_int64(st, 7);
	e->last_used = sqlite3_column_int64(st, 8);
	e->hits = (uint64_t)sqlite3_column_int64(st, 9);
	e->compile_ms = (uint64_t)sqlite3_column_int64(st, 10);
	e->source_name = kj__db_col_text(st, 11);
	e->options = kj__db_col_text(st, 12);
	e->compiler = kj__db_col_text(st, 13);
	e->log = kj__db_col_text(st, 14);
	e->lowered = kj__db_col_text(st, 15);
	e->entries = kj__db_col_text(st, 16);
}

void kj__db_merge_pending(const struct kj__cache *c, struct kj__cache_entry *e)
{
	uint8_t k[KJ_SHA256_LEN];
	size_t i;

	if (!kj__hex_ok(e->key))
		return;
	kj__cache_unhex(e->key, k);
	if ((i = kj__tab_find(c, k)) == NONE)
		return;
	e->hits += c->ents[i].pending;
	if (c->ents[i].last_used > e->last_used)
		e->last_used = c->ents[i].last_used;
}

void kj__cache_entry_free(struct kj__cache_entry *e)
{
	if (e == NULL)
		return;
	free((char *)e->source_name); /* from c->mem, which free(3) releases (cache.h) */
	free((char *)e->options);
	free((char *)e->compiler);
	free((char *)e->log);
	free((char *)e->lowered);
	free((char *)e->entries);
	e->source_name = e->options = e->compiler = e->log = e->lowered = e->entries = NULL;
}

int kj__cache_get(struct kj__cache *c, const char *key, struct kj__cache_entry *e)
{
	sqlite3_stmt *st = c->st[ST_GET];
	struct kj__cache_entry row;
	uint8_t k[KJ_SHA256_LEN];
	int rc, r;

	memset(e, 0, sizeof *e);
	if ((r = kj__cache_key_arg(key, k)) < 0)
		return r;
	if (c->pubs && (r = kj__pub_entry(c, k, e, 1)) != KJIT_ENOENT)
		return r; /* its publish is in flight (publish.c) */
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		r = 0; /* not kj__pub_entry's KJIT_ENOENT: a row found while another publish is in flight */
		kj__db_row_entry(st, &row);
		*e = row;
		e->source_name = kj__cache_strdup(c, row.source_name);
		e->options = kj__cache_strdup(c, row.options);
		e->compiler = kj__cache_strdup(c, row.compiler);
		e->log = kj__cache_strdup(c, row.log);
		e->lowered = kj__cache_strdup(c, row.lowered);
		e->entries = kj__cache_strdup(c, row.entries);
		if ((row.source_name && !e->source_name) || (row.options && !e->options) ||
		    (row.compiler && !e->compiler) || (row.log && !e->log) || (row.lowered && !e->lowered) ||
		    (row.entries && !e->entries)) {
			kj__cache_entry_free(e);
			r = KJIT_ENOMEM;
		} else {
			kj__db_merge_pending(c, e);
		}
	} else if (rc == SQLITE_DONE) {
		r = KJIT_ENOENT;
	} else {
		r = kj__db_fail(c, "get");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

/* ---- who requested an object ---- */

int kj__db_user_rows(struct kj__cache *c, const char *key, uid_t uid, int *owned)
{
	int r;

	*owned = 0;
	sqlite3_bind_text(c->st[ST_NOTE_USER], 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(c->st[ST_NOTE_USER], 2, (sqlite3_int64)uid);
	if ((r = kj__db_run(c, ST_NOTE_USER, "note user")) < 0)
		return r;
	/* the first requester owns it: its share of the cache pays (maint.c) */
	sqlite3_bind_text(c->st[ST_SET_OWNER], 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(c->st[ST_SET_OWNER], 2, (sqlite3_int64)uid);
	if ((r = kj__db_run(c, ST_SET_OWNER, "set owner")) < 0)
		return r;
	*owned = sqlite3_changes(c->db) != 0;
	return 0;
}

int kj__cache_note_user(struct kj__cache *c, const char *key, uid_t uid)
{
	uint8_t k[KJ_SHA256_LEN];
	size_t i;
	int owned, r;

	if (!kj__hex_ok(key))
		return KJIT_EINVAL;
	if ((r = kj__db_user_rows(c, key, uid, &owned)) < 0 || !owned)
		return r;
	kj__cache_unhex(key, k);
	if ((i = kj__tab_find(c, k)) != NONE && c->ents[i].owner == 0)
		c->ents[i].owner = (uint32_t)uid + 1; /* the table follows the row */
	return 0;
}

int kj__cache_requested_by(struct kj__cache *c, const char *key, uid_t uid)
{
	sqlite3_stmt *st = c->st[ST_HAS_USER];
	int rc;

	if (!kj__hex_ok(key))
		return 0;
	uint8_t k[KJ_SHA256_LEN];
	if (c->pubs && (kj__cache_unhex(key, k), kj__pub_requested(c, k, uid)))
		return 1; /* its publish is in flight (publish.c) */
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)uid);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		kj__db_fail(c, "requested by");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_ROW;
}
