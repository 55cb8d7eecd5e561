/* alloc.c: the C library's allocator behind struct kj__alloc (alloc.h),
 * the table buf.c and proto.c use unless a buffer, a message or a call
 * names another.  Tests substitute one that fails the n-th allocation.
 * No state.
 */
#include <stdlib.h>

#include "alloc.h"

const struct kj__alloc kj__alloc_libc = {
	.malloc = malloc,
	.calloc = calloc,
	.realloc = realloc,
	.free = free,
};
