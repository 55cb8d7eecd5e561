/* buf.h: the growable byte buffer every kjit layer builds text and frames
 * in (protocol messages, JSON answers, reports), with its append, printf
 * and JSON-string helpers.  A zeroed struct kj__buf is an empty buffer;
 * p holds len bytes of cap allocated; the owner frees it with kj__buf_free.
 * alloc is the allocator its bytes come from (alloc.h; NULL: the C
 * library's); set it before the first append and never change it while p
 * is allocated.  Whoever takes p out of a buffer frees it with that
 * allocator's free (free(3) for the default).
 */
#ifndef KJ_BUF_H
#define KJ_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

struct kj__buf {
	uint8_t *p;
	size_t len;
	size_t cap;
	const struct kj__alloc *alloc; /* NULL: the C library's */
};

/* Grows b to hold at least n more bytes.  0 or KJIT_ENOMEM. */
int kj__buf_reserve(struct kj__buf *b, size_t n);
/* Appends n bytes.  0 or KJIT_ENOMEM. */
int kj__buf_append(struct kj__buf *b, const void *p, size_t n);
/* Frees b's memory and empties it (alloc is kept); NULL is a no-op. */
void kj__buf_free(struct kj__buf *b);

/* printf-append to b.  0 or KJIT_ENOMEM. */
int kj__buf_printf(struct kj__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* v's n strings joined by single spaces, NUL-terminated, malloc'd (""
 * for n == 0); NULL when out of memory. */
char *kj__words_join(const char *const *v, size_t n);
/* Appends s to b as a JSON string literal (quoted, escaped). */
int kj__json_str(struct kj__buf *b, const char *s);

#endif /* KJ_BUF_H */
