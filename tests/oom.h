/* oom.h: an allocator for unit tests that fails the oom_at-th allocation
 * (counting from when oom_calls was zeroed; 0: none fails) and counts the
 * blocks alive in oom_live, so a run can assert that whatever failed,
 * nothing leaked.  Header only, one copy per test binary (each test runs
 * in a child process of its own, so the counters are the test's); the
 * test wraps o_malloc, o_calloc, o_realloc and o_free in the allocator
 * table of the module it tests. */
#ifndef KJ_TEST_OOM_H
#define KJ_TEST_OOM_H

#include <stdlib.h>

static long oom_at, oom_calls, oom_live;

static int oom_fail(void)
{
	return oom_at != 0 && ++oom_calls == oom_at;
}

static void *o_malloc(size_t n)
{
	void *p = oom_fail() ? NULL : malloc(n);
	oom_live += p != NULL;
	return p;
}

static void *o_calloc(size_t n, size_t size)
{
	void *p = oom_fail() ? NULL : calloc(n, size);
	oom_live += p != NULL;
	return p;
}

static void *o_realloc(void *p, size_t n)
{
	if (oom_fail())
		return NULL;
	void *q = realloc(p, n);
	oom_live += q != NULL && p == NULL;
	return q;
}

static void o_free(void *p)
{
	oom_live -= p != NULL;
	free(p);
}

#endif /* KJ_TEST_OOM_H */
