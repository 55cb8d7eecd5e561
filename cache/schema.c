/* schema.c: the schema of a cache's index and the upgrades of older ones,
 * run once at open (kj__db_schema, called by index.c's open).
 *
 * Versions (PRAGMA user_version; docs/cache.md):
 *   1  objects, counters, recipe_of.
 *   2  object_uids, who requested each object: a version 1 index gives its
 *      objects to the cache directory's owner.
 *   3  objects.lowered, the lowered names of C++ name expressions
 *      (common/lowered.h), which before lived as "kjit: lowered name:"
 *      lines of the log: an older index gets the column, and those lines
 *      move out of each log into it.
 *   4  objects.owner, the uid whose share of the cache an object counts
 *      against (cache/maint.c, docs/reliability.md "Budgets"): its first
 *      requester; NULL for objects nobody requested through a compile
 *      (imported, fetched from the fleet), which count against the cache
 *      directory's owner.  An older index gives each object the smallest
 *      uid of its requesters.
 *   5  objects.entries, the object's entry points ("NAME\n" each), what a
 *      request's entries are checked against now that they leave the key
 *      of hip and cuda objects (cache/key.c).  An older index gets the
 *      column empty (NULL: not known); kjitd fills a row's list the first
 *      time a request with entries is answered from it, from the object's
 *      own symbols (compilers/symbols.c; daemon/net/reply.c), so the upgrade
 *      reads no object file and costs an open nothing.
 *   6  objects.rsize, the bytes of the object's recipe (recipe.c), counted
 *      with the object in the cache's size and its owner's share; and
 *      recipe_of rows go with their objects (a trigger).  An older index
 *      loses the recipe_of rows of objects gone (their files are swept as
 *      no row names them) and counts the recipes it keeps as 0 bytes until
 *      their objects are published again.
 *
 * Invariants:
 *  - An upgrade is one transaction with the creation of the schema and the
 *    new user_version: an index is at one version or the next, never in
 *    between; a failed upgrade leaves it as it was (and the open fails).
 *  - Entries survive every upgrade: nothing is dropped, only added or
 *    moved; an index newer than KJ_SCHEMA_VERSION is refused by the caller
 *    before this runs.
 *  - A column is added only where it is missing (checked, not assumed from
 *    the version), so a new file and any older one end with one schema.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache-int.h"
#include "kj_types.h"
#include "lowered.h"

#define KJ_STR_(x) #x
#define KJ_STR(x) KJ_STR_(x)

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS objects("
	" key TEXT PRIMARY KEY, backend INTEGER NOT NULL, target TEXT NOT NULL,"
	" version TEXT NOT NULL, ext TEXT NOT NULL, size INTEGER NOT NULL,"
	" sha256 TEXT NOT NULL, created INTEGER NOT NULL, last_used INTEGER NOT NULL,"
	" used_seq INTEGER NOT NULL DEFAULT 0, hits INTEGER NOT NULL DEFAULT 0,"
	" compile_ms INTEGER NOT NULL DEFAULT 0, source_name TEXT, options TEXT,"
	" compiler TEXT, log TEXT, lowered TEXT, owner INTEGER, entries TEXT, rsize INTEGER);"
	"CREATE INDEX IF NOT EXISTS objects_lru ON objects(last_used, used_seq);"
	"CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS recipe_of(key TEXT PRIMARY KEY, recipe TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS object_uids(key TEXT NOT NULL, uid INTEGER NOT NULL,"
	" PRIMARY KEY(key, uid)) WITHOUT ROWID;"
	"CREATE TRIGGER IF NOT EXISTS object_uids_gone AFTER DELETE ON objects"
	" BEGIN DELETE FROM object_uids WHERE key = old.key; END;"
	"CREATE TRIGGER IF NOT EXISTS recipe_of_gone AFTER DELETE ON objects"
	" BEGIN DELETE FROM recipe_of WHERE key = old.key; END;";

/* kj_lowered_split(log, part): part 0 the log without its lowered-name
 * lines, part 1 their list (kj__lowered_split_log); NULL when empty. */
static void split_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *log = (const char *)sqlite3_value_text(argv[0]);
	int part = argc > 1 ? sqlite3_value_int(argv[1]) : 0;
	char *rest = NULL, *low = NULL;

	if (kj__lowered_split_log(log, &rest, &low) < 0) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	char *v = part ? low : rest;
	if (v)
		sqlite3_result_text(ctx, v, -1, free);
	else
		sqlite3_result_null(ctx);
	free(part ? rest : low);
}

/* Schema 3: the lowered column, where it is missing, and the lowered-name
 * lines of every log moved into it. */
static int add_lowered(struct kj__cache *c, int *corrupt)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, "SELECT lowered FROM objects LIMIT 0", -1, &st, NULL), r;

	sqlite3_finalize(st);
	if (rc == SQLITE_OK)
		return 0; /* a new file, created with it */
	rc = sqlite3_create_function(c->db, "kj_lowered_split", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
				     split_fn, NULL, NULL);
	if (rc != SQLITE_OK) {
		*corrupt = kj__db_corrupt_rc(rc);
		return kj__db_fail(c, "register kj_lowered_split");
	}
	r = kj__db_exec(c, "ALTER TABLE objects ADD COLUMN lowered TEXT;"
		       "UPDATE objects SET lowered = kj_lowered_split(log, 1), log = kj_lowered_split(log, 0)"
		       " WHERE instr(log, '" KJ_LOWERED_LEGACY_PREFIX "') > 0", corrupt);
	/* the function was this upgrade's alone: a connection that cannot drop it
	 * fails the open (the transaction rolls back; the next open upgrades again)
	 * rather than keep a half-known state */
	rc = sqlite3_create_function(c->db, "kj_lowered_split", 2, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	if (rc != SQLITE_OK && r == 0) {
		*corrupt = kj__db_corrupt_rc(rc);
		r = kj__db_fail(c, "unregister kj_lowered_split");
	}
	return r;
}

/* Schema 4: the owner column, where it is missing, filled from the
 * requesters (the smallest uid: the order they asked in is not kept). */
static int add_owner(struct kj__cache *c, int *corrupt)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, "SELECT owner FROM objects LIMIT 0", -1, &st, NULL);

	sqlite3_finalize(st);
	if (rc == SQLITE_OK)
		return 0; /* a new file, created with it */
	return kj__db_exec(c, "ALTER TABLE objects ADD COLUMN owner INTEGER;"
			   "UPDATE objects SET owner = (SELECT min(uid) FROM object_uids u WHERE u.key = objects.key)",
			   corrupt);
}

/* Schema 5: the entries column, where it is missing; old rows NULL (filled
 * lazily by kjitd, see above). */
static int add_entries(struct kj__cache *c, int *corrupt)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, "SELECT entries FROM objects LIMIT 0", -1, &st, NULL);

	sqlite3_finalize(st);
	if (rc == SQLITE_OK)
		return 0; /* a new file, created with it */
	return kj__db_exec(c, "ALTER TABLE objects ADD COLUMN entries TEXT", corrupt);
}

/* Schema 6: the rsize column, where it is missing, and the recipe rows of
 * objects gone. */
static int add_rsize(struct kj__cache *c, int *corrupt)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, "SELECT rsize FROM objects LIMIT 0", -1, &st, NULL);

	sqlite3_finalize(st);
	if (rc != SQLITE_OK && kj__db_exec(c, "ALTER TABLE objects ADD COLUMN rsize INTEGER", corrupt) < 0)
		return KJIT_EIO;
	return kj__db_exec(c, "DELETE FROM recipe_of WHERE key NOT IN (SELECT key FROM objects)", corrupt);
}

int kj__db_schema(struct kj__cache *c, int64_t version, int *corrupt)
{
	char uids[128];
	int r;

	/* schema 2: a version 1 index's objects were requested by the owner */
	snprintf(uids, sizeof uids, "INSERT OR IGNORE INTO object_uids(key, uid) SELECT key, %u FROM objects",
		 (unsigned)c->dir_uid);
	if ((r = kj__db_exec(c, "BEGIN IMMEDIATE", corrupt)) < 0)
		return r;
	if ((r = kj__db_exec(c, schema_sql, corrupt)) < 0 ||
	    (version < 2 && (r = kj__db_exec(c, uids, corrupt)) < 0) ||
	    (version < 3 && (r = add_lowered(c, corrupt)) < 0) ||
	    (version < 4 && (r = add_owner(c, corrupt)) < 0) ||
	    (version < 5 && (r = add_entries(c, corrupt)) < 0) ||
	    (version < 6 && (r = add_rsize(c, corrupt)) < 0) ||
	    (r = kj__db_exec(c, "PRAGMA user_version=" KJ_STR(KJ_SCHEMA_VERSION), corrupt)) < 0 ||
	    (r = kj__db_exec(c, "COMMIT", corrupt)) < 0) {
		int ignore;
		if (!sqlite3_get_autocommit(c->db))
			kj__db_exec(c, "ROLLBACK", &ignore);
		return r;
	}
	return 0;
}
