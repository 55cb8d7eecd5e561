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
 *  - jobrun.c is the run; this file the rest.
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

/* ---- the job's own memory ---- */

int kj__job_grow(struct kj__cache *c, void **p, size_t *cap, size_t want, size_t size)
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

struct kj__job_found *kj__job_found_add(struct kj__cache_job *j, const uint8_t *key)
{
	if (kj__job_grow(j->c, (void **)&j->found, &j->capfound, j->nfound + 1, sizeof *j->found) < 0)
		return NULL;
	struct kj__job_found *f = &j->found[j->nfound++];
	memset(f, 0, sizeof *f);
	memcpy(f->key, key, KJ_SHA256_LEN);
	return f;
}

void kj__job_fail(struct kj__cache_job *j, int r)
{
	if (j->err == 0)
		j->err = r;
}

/* ---- begin and finish: on the loop ---- */

/* Entry idx leaves the table and joins the deletions (room reserved). */
static void to_delete(struct kj__cache_job *j, size_t idx)
{
	struct kj__cache *c = j->c;
	struct kj__job_ent *e = &j->ents[j->n++];

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
	if (target == NULL) { /* all of it: no entry-by-entry removal */
		for (size_t i = 0; i < c->n; i++) {
			memcpy(j->ents[i].key, c->ents[i].key, KJ_SHA256_LEN);
			j->ents[i].size = c->ents[i].size;
			j->ents[i].tuple = c->ents[i].tuple;
		}
		j->n = c->n;
		kj__tab_clear(c); /* also forgets dirty keys */
		kj__hot_free_all(c);
	}
	for (size_t i = c->n; target && i-- > 0;)
		if (strcmp(c->tuples[c->ents[i].tuple].target, target) == 0)
			to_delete(j, i);
	j->res.removed = j->n;
	j->phase = KJ_JOB_PHASE_DELETE;
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
	j->phase = KJ_JOB_PHASE_CHECK;
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
		gone += KJ_ENT_BYTES(&c->ents[i]);
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
	j->phase = KJ_JOB_PHASE_DELETE;
	return j->n ? 1 : 0;
}

/* Is the object run found corrupt still the same on disk?  Then it goes. */
static int still_bad(struct kj__cache *c, size_t idx, const struct kj__job_found *f)
{
	char sub[PATH_MAX], path[PATH_MAX];
	uint8_t d[KJ_SHA256_LEN];
	struct stat st;
	int r;

	if (f->what == KJ_JOB_FOUND_ROW)
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
	if (f->what == KJ_JOB_FOUND_NOFILE)
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
		const struct kj__job_found *f = &j->found[k];
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

	finish_sweep(j); /* the deleted objects' recipes no row names now */
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
	if (err < 0 && j->phase == KJ_JOB_PHASE_CHECK && j->kind == KJ_CACHE_JOB_GC) {
		finish_sweep(j); /* the victims may be incomplete: none go */
		return err;
	}
	if (j->phase == KJ_JOB_PHASE_DELETE)
		r = finish_delete(j);
	else if (j->kind == KJ_CACHE_JOB_VERIFY)
		r = finish_verify(j, fn, arg);
	else
		r = finish_gc(j);
	if (r < 0)
		return r;
	if (err < 0 && (j->phase == KJ_JOB_PHASE_DELETE || j->kind == KJ_CACHE_JOB_VERIFY))
		return err; /* a verify's I/O error, a deletion's failed batch */
	return r;
}

int kj__cache_job_threaded(void)
{
	return sqlite3_threadsafe() != 0;
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
