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
#include <stdint.h>

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

/* Nonzero when the caller still holds the bytes (size of them) of the
 * answer whose id is id: they are not copied again. */
typedef int kj__get_have_fn(void *ctx, const uint64_t id[2], size_t size);

/* kj__get_into, for a caller that keeps what it was given.  An answer of
 * the handle's process memo or of the shared hit table has an id, two
 * words naming its bytes: the bytes under an id never change, and no other
 * bytes ever take it, for as long as the handle is open (ids are the
 * handle's own: another handle, or this one after kjit_close, may give the
 * same id to other bytes).  Such an answer first asks have(ctx, id, size);
 * when the caller still holds those bytes nothing is copied and alloc is
 * not called (res->data NULL, res->size the size, as ever).  id (when not
 * NULL) receives the id of the answer given, {0, 0} for one without (the
 * socket's, a failure).  have may be asked more than once in one call (a
 * table read that raced a rewrite is tried again), and a yes may still be
 * followed by alloc (the next try, or the socket): the answer was the held
 * bytes when id is not {0, 0} and alloc was not called after the last yes.
 * have NULL: exactly kj__get_into. */
KJIT_EXPORT int kj__get_into_kept(kjit_client *c, const kjit_request *req, kjit_result *res,
				  kj__get_alloc_fn *alloc, kj__get_have_fn *have, void *ctx, uint64_t id[2]);

#endif /* KJ_GETINTO_H */
