/* jobrun.c: the part of a gc, verify or clear job (job.c) that runs on
 * another thread than the cache's: reading and hashing every object,
 * choosing gc's victims (maint.c), deleting rows in batches and their
 * files, listing the object directories for what a crash left.
 *
 * Invariants: it touches the job, and of the cache only what never
 * changes after open (dir, fs, mem, log); never the entry table, the hot
 * set, the tuples or c->db.  It reads and writes the index through a
 * connection of its own, opened and closed by each run, in transactions
 * of at most KJ_MAINT_DELETE_BATCH rows.  What it finds is a candidate
 * only: job.c's finish checks each against the table on the loop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

static int db_open(struct kj__cache *c, sqlite3 **db)
{
	char path[PATH_MAX];
	int r;

	*db = NULL;
	if ((r = kj__cache_pathf(path, sizeof path, "%s/index.sqlite", c->dir)) < 0)
		return r;
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL) !=
	    SQLITE_OK) {
		kj__cache_say(c, "index %s: a maintenance connection: %s", path,
			      *db ? sqlite3_errmsg(*db) : "out of memory");
		sqlite3_close(*db);
		*db = NULL;
		return KJIT_EIO;
	}
	sqlite3_busy_timeout(*db, KJ_MAINT_BUSY_MS);
	return 0;
}

static int db_say(struct kj__cache *c, sqlite3 *db, const char *what)
{
	kj__cache_say(c, "index %s/index.sqlite: %s: %s", c->dir, what, sqlite3_errmsg(db));
	return KJIT_EIO;
}

/* The directory of tuple t checked once per run: 1 real, else a code. */
static int tuple_dir(struct kj__cache_job *j, struct kj__job_tuple *t)
{
	char path[PATH_MAX];

	if (t->dir != 0)
		return t->dir;
	int r = kj__cache_pathf(path, sizeof path, "%s/%s", j->c->dir, t->sub);
	if (r == 0)
		r = kj__obj_dir_check(j->c, path);
	t->dir = r == 0 ? 1 : r;
	return t->dir;
}

/* Reads and hashes the file of e into *buf (grown as needed) and compares
 * it with want.  0; KJIT_ECORRUPT with f filled; KJIT_EIO (logged). */
static int check_file(struct kj__cache_job *j, const struct kj__job_ent *e, const uint8_t *want, uint8_t **buf,
		      size_t *bufcap, struct kj__job_found *f)
{
	struct kj__cache *c = j->c;
	char path[PATH_MAX], hex[KJ_SHA256_HEX_LEN + 1];
	struct stat st;
	uint8_t d[KJ_SHA256_LEN];
	int fd, r = 0;

	kj__hex(e->key, hex);
	if ((r = kj__cache_pathf(path, sizeof path, "%s/%s/%s.%s", c->dir, j->tuples[e->tuple].sub, hex,
				 j->tuples[e->tuple].ext)) < 0)
		return r;
	f->what = KJ_JOB_FOUND_NOFILE;
	if ((r = kj__obj_open(c, path, &fd, &st, f->why, sizeof f->why)) < 0)
		return r;
	f->what = KJ_JOB_FOUND_FILE;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->mtim = st.st_mtim;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != e->size) {
		snprintf(f->why, sizeof f->why, "size mismatch: %lld bytes on disk, %u in the index",
			 (long long)st.st_size, e->size);
		r = KJIT_ECORRUPT;
		goto out;
	}
	if ((r = kj__job_grow(c, (void **)buf, bufcap, e->size ? e->size : 1, 1)) < 0)
		goto out;
	if ((r = kj__obj_read_exact(c, fd, path, *buf, e->size, f->why, sizeof f->why)) < 0)
		goto out;
	if ((r = kj__sha256(*buf, e->size, d)) < 0)
		goto out;
	if (memcmp(d, want, sizeof d) != 0) {
		snprintf(f->why, sizeof f->why, "digest mismatch");
		r = KJIT_ECORRUPT;
	}
out:
	if (c->fs->close(fd) < 0)
		kj__cache_say(c, "close %s: %s", path, strerror(errno));
	return r;
}

/* One object of verify: its directory, its row's digest, its file. */
static void verify_one(struct kj__cache_job *j, sqlite3 *db, sqlite3_stmt *dig, const struct kj__job_ent *e, uint8_t **buf,
		       size_t *bufcap)
{
	char hex[KJ_SHA256_HEX_LEN + 1];
	uint8_t want[KJ_SHA256_LEN];
	struct kj__job_found f = { 0 };
	int r, dir = tuple_dir(j, &j->tuples[e->tuple]);

	j->res.checked++;
	kj__hex(e->key, hex);
	if (dir == KJIT_ENOENT || dir == KJIT_EDENIED) {
		f.what = KJ_JOB_FOUND_NOFILE;
		snprintf(f.why, sizeof f.why, "%s", dir == KJIT_ENOENT ? "missing" : "its directory is not a real directory");
		r = KJIT_ECORRUPT;
	} else if (dir != 1) {
		r = dir;
	} else {
		sqlite3_bind_text(dig, 1, hex, -1, SQLITE_TRANSIENT);
		int rc = sqlite3_step(dig);
		const char *sha = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(dig, 0) : NULL;
		if (rc == SQLITE_DONE) {
			r = 0; /* the row went since begin: nothing left to check */
		} else if (rc != SQLITE_ROW) {
			r = db_say(j->c, db, "verify");
		} else if (sha == NULL || !kj__hex_ok(sha)) {
			f.what = KJ_JOB_FOUND_ROW;
			snprintf(f.why, sizeof f.why, "its index row has no valid digest");
			r = KJIT_ECORRUPT;
		} else {
			kj__cache_unhex(sha, want);
			r = 1;
		}
		sqlite3_reset(dig);
		if (r == 1)
			r = check_file(j, e, want, buf, bufcap, &f);
	}
	if (r == KJIT_ECORRUPT) {
		struct kj__job_found *p = kj__job_found_add(j, e->key);
		if (p == NULL) {
			kj__job_fail(j, KJIT_ENOMEM);
			return;
		}
		*p = f;
		memcpy(p->key, e->key, KJ_SHA256_LEN);
	} else if (r < 0) {
		kj__job_fail(j, r); /* logged; the object stays */
	}
}

static void run_verify(struct kj__cache_job *j, sqlite3 *db)
{
	sqlite3_stmt *dig = NULL;
	uint8_t *buf = NULL;
	size_t bufcap = 0;

	if (sqlite3_prepare_v2(db, "SELECT sha256 FROM objects WHERE key = ?1", -1, &dig, NULL) != SQLITE_OK) {
		kj__job_fail(j, db_say(j->c, db, "verify"));
		return;
	}
	for (size_t i = 0; i < j->n; i++)
		verify_one(j, db, dig, &j->ents[i], &buf, &bufcap);
	sqlite3_finalize(dig);
	j->c->mem->free(buf);
}

/* Would the row of key (if any) keep file sub/<key>.ext? */
static int row_names(sqlite3_stmt *loc, const uint8_t *key, const char *sub, const char *ext)
{
	char hex[KJ_SHA256_HEX_LEN + 1], want[PATH_MAX];
	int keep = 0;

	kj__hex(key, hex);
	sqlite3_bind_text(loc, 1, hex, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(loc);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		keep = 1; /* unknown: keep it */
	else if (rc == SQLITE_ROW) {
		const char *t = kj__db_col_text(loc, 0), *v = kj__db_col_text(loc, 1), *x = kj__db_col_text(loc, 2);
		keep = t && v && x && kj__cache_pathf(want, sizeof want, "%s-%s", t, v) == 0 && strcmp(want, sub) == 0 &&
		       strcmp(x, ext) == 0;
	}
	sqlite3_reset(loc);
	return keep;
}

static int sweep_add(struct kj__cache_job *j, const char *sub, const char *name)
{
	size_t a = strlen(sub) + 1, b = strlen(name) + 1;

	if (kj__job_grow(j->c, (void **)&j->sweep, &j->sweep_cap, j->sweep_len + a + b, 1) < 0)
		return KJIT_ENOMEM;
	memcpy(j->sweep + j->sweep_len, sub, a);
	memcpy(j->sweep + j->sweep_len + a, name, b);
	j->sweep_len += a + b;
	return 0;
}

/* Does a recipe_of row name the recipe of file name?  1 for a name that
 * is no recipe's, or when it cannot be told (keep it). */
static int recipe_row_names(sqlite3_stmt *named, const char *name)
{
	char recipe[KJ_SHA256_HEX_LEN + 1];

	if (!kj__recipe_file_name(name, recipe))
		return 1;
	sqlite3_bind_text(named, 1, recipe, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(named);
	sqlite3_reset(named);
	return rc != SQLITE_DONE;
}

/* The files of one object directory (or recipes/) that neither a row
 * names nor a publish is writing: candidates that finish checks again. */
static void sweep_dir(struct kj__cache_job *j, sqlite3_stmt *loc, sqlite3_stmt *named, const char *sub,
		      const char *path)
{
	int recipes = strcmp(sub, "recipes") == 0;

	DIR *d = opendir(path);
	struct dirent *fe;

	if (d == NULL)
		return; /* not a directory (DT_UNKNOWN), or unreadable */
	while ((fe = readdir(d)) != NULL) {
		uint8_t key[KJ_SHA256_LEN];
		const char *ext;
		int cand = kj__obj_sweepable(j->c, sub, fe->d_name, 0) ||
			   (recipes ? !recipe_row_names(named, fe->d_name)
				    : kj__obj_name(fe->d_name, key, &ext) && !row_names(loc, key, sub, ext));
		if (cand && sweep_add(j, sub, fe->d_name) < 0) {
			kj__job_fail(j, KJIT_ENOMEM);
			break;
		}
	}
	closedir(d);
}

static void run_sweep(struct kj__cache_job *j, sqlite3 *db)
{
	struct kj__cache *c = j->c;
	sqlite3_stmt *loc = NULL, *named = NULL;
	DIR *top = opendir(c->dir);
	struct dirent *de;
	char path[PATH_MAX];

	if (top == NULL) {
		kj__cache_say(c, "cannot list %s: %s", c->dir, strerror(errno));
		return;
	}
	if (sqlite3_prepare_v2(db, "SELECT target, version, ext FROM objects WHERE key = ?1", -1, &loc, NULL) !=
		    SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT 1 FROM recipe_of WHERE recipe = ?1 LIMIT 1", -1, &named, NULL) != SQLITE_OK) {
		kj__job_fail(j, db_say(c, db, "sweep"));
		sqlite3_finalize(loc);
		closedir(top);
		return;
	}
	while ((de = readdir(top)) != NULL) {
		struct stat st;
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (kj__cache_pathf(path, sizeof path, "%s/%s", c->dir, de->d_name) < 0 ||
		    c->fs->lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* a file, or a symlink: never followed */
		sweep_dir(j, loc, named, de->d_name, path);
	}
	sqlite3_finalize(loc);
	sqlite3_finalize(named);
	closedir(top);
}

/* Deletes the rows of ents[at..end) in one transaction.  0 or KJIT_EIO. */
static int delete_batch(struct kj__cache_job *j, sqlite3 *db, sqlite3_stmt *del, size_t at, size_t end)
{
	char hex[KJ_SHA256_HEX_LEN + 1];

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_say(j->c, db, "begin");
	for (size_t i = at; i < end; i++) {
		kj__hex(j->ents[i].key, hex);
		sqlite3_bind_text(del, 1, hex, -1, SQLITE_TRANSIENT);
		int rc = sqlite3_step(del);
		sqlite3_reset(del);
		if (rc != SQLITE_DONE) {
			int r = db_say(j->c, db, "delete");
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
			return r;
		}
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		int r = db_say(j->c, db, "commit");
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return r;
	}
	return 0;
}

static void unlink_ent(struct kj__cache_job *j, const struct kj__job_ent *e)
{
	struct kj__cache *c = j->c;
	char path[PATH_MAX], hex[KJ_SHA256_HEX_LEN + 1];

	kj__hex(e->key, hex);
	if (tuple_dir(j, &j->tuples[e->tuple]) != 1 ||
	    kj__cache_pathf(path, sizeof path, "%s/%s/%s.%s", c->dir, j->tuples[e->tuple].sub, hex,
			    j->tuples[e->tuple].ext) < 0)
		return; /* its directory is not a real one: nothing removed there */
	if (c->fs->unlink(path) < 0 && errno != ENOENT)
		kj__cache_say(c, "cannot remove %s: %s", path, strerror(errno));
}

/* The recipes of ents[at..end), before their rows go (with their
 * recipe_of rows, schema.c's trigger): sweep candidates that finish
 * removes if no row names them then (job.c). */
static void recipe_candidates(struct kj__cache_job *j, sqlite3_stmt *rof, size_t at, size_t end)
{
	char hex[KJ_SHA256_HEX_LEN + 1], name[KJ_SHA256_HEX_LEN + 5];

	for (size_t i = at; i < end; i++) {
		kj__hex(j->ents[i].key, hex);
		sqlite3_bind_text(rof, 1, hex, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(rof) == SQLITE_ROW) {
			const char *t = kj__db_col_text(rof, 0);
			if (t && kj__hex_ok(t) && snprintf(name, sizeof name, "%s.req", t) > 0 &&
			    sweep_add(j, "recipes", name) < 0)
				kj__job_fail(j, KJIT_ENOMEM);
		}
		sqlite3_reset(rof);
	}
}

static void run_delete(struct kj__cache_job *j, sqlite3 *db)
{
	sqlite3_stmt *del = NULL, *rof = NULL;

	if (sqlite3_prepare_v2(db, "DELETE FROM objects WHERE key = ?1", -1, &del, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT recipe FROM recipe_of WHERE key = ?1", -1, &rof, NULL) != SQLITE_OK) {
		kj__job_fail(j, db_say(j->c, db, "delete"));
		sqlite3_finalize(del);
		return;
	}
	for (size_t at = 0; at < j->n; at += KJ_MAINT_DELETE_BATCH) {
		size_t end = j->n - at < KJ_MAINT_DELETE_BATCH ? j->n : at + KJ_MAINT_DELETE_BATCH;
		recipe_candidates(j, rof, at, end);
		int r = delete_batch(j, db, del, at, end);
		if (r < 0) {
			kj__job_fail(j, r); /* rows and files stay: back at the next open */
			continue;
		}
		for (size_t i = at; i < end; i++)
			unlink_ent(j, &j->ents[i]);
	}
	sqlite3_finalize(del);
	sqlite3_finalize(rof);
}

static int take_victim(void *arg, const uint8_t key[KJ_SHA256_LEN])
{
	return kj__job_found_add(arg, key) ? 0 : KJIT_ENOMEM;
}

void kj__cache_job_run(struct kj__cache_job *j)
{
	sqlite3 *db = NULL;
	int r;

	for (size_t i = 0; i < j->ntuples; i++)
		j->tuples[i].dir = 0; /* checked again on each run */
	if ((r = db_open(j->c, &db)) < 0) {
		kj__job_fail(j, r);
		return;
	}
	if (j->phase == KJ_JOB_PHASE_DELETE) {
		run_delete(j, db);
	} else {
		if (j->kind == KJ_CACHE_JOB_GC && j->total > j->cap &&
		    (r = kj__maint_victims(j->c, db, j->total, j->cap, take_victim, j)) < 0)
			kj__job_fail(j, r);
		if (j->kind == KJ_CACHE_JOB_VERIFY)
			run_verify(j, db);
		run_sweep(j, db);
	}
	if (sqlite3_close(db) != SQLITE_OK)
		kj__cache_say(j->c, "index %s/index.sqlite: close: %s", j->c->dir, sqlite3_errmsg(db));
}

int kj__cache_scan(struct kj__cache *c, int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg)
{
	struct kj__cache_entry e;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc, r;

	if ((r = db_open(c, &db)) < 0)
		return r;
	rc = sqlite3_prepare_v2(db, "SELECT " ENTRY_COLS " FROM objects ORDER BY last_used DESC, used_seq DESC", -1,
				&st, NULL);
	if (rc != SQLITE_OK) {
		r = db_say(c, db, "scan");
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		kj__db_row_entry(st, &e);
		if (!kj__hex_ok(e.key) || !kj__cache_ext_ok(e.ext))
			continue; /* an invalid row: verify's business */
		if ((r = fn(&e, arg)) != 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = db_say(c, db, "scan");
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}

/* The WAL hook of the cache's own connection: remembers the WAL's length
 * instead of checkpointing (the default hook would, on this thread). */
static int wal_note(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct kj__cache *c = arg;

	(void)db;
	(void)name;
	c->wal_pages = pages;
	return SQLITE_OK;
}

void kj__cache_wal_offload(struct kj__cache *c)
{
	sqlite3_wal_hook(c->db, wal_note, c);
}

int kj__cache_wal_pages(const struct kj__cache *c)
{
	return c->wal_pages;
}

int kj__cache_checkpoint(struct kj__cache *c)
{
	sqlite3 *db = NULL;
	int r = db_open(c, &db);

	if (r == 0 && sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) != SQLITE_OK &&
	    sqlite3_errcode(db) != SQLITE_BUSY)
		r = db_say(c, db, "checkpoint");
	sqlite3_close(db);
	return r;
}
