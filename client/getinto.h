/* getinto.h: kj__get_into (client/get.c), kjit_get with the object copied
 * straight into a buffer of the caller's: libkjit's one internal entry
 * exported from libkjit.so, for the Python package's C extension
 * (python/kjit/_hit.c), which makes a bytes object of the process memo's,
 * the shared hit table's or the socket's bytes with one copy, as kjit_get
 * makes its result.  Not part of the public API (include/kjit.h): it may
 * change with libkjit; the extension finds it by name and falls back to
 * kjit_get without it.  Self-contained: kjit.h and nothing internal. */
#ifndef KJ_GETINTO_H
#define KJ_GETINTO_H

#include <stddef.h>

#include "kjit.h"

/* A buffer of size bytes for the object, or NULL (out of memory: the
 * answer then comes the next way, memo, table, socket, or fails with
 * KJIT_ENOMEM).  It may be called more than once in one kj__get_into (a
 * table read that raced a rewrite is copied again; a memo or table answer
 * given up for the socket's); the object is in the buffer of the last
 * call.  The buffers stay the caller's: libkjit never frees them. */
typedef void *kj__get_alloc_fn(void *ctx, size_t size);

/* kjit_get(c, req, res), except that a successful answer's object is
 * copied into the buffer alloc(ctx, res->size) last returned and
 * res->data is NULL (res->size its size); everything else of res, and the
 * failures, as kjit_get.  The hit table's copy is validated after it is
 * made (the slot's sequence, the table's generation), as kjit_get's is.
 * alloc NULL: exactly kjit_get. */
KJIT_EXPORT int kj__get_into(kjit_client *c, const kjit_request *req, kjit_result *res, kj__get_alloc_fn *alloc,
			     void *ctx);

#endif /* KJ_GETINTO_H */
