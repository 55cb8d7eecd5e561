/* procmemo.h: the per-process memo of libkjit (procmemo.c): successful
 * answers of one client handle, by the SHA-256 of the GET body sent. */
#ifndef KJ_PROCMEMO_H
#define KJ_PROCMEMO_H

#include <stddef.h>
#include <stdint.h>

#include "kjit.h"
#include "hittab.h"
#include "sha.h"

struct kj__procmemo;

/* A memo of at most max_bytes; max_bytes 0 gives *out NULL (off), which
 * every call below accepts.  0 or KJIT_ENOMEM. */
int kj__procmemo_new(struct kj__procmemo **out, size_t max_bytes);
void kj__procmemo_free(struct kj__procmemo *m);
/* Drops every entry of m (NULL: nothing); the numbers of entries entered
 * later go on from the last one's, so no id (struct kj__sink) is given to
 * two entries' bytes. */
void kj__procmemo_clear(struct kj__procmemo *m);
/* 0 when KJIT_PROCESS_MEMO is "0", else 1. */
int kj__procmemo_enabled_by_env(void);

/* Fills res (status KJIT_STATUS_HIT, its own copies of everything) from
 * the entry of fp made at generation gen: 1; no such entry (an entry of
 * another generation is dropped): 0; KJIT_ENOMEM with res zeroed. */
int kj__procmemo_get(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen, kjit_result *res);
/* kj__procmemo_get with the object copied into the buffer sink gives
 * (common/hittab.h) instead of res->data, which stays NULL (res->size is
 * the object's size), or not copied at all when the sink's have() says its
 * caller holds the entry's bytes; sink->id (when set) receives the entry's
 * id, {1, its number}.  A NULL buffer gives KJIT_ENOMEM, res zeroed. */
int kj__procmemo_get_into(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen, kjit_result *res,
			  const struct kj__sink *sink);
/* Remembers a successful res for fp at generation gen (copies), evicting
 * the least recently used; too large an object is not kept.  0 or
 * KJIT_ENOMEM (nothing kept; the caller's answer is unaffected). */
int kj__procmemo_put(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen,
		     const kjit_result *res);
/* kj__procmemo_put without the copy: res->data (res->size bytes) lies in
 * *buf, a malloc'd block of buf_len bytes (a reply's frame), which the
 * memo takes over when it keeps the entry (*buf set to NULL; its whole
 * length counts against the memo's bytes).  Otherwise *buf stays the
 * caller's: 0 (too large to keep), KJIT_ENOMEM, or KJIT_EINVAL when
 * res->data is not inside *buf. */
int kj__procmemo_adopt(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen,
		       const kjit_result *res, uint8_t **buf, size_t buf_len);
void kj__procmemo_usage(const struct kj__procmemo *m, size_t *entries, size_t *bytes);

#endif /* KJ_PROCMEMO_H */
