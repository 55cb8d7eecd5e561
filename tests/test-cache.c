/* test-cache.c: the object store (every file of cache/ but include.c and key.c):
 * publish and lookup, restart, the lock, corruption on disk and in the index, gc,
 * verify, clear, counters, I/O faults injected at every system call of
 * a publish and a lookup, and an out-of-memory loop over open, publish,
 * lookup, gc and verify.  Each test works in its own mkdtemp directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sqlite3.h>

#include "cache.h"
#include "kjit.h"
#include "sha.h"
#include "oom.h"
#include "test.h"

static char dir[200];
static FILE *logfp;

static char root[64]; /* the mkdtemp directory of this test, removed by cleanup() */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Removes this test's temporary directory. */
static void cleanup(void)
{
	if (root[0])
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	root[0] = '\0';
}

static void setup(void)
{
	char tmpl[] = "/tmp/kjit-cache-XXXXXX";
	cleanup();
	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(root, sizeof root, "%s", tmpl);
	snprintf(dir, sizeof dir, "%s/cache", tmpl); /* open creates it */
	logfp = tmpfile();
	CHECK(logfp != NULL);
}

/* What was logged so far. */
static const char *logged(void)
{
	static char buf[16384];
	long end = ftell(logfp);
	size_t n;
	rewind(logfp);
	n = fread(buf, 1, sizeof buf - 1, logfp);
	buf[n] = '\0';
	fseek(logfp, end, SEEK_SET);
	return buf;
}

static struct kj__cache *open_fs(const struct kj__fsys *fs, uint64_t max)
{
	struct kj__cache_options o = { .fs = fs, .max_size = max, .log = logfp };
	struct kj__cache *c = NULL;
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), 0);
	return c;
}

static struct kj__cache *open_cache(void)
{
	return open_fs(NULL, 0);
}

static void make_key(int i, char hex[65])
{
	uint8_t d[KJ_SHA256_LEN];
	char s[32];
	snprintf(s, sizeof s, "key %d", i);
	CHECK_EQ_INT(kj__sha256(s, strlen(s), d), 0);
	kj__hex(d, hex);
}

/* Object i's bytes: n bytes of a pattern. */
static void make_obj(int i, uint8_t *buf, size_t n)
{
	for (size_t k = 0; k < n; k++)
		buf[k] = (uint8_t)(i * 31 + k * 7);
}

static int publish(struct kj__cache *c, int i, const char *target, size_t n)
{
	struct kj__cache_entry e = { .backend = KJIT_BACKEND_HIP, .compile_ms = 12 };
	uint8_t buf[4096];
	CHECK(n <= sizeof buf);
	make_key(i, e.key);
	snprintf(e.target, sizeof e.target, "%s", target);
	snprintf(e.version, sizeof e.version, "6.0");
	snprintf(e.ext, sizeof e.ext, "hsaco");
	e.source_name = "k.cu";
	e.options = "-O3";
	e.compiler = "hiprtc 6.0";
	e.log = "fine";
	make_obj(i, buf, n);
	int r = kj__cache_publish(c, &e, buf, n);
	if (r == 0) {
		CHECK_EQ_INT(e.size, n);
		CHECK(kj__hex_ok(e.sha256));
		CHECK(e.created > 0 && e.last_used == e.created);
	}
	return r;
}

/* 0 if object i is served with the right n bytes, else the lookup's code. */
static int lookup(struct kj__cache *c, int i, size_t n)
{
	char key[65];
	uint8_t *data = NULL, want[4096];
	size_t len = 0;
	struct kj__cache_entry e;

	make_key(i, key);
	int r = kj__cache_lookup(c, key, &data, &len, &e);
	if (r == 0) {
		make_obj(i, want, n);
		CHECK_EQ_INT(len, n);
		CHECK(memcmp(data, want, n) == 0);
		CHECK_EQ_STR(e.key, key);
		CHECK_EQ_INT(e.size, n);
		CHECK_EQ_STR(e.ext, "hsaco");
	} else {
		CHECK(data == NULL);
	}
	free(data);
	return r;
}

static void obj_path(int i, const char *target, char *path, size_t size)
{
	char key[65];
	make_key(i, key);
	snprintf(path, size, "%s/%s-6.0/%s.hsaco", dir, target, key);
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Every row names a file that hashes right; no temporary file anywhere;
 * totals agree.  Returns the number of entries. */
static int check_row(const struct kj__cache_entry *e, void *arg)
{
	char path[512];
	uint8_t *p = malloc(e->size + 1), d[KJ_SHA256_LEN];
	char hex[65];
	snprintf(path, sizeof path, "%s/%s-%s/%s.%s", dir, e->target, e->version, e->key, e->ext);
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ_INT(read(fd, p, e->size + 1), e->size);
	close(fd);
	kj__sha256(p, e->size, d);
	kj__hex(d, hex);
	CHECK_EQ_STR(hex, e->sha256);
	free(p);
	(*(uint64_t *)arg)++;
	return 0;
}

static uint64_t consistent(struct kj__cache *c)
{
	uint64_t n = 0;
	struct kj__cache_totals t;
	CHECK_EQ_INT(kj__cache_foreach(c, NULL, check_row, &n), 0);
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK_EQ_INT(t.entries, n);
	DIR *top = opendir(dir);
	struct dirent *de;
	CHECK(top != NULL);
	while ((de = readdir(top)) != NULL) {
		char sub[512];
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
		DIR *d = opendir(sub);
		if (d == NULL)
			continue;
		struct dirent *fe;
		while ((fe = readdir(d)) != NULL)
			CHECK(strstr(fe->d_name, ".tmp") == NULL);
		closedir(d);
	}
	closedir(top);
	return n;
}

static void test_publish_lookup(void)
{
	struct kj__cache *c;
	char key[65];
	uint8_t *data = (uint8_t *)"x";
	size_t len = 7;

	setup();
	c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "gfx90a:sramecc+:xnack-", 1000), 0);
	CHECK_EQ_INT(lookup(c, 1, 1000), 0);
	CHECK_EQ_INT(lookup(c, 2, 1000), KJIT_ENOENT);
	make_key(2, key);
	CHECK_EQ_INT(kj__cache_lookup(c, key, &data, &len, NULL), KJIT_ENOENT);
	CHECK(data == NULL && len == 0);
	CHECK_EQ_INT(kj__cache_lookup(c, "nothex", &data, &len, NULL), KJIT_EINVAL);
	/* metadata, with the hit counted once flushed */
	struct kj__cache_entry e;
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), 0);
	CHECK_EQ_INT(e.hits, 1);
	CHECK_EQ_STR(e.compiler, "hiprtc 6.0");
	CHECK_EQ_STR(e.log, "fine");
	CHECK_EQ_INT(e.compile_ms, 12);
	kj__cache_entry_free(&e);
	CHECK_EQ_INT(kj__cache_flush(c), 0);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), 0);
	CHECK_EQ_INT(e.hits, 1);
	kj__cache_entry_free(&e);
	CHECK_EQ_INT(kj__cache_get(c, "00", &e), KJIT_EINVAL);
	make_key(9, key);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), KJIT_ENOENT);
	/* republishing a key replaces it */
	CHECK_EQ_INT(publish(c, 1, "gfx90a:sramecc+:xnack-", 500), 0);
	CHECK_EQ_INT(lookup(c, 1, 500), 0);
	CHECK_EQ_INT(consistent(c), 1);
	kj__cache_close(c);
	kj__cache_close(NULL);
	cleanup();
}

static void test_publish_rejects_bad_entries(void)
{
	struct kj__cache *c;
	struct kj__cache_entry e = { .backend = KJIT_BACKEND_HIP };
	uint8_t b[4] = { 1, 2, 3, 4 };

	setup();
	c = open_cache();
	make_key(1, e.key);
	strcpy(e.version, "6.0");
	strcpy(e.ext, "hsaco");
	strcpy(e.target, "../x");
	CHECK_EQ_INT(kj__cache_publish(c, &e, b, 4), KJIT_EINVAL);
	strcpy(e.target, "a/b");
	CHECK_EQ_INT(kj__cache_publish(c, &e, b, 4), KJIT_EINVAL);
	strcpy(e.target, "gfx90a");
	strcpy(e.ext, "exe");
	CHECK_EQ_INT(kj__cache_publish(c, &e, b, 4), KJIT_EINVAL);
	strcpy(e.ext, "hsaco");
	strcpy(e.version, "..");
	CHECK_EQ_INT(kj__cache_publish(c, &e, b, 4), KJIT_EINVAL);
	strcpy(e.version, "6.0");
	CHECK_EQ_INT(kj__cache_publish(c, &e, b, 0), KJIT_EINVAL);
	e.key[3] = 'X';
	CHECK_EQ_INT(kj__cache_publish(c, &e, b, 4), KJIT_EINVAL);
	CHECK_EQ_INT(consistent(c), 0);
	kj__cache_close(c);
	cleanup();
}

static void test_restart_still_hits(void)
{
	struct kj__cache *c;

	setup();
	c = open_cache();
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(publish(c, i, "gfx1030", 100 + i), 0);
	CHECK_EQ_INT(lookup(c, 3, 103), 0);
	kj__cache_close(c);
	c = open_cache();
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(lookup(c, i, 100 + i), 0);
	struct kj__cache_entry e;
	char key[65];
	make_key(3, key);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), 0);
	CHECK_EQ_INT(e.hits, 2); /* one before the restart (flushed at close), one after */
	kj__cache_entry_free(&e);
	kj__cache_close(c);
	cleanup();
}

/* A clean close leaves <dir>/clean, and the next open takes it; without it
 * (a crash) the open runs quick_check, which finds a damaged page and has
 * the index rebuilt rather than trusted. */
static void test_integrity_check_after_unclean_close(void)
{
	struct kj__cache *c;
	char marker[300], index[300];
	struct stat st;

	setup();
	snprintf(marker, sizeof marker, "%s/clean", dir);
	snprintf(index, sizeof index, "%s/index.sqlite", dir);
	c = open_cache();
	for (int i = 0; i < 300; i++)
		CHECK_EQ_INT(publish(c, i, "gfx90a", 64), 0);
	CHECK(stat(marker, &st) < 0);
	kj__cache_close(c);
	CHECK(stat(marker, &st) == 0);
	c = open_cache();
	CHECK(stat(marker, &st) < 0); /* taken while open: a crash now leaves none */
	kj__cache_close(c);
	/* As after a crash: no marker, and a page of the index damaged. */
	CHECK(unlink(marker) == 0);
	CHECK(stat(index, &st) == 0 && st.st_size > 3 * 4096);
	int fd = open(index, O_WRONLY);
	char junk[4096];
	memset(junk, 0x5a, sizeof junk);
	CHECK(fd >= 0 && pwrite(fd, junk, sizeof junk, 2 * 4096) == (ssize_t)sizeof junk && close(fd) == 0);
	c = open_cache();
	CHECK(strstr(logged(), "integrity check") != NULL);
	CHECK_EQ_INT(lookup(c, 7, 64), KJIT_ENOENT); /* rebuilt empty, not trusted */
	kj__cache_close(c);
	cleanup();
}

static void test_lock_same_process(void)
{
	struct kj__cache *c, *c2 = NULL;
	struct kj__cache_options o = { .log = logfp };

	setup();
	c = open_cache();
	/* flock is per open file description: a second open conflicts too */
	CHECK_EQ_INT(kj__cache_open(&c2, dir, &o), KJIT_EBUSY);
	CHECK(c2 == NULL);
	kj__cache_close(c);
	CHECK_EQ_INT(kj__cache_open(&c2, dir, &o), 0);
	kj__cache_close(c2);
	cleanup();
}

static void test_lock_other_process(void)
{
	struct kj__cache *c;
	int st;

	setup();
	c = open_cache();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct kj__cache *c2 = NULL;
		struct kj__cache_options o = { .log = logfp };
		_exit(kj__cache_open(&c2, dir, &o) == KJIT_EBUSY ? 0 : 1);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	kj__cache_close(c);
	cleanup();
}

static void flip_byte(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	uint8_t b;
	CHECK(fd >= 0);
	CHECK(pread(fd, &b, 1, at) == 1);
	b ^= 0x40;
	CHECK(pwrite(fd, &b, 1, at) == 1);
	close(fd);
}

static void test_corrupt_byte_is_a_miss(void)
{
	struct kj__cache *c;
	struct kj__cache_entry e;
	char path[512], key[65];
	int64_t v;

	setup();
	c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 300), 0);
	obj_path(1, "gfx90a", path, sizeof path);
	flip_byte(path, 100);
	CHECK_EQ_INT(lookup(c, 1, 300), KJIT_ENOENT);
	make_key(1, key);
	CHECK(strstr(logged(), "corrupt (digest mismatch); dropped, will recompile") != NULL);
	CHECK(strstr(logged(), key) != NULL);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), KJIT_ENOENT);
	CHECK(!exists(path));
	CHECK_EQ_INT(kj__cache_counter_get(c, "corrupt", &v), 0);
	CHECK_EQ_INT(v, 1);
	/* a file of the wrong size, too */
	CHECK_EQ_INT(publish(c, 2, "gfx90a", 300), 0);
	obj_path(2, "gfx90a", path, sizeof path);
	CHECK(truncate(path, 299) == 0);
	CHECK_EQ_INT(lookup(c, 2, 300), KJIT_ENOENT);
	CHECK(!exists(path));
	CHECK_EQ_INT(consistent(c), 0);
	kj__cache_close(c);
	/* and the row stays gone after a restart */
	c = open_cache();
	CHECK_EQ_INT(lookup(c, 1, 300), KJIT_ENOENT);
	CHECK_EQ_INT(consistent(c), 0);
	kj__cache_close(c);
	cleanup();
}

static void test_deleted_file_is_a_miss(void)
{
	struct kj__cache *c;
	char path[512];

	setup();
	c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "sm_90", 64), 0);
	obj_path(1, "sm_90", path, sizeof path);
	CHECK(unlink(path) == 0);
	CHECK_EQ_INT(lookup(c, 1, 64), KJIT_ENOENT);
	CHECK(strstr(logged(), "missing") != NULL);
	CHECK_EQ_INT(consistent(c), 0);
	CHECK_EQ_INT(publish(c, 1, "sm_90", 64), 0); /* recompiled */
	CHECK_EQ_INT(lookup(c, 1, 64), 0);
	kj__cache_close(c);
	cleanup();
}

static void test_truncated_index_is_rebuilt(void)
{
	struct kj__cache *c;
	char path[512];
	struct stat st;

	setup();
	c = open_cache();
	for (int i = 0; i < 50; i++)
		CHECK_EQ_INT(publish(c, i, "gfx90a", 2000), 0);
	kj__cache_close(c);
	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK(stat(path, &st) == 0);
	CHECK(truncate(path, st.st_size / 2 + 100) == 0);
	c = open_cache();
	CHECK(strstr(logged(), "moved aside") != NULL);
	CHECK_EQ_INT(lookup(c, 1, 2000), KJIT_ENOENT);
	CHECK_EQ_INT(consistent(c), 0);
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 2000), 0);
	CHECK_EQ_INT(lookup(c, 1, 2000), 0);
	/* the old objects have no rows: gc removes them */
	uint64_t ev;
	CHECK_EQ_INT(kj__cache_gc(c, 0, &ev, NULL), 0);
	CHECK_EQ_INT(ev, 0);
	char obj[512];
	obj_path(2, "gfx90a", obj, sizeof obj);
	CHECK(!exists(obj));
	kj__cache_close(c);
	/* garbage that is not a database at all */
	int fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	CHECK(write(fd, "this is not sqlite, just some bytes", 35) == 35);
	close(fd);
	c = open_cache();
	CHECK_EQ_INT(lookup(c, 1, 2000), KJIT_ENOENT);
	kj__cache_close(c);
	cleanup();
}

static void test_gc_keeps_most_recently_used(void)
{
	struct kj__cache *c;
	uint64_t ev = 0, freed = 0;
	int64_t v;

	setup();
	c = open_fs(NULL, 350);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(publish(c, i, "gfx90a", 100), 0);
	CHECK_EQ_INT(lookup(c, 0, 100), 0);  /* 0 is now the most recent */
	CHECK_EQ_INT(lookup(c, 2, 100), 0);  /* then 2 */
	CHECK_EQ_INT(kj__cache_gc(c, 0, &ev, &freed), 0);
	CHECK_EQ_INT(ev, 2);
	CHECK_EQ_INT(freed, 200);
	CHECK_EQ_INT(lookup(c, 1, 100), KJIT_ENOENT);
	CHECK_EQ_INT(lookup(c, 3, 100), KJIT_ENOENT);
	CHECK_EQ_INT(lookup(c, 4, 100), 0);
	CHECK_EQ_INT(lookup(c, 0, 100), 0);
	CHECK_EQ_INT(lookup(c, 2, 100), 0);
	CHECK_EQ_INT(kj__cache_counter_get(c, "evictions", &v), 0);
	CHECK_EQ_INT(v, 2);
	/* an explicit cap overrides; the order survives a restart */
	kj__cache_close(c);
	c = open_fs(NULL, 350);
	CHECK_EQ_INT(kj__cache_gc(c, 150, &ev, NULL), 0);
	CHECK_EQ_INT(ev, 2);
	CHECK_EQ_INT(lookup(c, 2, 100), 0);
	CHECK_EQ_INT(consistent(c), 1);
	kj__cache_close(c);
	cleanup();
}

static int collect(const struct kj__cache_entry *e, void *arg)
{
	char *s = arg;
	strcat(s, e->key + 63); /* last hex digit: enough to see the order */
	return 0;
}

static int stop_at_first(const struct kj__cache_entry *e, void *arg)
{
	(*(int *)arg)++;
	return 7;
}

static void test_foreach_order_and_filter(void)
{
	struct kj__cache *c;
	char order[16] = "", want[16] = "", key[65];
	int calls = 0;

	setup();
	c = open_cache();
	CHECK_EQ_INT(publish(c, 0, "a", 10), 0);
	CHECK_EQ_INT(publish(c, 1, "b", 10), 0);
	CHECK_EQ_INT(publish(c, 2, "a", 10), 0);
	CHECK_EQ_INT(lookup(c, 0, 10), 0);
	/* most recent first: 0, 2, 1 */
	int ord[] = { 0, 2, 1 };
	for (int i = 0; i < 3; i++) {
		make_key(ord[i], key);
		strcat(want, key + 63);
	}
	CHECK_EQ_INT(kj__cache_foreach(c, NULL, collect, order), 0);
	CHECK_EQ_STR(order, want);
	order[0] = '\0';
	CHECK_EQ_INT(kj__cache_foreach(c, "b", collect, order), 0);
	make_key(1, key);
	CHECK_EQ_STR(order, key + 63);
	CHECK_EQ_INT(kj__cache_foreach(c, NULL, stop_at_first, &calls), 7);
	CHECK_EQ_INT(calls, 1);
	kj__cache_close(c);
	cleanup();
}

struct seen {
	int n;
	char why[64];
};

static void on_bad(const struct kj__cache_entry *e, const char *why, void *arg)
{
	struct seen *s = arg;
	s->n++;
	snprintf(s->why, sizeof s->why, "%s", why);
}

/* The steps of a job (job.c) with the cache used between run and finish,
 * as kjitd's loop does while a thread runs: an entry used since gc began
 * is not evicted; an object published again after verify found it
 * corrupt is not dropped; a file published between a sweep's listing and
 * its finish stays; an entry published again while clear deleted it goes
 * (a miss), never served wrong. */
static void test_job_steps_recheck(void)
{
	struct kj__cache *c;
	struct kj__cache_job *j = NULL;
	struct kj__cache_job_result res;
	char path[512];

	setup();
	c = open_fs(NULL, 350);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(publish(c, i, "gfx90a", 100), 0);
	/* gc: 0 and 1 are the least recently used; 0 is used after begin */
	CHECK_EQ_INT(kj__cache_job_begin(c, KJ_CACHE_JOB_GC, 0, NULL, &j), 0);
	kj__cache_job_run(j);
	CHECK_EQ_INT(lookup(c, 0, 100), 0);
	int r = kj__cache_job_finish(j, NULL, NULL);
	CHECK_EQ_INT(r, 1); /* the deletions come next */
	kj__cache_job_run(j);
	CHECK_EQ_INT(kj__cache_job_finish(j, NULL, NULL), 0);
	kj__cache_job_result(j, &res);
	kj__cache_job_free(j);
	CHECK_EQ_INT(res.evicted, 1);
	CHECK_EQ_INT(lookup(c, 0, 100), 0);
	CHECK_EQ_INT(lookup(c, 1, 100), KJIT_ENOENT);
	CHECK_EQ_INT(consistent(c), 4);
	/* verify: 2 corrupt when run looks, published again before finish */
	obj_path(2, "gfx90a", path, sizeof path);
	flip_byte(path, 0);
	CHECK_EQ_INT(kj__cache_job_begin(c, KJ_CACHE_JOB_VERIFY, 0, NULL, &j), 0);
	kj__cache_job_run(j);
	CHECK_EQ_INT(unlink(path), 0);
	CHECK_EQ_INT(publish(c, 2, "gfx90a", 100), 0);
	CHECK_EQ_INT(publish(c, 6, "gfx90a", 100), 0); /* not listed, not swept */
	CHECK_EQ_INT(kj__cache_job_finish(j, NULL, NULL), 0);
	kj__cache_job_result(j, &res);
	kj__cache_job_free(j);
	CHECK_EQ_INT(res.checked, 4);
	CHECK_EQ_INT(res.bad, 0);
	CHECK_EQ_INT(lookup(c, 2, 100), 0);
	CHECK_EQ_INT(lookup(c, 6, 100), 0);
	/* clear: 3 published again while its row and file are deleted */
	CHECK_EQ_INT(kj__cache_job_begin(c, KJ_CACHE_JOB_CLEAR, 0, NULL, &j), 0);
	CHECK_EQ_INT(lookup(c, 3, 100), KJIT_ENOENT); /* out of the table at begin */
	CHECK_EQ_INT(publish(c, 3, "gfx90a", 100), 0);
	kj__cache_job_run(j);
	CHECK_EQ_INT(kj__cache_job_finish(j, NULL, NULL), 0);
	kj__cache_job_result(j, &res);
	kj__cache_job_free(j);
	CHECK_EQ_INT(res.removed, 5);
	CHECK_EQ_INT(res.redropped, 1);
	CHECK_EQ_INT(lookup(c, 3, 100), KJIT_ENOENT);
	CHECK_EQ_INT(consistent(c), 0);
	kj__cache_close(c);
	cleanup();
}

static void test_verify_finds_corruption(void)
{
	struct kj__cache *c;
	struct seen s = { 0 };
	uint64_t checked = 0, bad = 0;
	char path[512], orphan[512], tmp[600];

	setup();
	c = open_cache();
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(publish(c, i, "gfx90a", 200), 0);
	obj_path(2, "gfx90a", path, sizeof path);
	flip_byte(path, 0);
	/* a file without a row and a leftover temporary file */
	obj_path(7, "gfx90a", orphan, sizeof orphan);
	FILE *f = fopen(orphan, "w");
	CHECK(f && fclose(f) == 0);
	snprintf(tmp, sizeof tmp, "%s.tmp.1.1", orphan);
	f = fopen(tmp, "w");
	CHECK(f && fclose(f) == 0);
	CHECK_EQ_INT(kj__cache_verify(c, on_bad, &s, &checked, &bad), 0);
	CHECK_EQ_INT(checked, 4);
	CHECK_EQ_INT(bad, 1);
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_STR(s.why, "digest mismatch");
	CHECK(!exists(path) && !exists(orphan) && !exists(tmp));
	CHECK_EQ_INT(lookup(c, 2, 200), KJIT_ENOENT);
	CHECK_EQ_INT(consistent(c), 3);
	CHECK_EQ_INT(kj__cache_verify(c, NULL, NULL, &checked, &bad), 0);
	CHECK_EQ_INT(checked, 3);
	CHECK_EQ_INT(bad, 0);
	kj__cache_close(c);
	cleanup();
}

static void test_clear_by_target(void)
{
	struct kj__cache *c;
	uint64_t n = 0;
	struct kj__cache_totals t;

	setup();
	c = open_cache();
	for (int i = 0; i < 6; i++)
		CHECK_EQ_INT(publish(c, i, i % 2 ? "gfx1030" : "gfx90a", 50), 0);
	CHECK_EQ_INT(lookup(c, 0, 50), 0);
	CHECK_EQ_INT(kj__cache_clear(c, "gfx90a", &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK_EQ_INT(t.entries, 3);
	CHECK_EQ_INT(t.bytes, 150);
	CHECK_EQ_INT(lookup(c, 0, 50), KJIT_ENOENT);
	CHECK_EQ_INT(lookup(c, 1, 50), 0);
	CHECK_EQ_INT(consistent(c), 3);
	CHECK_EQ_INT(kj__cache_flush(c), 0);
	CHECK_EQ_INT(kj__cache_clear(c, NULL, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(consistent(c), 0);
	kj__cache_close(c);
	c = open_cache();
	CHECK_EQ_INT(consistent(c), 0);
	kj__cache_close(c);
	cleanup();
}

static void test_counters_persist(void)
{
	struct kj__cache *c;
	int64_t v = -1;

	setup();
	c = open_cache();
	CHECK_EQ_INT(kj__cache_counter_get(c, "hits", &v), 0);
	CHECK_EQ_INT(v, 0);
	CHECK_EQ_INT(kj__cache_counter_add(c, "hits", 5), 0);
	CHECK_EQ_INT(kj__cache_counter_add(c, "hits", 2), 0);
	CHECK_EQ_INT(kj__cache_counter_add(c, "misses", 1), 0);
	kj__cache_close(c);
	c = open_cache();
	CHECK_EQ_INT(kj__cache_counter_get(c, "hits", &v), 0);
	CHECK_EQ_INT(v, 7);
	CHECK_EQ_INT(kj__cache_counter_get(c, "misses", &v), 0);
	CHECK_EQ_INT(v, 1);
	kj__cache_close(c);
	cleanup();
}

/* A temporary left by a writer that died (killed mid-publish) is removed by
 * the next open, which knows of the death by the missing clean marker. */
static void test_stale_tmp_removed_at_open(void)
{
	struct kj__cache *c;
	char path[512], tmp[600], other[512];

	setup();
	c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 10), 0);
	kj__cache_close(c);
	/* As after a crash: no clean marker (a clean close leaves no temporaries). */
	snprintf(tmp, sizeof tmp, "%s/clean", dir);
	CHECK(unlink(tmp) == 0);
	obj_path(1, "gfx90a", path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.tmp.99.3", path);
	snprintf(other, sizeof other, "%s/gfx90a-6.0/README", dir);
	FILE *f = fopen(tmp, "w");
	CHECK(f && fclose(f) == 0);
	f = fopen(other, "w");
	CHECK(f && fclose(f) == 0);
	c = open_cache();
	CHECK(!exists(tmp));
	CHECK(exists(other)); /* not ours: left alone */
	CHECK_EQ_INT(lookup(c, 1, 10), 0);
	kj__cache_close(c);
	cleanup();
}

/* ---- fault injection ---------------------------------------------------- */

enum fault { F_ENOSPC, F_EIO, F_EMFILE, F_SHORT, F_COUNT };
static int fault_at, fault_calls;
static enum fault fault_kind;

/* 1 if this call should fail (errno set). */
static int fault(int is_write)
{
	if (fault_at == 0 || ++fault_calls != fault_at)
		return 0;
	if (fault_kind == F_SHORT)
		return is_write ? 2 : 0;
	errno = fault_kind == F_ENOSPC ? ENOSPC : fault_kind == F_EIO ? EIO : EMFILE;
	return 1;
}

static int f_open(const char *p, int fl, mode_t m)
{
	return fault(0) ? -1 : kj__fsys_default.open(p, fl, m);
}
static ssize_t f_read(int fd, void *p, size_t n)
{
	return fault(0) ? -1 : kj__fsys_default.read(fd, p, n);
}
static ssize_t f_write(int fd, const void *p, size_t n)
{
	int f = fault(1);
	if (f == 2)
		return kj__fsys_default.write(fd, p, n > 1 ? n / 2 : n);
	return f ? -1 : kj__fsys_default.write(fd, p, n);
}
static int f_fsync(int fd)
{
	return fault(0) ? -1 : kj__fsys_default.fsync(fd);
}
static int f_close(int fd)
{
	if (fault(0)) {
		int e = errno;
		kj__fsys_default.close(fd); /* as Linux: the descriptor is gone anyway */
		errno = e;
		return -1;
	}
	return kj__fsys_default.close(fd);
}
static int f_rename(const char *a, const char *b)
{
	return fault(0) ? -1 : kj__fsys_default.rename(a, b);
}
static int f_unlink(const char *p)
{
	return fault(0) ? -1 : kj__fsys_default.unlink(p);
}
static int f_mkdir(const char *p, mode_t m)
{
	return fault(0) ? -1 : kj__fsys_default.mkdir(p, m);
}
static int f_fstat(int fd, struct stat *st)
{
	return fault(0) ? -1 : kj__fsys_default.fstat(fd, st);
}

static int f_stat(const char *p, struct stat *st)
{
	return fault(0) ? -1 : kj__fsys_default.stat(p, st);
}

static int f_lstat(const char *p, struct stat *st)
{
	return fault(0) ? -1 : kj__fsys_default.lstat(p, st);
}

static const struct kj__fsys faulty = {
	f_open, f_read, f_write, f_fsync, f_close, f_rename, f_unlink, f_mkdir, f_fstat, f_stat, f_lstat,
};

/* Counts the calls the cache makes, by kind, without failing any. */
static unsigned n_open, n_stat;
static int c_open(const char *p, int fl, mode_t m)
{
	n_open++;
	return kj__fsys_default.open(p, fl, m);
}
static int c_stat(const char *p, struct stat *st)
{
	n_stat++;
	return kj__fsys_default.stat(p, st);
}

/* A second hit comes from memory (one stat, no open), until the file
 * changes under it: then it is read and verified again, and a same-size
 * corruption is still caught. */
static void test_hot_set(void)
{
	struct kj__fsys fs = kj__fsys_default;
	struct kj__cache *c;
	char key[65], path[400];

	fs.open = c_open;
	fs.stat = c_stat;
	setup();
	c = open_fs(&fs, 0);
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 3000), 0);
	n_open = n_stat = 0;
	CHECK_EQ_INT(lookup(c, 1, 3000), 0);
	CHECK_EQ_INT(lookup(c, 1, 3000), 0);
	CHECK_EQ_INT(n_open, 0); /* published bytes were kept hot */
	CHECK_EQ_INT(n_stat, 2);
	make_key(1, key);
	snprintf(path, sizeof path, "%s/gfx90a-6.0/%s.hsaco", dir, key);
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "XY", 2, 100) == 2 && close(fd) == 0);
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 2000000000, 0 } };
	CHECK(utimensat(AT_FDCWD, path, later, 0) == 0); /* as a later write would */
	CHECK_EQ_INT(lookup(c, 1, 3000), KJIT_ENOENT);  /* re-read, digest mismatch, dropped */
	CHECK(strstr(logged(), "corrupt") != NULL);
	kj__cache_close(c);
	cleanup();
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	CHECK(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_faults_during_publish(void)
{
	struct kj__cache *c;
	int obj = 100, runs = 0, fds;

	setup();
	c = open_fs(&faulty, 0);
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 3000), 0);
	fds = open_fds();
	for (int kind = 0; kind < F_COUNT; kind++) {
		for (int n = 1;; n++) {
			/* a new object in a new directory, and a republish */
			const char *target = n % 2 ? "gfx90a" : "gfx1100";
			int i = n % 3 ? obj++ : 1;
			fault_kind = (enum fault)kind;
			fault_calls = 0;
			fault_at = n;
			errno = 0;
			int r = publish(c, i, target, 3000);
			int err = errno, hit_fault = fault_calls >= n;
			fault_at = 0;
			runs++;
			if (r < 0) {
				CHECK(hit_fault);
				CHECK_EQ_INT(r, KJIT_EIO);
				CHECK_EQ_INT(err, kind == F_ENOSPC ? ENOSPC : kind == F_EIO ? EIO : EMFILE);
				if (i != 1)
					CHECK_EQ_INT(lookup(c, i, 3000), KJIT_ENOENT);
			} else {
				CHECK_EQ_INT(lookup(c, i, 3000), 0);
			}
			CHECK_EQ_INT(lookup(c, 1, 3000), 0);
			consistent(c);
			CHECK_EQ_INT(open_fds(), fds);
			if (!hit_fault)
				break;
		}
	}
	CHECK(runs > 4 * 8);
	kj__cache_close(c);
	/* and everything is still there after a restart */
	c = open_cache();
	consistent(c);
	CHECK_EQ_INT(lookup(c, 1, 3000), 0);
	kj__cache_close(c);
	cleanup();
}

static void test_faults_during_lookup(void)
{
	struct kj__cache *c;

	setup();
	c = open_fs(&faulty, 0);
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 3000), 0);
	for (int kind = 0; kind < F_COUNT; kind++) {
		for (int n = 1;; n++) {
			fault_kind = (enum fault)kind;
			fault_calls = 0;
			fault_at = n;
			int r = lookup(c, 1, 3000);
			int hit_fault = fault_calls >= n;
			fault_at = 0;
			/* an I/O error is not corruption: the object stays */
			CHECK(r == 0 || r == KJIT_EIO);
			CHECK_EQ_INT(lookup(c, 1, 3000), 0);
			if (!hit_fault)
				break;
		}
	}
	consistent(c);
	kj__cache_close(c);
	cleanup();
}

static void test_faults_during_open(void)
{
	for (int kind = 0; kind < F_COUNT; kind++) {
		for (int n = 1;; n++) {
			struct kj__cache_options o = { .fs = &faulty };
			struct kj__cache *c = NULL;
			setup();
			o.log = logfp;
			fault_kind = (enum fault)kind;
			fault_calls = 0;
			fault_at = n;
			int r = kj__cache_open(&c, dir, &o);
			int hit_fault = fault_calls >= n;
			fault_at = 0;
			CHECK(r == 0 || r == KJIT_EIO);
			CHECK((r == 0) == (c != NULL));
			kj__cache_close(c);
			if (!hit_fault)
				break;
		}
	}
	cleanup();
}

/* ---- allocation failure -------------------------------------------------- */

static const struct kj__cache_alloc oom_alloc = { o_malloc, o_calloc, o_realloc, o_free };

#define OOM_OBJECTS 6
static size_t oom_size(int i)
{
	return 300 + (size_t)i;
}

/* One lookup that gives its buffer back to the counting allocator. */
static int oom_lookup(struct kj__cache *c, int i)
{
	char key[65];
	uint8_t *data = NULL, want[4096];
	size_t len = 0;

	make_key(i, key);
	int r = kj__cache_lookup(c, key, &data, &len, NULL);
	if (r == 0) {
		make_obj(i, want, oom_size(i));
		CHECK_EQ_INT(len, oom_size(i));
		CHECK(memcmp(data, want, len) == 0);
	} else {
		CHECK(data == NULL);
	}
	o_free(data);
	return r;
}

/* The sequence the loop runs with the n-th allocation failing: open a
 * cache that holds objects 1 and 2, publish 3..5 (5 to a new target),
 * look everything up twice (from disk, then from the hot set), peek, gc
 * below the total, verify, close.  Every call either works or says
 * KJIT_ENOMEM; an object whose publish failed is absent.  ok[i] says
 * which publishes worked.  Returns 1 if the failure was reached. */
static int oom_sequence(long n, int ok[OOM_OBJECTS])
{
	struct kj__cache_options o = { .alloc = &oom_alloc, .log = logfp };
	struct kj__cache *c = NULL;
	char key[65];
	const uint8_t *hot;
	size_t len;
	uint32_t ms;
	uint64_t ev, checked, bad;
	int r;

	oom_calls = 0;
	oom_live = 0;
	oom_at = n;
	r = kj__cache_open(&c, dir, &o);
	CHECK(r == 0 || r == KJIT_ENOMEM);
	CHECK((r == 0) == (c != NULL));
	for (int i = 3; c && i < OOM_OBJECTS; i++) {
		r = publish(c, i, i == 5 ? "gfx942" : "gfx90a", oom_size(i));
		CHECK(r == 0 || r == KJIT_ENOMEM);
		ok[i] = r == 0;
	}
	for (int pass = 0; c && pass < 2; pass++) {
		for (int i = 1; i < OOM_OBJECTS; i++) {
			r = oom_lookup(c, i);
			CHECK(r == 0 || r == KJIT_ENOMEM || (r == KJIT_ENOENT && !ok[i]));
		}
	}
	if (c) {
		make_key(1, key);
		r = kj__cache_peek(c, key, &hot, &len, &ms);
		CHECK(r == 0 || r == KJIT_ENOMEM || r == KJIT_ENOENT);
		r = kj__cache_gc(c, 4 * 310, &ev, NULL);
		CHECK(r == 0 || r == KJIT_ENOMEM);
		r = kj__cache_verify(c, NULL, NULL, &checked, &bad);
		CHECK(r == 0 || r == KJIT_ENOMEM);
		CHECK_EQ_INT(bad, 0);
		kj__cache_close(c);
	}
	int reached = oom_calls >= n;
	oom_at = 0;
	CHECK_EQ_INT(oom_live, 0); /* nothing leaked, whatever failed */
	return reached;
}

/* SQLite's out-of-memory loop: for n = 1, 2, ... fail the n-th allocation
 * of oom_sequence, then reopen with the real allocator and check the
 * cache is consistent; stop after the first run that reached no failure
 * (it must then have done everything). */
static void test_out_of_memory(void)
{
	int runs = 0, reached;

	for (long n = 1;; n++) {
		int ok[OOM_OBJECTS] = { 0, 1, 1 };
		struct kj__cache *c;
		setup();
		c = open_cache();
		CHECK_EQ_INT(publish(c, 1, "gfx90a", oom_size(1)), 0);
		CHECK_EQ_INT(publish(c, 2, "gfx1100", oom_size(2)), 0);
		kj__cache_close(c);
		reached = oom_sequence(n, ok);
		runs++;
		c = open_cache();
		uint64_t left = consistent(c);
		for (int i = 1; i < OOM_OBJECTS; i++) {
			int r = lookup(c, i, oom_size(i));
			CHECK(r == 0 || r == KJIT_ENOENT); /* gc may have evicted it */
			if (!ok[i])
				CHECK_EQ_INT(r, KJIT_ENOENT);
		}
		kj__cache_close(c);
		if (!reached) {
			for (int i = 1; i < OOM_OBJECTS; i++)
				CHECK(ok[i]);
			CHECK(left >= 1 && left < OOM_OBJECTS - 1); /* the gc ran */
			break;
		}
	}
	CHECK(runs > 20);
	cleanup();
}

static void test_ten_thousand_entries(void)
{
	struct kj__cache *c;
	struct kj__cache_totals t;

	setup();
	c = open_cache();
	for (int i = 0; i < 10000; i++)
		CHECK_EQ_INT(publish(c, i, "gfx90a", 16 + i % 7), 0);
	kj__cache_close(c);
	c = open_cache();
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK_EQ_INT(t.entries, 10000);
	CHECK_EQ_INT(lookup(c, 4321, 16 + 4321 % 7), 0);
	CHECK_EQ_INT(lookup(c, 10000, 16), KJIT_ENOENT);
	/* the table survives many removals (backward-shift deletion) */
	uint64_t ev;
	CHECK_EQ_INT(kj__cache_gc(c, 5000 * 19, &ev, NULL), 0);
	CHECK(ev > 4000);
	CHECK_EQ_INT(kj__cache_totals(c, &t), 0);
	CHECK_EQ_INT(t.entries, 10000 - ev);
	int hits = 0;
	for (int i = 0; i < 10000; i++)
		hits += lookup(c, i, 16 + i % 7) == 0;
	CHECK_EQ_INT(hits, t.entries);
	kj__cache_close(c);
	cleanup();
}

/* ---- issue 16: modes, loose or symlinked directories, who requested what ---- */

static int count_row(const struct kj__cache_entry *e, void *arg)
{
	(void)e;
	(*(int *)arg)++;
	return 0;
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	CHECK(lstat(path, &st) == 0);
	return st.st_mode & 07777;
}

/* A per-user cache is 0700 and its files 0600 (whatever the umask lets
 * through beyond that); a system cache's group may read. */
static void test_modes(void)
{
	char path[512], key[65];
	mode_t old = umask(022);

	setup();
	struct kj__cache *c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 100), 0);
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_recipe_store(c, key, key, (const uint8_t *)"recipe", 6), 0);
	kj__cache_close(c);
	CHECK_EQ_INT(mode_of(dir), 0700);
	snprintf(path, sizeof path, "%s/gfx90a-6.0", dir);
	CHECK_EQ_INT(mode_of(path), 0700);
	obj_path(1, "gfx90a", path, sizeof path);
	CHECK_EQ_INT(mode_of(path), 0600);
	const char *files[] = { "lock", "index.sqlite", "clean", "recipes" };
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		CHECK_EQ_INT(mode_of(path), i == 3 ? 0700 : 0600);
	}
	snprintf(path, sizeof path, "%s/recipes/%s.req", dir, key);
	CHECK_EQ_INT(mode_of(path), 0600);

	/* an existing 0755 cache (older kjit) is tightened at open */
	CHECK(chmod(dir, 0755) == 0);
	c = open_cache();
	kj__cache_close(c);
	CHECK_EQ_INT(mode_of(dir), 0700);
	CHECK(strstr(logged(), "tightened") != NULL);

	/* the system cache's policy: group reads, nobody else */
	setup();
	struct kj__cache_options o = { .log = logfp, .dir_mode = 0750, .file_mode = 0640 };
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), 0);
	CHECK_EQ_INT(publish(c, 2, "gfx90a", 100), 0);
	kj__cache_close(c);
	CHECK_EQ_INT(mode_of(dir), 0750);
	obj_path(2, "gfx90a", path, sizeof path);
	CHECK_EQ_INT(mode_of(path), 0640);
	umask(old);
	cleanup();
}

/* A cache directory others may write, or owned by another user, is
 * refused with one line, as ssh refuses a loose ~/.ssh. */
static void test_loose_dir_refused(void)
{
	struct kj__cache_options o = { .log = logfp };
	struct kj__cache *c = NULL;

	setup();
	o.log = logfp;
	CHECK(mkdir(dir, 0777) == 0 && chmod(dir, 0777) == 0);
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), KJIT_EDENIED);
	CHECK(c == NULL);
	CHECK(strstr(logged(), "writable by its group or others") != NULL);
	CHECK(chmod(dir, 0770) == 0);
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), KJIT_EDENIED);
	CHECK(chmod(dir, 0700) == 0);
	if (geteuid() == 0) { /* only root can give a directory away */
		CHECK(chown(dir, 4242, 4242) == 0);
		CHECK_EQ_INT(kj__cache_open(&c, dir, &o), KJIT_EDENIED);
		CHECK(strstr(logged(), "owned by uid 4242") != NULL);
		CHECK(chown(dir, 0, 0) == 0);
	}
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), 0);
	kj__cache_close(c);
	cleanup();
}

/* An object directory or recipes/ replaced by a symlink is refused: no
 * byte is written where it points, and nothing there is removed. */
static void test_symlinked_subdir_refused(void)
{
	char path[512], elsewhere[512], key[65];

	setup();
	struct kj__cache *c = open_cache();
	snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", root);
	CHECK(mkdir(elsewhere, 0700) == 0);
	snprintf(path, sizeof path, "%s/gfx90a-6.0", dir);
	CHECK(symlink(elsewhere, path) == 0);
	CHECK(publish(c, 1, "gfx90a", 100) < 0);
	CHECK(strstr(logged(), "a symlink where kjitd keeps a directory") != NULL);
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_recipe_store(c, key, key, (const uint8_t *)"r", 1) < 0, 0); /* recipes/ is fine */
	snprintf(path, sizeof path, "%s/recipes", dir);
	char moved[512];
	snprintf(moved, sizeof moved, "%s/recipes.real", dir);
	CHECK(rename(path, moved) == 0);
	CHECK(symlink(elsewhere, path) == 0);
	make_key(2, key);
	CHECK(kj__cache_recipe_store(c, key, key, (const uint8_t *)"r", 1) < 0);
	uint8_t *body = NULL;
	size_t len = 0;
	CHECK(kj__cache_recipe_load(c, key, &body, &len) < 0);
	free(body);
	/* an object published before its directory was swapped: the lookup
	 * is a miss and the file where the link points stays */
	CHECK_EQ_INT(publish(c, 3, "gfx1100", 100), 0);
	snprintf(path, sizeof path, "%s/gfx1100-6.0", dir);
	snprintf(moved, sizeof moved, "%s/gfx1100.real", dir);
	CHECK(rename(path, moved) == 0);
	char planted[600];
	make_key(3, key);
	snprintf(planted, sizeof planted, "%s/%s.hsaco", elsewhere, key);
	int fd = open(planted, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0 && close(fd) == 0);
	CHECK(symlink(elsewhere, path) == 0);
	CHECK_EQ_INT(kj__cache_verify(c, NULL, NULL, NULL, NULL), 0);
	CHECK(exists(planted));
	kj__cache_close(c);
	DIR *d = opendir(elsewhere);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d)) != NULL;)
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	CHECK_EQ_INT(n, 1); /* only what the test planted */
	cleanup();
}

/* Who requested each object (schema 2), and the migration of a version 1
 * index: its objects go to the cache directory's owner. */
static void test_requesters_and_migration(void)
{
	char key[65], path[512];
	int n;

	setup();
	struct kj__cache *c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 100), 0);
	CHECK_EQ_INT(publish(c, 2, "gfx90a", 100), 0);
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_note_user(c, key, 1001), 0);
	CHECK_EQ_INT(kj__cache_note_user(c, key, 1001), 0); /* idempotent */
	CHECK_EQ_INT(kj__cache_requested_by(c, key, 1001), 1);
	CHECK_EQ_INT(kj__cache_requested_by(c, key, 1002), 0);
	n = 0;
	CHECK_EQ_INT(kj__cache_foreach_of(c, NULL, 1001, count_row, &n), 0);
	CHECK_EQ_INT(n, 1);
	n = 0;
	CHECK_EQ_INT(kj__cache_foreach(c, NULL, count_row, &n), 0);
	CHECK_EQ_INT(n, 2);
	/* an entry gone takes its requesters with it */
	CHECK_EQ_INT(kj__cache_clear(c, NULL, NULL), 0);
	CHECK_EQ_INT(kj__cache_requested_by(c, key, 1001), 0);
	CHECK_EQ_INT(kj__cache_note_user(c, key, 1001), 0); /* no object: nothing noted */
	CHECK_EQ_INT(kj__cache_requested_by(c, key, 1001), 0);
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 100), 0);
	CHECK_EQ_INT(publish(c, 2, "gfx90a", 100), 0);
	kj__cache_close(c);

	/* back to schema 1, as an older kjit left it */
	sqlite3 *db;
	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_exec(db, "DROP TRIGGER object_uids_gone; DROP TABLE object_uids;"
				  " PRAGMA user_version=1;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	c = open_cache();
	n = 0;
	CHECK_EQ_INT(kj__cache_foreach_of(c, NULL, geteuid(), count_row, &n), 0);
	CHECK_EQ_INT(n, 2);
	n = 0;
	CHECK_EQ_INT(kj__cache_foreach_of(c, NULL, 1001, count_row, &n), 0);
	CHECK_EQ_INT(n, 0);
	kj__cache_close(c);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_column_int(st, 0), 6); /* and on to the current schema */
	sqlite3_finalize(st);
	sqlite3_close(db);
	cleanup();
}

/* The lowered names have a column of their own (schema 3), through the
 * cache API; an index of schema 2 (lowered names as lines of the log)
 * opens, keeps its entries and moves those lines into the column. */
static void test_lowered_column_and_schema2(void)
{
	char key[65], path[512];
	struct kj__cache_entry e;
	sqlite3 *db;
	sqlite3_stmt *st;

	setup();
	struct kj__cache *c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 100), 0);
	CHECK_EQ_INT(publish(c, 2, "gfx90a", 100), 0);
	struct kj__cache_entry w = { .backend = KJIT_BACKEND_CUDA, .target = "sm_90", .version = "13.0", .ext = "cubin",
				     .log = "warning: w\n", .lowered = "scale<float, 4>\t_Z5scaleIfLi4EEvPT_S0_i\n" };
	uint8_t obj[64];
	make_obj(3, obj, sizeof obj);
	make_key(3, w.key);
	CHECK_EQ_INT(kj__cache_publish(c, &w, obj, sizeof obj), 0);
	CHECK_EQ_INT(kj__cache_get(c, w.key, &e), 0);
	CHECK(e.lowered && strcmp(e.lowered, w.lowered) == 0);
	CHECK(e.log && strcmp(e.log, "warning: w\n") == 0);
	kj__cache_entry_free(&e);
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), 0);
	CHECK(e.lowered == NULL);
	kj__cache_entry_free(&e);
	kj__cache_close(c);

	/* back to schema 2, as kjit before the column left it: lowered
	 * names as lines of entry 1's log */
	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	char sql[512];
	snprintf(sql, sizeof sql, "UPDATE objects SET log = 'k.cu(3): warning: w' || char(10) ||"
		 " 'kjit: lowered name: scale<float, 4> = _Z5scaleIfLi4EEvPT_S0_i' || char(10) ||"
		 " 'kjit: lowered name: f<a = b> = _Z1fv' || char(10) WHERE key = '%s';"
		 " ALTER TABLE objects DROP COLUMN lowered; PRAGMA user_version=2;", key);
	CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	c = open_cache();
	CHECK_EQ_INT(lookup(c, 1, 100), 0);
	CHECK_EQ_INT(lookup(c, 2, 100), 0);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), 0);
	CHECK(e.log && strcmp(e.log, "k.cu(3): warning: w\n") == 0);
	CHECK(e.lowered && strcmp(e.lowered, "scale<float, 4>\t_Z5scaleIfLi4EEvPT_S0_i\nf<a = b>\t_Z1fv\n") == 0);
	CHECK_EQ_STR(e.source_name, "k.cu");
	kj__cache_entry_free(&e);
	make_key(2, key);
	CHECK_EQ_INT(kj__cache_get(c, key, &e), 0);
	CHECK(e.lowered == NULL && e.log && strcmp(e.log, "fine") == 0);
	kj__cache_entry_free(&e);
	CHECK_EQ_INT(kj__cache_get(c, w.key, &e), 0); /* the column's were lost with it: a plain entry */
	CHECK(e.lowered == NULL);
	kj__cache_entry_free(&e);
	kj__cache_close(c);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_column_int(st, 0), 6);
	sqlite3_finalize(st);
	sqlite3_close(db);
	/* a newer index than this kjit's is refused, not rebuilt */
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_exec(db, "PRAGMA user_version=1000", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct kj__cache_options o = { .log = logfp };
	c = NULL;
	CHECK_EQ_INT(kj__cache_open(&c, dir, &o), KJIT_EIO);
	CHECK(c == NULL);
	cleanup();
}

/* An upgrade to schema 3 that fails half-way (here a trigger refuses the
 * UPDATE that moves the lowered names) leaves the index at schema 2 as it
 * was: no column added, logs untouched; the open fails and a later one,
 * once nothing refuses, upgrades it. */
static void test_failed_upgrade_leaves_index(void)
{
	char key[65], path[512], sql[512];
	struct kj__cache_entry e;
	sqlite3 *db;
	sqlite3_stmt *st;

	setup();
	struct kj__cache *c = open_cache();
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 100), 0);
	kj__cache_close(c);
	make_key(1, key);
	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	snprintf(sql, sizeof sql, "UPDATE objects SET log = 'kjit: lowered name: f = _Z1fv' || char(10) WHERE key = '%s';"
		 " ALTER TABLE objects DROP COLUMN lowered; PRAGMA user_version=2;"
		 " CREATE TRIGGER no_update BEFORE UPDATE ON objects BEGIN SELECT RAISE(ABORT, 'refused'); END;", key);
	CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct kj__cache_options o = { .log = logfp };
	c = NULL;
	CHECK(kj__cache_open(&c, dir, &o) < 0);
	CHECK(c == NULL);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_column_int(st, 0), 2);
	sqlite3_finalize(st);
	st = NULL;
	CHECK(sqlite3_prepare_v2(db, "SELECT lowered FROM objects", -1, &st, NULL) != SQLITE_OK); /* no column */
	sqlite3_finalize(st);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "SELECT log FROM objects", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_STR((const char *)sqlite3_column_text(st, 0), "kjit: lowered name: f = _Z1fv\n");
	sqlite3_finalize(st);
	CHECK_EQ_INT(sqlite3_exec(db, "DROP TRIGGER no_update", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	c = open_cache();
	CHECK_EQ_INT(kj__cache_get(c, key, &e), 0);
	CHECK(e.lowered && strcmp(e.lowered, "f\t_Z1fv\n") == 0 && e.log == NULL);
	kj__cache_entry_free(&e);
	kj__cache_close(c);
	cleanup();
}

/* Schema 5: the entries column.  A publish keeps the object's list (get
 * and kj__cache_entries read it back); an index of schema 4 gets the column
 * empty (NULL: not known) with every entry kept and served, and
 * kj__cache_set_entries fills an empty list once, never replacing one. */
static void test_entries_column_and_schema4(void)
{
	char key[65], k2[65], path[512], *list = NULL;
	struct kj__cache_entry e;
	sqlite3 *db;
	sqlite3_stmt *st;

	setup();
	struct kj__cache *c = open_cache();
	struct kj__cache_entry w = { .backend = KJIT_BACKEND_CUDA, .target = "sm_90", .version = "13.0", .ext = "cubin",
				     .entries = "add\nrms_norm\n" };
	uint8_t obj[64];
	make_obj(3, obj, sizeof obj);
	make_key(3, w.key);
	CHECK_EQ_INT(kj__cache_publish(c, &w, obj, sizeof obj), 0);
	CHECK_EQ_INT(publish(c, 1, "gfx90a", 100), 0); /* no list */
	CHECK_EQ_INT(kj__cache_get(c, w.key, &e), 0);
	CHECK(e.entries && strcmp(e.entries, "add\nrms_norm\n") == 0);
	kj__cache_entry_free(&e);
	CHECK_EQ_INT(kj__cache_entries(c, w.key, &list), 0);
	CHECK(list && strcmp(list, "add\nrms_norm\n") == 0);
	free(list);
	make_key(1, key);
	CHECK_EQ_INT(kj__cache_entries(c, key, &list), 0);
	CHECK(list == NULL);
	make_key(9, k2);
	CHECK_EQ_INT(kj__cache_entries(c, k2, &list), KJIT_ENOENT);
	CHECK_EQ_INT(kj__cache_entries(c, "nothex", &list), KJIT_EINVAL);
	kj__cache_close(c);

	/* back to schema 4, as kjit before the column */
	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_exec(db, "ALTER TABLE objects DROP COLUMN entries; PRAGMA user_version=4;", NULL, NULL,
				  NULL), SQLITE_OK);
	sqlite3_close(db);
	c = open_cache();
	CHECK_EQ_INT(lookup(c, 1, 100), 0);
	CHECK_EQ_INT(kj__cache_entries(c, w.key, &list), 0);
	CHECK(list == NULL); /* not known: kjitd reads it from the object when it first needs it */
	CHECK_EQ_INT(kj__cache_set_entries(c, w.key, "add\n"), 0);
	CHECK_EQ_INT(kj__cache_set_entries(c, w.key, "other\n"), 0); /* a known list stays */
	CHECK_EQ_INT(kj__cache_entries(c, w.key, &list), 0);
	CHECK(list && strcmp(list, "add\n") == 0);
	free(list);
	CHECK_EQ_INT(kj__cache_set_entries(c, w.key, NULL), KJIT_EINVAL);
	kj__cache_close(c);
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_column_int(st, 0), 6);
	sqlite3_finalize(st);
	sqlite3_close(db);
	cleanup();
}

TEST_LIST(TEST(publish_lookup) TEST(entries_column_and_schema4) TEST(publish_rejects_bad_entries) TEST(restart_still_hits)
	  TEST(integrity_check_after_unclean_close) TEST(hot_set)
	  TEST(lock_same_process) TEST(lock_other_process) TEST(corrupt_byte_is_a_miss)
	  TEST(deleted_file_is_a_miss) TEST(truncated_index_is_rebuilt)
	  TEST(gc_keeps_most_recently_used) TEST(job_steps_recheck) TEST(foreach_order_and_filter)
	  TEST(verify_finds_corruption) TEST(clear_by_target) TEST(counters_persist)
	  TEST(stale_tmp_removed_at_open) TEST(faults_during_publish) TEST(faults_during_lookup)
	  TEST(faults_during_open) TEST(out_of_memory) TEST(ten_thousand_entries)
	  TEST(modes) TEST(loose_dir_refused) TEST(symlinked_subdir_refused) TEST(requesters_and_migration)
	  TEST(lowered_column_and_schema2)
	  TEST(failed_upgrade_leaves_index))
