/* memo.c: what a request resolved to, remembered by its exact bytes, so a
 * repeated request skips the include scan and the source hashing that
 * computing its cache key takes (two thirds of a 16 KB hit otherwise).
 *
 * An entry is found by a 64-bit hash of the GET body and confirmed by
 * comparing the whole body, so two requests share an entry only if they are
 * the same bytes.  What the key also depends on that is not in the body
 * (a bundled kernel's source, headers read from the kernels directory) is
 * listed with each file's identity (device, inode, size, modification
 * and change times) and checked with stat on every use; any change drops the entry.
 * The rest (the daemon's configuration and detected targets, each
 * compiler's identity) is fixed for the daemon's life.  Bounded by
 * KJ_MEMO_BYTES_MAX, least recently used out first (common/htab.h indexes
 * the entries by the body's hash, common/ilist.h orders them).
 *
 * Entering a resolution takes two steps (issue 25: the loop never waits
 * on the disk): kj__memo_gather (at the end) stats the files a key was
 * computed from and re-reads them, so the identity kept matches the bytes
 * that were hashed; a bundled kernel's source is not re-read when its stat
 * proves it unchanged since the read (kj__file_unchanged_since: issue 35, 0.4 ms
 * a MiB saved; a file changed within a second of the read is re-read, as
 * before), nor a header of <kernels>/include whose read the same stat
 * proves, nor a kept text (hdrkeep.c), whose stat the same resolve took
 * when it used it.  It touches only its arguments and runs
 * with the resolve (offhash.c: a pool thread, or the loop for a small
 * request whose headers from disk, if any, were kept texts).
 * kj__memo_enter then puts the result in the memo, on the loop: the table
 * itself is the loop's alone.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"
#include "htab.h"
#include "ilist.h"
#include "kj_types.h"
#include "util.h"

struct memo_file {
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
	struct timespec ctim; /* set by every change, and by nothing else: an edit whose mtime is put back shows here */
};

struct memo_ent {
	uint8_t *body;
	size_t len;
	struct kj__memo_hit hit;
	struct memo_file *files;
	size_t n_files;
	size_t bytes;               /* what this entry costs, for the bound */
	struct kj__hnode hn;        /* in m->tab, hashed by body_hash */
	struct kj__ilink lru;       /* in m->lru */
};

struct kj__memo {
	struct kj__htab tab;
	struct kj__ilist lru;       /* most recently used first */
	size_t bytes, max_bytes;
};

/* A fast hash of the body, 8 bytes at a time; collisions are settled by
 * comparing bodies, so it need only spread well. */
static uint64_t body_hash(const uint8_t *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, sizeof w);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	h ^= h >> 33;
	return h * 0xc4ceb9fe1a85ec53ull;
}

int kj__memo_new(struct kj__memo **out, size_t max_bytes)
{
	struct kj__memo *m = calloc(1, sizeof *m);

	if (m == NULL)
		return KJIT_ENOMEM;
	m->max_bytes = max_bytes;
	kj__htab_init(&m->tab, NULL, NULL);
	*out = m;
	return 0;
}

static void ent_free(struct memo_ent *e)
{
	for (size_t i = 0; i < e->n_files; i++)
		free(e->files[i].path);
	free(e->files);
	free(e->body);
	free(e);
}

static void remove_ent(struct kj__memo *m, struct memo_ent *e)
{
	kj__htab_remove(&m->tab, &e->hn);
	kj__ilist_unlink(&m->lru, &e->lru);
	m->bytes -= e->bytes;
	ent_free(e);
}

void kj__memo_free(struct kj__memo *m)
{
	if (m == NULL)
		return;
	while (m->lru.head)
		remove_ent(m, KJ_CONTAINER_OF(m->lru.head, struct memo_ent, lru));
	kj__htab_fini(&m->tab);
	free(m);
}

static int file_same(const struct memo_file *f)
{
	struct stat st;

	return stat(f->path, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino && st.st_size == f->size &&
	       st.st_mtim.tv_sec == f->mtim.tv_sec && st.st_mtim.tv_nsec == f->mtim.tv_nsec &&
	       st.st_ctim.tv_sec == f->ctim.tv_sec && st.st_ctim.tv_nsec == f->ctim.tv_nsec;
}

int kj__memo_find(struct kj__memo *m, const uint8_t *body, size_t len, struct kj__memo_hit *out)
{
	if (m == NULL || m->tab.n == 0)
		return 0;
	uint64_t h = body_hash(body, len);
	for (struct kj__hnode *x = kj__htab_first(&m->tab, h); x; x = kj__htab_next(x, h)) {
		struct memo_ent *e = KJ_CONTAINER_OF(x, struct memo_ent, hn);
		if (e->len != len || memcmp(e->body, body, len) != 0)
			continue;
		for (size_t i = 0; i < e->n_files; i++) {
			if (!file_same(&e->files[i])) {
				remove_ent(m, e); /* an input changed: resolve it again */
				return 0;
			}
		}
		kj__ilist_to_front(&m->lru, &e->lru);
		*out = e->hit;
		return 1;
	}
	return 0;
}

/* kj__memo_put with the body's hash h already computed. */
static int put(struct kj__memo *m, const uint8_t *body, size_t len, uint64_t h, const struct kj__memo_hit *hit,
	       const char *const *paths, const struct stat *stats, size_t n_paths)
{
	struct memo_ent *e = NULL;
	size_t cost = sizeof *e + len;

	if (m == NULL || cost > m->max_bytes / 8)
		return 0; /* one request may take at most an eighth of the memo */
	if (kj__htab_reserve(&m->tab) < 0 || (e = calloc(1, sizeof *e)) == NULL ||
	    (e->body = malloc(len ? len : 1)) == NULL ||
	    (n_paths && (e->files = calloc(n_paths, sizeof *e->files)) == NULL))
		goto nomem;
	memcpy(e->body, body, len);
	e->len = len;
	e->hit = *hit;
	for (size_t i = 0; i < n_paths; i++, e->n_files++) {
		if ((e->files[i].path = kj__strdup(paths[i])) == NULL)
			goto nomem;
		e->files[i].dev = stats[i].st_dev;
		e->files[i].ino = stats[i].st_ino;
		e->files[i].size = stats[i].st_size;
		e->files[i].mtim = stats[i].st_mtim;
		e->files[i].ctim = stats[i].st_ctim;
		cost += strlen(paths[i]) + sizeof *e->files;
	}
	/* The same bytes may be there already (a request raced its own
	 * resolution): the newer resolution wins. */
	for (struct kj__hnode *x = kj__htab_first(&m->tab, h); x; x = kj__htab_next(x, h)) {
		struct memo_ent *o = KJ_CONTAINER_OF(x, struct memo_ent, hn);
		if (o->len == len && memcmp(o->body, body, len) == 0) {
			remove_ent(m, o);
			break;
		}
	}
	while (m->lru.tail && m->bytes + cost > m->max_bytes)
		remove_ent(m, KJ_CONTAINER_OF(m->lru.tail, struct memo_ent, lru));
	e->bytes = cost;
	kj__htab_insert(&m->tab, &e->hn, h);
	kj__ilist_push_front(&m->lru, &e->lru);
	m->bytes += cost;
	return 0;
nomem:
	if (e)
		ent_free(e);
	return KJIT_ENOMEM;
}

int kj__memo_put(struct kj__memo *m, const uint8_t *body, size_t len, const struct kj__memo_hit *hit,
		 const char *const *paths, const struct stat *stats, size_t n_paths)
{
	return put(m, body, len, body_hash(body, len), hit, paths, stats, n_paths);
}

/* ---- gathering a resolution's files (any thread) ---- */

/* 1 if path holds exactly the n bytes at p (read again now). */
static int file_holds(const char *path, const uint8_t *p, size_t n)
{
	uint8_t *now = NULL;
	size_t len = 0;
	int same = kj__read_file(path, KJ_SOURCE_MAX + KJ_HEADERS_MAX_TOTAL, &now, &len) == 0 && len == n &&
		   memcmp(now, p, n) == 0;
	free(now);
	return same;
}

/* The deepest existing directory of incdir/name's path (incdir itself at
 * worst), stat'ed into st: its mtime changes when name, or a directory on
 * the way to it, is created.  malloc'd, or NULL (no memory, or no
 * directory at all). */
static char *missing_watch(const char *incdir, const char *name, struct stat *st)
{
	char *p = kj__asprintf("%s/%s", incdir, name);
	size_t root = strlen(incdir);

	while (p != NULL) {
		char *slash = strrchr(p, '/');
		if (slash == NULL || (size_t)(slash - p) < root) {
			free(p);
			return NULL;
		}
		*slash = '\0';
		if (stat(p, st) == 0 && S_ISDIR(st->st_mode))
			return p;
	}
	return NULL;
}

/* One more file for f: path (taken over; NULL: out of memory) and its
 * stat; 0, or -1 (f is then not ok). */
static int files_add(struct kj__memo_files *f, char *path, const struct stat *st)
{
	if (path != NULL && f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 8;
		char **p = realloc(f->paths, cap * sizeof *p);
		if (p != NULL)
			f->paths = p;
		struct stat *s = p ? realloc(f->st, cap * sizeof *s) : NULL;
		if (s != NULL) {
			f->st = s;
			f->cap = cap;
		}
	}
	if (path == NULL || f->n == f->cap || f->n >= 2 * KJ_HEADERS_MAX_COUNT + 1) {
		free(path);
		return -1;
	}
	f->paths[f->n] = path;
	f->st[f->n++] = *st;
	return 0;
}

/* The proof reads holds for the header named name, or NULL. */
static const struct kj__hdr_read *read_of(const struct kj__hdr_reads *reads, const char *name)
{
	for (size_t i = 0; reads && i < reads->n; i++)
		if (strcmp(reads->v[i].name, name) == 0)
			return &reads->v[i];
	return NULL;
}

int kj__memo_gather(const uint8_t *raw, size_t raw_len, const struct kj__get_req *q, const struct kj__includes *inc,
		    const char *incdir, const struct kj__hdr_reads *reads, struct kj__memo_files *f)
{
	struct stat st;
	int ok = raw != NULL;

	memset(f, 0, sizeof *f);
	if (ok && q->kernel_path)
		ok = (kj__file_unchanged_since(q->kernel_path, &q->kernel_st, &q->kernel_read_at, &st) ||
		      (stat(q->kernel_path, &st) == 0 && file_holds(q->kernel_path, q->source, q->source_len))) &&
		     files_add(f, kj__strdup(q->kernel_path), &st) == 0;
	for (size_t i = 0; ok && i < inc->n; i++) {
		int from_request = 0;
		for (size_t j = 0; j < q->n_headers && !from_request; j++)
			from_request = strcmp(q->hnames[j], inc->names[i]) == 0;
		if (from_request)
			continue; /* its bytes are in the request */
		char *path = kj__asprintf("%s/%s", incdir, inc->names[i]);
		const struct kj__hdr_read *rd = read_of(reads, inc->names[i]);
		int proven = 0;
		if (path && rd && rd->data == inc->data[i]) {
			proven = 1;
			if (rd->kept) /* proven by a stat in this very resolve (kj__hdrkeep_find): not a second */
				st = rd->st;
			else
				proven = kj__file_unchanged_since(path, &rd->st, &rd->read_at, &st);
		}
		ok = path && (proven || (stat(path, &st) == 0 && file_holds(path, inc->data[i], inc->len[i])));
		if (!ok)
			free(path);
		else
			ok = files_add(f, path, &st) == 0;
	}
	for (size_t i = 0; ok && i < inc->n_missing; i++) {
		char *dir = missing_watch(incdir, inc->missing[i], &st);
		ok = dir != NULL && files_add(f, dir, &st) == 0;
	}
	if (ok)
		f->h = body_hash(raw, raw_len);
	f->ok = ok;
	return ok ? 0 : -1;
}

void kj__memo_enter(struct kj__memo *m, const uint8_t *raw, size_t raw_len, const struct kj__memo_files *f,
		    int backend, const char *key, const char *target, const char *version)
{
	struct kj__memo_hit hit = { .backend = backend };

	if (!f->ok || raw == NULL)
		return;
	snprintf(hit.key, sizeof hit.key, "%s", key);
	snprintf(hit.target, sizeof hit.target, "%s", target);
	snprintf(hit.version, sizeof hit.version, "%s", version);
	put(m, raw, raw_len, f->h, &hit, (const char *const *)f->paths, f->st, f->n);
}

void kj__memo_files_free(struct kj__memo_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
	free(f->st);
	memset(f, 0, sizeof *f);
}
