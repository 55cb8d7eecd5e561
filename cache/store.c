/* store.c: the object files of a cache, <dir>/<target>-<version>/<key>.<ext>:
 * their directories, reading and verifying one, writing one (temporary
 * file, fsync, rename), publishing, dropping, and sweeping what a crash
 * left behind; recipes' files (recipe.c's) are written here too, the same
 * durable way (put_file), so a publish's run writes through this file only.
 *
 * Invariants:
 *  - An object becomes visible only whole: it is written to a temporary
 *    file in its own directory (<key>.<ext>.tmp.<pid>.<n>, O_EXCL),
 *    fsync'd, renamed over the final name, the directory fsync'd, and only
 *    then is its index row inserted.  A crash leaves at worst a *.tmp
 *    (swept at the next open after an unclean close) or a file without a
 *    row (swept by gc and verify).
 *  - Nothing is served before its SHA-256 matched the digest in the index;
 *    a mismatch, a wrong size or a missing file drops the row and the file
 *    and is reported as a miss (KJIT_ECORRUPT to the caller here), never a
 *    wrong answer.  An I/O error that says nothing about the object
 *    (KJIT_EIO) leaves it in place.
 *  - Deletion is row first, file second.
 *  - A failed publish leaves the cache as it was: its temporary file is
 *    removed, and a file renamed into place whose row could not be written
 *    is removed too (or, if an older row names the same key, kept only
 *    when the bytes are the same).
 *  - A publish is in steps (publish.c): prepare on the cache's thread,
 *    kj__obj_place (file, fsyncs, rename; the recipe's too) on any thread, the row
 *    back on the cache's thread (the table's entry and hot copy: table.c).
 * Every file system call goes through c->fs; listing directories
 * (opendir/readdir) is the one direct call.  Nothing below the cache
 * directory is followed: object directories are checked with lstat
 * (kj__obj_dir_check) before anything in them is created, read, listed or
 * removed, and files are opened O_NOFOLLOW.  store.c owns no state of its
 * own beyond c->tmp_seq, the counter that makes temporary names unique
 * (the cache's thread only).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache-int.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

/* ---- paths and directories ---- */

int kj__obj_subdir(const struct kj__cache *c, const struct tuple *t, char *buf, size_t size)
{
	return kj__cache_pathf(buf, size, "%s/%s-%s", c->dir, t->target, t->version);
}

int kj__obj_path(const struct kj__cache *c, const struct ent *en, char *buf, size_t size)
{
	const struct tuple *t = &c->tuples[en->tuple];
	char hex[KJ_SHA256_HEX_LEN + 1];

	kj__hex(en->key, hex);
	return kj__cache_pathf(buf, size, "%s/%s-%s/%s.%s", c->dir, t->target, t->version, hex, t->ext);
}

int kj__obj_mkdir_p(struct kj__cache *c, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	int r = kj__cache_pathf(buf, sizeof buf, "%s", path);

	if (r < 0)
		return r;
	for (char *s = buf + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char ch = *s;
		*s = '\0';
		if (c->fs->mkdir(buf, mode) < 0 && errno != EEXIST) {
			kj__cache_say(c, "cannot create %s: %s", buf, strerror(errno));
			return KJIT_EIO;
		}
		*s = ch;
		if (ch == '\0')
			return 0;
	}
}

int kj__obj_dir_check(struct kj__cache *c, const char *path)
{
	struct stat st;

	if (c->fs->lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return KJIT_ENOENT;
		kj__cache_say(c, "cannot stat %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	if (!S_ISDIR(st.st_mode)) {
		kj__cache_say(c, "refusing %s: %s where kjitd keeps a directory of its own; remove it", path,
			      S_ISLNK(st.st_mode) ? "a symlink" : "not a directory");
		errno = ENOTDIR;
		return KJIT_EDENIED;
	}
	return 0;
}

int kj__obj_mkdir_below(struct kj__cache *c, const char *path)
{
	if (c->fs->mkdir(path, c->dir_mode) < 0 && errno != EEXIST) {
		kj__cache_say(c, "cannot create %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	int r = kj__obj_dir_check(c, path);
	return r == KJIT_ENOENT ? KJIT_EIO : r;
}

void kj__obj_unlink(struct kj__cache *c, const struct ent *en)
{
	char sub[PATH_MAX], path[PATH_MAX];

	if (kj__obj_subdir(c, &c->tuples[en->tuple], sub, sizeof sub) < 0 ||
	    kj__obj_path(c, en, path, sizeof path) < 0 || kj__obj_dir_check(c, sub) < 0)
		return;
	if (c->fs->unlink(path) < 0 && errno != ENOENT)
		kj__cache_say(c, "cannot remove %s: %s", path, strerror(errno));
}

void kj__obj_fsync_dir(struct kj__cache *c, const char *dir)
{
	int fd = c->fs->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);

	if (fd < 0) {
		kj__cache_say(c, "cannot open %s to fsync it: %s", dir, strerror(errno));
		return;
	}
	if (c->fs->fsync(fd) < 0)
		kj__cache_say(c, "fsync %s: %s", dir, strerror(errno));
	if (c->fs->close(fd) < 0)
		kj__cache_say(c, "close %s: %s", dir, strerror(errno));
}

int kj__obj_name(const char *name, uint8_t key[KJ_SHA256_LEN], const char **ext)
{
	char hex[KJ_SHA256_HEX_LEN + 1];

	if (strlen(name) <= KJ_SHA256_HEX_LEN + 1 || name[KJ_SHA256_HEX_LEN] != '.')
		return 0;
	memcpy(hex, name, KJ_SHA256_HEX_LEN);
	hex[KJ_SHA256_HEX_LEN] = '\0';
	if (!kj__hex_ok(hex) || !kj__cache_ext_ok(name + KJ_SHA256_HEX_LEN + 1))
		return 0;
	kj__cache_unhex(hex, key);
	*ext = name + KJ_SHA256_HEX_LEN + 1;
	return 1;
}

/* 1 if name ("<64 hex>.<ext>", or that and ".tmp.<pid>.<n>") is a file
 * of an object whose publish is in flight (the cache's thread). */
static int pub_file(const struct kj__cache *c, const char *name)
{
	uint8_t key[KJ_SHA256_LEN];
	char hex[KJ_SHA256_HEX_LEN + 1];

	if (strlen(name) <= KJ_SHA256_HEX_LEN || name[KJ_SHA256_HEX_LEN] != '.')
		return 0;
	memcpy(hex, name, KJ_SHA256_HEX_LEN);
	hex[KJ_SHA256_HEX_LEN] = '\0';
	if (!kj__hex_ok(hex))
		return 0;
	kj__cache_unhex(hex, key);
	return kj__pub_find(c, key) != NULL;
}

/* Temporary files: we hold the lock, and no one else writes but our own
 * publishes in flight (publish.c), whose files (temporary, or renamed
 * before their row is in) the loop's check (orphans) leaves alone; the
 * check without orphans only lists candidates. */
int kj__obj_sweepable(const struct kj__cache *c, const char *sub, const char *name, int orphans)
{
	uint8_t key[KJ_SHA256_LEN];
	const char *ext;
	char want[PATH_MAX];

	if (orphans && c->pubs && (strcmp(sub, "recipes") == 0 || pub_file(c, name)))
		return 0;
	const char *tmp = strstr(name, ".tmp.");
	if (tmp != NULL) {
		/* a temporary file is an object name plus ".tmp.<pid>.<n>" */
		char base[KJ_SHA256_HEX_LEN + 8];
		size_t n = (size_t)(tmp - name);
		if (n >= sizeof base)
			return 0;
		memcpy(base, name, n);
		base[n] = '\0';
		/* recipes/<64 hex>.req.tmp.<pid>.<n>: a recipe being written */
		if (strcmp(sub, "recipes") == 0)
			return n == KJ_SHA256_HEX_LEN + 4 && strcmp(base + KJ_SHA256_HEX_LEN, ".req") == 0 &&
			       strspn(base, "0123456789abcdef") == KJ_SHA256_HEX_LEN;
		return kj__obj_name(base, key, &ext);
	}
	char recipe[KJ_SHA256_HEX_LEN + 1];
	if (orphans && strcmp(sub, "recipes") == 0) /* no publish in flight (above): none is about to link it */
		return kj__recipe_file_name(name, recipe) && kj__recipe_named(c, recipe) == 0;
	if (!orphans || !kj__obj_name(name, key, &ext))
		return 0;
	size_t i = kj__tab_find(c, key);
	if (i == NONE)
		return 1;
	const struct tuple *t = &c->tuples[c->ents[i].tuple];
	if (kj__cache_pathf(want, sizeof want, "%s-%s", t->target, t->version) < 0)
		return 0;
	return strcmp(want, sub) != 0 || strcmp(t->ext, ext) != 0;
}

uint64_t kj__obj_sweep(struct kj__cache *c, int orphans)
{
	DIR *top = opendir(c->dir), *d;
	struct dirent *de, *fe;
	uint64_t gone = 0;
	char path[PATH_MAX];

	if (top == NULL) {
		kj__cache_say(c, "cannot list %s: %s", c->dir, strerror(errno));
		return 0;
	}
	while ((de = readdir(top)) != NULL) {
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		struct stat st;
		if (kj__cache_pathf(path, sizeof path, "%s/%s", c->dir, de->d_name) < 0 ||
		    c->fs->lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* a file, or a symlink: never followed */
		d = opendir(path);
		if (d == NULL)
			continue; /* not a directory (DT_UNKNOWN), or unreadable */
		while ((fe = readdir(d)) != NULL) {
			char file[PATH_MAX];
			if (!kj__obj_sweepable(c, de->d_name, fe->d_name, orphans) ||
			    kj__cache_pathf(file, sizeof file, "%s/%s", path, fe->d_name) < 0)
				continue;
			if (c->fs->unlink(file) < 0 && errno != ENOENT)
				kj__cache_say(c, "cannot remove %s: %s", file, strerror(errno));
			else
				gone++;
		}
		closedir(d);
	}
	closedir(top);
	if (gone)
		kj__cache_say(c, "removed %llu stale file(s) from %s", (unsigned long long)gone, c->dir);
	return gone;
}

/* ---- reading and dropping ---- */

/* Where en's file is (path) and what it must hash to (want), once its
 * directory has been checked.  0; KJIT_ECORRUPT with why (the directory is
 * missing or not a real one, the index row has no valid digest); or an
 * error. */
static int obj_locate(struct kj__cache *c, const struct ent *en, char *path, size_t pathlen,
		      uint8_t want[KJ_SHA256_LEN], char *why, size_t whylen)
{
	char sub[PATH_MAX];
	int r;

	if ((r = kj__obj_path(c, en, path, pathlen)) < 0)
		return r;
	if ((r = kj__obj_subdir(c, &c->tuples[en->tuple], sub, sizeof sub)) < 0)
		return r;
	if ((r = kj__obj_dir_check(c, sub)) == KJIT_ENOENT || r == KJIT_EDENIED) {
		snprintf(why, whylen, "%s", r == KJIT_ENOENT ? "missing" : "its directory is not a real directory");
		return KJIT_ECORRUPT;
	}
	if (r < 0)
		return r;
	if ((r = kj__db_row_digest(c, en->key, want)) == KJIT_ENOENT) {
		snprintf(why, whylen, "its index row has no valid digest");
		return KJIT_ECORRUPT;
	}
	return r;
}

int kj__obj_open(struct kj__cache *c, const char *path, int *fd, struct stat *st, char *why, size_t whylen)
{
	*fd = c->fs->open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (*fd < 0) {
		if (errno == ENOENT || errno == ELOOP) {
			snprintf(why, whylen, "%s", errno == ENOENT ? "missing" : "a symlink");
			return KJIT_ECORRUPT;
		}
		kj__cache_say(c, "cannot open %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	if (c->fs->fstat(*fd, st) < 0) {
		kj__cache_say(c, "fstat %s: %s", path, strerror(errno));
		if (c->fs->close(*fd) < 0)
			kj__cache_say(c, "close %s: %s", path, strerror(errno));
		*fd = -1;
		return KJIT_EIO;
	}
	return 0;
}

int kj__obj_read_exact(struct kj__cache *c, int fd, const char *path, uint8_t *buf, size_t n, char *why,
		       size_t whylen)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = c->fs->read(fd, buf + got, n - got);
		if (k < 0) {
			kj__cache_say(c, "read %s: %s", path, strerror(errno));
			return KJIT_EIO;
		}
		if (k == 0) {
			snprintf(why, whylen, "truncated while reading");
			return KJIT_ECORRUPT;
		}
		got += (size_t)k;
	}
	return 0;
}

int kj__obj_read(struct kj__cache *c, const struct ent *en, uint8_t **out, struct stat *out_st,
		       char *why, size_t whylen)
{
	char path[PATH_MAX];
	uint8_t *buf = NULL, d[KJ_SHA256_LEN], want[KJ_SHA256_LEN];
	struct stat st;
	int r, fd = -1;

	*out = NULL;
	if ((r = obj_locate(c, en, path, sizeof path, want, why, whylen)) < 0)
		return r;
	if ((r = kj__obj_open(c, path, &fd, &st, why, whylen)) < 0)
		return r;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != en->size) {
		snprintf(why, whylen, "size mismatch: %lld bytes on disk, %u in the index",
			 (long long)st.st_size, en->size);
		r = KJIT_ECORRUPT;
		goto out;
	}
	buf = c->mem->malloc(en->size);
	if (buf == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	if ((r = kj__obj_read_exact(c, fd, path, buf, en->size, why, whylen)) < 0 || (r = kj__sha256(buf, en->size, d)) < 0)
		goto out;
	if (memcmp(d, want, sizeof d) != 0) {
		snprintf(why, whylen, "digest mismatch");
		r = KJIT_ECORRUPT;
		goto out;
	}
	*out = buf;
	*out_st = st;
	buf = NULL;
	r = 0;
out:
	if (c->fs->close(fd) < 0)
		kj__cache_say(c, "close %s: %s", path, strerror(errno));
	c->mem->free(buf);
	return r;
}

/* A row that cannot be deleted is logged; the entry still leaves the
 * table, so it is not served again before the next open re-checks it. */
void kj__obj_drop(struct kj__cache *c, size_t idx)
{
	char hex[KJ_SHA256_HEX_LEN + 1];

	kj__hex(c->ents[idx].key, hex);
	kj__db_delete_row(c, hex);
	kj__obj_unlink(c, &c->ents[idx]);
	kj__tab_remove(c, idx);
}

/* ---- publishing ---- */

int kj__obj_entry_ok(const struct kj__cache_entry *e, const uint8_t *data, size_t len)
{
	if (e == NULL || !kj__hex_ok(e->key) || kjit_backend_name(e->backend) == NULL ||
	    !kj__token_ok(e->target, KJ_TARGET_MAX) || !kj__token_ok(e->version, KJ_VERSION_STR_MAX) ||
	    !kj__cache_ext_ok(e->ext) || data == NULL || len == 0)
		return KJIT_EINVAL;
	return len > KJ_OBJECT_MAX ? KJIT_ETOOBIG : 0;
}

int kj__obj_write_tmp(struct kj__cache *c, const char *tmp, const uint8_t *data, size_t len,
		     int *created)
{
	int fd = c->fs->open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, c->file_mode);
	size_t done = 0;
	const char *what = "write";
	int cfd;

	*created = fd >= 0;
	if (fd < 0) {
		kj__cache_say(c, "cannot create %s: %s", tmp, strerror(errno));
		return KJIT_EIO;
	}
	while (done < len) {
		ssize_t k = c->fs->write(fd, data + done, len - done);
		if (k <= 0) {
			if (k == 0)
				errno = ENOSPC; /* write(2) never returns 0 for n > 0; be safe */
			goto fail;
		}
		done += (size_t)k;
	}
	what = "fsync";
	if (c->fs->fsync(fd) < 0)
		goto fail;
	what = "close";
	cfd = fd;
	fd = -1; /* gone even when close fails */
	if (c->fs->close(cfd) < 0)
		goto fail;
	return 0;
fail:
	kj__cache_say(c, "%s %s: %s", what, tmp, strerror(errno));
	if (fd >= 0) {
		int saved = errno;
		c->fs->close(fd);
		errno = saved;
	}
	return KJIT_EIO;
}

/* Everything a publish needs before it touches the disk: e checked and
 * completed (size, times), its table entry en (tuple interned, a new use
 * sequence) and the paths, the temporary name unique by c->tmp_seq.  The
 * cache's thread.  0 or a negative code; nothing on disk or in the index
 * changed either way.  The digest is the run's (kj__obj_place). */
int kj__obj_prepare(struct kj__cache *c, struct kj__cache_entry *e, size_t len, struct ent *en,
		    struct kj__pub_paths *p)
{
	int r;

	memset(en, 0, sizeof *en);
	kj__cache_unhex(e->key, en->key);
	if ((r = kj__tuple_intern(c, e->backend, e->target, e->version, e->ext, &en->tuple)) < 0 ||
	    (r = kj__obj_subdir(c, &c->tuples[en->tuple], p->sub, sizeof p->sub)) < 0 ||
	    (r = kj__obj_path(c, en, p->final, sizeof p->final)) < 0 ||
	    (r = kj__cache_pathf(p->tmp, sizeof p->tmp, "%s.tmp.%ld.%llu", p->final, (long)getpid(),
				 (unsigned long long)++c->tmp_seq)) < 0)
		return r;
	e->size = len;
	e->created = e->last_used = kj__wall_s();
	e->hits = 0;
	en->size = (uint32_t)len;
	en->compile_ms = e->compile_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)e->compile_ms;
	en->last_used = (uint32_t)e->last_used;
	en->seq = ++c->seq;
	return 0;
}

/* The one durable write of a cache's file (an object, a recipe): dir made
 * below the cache if missing, data to tmp (O_EXCL, fsync), tmp renamed
 * over final, then dir fsync'd so that the name survives a crash before
 * any row names it.  tmp is removed on failure.  0 or KJIT_EIO (errno
 * set). */
static int put_file(struct kj__cache *c, const char *dir, const char *tmp, const char *final, const uint8_t *data,
		    size_t len)
{
	int r, created = 0, err = 0;

	if ((r = kj__obj_mkdir_below(c, dir)) < 0 || (r = kj__obj_write_tmp(c, tmp, data, len, &created)) < 0) {
		err = errno;
		goto out;
	}
	if (c->fs->rename(tmp, final) < 0) {
		err = errno;
		kj__cache_say(c, "rename %s to %s: %s", tmp, final, strerror(errno));
		r = KJIT_EIO;
		goto out;
	}
	created = 0;
	kj__obj_fsync_dir(c, dir);
out:
	if (created && c->fs->unlink(tmp) < 0 && errno != ENOENT)
		kj__cache_say(c, "cannot remove %s: %s", tmp, strerror(errno));
	if (r < 0)
		errno = err ? err : EIO;
	return r;
}

int kj__obj_place(struct kj__cache *c, const struct kj__pub_paths *p, const uint8_t *data, size_t len,
		  struct stat *st)
{
	int r = put_file(c, p->sub, p->tmp, p->final, data, len);

	/* the file's identity for the hot set; without it (zeroed), no hot copy */
	if (r == 0 && c->fs->stat(p->final, st) < 0)
		memset(st, 0, sizeof *st);
	return r;
}

int kj__obj_place_recipe(struct kj__cache *c, const char *recipe, const uint8_t *body, size_t len, uint64_t seq)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	int fd, r;

	if (!kj__hex_ok(recipe))
		return KJIT_EINVAL;
	if ((r = kj__cache_pathf(dir, sizeof dir, "%s/recipes", c->dir)) < 0 ||
	    (r = kj__cache_pathf(path, sizeof path, "%s/%s.req", dir, recipe)) < 0 ||
	    (r = kj__cache_pathf(tmp, sizeof tmp, "%s.tmp.%d.%llu", path, (int)getpid(), (unsigned long long)seq)) < 0)
		return r;
	/* Content-addressed: a recipe already stored is the same bytes.  A
	 * recipes/ that is not a real directory is refused, never followed. */
	if ((r = kj__obj_dir_check(c, dir)) == KJIT_EDENIED || (r < 0 && r != KJIT_ENOENT))
		return r;
	fd = c->fs->open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd >= 0 && c->fs->fstat(fd, &st) == 0 && (size_t)st.st_size == len) {
		c->fs->close(fd);
		return 0;
	}
	if (fd >= 0)
		c->fs->close(fd);
	return put_file(c, dir, tmp, path, body, len);
}

/* Inserts e's rows (w's with them) now that its file is in place.  If
 * that fails the file is not indexed, and a prior row for the key (prior:
 * its entry, or NONE) now names these bytes: it is kept only if they are
 * the same bytes; otherwise it is dropped, or, with no prior row, the file
 * is removed.  0 or KJIT_EIO. */
