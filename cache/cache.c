/* cache.c: the object store of one kjitd (see cache.h for the contract).
 *
 * Layout: <dir>/lock (flock'd for the cache's life, so one kjitd per
 * directory), <dir>/index.sqlite (WAL), <dir>/<target>-<version>/<key>.<ext>.
 *
 * Invariants:
 *  - A row exists only for a file that was written whole: temporary file
 *    (<key>.<ext>.tmp.<pid>.<n>, O_EXCL), fsync, rename, directory fsync,
 *    then the row.  A crash leaves at worst a *.tmp (deleted at open) or a
 *    file without a row (ignored; removed by gc and verify).
 *  - The in-memory table mirrors the valid rows of the index: every row the
 *    hit path may serve is in it, with the digest to check.  The hit path
 *    (kj__cache_lookup) touches no sqlite: it counts hits in the table and
 *    kj__cache_flush writes them in one transaction.
 *  - Nothing is served before its SHA-256 matched; a mismatch or a missing
 *    file drops the row and the file and is reported as a miss.
 *  - Deletion order is row first, file second, so a crash leaves an orphan
 *    file, never a row without its file.
 *
 * Ownership: struct kj__cache owns the lock descriptor, the sqlite handle
 * and its prepared statements, the table and its interned strings.  All
 * file system calls go through c->fs (cache.h); directory listing
 * (opendir/readdir) and flock are the only direct calls.  One thread.
 *
 * Table: entries are kept dense in c->ents (64 bytes each: the digest stays
 * in the index, see row_digest) and found through c->slots, an open-addressing array (linear probing, power of two, load
 * <= 3/4) of entry index + 1.  Target, version and extension are interned
 * once per distinct (backend, target, version, ext) in c->tuples.  A million
 * entries take about 64 MB + 8 MB.  LRU order is (last_used, used_seq):
 * seconds for people, a per-cache use sequence so the order is exact within
 * a second.
 */
#include <dirent.h>
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

#include "cache.h"
#include "kjit.h"
#include "kj_limits.h"
#include "proto.h"
#include "sha.h"
#include "util.h"

#define SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 5000          /* only kjit tools open the index besides us */
#define TAB_MIN 1024                  /* smallest table, entries */
#define NONE ((size_t)-1)

static const char *const exts[] = { "hsaco", "cubin", "ptx", "spv" };

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS objects("
	" key TEXT PRIMARY KEY, backend INTEGER NOT NULL, target TEXT NOT NULL,"
	" version TEXT NOT NULL, ext TEXT NOT NULL, size INTEGER NOT NULL,"
	" sha256 TEXT NOT NULL, created INTEGER NOT NULL, last_used INTEGER NOT NULL,"
	" used_seq INTEGER NOT NULL DEFAULT 0, hits INTEGER NOT NULL DEFAULT 0,"
	" compile_ms INTEGER NOT NULL DEFAULT 0, source_name TEXT, options TEXT,"
	" compiler TEXT, log TEXT);"
	"CREATE INDEX IF NOT EXISTS objects_lru ON objects(last_used, used_seq);"
	"CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS recipe_of(key TEXT PRIMARY KEY, recipe TEXT NOT NULL);";

#define ENTRY_COLS "key, backend, target, version, ext, size, sha256, created, last_used," \
	" hits, compile_ms, source_name, options, compiler, log"

enum stmt_id {
	ST_INSERT, ST_DELETE, ST_TOUCH, ST_COUNTER_ADD, ST_COUNTER_GET, ST_GET,
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_DIGEST, ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_INSERT] = "INSERT OR REPLACE INTO objects(key, backend, target, version, ext, size,"
		      " sha256, created, last_used, used_seq, hits, compile_ms, source_name,"
		      " options, compiler, log)"
		      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12, ?13, ?14, ?15)",
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
};

struct tuple {
	int backend;
	char *target;
	char *version;
	char *ext;
};

/* One indexed object, as the hit path needs it.  Its digest stays in the
 * index (row_digest): it is needed only when the object is read from disk,
 * and leaving it out keeps a million entries under 60 MB. */
struct ent {
	uint8_t key[KJ_SHA256_LEN];
	uint64_t seq;        /* use order: exact LRU within a second */
	uint32_t last_used;  /* unix seconds (unsigned: good until 2106) */
	uint32_t size;       /* <= KJ_OBJECT_MAX */
	uint32_t pending;    /* hits not yet flushed; > 0 means its key is in dirty */
	uint32_t tuple;      /* index into c->tuples */
	uint32_t compile_ms; /* what a hit saves (stats) */
};

struct kj__cache {
	char *dir;
	const struct kj__fsys *fs;
	FILE *log;
	uint64_t max_size;
	int lock_fd;
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];

	struct ent *ents;
	size_t n, cap;
	uint32_t *slots;     /* entry index + 1; 0 = empty */
	size_t nslots;
	struct tuple *tuples;
	size_t ntuples, captuples, last_tuple;
	uint64_t bytes;      /* sum of sizes in the table */
	uint64_t seq;        /* last use sequence handed out */
	uint64_t tmp_seq;    /* temporary file names */
	int check_index;     /* last close was not clean: run quick_check */
	int opened;          /* fully open: close leaves the clean marker */
	size_t bad_rows;     /* rows skipped at load (dropped by verify) */

	uint8_t (*dirty)[KJ_SHA256_LEN];
	size_t ndirty, capdirty;

	/* The hot set: verified objects in memory, most recently used first. */
	struct hot **hot_tab;
	size_t hot_cap, hot_n;
	uint64_t hot_bytes, hot_max;
	struct hot *hot_head, *hot_tail;
};

/* A verified object held in memory, with what its file looked like then. */
struct hot {
	uint8_t key[KJ_SHA256_LEN];
	struct hot *chain;           /* next in the bucket */
	struct hot *prev, *next;     /* LRU list */
	uint8_t *data;
	size_t size;
	dev_t dev;
	ino_t ino;
	struct timespec mtim;
};

/* ---- helpers ---------------------------------------------------------- */

static void say(const struct kj__cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct kj__cache *c, const char *fmt, ...)
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

/* Logs the connection's last error and returns KJIT_EIO. */
static int db_fail(const struct kj__cache *c, const char *what)
{
	say(c, "index %s/index.sqlite: %s: %s", c->dir, what, sqlite3_errmsg(c->db));
	return KJIT_EIO;
}

/* Steps a statement that returns no row, then resets it.  0 or KJIT_EIO. */
static int db_run(struct kj__cache *c, enum stmt_id id, const char *what)
{
	sqlite3_stmt *st = c->st[id];
	int rc = sqlite3_step(st), r = 0;

	if (rc != SQLITE_DONE)
		r = db_fail(c, what);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

static int db_begin(struct kj__cache *c)
{
	return db_run(c, ST_BEGIN, "begin");
}

static int db_commit(struct kj__cache *c)
{
	int r = db_run(c, ST_COMMIT, "commit");
	if (r < 0 && !sqlite3_get_autocommit(c->db))
		db_run(c, ST_ROLLBACK, "rollback");
	return r;
}

static void db_rollback(struct kj__cache *c)
{
	if (!sqlite3_get_autocommit(c->db))
		db_run(c, ST_ROLLBACK, "rollback");
}

static int ext_ok(const char *ext)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(exts); i++)
		if (strcmp(ext, exts[i]) == 0)
			return 1;
	return 0;
}

/* s must have passed kj__hex_ok (lowercase).  On the load path: a million
 * keys and digests, so no branches. */
static void unhex(const char *s, uint8_t out[KJ_SHA256_LEN])
{
	for (size_t i = 0; i < KJ_SHA256_LEN; i++) {
		unsigned hi = (unsigned char)s[2 * i], lo = (unsigned char)s[2 * i + 1];
		hi = (hi & 0xf) + 9 * (hi >> 6);
		lo = (lo & 0xf) + 9 * (lo >> 6);
		out[i] = (uint8_t)(hi << 4 | lo);
	}
}

/* Formats into buf; KJIT_EINVAL if it does not fit. */
static int pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? KJIT_EINVAL : 0;
}

static int subdir_path(const struct kj__cache *c, const struct tuple *t, char *buf, size_t size)
{
	return pathf(buf, size, "%s/%s-%s", c->dir, t->target, t->version);
}

static int object_path(const struct kj__cache *c, const struct ent *en, char *buf, size_t size)
{
	const struct tuple *t = &c->tuples[en->tuple];
	char hex[KJ_SHA256_HEX_LEN + 1];

	kj__hex(en->key, hex);
	return pathf(buf, size, "%s/%s-%s/%s.%s", c->dir, t->target, t->version, hex, t->ext);
}

/* ---- the in-memory table ---------------------------------------------- */

static size_t home_slot(const struct kj__cache *c, const uint8_t *key)
{
	uint64_t h;

	memcpy(&h, key, sizeof h); /* the key is a SHA-256: already uniform */
	return (size_t)h & (c->nslots - 1);
}

static size_t tab_find(const struct kj__cache *c, const uint8_t *key)
{
	if (c->nslots == 0)
		return NONE;
	for (size_t s = home_slot(c, key);; s = (s + 1) & (c->nslots - 1)) {
		uint32_t v = c->slots[s];
		if (v == 0)
			return NONE;
		if (memcmp(c->ents[v - 1].key, key, KJ_SHA256_LEN) == 0)
			return v - 1;
	}
}

/* The slot holding entry idx (which must be in the table). */
static size_t slot_of(const struct kj__cache *c, size_t idx)
{
	size_t s = home_slot(c, c->ents[idx].key);

	while (c->slots[s] != idx + 1)
		s = (s + 1) & (c->nslots - 1);
	return s;
}

static void slot_put(struct kj__cache *c, size_t idx)
{
	size_t s = home_slot(c, c->ents[idx].key);

	while (c->slots[s] != 0)
		s = (s + 1) & (c->nslots - 1);
	c->slots[s] = (uint32_t)(idx + 1);
}

/* Makes room for want entries without a later allocation.  0 or KJIT_ENOMEM. */
static int tab_reserve(struct kj__cache *c, size_t want)
{
	if (want >= UINT32_MAX / 2)
		return KJIT_ENOMEM;
	if (want > c->cap) {
		size_t cap = c->cap + c->cap / 2;
		if (cap < want)
			cap = want;
		if (cap < TAB_MIN)
			cap = TAB_MIN;
		struct ent *p = realloc(c->ents, cap * sizeof *p);
		if (p == NULL)
			return KJIT_ENOMEM;
		c->ents = p;
		c->cap = cap;
	}
	if (want * 4 >= c->nslots * 3) {
		size_t ns = TAB_MIN * 2;
		while (want * 4 >= ns * 3)
			ns *= 2;
		uint32_t *slots = calloc(ns, sizeof *slots);
		if (slots == NULL)
			return KJIT_ENOMEM;
		free(c->slots);
		c->slots = slots;
		c->nslots = ns;
		for (size_t i = 0; i < c->n; i++)
			slot_put(c, i);
	}
	return 0;
}

/* Adds en (room must have been reserved). */
static void tab_add(struct kj__cache *c, const struct ent *en)
{
	c->ents[c->n] = *en;
	slot_put(c, c->n);
	c->n++;
	c->bytes += en->size;
}

/* Removes entry idx: backward-shift deletion in the slots, then the last
 * entry moves into idx. */
/* ---- the hot set -------------------------------------------------------- */

#define HOT_BUCKETS_MIN 256
#define HOT_OBJECT_SHARE 8 /* one object takes at most 1/8 of the hot set */

static size_t hot_bucket(const struct kj__cache *c, const uint8_t *key)
{
	uint64_t h;
	memcpy(&h, key, sizeof h); /* the key is a SHA-256: its bytes are uniform */
	return (size_t)h & (c->hot_cap - 1);
}

static struct hot *hot_find(const struct kj__cache *c, const uint8_t *key)
{
	if (c->hot_cap == 0)
		return NULL;
	for (struct hot *h = c->hot_tab[hot_bucket(c, key)]; h; h = h->chain)
		if (memcmp(h->key, key, KJ_SHA256_LEN) == 0)
			return h;
	return NULL;
}

static void hot_unlink_lru(struct kj__cache *c, struct hot *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		c->hot_head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	else
		c->hot_tail = h->prev;
	h->prev = h->next = NULL;
}

static void hot_push_front(struct kj__cache *c, struct hot *h)
{
	h->next = c->hot_head;
	if (c->hot_head)
		c->hot_head->prev = h;
	c->hot_head = h;
	if (c->hot_tail == NULL)
		c->hot_tail = h;
}

static void hot_remove(struct kj__cache *c, const uint8_t *key)
{
	struct hot **pp, *h;

	if (c->hot_cap == 0)
		return;
	for (pp = &c->hot_tab[hot_bucket(c, key)]; (h = *pp) != NULL; pp = &h->chain) {
		if (memcmp(h->key, key, KJ_SHA256_LEN) == 0) {
			*pp = h->chain;
			hot_unlink_lru(c, h);
			c->hot_bytes -= h->size;
			c->hot_n--;
			free(h->data);
			free(h);
			return;
		}
	}
}

static void hot_free_all(struct kj__cache *c)
{
	while (c->hot_head)
		hot_remove(c, c->hot_head->key);
	free(c->hot_tab);
	c->hot_tab = NULL;
	c->hot_cap = 0;
}

/* Keeps a copy of verified bytes with the file's identity; best effort. */
static void hot_put(struct kj__cache *c, const uint8_t *key, const uint8_t *data, size_t size,
		   const struct stat *st)
{
	if (c->hot_max == 0 || size > c->hot_max / HOT_OBJECT_SHARE)
		return;
	hot_remove(c, key);
	if (c->hot_cap == 0 || c->hot_n + 1 > c->hot_cap) {
		size_t cap = c->hot_cap ? c->hot_cap * 2 : HOT_BUCKETS_MIN;
		struct hot **tab = calloc(cap, sizeof *tab);
		if (tab == NULL)
			return;
		for (size_t b = 0; b < c->hot_cap; b++) {
			for (struct hot *h = c->hot_tab[b], *next; h; h = next) {
				next = h->chain;
				uint64_t v;
				memcpy(&v, h->key, sizeof v);
				h->chain = tab[v & (cap - 1)];
				tab[v & (cap - 1)] = h;
			}
		}
		free(c->hot_tab);
		c->hot_tab = tab;
		c->hot_cap = cap;
	}
	while (c->hot_tail && c->hot_bytes + size > c->hot_max)
		hot_remove(c, c->hot_tail->key);
	struct hot *h = calloc(1, sizeof *h);
	if (h == NULL || (h->data = malloc(size)) == NULL) {
		free(h);
		return;
	}
	memcpy(h->key, key, KJ_SHA256_LEN);
	memcpy(h->data, data, size);
	h->size = size;
	h->dev = st->st_dev;
	h->ino = st->st_ino;
	h->mtim = st->st_mtim;
	size_t b = hot_bucket(c, key);
	h->chain = c->hot_tab[b];
	c->hot_tab[b] = h;
	hot_push_front(c, h);
	c->hot_bytes += size;
	c->hot_n++;
}

/* The hot copy of en, if its file is still the one that was verified. */
static struct hot *hot_get(struct kj__cache *c, const struct ent *en)
{
	struct hot *h = hot_find(c, en->key);
	char path[PATH_MAX];
	struct stat st;

	if (h == NULL)
		return NULL;
	if (object_path(c, en, path, sizeof path) < 0 || c->fs->stat(path, &st) < 0 || st.st_dev != h->dev ||
	    st.st_ino != h->ino || (size_t)st.st_size != h->size || st.st_mtim.tv_sec != h->mtim.tv_sec ||
	    st.st_mtim.tv_nsec != h->mtim.tv_nsec || h->size != en->size) {
		hot_remove(c, en->key); /* changed or gone: read and verify it again */
		return NULL;
	}
	hot_unlink_lru(c, h);
	hot_push_front(c, h);
	return h;
}

static void tab_remove(struct kj__cache *c, size_t idx)
{
	hot_remove(c, c->ents[idx].key);
	size_t mask = c->nslots - 1, hole = slot_of(c, idx), j = hole;

	for (;;) {
		j = (j + 1) & mask;
		uint32_t v = c->slots[j];
		if (v == 0)
			break;
		size_t h = home_slot(c, c->ents[v - 1].key);
		int stays = hole < j ? (h > hole && h <= j) : (h > hole || h <= j);
		if (!stays) {
			c->slots[hole] = v;
			hole = j;
		}
	}
	c->slots[hole] = 0;
	c->bytes -= c->ents[idx].size;
	size_t last = c->n - 1;
	if (idx != last) {
		size_t s = slot_of(c, last);
		c->ents[idx] = c->ents[last];
		c->slots[s] = (uint32_t)(idx + 1);
	}
	c->n--;
}

static void tab_clear(struct kj__cache *c)
{
	c->n = 0;
	c->bytes = 0;
	c->ndirty = 0;
	if (c->slots)
		memset(c->slots, 0, c->nslots * sizeof *c->slots);
}

/* The index of (backend, target, version, ext) in c->tuples, adding it. */
static int tuple_intern(struct kj__cache *c, int backend, const char *target, const char *version,
			const char *ext, uint32_t *out)
{
	struct tuple *t;

	for (size_t k = 0; k < c->ntuples; k++) {
		size_t i = (c->last_tuple + k) % c->ntuples;
		t = &c->tuples[i];
		if (t->backend == backend && strcmp(t->target, target) == 0 &&
		    strcmp(t->version, version) == 0 && strcmp(t->ext, ext) == 0) {
			c->last_tuple = i;
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (c->ntuples == c->captuples) {
		size_t cap = c->captuples ? c->captuples * 2 : 8;
		t = realloc(c->tuples, cap * sizeof *t);
		if (t == NULL)
			return KJIT_ENOMEM;
		c->tuples = t;
		c->captuples = cap;
	}
	t = &c->tuples[c->ntuples];
	t->backend = backend;
	t->target = kj__strdup(target);
	t->version = kj__strdup(version);
	t->ext = kj__strdup(ext);
	if (!t->target || !t->version || !t->ext) {
		free(t->target);
		free(t->version);
		free(t->ext);
		return KJIT_ENOMEM;
	}
	c->last_tuple = c->ntuples;
	*out = (uint32_t)c->ntuples++;
	return 0;
}

static void fill_entry(const struct kj__cache *c, const struct ent *en, struct kj__cache_entry *e)
{
	const struct tuple *t = &c->tuples[en->tuple];

	memset(e, 0, sizeof *e);
	kj__hex(en->key, e->key);
	e->backend = t->backend;
	snprintf(e->target, sizeof e->target, "%s", t->target);
	snprintf(e->version, sizeof e->version, "%s", t->version);
	snprintf(e->ext, sizeof e->ext, "%s", t->ext);
	e->size = en->size;
	e->last_used = en->last_used; /* sha256 stays empty: see row_digest */
	e->compile_ms = en->compile_ms;
}

/* Notes a hit on entry idx (memory only). */
static int tab_touch(struct kj__cache *c, size_t idx)
{
	struct ent *en = &c->ents[idx];

	if (en->pending == 0) {
		if (c->ndirty == c->capdirty) {
			size_t cap = c->capdirty ? c->capdirty * 2 : 64;
			void *p = realloc(c->dirty, cap * sizeof *c->dirty);
			if (p == NULL)
				return KJIT_ENOMEM;
			c->dirty = p;
			c->capdirty = cap;
		}
		memcpy(c->dirty[c->ndirty++], en->key, KJ_SHA256_LEN);
	}
	if (en->pending < UINT32_MAX)
		en->pending++;
	en->last_used = (uint32_t)kj__wall_s();
	en->seq = ++c->seq;
	return 0;
}

/* ---- directories -------------------------------------------------------- */

static int mkdir_p(struct kj__cache *c, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	int r = pathf(buf, sizeof buf, "%s", path);

	if (r < 0)
		return r;
	for (char *s = buf + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char ch = *s;
		*s = '\0';
		if (c->fs->mkdir(buf, mode) < 0 && errno != EEXIST) {
			say(c, "cannot create %s: %s", buf, strerror(errno));
			return KJIT_EIO;
		}
		*s = ch;
		if (ch == '\0')
			return 0;
	}
}

/* Best effort: makes a rename in dir durable.  Failures are logged. */
static void fsync_dir(struct kj__cache *c, const char *dir)
{
	int fd = c->fs->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);

	if (fd < 0) {
		say(c, "cannot open %s to fsync it: %s", dir, strerror(errno));
		return;
	}
	if (c->fs->fsync(fd) < 0)
		say(c, "fsync %s: %s", dir, strerror(errno));
	if (c->fs->close(fd) < 0)
		say(c, "close %s: %s", dir, strerror(errno));
}

/* Is name "<64 hex>.<ext>"?  Fills key and *ext. */
static int object_name(const char *name, uint8_t key[KJ_SHA256_LEN], const char **ext)
{
	char hex[KJ_SHA256_HEX_LEN + 1];

	if (strlen(name) <= KJ_SHA256_HEX_LEN + 1 || name[KJ_SHA256_HEX_LEN] != '.')
		return 0;
	memcpy(hex, name, KJ_SHA256_HEX_LEN);
	hex[KJ_SHA256_HEX_LEN] = '\0';
	if (!kj__hex_ok(hex) || !ext_ok(name + KJ_SHA256_HEX_LEN + 1))
		return 0;
	unhex(hex, key);
	*ext = name + KJ_SHA256_HEX_LEN + 1;
	return 1;
}

/* Should file name in object directory sub go?  Temporary files always (we
 * hold the lock: no one else is writing); with orphans, also object files
 * that no row of the table names at exactly that place. */
static int sweepable(const struct kj__cache *c, const char *sub, const char *name, int orphans)
{
	uint8_t key[KJ_SHA256_LEN];
	const char *ext;
	char want[PATH_MAX];

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
		return object_name(base, key, &ext);
	}
	if (!orphans || !object_name(name, key, &ext))
		return 0;
	size_t i = tab_find(c, key);
	if (i == NONE)
		return 1;
	const struct tuple *t = &c->tuples[c->ents[i].tuple];
	if (pathf(want, sizeof want, "%s-%s", t->target, t->version) < 0)
		return 0;
	return strcmp(want, sub) != 0 || strcmp(t->ext, ext) != 0;
}

/* Deletes stale temporary files (and, with orphans, object files without a
 * row) in every object directory.  Returns how many went. */
static uint64_t sweep(struct kj__cache *c, int orphans)
{
	DIR *top = opendir(c->dir), *d;
	struct dirent *de, *fe;
	uint64_t gone = 0;
	char path[PATH_MAX];

	if (top == NULL) {
		say(c, "cannot list %s: %s", c->dir, strerror(errno));
		return 0;
	}
	while ((de = readdir(top)) != NULL) {
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (pathf(path, sizeof path, "%s/%s", c->dir, de->d_name) < 0)
			continue;
		d = opendir(path);
		if (d == NULL)
			continue; /* not a directory (DT_UNKNOWN), or unreadable */
		while ((fe = readdir(d)) != NULL) {
			char file[PATH_MAX];
			if (!sweepable(c, de->d_name, fe->d_name, orphans) ||
			    pathf(file, sizeof file, "%s/%s", path, fe->d_name) < 0)
				continue;
			if (c->fs->unlink(file) < 0 && errno != ENOENT)
				say(c, "cannot remove %s: %s", file, strerror(errno));
			else
				gone++;
		}
		closedir(d);
	}
	closedir(top);
	if (gone)
		say(c, "removed %llu stale file(s) from %s", (unsigned long long)gone, c->dir);
	return gone;
}

/* ---- the index ---------------------------------------------------------- */

static int is_corrupt_rc(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

/* Runs sql (no rows wanted).  Sets *corrupt when sqlite says the file is
 * damaged.  0 or KJIT_EIO (logged). */
static int db_exec(struct kj__cache *c, const char *sql, int *corrupt)
{
	char *msg = NULL;
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);

	if (rc == SQLITE_OK)
		return 0;
	*corrupt = is_corrupt_rc(rc);
	say(c, "index %s/index.sqlite: %s: %s", c->dir, sql, msg ? msg : sqlite3_errstr(rc));
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
		*corrupt = is_corrupt_rc(rc);
		say(c, "index %s/index.sqlite: %s: %s", c->dir, sql, sqlite3_errmsg(c->db));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : KJIT_EIO;
}

static void db_close(struct kj__cache *c)
{
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(c->st[i]);
		c->st[i] = NULL;
	}
	if (c->db && sqlite3_close(c->db) != SQLITE_OK)
		say(c, "index %s/index.sqlite: close: %s", c->dir, sqlite3_errmsg(c->db));
	c->db = NULL;
}

/* Opens, checks and if need be creates the index.  *corrupt tells the
 * caller that moving the file aside may help. */
static int db_open(struct kj__cache *c, const char *path, int *corrupt)
{
	char mode[16], check[64];
	int64_t version = 0;
	int rc, r;

	*corrupt = 0;
	/* One thread uses the handle: no mutex (it costs ~10% of the load). */
	rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			     SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		*corrupt = is_corrupt_rc(rc);
		say(c, "cannot open index %s: %s", path, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
		return KJIT_EIO;
	}
	sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
	if ((r = db_value(c, "PRAGMA journal_mode=WAL", NULL, mode, sizeof mode, corrupt)) < 0)
		return r;
	if (strcmp(mode, "wal") != 0) {
		say(c, "index %s: cannot use WAL mode (got %s)", path, mode);
		return KJIT_EIO;
	}
	if ((r = db_exec(c, "PRAGMA synchronous=NORMAL", corrupt)) < 0)
		return r;
	/* quick_check reads the whole index (about a second at a million
	 * entries): only after a close that was not clean. */
	if (c->check_index && (r = db_value(c, "PRAGMA quick_check", NULL, check, sizeof check, corrupt)) < 0)
		return r;
	if (c->check_index && strcmp(check, "ok") != 0) {
		say(c, "index %s fails its integrity check: %s", path, check);
		*corrupt = 1;
		return KJIT_EIO;
	}
	if ((r = db_value(c, "PRAGMA user_version", &version, NULL, 0, corrupt)) < 0)
		return r;
	if (version > SCHEMA_VERSION) {
		say(c, "index %s has schema %lld, newer than this kjit's %d: use a newer kjit"
		       " or another KJIT_CACHE_DIR", path, (long long)version, SCHEMA_VERSION);
		return KJIT_EIO;
	}
	if ((r = db_exec(c, "BEGIN IMMEDIATE", corrupt)) < 0)
		return r;
	if ((r = db_exec(c, schema_sql, corrupt)) < 0 ||
	    (r = db_exec(c, "PRAGMA user_version=1", corrupt)) < 0 ||
	    (r = db_exec(c, "COMMIT", corrupt)) < 0) {
		int ignore;
		if (!sqlite3_get_autocommit(c->db))
			db_exec(c, "ROLLBACK", &ignore);
		return r;
	}
	for (int i = 0; i < ST_COUNT; i++) {
		rc = sqlite3_prepare_v2(c->db, stmt_sql[i], -1, &c->st[i], NULL);
		if (rc != SQLITE_OK) {
			*corrupt = is_corrupt_rc(rc);
			return db_fail(c, "prepare");
		}
	}
	return 0;
}

/* Moves a damaged index (and its WAL) out of the way. */
static int db_move_aside(struct kj__cache *c, const char *path)
{
	char to[PATH_MAX], from[PATH_MAX];
	long long now = (long long)kj__wall_s();
	int r;

	if ((r = pathf(to, sizeof to, "%s.corrupt-%lld", path, now)) < 0)
		return r;
	if (c->fs->rename(path, to) < 0 && errno != ENOENT) {
		say(c, "cannot move the damaged index %s aside: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	/* A WAL left behind would be replayed into the new, empty index. */
	if ((r = pathf(from, sizeof from, "%s-wal", path)) < 0 ||
	    (r = pathf(to, sizeof to, "%s.corrupt-%lld-wal", path, now)) < 0)
		return r;
	if (c->fs->rename(from, to) < 0 && errno != ENOENT) {
		say(c, "cannot move %s aside: %s", from, strerror(errno));
		return KJIT_EIO;
	}
	if ((r = pathf(from, sizeof from, "%s-shm", path)) < 0)
		return r;
	if (c->fs->unlink(from) < 0 && errno != ENOENT) {
		say(c, "cannot remove %s: %s", from, strerror(errno));
		return KJIT_EIO;
	}
	say(c, "warning: index %s was damaged; moved aside to %s.corrupt-%lld and rebuilt empty"
	       " (objects will be recompiled)", path, path, now);
	return 0;
}

/* Loads every valid row into the table: one prepared SELECT. */
static int load(struct kj__cache *c)
{
	sqlite3_stmt *st = NULL;
	int64_t count = 0;
	int corrupt, rc, r;

	if ((r = db_value(c, "SELECT count(*) FROM objects", &count, NULL, 0, &corrupt)) < 0)
		return r;
	if ((r = tab_reserve(c, (size_t)count)) < 0)
		return r;
	rc = sqlite3_prepare_v2(c->db, "SELECT key, backend, target, version, ext, size, compile_ms,"
				" last_used, used_seq FROM objects", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return db_fail(c, "prepare load");
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
		    !ext_ok(ext) || size <= 0 || size > KJ_OBJECT_MAX || last_used < 0 ||
		    last_used > UINT32_MAX || seq < 0) {
			c->bad_rows++;
			continue;
		}
		memset(&en, 0, sizeof en);
		unhex(key, en.key);
		int64_t cms = sqlite3_column_int64(st, 6);
		en.compile_ms = cms < 0 ? 0 : cms > UINT32_MAX ? UINT32_MAX : (uint32_t)cms;
		en.size = (uint32_t)size;
		en.last_used = (uint32_t)last_used;
		en.seq = (uint64_t)seq;
		if (en.seq > c->seq)
			c->seq = en.seq;
		if ((r = tuple_intern(c, backend, target, version, ext, &en.tuple)) < 0 ||
		    (r = tab_reserve(c, c->n + 1)) < 0)
			goto out;
		tab_add(c, &en); /* key is the primary key: no duplicates */
	}
	if (rc != SQLITE_DONE) {
		r = db_fail(c, "load");
		goto out;
	}
	if (c->bad_rows)
		say(c, "index %s/index.sqlite: %zu invalid row(s) ignored (kjit verify drops them)",
		    c->dir, c->bad_rows);
	r = 0;
out:
	sqlite3_finalize(st);
	return r;
}

/* ---- open and close ------------------------------------------------------ */

static int take_lock(struct kj__cache *c)
{
	char path[PATH_MAX];
	int r = pathf(path, sizeof path, "%s/lock", c->dir);

	if (r < 0)
		return r;
	c->lock_fd = c->fs->open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (c->lock_fd < 0) {
		say(c, "cannot open %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	if (flock(c->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return KJIT_EBUSY;
		say(c, "cannot lock %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	return 0;
}

int kj__cache_open(struct kj__cache **out, const char *dir, const struct kj__cache_options *opt)
{
	struct kj__cache *c = NULL;
	char path[PATH_MAX];
	int r, corrupt = 0;

	*out = NULL;
	if (dir == NULL || *dir == '\0')
		return KJIT_EINVAL;
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return KJIT_ENOMEM;
	c->lock_fd = -1;
	c->fs = opt && opt->fs ? opt->fs : &kj__fsys_default;
	c->log = opt && opt->log ? opt->log : stderr;
	c->max_size = opt && opt->max_size ? opt->max_size : KJ_DEFAULT_MAX_SIZE;
	c->hot_max = opt && opt->hot_max ? opt->hot_max : KJ_HOT_BYTES_MAX;
	c->dir = kj__strdup(dir);
	if (c->dir == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	if ((r = pathf(path, sizeof path, "%s/index.sqlite", dir)) < 0 ||
	    (r = mkdir_p(c, dir, 0755)) < 0 || (r = take_lock(c)) < 0)
		goto out;
	/* <dir>/clean exists only between a clean close and the next open. */
	char marker[PATH_MAX];
	if ((r = pathf(marker, sizeof marker, "%s/clean", dir)) < 0)
		goto out;
	c->check_index = c->fs->unlink(marker) < 0;
	r = db_open(c, path, &corrupt);
	if (r < 0 && corrupt) {
		db_close(c);
		if ((r = db_move_aside(c, path)) < 0)
			goto out;
		r = db_open(c, path, &corrupt);
	}
	if (r < 0 || (r = load(c)) < 0)
		goto out;
	/* Temporaries are left only by a writer that died: after a clean
	 * close there are none, and listing every object directory (a million
	 * files at scale) would double the start-up time. */
	if (c->check_index)
		sweep(c, 0);
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

	if (pathf(marker, sizeof marker, "%s/clean", c->dir) < 0)
		return;
	fd = c->fs->open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || c->fs->close(fd) < 0)
		say(c, "cannot leave %s (the next start checks the index): %s", marker, strerror(errno));
}

void kj__cache_close(struct kj__cache *c)
{
	if (c == NULL)
		return;
	int clean = c->opened && c->db && c->st[ST_TOUCH] && kj__cache_flush(c) == 0;
	db_close(c);
	if (clean)
		mark_clean(c);
	if (c->lock_fd >= 0 && c->fs->close(c->lock_fd) < 0)
		say(c, "close %s/lock: %s", c->dir, strerror(errno));
	for (size_t i = 0; i < c->ntuples; i++) {
		free(c->tuples[i].target);
		free(c->tuples[i].version);
		free(c->tuples[i].ext);
	}
	free(c->tuples);
	hot_free_all(c);
	free(c->ents);
	free(c->slots);
	free(c->dirty);
	free(c->dir);
	free(c);
}

/* ---- reading and dropping objects --------------------------------------- */

/* Reads the object of en and checks it.  0 with *out malloc'd;
 * KJIT_ECORRUPT with why set (missing, wrong size, wrong digest);
 * KJIT_EIO for an I/O error that says nothing about the object (logged);
 * KJIT_ENOMEM. */
/* The digest the index holds for key.  0, KJIT_ENOENT (no row, or not a
 * digest), KJIT_EIO. */
static int row_digest(struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], uint8_t out[KJ_SHA256_LEN])
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
			unhex(sha, out);
			r = 0;
		}
	} else if (rc != SQLITE_DONE) {
		r = db_fail(c, "digest");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

static int read_object(struct kj__cache *c, const struct ent *en, uint8_t **out, struct stat *out_st,
		       char *why, size_t whylen)
{
	char path[PATH_MAX];
	uint8_t *buf = NULL, d[KJ_SHA256_LEN];
	struct stat st;
	size_t got = 0;
	int r, fd = -1;

	*out = NULL;
	if ((r = object_path(c, en, path, sizeof path)) < 0)
		return r;
	uint8_t want[KJ_SHA256_LEN];
	if ((r = row_digest(c, en->key, want)) == KJIT_ENOENT) {
		snprintf(why, whylen, "its index row has no valid digest");
		return KJIT_ECORRUPT;
	}
	if (r < 0)
		return r;
	fd = c->fs->open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0) {
		if (errno == ENOENT || errno == ELOOP) {
			snprintf(why, whylen, "%s", errno == ENOENT ? "missing" : "a symlink");
			return KJIT_ECORRUPT;
		}
		say(c, "cannot open %s: %s", path, strerror(errno));
		return KJIT_EIO;
	}
	if (c->fs->fstat(fd, &st) < 0) {
		say(c, "fstat %s: %s", path, strerror(errno));
		r = KJIT_EIO;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != en->size) {
		snprintf(why, whylen, "size mismatch: %lld bytes on disk, %u in the index",
			 (long long)st.st_size, en->size);
		r = KJIT_ECORRUPT;
		goto out;
	}
	buf = malloc(en->size);
	if (buf == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	while (got < en->size) {
		ssize_t k = c->fs->read(fd, buf + got, en->size - got);
		if (k < 0) {
			say(c, "read %s: %s", path, strerror(errno));
			r = KJIT_EIO;
			goto out;
		}
		if (k == 0) {
			snprintf(why, whylen, "truncated while reading");
			r = KJIT_ECORRUPT;
			goto out;
		}
		got += (size_t)k;
	}
	if ((r = kj__sha256(buf, got, d)) < 0)
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
		say(c, "close %s: %s", path, strerror(errno));
	free(buf);
	return r;
}

/* Removes entry idx: its row first, then its file.  A row that cannot be
 * deleted is logged; the entry still leaves the table, so it is not served
 * again before the next open re-checks it. */
static void drop(struct kj__cache *c, size_t idx)
{
	char hex[KJ_SHA256_HEX_LEN + 1], path[PATH_MAX];
	sqlite3_stmt *st = c->st[ST_DELETE];

	kj__hex(c->ents[idx].key, hex);
	sqlite3_bind_text(st, 1, hex, -1, SQLITE_TRANSIENT);
	db_run(c, ST_DELETE, "delete");
	if (object_path(c, &c->ents[idx], path, sizeof path) == 0 && c->fs->unlink(path) < 0 &&
	    errno != ENOENT)
		say(c, "cannot remove %s: %s", path, strerror(errno));
	tab_remove(c, idx);
}

static int key_arg(const char *key, uint8_t out[KJ_SHA256_LEN])
{
	if (key == NULL || !kj__hex_ok(key))
		return KJIT_EINVAL;
	unhex(key, out);
	return 0;
}

int kj__cache_peek_exists(struct kj__cache *c, const char *key)
{
	uint8_t k[KJ_SHA256_LEN];

	return key_arg(key, k) == 0 && tab_find(c, k) != NONE;
}

int kj__cache_peek(struct kj__cache *c, const char *key, const uint8_t **data, size_t *len,
		   uint32_t *compile_ms)
{
	uint8_t k[KJ_SHA256_LEN];
	struct hot *h;
	size_t i;
	int r;

	if ((r = key_arg(key, k)) < 0)
		return r;
	if ((i = tab_find(c, k)) == NONE || (h = hot_get(c, &c->ents[i])) == NULL)
		return KJIT_ENOENT;
	if ((r = tab_touch(c, i)) < 0)
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
	if ((r = key_arg(key, k)) < 0)
		return r;
	i = tab_find(c, k);
	if (i == NONE)
		return KJIT_ENOENT;
	struct hot *h = hot_get(c, &c->ents[i]);
	if (h) {
		buf = malloc(h->size);
		if (buf == NULL)
			return KJIT_ENOMEM;
		memcpy(buf, h->data, h->size);
		r = 0;
	} else {
		struct stat st;
		r = read_object(c, &c->ents[i], &buf, &st, why, sizeof why);
		if (r == 0)
			hot_put(c, k, buf, c->ents[i].size, &st);
	}
	if (r == KJIT_ECORRUPT) {
		say(c, "object %s corrupt (%s); dropped, will recompile", key, why);
		drop(c, i);
		kj__cache_counter_add(c, "corrupt", 1);
		return KJIT_ENOENT;
	}
	if (r < 0)
		return r;
	if ((r = tab_touch(c, i)) < 0) {
		free(buf);
		return r;
	}
	if (e)
		fill_entry(c, &c->ents[i], e);
	*len = c->ents[i].size;
	*data = buf;
	return 0;
}

/* ---- publishing ----------------------------------------------------------- */

static int entry_ok(const struct kj__cache_entry *e, const uint8_t *data, size_t len)
{
	if (e == NULL || !kj__hex_ok(e->key) || kjit_backend_name(e->backend) == NULL ||
	    !kj__token_ok(e->target, KJ_TARGET_MAX) || !kj__token_ok(e->version, KJ_VERSION_STR_MAX) ||
	    !ext_ok(e->ext) || data == NULL || len == 0)
		return KJIT_EINVAL;
	return len > KJ_OBJECT_MAX ? KJIT_ETOOBIG : 0;
}

/* Writes data to a new file at tmp and makes it durable.  0 or KJIT_EIO
 * with errno kept; the caller unlinks tmp on failure. */
static int write_tmp(struct kj__cache *c, const char *tmp, const uint8_t *data, size_t len,
		     int *created)
{
	int fd = c->fs->open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	size_t done = 0;
	const char *what = "write";
	int cfd;

	*created = fd >= 0;
	if (fd < 0) {
		say(c, "cannot create %s: %s", tmp, strerror(errno));
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
	say(c, "%s %s: %s", what, tmp, strerror(errno));
	if (fd >= 0) {
		int saved = errno;
		c->fs->close(fd);
		errno = saved;
	}
	return KJIT_EIO;
}

/* Inserts the row of e.  0 or KJIT_EIO. */
static int insert_row(struct kj__cache *c, const struct kj__cache_entry *e, uint64_t seq)
{
	sqlite3_stmt *st = c->st[ST_INSERT];

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
	return db_run(c, ST_INSERT, "insert");
}

int kj__cache_publish(struct kj__cache *c, struct kj__cache_entry *e, const uint8_t *data, size_t len)
{
	char sub[PATH_MAX], final[PATH_MAX], tmp[PATH_MAX];
	struct ent en;
	size_t prior;
	int r, created = 0, err = 0;

	if ((r = entry_ok(e, data, len)) < 0)
		return r;
	uint8_t dg[KJ_SHA256_LEN];
	memset(&en, 0, sizeof en);
	unhex(e->key, en.key);
	if ((r = kj__sha256(data, len, dg)) < 0 ||
	    (r = tuple_intern(c, e->backend, e->target, e->version, e->ext, &en.tuple)) < 0 ||
	    (r = tab_reserve(c, c->n + 1)) < 0 ||
	    (r = subdir_path(c, &c->tuples[en.tuple], sub, sizeof sub)) < 0 ||
	    (r = object_path(c, &en, final, sizeof final)) < 0 ||
	    (r = pathf(tmp, sizeof tmp, "%s.tmp.%ld.%llu", final, (long)getpid(),
		       (unsigned long long)++c->tmp_seq)) < 0)
		return r;
	kj__hex(dg, e->sha256);
	e->size = len;
	e->created = e->last_used = kj__wall_s();
	e->hits = 0;
	en.size = (uint32_t)len;
	en.compile_ms = e->compile_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)e->compile_ms;
	en.last_used = (uint32_t)e->last_used;
	en.seq = ++c->seq;

	if (c->fs->mkdir(sub, 0755) < 0 && errno != EEXIST) {
		err = errno;
		say(c, "cannot create %s: %s", sub, strerror(errno));
		r = KJIT_EIO;
		goto out;
	}
	if ((r = write_tmp(c, tmp, data, len, &created)) < 0) {
		err = errno;
		goto out;
	}
	if (c->fs->rename(tmp, final) < 0) {
		err = errno;
		say(c, "rename %s to %s: %s", tmp, final, strerror(errno));
		r = KJIT_EIO;
		goto out;
	}
	created = 0;
	fsync_dir(c, sub);
	prior = tab_find(c, en.key);
	if ((r = insert_row(c, e, en.seq)) < 0) {
		err = EIO;
		/* The file is in place but not indexed.  A prior row for this key
		 * now names these bytes: keep it only if they are the same. */
		uint8_t prior_dg[KJ_SHA256_LEN];
		if (prior != NONE && row_digest(c, en.key, prior_dg) == 0 && memcmp(prior_dg, dg, sizeof dg) == 0)
			goto out;
		if (prior != NONE)
			drop(c, prior);
		else if (c->fs->unlink(final) < 0 && errno != ENOENT)
			say(c, "cannot remove %s: %s", final, strerror(errno));
		goto out;
	}
	if (prior != NONE) {
		c->bytes -= c->ents[prior].size;
		c->bytes += en.size;
		en.pending = c->ents[prior].pending; /* its key may be in dirty */
		c->ents[prior] = en;
	} else {
		tab_add(c, &en);
	}
	/* Just compiled: likely asked for again soon.  The bytes are the
	 * ones hashed above, so they count as verified. */
	struct stat fst;
	if (c->fs->stat(final, &fst) == 0)
		hot_put(c, en.key, data, len, &fst);
	r = 0;
out:
	if (created && c->fs->unlink(tmp) < 0 && errno != ENOENT)
		say(c, "cannot remove %s: %s", tmp, strerror(errno));
	if (r == KJIT_EIO)
		errno = err;
	return r;
}

/* ---- counters, flush, metadata ------------------------------------------ */

int kj__cache_flush(struct kj__cache *c)
{
	sqlite3_stmt *st = c->st[ST_TOUCH];
	char hex[KJ_SHA256_HEX_LEN + 1];
	int r;

	if (c->ndirty == 0)
		return 0;
	if ((r = db_begin(c)) < 0)
		return r;
	for (size_t i = 0; i < c->ndirty; i++) {
		size_t k = tab_find(c, c->dirty[i]);
		if (k == NONE || c->ents[k].pending == 0)
			continue;
		kj__hex(c->dirty[i], hex);
		sqlite3_bind_int64(st, 1, c->ents[k].pending);
		sqlite3_bind_int64(st, 2, c->ents[k].last_used);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)c->ents[k].seq);
		sqlite3_bind_text(st, 4, hex, -1, SQLITE_STATIC);
		if ((r = db_run(c, ST_TOUCH, "update hits")) < 0) {
			db_rollback(c);
			return r;
		}
	}
	if ((r = db_commit(c)) < 0)
		return r;
	for (size_t i = 0; i < c->ndirty; i++) {
		size_t k = tab_find(c, c->dirty[i]);
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
	return db_run(c, ST_COUNTER_ADD, "counter");
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
		r = db_fail(c, "counter");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* Fills e from a row of ENTRY_COLS; strings point into the row. */
static void row_entry(sqlite3_stmt *st, struct kj__cache_entry *e)
{
	memset(e, 0, sizeof *e);
	snprintf(e->key, sizeof e->key, "%s", col_text(st, 0) ? col_text(st, 0) : "");
	e->backend = sqlite3_column_int(st, 1);
	snprintf(e->target, sizeof e->target, "%s", col_text(st, 2) ? col_text(st, 2) : "");
	snprintf(e->version, sizeof e->version, "%s", col_text(st, 3) ? col_text(st, 3) : "");
	snprintf(e->ext, sizeof e->ext, "%s", col_text(st, 4) ? col_text(st, 4) : "");
	e->size = (uint64_t)sqlite3_column_int64(st, 5);
	snprintf(e->sha256, sizeof e->sha256, "%s", col_text(st, 6) ? col_text(st, 6) : "");
	e->created = sqlite3_column_int64(st, 7);
	e->last_used = sqlite3_column_int64(st, 8);
	e->hits = (uint64_t)sqlite3_column_int64(st, 9);
	e->compile_ms = (uint64_t)sqlite3_column_int64(st, 10);
	e->source_name = col_text(st, 11);
	e->options = col_text(st, 12);
	e->compiler = col_text(st, 13);
	e->log = col_text(st, 14);
}

/* Adds what the table knows and the index does not yet. */
static void merge_pending(const struct kj__cache *c, struct kj__cache_entry *e)
{
	uint8_t k[KJ_SHA256_LEN];
	size_t i;

	if (!kj__hex_ok(e->key))
		return;
	unhex(e->key, k);
	if ((i = tab_find(c, k)) == NONE)
		return;
	e->hits += c->ents[i].pending;
	if (c->ents[i].last_used > e->last_used)
		e->last_used = c->ents[i].last_used;
}

void kj__cache_entry_free(struct kj__cache_entry *e)
{
	if (e == NULL)
		return;
	free((char *)e->source_name);
	free((char *)e->options);
	free((char *)e->compiler);
	free((char *)e->log);
	e->source_name = e->options = e->compiler = e->log = NULL;
}

int kj__cache_get(struct kj__cache *c, const char *key, struct kj__cache_entry *e)
{
	sqlite3_stmt *st = c->st[ST_GET];
	struct kj__cache_entry row;
	uint8_t k[KJ_SHA256_LEN];
	int rc, r;

	memset(e, 0, sizeof *e);
	if ((r = key_arg(key, k)) < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		row_entry(st, &row);
		*e = row;
		e->source_name = kj__strdup(row.source_name);
		e->options = kj__strdup(row.options);
		e->compiler = kj__strdup(row.compiler);
		e->log = kj__strdup(row.log);
		if ((row.source_name && !e->source_name) || (row.options && !e->options) ||
		    (row.compiler && !e->compiler) || (row.log && !e->log)) {
			kj__cache_entry_free(e);
			r = KJIT_ENOMEM;
		} else {
			merge_pending(c, e);
		}
	} else if (rc == SQLITE_DONE) {
		r = KJIT_ENOENT;
	} else {
		r = db_fail(c, "get");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

int kj__cache_foreach(struct kj__cache *c, const char *target,
		      int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg)
{
	sqlite3_stmt *st = NULL;
	struct kj__cache_entry e;
	int rc, r;

	kj__cache_flush(c); /* so the order is exact; a failure only costs that */
	rc = sqlite3_prepare_v2(c->db, target ?
				"SELECT " ENTRY_COLS " FROM objects WHERE target = ?1"
				" ORDER BY last_used DESC, used_seq DESC" :
				"SELECT " ENTRY_COLS " FROM objects ORDER BY last_used DESC, used_seq DESC",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return db_fail(c, "list");
	if (target)
		sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
	r = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		row_entry(st, &e);
		merge_pending(c, &e);
		if ((r = fn(&e, arg)) != 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = db_fail(c, "list");
	sqlite3_finalize(st);
	return r;
}

int kj__cache_totals(struct kj__cache *c, struct kj__cache_totals *t)
{
	t->entries = c->n;
	t->bytes = c->bytes;
	return 0;
}

int kj__cache_totals_by_target(struct kj__cache *c,
			       void (*fn)(const char *target, const char *version, uint64_t entries, uint64_t bytes,
					  void *arg),
			       void *arg)
{
	uint64_t *n = calloc(c->ntuples ? c->ntuples : 1, 2 * sizeof *n);

	if (n == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		n[2 * c->ents[i].tuple]++;
		n[2 * c->ents[i].tuple + 1] += c->ents[i].size;
	}
	for (size_t t = 0; t < c->ntuples; t++)
		if (n[2 * t])
			fn(c->tuples[t].target, c->tuples[t].version, n[2 * t], n[2 * t + 1], arg);
	free(n);
	return 0;
}

uint64_t kj__cache_max_size(const struct kj__cache *c)
{
	return c->max_size;
}

/* ---- gc, verify, clear ------------------------------------------------- */

/* Deletes the rows of the entries at idx[0..n) in one transaction, then
 * their files, then drops them from the table.  0 or KJIT_EIO (nothing
 * removed). */
static int remove_entries(struct kj__cache *c, uint8_t (*keys)[KJ_SHA256_LEN], size_t n)
{
	sqlite3_stmt *st = c->st[ST_DELETE];
	char hex[KJ_SHA256_HEX_LEN + 1], path[PATH_MAX];
	int r;

	if (n == 0)
		return 0;
	if ((r = db_begin(c)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		kj__hex(keys[i], hex);
		sqlite3_bind_text(st, 1, hex, -1, SQLITE_STATIC);
		if ((r = db_run(c, ST_DELETE, "delete")) < 0) {
			db_rollback(c);
			return r;
		}
	}
	if ((r = db_commit(c)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		size_t k = tab_find(c, keys[i]);
		if (k == NONE)
			continue;
		if (object_path(c, &c->ents[k], path, sizeof path) == 0 && c->fs->unlink(path) < 0 &&
		    errno != ENOENT)
			say(c, "cannot remove %s: %s", path, strerror(errno));
		tab_remove(c, k);
	}
	return 0;
}

int kj__cache_gc(struct kj__cache *c, uint64_t max_size, uint64_t *evicted, uint64_t *freed)
{
	uint64_t cap = max_size ? max_size : c->max_size, total = c->bytes, gone = 0;
	uint8_t (*keys)[KJ_SHA256_LEN] = NULL;
	size_t n = 0, nkeys = 0;
	sqlite3_stmt *st = NULL;
	int rc, r;

	if (evicted)
		*evicted = 0;
	if (freed)
		*freed = 0;
	if ((r = kj__cache_flush(c)) < 0)
		return r;
	sweep(c, 1);
	if (total <= cap)
		return 0;
	rc = sqlite3_prepare_v2(c->db, "SELECT key FROM objects ORDER BY last_used, used_seq", -1,
				&st, NULL);
	if (rc != SQLITE_OK)
		return db_fail(c, "gc");
	while (total > cap && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *hex = col_text(st, 0);
		uint8_t k[KJ_SHA256_LEN];
		size_t i;
		if (!hex || !kj__hex_ok(hex) || (unhex(hex, k), i = tab_find(c, k)) == NONE)
			continue; /* an invalid row: verify's business */
		if (n == nkeys) {
			size_t cap2 = nkeys ? nkeys * 2 : 64;
			void *p = realloc(keys, cap2 * sizeof *keys);
			if (p == NULL) {
				r = KJIT_ENOMEM;
				goto out;
			}
			keys = p;
			nkeys = cap2;
		}
		memcpy(keys[n++], k, KJ_SHA256_LEN);
		total -= c->ents[i].size;
		gone += c->ents[i].size;
	}
	if (total > cap && rc != SQLITE_ROW && rc != SQLITE_DONE) {
		r = db_fail(c, "gc");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((r = remove_entries(c, keys, n)) < 0)
		goto out;
	if (n) {
		kj__cache_counter_add(c, "evictions", (int64_t)n);
		say(c, "gc: evicted %zu object(s), %llu bytes, to stay under %llu bytes", n,
		    (unsigned long long)gone, (unsigned long long)cap);
	}
	if (evicted)
		*evicted = n;
	if (freed)
		*freed = gone;
	r = 0;
out:
	sqlite3_finalize(st);
	free(keys);
	return r;
}

/* Drops rows the load skipped (bad fields): they are in the index only.
 * Their keys are collected first, then deleted in one transaction. */
static int drop_bad_rows(struct kj__cache *c, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
			 void *arg, uint64_t *bad)
{
	sqlite3_stmt *st = NULL;
	struct kj__cache_entry e;
	struct kj__buf keys = { 0 };
	size_t n = 0;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(c->db, "SELECT " ENTRY_COLS " FROM objects", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return db_fail(c, "verify");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint8_t k[KJ_SHA256_LEN];
		const char *key = col_text(st, 0) ? col_text(st, 0) : "";
		row_entry(st, &e);
		if (kj__hex_ok(key) && (unhex(key, k), tab_find(c, k)) != NONE)
			continue;
		if (fn)
			fn(&e, "invalid index row", arg);
		if ((r = kj__buf_append(&keys, key, strlen(key) + 1)) < 0)
			goto out;
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = db_fail(c, "verify");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((r = db_begin(c)) < 0)
		goto out;
	for (size_t off = 0; off < keys.len; off += strlen((char *)keys.p + off) + 1) {
		sqlite3_bind_text(c->st[ST_DELETE], 1, (char *)keys.p + off, -1, SQLITE_STATIC);
		if ((r = db_run(c, ST_DELETE, "delete")) < 0) {
			db_rollback(c);
			goto out;
		}
	}
	if ((r = db_commit(c)) < 0)
		goto out;
	c->bad_rows = 0;
	*bad += n;
out:
	sqlite3_finalize(st);
	kj__buf_free(&keys);
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
		r = read_object(c, &c->ents[i], &buf, &st, why, sizeof why); /* the disk, not the hot set */
		free(buf);
		if (r == KJIT_ECORRUPT) {
			fill_entry(c, &c->ents[i], &e);
			say(c, "object %s corrupt (%s); dropped, will recompile", e.key, why);
			if (fn)
				fn(&e, why, arg);
			drop(c, i);
			kj__cache_counter_add(c, "corrupt", 1);
			nbad++;
		} else if (r < 0 && first == 0) {
			first = r; /* logged; the object stays */
		}
	}
	if (c->bad_rows && (r = drop_bad_rows(c, fn, arg, &nbad)) < 0 && first == 0)
		first = r;
	sweep(c, 1);
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
		keys = malloc(c->n * sizeof *keys);
		if (keys == NULL)
			return KJIT_ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++)
		if (target == NULL || strcmp(c->tuples[c->ents[i].tuple].target, target) == 0)
			memcpy(keys[n++], c->ents[i].key, KJ_SHA256_LEN);
	r = remove_entries(c, keys, n);
	free(keys);
	if (r < 0)
		return r;
	if (target == NULL)
		tab_clear(c); /* also forgets dirty keys */
	if (removed)
		*removed = n;
	return 0;
}

/* ---- recipes: what to compile again after an upgrade ------------------ */

int kj__cache_recipe_store(struct kj__cache *c, const char *key, const char *recipe, const uint8_t *body,
			   size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	int created = 0, fd, r;

	if (!kj__hex_ok(key) || !kj__hex_ok(recipe))
		return KJIT_EINVAL;
	if ((r = pathf(dir, sizeof dir, "%s/recipes", c->dir)) < 0 ||
	    (r = pathf(path, sizeof path, "%s/%s.req", dir, recipe)) < 0 ||
	    (r = pathf(tmp, sizeof tmp, "%s.tmp.%d.%llu", path, (int)getpid(), (unsigned long long)++c->tmp_seq)) < 0)
		return r;
	/* Content-addressed: a recipe already stored is the same bytes. */
	fd = c->fs->open(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd >= 0 && c->fs->fstat(fd, &st) == 0 && (size_t)st.st_size == len) {
		c->fs->close(fd);
	} else {
		if (fd >= 0)
			c->fs->close(fd);
		if ((r = mkdir_p(c, dir, 0755)) < 0)
			return r;
		r = write_tmp(c, tmp, body, len, &created);
		if (r == 0 && c->fs->rename(tmp, path) < 0) {
			say(c, "rename %s: %s", tmp, strerror(errno));
			r = KJIT_EIO;
		}
		if (r < 0) {
			if (created)
				c->fs->unlink(tmp);
			return r;
		}
	}
	sqlite3_stmt *st2 = NULL;
	if (sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO recipe_of(key, recipe) VALUES(?1, ?2)", -1, &st2,
			       NULL) != SQLITE_OK)
		return db_fail(c, "recipe");
	sqlite3_bind_text(st2, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st2, 2, recipe, -1, SQLITE_STATIC);
	r = sqlite3_step(st2) == SQLITE_DONE ? 0 : db_fail(c, "recipe");
	sqlite3_finalize(st2);
	return r;
}

int kj__cache_recipe_load(struct kj__cache *c, const char *recipe, uint8_t **body, size_t *len)
{
	char path[PATH_MAX];
	int r;

	if (!kj__hex_ok(recipe))
		return KJIT_EINVAL;
	if ((r = pathf(path, sizeof path, "%s/recipes/%s.req", c->dir, recipe)) < 0)
		return r;
	r = kj__read_file(path, KJ_FRAME_MAX, body, len);
	if (r == -ENOENT)
		return KJIT_ENOENT;
	return r < 0 ? KJIT_EIO : 0;
}

int kj__cache_recipes(struct kj__cache *c, int64_t since,
		      int (*fn)(const char *recipe, int backend, const char *target, void *arg), void *arg)
{
	sqlite3_stmt *st = NULL;
	int rc, r = 0;

	if ((r = kj__cache_flush(c)) < 0)
		return r;
	if (sqlite3_prepare_v2(c->db,
			       "SELECT DISTINCT r.recipe, o.backend, o.target FROM recipe_of r"
			       " JOIN objects o ON o.key = r.key WHERE o.last_used >= ?1 ORDER BY r.recipe, o.target",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(c, "recipes");
	sqlite3_bind_int64(st, 1, since);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *recipe = col_text(st, 0), *target = col_text(st, 2);
		if (recipe == NULL || target == NULL)
			continue;
		if ((r = fn(recipe, sqlite3_column_int(st, 1), target, arg)) != 0)
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = db_fail(c, "recipes");
	sqlite3_finalize(st);
	return r;
}
