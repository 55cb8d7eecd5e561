/* test-quota.c: daemon/net/quota.c, the per-uid connection and byte limits,
 * on a daemon context built here (no loop, no socket). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon.h"
#include "kj_types.h"
#include "net-int.h"
#include "test.h"
#include "util.h"

/* Another uid than ours and root's: not privileged. */
#define OTHER ((uid_t)(getuid() == 4242 ? 4243 : 4242))

static void setup(struct kj__daemon *d)
{
	memset(d, 0, sizeof *d);
	CHECK_EQ_INT(kj__net_init(d), 0);
	d->cfg.jobs = 2;
	d->cfg.conn_max_per_uid = 3;
	d->cfg.buf_max_total = 100;
	d->cfg.buf_max_per_uid = 60;
	kj__quota_init(d);
}

static void test_conn_cap_per_uid(void)
{
	struct kj__daemon d;
	char err[512];

	setup(&d);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(kj__quota_conn_add(&d, OTHER, err, sizeof err), 0);
	CHECK_EQ_INT(kj__quota_conn_add(&d, OTHER, err, sizeof err), KJIT_EBUSY);
	CHECK(strstr(err, "already has 3 connections open") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	/* The owner is not capped per uid. */
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(kj__quota_conn_add(&d, getuid(), err, sizeof err), 0);
	kj__quota_conn_del(&d, OTHER);
	CHECK_EQ_INT(kj__quota_conn_add(&d, OTHER, err, sizeof err), 0);
	CHECK_EQ_INT(d.net->n_conns, 13);
	for (int i = 0; i < 3; i++)
		kj__quota_conn_del(&d, OTHER);
	for (int i = 0; i < 10; i++)
		kj__quota_conn_del(&d, getuid());
	CHECK_EQ_INT(d.net->n_conns, 0);
	CHECK_EQ_INT(d.net->n_quota, 0); /* entries holding nothing are dropped */
	kj__net_free(&d);
}

static void test_conn_total_keeps_reserve(void)
{
	struct kj__daemon d;
	char err[512];
	struct rlimit rl;

	setup(&d);
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	CHECK(d.net->conn_max_total > KJ_CONN_PRIV_RESERVE);
	CHECK(d.net->conn_max_total < rl.rlim_cur);
	d.cfg.conn_max_per_uid = 0; /* no per-uid cap: reach the total */
	unsigned n = 0;
	while (kj__quota_conn_add(&d, OTHER, err, sizeof err) == 0)
		n++;
	CHECK_EQ_INT(n, d.net->conn_max_total - KJ_CONN_PRIV_RESERVE);
	CHECK(strstr(err, "kjitd is busy") != NULL);
	/* The reserve is the owner's and root's. */
	for (unsigned i = 0; i < KJ_CONN_PRIV_RESERVE; i++)
		CHECK_EQ_INT(kj__quota_conn_add(&d, getuid(), err, sizeof err), 0);
	CHECK_EQ_INT(kj__quota_conn_add(&d, 0, err, sizeof err), KJIT_EBUSY);
	free(d.net->quota);
}

static void test_bytes_per_uid_and_total(void)
{
	struct kj__daemon d;
	char err[512];

	setup(&d);
	CHECK_EQ_INT(kj__quota_charge(&d, OTHER, 50, err, sizeof err), 0);
	CHECK_EQ_INT(kj__quota_charge(&d, OTHER, 11, err, sizeof err), KJIT_EBUSY);
	CHECK(strstr(err, "the limit per user") != NULL && strstr(err, "retry") != NULL);
	CHECK_EQ_INT(kj__quota_charge(&d, OTHER, 10, err, sizeof err), 0);
	CHECK_EQ_INT(kj__quota_charge(&d, getuid(), 40, err, sizeof err), 0);
	CHECK_EQ_INT(kj__quota_charge(&d, 0, 1, err, sizeof err), KJIT_EBUSY); /* total 100 reached */
	CHECK(strstr(err, "requests in flight") != NULL);
	CHECK_EQ_INT(d.net->bytes_total, 100);
	kj__quota_release(&d, OTHER, 60);
	kj__quota_release(&d, getuid(), 40);
	CHECK_EQ_INT(d.net->bytes_total, 0);
	CHECK_EQ_INT(d.net->n_quota, 0);
	/* Releasing what was never charged changes nothing. */
	kj__quota_release(&d, OTHER, 5);
	CHECK_EQ_INT(d.net->bytes_total, 0);
	kj__net_free(&d);
}

/* Reply buffers (replybuf.c): one copy per tag and length, charged once
 * per uid however many replies of that uid reference it; a charge past
 * the budget is refused unless forced; the last reference frees it. */
static void test_replybuf_shared_and_charged(void)
{
	struct kj__daemon d;
	char err[512];
	uint8_t obj[40];

	setup(&d);
	memset(obj, 7, sizeof obj);
	struct kj__replybuf *a = kj__replybuf_get(&d, "k1", obj, sizeof obj);
	struct kj__replybuf *b = kj__replybuf_get(&d, "k1", obj, sizeof obj);
	struct kj__replybuf *other = kj__replybuf_get(&d, "k1", obj, 30); /* another length: another object */
	CHECK(a != NULL && a == b && other != NULL && other != a);
	CHECK(kj__replybuf_len(a) == sizeof obj && memcmp(kj__replybuf_data(a), obj, sizeof obj) == 0);
	CHECK_EQ_INT(kj__replybuf_charge(a, OTHER, 0, err, sizeof err), 0);
	CHECK_EQ_INT(kj__replybuf_charge(b, OTHER, 0, err, sizeof err), 0); /* same uid: charged once */
	CHECK_EQ_INT(kj__quota_bytes(&d, OTHER), 40);
	CHECK_EQ_INT(kj__replybuf_charge(a, getuid(), 0, err, sizeof err), 0); /* another uid pays for its own */
	CHECK_EQ_INT(kj__quota_bytes(&d, getuid()), 40);
	CHECK_EQ_INT(d.net->bytes_total, 80);
	/* OTHER's budget is 60: 40 + 30 is refused; forced, bytes go through */
	CHECK_EQ_INT(kj__replybuf_charge(other, OTHER, 0, err, sizeof err), KJIT_EBUSY);
	CHECK(strstr(err, "kjitd is busy") != NULL);
	CHECK_EQ_INT(kj__quota_bytes(&d, OTHER), 40);
	kj__quota_charge_over(&d, OTHER, 30);
	CHECK_EQ_INT(kj__quota_bytes(&d, OTHER), 70);
	kj__quota_release(&d, OTHER, 30);
	kj__replybuf_discharge(a, OTHER);
	CHECK_EQ_INT(kj__quota_bytes(&d, OTHER), 40); /* one reply of OTHER still queued */
	kj__replybuf_discharge(b, OTHER);
	CHECK_EQ_INT(kj__quota_bytes(&d, OTHER), 0);
	kj__replybuf_discharge(a, getuid());
	CHECK_EQ_INT(d.net->bytes_total, 0);
	kj__replybuf_unref(a);
	CHECK(d.net->replybufs != NULL);
	kj__replybuf_unref(b);
	kj__replybuf_unref(other);
	CHECK(d.net->replybufs == NULL);
	/* untagged: private, never shared */
	a = kj__replybuf_get(&d, NULL, obj, sizeof obj);
	b = kj__replybuf_get(&d, NULL, obj, sizeof obj);
	CHECK(a && b && a != b && d.net->replybufs == NULL);
	kj__replybuf_unref(a);
	kj__replybuf_unref(b);
	kj__replybuf_unref(NULL);
	CHECK_EQ_INT(d.net->n_quota, 0);
	kj__net_free(&d);
}

/* setup, for a test of glibc's malloc (its thresholds, its trim, its
 * arenas): 0, d freed and the skip said, under AddressSanitizer, whose
 * allocator is not glibc's. */
static int setup_glibc(struct kj__daemon *d)
{
	setup(d);
#if KJ_UNDER_ASAN
	printf("# skipped: AddressSanitizer's allocator is not glibc's malloc\n");
	kj__net_free(d);
	return 0;
#else
	return 1;
#endif
}

/* Issue 35: after kj__quota_init, a 1 MiB block comes from the heap and
 * is served again from the same pages once freed (before, every block of
 * 256 KiB or more was mmap'd and faulted in per request), while a block of
 * KJ_MMAP_THRESHOLD or more still comes from mmap, returned when freed. */

static void test_malloc_thresholds(void)
{
	struct kj__daemon d;

	if (!setup_glibc(&d))
		return;
	size_t mapped = mallinfo2().hblkhd;
	char *volatile a = malloc(1u << 20); /* volatile: not elided by the compiler */
	CHECK(a != NULL);
	a[0] = a[(1u << 20) - 1] = 1;
	CHECK_EQ_INT(mallinfo2().hblkhd, mapped); /* not mmap'd */
	uintptr_t at = (uintptr_t)a;
	free(a);
	CHECK(mallinfo2().fordblks >= 1u << 20); /* its pages kept in the heap, not trimmed */
	char *volatile b = malloc(1u << 20);
	CHECK((uintptr_t)b == at); /* the same pages again */
	free(b);
	char *volatile big = malloc(KJ_MMAP_THRESHOLD + 4096);
	CHECK(big != NULL);
	CHECK(mallinfo2().hblkhd >= mapped + KJ_MMAP_THRESHOLD); /* mmap'd */
	free(big);
	CHECK_EQ_INT(mallinfo2().hblkhd, mapped);
	kj__net_free(&d);
}

/* The anonymous resident bytes of this process (/proc/self/statm). */
static uint64_t anon_rss(void)
{
	unsigned long long size = 0, resident = 0, shared = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	CHECK(f != NULL);
	if (f == NULL)
		return 0;
	CHECK(fscanf(f, "%llu %llu %llu", &size, &resident, &shared) == 3);
	fclose(f);
	return (uint64_t)(resident - shared) * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* budget.sh's floods left 3 to 58 MB resident: blocks freed below a live
 * one, which free() never returns, and the tick's trim waited for 32 MiB of
 * charged bytes, which those floods never reached.  Now the tick trims once
 * the heap's freed pages are resident, but not while a load is held. */
static void test_tick_trims_freed_pages(void)
{
	enum { N = 16, MB = 1u << 20 };
	struct kj__daemon d;
	char *volatile blk[N + 1];
	char err[512];

	if (!setup_glibc(&d))
		return;
	d.cfg.buf_max_total = d.cfg.buf_max_per_uid = 64ull << 20;
	for (int i = 0; i <= N; i++) { /* the last one stays: the freed ones lie below it */
		blk[i] = malloc(MB);
		CHECK(blk[i] != NULL);
		if (blk[i])
			memset(blk[i], 1, MB);
	}
	for (int i = 0; i < N; i++)
		free(blk[i]);
	uint64_t freed = anon_rss();
	/* a load still held (9 MiB of replies unread): no trim yet */
	CHECK_EQ_INT(kj__quota_charge(&d, OTHER, KJ_TRIM_QUIET_BYTES + MB, err, sizeof err), 0);
	kj__quota_tick(&d);
	CHECK(anon_rss() + 2 * MB > freed);
	/* the load gone: the freed pages go back */
	kj__quota_release(&d, OTHER, KJ_TRIM_QUIET_BYTES + MB);
	kj__quota_tick(&d);
	uint64_t trimmed = anon_rss();
	CHECK(trimmed + (N - 4) * MB <= freed);
	CHECK(d.net->heap_idle_base < KJ_TRIM_IDLE_BYTES);
	printf("# anonymous RSS %llu kB with %u MiB freed below a live block, %llu kB after the tick\n",
	       (unsigned long long)(freed >> 10), (unsigned)N, (unsigned long long)(trimmed >> 10));
	free(blk[N]);
	kj__net_free(&d);
}

static void *thread_block(void *arg)
{
	(void)arg;
	return malloc(64u << 10);
}

/* budget.sh's floods left up to 12 MB in the pool threads' own arenas,
 * whose tops malloc_trim does not shrink: after kj__quota_init, another
 * thread allocates from the main heap (below the program break). */
static void test_one_arena(void)
{
	struct kj__daemon d;
	pthread_t t;
	void *p = NULL;

	if (!setup_glibc(&d))
		return;
	CHECK_EQ_INT(pthread_create(&t, NULL, thread_block, NULL), 0);
	CHECK_EQ_INT(pthread_join(t, &p), 0);
	CHECK(p != NULL);
	CHECK((char *)p < (char *)sbrk(0)); /* not a thread arena's mmap'd heap */
	free(p);
	kj__net_free(&d);
}

TEST_LIST(TEST(malloc_thresholds) TEST(one_arena) TEST(tick_trims_freed_pages) TEST(replybuf_shared_and_charged) TEST(conn_cap_per_uid) TEST(conn_total_keeps_reserve) TEST(bytes_per_uid_and_total))
