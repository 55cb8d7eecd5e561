/* cache-int.h: what the files of cache/ share and nothing outside cache/
 * may include: struct kj__cache, the in-memory entry table and hot set it
 * holds, the prepared statements of the index, and the internal calls each
 * file offers the others.
 *
 * Who owns what (each file opens with the invariants it keeps):
 *   cache.c   the public calls open, close, lookup, peek, foreach, totals,
 *             and the small helpers below (logging, paths, hex, strdup)
 *   table.c   c->ents, c->slots, c->tuples, c->dirty: the entry table that
 *             mirrors the index's valid rows, and the interned strings
 *   hot.c     c->hot_*: verified objects kept in memory
 *   index.c   c->db and c->st[]: open, load, rows, flush, counters,
 *             metadata, requesters
 *   schema.c  the index's schema and the upgrades of older ones
 *   recipe.c  recipes (<dir>/recipes and recipe_of), for replay
 *   store.c   the object files: directories, read-and-verify, temporary
 *             write, the steps of a publish, drop, sweep
 *   publish.c a publish in steps (its file written on another thread), the
 *             objects whose publish is in flight (c->pubs), served from memory
 *   maint.c   gc, verify, clear; gc's victims; invalid rows
 *   job.c     the same in steps; jobrun.c their slow part, on another thread
 *   bulk.c    many objects published at once (import), written on another thread
 * All of them run on one thread (kjitd's loop), but for jobrun.c, the
 * writing half of bulk.c and a publish's run (publish.c), which say what
 * they touch; all reach the file system
 * only through c->fs and memory only through c->mem (cache.h), so tests
 * can make any call fail.
 */
#ifndef KJ_CACHE_INT_H
#define KJ_CACHE_INT_H

#include <limits.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "cache.h"
#include "htab.h"
#include "ilist.h"
#include "sha.h"

#define NONE ((size_t)-1)             /* "no entry": what kj__tab_find returns on a miss */

/* The columns of a struct kj__cache_entry, in kj__db_row_entry's order. */
#define ENTRY_COLS "key, backend, target, version, ext, size, sha256, created, last_used," \
	" hits, compile_ms, source_name, options, compiler, log, lowered, entries"

enum stmt_id {
	ST_INSERT, ST_DELETE, ST_TOUCH, ST_COUNTER_ADD, ST_COUNTER_GET, ST_GET,
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_DIGEST, ST_NOTE_USER, ST_HAS_USER, ST_SET_OWNER,
	ST_ENTRIES, ST_SET_ENTRIES, ST_RECIPE_OF, ST_SET_RSIZE, ST_SAVEPOINT, ST_RELEASE, ST_ROLLBACK_TO,
	ST_COUNT
};

/* One distinct (backend, target, version, ext), its strings owned. */
struct tuple {
	int backend;
	char *target;
	char *version;
	char *ext;
};

/* One indexed object, as the hit path needs it.  Its digest stays in the
 * index (kj__db_row_digest): it is needed only when the object is read
 * from disk, and leaving it out keeps a million entries under 60 MB. */
struct ent {
	uint8_t key[KJ_SHA256_LEN];
	uint64_t seq;        /* use order: exact LRU within a second */
	uint32_t last_used;  /* unix seconds (unsigned: good until 2106) */
	uint32_t size;       /* <= KJ_OBJECT_MAX */
	uint32_t pending;    /* hits not yet flushed; > 0 means its key is in dirty */
	uint32_t tuple;      /* index into c->tuples */
	uint32_t compile_ms; /* what a hit saves (stats) */
	uint32_t owner;      /* share.c: the owner's uid + 1; 0: none (counts against dir_uid); fills the padding */
	uint32_t rsize;      /* its recipe's bytes (recipe.c), charged to it in c->bytes and its owner's share */
};
/* What an entry counts for in the cache's size: its object and its recipe. */
#define KJ_ENT_BYTES(en) ((uint64_t)(en)->size + (en)->rsize)

/* A verified object held in memory, with what its file looked like then. */
struct hot {
	uint8_t key[KJ_SHA256_LEN];
	struct kj__hnode hn;         /* in c->hot_tab, hashed by the key */
	struct kj__ilink lru;        /* in c->hot_lru */
	uint8_t *data;
	size_t size;
	dev_t dev;
	ino_t ino;
	struct timespec mtim;
};

struct kj__cache {
	char *dir;
	const struct kj__fsys *fs;
	const struct kj__cache_alloc *mem;
	FILE *log;
	uint64_t *pub_errors;         /* kj__cache_pub_done counts a failure here (options); NULL: none */
	uint64_t max_size;
	uint64_t max_per_uid; /* share.c: a uid's share; 0: max_size / KJ_CACHE_SHARE_DIV */
	mode_t dir_mode;     /* what mkdir below the cache uses (options) */
	mode_t file_mode;    /* what every file the cache creates gets */
	uid_t dir_uid;       /* the cache directory's owner (the v1 index migration) */
	int lock_fd;
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];

	/* table.c */
	struct ent *ents;
	size_t n, cap;
	uint32_t *slots;     /* entry index + 1; 0 = empty */
	size_t nslots;
	struct tuple *tuples;
	size_t ntuples, captuples, last_tuple;
	uint64_t bytes;      /* sum of sizes in the table */
	uint64_t seq;        /* last use sequence handed out */
	uint8_t (*dirty)[KJ_SHA256_LEN];
	size_t ndirty, capdirty;

	uint64_t tmp_seq;    /* temporary file names */
	int check_index;     /* last close was not clean: run quick_check */
	int opened;          /* fully open: close leaves the clean marker */
	size_t bad_rows;     /* rows skipped at load (dropped by verify) */
	int wal_pages;       /* the WAL after our last commit (kj__cache_wal_offload) */
	int legacy_rows;     /* a row may be keyed as before entries left the key (seen at open, or imported): kj__cache_may_hold_legacy */

	/* publish.c: objects whose publish is in flight, newest first; the
	 * cache's thread only (a run touches only its own struct). */
	struct kj__cache_pub *pubs;

	/* hot.c: verified objects in memory, most recently used first. */
	struct kj__htab hot_tab;
	uint64_t hot_bytes, hot_max;
	struct kj__ilist hot_lru;
};

/* ---- cache.c: helpers ---- */

/* Logs "kjit: <message>" to c->log; errno is kept. */
void kj__cache_say(const struct kj__cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Formats into buf; KJIT_EINVAL if it does not fit. */
int kj__cache_pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 1 if ext is one of the object extensions ("hsaco", "cubin", "ptx", "fatbin", "spv"). */
int kj__cache_ext_ok(const char *ext);
/* s must have passed kj__hex_ok (lowercase): 64 digits into 32 bytes. */
void kj__cache_unhex(const char *s, uint8_t out[KJ_SHA256_LEN]);
/* A key argument: 64 lowercase hex digits into out.  0 or KJIT_EINVAL. */
int kj__cache_key_arg(const char *key, uint8_t out[KJ_SHA256_LEN]);
/* strdup through c->mem; NULL for NULL, and NULL on ENOMEM. */
char *kj__cache_strdup(const struct kj__cache *c, const char *s);

/* ---- table.c: the entry table and interned strings ---- */

/* The index of key's entry, or NONE. */
size_t kj__tab_find(const struct kj__cache *c, const uint8_t *key);
/* Makes room for want entries without a later allocation.  0 or KJIT_ENOMEM. */
int kj__tab_reserve(struct kj__cache *c, size_t want);
/* Adds en (room must have been reserved). */
void kj__tab_add(struct kj__cache *c, const struct ent *en);
/* A publish's finish, in one call: en in the table (room reserved), in
 * place of the prior entry of its key if any (prior: its index, or NONE;
 * its pending hits kept), and hot (en->size verified bytes from c->mem,
 * taken over; NULL: none) kept in the hot set as the copy of the file st
 * (an st_ino of 0: no copy, hot freed). */
void kj__tab_put(struct kj__cache *c, struct ent *en, size_t prior, uint8_t *hot, const struct stat *st);
/* Removes entry idx (and its hot copy); the last entry moves into idx. */
void kj__tab_remove(struct kj__cache *c, size_t idx);
/* Empties the table and forgets pending hits; keeps its memory. */
void kj__tab_clear(struct kj__cache *c);
/* Notes a hit on entry idx (memory only).  0 or KJIT_ENOMEM. */
int kj__tab_touch(struct kj__cache *c, size_t idx);
/* The index of (backend, target, version, ext) in c->tuples, adding it.
 * 0 or KJIT_ENOMEM. */
int kj__tuple_intern(struct kj__cache *c, int backend, const char *target, const char *version,
		     const char *ext, uint32_t *out);
/* e from the table alone (sha256 and the strings stay empty). */
void kj__tab_fill_entry(const struct kj__cache *c, const struct ent *en, struct kj__cache_entry *e);
/* Frees the table, its tuples and dirty list. */
void kj__tab_free(struct kj__cache *c);

/* ---- hot.c: the hot set of verified objects ---- */

/* Keeps data (from c->mem, taken over: freed here if not kept) as the
 * verified copy of key's file st; best effort. */
void kj__hot_put_owned(struct kj__cache *c, const uint8_t *key, uint8_t *data, size_t size, const struct stat *st);
/* Keeps a copy of verified bytes with the file's identity; best effort. */
void kj__hot_put(struct kj__cache *c, const uint8_t *key, const uint8_t *data, size_t size,
		 const struct stat *st);
/* The hot copy of en, if its file is still the one that was verified (a
 * changed or missing file drops the copy); NULL otherwise. */
struct hot *kj__hot_get(struct kj__cache *c, const struct ent *en);
/* Forgets key's copy, if any. */
void kj__hot_remove(struct kj__cache *c, const uint8_t *key);
/* Forgets every copy and the buckets. */
void kj__hot_free_all(struct kj__cache *c);

/* ---- index.c: the SQLite index ---- */

/* Logs the connection's last error and returns KJIT_EIO. */
int kj__db_fail(const struct kj__cache *c, const char *what);
/* Steps a prepared statement that returns no row, then resets it.  0 or KJIT_EIO. */
int kj__db_run(struct kj__cache *c, enum stmt_id id, const char *what);
int kj__db_begin(struct kj__cache *c);
/* Commits; a failed commit is rolled back.  0 or KJIT_EIO. */
int kj__db_commit(struct kj__cache *c);
void kj__db_rollback(struct kj__cache *c);
/* Runs sql (no rows wanted).  Sets *corrupt when SQLite says the file is
 * damaged.  0 or KJIT_EIO (logged). */
int kj__db_exec(struct kj__cache *c, const char *sql, int *corrupt);
/* 1 if SQLite's code rc says the file is damaged (or not a database). */
int kj__db_corrupt_rc(int rc);

/* ---- share.c: each uid's share of the cache ---- */

/* gc's victims while total is over cap: calls take for the least recently
 * used objects of owners over share (each down to its share), then for
 * the least recently used of all, until the sizes taken bring total to
 * cap or below.  Reads only the rows, through db (any thread's
 * connection; never the table in memory).  0, KJIT_ENOMEM, KJIT_EIO
 * (logged) or take's error. */
int kj__share_victims(struct kj__cache *c, sqlite3 *db, uint64_t total, uint64_t cap, uint64_t share,
		      int (*take)(void *arg, const uint8_t key[KJ_SHA256_LEN]), void *arg);

/* ---- schema.c: the schema and its upgrades ---- */

/* The schema this kjit writes (PRAGMA user_version). */
#define KJ_SCHEMA_VERSION 6
/* Creates the tables the index lacks and upgrades an index of schema
 * version (older, or 0 for a new file) to KJ_SCHEMA_VERSION, in one
 * transaction: all of it or nothing.  0 or KJIT_EIO (logged; *corrupt set
 * when SQLite says the file is damaged). */
int kj__db_schema(struct kj__cache *c, int64_t version, int *corrupt);

/* Opens the index at path (<dir>/index.sqlite), moving a damaged one
 * aside and starting empty, and prepares the statements.  0, KJIT_EINVAL
 * or KJIT_EIO (logged). */
int kj__db_open(struct kj__cache *c, const char *path);
/* Finalizes the statements and closes the handle; safe when not open. */
void kj__db_close(struct kj__cache *c);
/* Loads every valid row into the table (invalid ones counted in
 * c->bad_rows).  0, KJIT_EIO or KJIT_ENOMEM. */
int kj__db_load(struct kj__cache *c);
/* The digest the index holds for key.  0, KJIT_ENOENT (no row, or not a
 * digest), KJIT_EIO. */
int kj__db_row_digest(struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], uint8_t out[KJ_SHA256_LEN]);
/* The statement that inserts (or replaces) a row, and its bindings: e's
 * fields and use sequence seq (e's strings bound SQLITE_STATIC). */
#define KJ_DB_INSERT_SQL "INSERT OR REPLACE INTO objects(key, backend, target, version, ext, size," \
	" sha256, created, last_used, used_seq, hits, compile_ms, source_name," \
	" options, compiler, log, lowered, entries)" \
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
void kj__db_bind_entry(sqlite3_stmt *st, const struct kj__cache_entry *e, uint64_t seq);
/* Inserts (or replaces) the row of e with use sequence seq.  0 or KJIT_EIO. */
int kj__db_insert_row(struct kj__cache *c, const struct kj__cache_entry *e, uint64_t seq);
/* What one publish writes besides its object's row (kj__db_publish_rows):
 * the recipe it was built from (recipe: hex, or NULL; rsize its bytes,
 * charged to the row) and who asked for it (the first becomes the owner
 * of a new row). */
struct kj__pub_rows {
	const char *recipe;
	uint32_t rsize;
	const uid_t *uids;
	size_t n_uids;
};
/* The rows of one publish, all or none (one SAVEPOINT: a transaction of
 * its own, or nested in the caller's): e's row with use sequence seq (as
 * kj__db_insert_row), recipe_of's row and its size, the requesters and
 * the owner.  Only the index: the caller updates the table after.  0 or
 * KJIT_EIO, with none of them written. */
int kj__db_publish_rows(struct kj__cache *c, const struct kj__cache_entry *e, uint64_t seq,
			const struct kj__pub_rows *w);
/* recipe_of's row for key (both hex) and the recipe's size on key's row.
 * 0 or KJIT_EIO. */
int kj__db_recipe_row(struct kj__cache *c, const char *key, const char *recipe, uint32_t rsize);
/* Records uid as a requester of key (hex) and, if the row has no owner
 * yet, as its owner (*owned then 1).  0 or KJIT_EIO. */
int kj__db_user_rows(struct kj__cache *c, const char *key, uid_t uid, int *owned);
/* Deletes key's row (hex).  0 or KJIT_EIO. */
int kj__db_delete_row(struct kj__cache *c, const char *hex);
/* Column i of the current row as text (NULL for NULL). */
const char *kj__db_col_text(sqlite3_stmt *st, int i);
/* Fills e from a row of ENTRY_COLS; strings point into the row. */
void kj__db_row_entry(sqlite3_stmt *st, struct kj__cache_entry *e);
/* Adds to e what the table knows and the index does not yet (hits,
 * last use). */
void kj__db_merge_pending(const struct kj__cache *c, struct kj__cache_entry *e);

/* ---- store.c: object files ---- */

/* <dir>/<target>-<version> of tuple t, and the file of entry en. */
int kj__obj_subdir(const struct kj__cache *c, const struct tuple *t, char *buf, size_t size);
int kj__obj_path(const struct kj__cache *c, const struct ent *en, char *buf, size_t size);
/* mkdir -p through c->fs.  0, KJIT_EINVAL or KJIT_EIO (logged). */
int kj__obj_mkdir_p(struct kj__cache *c, const char *path, mode_t mode);
/* Is path, a directory below the cache, a real directory (lstat: a
 * symlink is never followed)?  0; KJIT_ENOENT if missing; KJIT_EDENIED
 * (logged: a symlink or something else planted there); KJIT_EIO. */
int kj__obj_dir_check(struct kj__cache *c, const char *path);
/* Makes path (one level below the cache, mode c->dir_mode) if missing and
 * checks it with kj__obj_dir_check.  0, KJIT_EDENIED or KJIT_EIO (logged). */
int kj__obj_mkdir_below(struct kj__cache *c, const char *path);
/* Unlinks entry en's file, unless its directory is not a real directory
 * (then nothing is removed elsewhere).  Failures other than ENOENT logged. */
void kj__obj_unlink(struct kj__cache *c, const struct ent *en);
/* Is e a valid entry for data (len bytes)?  0, KJIT_EINVAL or KJIT_ETOOBIG. */
int kj__obj_entry_ok(const struct kj__cache_entry *e, const uint8_t *data, size_t len);
/* Best effort: makes a rename in dir durable.  Failures are logged. */
void kj__obj_fsync_dir(struct kj__cache *c, const char *dir);
/* Writes data to a new file at tmp and makes it durable.  0 or KJIT_EIO
 * with errno kept; *created says whether tmp exists (the caller unlinks
 * it on failure). */
int kj__obj_write_tmp(struct kj__cache *c, const char *tmp, const uint8_t *data, size_t len, int *created);
/* What a publish writes: the object's directory, its final name and the
 * temporary file it is written to first. */
struct kj__pub_paths {
	char sub[PATH_MAX];
	char final[PATH_MAX];
	char tmp[PATH_MAX];
};
/* A publish's first step, the cache's thread: e checked by the caller,
 * completed here (size, times), en filled (tuple interned, a new use
 * sequence), the paths (a unique temporary name).  0 or a negative code;
 * nothing changed on disk or in the index. */
int kj__obj_prepare(struct kj__cache *c, struct kj__cache_entry *e, size_t len, struct ent *en,
		    struct kj__pub_paths *p);
/* Any thread (touches c's fs, dir, modes and log only): the object's
 * directory, a durable temporary file, the rename, the directory's fsync,
 * then st the file's stat (zeroed if that fails).  0, or a negative code
 * with errno saying why; no temporary file is left. */
int kj__obj_place(struct kj__cache *c, const struct kj__pub_paths *p, const uint8_t *data, size_t len,
		  struct stat *st);
/* publish.c: the publish in flight of key, or NULL (the cache's thread). */
struct kj__cache_pub *kj__pub_find(const struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN]);
/* The bytes of key's publish in flight (valid until its finish) and what
 * a hit saves: 0, or KJIT_ENOENT when none is in flight. */
int kj__pub_peek(struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], const uint8_t **data, size_t *len,
		 uint32_t *compile_ms);
/* e of key's publish in flight (sha256 empty: not hashed yet), its
 * strings copies (dup: free with kj__cache_entry_free) or the pub's own
 * (valid until its finish).  0, KJIT_ENOENT or KJIT_ENOMEM. */
int kj__pub_entry(struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], struct kj__cache_entry *e, int dup);
/* 1 if uid is among the requesters of key's publish in flight. */
int kj__pub_requested(const struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], uid_t uid);
/* Calls fn for each publish in flight (of target only, unless NULL; of
 * uid's requests only, unless all), newest first; fn's nonzero return
 * stops it and is returned. */
int kj__pub_foreach(struct kj__cache *c, const char *target, int all, uid_t uid,
		    int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg);
/* A recipe in two steps: its file, recipes/<recipe>.req (store.c, any
 * thread, the same durable write as an object's, recipes/ fsync'd after
 * the rename; kept if already there with len bytes; seq makes the
 * temporary name unique, taken on the cache's thread), then its row
 * (recipe.c, the cache's thread).  0 or a negative code. */
int kj__obj_place_recipe(struct kj__cache *c, const char *recipe, const uint8_t *body, size_t len, uint64_t seq);
/* A recipe's bytes as a row and a table entry count them (rsize). */
uint32_t kj__recipe_rsize(size_t len);
int kj__recipe_link(struct kj__cache *c, const char *key, const char *recipe, size_t len);
/* 1 if a row links an object to recipe (hex), 0 if none does, -1 unknown
 * (an error: keep its file).  The cache's thread. */
int kj__recipe_named(const struct kj__cache *c, const char *recipe);
/* 1 if name is a recipe's file name ("<64 hex>.req"), its hex into recipe. */
int kj__recipe_file_name(const char *name, char recipe[65]);

/* Opens the object file at path for reading (never through a symlink) and
 * stats it: 0 with *fd open and *st; KJIT_ECORRUPT with why ("missing",
 * "a symlink"); KJIT_EIO (logged, nothing left open).  Any thread. */
int kj__obj_open(struct kj__cache *c, const char *path, int *fd, struct stat *st, char *why, size_t whylen);
/* Reads exactly n bytes of fd (the file at path) into buf.  0;
 * KJIT_ECORRUPT with why when the file ends first; KJIT_EIO (logged). */
int kj__obj_read_exact(struct kj__cache *c, int fd, const char *path, uint8_t *buf, size_t n, char *why,
		       size_t whylen);
/* Reads the object of en from disk and checks it against the index's
 * digest.  0 with *out from c->mem and *out_st the file's stat;
 * KJIT_ECORRUPT with why set (missing, wrong size, wrong digest);
 * KJIT_EIO for an I/O error that says nothing about the object (logged);
 * KJIT_ENOMEM. */
int kj__obj_read(struct kj__cache *c, const struct ent *en, uint8_t **out, struct stat *out_st, char *why,
		 size_t whylen);
/* Removes entry idx: its row first, then its file, then the table entry. */
void kj__obj_drop(struct kj__cache *c, size_t idx);
/* Is name "<64 hex>.<ext>"?  1 with key and *ext filled, else 0. */
int kj__obj_name(const char *name, uint8_t key[KJ_SHA256_LEN], const char **ext);
/* Should file name in object directory sub go?  Temporary files always;
 * with orphans, also object files no entry of the table names there (the
 * table: the loop's thread only; without orphans, any thread). */
int kj__obj_sweepable(const struct kj__cache *c, const char *sub, const char *name, int orphans);
/* Deletes stale temporary files (and, with orphans, object files without
 * a row) in every object directory.  Returns how many went. */
uint64_t kj__obj_sweep(struct kj__cache *c, int orphans);

/* ---- maint.c ---- */

/* gc's choice: calls take for each key to evict, owners over their share
 * first (share.c), least recently used first, until the sizes taken bring
 * total to cap or below; reads the
 * index through db (any thread's connection).  0, KJIT_EIO (logged) or
 * take's error. */
int kj__maint_victims(struct kj__cache *c, sqlite3 *db, uint64_t total, uint64_t cap,
		      int (*take)(void *arg, const uint8_t key[KJ_SHA256_LEN]), void *arg);
/* Drops the rows the load skipped (c->bad_rows), calling fn for each and
 * adding them to *bad.  The loop's thread.  0, KJIT_EIO or KJIT_ENOMEM. */
int kj__maint_drop_bad_rows(struct kj__cache *c, void (*fn)(const struct kj__cache_entry *e, const char *why, void *arg),
			    void *arg, uint64_t *bad);

/* ---- job.c and jobrun.c: maintenance in steps ---- */

enum { KJ_JOB_PHASE_CHECK = 1, KJ_JOB_PHASE_DELETE };
enum { KJ_JOB_FOUND_FILE = 1, KJ_JOB_FOUND_NOFILE, KJ_JOB_FOUND_ROW }; /* what a corrupt object was */

/* An entry as run sees it: the tuple indexes the job's own copy. */
struct kj__job_ent {
	uint8_t key[KJ_SHA256_LEN];
	uint32_t size;
	uint32_t tuple;
};

struct kj__job_tuple {
	char *sub; /* "<target>-<version>" */
	char *ext;
	int dir;   /* run's check of <dir>/<sub>: 0 not yet, 1 real, else a KJIT_E* code */
};

/* An object run found corrupt (verify), or a victim (gc: key only). */
struct kj__job_found {
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
	struct kj__job_ent *ents;
	size_t n;
	struct kj__job_tuple *tuples;
	size_t ntuples;
	struct kj__job_found *found;
	size_t nfound, capfound;
	char *sweep;           /* "sub\0name\0" pairs run would remove */
	size_t sweep_len, sweep_cap;
	int err;               /* the first error of a run */
	struct kj__cache_job_result res;
};

/* Grows *p (of *cap elements of size bytes) to hold want.  0 or KJIT_ENOMEM. */
int kj__job_grow(struct kj__cache *c, void **p, size_t *cap, size_t want, size_t size);
/* A zeroed record of key at the end of j->found; NULL on ENOMEM. */
struct kj__job_found *kj__job_found_add(struct kj__cache_job *j, const uint8_t *key);
/* Keeps r as the run's first error. */
void kj__job_fail(struct kj__cache_job *j, int r);

#endif /* KJ_CACHE_INT_H */
