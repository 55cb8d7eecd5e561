/* job.c: gc, verify and clear in steps, so that their slow part (reading
 * and hashing every object, deleting rows and files, listing directories)
 * runs on a thread of kjitd's while its loop keeps serving (issue 25).
 *
 * A job goes begin (the loop) -> run (any one thread) -> finish (the
 * loop); finish may ask for one more run and finish (the deletions of gc
 * and clear).  maint.c's kj__cache_gc, kj__cache_verify and
 * kj__cache_clear are the same steps in a row on the caller's thread.
 *
 * Invariants:
 *  - Only begin and finish read or change the entry table, the hot set,
 *    the tuples and c->db.  run touches the job, and of c only what never
 *    changes after open (dir, fs, mem, log), so c->fs and c->mem must be
 *    safe to call from another thread (the real ones are).  run opens a
 *    connection of its own to the index (WAL: the loop's connection goes
 *    on reading and writing meanwhile) and writes through it in
 *    transactions of at most KJ_MAINT_DELETE_BATCH rows, so the loop's own
 *    writes wait at most one batch.
 *  - What run found is checked again at finish against the table as it is
 *    then: an entry used since begin is not evicted, an object whose file
 *    changed since it was found corrupt is not dropped, a file a row names
 *    now is not swept.
 *  - Deletion: entries leave the table first (finish, or begin for clear),
 *    so nothing is served from them; run then deletes their rows (a batch
 *    whose transaction fails keeps its rows and its files: they are back
 *    at the next open), then their files.  A key published again in
 *    between whose row or file the deletion took is dropped at the end: a
 *    miss, never a wrong answer.
 *  - Publishing happens on the loop, whole, between two loop steps; a
 *    temporary file run sees is swept only if finish still finds it.
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

enum { PHASE_CHECK = 1, PHASE_DELETE };
enum { FOUND_FILE = 1, FOUND_NOFILE, FOUND_ROW }; /* what a corrupt object was */

/* An entry as run sees it: the tuple indexes the job's own copy. */
struct jent {
	uint8_t key[KJ_SHA256_LEN];
	uint32_t size;
	uint32_t tuple;
};

struct jtuple {
	char *sub; /* "<target>-<version>" */
	char *ext;
	int dir;   /* run's check of <dir>/<sub>: 0 not yet, 1 real, else a KJIT_E* code */
};

/* An object run found corrupt (verify), or a victim (gc: key only). */
struct found {
	uint8_t key[KJ_SHA256_LEN];
	int what;
	char why[96];
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
};

struct kj__cache_job {
	struct kj__cache *c;
	int kind, phase;
	uint64_t cap, total, seq0;
	struct jent *ents;
	size_t n;
	struct jtuple *tuples;
	size_t ntuples;
	struct found *found;
	size_t nfound, capfound;
	char *sweep;           /* "sub\0name\0" pairs run would remove */
	size_t sweep_len, sweep_cap;
	int err;               /* the first error of a run */
	struct kj__cache_job_result res;
};

/* ---- the job's own memory ---- */

static int grow(struct kj__cache *c, void **p, size_t *cap, size_t want, size_t size)
{
	if (want <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < want)
		n *= 2;
	void *q = c->mem->realloc(*p, n * size);
	if (q == NULL)
		return KJIT_ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static void tuples_free(struct kj__cache_job *j)
{
	for (size_t i = 0; i < j->ntuples; i++) {
		j->c->mem->free(j->tuples[i].sub);
		j->c->mem->free(j->tuples[i].ext);
	}
	j->c->mem->free(j->tuples);
	j->tuples = NULL;
	j->ntuples = 0;
}

/* A copy of c's tuples, as run needs them (names of directories). */
static int tuples_copy(struct kj__cache_job *j)
{
	struct kj__cache *c = j->c;
	char sub[PATH_MAX];

	tuples_free(j);
	if (c->ntuples == 0)
		return 0;
	j->tuples = c->mem->calloc(c->ntuples, sizeof *j->tuples);
	if (j->tuples == NULL)
		return KJIT_ENOMEM;
	j->ntuples = c->ntuples;
	for (size_t i = 0; i < c->ntuples; i++) {
		if (kj__cache_pathf(sub, sizeof sub, "%s-%s", c->tuples[i].target, c->tuples[i].version) < 0)
			return KJIT_EINVAL;
		j->tuples[i].sub = kj__cache_strdup(c, sub);
		j->tuples[i].ext = kj__cache_strdup(c, c->tuples[i].ext);
		if (j->tuples[i].sub == NULL || j->tuples[i].ext == NULL)
			return KJIT_ENOMEM;
	}
	return 0;
}

static struct found *found_add(struct kj__cache_job *j, const uint8_t *key)
{
	if (grow(j->c, (void **)&j->found, &j->capfound, j->nfound + 1, sizeof *j->found) < 0)
		return NULL;
	struct found *f = &j->found[j->nfound++];
	memset(f, 0, sizeof *f);
	memcpy(f->key, key, KJ_SHA256_LEN);
	return f;
}

static void job_fail(struct kj__cache_job *j, int r)
{
	if (j->err == 0)
		j->err = r;
}

/* ---- run: on the job's thread ---- */

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
static int tuple_dir(struct kj__cache_job *j, struct jtuple *t)
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
static int check_file(struct kj__cache_job *j, const struct jent *e, const uint8_t *want, uint8_t **buf,
		      size_t *bufcap, struct found *f)
{
	struct kj__cache *c = j->c;
	char path[PATH_MAX], hex[KJ_SHA256_HEX_LEN + 1];
	struct stat st;
	uint8_t d[KJ_SHA256_LEN];
	size_t got = 0;
	int fd, r = 0;

	kj__hex(e->key, hex);
	if ((r = kj__cache_pathf(path, sizeof path, "%s/%s/%s.%s", c->dir, j->tuples[e->tuple].sub, hex,
				 j->tuples[e->tuple].ext)) < 0)
		return r;
	f->what = FOUND_NOFILE;
	if ((fd = c->fs->open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0)) < 0) {
		if (errno == ENOENT || errno == ELOOP) {
			snprintf(f->why, sizeof f->why, "%s", errno == ENOENT ? "missing" : "a symlink");
			return KJIT_ECORRUPT;
		}
		kj__cache_say(c, "cannot open %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	if (c->fs->fstat(fd, &st) < 0) {
		kj__cache_say(c, "fstat %s: %s", path, strerror(errno));
		r = KJIT_EIO;
		goto out;
	}
	f->what = FOUND_FILE;
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
	if ((r = grow(c, (void **)buf, bufcap, e->size ? e->size : 1, 1)) < 0)
		goto out;
	while (got < e->size) {
		ssize_t k = c->fs->read(fd, *buf + got, e->size - got);
		if (k < 0) {
			kj__cache_say(c, "read %s: %s", path, strerror(errno));
			r = KJIT_EIO;
			goto out;
		}
		if (k == 0) {
			snprintf(f->why, sizeof f->why, "truncated while reading");
			r = KJIT_ECORRUPT;
			goto out;
		}
		got += (size_t)k;
	}
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
static void verify_one(struct kj__cache_job *j, sqlite3 *db, sqlite3_stmt *dig, const struct jent *e, uint8_t **buf,
		       size_t *bufcap)
{
	char hex[KJ_SHA256_HEX_LEN + 1];
	uint8_t want[KJ_SHA256_LEN];
	struct found f = { 0 };
	int r, dir = tuple_dir(j, &j->tuples[e->tuple]);

	j->res.checked++;
	kj__hex(e->key, hex);
	if (dir == KJIT_ENOENT || dir == KJIT_EDENIED) {
		f.what = FOUND_NOFILE;
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
			f.what = FOUND_ROW;
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
		struct found *p = found_add(j, e->key);
		if (p == NULL) {
			job_fail(j, KJIT_ENOMEM);
			return;
		}
		*p = f;
		memcpy(p->key, e->key, KJ_SHA256_LEN);
	} else if (r < 0) {
		job_fail(j, r); /* logged; the object stays */
	}
}

static void run_verify(struct kj__cache_job *j, sqlite3 *db)
{
	sqlite3_stmt *dig = NULL;
	uint8_t *buf = NULL;
	size_t bufcap = 0;

	if (sqlite3_prepare_v2(db, "SELECT sha256 FROM objects WHERE key = ?1", -1, &dig, NULL) != SQLITE_OK) {
		job_fail(j, db_say(j->c, db, "verify"));
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

	if (grow(j->c, (void **)&j->sweep, &j->sweep_cap, j->sweep_len + a + b, 1) < 0)
		return KJIT_ENOMEM;
	memcpy(j->sweep + j->sweep_len, sub, a);
	memcpy(j->sweep + j->sweep_len + a, name, b);
	j->sweep_len += a + b;
	return 0;
}

/* The files of one object directory that neither a row names nor a
 * publish is writing: candidates that finish checks again. */
static void sweep_dir(struct kj__cache_job *j, sqlite3_stmt *loc, const char *sub, const char *path)
{
	DIR *d = opendir(path);
	struct dirent *fe;

	if (d == NULL)
		return; /* not a directory (DT_UNKNOWN), or unreadable */
	while ((fe = readdir(d)) != NULL) {
		uint8_t key[KJ_SHA256_LEN];
		const char *ext;
		int cand = kj__obj_sweepable(j->c, sub, fe->d_name, 0) ||
			   (kj__obj_name(fe->d_name, key, &ext) && !row_names(loc, key, sub, ext));
		if (cand && sweep_add(j, sub, fe->d_name) < 0) {
			job_fail(j, KJIT_ENOMEM);
			break;
		}
	}
	closedir(d);
}

static void run_sweep(struct kj__cache_job *j, sqlite3 *db)
{
	struct kj__cache *c = j->c;
	sqlite3_stmt *loc = NULL;
	DIR *top = opendir(c->dir);
	struct dirent *de;
	char path[PATH_MAX];

	if (top == NULL) {
		kj__cache_say(c, "cannot list %s: %s", c->dir, strerror(errno));
		return;
	}
	if (sqlite3_prepare_v2(db, "SELECT target, version, ext FROM objects WHERE key = ?1", -1, &loc, NULL) !=
	    SQLITE_OK) {
		job_fail(j, db_say(c, db, "sweep"));
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
		sweep_dir(j, loc, de->d_name, path);
	}
	sqlite3_finalize(loc);
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

static void unlink_ent(struct kj__cache_job *j, const struct jent *e)
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

static void run_delete(struct kj__cache_job *j, sqlite3 *db)
{
	sqlite3_stmt *del = NULL;

	if (sqlite3_prepare_v2(db, "DELETE FROM objects WHERE key = ?1", -1, &del, NULL) != SQLITE_OK) {
		job_fail(j, db_say(j->c, db, "delete"));
		return;
	}
	for (size_t at = 0; at < j->n; at += KJ_MAINT_DELETE_BATCH) {
		size_t end = j->n - at < KJ_MAINT_DELETE_BATCH ? j->n : at + KJ_MAINT_DELETE_BATCH;
		int r = delete_batch(j, db, del, at, end);
		if (r < 0) {
			job_fail(j, r); /* rows and files stay: back at the next open */
			continue;
		}
		for (size_t i = at; i < end; i++)
			unlink_ent(j, &j->ents[i]);
	}
	sqlite3_finalize(del);
}

static int take_victim(void *arg, const uint8_t key[KJ_SHA256_LEN])
{
	return found_add(arg, key) ? 0 : KJIT_ENOMEM;
}

void kj__cache_job_run(struct kj__cache_job *j)
{
	sqlite3 *db = NULL;
	int r;

	for (size_t i = 0; i < j->ntuples; i++)
		j->tuples[i].dir = 0; /* checked again on each run */
	if ((r = db_open(j->c, &db)) < 0) {
		job_fail(j, r);
		return;
	}
	if (j->phase == PHASE_DELETE) {
		run_delete(j, db);
	} else {
		if (j->kind == KJ_CACHE_JOB_GC && j->total > j->cap &&
		    (r = kj__maint_victims(j->c, db, j->total, j->cap, take_victim, j)) < 0)
			job_fail(j, r);
		if (j->kind == KJ_CACHE_JOB_VERIFY)
			run_verify(j, db);
		run_sweep(j, db);
	}
	if (sqlite3_close(db) != SQLITE_OK)
		kj__cache_say(j->c, "index %s/index.sqlite: close: %s", j->c->dir, sqlite3_errmsg(db));
}

/* ---- begin and finish: on the loop ---- */

/* Entry idx leaves the table and joins the deletions (room reserved). */
static void to_delete(struct kj__cache_job *j, size_t idx)
{
	struct kj__cache *c = j->c;
	struct jent *e = &j->ents[j->n++];

	memcpy(e->key, c->ents[idx].key, KJ_SHA256_LEN);
	e->size = c->ents[idx].size;
	e->tuple = c->ents[idx].tuple;
	kj__tab_remove(c, idx);
}

static int begin_clear(struct kj__cache_job *j, const char *target)
{
	struct kj__cache *c = j->c;
	int r;

	if (c->n && (j->ents = c->mem->malloc(c->n * sizeof *j->ents)) == NULL)
		return KJIT_ENOMEM;
	if ((r = tuples_copy(j)) < 0)
		return r;
	for (size_t i = c->n; i-- > 0;)
		if (target == NULL || strcmp(c->tuples[c->ents[i].tuple].target, target) == 0)
			to_delete(j, i);
	if (target == NULL)
		kj__tab_clear(c); /* also forgets dirty keys */
	j->res.removed = j->n;
	j->phase = PHASE_DELETE;
	return 0;
}

int kj__cache_job_begin(struct kj__cache *c, int kind, uint64_t max_size, const char *target,
			struct kj__cache_job **out)
{
	struct kj__cache_job *j;
	int r;

	*out = NULL;
	if (kind != KJ_CACHE_JOB_GC && kind != KJ_CACHE_JOB_VERIFY && kind != KJ_CACHE_JOB_CLEAR)
		return KJIT_EINVAL;
	if ((j = c->mem->calloc(1, sizeof *j)) == NULL)
		return KJIT_ENOMEM;
	j->c = c;
	j->kind = kind;
	j->phase = PHASE_CHECK;
	if (kind == KJ_CACHE_JOB_CLEAR) {
		r = begin_clear(j, target);
		goto out;
	}
	/* gc's LRU order includes the hits counted in memory. */
	if ((r = kj__cache_flush(c)) < 0)
		goto out;
	j->cap = max_size ? max_size : c->max_size;
	j->total = c->bytes;
	j->seq0 = c->seq;
	if ((r = tuples_copy(j)) < 0 || kind != KJ_CACHE_JOB_VERIFY)
		goto out;
	if (c->n && (j->ents = c->mem->malloc(c->n * sizeof *j->ents)) == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < c->n; i++) {
		memcpy(j->ents[i].key, c->ents[i].key, KJ_SHA256_LEN);
		j->ents[i].size = c->ents[i].size;
		j->ents[i].tuple = c->ents[i].tuple;
	}
	j->n = c->n;
out:
	if (r < 0) {
		kj__cache_job_free(j);
		return r;
	}
	*out = j;
	return 0;
}

/* Removes the sweep candidates finish still finds stale. */
static void finish_sweep(struct kj__cache_job *j)
{
	struct kj__cache *c = j->c;
	char path[PATH_MAX];
	uint64_t gone = 0;

	for (size_t off = 0; off < j->sweep_len;) {
		const char *sub = j->sweep + off, *name = sub + strlen(sub) + 1;
		off += strlen(sub) + strlen(name) + 2;
		if (kj__cache_pathf(path, sizeof path, "%s/%s", c->dir, sub) < 0 || kj__obj_dir_check(c, path) < 0 ||
		    !kj__obj_sweepable(c, sub, name, 1) ||
		    kj__cache_pathf(path, sizeof path, "%s/%s/%s", c->dir, sub, name) < 0)
			continue;
		if (c->fs->unlink(path) < 0 && errno != ENOENT)
			kj__cache_say(c, "cannot remove %s: %s", path, strerror(errno));
		else
			gone++;
	}
	if (gone)
		kj__cache_say(c, "removed %llu stale file(s) from %s", (unsigned long long)gone, c->dir);
	j->sweep_len = 0;
}

static int finish_gc(struct kj__cache_job *j)
{
	struct kj__cache *c = j->c;
	uint64_t gone = 0;

	finish_sweep(j);
	j->c->mem->free(j->ents);
	j->n = 0;
	if (j->nfound && (j->ents = c->mem->malloc(j->nfound * sizeof *j->ents)) == NULL)
		return KJIT_ENOMEM;
	int r = tuples_copy(j);
	if (r < 0)
		return r;
	for (size_t k = 0; k < j->nfound; k++) {
		size_t i = kj__tab_find(c, j->found[k].key);
		if (i == NONE || c->ents[i].seq > j->seq0)
			continue; /* gone already, or used since begin */
		gone += c->ents[i].size;
		to_delete(j, i);
	}
	j->nfound = 0;
	if (j->n) {
		kj__cache_counter_add(c, "evictions", (int64_t)j->n);
		kj__cache_say(c, "gc: evicted %zu object(s), %llu bytes, to stay under %llu bytes", j->n,
			      (unsigned long long)gone, (unsigned long long)j->cap);
	}
	j->res.evicted = j->n;
	j->res.freed = gone;
	j->phase = PHASE_DELETE;
	return j->n ? 1 : 0;
}

/* Is the object run found corrupt still the same on disk?  Then it goes. */
static int still_bad(struct kj__cache *c, size_t idx, const struct found *f)
{
	char sub[PATH_MAX], path[PATH_MAX];
	uint8_t d[KJ_SHA256_LEN];
	struct stat st;
	int r;

	if (f->what == FOUND_ROW)
		return kj__db_row_digest(c, f->key, d) == KJIT_ENOENT;
	if (kj__obj_subdir(c, &c->tuples[c->ents[idx].tuple], sub, sizeof sub) < 0 ||
	    kj__obj_path(c, &c->ents[idx], path, sizeof path) < 0)
		return 0;
	if ((r = kj__obj_dir_check(c, sub)) == KJIT_ENOENT || r == KJIT_EDENIED)
		return 1;
	if (r < 0)
		return 0;
	if (c->fs->lstat(path, &st) < 0)
		return errno == ENOENT;
	if (f->what == FOUND_NOFILE)
		return !S_ISREG(st.st_mode);
	return st.st_dev == f->dev && st.st_ino == f->ino && st.st_size == f->size &&
	       st.st_mtim.tv_sec == f->mtim.tv_sec && st.st_mtim.tv_nsec == f->mtim.tv_nsec;
}

static int finish_verify(struct kj__cache_job *j, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
			 void *arg)
{
	struct kj__cache *c = j->c;
	struct kj__cache_entry e;
	int r = 0;

	for (size_t k = 0; k < j->nfound; k++) {
		const struct found *f = &j->found[k];
		size_t i = kj__tab_find(c, f->key);
		if (i == NONE || !still_bad(c, i, f))
			continue;
		kj__tab_fill_entry(c, &c->ents[i], &e);
		kj__cache_say(c, "object %s corrupt (%s); dropped, will recompile", e.key, f->why);
		if (fn)
			fn(&e, f->why, arg);
		kj__obj_drop(c, i);
		kj__cache_counter_add(c, "corrupt", 1);
		j->res.bad++;
	}
	j->nfound = 0;
	if (c->bad_rows)
		r = kj__maint_drop_bad_rows(c, fn, arg, &j->res.bad);
	finish_sweep(j);
	return r;
}

/* A key published again while its deletion ran: keep it only if both its
 * row and its file are there now. */
static int finish_delete(struct kj__cache_job *j)
{
	struct kj__cache *c = j->c;
	uint8_t d[KJ_SHA256_LEN];
	char path[PATH_MAX];
	struct stat st;

	for (size_t k = 0; k < j->n; k++) {
		size_t i = kj__tab_find(c, j->ents[k].key);
		if (i == NONE)
			continue;
		if (kj__db_row_digest(c, j->ents[k].key, d) == 0 && kj__obj_path(c, &c->ents[i], path, sizeof path) == 0 &&
		    c->fs->lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == c->ents[i].size)
			continue;
		kj__obj_drop(c, i);
		j->res.redropped++;
	}
	return 0;
}

int kj__cache_job_finish(struct kj__cache_job *j, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
			 void *arg)
{
	int r, err = j->err;

	j->err = 0;
	if (err < 0 && j->phase == PHASE_CHECK && j->kind == KJ_CACHE_JOB_GC) {
		finish_sweep(j); /* the victims may be incomplete: none go */
		return err;
	}
	if (j->phase == PHASE_DELETE)
		r = finish_delete(j);
	else if (j->kind == KJ_CACHE_JOB_VERIFY)
		r = finish_verify(j, fn, arg);
	else
		r = finish_gc(j);
	if (r < 0)
		return r;
	if (err < 0 && (j->phase == PHASE_DELETE || j->kind == KJ_CACHE_JOB_VERIFY))
		return err; /* a verify's I/O error, a deletion's failed batch */
	return r;
}

void kj__cache_job_result(const struct kj__cache_job *j, struct kj__cache_job_result *res)
{
	*res = j->res;
}

void kj__cache_job_free(struct kj__cache_job *j)
{
	if (j == NULL)
		return;
	tuples_free(j);
	j->c->mem->free(j->ents);
	j->c->mem->free(j->found);
	j->c->mem->free(j->sweep);
	j->c->mem->free(j);
}
