/* recipe.c: recipes, the requests behind objects, so that `kjit warm
 * --replay` can compile again, for the current compiler and runtime, what
 * was used recently (daemon/admin/replay.c).
 *
 * Invariants:
 *  - A recipe is stored content-addressed: <dir>/recipes/<hex digest>.req
 *    holds the GET frame whose digest names it; a file already there with
 *    the same length is those bytes and is not written again.  It is
 *    written by store.c (kj__obj_place_recipe) like an object: a temporary
 *    file made durable, renamed, and recipes/ fsync'd after, so a reader
 *    never sees part of one and the name outlives a crash before its row.
 *  - The index's recipe_of(key, recipe) links an object to its recipe; the
 *    row is written after the file, so a row never names a missing file
 *    (a crash leaves at most a file no row names).
 *  - A recipe counts in the cache's size and its object's owner's share
 *    (issue 29): its length is the object's rsize (schema 6), in c->bytes
 *    with the object's own size (KJ_ENT_BYTES), so gc evicts for it.  A
 *    recipe shared by several objects (one request, several targets)
 *    counts once for each: more than its disk, never less.
 *  - A recipe goes with the last object that refers to it: a trigger
 *    deletes an object's recipe_of row with the object's row (schema.c),
 *    and the job that deleted the rows (gc, clear: cache/jobrun.c) or any
 *    later sweep removes the files no row names (kj__obj_sweepable, on the
 *    cache's thread, never while a publish is in flight: one may be about
 *    to link the very file).
 *  - recipes/ must be a real directory (kj__obj_dir_check): one replaced
 *    by a symlink is refused, never followed, for reads and writes alike;
 *    a recipe that is not a regular file is refused.
 * The files and rows belong to the cache; callers get copies.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

/* The recipe's bytes charged to key's table entry as its row has them
 * now (and so to c->bytes and its owner's share). */
static void charge(struct kj__cache *c, const char *key, uint32_t n)
{
	uint8_t k[KJ_SHA256_LEN];
	size_t i;

	kj__cache_unhex(key, k);
	if ((i = kj__tab_find(c, k)) != NONE) {
		c->bytes -= c->ents[i].rsize;
		c->ents[i].rsize = n;
		c->bytes += n;
	}
}

uint32_t kj__recipe_rsize(size_t len)
{
	return len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
}

int kj__recipe_link(struct kj__cache *c, const char *key, const char *recipe, size_t len)
{
	int r;

	if (!kj__hex_ok(key) || !kj__hex_ok(recipe))
		return KJIT_EINVAL;
	if ((r = kj__db_recipe_row(c, key, recipe, kj__recipe_rsize(len))) == 0)
		charge(c, key, kj__recipe_rsize(len));
	return r;
}

int kj__recipe_file_name(const char *name, char recipe[65])
{
	if (strlen(name) != KJ_SHA256_HEX_LEN + 4 || strcmp(name + KJ_SHA256_HEX_LEN, ".req") != 0 ||
	    strspn(name, "0123456789abcdef") != KJ_SHA256_HEX_LEN)
		return 0;
	memcpy(recipe, name, KJ_SHA256_HEX_LEN);
	recipe[KJ_SHA256_HEX_LEN] = '\0';
	return 1;
}

int kj__recipe_named(const struct kj__cache *c, const char *recipe)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(c->db, "SELECT 1 FROM recipe_of WHERE recipe = ?1 LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, recipe, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int kj__cache_recipe_store(struct kj__cache *c, const char *key, const char *recipe, const uint8_t *body,
			   size_t len)
{
	int r;

	if (!kj__hex_ok(key) || !kj__hex_ok(recipe))
		return KJIT_EINVAL;
	if ((r = kj__obj_place_recipe(c, recipe, body, len, ++c->tmp_seq)) < 0)
		return r;
	return kj__recipe_link(c, key, recipe, len);
}

int kj__cache_recipe_load(struct kj__cache *c, const char *recipe, uint8_t **body, size_t *len)
{
	char path[PATH_MAX];
	int r;

	if (!kj__hex_ok(recipe))
		return KJIT_EINVAL;
	char dir[PATH_MAX];
	struct stat st;
	if ((r = kj__cache_pathf(dir, sizeof dir, "%s/recipes", c->dir)) < 0 ||
	    (r = kj__cache_pathf(path, sizeof path, "%s/%s.req", dir, recipe)) < 0)
		return r;
	if ((r = kj__obj_dir_check(c, dir)) < 0)
		return r == KJIT_ENOENT ? r : KJIT_EIO;
	if (c->fs->lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		kj__cache_say(c, "refusing %s: not a regular file", path);
		return KJIT_EIO;
	}
	r = kj__read_file(path, KJ_FRAME_MAX, body, len);
	if (r == -ENOENT)
		return KJIT_ENOENT;
	return r < 0 ? KJIT_EIO : 0;
}

int kj__cache_recipe_of(struct kj__cache *c, const char *key, char recipe[65])
{
	sqlite3_stmt *st = NULL;
	int r = KJIT_ENOENT;

	if (sqlite3_prepare_v2(c->db, "SELECT recipe FROM recipe_of WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
		return kj__db_fail(c, "recipe_of");
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *t = kj__db_col_text(st, 0);
		if (t && kj__hex_ok(t)) {
			snprintf(recipe, 65, "%s", t);
			r = 0;
		}
	}
	sqlite3_finalize(st);
	return r;
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
		return kj__db_fail(c, "recipes");
	sqlite3_bind_int64(st, 1, since);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *recipe = kj__db_col_text(st, 0), *target = kj__db_col_text(st, 2);
		if (recipe == NULL || target == NULL)
			continue;
		if ((r = fn(recipe, sqlite3_column_int(st, 1), target, arg)) != 0)
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = kj__db_fail(c, "recipes");
	sqlite3_finalize(st);
	return r;
}
