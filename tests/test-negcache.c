/* test-negcache.c: failed compiles remembered for a few seconds
 * (daemon/miss/negcache.c): served while fresh, gone after the ttl, replaced
 * oldest first, off with ttl 0. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "kjit.h"
#include "kj_limits.h"
#include "test.h"

static void key_of(int i, char key[65])
{
	for (int k = 0; k < 64; k++)
		key[k] = "0123456789abcdef"[(i + k) % 16];
	snprintf(key + 56, 9, "%08x", (unsigned)i);
}

static void test_remembered_then_forgotten(void)
{
	struct kj__negcache *n = NULL;
	char key[65], other[65];
	const char *line, *log;
	int code = 0;

	key_of(1, key);
	key_of(2, other);
	CHECK_EQ_INT(kj__negcache_new(&n, 200), 0);
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 0);
	kj__negcache_put(n, key, KJIT_ECOMPILE, "nvrtc rejected k.cu for sm_90: k.cu(1): error", "the log");
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 1);
	CHECK_EQ_INT(code, KJIT_ECOMPILE);
	CHECK_EQ_STR(line, "nvrtc rejected k.cu for sm_90: k.cu(1): error");
	CHECK_EQ_STR(log, "the log");
	CHECK_EQ_INT(kj__negcache_get(n, other, &code, &line, &log), 0);
	/* a second failure of the same key replaces the first */
	kj__negcache_put(n, key, KJIT_ECOMPILE, "again", NULL);
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 1);
	CHECK_EQ_STR(line, "again");
	CHECK(log == NULL);
	usleep(250 * 1000);
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 0);
	kj__negcache_free(n);
	kj__negcache_free(NULL);
}

static void test_bounded_and_off(void)
{
	struct kj__negcache *n = NULL;
	char key[65];
	const char *line, *log;
	int code;

	CHECK_EQ_INT(kj__negcache_new(&n, 60000), 0);
	for (int i = 0; i < KJ_NEGCACHE_MAX + 1; i++) {
		key_of(i, key);
		kj__negcache_put(n, key, KJIT_ECOMPILE, "x", "y");
	}
	key_of(0, key); /* the oldest went */
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 0);
	key_of(KJ_NEGCACHE_MAX, key);
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 1);
	key_of(1, key);
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 1);
	kj__negcache_put(n, "short", KJIT_ECOMPILE, "x", NULL); /* not a key: ignored */
	CHECK_EQ_INT(kj__negcache_get(n, "short", &code, &line, &log), 0);
	kj__negcache_free(n);
	CHECK_EQ_INT(kj__negcache_new(&n, 0), 0); /* --failed-ttl 0 */
	kj__negcache_put(n, key, KJIT_ECOMPILE, "x", NULL);
	CHECK_EQ_INT(kj__negcache_get(n, key, &code, &line, &log), 0);
	kj__negcache_free(n);
}

TEST_LIST(TEST(remembered_then_forgotten) TEST(bounded_and_off))
