/* test-publish.c: a publish in steps (cache/publish.c): from begin to
 * finish the object is served from memory (peek, lookup, get, exists,
 * listing, totals) and nothing of it is on disk but its temporary file; a
 * second publish of the key is refused; after run and finish the table,
 * the hot set and the index have it; a publish freed without its run
 * leaves nothing; a failed run (its directory not a directory) leaves the
 * cache as it was; a lent publish (kj__cache_pub_begin_lent) serves the
 * caller's bytes until finish, takes the recipe, and leaves the hot set a
 * copy of its own; the run makes both of its names durable (the object's
 * directory and recipes/ fsync'd after the renames); the rows of one
 * publish (the object's, its recipe's, its requesters') are written all
 * or none; kj__cache_pub_done counts and logs a failure itself.  Each
 * test works in its own mkdtemp directory. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <unistd.h>

#include "cache.h"
#include "kjit.h"
#include "sha.h"
#include "test.h"

static char root[64], dir[128];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static struct kj__cache *setup(void)
{
	char tmpl[] = "/tmp/kjit-pub-XXXXXX";
	struct kj__cache_options o = { .log = stderr };
	struct kj__cache *c = NULL;

	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(root, sizeof root, "%s", tmpl);
	snprintf(dir, sizeof dir, "%s/cache", tmpl);
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), 0);
	return c;
}

static void teardown(struct kj__cache *c)
{
	kj__cache_close(c);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void entry(struct kj__cache_entry *e, const char *name)
{
	uint8_t d[KJ_SHA256_LEN];

	memset(e, 0, sizeof *e);
	e->backend = KJIT_BACKEND_HIP;
	CHECK_EQ_INT(kj__sha256(name, strlen(name), d), 0);
	kj__hex(d, e->key);
	snprintf(e->target, sizeof e->target, "gfx90a");
	snprintf(e->version, sizeof e->version, "6.0");
	snprintf(e->ext, sizeof e->ext, "hsaco");
	e->source_name = "k.hip";
	e->log = "the log";
	e->lowered = "f\t_Z1fv\n";
	e->compile_ms = 40;
}

static int count_entry(const struct kj__cache_entry *e, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static void test_served_from_memory_until_finish(void)
{
	struct kj__cache *c = setup();
	struct kj__cache_entry e, g;
	struct kj__cache_pub *p, *p2;
	struct kj__cache_totals t;
	uint8_t obj[5000], *data;
	const uint8_t *peek;
	size_t len;
	uint32_t ms;
	char path[512];
	int n = 0;

	for (size_t i = 0; i < sizeof obj; i++)
		obj[i] = (uint8_t)(i * 13);
	entry(&e, "one");
	static const uint8_t recipe[] = "0123456789abcdefGET body";
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, recipe, sizeof recipe, (uid_t[]){ 7 }, 1, &p), 0);
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, NULL, 0, NULL, 0, &p2), KJIT_EBUSY);
	/* served from the copy, nothing on disk yet */
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), 0);
	CHECK(len == sizeof obj && memcmp(peek, obj, len) == 0 && ms == 40);
	CHECK(kj__cache_peek_exists(c, e.key));
	CHECK_EQ_INT(kj__cache_lookup(c, e.key, &data, &len, &g), 0);
	CHECK(len == sizeof obj && memcmp(data, obj, len) == 0);
	free(data);
	CHECK_EQ_INT(kj__cache_get(c, e.key, &g), 0);
	CHECK(g.lowered && strcmp(g.lowered, e.lowered) == 0 && g.log && strcmp(g.log, "the log") == 0);
	kj__cache_entry_free(&g);
	CHECK(kj__cache_requested_by(c, e.key, 7) && !kj__cache_requested_by(c, e.key, 8));
	CHECK_EQ_INT(kj__cache_foreach(c, NULL, count_entry, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK(t.entries == 1 && t.bytes == sizeof obj);
	snprintf(path, sizeof path, "%s/gfx90a-6.0/%s.hsaco", dir, e.key);
	CHECK(access(path, F_OK) != 0);
	kj__cache_pub_run(p);
	CHECK(access(path, F_OK) == 0);
	CHECK_EQ_INT(kj__cache_pub_finish(p), 0);
	kj__cache_pub_free(p);
	/* now from the table and the hot set, and the index */
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), 0);
	CHECK(len == sizeof obj && memcmp(peek, obj, len) == 0);
	CHECK_EQ_INT(kj__cache_get(c, e.key, &g), 0);
	CHECK(kj__hex_ok(g.sha256) && g.lowered && strcmp(g.lowered, e.lowered) == 0);
	kj__cache_entry_free(&g);
	CHECK(kj__cache_requested_by(c, e.key, 7));
	char rec[65];
	CHECK_EQ_INT(kj__cache_recipe_of(c, e.key, rec), 0);
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	/* once indexed, the object's recipe counts in the cache's size too (issue 29) */
	CHECK(t.entries == 1 && t.bytes == sizeof obj + sizeof recipe);
	teardown(c);
}

static void test_freed_or_failed_leaves_nothing(void)
{
	struct kj__cache *c = setup();
	struct kj__cache_entry e;
	struct kj__cache_pub *p;
	struct kj__cache_totals t;
	const uint8_t *peek;
	size_t len;
	uint32_t ms;
	uint8_t obj[100] = { 1, 2, 3 };
	char sub[512];
	FILE *f;

	entry(&e, "two");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, NULL, 0, NULL, 0, &p), 0);
	kj__cache_pub_free(p); /* never run */
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), KJIT_ENOENT);
	/* a run that fails: its directory is a file */
	snprintf(sub, sizeof sub, "%s/gfx90a-6.0", dir);
	CHECK((f = fopen(sub, "w")) != NULL);
	fclose(f);
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, NULL, 0, NULL, 0, &p), 0);
	kj__cache_pub_run(p);
	CHECK(kj__cache_pub_finish(p) < 0);
	kj__cache_pub_free(p);
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), KJIT_ENOENT);
	CHECK(!kj__cache_peek_exists(c, e.key));
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK_EQ_INT(t.entries, 0);
	teardown(c);
}

/* An entry of the index is got whole while another object's publish is in
 * flight (kj__cache_get once answered KJIT_ENOENT then: --explain saw no
 * earlier entry, a hit with lowered names was not answered). */
static void test_get_while_another_publishes(void)
{
	struct kj__cache *c = setup();
	struct kj__cache_entry e, e2, g;
	struct kj__cache_pub *p;
	uint8_t obj[64] = { 7 };

	entry(&e, "one");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, NULL, 0, NULL, 0, &p), 0);
	kj__cache_pub_run(p);
	CHECK_EQ_INT(kj__cache_pub_finish(p), 0);
	kj__cache_pub_free(p);
	entry(&e2, "three");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e2, obj, sizeof obj, NULL, 0, NULL, 0, &p), 0);
	CHECK_EQ_INT(kj__cache_get(c, e.key, &g), 0); /* from the index, "three" still in flight */
	CHECK(strcmp(g.key, e.key) == 0 && g.log && strcmp(g.log, "the log") == 0);
	kj__cache_entry_free(&g);
	CHECK_EQ_INT(kj__cache_get(c, e2.key, &g), 0); /* from the publish */
	kj__cache_entry_free(&g);
	kj__cache_pub_free(p);
	teardown(c);
}

/* A lent publish: the caller's bytes are served (no copy) until finish,
 * the recipe is taken (the pointer set NULL) and stored, and after finish
 * the hot set serves a copy of its own: the caller's buffer may go. */
static void test_lent_bytes_and_recipe(void)
{
	struct kj__cache *c = setup();
	struct kj__cache_entry e;
	struct kj__cache_pub *p;
	static const char body[] = "0123456789abcdefGET body";
	uint8_t *obj = malloc(3000), *recipe = malloc(sizeof body);
	const uint8_t *peek;
	size_t len;
	uint32_t ms;
	char rec[65];

	CHECK(obj != NULL && recipe != NULL);
	for (size_t i = 0; i < 3000; i++)
		obj[i] = (uint8_t)(i * 7);
	memcpy(recipe, body, sizeof body);
	entry(&e, "lent");
	CHECK_EQ_INT(kj__cache_pub_begin_lent(c, &e, obj, 3000, &recipe, sizeof body, NULL, NULL, 0, &p), 0);
	CHECK(recipe == NULL); /* taken */
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), 0);
	CHECK(peek == obj && len == 3000); /* the lent bytes themselves */
	kj__cache_pub_run(p);
	CHECK_EQ_INT(kj__cache_pub_finish(p), 0);
	kj__cache_pub_free(p);
	for (size_t i = 0; i < 3000; i++) /* the caller's buffer changes after finish */
		obj[i] = 0;
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), 0);
	CHECK(peek != obj && len == 3000 && peek[1] == 7 && peek[2999] == (uint8_t)(2999 * 7));
	CHECK_EQ_INT(kj__cache_recipe_of(c, e.key, rec), 0);
	/* freed without a run: the recipe taken is freed with it, the bytes stay the caller's */
	struct kj__cache_entry e2;
	entry(&e2, "lent2");
	recipe = malloc(sizeof body);
	CHECK(recipe != NULL);
	memcpy(recipe, body, sizeof body);
	CHECK_EQ_INT(kj__cache_pub_begin_lent(c, &e2, obj, 3000, &recipe, sizeof body, NULL, NULL, 0, &p), 0);
	kj__cache_pub_free(p);
	CHECK_EQ_INT(kj__cache_peek(c, e2.key, &peek, &len, &ms), KJIT_ENOENT);
	free(obj);
	teardown(c);
}

/* A lent publish given the object's digest (a fleet value's, which its
 * check vouches for): the run records it and does not hash the object;
 * without one it hashes, as before.  A wrong digest is recorded as given
 * (the caller vouches; verify finds the file corrupt then), which shows
 * that no hash was made. */
static void test_lent_digest_given(void)
{
	struct kj__cache *c = setup();
	struct kj__cache_entry e, got;
	struct kj__cache_pub *p;
	uint8_t obj[2000], dg[KJ_SHA256_LEN], wrong[KJ_SHA256_LEN];
	char hex[KJ_SHA256_HEX_LEN + 1];
	const struct { const char *name; const uint8_t *given; const uint8_t *want; } cases[] = {
		{ "given", dg, dg }, { "none", NULL, dg }, { "wrong", wrong, wrong },
	};

	for (size_t i = 0; i < sizeof obj; i++)
		obj[i] = (uint8_t)(i * 11 + 3);
	CHECK_EQ_INT(kj__sha256(obj, sizeof obj, dg), 0);
	memset(wrong, 0x5a, sizeof wrong);
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		entry(&e, cases[k].name);
		CHECK_EQ_INT(kj__cache_pub_begin_lent(c, &e, obj, sizeof obj, NULL, 0, cases[k].given, NULL, 0, &p), 0);
		kj__cache_pub_run(p);
		CHECK_EQ_INT(kj__cache_pub_finish(p), 0);
		kj__cache_pub_free(p);
		CHECK_EQ_INT(kj__cache_get(c, e.key, &got), 0);
		kj__hex(cases[k].want, hex);
		CHECK_EQ_STR(got.sha256, hex);
		kj__cache_entry_free(&got);
	}
	teardown(c);
}

/* The directories fsync'd, by the descriptor the cache opened them on,
 * counted only when the file's final name is already in the directory
 * (the fsync comes after the rename). */
static int dir_fd[2] = { -1, -1 }, dir_synced[2];
static const char *dir_name[2] = { "/gfx90a-6.0", "/recipes" };
static const char *dir_ext[2] = { ".hsaco", ".req" };
static char dir_path[2][512];

static int w_open(const char *path, int fl, mode_t m)
{
	int fd = kj__fsys_default.open(path, fl, m);
	size_t n = strlen(path);

	for (int i = 0; i < 2 && fd >= 0 && (fl & O_DIRECTORY); i++)
		if (n >= strlen(dir_name[i]) && strcmp(path + n - strlen(dir_name[i]), dir_name[i]) == 0) {
			dir_fd[i] = fd;
			snprintf(dir_path[i], sizeof dir_path[i], "%s", path);
		}
	return fd;
}

/* 1 if where holds a name ending in ext (a final name, not a temporary one). */
static int holds_final(const char *where, const char *ext)
{
	DIR *dp = opendir(where);
	struct dirent *de;
	int found = 0;

	CHECK(dp != NULL);
	while ((de = readdir(dp)) != NULL) {
		size_t n = strlen(de->d_name), k = strlen(ext);
		found |= n > k && strcmp(de->d_name + n - k, ext) == 0;
	}
	CHECK(closedir(dp) == 0);
	return found;
}

static int w_fsync(int fd)
{
	for (int i = 0; i < 2; i++)
		dir_synced[i] += fd == dir_fd[i] && holds_final(dir_path[i], dir_ext[i]);
	return kj__fsys_default.fsync(fd);
}

/* A crash right after the run must not lose either name once a row can
 * name it: the run fsyncs the object's directory and recipes/, each after
 * its rename (store.c put_file; recipes/ was not fsync'd before). */
static void test_run_makes_both_names_durable(void)
{
	struct kj__fsys fs = kj__fsys_default;
	char tmpl[] = "/tmp/kjit-pub-XXXXXX";
	struct kj__cache_options o = { .log = stderr, .fs = &fs };
	struct kj__cache *c = NULL;
	struct kj__cache_entry e;
	struct kj__cache_pub *p;
	static const uint8_t obj[] = "an object", recipe[] = "0123456789abcdefGET body";
	char path[512];

	fs.open = w_open;
	fs.fsync = w_fsync;
	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(root, sizeof root, "%s", tmpl);
	snprintf(dir, sizeof dir, "%s/cache", tmpl);
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), 0);
	entry(&e, "durable");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, recipe, sizeof recipe, NULL, 0, &p), 0);
	kj__cache_pub_run(p);
	CHECK_EQ_INT(kj__cache_pub_finish(p), 0);
	kj__cache_pub_free(p);
	snprintf(path, sizeof path, "%s/gfx90a-6.0/%s.hsaco", dir, e.key);
	CHECK(access(path, F_OK) == 0);
	CHECK(dir_synced[0] >= 1);
	CHECK(dir_synced[1] >= 1);
	teardown(c);
}

/* One integer from the index (a second connection, as kjit's tools open it). */
static long long db_int(const char *sql)
{
	char path[256];
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void db_exec(const char *sql)
{
	char path[256];
	sqlite3 *db;

	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* The rows of one publish are one transaction: with the requesters' row
 * refused by SQLite (a trigger, the last row written), the publish fails
 * and leaves no row of it (object, recipe, requester), no file and no
 * table entry; the same publish then stores all of them, the first
 * requester the owner and the recipe's bytes charged to the row. */
static void test_rows_all_or_none(void)
{
	struct kj__cache *c = setup();
	struct kj__cache_entry e;
	struct kj__cache_pub *p;
	static const uint8_t obj[] = "an object of rows", recipe[] = "0123456789abcdefGET rows";
	const uid_t uids[2] = { 1001, 1002 };
	const uint8_t *peek;
	size_t len;
	uint32_t ms;
	char rec[65], sql[512], path[512];

	entry(&e, "rows");
	db_exec("CREATE TRIGGER no_uids BEFORE INSERT ON object_uids BEGIN SELECT RAISE(ABORT, 'refused'); END;");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, recipe, sizeof recipe, uids, 2, &p), 0);
	kj__cache_pub_run(p);
	CHECK(kj__cache_pub_finish(p) < 0);
	kj__cache_pub_free(p);
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), KJIT_ENOENT);
	CHECK(kj__cache_recipe_of(c, e.key, rec) < 0);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM objects WHERE key = '%s'", e.key);
	CHECK(db_int(sql) == 0);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM recipe_of WHERE key = '%s'", e.key);
	CHECK(db_int(sql) == 0);
	snprintf(path, sizeof path, "%s/gfx90a-6.0/%s.hsaco", dir, e.key);
	CHECK(access(path, F_OK) != 0);

	db_exec("DROP TRIGGER no_uids;");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, recipe, sizeof recipe, uids, 2, &p), 0);
	kj__cache_pub_run(p);
	CHECK_EQ_INT(kj__cache_pub_finish(p), 0);
	kj__cache_pub_free(p);
	CHECK_EQ_INT(kj__cache_peek(c, e.key, &peek, &len, &ms), 0);
	CHECK_EQ_INT(kj__cache_recipe_of(c, e.key, rec), 0);
	CHECK(kj__cache_requested_by(c, e.key, 1001) && kj__cache_requested_by(c, e.key, 1002));
	CHECK(!kj__cache_requested_by(c, e.key, 1003));
	snprintf(sql, sizeof sql, "SELECT owner FROM objects WHERE key = '%s'", e.key);
	CHECK(db_int(sql) == 1001);
	snprintf(sql, sizeof sql, "SELECT rsize FROM objects WHERE key = '%s'", e.key);
	CHECK(db_int(sql) == (long long)sizeof recipe);
	CHECK(access(path, F_OK) == 0);
	/* the table counts what the rows say: the object and its recipe */
	struct kj__cache_totals t;
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK(t.entries == 1 && t.bytes == sizeof obj + sizeof recipe);
	teardown(c);
}

/* kj__cache_pub_done, the end kjitd hands a publish to: a failure (SQLite
 * refusing its rows) counted where the options say and logged with its
 * key; a publish that succeeds counts nothing. */
static void test_done_counts_and_logs_a_failure(void)
{
	char tmpl[] = "/tmp/kjit-pub-XXXXXX", line[512], want[128];
	uint64_t errors = 0;
	FILE *log = tmpfile();
	struct kj__cache_options o = { .log = log, .pub_errors = &errors };
	struct kj__cache *c = NULL;
	struct kj__cache_entry e;
	struct kj__cache_pub *p;
	static const uint8_t obj[] = "an object";
	const uid_t uid = 1001;
	int found = 0;

	CHECK(log != NULL);
	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(root, sizeof root, "%s", tmpl);
	snprintf(dir, sizeof dir, "%s/cache", tmpl);
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), 0);
	entry(&e, "done-ok");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, NULL, 0, &uid, 1, &p), 0);
	kj__cache_pub_run(p);
	CHECK_EQ_INT(kj__cache_pub_done(p), 0);
	CHECK(errors == 0);
	db_exec("CREATE TRIGGER no_uids BEFORE INSERT ON object_uids BEGIN SELECT RAISE(ABORT, 'refused'); END;");
	entry(&e, "done-refused");
	CHECK_EQ_INT(kj__cache_pub_begin(c, &e, obj, sizeof obj, NULL, 0, &uid, 1, &p), 0);
	kj__cache_pub_run(p);
	CHECK(kj__cache_pub_done(p) < 0);
	CHECK(errors == 1);
	snprintf(want, sizeof want, "could not store %s (", e.key);
	rewind(log);
	while (fgets(line, sizeof line, log))
		found |= strstr(line, want) != NULL && strstr(line, "served, not cached") != NULL;
	CHECK(found);
	teardown(c);
	fclose(log);
}

TEST_LIST(TEST(served_from_memory_until_finish) TEST(lent_digest_given) TEST(freed_or_failed_leaves_nothing)
	  TEST(get_while_another_publishes) TEST(lent_bytes_and_recipe) TEST(run_makes_both_names_durable)
	  TEST(rows_all_or_none) TEST(done_counts_and_logs_a_failure))
