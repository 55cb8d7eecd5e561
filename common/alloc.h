/* alloc.h: the allocator table the framing code (buf.c, proto.c) allocates
 * through, so tests can fail the n-th allocation (tests/test-proto.c; the
 * same idea as cache/'s kj__cache_alloc and kj__fsys tables).
 *
 * There is no global hook: a table travels with the thing that allocates
 * (struct kj__buf's and struct kj__msg's alloc member) or is passed as a
 * parameter (the *_with functions of proto.h).  NULL everywhere means the
 * C library's.  Memory obtained through a table is freed through the same
 * table.
 */
#ifndef KJ_ALLOC_H
#define KJ_ALLOC_H

#include <stddef.h>

struct kj__alloc {
	void *(*malloc)(size_t n);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *p, size_t n);
	void (*free)(void *p);
};

/* malloc, calloc, realloc and free of the C library. */
extern const struct kj__alloc kj__alloc_libc;

/* a, or the C library's table when a is NULL. */
static inline const struct kj__alloc *kj__alloc_or_libc(const struct kj__alloc *a)
{
	return a ? a : &kj__alloc_libc;
}

#endif /* KJ_ALLOC_H */
