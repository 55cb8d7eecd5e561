/* cache.c: the object store of one kjitd (see cache.h for the contract):
 * opening and closing it, the hit path (lookup, peek), listing and totals,
 * an object's entry points (its row's list), and the small helpers the
 * other files of cache/ share.
 *
 * Layout: <dir>/lock (flock'd for the cache's life, so one kjitd per
 * directory), <dir>/index.sqlite (WAL), <dir>/<target>-<version>/<key>.<ext>,
 * <dir>/recipes/<recipe>.req, and <dir>/clean, present only between a
 * clean close and the next open.
 *
 * Invariants:
 *  - A cache is open only with its lock held, its index open and its
 *    table loaded; a failed open releases everything it took.
 *  - The hit path (kj__cache_peek, kj__cache_lookup) touches no SQLite:
 *    the entry comes from the table (table.c), the bytes from the hot set
 *    (hot.c) or from disk, verified (store.c), and the hit is counted in
 *    memory for kj__cache_flush (index.c).
 *  - A corrupt object found on the hit path is dropped and reported as a
 *    miss (KJIT_ENOENT), so the caller recompiles.
 *  - An object whose publish is in flight (publish.c, c->pubs) is served
 *    from its copy in memory, before the table is asked.
 *  - A close that flushed leaves <dir>/clean; an open that does not find it
 *    runs SQLite's quick_check and sweeps temporary files.
 * Ownership: struct kj__cache (cache-int.h) owns the lock descriptor, the
 * SQLite handle, the table and the hot set; kj__cache_close frees them.
 * All file system calls go through c->fs; flock, directory listing and the
 * chmod that tightens a loose cache directory are the only direct calls.
 * The cache directory must be ours (or root's) and not writable by group
 * or others (check_top); nothing below it is followed (store.c).  All
 * allocations go through c->mem (including the struct itself), except
 * kj__cache_recipe_load's, made by kj__read_file.  One thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache-int.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

static const char *const exts[] = { "hsaco", "cubin", "ptx", "fatbin", "spv" };

/* ---- helpers shared by cache/ ---- */

void kj__cache_say(const struct kj__cache *c, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	fputs("kjit: ", c->log);
	va_start(ap, fmt);
	vfprintf(c->log, fmt, ap);
	va_end(ap);
	fputc('\n', c->log);
	fflush(c->log);
	errno = saved;
}

int kj__cache_ext_ok(const char *ext)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(exts); i++)
		if (strcmp(ext, exts[i]) == 0)
			return 1;
	return 0;
}

/* On the load path: a million
 * keys and digests, so no branches. */
void kj__cache_unhex(const char *s, uint8_t out[KJ_SHA256_LEN])
{
	for (size_t i = 0; i < KJ_SHA256_LEN; i++) {
		unsigned hi = (unsigned char)s[2 * i], lo = (unsigned char)s[2 * i + 1];
		hi = (hi & 0xf) + 9 * (hi >> 6);
		lo = (lo & 0xf) + 9 * (lo >> 6);
		out[i] = (uint8_t)(hi << 4 | lo);
	}
}

int kj__cache_pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? KJIT_EINVAL : 0;
}

char *kj__cache_strdup(const struct kj__cache *c, const char *s)
{
	size_t n;
	char *p;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	p = c->mem->malloc(n);
	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

int kj__cache_key_arg(const char *key, uint8_t out[KJ_SHA256_LEN])
{
	if (key == NULL || !kj__hex_ok(key))
		return KJIT_EINVAL;
	kj__cache_unhex(key, out);
	return 0;
}

/* ---- open and close ---- */

static int take_lock(struct kj__cache *c)
{
	char path[PATH_MAX];
	int r = kj__cache_pathf(path, sizeof path, "%s/lock", c->dir);

	if (r < 0)
		return r;
	c->lock_fd = c->fs->open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, c->file_mode);
	if (c->lock_fd < 0) {
		kj__cache_say(c, "cannot open %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	if (flock(c->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return KJIT_EBUSY;
		kj__cache_say(c, "cannot lock %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	return 0;
}

/* The cache directory itself may be a symlink (the user's choice of
 * place), but what it resolves to must be a directory owned by us (or
 * root) that neither its group nor others may write: as ssh refuses a
 * loose ~/.ssh.  Group or other bits beyond c->dir_mode are taken away. */
static int check_top(struct kj__cache *c)
{
	struct stat st;

	if (c->fs->stat(c->dir, &st) < 0) {
		kj__cache_say(c, "cannot stat %s: %s", c->dir, strerror(errno));
		return KJIT_EIO;
	}
	if (!S_ISDIR(st.st_mode)) {
		kj__cache_say(c, "refusing cache directory %s: not a directory", c->dir);
		return KJIT_EDENIED;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		kj__cache_say(c, "refusing cache directory %s: owned by uid %u, not by kjitd's uid %u; use a"
			      " directory of your own", c->dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return KJIT_EDENIED;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		kj__cache_say(c, "refusing cache directory %s: writable by its group or others (mode %04o);"
			      " run chmod go-w on it", c->dir, (unsigned)(st.st_mode & 07777));
		return KJIT_EDENIED;
	}
	c->dir_uid = st.st_uid;
	mode_t extra = st.st_mode & 077 & ~c->dir_mode;
	if (extra && st.st_uid == geteuid()) {
		/* the one direct call besides flock and readdir: a mode change */
		if (chmod(c->dir, (st.st_mode & 07777) & ~extra) < 0)
			kj__cache_say(c, "cannot tighten %s to mode %04o: %s", c->dir,
				      (unsigned)((st.st_mode & 07777) & ~extra), strerror(errno));
		else
			kj__cache_say(c, "tightened %s from mode %04o to %04o (other users must not read sources)",
				      c->dir, (unsigned)(st.st_mode & 07777), (unsigned)((st.st_mode & 07777) & ~extra));
	}
	return 0;
}

int kj__cache_open(struct kj__cache **out, const char *dir, const struct kj__cache_options *opt)
{
	struct kj__cache *c = NULL;
	char path[PATH_MAX];
	int r;

	*out = NULL;
	if (dir == NULL || *dir == '\0')
		return KJIT_EINVAL;
	const struct kj__cache_alloc *mem = opt && opt->alloc ? opt->alloc : &kj__cache_alloc_default;
	c = mem->calloc(1, sizeof *c);
	if (c == NULL)
		return KJIT_ENOMEM;
	c->mem = mem;
	c->lock_fd = -1;
	c->fs = opt && opt->fs ? opt->fs : &kj__fsys_default;
	c->log = opt && opt->log ? opt->log : stderr;
	c->pub_errors = opt ? opt->pub_errors : NULL;
	c->max_size = opt && opt->max_size ? opt->max_size : KJ_DEFAULT_MAX_SIZE;
	c->max_per_uid = opt ? opt->max_size_per_uid : 0;
	c->hot_max = opt && opt->hot_max ? opt->hot_max : KJ_HOT_BYTES_MAX;
	kj__htab_init(&c->hot_tab, mem->calloc, mem->free);
	c->dir_mode = opt && opt->dir_mode ? opt->dir_mode : 0700;
	c->file_mode = opt && opt->file_mode ? opt->file_mode : 0600;
	c->dir = kj__cache_strdup(c, dir);
	if (c->dir == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	if ((r = kj__cache_pathf(path, sizeof path, "%s/index.sqlite", dir)) < 0 ||
	    (r = kj__obj_mkdir_p(c, dir, c->dir_mode)) < 0 || (r = check_top(c)) < 0 || (r = take_lock(c)) < 0)
		goto out;
	/* <dir>/clean exists only between a clean close and the next open. */
	char marker[PATH_MAX];
	if ((r = kj__cache_pathf(marker, sizeof marker, "%s/clean", dir)) < 0)
		goto out;
	c->check_index = c->fs->unlink(marker) < 0;
	if ((r = kj__db_open(c, path)) < 0 || (r = kj__db_load(c)) < 0)
		goto out;
	/* Temporaries are left only by a writer that died: after a clean
	 * close there are none, and listing every object directory (a million
	 * files at scale) would double the start-up time. */
	if (c->check_index)
		kj__obj_sweep(c, 0);
	c->opened = 1;
	*out = c;
	c = NULL;
	r = 0;
out:
	kj__cache_close(c);
	return r;
}

/* Leaves <dir>/clean so the next open may skip the integrity check. */
static void mark_clean(struct kj__cache *c)
{
	char marker[PATH_MAX];
	int fd;

	if (kj__cache_pathf(marker, sizeof marker, "%s/clean", c->dir) < 0)
		return;
	fd = c->fs->open(marker, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, c->file_mode);
	if (fd < 0 || c->fs->close(fd) < 0)
		kj__cache_say(c, "cannot leave %s (the next start checks the index): %s", marker, strerror(errno));
}

void kj__cache_close(struct kj__cache *c)
{
	if (c == NULL)
		return;
	int clean = c->opened && c->db && c->st[ST_TOUCH] && kj__cache_flush(c) == 0;
	kj__db_close(c);
	if (clean)
		mark_clean(c);
	if (c->lock_fd >= 0 && c->fs->close(c->lock_fd) < 0)
		kj__cache_say(c, "close %s/lock: %s", c->dir, strerror(errno));
	kj__tab_free(c);
	kj__hot_free_all(c);
	c->mem->free(c->dir);
	c->mem->free(c);
}

/* ---- the hit path ---- */

int kj__cache_peek_exists(struct kj__cache *c, const char *key)
{
	uint8_t k[KJ_SHA256_LEN];

	return kj__cache_key_arg(key, k) == 0 && (kj__tab_find(c, k) != NONE || (c->pubs && kj__pub_find(c, k)));
}

int kj__cache_peek(struct kj__cache *c, const char *key, const uint8_t **data, size_t *len,
		   uint32_t *compile_ms)
{
	uint8_t k[KJ_SHA256_LEN];
	struct hot *h;
	size_t i;
	int r;

	if ((r = kj__cache_key_arg(key, k)) < 0)
		return r;
	if (c->pubs && kj__pub_peek(c, k, data, len, compile_ms) == 0)
		return 0; /* its publish is in flight (publish.c) */
	if ((i = kj__tab_find(c, k)) == NONE || (h = kj__hot_get(c, &c->ents[i])) == NULL)
		return KJIT_ENOENT;
	if ((r = kj__tab_touch(c, i)) < 0)
		return r;
	*data = h->data;
	*len = h->size;
	*compile_ms = c->ents[i].compile_ms;
	return 0;
}

int kj__cache_lookup(struct kj__cache *c, const char *key, uint8_t **data, size_t *len,
		     struct kj__cache_entry *e)
{
	uint8_t k[KJ_SHA256_LEN], *buf = NULL;
	char why[128];
	size_t i;
	int r;

	*data = NULL;
	*len = 0;
	if ((r = kj__cache_key_arg(key, k)) < 0)
		return r;
	const uint8_t *pd;
	if (c->pubs && kj__pub_peek(c, k, &pd, len, NULL) == 0) { /* its publish is in flight */
		if ((buf = c->mem->malloc(*len)) == NULL)
			return KJIT_ENOMEM;
		memcpy(buf, pd, *len);
		if (e)
			kj__pub_entry(c, k, e, 0);
		*data = buf;
		return 0;
	}
	i = kj__tab_find(c, k);
	if (i == NONE)
		return KJIT_ENOENT;
	struct hot *h = kj__hot_get(c, &c->ents[i]);
	if (h) {
		buf = c->mem->malloc(h->size);
		if (buf == NULL)
			return KJIT_ENOMEM;
		memcpy(buf, h->data, h->size);
		r = 0;
	} else {
		struct stat st;
		r = kj__obj_read(c, &c->ents[i], &buf, &st, why, sizeof why);
		if (r == 0)
			kj__hot_put(c, k, buf, c->ents[i].size, &st);
	}
	if (r == KJIT_ECORRUPT) {
		kj__cache_say(c, "object %s corrupt (%s); dropped, will recompile", key, why);
		kj__obj_drop(c, i);
		kj__cache_counter_add(c, "corrupt", 1);
		return KJIT_ENOENT;
	}
	if (r < 0)
		return r;
	if ((r = kj__tab_touch(c, i)) < 0) {
		c->mem->free(buf);
		return r;
	}
	if (e)
		kj__tab_fill_entry(c, &c->ents[i], e);
	*len = c->ents[i].size;
	*data = buf;
	return 0;
}

/* ---- listing and totals ---- */

/* foreach, of one user's entries (all == 0) or everyone's. */
static int foreach_rows(struct kj__cache *c, const char *target, int all, uid_t uid,
			int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg)
{
	sqlite3_stmt *st = NULL;
	struct kj__cache_entry e;
	int rc, r;

	kj__cache_flush(c); /* so the order is exact; a failure only costs that */
	if (c->pubs && (r = kj__pub_foreach(c, target, all, uid, fn, arg)) != 0)
		return r; /* the newest: published as we speak */
	rc = sqlite3_prepare_v2(c->db,
				"SELECT " ENTRY_COLS " FROM objects WHERE (?1 IS NULL OR target = ?1)"
				" AND (?2 OR key IN (SELECT key FROM object_uids WHERE uid = ?3))"
				" ORDER BY last_used DESC, used_seq DESC",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return kj__db_fail(c, "list");
	if (target)
		sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, all);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)uid);
	r = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		kj__db_row_entry(st, &e);
		uint8_t k[KJ_SHA256_LEN];
		if (c->pubs && kj__hex_ok(e.key) && (kj__cache_unhex(e.key, k), kj__pub_find(c, k)))
			continue; /* listed above, as it is being published again */
		kj__db_merge_pending(c, &e);
		if ((r = fn(&e, arg)) != 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = kj__db_fail(c, "list");
	sqlite3_finalize(st);
	return r;
}

int kj__cache_foreach(struct kj__cache *c, const char *target,
		      int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg)
{
	return foreach_rows(c, target, 1, 0, fn, arg);
}

int kj__cache_foreach_of(struct kj__cache *c, const char *target, uid_t uid,
			 int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg)
{
	return foreach_rows(c, target, 0, uid, fn, arg);
}

int kj__cache_totals(struct kj__cache *c, struct kj__cache_totals *t)
{
	uint64_t pb = 0;

	t->entries = c->n;
	t->bytes = c->bytes;
	if (c->pubs) { /* being published: entries already for whoever asks */
		t->entries += kj__cache_pub_count(c, &pb);
		t->bytes += pb;
	}
	return 0;
}

int kj__cache_totals_by_target(struct kj__cache *c,
			       void (*fn)(const char *target, const char *version, uint64_t entries, uint64_t bytes,
					  void *arg),
			       void *arg)
{
	uint64_t *n = c->mem->calloc(c->ntuples ? c->ntuples : 1, 2 * sizeof *n);

	if (n == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		n[2 * c->ents[i].tuple]++;
		n[2 * c->ents[i].tuple + 1] += c->ents[i].size;
	}
	for (size_t t = 0; t < c->ntuples; t++)
		if (n[2 * t])
			fn(c->tuples[t].target, c->tuples[t].version, n[2 * t], n[2 * t + 1], arg);
	c->mem->free(n);
	return 0;
}

uint64_t kj__cache_max_size(const struct kj__cache *c)
{
	return c->max_size;
}

/* ---- the object's entry points (schema 5) ---- */

int kj__cache_entries(struct kj__cache *c, const char *key, char **out)
{
	sqlite3_stmt *st = c->st[ST_ENTRIES];
	int rc, r = 0;

	*out = NULL;
	if (!kj__hex_ok(key))
		return KJIT_EINVAL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *t = kj__db_col_text(st, 0);
		if (t && (*out = kj__cache_strdup(c, t)) == NULL)
			r = KJIT_ENOMEM;
	} else {
		r = rc == SQLITE_DONE ? KJIT_ENOENT : kj__db_fail(c, "entries");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

int kj__cache_set_entries(struct kj__cache *c, const char *key, const char *list)
{
	sqlite3_stmt *st = c->st[ST_SET_ENTRIES];

	if (!kj__hex_ok(key) || list == NULL)
		return KJIT_EINVAL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, list, -1, SQLITE_STATIC);
	return kj__db_run(c, ST_SET_ENTRIES, "set entries");
}
