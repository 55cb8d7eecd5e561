/* test-lru.c: the one intrusive list (common/ilist.h) and the one hash table
 * (common/htab.h) the in-memory caches share (issue 33), and the LRU they
 * make in a real user, libkjit's process memo: the least recently used entry
 * goes first, a use moves an entry to the front, growth keeps every entry
 * findable.  A source scan checks that cache/hot.c, client/procmemo.c and
 * daemon/miss/memo.c no longer hand-roll a list or buckets of their own.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "ilist.h"
#include "kjit.h"
#include "procmemo.h"
#include "test.h"

struct item {
	int v;
	struct kj__ilink lru;
	struct kj__hnode hn;
};

/* The values of l head to tail into out (at most max); the count.  Checks
 * the prev links agree with the next links on the way. */
static size_t walk(const struct kj__ilist *l, int *out, size_t max)
{
	size_t n = 0;
	const struct kj__ilink *prev = NULL;

	for (const struct kj__ilink *x = l->head; x; prev = x, x = x->next) {
		CHECK(x->prev == prev);
		if (n < max)
			out[n] = KJ_CONTAINER_OF(x, struct item, lru)->v;
		n++;
	}
	CHECK(l->tail == prev);
	return n;
}

static void test_ilist_order(void)
{
	struct kj__ilist l = { 0 };
	struct item it[4] = { { .v = 0 }, { .v = 1 }, { .v = 2 }, { .v = 3 } };
	int got[8];

	CHECK_EQ_INT(walk(&l, got, 8), 0);
	for (int i = 0; i < 4; i++)
		kj__ilist_push_front(&l, &it[i].lru);
	CHECK_EQ_INT(walk(&l, got, 8), 4);
	CHECK(got[0] == 3 && got[1] == 2 && got[2] == 1 && got[3] == 0);
	kj__ilist_to_front(&l, &it[1].lru); /* a middle one */
	CHECK_EQ_INT(walk(&l, got, 8), 4);
	CHECK(got[0] == 1 && got[1] == 3 && got[2] == 2 && got[3] == 0);
	kj__ilist_to_front(&l, &it[0].lru); /* the tail */
	kj__ilist_to_front(&l, &it[0].lru); /* already the head */
	CHECK_EQ_INT(walk(&l, got, 8), 4);
	CHECK(got[0] == 0 && got[1] == 1 && got[2] == 3 && got[3] == 2);
	kj__ilist_unlink(&l, &it[2].lru); /* the tail */
	CHECK(it[2].lru.prev == NULL && it[2].lru.next == NULL);
	kj__ilist_unlink(&l, &it[0].lru); /* the head */
	CHECK_EQ_INT(walk(&l, got, 8), 2);
	CHECK(got[0] == 1 && got[1] == 3);
	kj__ilist_unlink(&l, &it[1].lru);
	kj__ilist_unlink(&l, &it[3].lru);
	CHECK(l.head == NULL && l.tail == NULL);
}

/* Every node of t: in the chain its hash names, counted once. */
static void check_table(const struct kj__htab *t)
{
	size_t n = 0;

	CHECK(t->cap == 0 || (t->cap & (t->cap - 1)) == 0);
	for (size_t b = 0; b < t->cap; b++)
		for (const struct kj__hnode *x = t->tab[b]; x; x = x->chain, n++)
			CHECK((x->hash & (t->cap - 1)) == b);
	CHECK_EQ_INT(n, t->n);
	CHECK(t->n <= t->cap || t->cap == 0);
}

static struct item *find(const struct kj__htab *t, uint64_t h, int v)
{
	for (struct kj__hnode *x = kj__htab_first(t, h); x; x = kj__htab_next(x, h)) {
		struct item *it = KJ_CONTAINER_OF(x, struct item, hn);
		if (it->v == v)
			return it;
	}
	return NULL;
}

static void test_htab_grow_find_remove(void)
{
	enum { N = 3000 };
	static struct item it[N];
	struct kj__htab t;

	kj__htab_init(&t, NULL, NULL);
	CHECK(kj__htab_first(&t, 7) == NULL);
	for (int i = 0; i < N; i++) {
		it[i].v = i;
		CHECK_EQ_INT(kj__htab_reserve(&t), 0);
		/* every fifth value shares its hash with the one before: chains
		 * hold other keys of the same hash, which the caller tells apart */
		kj__htab_insert(&t, &it[i].hn, (uint64_t)(i - (i % 5 == 4)) * 0x9e3779b97f4a7c15ull);
	}
	check_table(&t);
	CHECK(t.cap >= N && t.cap < 2 * N * 2);
	for (int i = 0; i < N; i++)
		CHECK(find(&t, (uint64_t)(i - (i % 5 == 4)) * 0x9e3779b97f4a7c15ull, i) == &it[i]);
	CHECK(find(&t, 12345, 1) == NULL);
	for (int i = 0; i < N; i += 2)
		kj__htab_remove(&t, &it[i].hn);
	check_table(&t);
	CHECK_EQ_INT(t.n, N / 2);
	for (int i = 0; i < N; i++)
		CHECK((find(&t, (uint64_t)(i - (i % 5 == 4)) * 0x9e3779b97f4a7c15ull, i) != NULL) == (i % 2 == 1));
	kj__htab_fini(&t);
	CHECK(t.tab == NULL && t.cap == 0 && t.n == 0);
}

static int calls_left;
static void *failing_calloc(size_t n, size_t size)
{
	if (calls_left-- <= 0) {
		errno = ENOMEM;
		return NULL;
	}
	return calloc(n, size);
}

static void test_htab_failed_growth_changes_nothing(void)
{
	static struct item it[KJ_HTAB_MIN + 1];
	struct kj__htab t;

	kj__htab_init(&t, failing_calloc, free);
	calls_left = 0;
	CHECK_EQ_INT(kj__htab_reserve(&t), -1);
	CHECK(t.tab == NULL && t.cap == 0);
	calls_left = 1;
	for (int i = 0; i < KJ_HTAB_MIN; i++) {
		CHECK_EQ_INT(kj__htab_reserve(&t), 0);
		kj__htab_insert(&t, &it[i].hn, (uint64_t)i);
	}
	CHECK_EQ_INT(kj__htab_reserve(&t), -1); /* a 257th needs 512 buckets: refused */
	CHECK_EQ_INT(t.cap, KJ_HTAB_MIN);
	check_table(&t);
	for (int i = 0; i < KJ_HTAB_MIN; i++)
		CHECK(kj__htab_first(&t, (uint64_t)i) == &it[i].hn);
	kj__htab_fini(&t);
}

/* A result of size bytes whose first byte is tag. */
static kjit_result result(uint8_t tag, size_t size)
{
	static uint8_t buf[4096];
	kjit_result r = { .status = KJIT_STATUS_COMPILED };

	memset(buf, tag, size);
	r.data = buf;
	r.size = size;
	r.target = (char *)"gfx90a";
	r.runtime_version = (char *)"1";
	return r;
}

static int memo_has(struct kj__procmemo *m, uint8_t tag)
{
	uint8_t fp[KJ_SHA256_LEN];
	kjit_result r;

	memset(fp, tag, sizeof fp);
	int got = kj__procmemo_get(m, fp, 0, &r);
	CHECK(got >= 0);
	if (got == 1) {
		CHECK(r.size > 0 && r.data[0] == tag);
		kjit_result_free(&r);
	}
	return got == 1;
}

static void test_procmemo_evicts_least_recently_used(void)
{
	struct kj__procmemo *m;
	uint8_t fp[KJ_SHA256_LEN];
	size_t n, bytes;

	/* room for four entries of 1000 bytes (each with its overhead) */
	CHECK_EQ_INT(kj__procmemo_new(&m, 4 * 1400), 0);
	for (uint8_t tag = 1; tag <= 4; tag++) {
		kjit_result r = result(tag, 1000);
		memset(fp, tag, sizeof fp);
		CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &r), 0);
	}
	kj__procmemo_usage(m, &n, &bytes);
	CHECK_EQ_INT(n, 4);
	CHECK(memo_has(m, 1)); /* 1 used: 2 is now the least recently used */
	kjit_result r = result(5, 1000);
	memset(fp, 5, sizeof fp);
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &r), 0);
	CHECK(!memo_has(m, 2));
	CHECK(memo_has(m, 1) && memo_has(m, 3) && memo_has(m, 4) && memo_has(m, 5));
	kj__procmemo_usage(m, &n, &bytes);
	CHECK_EQ_INT(n, 4);
	CHECK(bytes <= 4 * 1400);
	kj__procmemo_free(m);
}

static void test_procmemo_many_entries_all_found(void)
{
	struct kj__procmemo *m;
	uint8_t fp[KJ_SHA256_LEN];
	size_t n, bytes;

	CHECK_EQ_INT(kj__procmemo_new(&m, 64u << 20), 0);
	for (unsigned i = 0; i < 2000; i++) {
		kjit_result r = result((uint8_t)i, 16);
		memset(fp, 0, sizeof fp);
		memcpy(fp, &i, sizeof i);
		CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &r), 0);
	}
	kj__procmemo_usage(m, &n, &bytes);
	CHECK_EQ_INT(n, 2000);
	for (unsigned i = 0; i < 2000; i++) {
		kjit_result r;
		memset(fp, 0, sizeof fp);
		memcpy(fp, &i, sizeof i);
		CHECK_EQ_INT(kj__procmemo_get(m, fp, 0, &r), 1);
		CHECK(r.data[0] == (uint8_t)i);
		kjit_result_free(&r);
		CHECK_EQ_INT(kj__procmemo_get(m, fp, 1, &r), 0); /* another generation: dropped */
	}
	kj__procmemo_usage(m, &n, &bytes);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(bytes, 0);
	kj__procmemo_free(m);
}

/* The three in-memory caches use the shared list and table: no file keeps
 * a hand-written prev/next list or bucket array of its own. */
static void test_one_list_one_table(void)
{
	static const char *const files[] = { "cache/hot.c", "client/procmemo.c", "daemon/miss/memo.c" };
	static const char *const own[] = { "->prev->next", "->next->prev", "->chain = tab[", "= &m->tab[" };

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char path[512], text[64 * 1024];
		snprintf(path, sizeof path, "%s/%s", KJIT_SRCDIR, files[i]);
		FILE *f = fopen(path, "r");
		CHECK(f != NULL);
		size_t n = fread(text, 1, sizeof text - 1, f);
		fclose(f);
		text[n] = '\0';
		CHECK(strstr(text, "kj__ilist_") != NULL && strstr(text, "kj__htab_") != NULL);
		for (size_t k = 0; k < sizeof own / sizeof own[0]; k++) {
			if (strstr(text, own[k]) != NULL)
				fprintf(stderr, "%s still has its own %s\n", files[i], own[k]);
			CHECK(strstr(text, own[k]) == NULL);
		}
	}
}

TEST_LIST(TEST(ilist_order) TEST(htab_grow_find_remove) TEST(htab_failed_growth_changes_nothing)
	  TEST(procmemo_evicts_least_recently_used) TEST(procmemo_many_entries_all_found) TEST(one_list_one_table))
