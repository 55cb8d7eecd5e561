/* alloc.c: the C library's allocator behind struct kj__cache_alloc.
 *
 * cache/ never calls malloc, calloc, realloc or free itself: it goes
 * through a kj__cache_alloc table, this one unless the caller passed
 * another, as it goes through a kj__fsys table for the file system
 * (fsys.c).  Tests pass a table that fails the n-th allocation and check
 * that every call then fails cleanly (KJIT_ENOMEM, nothing leaked, the
 * cache consistent), the way SQLite's tests run an out-of-memory loop.
 * No state.
 */
#include <stdlib.h>

#include "cache.h"

const struct kj__cache_alloc kj__cache_alloc_default = {
	.malloc = malloc,
	.calloc = calloc,
	.realloc = realloc,
	.free = free,
};
