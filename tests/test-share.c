/* test-share.c: each uid's share of the cache (cache/share.c): owners are
 * first requesters, gc evicts from owners over their share first, then in
 * plain LRU order, and an index of schema 3 gains owners on upgrade; a
 * recipe counts with its object and goes with it (schema 6). */
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "kjit.h"
#include "sha.h"
#include "test.h"

#define OBJ 1000 /* bytes of each test object */

static char root[64], dir[200];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void setup(void)
{
	char tmpl[] = "/tmp/kjit-share-XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(root, sizeof root, "%s", tmpl);
	snprintf(dir, sizeof dir, "%s/cache", tmpl);
}

static void cleanup(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct kj__cache *open_share(uint64_t per_uid)
{
	struct kj__cache_options o = { .max_size = 1u << 30, .max_size_per_uid = per_uid, .log = stderr };
	struct kj__cache *c = NULL;
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), 0);
	return c;
}

static void make_key(int i, char hex[65])
{
	uint8_t d[KJ_SHA256_LEN];
	char s[32];
	snprintf(s, sizeof s, "share %d", i);
	CHECK_EQ_INT(kj__sha256(s, strlen(s), d), 0);
	kj__hex(d, hex);
}

/* Publishes object i of OBJ bytes, requested first by uid. */
static void put(struct kj__cache *c, int i, uid_t uid)
{
	struct kj__cache_entry e = { .backend = KJIT_BACKEND_HIP };
	uint8_t buf[OBJ];
	memset(buf, i, sizeof buf);
	make_key(i, e.key);
	snprintf(e.target, sizeof e.target, "gfx90a");
	snprintf(e.version, sizeof e.version, "6.0");
	snprintf(e.ext, sizeof e.ext, "hsaco");
	CHECK_EQ_INT(kj__cache_publish(c, &e, buf, sizeof buf), 0);
	CHECK_EQ_INT(kj__cache_note_user(c, e.key, uid), 0);
}

static int has(struct kj__cache *c, int i)
{
	char key[65];
	struct kj__cache_entry e;
	make_key(i, key);
	if (kj__cache_get(c, key, &e) != 0)
		return 0;
	kj__cache_entry_free(&e);
	return 1;
}

struct tally {
	uid_t uid[8];
	uint64_t bytes[8];
	size_t n;
};

static void add(void *arg, uid_t uid, uint64_t bytes, uint64_t n)
{
	struct tally *t = arg;
	(void)n;
	CHECK(t->n < 8);
	t->uid[t->n] = uid;
	t->bytes[t->n++] = bytes;
}

static uint64_t bytes_of(struct kj__cache *c, uid_t uid)
{
	struct tally t = { 0 };
	CHECK_EQ_INT(kj__cache_uid_bytes(c, add, &t), 0);
	for (size_t i = 0; i < t.n; i++)
		if (t.uid[i] == uid)
			return t.bytes[i];
	return 0;
}

/* uid 1001's one object is the least recently used, but within its share:
 * a cap that needs four objects gone takes them from uid 1002, over its. */
static void test_over_share_first(void)
{
	uint64_t ev = 0, freed = 0;

	setup();
	struct kj__cache *c = open_share(0); /* share: cap / 4 */
	put(c, 1, 1001);
	for (int i = 2; i <= 10; i++)
		put(c, i, 1002);
	CHECK_EQ_INT(kj__cache_share(c, 6 * OBJ), 6 * OBJ / 4);
	CHECK_EQ_INT(kj__cache_gc(c, 6 * OBJ, &ev, &freed), 0);
	CHECK_EQ_INT(ev, 4);
	CHECK_EQ_INT(freed, 4 * OBJ);
	CHECK(has(c, 1));
	for (int i = 2; i <= 5; i++)
		CHECK(!has(c, i)); /* 1002's least recently used */
	for (int i = 6; i <= 10; i++)
		CHECK(has(c, i));
	CHECK_EQ_INT(bytes_of(c, 1001), OBJ);
	CHECK_EQ_INT(bytes_of(c, 1002), 5 * OBJ);
	kj__cache_close(c);
	cleanup();
}

/* Once no owner is over its share, gc is plain LRU; with a share larger
 * than the cap, it always is. */
static void test_then_lru(void)
{
	uint64_t ev = 0, freed = 0;

	setup();
	struct kj__cache *c = open_share(1u << 30);
	put(c, 1, 1001);
	for (int i = 2; i <= 10; i++)
		put(c, i, 1002);
	CHECK_EQ_INT(kj__cache_gc(c, 6 * OBJ, &ev, &freed), 0);
	CHECK_EQ_INT(ev, 4);
	for (int i = 1; i <= 4; i++)
		CHECK(!has(c, i));
	for (int i = 5; i <= 10; i++)
		CHECK(has(c, i));
	kj__cache_close(c);
	/* two owners over a share of 2 objects (3 and 4 objects), cap 4:
	 * pass 1 takes 1003's oldest and 1004's two oldest, pass 2 none */
	cleanup();
	setup();
	c = open_share(2 * OBJ);
	for (int i = 1; i <= 7; i++)
		put(c, i, i <= 3 ? 1003 : 1004);
	CHECK_EQ_INT(kj__cache_gc(c, 4 * OBJ, &ev, &freed), 0);
	CHECK_EQ_INT(ev, 3);
	CHECK(!has(c, 1) && has(c, 2) && has(c, 3) && !has(c, 4) && !has(c, 5) && has(c, 6) && has(c, 7));
	/* still over (cap 3): nobody over share, so the least recently used */
	CHECK_EQ_INT(kj__cache_gc(c, 3 * OBJ, &ev, &freed), 0);
	CHECK_EQ_INT(ev, 1);
	CHECK(!has(c, 2) && has(c, 3) && has(c, 6) && has(c, 7));
	kj__cache_close(c);
	cleanup();
}

/* A later requester does not become the owner, before or after a
 * restart: asking for another's objects neither charges the asker nor
 * uncharges their owner. */
static void test_first_requester_owns(void)
{
	char key[65];

	setup();
	struct kj__cache *c = open_share(0);
	put(c, 1, 1001);
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_note_user(c, key, 1002), 0);
	CHECK_EQ_INT(kj__cache_requested_by(c, key, 1002), 1);
	CHECK_EQ_INT(bytes_of(c, 1001), OBJ);
	CHECK_EQ_INT(bytes_of(c, 1002), 0);
	kj__cache_close(c);
	c = open_share(0); /* the owner is loaded with the index */
	CHECK_EQ_INT(bytes_of(c, 1001), OBJ);
	CHECK_EQ_INT(kj__cache_note_user(c, key, 1002), 0);
	CHECK_EQ_INT(bytes_of(c, 1002), 0);
	kj__cache_close(c);
	cleanup();
}

/* An index of schema 3 (no owner column) gains it, each object owned by
 * the smallest uid of its requesters; objects with none count against
 * the cache directory's owner. */
static void test_schema3_upgrade(void)
{
	char path[512], key[65];
	sqlite3 *db;
	sqlite3_stmt *st;

	setup();
	struct kj__cache *c = open_share(0);
	put(c, 1, 1002);
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_note_user(c, key, 1001), 0);
	put(c, 2, 1003);
	kj__cache_close(c);
	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	make_key(2, key);
	char sql[512];
	snprintf(sql, sizeof sql, "ALTER TABLE objects DROP COLUMN owner; DELETE FROM object_uids WHERE key = '%s';"
		 " PRAGMA user_version=3;", key);
	CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	c = open_share(0);
	CHECK_EQ_INT(bytes_of(c, 1001), OBJ);
	CHECK_EQ_INT(bytes_of(c, 1002), 0);
	CHECK_EQ_INT(bytes_of(c, 1003), 0);
	CHECK_EQ_INT(bytes_of(c, geteuid()), OBJ); /* the directory's owner */
	kj__cache_close(c);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_column_int(st, 0), 6);
	sqlite3_finalize(st);
	sqlite3_close(db);
	cleanup();
}

#define REC_LEN 4096 /* bytes of each test recipe */

/* Stores a recipe (hex rec) of REC_LEN bytes for object i. */
static void put_recipe(struct kj__cache *c, int i, const char *rec)
{
	static uint8_t body[REC_LEN];
	char key[65];
	make_key(i, key);
	memset(body, 'r', sizeof body);
	CHECK_EQ_INT(kj__cache_recipe_store(c, key, rec, body, sizeof body), 0);
}

static int recipe_file(const char *rec)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof path, "%s/recipes/%s.req", dir, rec);
	return stat(path, &st) == 0;
}

/* Recipes count in the owner's bytes and the cache's, across a reopen, and
 * go with their object (gc); a schema 5 index loses the recipe rows of
 * objects gone and counts the recipes it keeps as 0. */
static void test_recipes_counted(void)
{
	static const char rec1[] = "1111111111111111111111111111111111111111111111111111111111111111";
	static const char rec2[] = "2222222222222222222222222222222222222222222222222222222222222222";
	struct kj__cache_totals t;
	uint64_t ev = 0, freed = 0;
	char path[512], sql[512], key[65];
	sqlite3 *db;
	sqlite3_stmt *st;

	setup();
	struct kj__cache *c = open_share(0);
	put(c, 1, 1002);
	put_recipe(c, 1, rec1);
	CHECK_EQ_INT(bytes_of(c, 1002), OBJ + REC_LEN);
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK_EQ_INT(t.bytes, OBJ + REC_LEN);
	kj__cache_close(c);
	c = open_share(0);
	CHECK_EQ_INT(bytes_of(c, 1002), OBJ + REC_LEN); /* rsize kept in the row */
	CHECK(recipe_file(rec1));
	CHECK_EQ_INT(kj__cache_gc(c, 1, &ev, &freed), 0);
	CHECK_EQ_INT(ev, 1);
	CHECK_EQ_INT(freed, OBJ + REC_LEN);
	CHECK(!recipe_file(rec1)); /* the last object that named it is gone */
	put(c, 2, 1003);
	put_recipe(c, 2, rec2);
	kj__cache_close(c);
	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	make_key(9, key);
	snprintf(sql, sizeof sql, "ALTER TABLE objects DROP COLUMN rsize; DROP TRIGGER recipe_of_gone;"
		 " INSERT INTO recipe_of(key, recipe) VALUES('%s', '%s'); PRAGMA user_version=5;", key, rec1);
	CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	c = open_share(0);
	CHECK_EQ_INT(bytes_of(c, 1003), OBJ); /* counted as 0 until published again */
	kj__cache_close(c);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "SELECT count(*) FROM recipe_of", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_column_int(st, 0), 1); /* object 2's; object 9's row went */
	sqlite3_finalize(st);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_column_int(st, 0), 6);
	sqlite3_finalize(st);
	sqlite3_close(db);
	CHECK(recipe_file(rec2));
	cleanup();
}

TEST_LIST(TEST(over_share_first) TEST(then_lru) TEST(first_requester_owns) TEST(schema3_upgrade)
	  TEST(recipes_counted))
