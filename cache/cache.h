/* cache.h: the on-disk object cache of one kjitd: object files under
 * <dir>/<target>-<version>/<key>.<ext> and their index <dir>/index.sqlite
 * (WAL mode), with an exclusive lock on <dir>/lock held for the cache's life.
 *
 * Invariants: an object becomes visible only whole (temporary file in the
 * same directory, fsync, rename, then the index row); an object is served
 * only after its SHA-256 matched the digest in the index; a corrupt or
 * missing object is a miss (its row and file are dropped), never a wrong
 * answer.  All calls come from one thread (kjitd's loop), except
 * kj__cache_job_run, made to run on another.  All file system
 * calls go through a kj__fsys table, and allocations through a
 * kj__cache_alloc table, so tests can make any of them fail.
 */
#ifndef KJ_CACHE_H
#define KJ_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "includes.h"

/* The system calls cache/ makes, so tests can fail the n-th one. */
struct kj__fsys {
	int (*open)(const char *path, int flags, mode_t mode);
	ssize_t (*read)(int fd, void *p, size_t n);
	ssize_t (*write)(int fd, const void *p, size_t n);
	int (*fsync)(int fd);
	int (*close)(int fd);
	int (*rename)(const char *from, const char *to);
	int (*unlink)(const char *path);
	int (*mkdir)(const char *path, mode_t mode);
	int (*fstat)(int fd, struct stat *st);
	int (*stat)(const char *path, struct stat *st);
	/* What is below the cache directory is checked with lstat, never
	 * followed: a symlink there is refused (docs/cache.md). */
	int (*lstat)(const char *path, struct stat *st);
};
/* The real system calls. */
extern const struct kj__fsys kj__fsys_default;

/* The allocator cache/ uses, so tests can fail the n-th allocation (an
 * out-of-memory loop, as SQLite's tests run).  Memory the cache hands its
 * caller (kj__cache_lookup's *data, kj__cache_get's strings) comes from
 * here and is released with free(3): a replacement wraps the C library's
 * allocator to make it fail, it does not bring another.  SQLite's and
 * OpenSSL's own allocations do not go through it. */
struct kj__cache_alloc {
	void *(*malloc)(size_t n);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t n);
	void (*free)(void *p);
};
/* The C library's. */
extern const struct kj__cache_alloc kj__cache_alloc_default;

struct kj__cache;

struct kj__cache_options {
	const struct kj__fsys *fs;   /* NULL: kj__fsys_default */
	uint64_t max_size;           /* 0: KJ_DEFAULT_MAX_SIZE */
	uint64_t max_size_per_uid;   /* a uid's share (share.c); 0: the cap / KJ_CACHE_SHARE_DIV */
	FILE *log;                   /* warnings (corrupt objects, I/O errors); NULL: stderr */
	uint64_t hot_max;            /* bytes of verified objects kept in memory; 0: KJ_HOT_BYTES_MAX */
	const struct kj__cache_alloc *alloc; /* NULL: kj__cache_alloc_default */
	/* Modes of what the cache creates (the umask still applies); 0: the
	 * per-user defaults, 0700 and 0600.  A system cache passes 0750 and
	 * 0640 (its group reads, nobody but kjitd writes).  An existing
	 * directory with more than dir_mode's group/other bits is tightened. */
	mode_t dir_mode;
	mode_t file_mode;
	/* Where kj__cache_pub_done counts a publish that failed (kjitd: its
	 * publish_errors stat); NULL: not counted, only logged. */
	uint64_t *pub_errors;
};

/* What the index holds about one object. */
struct kj__cache_entry {
	char key[65];                /* hex SHA-256 cache key */
	int backend;                 /* enum kjit_backend */
	char target[128];            /* canonical target */
	char version[64];            /* runtime version */
	char ext[8];                 /* "hsaco", "cubin", "ptx", "fatbin", "spv" */
	uint64_t size;
	char sha256[65];             /* hex digest of the object's bytes */
	int64_t created;             /* unix seconds */
	int64_t last_used;
	uint64_t hits;
	uint64_t compile_ms;
	const char *source_name;     /* may be NULL */
	const char *options;         /* options joined by spaces; may be NULL */
	const char *compiler;        /* compiler identity; may be NULL */
	const char *log;             /* compile log; may be NULL */
	const char *lowered;         /* lowered names of --name-expression, "EXPR\tLOWERED\n"
				      * each (common/lowered.h); may be NULL */
	const char *entries;         /* the object's entry points, "NAME\n" each (schema 5):
				      * what a request's entries are checked against; NULL
				      * when not known (an older row, or symbols that cannot
				      * be listed): then not judged */
};

/* Opens (creating as needed) the cache in dir and takes its lock.  Returns
 * 0, KJIT_EBUSY if another process holds the lock, KJIT_EIO (with a reason
 * logged), KJIT_EDENIED (one line logged) when dir is not a directory, is
 * owned by a user other than ours and root, or is writable by its group or
 * others (as ssh refuses a loose ~/.ssh), KJIT_ENOMEM.  An index that cannot be opened or is corrupt is
 * moved aside and rebuilt empty, with a warning. */
int kj__cache_open(struct kj__cache **out, const char *dir, const struct kj__cache_options *opt);
/* Flushes pending counters and closes; NULL is a no-op. */
void kj__cache_close(struct kj__cache *c);

/* Looks key up.  On a verified hit: 0, *data malloc'd (a copy from the
 * memory hot set when the object is there and its file is unchanged since it
 * was verified: same inode, size and modification time), *len, and *e filled
 * (except sha256, which only kj__cache_get fills) (string pointers valid until the
 * next call).  A miss: KJIT_ENOENT.  A corrupt or missing object: its row
 * and file are removed, a warning logged, and KJIT_ENOENT returned (the
 * caller recompiles).  Counts the hit in memory (see kj__cache_flush). */
int kj__cache_lookup(struct kj__cache *c, const char *key, uint8_t **data, size_t *len,
		     struct kj__cache_entry *e);

/* The hit path without a copy: when key's object is in the hot set and its
 * file unchanged, 0 with *data pointing at the verified bytes, valid until
 * the next call into the cache (the caller sends them at once); counts the
 * hit and *compile_ms (what it saved).  KJIT_ENOENT otherwise: kj__cache_lookup then does the full work. */
int kj__cache_peek(struct kj__cache *c, const char *key, const uint8_t **data, size_t *len,
		   uint32_t *compile_ms);

/* 1 if the index has an entry for key (not checked against its file). */
int kj__cache_peek_exists(struct kj__cache *c, const char *key);

/* Stores an object: temporary file, fsync, rename, then the index row.
 * e->sha256, size, created and last_used are filled in here.  Returns 0 or
 * a negative code (the cache is left unchanged and consistent on error).
 * The steps below, run one after the other on the caller's thread. */
int kj__cache_publish(struct kj__cache *c, struct kj__cache_entry *e, const uint8_t *data, size_t len);

/* A publish in steps (publish.c), so that its disk work and digest run on
 * another thread while the cache's thread goes on.  begin (the cache's
 * thread) checks e, copies it (its strings too) and data (len bytes) and
 * recipe (the GET frame behind the object, recipe_len bytes, named by the
 * digest of its body as kj__cache_recipe_store's callers do; NULL: none),
 * and from then until finish the object is served from that copy:
 * kj__cache_peek, kj__cache_lookup, kj__cache_peek_exists, kj__cache_get,
 * the listings and kj__cache_requested_by find it (uids: its requesters,
 * n_uids of them, recorded with the object's row at finish), and no
 * sweep of the cache's thread removes its files.  0, KJIT_EINVAL, KJIT_ETOOBIG, KJIT_ENOMEM, or KJIT_EBUSY when a
 * publish of the same key is in flight (same key: same object; this one
 * is not needed).  run (any one thread, concurrently with other calls on
 * the cache; c's fs and allocator tables thread-safe, as the defaults
 * are): the digest, the file (temporary, fsync, rename, the directory's
 * fsync) and the recipe's file; touches nothing but its own pub and the
 * file system.  finish (the cache's thread, after run): the index's rows
 * in one transaction (the object's, the recipe's when the run stored its
 * file, the requesters'), then the entry table and the hot set (the copy
 * moves there); the object is no longer served from the pub.  0, or the
 * run's or the rows' negative code (the cache is left consistent, the
 * object not stored, none of its rows written; errno says why for
 * KJIT_EIO).  free (the cache's thread): after
 * finish, or instead of run and finish (nothing is stored). */
struct kj__cache_pub;
int kj__cache_pub_begin(struct kj__cache *c, const struct kj__cache_entry *e, const uint8_t *data, size_t len,
			const uint8_t *recipe, size_t recipe_len, const uid_t *uids, size_t n_uids,
			struct kj__cache_pub **out);
/* begin_lent: as begin, but data is lent, not copied: it must stay valid
 * and unchanged until finish or free (the caller holds it), and the run
 * makes the copy the hot set keeps, off the cache's thread; *recipe
 * (malloc'd, recipe_len bytes, or NULL) is taken and set NULL on success.
 * With an allocator other than the default, both are copied as by begin.
 * digest (NULL: none): the object's SHA-256, which the caller already
 * holds and vouches for (a fleet value's, checked by its MAC or against
 * the object): the run records it instead of hashing the object again.
 * A wrong one is recorded as given, and the object is then found corrupt
 * where the cache checks a file against its digest (verify). */
int kj__cache_pub_begin_lent(struct kj__cache *c, const struct kj__cache_entry *e, const uint8_t *data, size_t len,
			     uint8_t **recipe, size_t recipe_len, const uint8_t *digest, const uid_t *uids,
			     size_t n_uids, struct kj__cache_pub **out);
void kj__cache_pub_run(struct kj__cache_pub *p);
int kj__cache_pub_finish(struct kj__cache_pub *p);
/* A publish's end as a caller with nothing else to do at finish hands it
 * over (kjitd's loop, when the run is back): finish, a failure counted
 * (the options' pub_errors) and logged ("could not store KEY (why): served,
 * not cached"), then p freed.  Returns finish's result. */
int kj__cache_pub_done(struct kj__cache_pub *p);
void kj__cache_pub_free(struct kj__cache_pub *p);
/* How many publishes are in flight, and their bytes (the cache's thread). */
size_t kj__cache_pub_count(const struct kj__cache *c, uint64_t *bytes);

/* Writes in-memory hit counters and last-used times to the index. */
int kj__cache_flush(struct kj__cache *c);

/* Metadata of one entry (strings malloc'd into *e; free with
 * kj__cache_entry_free).  0 or KJIT_ENOENT. */
int kj__cache_get(struct kj__cache *c, const char *key, struct kj__cache_entry *e);
void kj__cache_entry_free(struct kj__cache_entry *e);

/* Calls fn for every entry (optionally only target), most recently used
 * first; stops early when fn returns non-zero and returns that. */
int kj__cache_foreach(struct kj__cache *c, const char *target,
		      int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg);
/* The same, limited to the entries uid requested (kj__cache_note_user). */
int kj__cache_foreach_of(struct kj__cache *c, const char *target, uid_t uid,
			 int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg);

/* The entry points of key's object, as the index keeps them (schema 5):
 * 0 with *out malloc'd ("NAME\n" each) or NULL (not known: an older row,
 * or an object whose symbols cannot be listed); KJIT_ENOENT (no row),
 * KJIT_EINVAL, KJIT_ENOMEM or KJIT_EIO.  set: fills the list of a row that
 * has none yet (a known list is never replaced: it is a function of the
 * key); 0 (also when there was nothing to fill), KJIT_EINVAL or KJIT_EIO. */
int kj__cache_entries(struct kj__cache *c, const char *key, char **out);
int kj__cache_set_entries(struct kj__cache *c, const char *key, const char *list);

/* Records that uid requested key's object (its compile, a join, a fetch
 * or an import), so that listing can show a user only its own entries.
 * Idempotent.  0, KJIT_EINVAL or KJIT_EIO. */
int kj__cache_note_user(struct kj__cache *c, const char *key, uid_t uid);
/* 1 if uid requested key (kj__cache_note_user), 0 if not or on error. */
int kj__cache_requested_by(struct kj__cache *c, const char *key, uid_t uid);

/* Evicts entries until the total size is <= max_size (0: the configured
 * cap): first the least recently used of owners over their share
 * (kj__cache_share), then the least recently used of all.  *evicted,
 * *freed may be NULL. */
int kj__cache_gc(struct kj__cache *c, uint64_t max_size, uint64_t *evicted, uint64_t *freed);
/* Re-hashes every object; drops corrupt or missing ones, calling fn for
 * each (may be NULL).  *bad = how many were dropped. */
int kj__cache_verify(struct kj__cache *c, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
		     void *arg, uint64_t *checked, uint64_t *bad);
/* Removes every entry (of target only, when not NULL). *removed may be NULL. */
int kj__cache_clear(struct kj__cache *c, const char *target, uint64_t *removed);

/* The same three in steps, so that the slow part runs on another thread
 * while the caller's thread goes on using the cache (job.c; kjitd's loop
 * and the libuv thread pool).  begin and finish on the cache's thread;
 * run on any one thread at a time, concurrently with every other call on
 * the cache (it uses a connection of its own to the index; c's fs and
 * allocator tables must then be thread-safe, as the defaults are).
 * finish returns 1 when the job needs another run and finish (gc's and
 * clear's deletions), 0 when done, or an error (done too).  A job is
 * freed with kj__cache_job_free, whatever happened. */
enum kj__cache_job_kind { KJ_CACHE_JOB_GC = 1, KJ_CACHE_JOB_VERIFY, KJ_CACHE_JOB_CLEAR };
struct kj__cache_job_result {
	uint64_t evicted, freed;  /* gc */
	uint64_t checked, bad;    /* verify */
	uint64_t removed;         /* clear */
	uint64_t redropped;       /* entries published again during a deletion, dropped */
};
struct kj__cache_job;
/* max_size: gc's cap (0: the configured one); target: clear's (NULL: all).
 * clear takes its entries out of the table here.  0, KJIT_EINVAL,
 * KJIT_ENOMEM or KJIT_EIO (nothing changed). */
int kj__cache_job_begin(struct kj__cache *c, int kind, uint64_t max_size, const char *target,
			struct kj__cache_job **out);
void kj__cache_job_run(struct kj__cache_job *j);
/* fn (may be NULL) is called for each object verify drops. */
int kj__cache_job_finish(struct kj__cache_job *j, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
			 void *arg);
void kj__cache_job_result(const struct kj__cache_job *j, struct kj__cache_job_result *res);
void kj__cache_job_free(struct kj__cache_job *j);
/* Calls fn for every valid row of the index, most recently used first,
 * read through a connection of its own: from any thread, while the
 * cache's thread goes on (what it has not flushed yet is not seen; e's
 * strings live until fn returns).  0, fn's nonzero return, or KJIT_EIO. */
int kj__cache_scan(struct kj__cache *c, int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg);
/* Many objects published at once (bulk.c; kjit import), the writing on
 * one other thread: new, has, add and end there; finish and free on the
 * cache's thread, after end.  new: a connection of its own to the index;
 * 0, KJIT_ENOMEM or KJIT_EIO.  has: 1 if the index has a row for key
 * (hex).  add: places e's object (data, len bytes) whole and its row, e's
 * digest, size and times filled in as kj__cache_publish does (e must stay
 * valid until end); rows are committed by batches, each after its files are durable; 0 or the first
 * error (sticky: the bulk stops there, what was committed stays).  end:
 * commits the last batch; 0 or the bulk's error.  finish: enters at most
 * max more of what was committed in the table (keys it has already are
 * skipped), adding to *added; 1 while some are left, 0 when all are in,
 * or KJIT_ENOMEM (the rest is back at the next open). */
struct kj__cache_bulk;
int kj__cache_bulk_new(struct kj__cache *c, struct kj__cache_bulk **out);
int kj__cache_bulk_has(struct kj__cache_bulk *b, const char *key);
int kj__cache_bulk_add(struct kj__cache_bulk *b, struct kj__cache_entry *e, const uint8_t *data, size_t len);
int kj__cache_bulk_end(struct kj__cache_bulk *b);
int kj__cache_bulk_finish(struct kj__cache *c, struct kj__cache_bulk *b, size_t max, uint64_t *added);
void kj__cache_bulk_free(struct kj__cache_bulk *b);
/* Takes the index's checkpoints off the cache's thread: from this call on
 * its own commits never copy the WAL back into the database (that
 * fsyncs).  wal_pages (the cache's thread): the WAL's length in pages
 * after the last commit made there.  checkpoint (any thread, a connection
 * of its own): a PASSIVE checkpoint; 0 or KJIT_EIO (logged).  Closing the
 * cache still checkpoints, on its thread. */
void kj__cache_wal_offload(struct kj__cache *c);
int kj__cache_wal_pages(const struct kj__cache *c);
int kj__cache_checkpoint(struct kj__cache *c);
/* 1 if run may go to another thread (SQLite was built thread-safe). */
int kj__cache_job_threaded(void);

/* Totals for stats (publishes in flight included). */
struct kj__cache_totals {
	uint64_t entries;
	uint64_t bytes;
};
int kj__cache_totals(struct kj__cache *c, struct kj__cache_totals *t);
/* Entries and bytes per (target, version), by calling fn once for each. */
int kj__cache_totals_by_target(struct kj__cache *c,
			       void (*fn)(const char *target, const char *version, uint64_t entries, uint64_t bytes,
					  void *arg),
			       void *arg);
/* The size cap this cache was opened with (kj__cache_gc's default). */
uint64_t kj__cache_max_size(const struct kj__cache *c);
/* A uid's share of the cache under cap (0: the configured cap): the
 * configured --max-size-per-uid, else cap / KJ_CACHE_SHARE_DIV. */
uint64_t kj__cache_share(const struct kj__cache *c, uint64_t cap);
/* Calls fn once per owner uid with the bytes and the number of objects
 * that count against it (share.c; objects without an owner count against
 * the cache directory's owner), in uid order.  0 or KJIT_ENOMEM. */
int kj__cache_uid_bytes(struct kj__cache *c, void (*fn)(void *arg, uid_t uid, uint64_t bytes, uint64_t n), void *arg);

/* Persistent named counters (stats survive restarts): add delta to name. */
int kj__cache_counter_add(struct kj__cache *c, const char *name, int64_t delta);
int kj__cache_counter_get(struct kj__cache *c, const char *name, int64_t *value);

/* Recipes: the request behind an object (its GET fields without target and
 * version), stored content-addressed as <dir>/recipes/<recipe>.req and
 * linked to the object's key, so `kjit warm --replay` can compile again,
 * for the current compiler, whatever was used recently. */
int kj__cache_recipe_store(struct kj__cache *c, const char *key, const char *recipe, const uint8_t *body,
			   size_t len);
/* The recipe key's object was built from (hex into recipe).  0 or
 * KJIT_ENOENT (none kept: an imported or older entry). */
int kj__cache_recipe_of(struct kj__cache *c, const char *key, char recipe[65]);
/* Reads a recipe's body (malloc'd).  0, KJIT_ENOENT or KJIT_EIO. */
int kj__cache_recipe_load(struct kj__cache *c, const char *recipe, uint8_t **body, size_t *len);
/* Calls fn for each (recipe, backend, target) whose object was used at or
 * after since (unix seconds); stops when fn returns non-zero. */
int kj__cache_recipes(struct kj__cache *c, int64_t since,
		      int (*fn)(const char *recipe, int backend, const char *target, void *arg), void *arg);

/* The cache key: SHA-256 of a canonical encoding of everything that can
 * change the compiled bytes (docs/cache-key.md): backend, compiler identity
 * and version, canonical target, runtime version, options (in order),
 * entry points (sorted, deduplicated), source, every header (sorted by
 * name, each name and bytes) and the include names looked for and not found
 * (missing, sorted by the caller; none leaves the key as before).  hex gets
 * 64 digits and a NUL. */
struct kj__key_input {
	int backend;
	const char *compiler;           /* identity and version */
	const char *target;             /* canonical */
	const char *version;            /* runtime version */
	const char *const *options;
	size_t n_options;
	const char *const *entries;
	size_t n_entries;
	const uint8_t *source;
	size_t source_len;
	const char *const *header_names;
	const uint8_t *const *header_data;
	const size_t *header_len;
	size_t n_headers;
	const char *const *missing;     /* include names found nowhere */
	size_t n_missing;
};
int kj__cache_key(const struct kj__key_input *in, char hex[65]);
/* 1 if backend's entry points are part of its keys (vulkan: shaderc's entry
 * point changes the SPIR-V); 0 for hip and cuda, whose objects are the same
 * whatever entries are asked: kj__cache_key leaves in->entries out, and
 * every answer checks the requested entries against the object's list
 * (kj__cache_entry.entries). */
int kj__cache_key_entries_in(int backend);
/* The key as kjit computed it before entries left it: in->entries encoded
 * for every backend (the same as kj__cache_key for vulkan, and for any
 * request without entries).  Looked up after a miss of the current key, so
 * objects cached before still serve (docs/cache.md). */
int kj__cache_key_legacy(const struct kj__key_input *in, char hex[65]);
/* Whether an object in c may be stored under a legacy key: a row without
 * entries (written before schema 5, or imported from such a cache) was seen
 * at open or added since.  0 lets a caller skip kj__cache_key_legacy, a
 * second SHA-256 of the request's source.  On the loop's thread. */
int kj__cache_may_hold_legacy(const struct kj__cache *c);

/* Include resolution (kj__includes_*): common/includes.h, included above. */

#endif /* KJ_CACHE_H */
