/* test-memo.c: kj__memo_gather's proof that a bundled kernel's source still
 * holds the bytes that were hashed (daemon/miss/memo.c, issue 35).  A source
 * whose last change (ctime) settled more than a second before it was read,
 * and whose stat still equals the read's fstat, is proven by that stat alone
 * (not read again: 0.4 ms a MiB); anything else is read again and compared,
 * as before: a file edited after the read, its size and mtime put back, is
 * refused; so is one written moments before the read whose bytes changed.
 * The same proof lets kj__get_req_load_kernel serve a bundled kernel's
 * source from the text it kept at an earlier read (issue 35, round
 * thirteen): kept while proven, read again once the file changed or while
 * its change is too recent to prove. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "includes.h"
#include "kj_types.h"
#include "test.h"
#include "util.h"

/* Each test runs in its own process (test.h): its own folder. */
static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/kjit-test-memo.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

/* Reads path as load_kernel does into q; calls between(path) when not
 * NULL (a change after the read, before the gather); gathers; returns its
 * result. */
static int gather_after(const char *path, const char *hashed, void (*between)(const char *path))
{
	struct kj__get_req q = { 0 };
	struct kj__includes inc = { 0 };
	struct kj__memo_files f;
	uint8_t *data = NULL;
	size_t len = 0;
	static const uint8_t raw[] = "request bytes";

	CHECK(kj__read_file_st(path, 1 << 20, &data, &len, &q.kernel_st, &q.kernel_read_at) == 0);
	if (between)
		between(path);
	q.kernel_path = (char *)path;
	q.source = hashed ? (uint8_t *)hashed : data; /* what the key was computed from */
	q.source_len = hashed ? strlen(hashed) : len;
	int r = kj__memo_gather(raw, sizeof raw, &q, &inc, dir, NULL, &f);
	kj__memo_files_free(&f);
	free(data);
	return r;
}

static int gather(const char *path, const char *hashed)
{
	return gather_after(path, hashed, NULL);
}

static void test_settled_source_proven_by_stat(void)
{
	char path[96];
	make_dir();
	snprintf(path, sizeof path, "%s/settled.hip", dir);
	put(path, "kernel A\n");
	sleep(2); /* its ctime now settled well before the read below */
	/* The bytes handed in differ from the file's: gather cannot have read
	 * the file again, or it would refuse. */
	CHECK_EQ_INT(gather(path, "kernel B\n"), 0);
	CHECK(kj__rm_rf(dir) == 0);
}

static void test_fresh_source_read_again(void)
{
	char path[96];
	make_dir();
	snprintf(path, sizeof path, "%s/fresh.hip", dir);
	put(path, "kernel A\n");
	CHECK_EQ_INT(gather(path, NULL), 0);           /* the same bytes: kept */
	CHECK_EQ_INT(gather(path, "kernel B\n"), -1); /* written just now: read again, and it differs */
	CHECK(kj__rm_rf(dir) == 0);
}

/* The edit comes after the read, of a file settled long before it: only
 * the ctime tells the stat that proves a settled file (file_unchanged_since)
 * that it changed. */
static void edit_same_size_mtime_back(const char *path)
{
	struct stat st;
	CHECK(stat(path, &st) == 0);
	put(path, "kernel C\n"); /* same size, */
	struct timespec ts[2] = { st.st_atim, st.st_mtim };
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0); /* same mtime: only the ctime moved */
}

static void test_edit_with_mtime_put_back_refused(void)
{
	char path[96];
	make_dir();
	snprintf(path, sizeof path, "%s/edited.hip", dir);
	put(path, "kernel A\n");
	sleep(2);
	CHECK_EQ_INT(gather_after(path, NULL, edit_same_size_mtime_back), -1);
	CHECK(kj__rm_rf(dir) == 0);
}

/* A kernels folder with one kernel, k1.hip holding text; m loaded. */
static void kernels_with(struct kj__manifest *m, const char *text)
{
	char path[96], err[256];
	make_dir();
	snprintf(path, sizeof path, "%s/MANIFEST", dir);
	put(path, "k1 hip k1.hip main\n");
	snprintf(path, sizeof path, "%s/k1.hip", dir);
	put(path, text);
	CHECK_EQ_INT(kj__manifest_load(dir, m, err, sizeof err), 0);
}

/* q loaded as a GET for k1 is (its source as text, its proof's clock in *at). */
static void load_k1(struct kj__manifest *m, const char *text, struct timespec *at)
{
	struct kj__get_req q = { 0 };
	char err[256];

	q.kernel = kj__strdup("k1");
	q.backend = KJIT_BACKEND_HIP;
	CHECK_EQ_INT(kj__get_req_load_kernel(&q, m, dir, err, sizeof err), 0);
	CHECK(q.source_len == strlen(text) && memcmp(q.source, text, q.source_len) == 0 && q.source[q.source_len] == 0);
	*at = q.kernel_read_at;
	kj__get_req_clear(&q);
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static void test_kernel_text_kept_while_proven(void)
{
	struct kj__manifest m;
	struct timespec a, b, c;
	char path[96];

	kernels_with(&m, "kernel A\n");
	sleep(2);
	load_k1(&m, "kernel A\n", &a);
	load_k1(&m, "kernel A\n", &b);
	CHECK(same_time(&a, &b)); /* the kept text: no second read (its clock would be later) */
	CHECK(m.text_bytes == strlen("kernel A\n") + 1);
	snprintf(path, sizeof path, "%s/k1.hip", dir);
	edit_same_size_mtime_back(path); /* "kernel C", only the ctime moved */
	load_k1(&m, "kernel C\n", &c);
	CHECK(!same_time(&a, &c));
	CHECK(m.text_bytes == strlen("kernel C\n") + 1);
	kj__manifest_free(&m);
	CHECK(kj__rm_rf(dir) == 0);
}

static void test_kernel_text_fresh_read_again(void)
{
	struct kj__manifest m;
	struct timespec a, b;
	char path[96];

	kernels_with(&m, "kernel A\n");
	load_k1(&m, "kernel A\n", &a);
	load_k1(&m, "kernel A\n", &b);
	CHECK(!same_time(&a, &b)); /* written just now: not provable, read again */
	snprintf(path, sizeof path, "%s/k1.hip", dir);
	put(path, "kernel Z\n"); /* same size, at once */
	load_k1(&m, "kernel Z\n", &a);
	kj__manifest_free(&m);
	CHECK(kj__rm_rf(dir) == 0);
}

TEST_LIST(TEST(settled_source_proven_by_stat) TEST(fresh_source_read_again) TEST(edit_with_mtime_put_back_refused)
	  TEST(kernel_text_kept_while_proven) TEST(kernel_text_fresh_read_again))
