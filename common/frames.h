/* frames.h: the one incremental frame reader of kjit: bytes in, whole
 * frames out (the framing is proto.h's).
 *
 * Every reader of a stream of frames uses it: kjitd's client connections
 * and worker pipes (libuv reads into its room, daemon/net/framer.c), the
 * blocking reads of the worker and of tests (proto.c kj__frame_read_fd),
 * libkjit's replies (client/libkjit.c: one at a time, and the ATTACH reply
 * with its descriptors) and kjit_get_many's pipelined ones
 * (client/getmany.c).  A frame's header is decoded and checked (version,
 * length against the reader's cap) here, once, as soon as its 12 bytes are
 * in, and nowhere else; a bad header sticks: the stream cannot be trusted
 * past it.
 *
 * Invariants: the bytes buffered are p[off, len); once the current
 * frame's header is whole it is decoded into hdr (have_hdr) and its 12
 * bytes are dropped, so p[off] is the current frame's first body byte.
 * Buffer memory comes from alloc (NULL: the C library's) and goes back
 * through it.  A zeroed struct is an empty reader capped at KJ_FRAME_MAX;
 * set max (before the first byte) for a lower cap.
 */
#ifndef KJ_FRAMES_H
#define KJ_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "proto.h"

struct kj__frames {
	uint8_t *p;
	size_t off, len, cap;
	struct kj__frame_hdr hdr;       /* the current frame's header, once have_hdr */
	int have_hdr;
	int err;                        /* the stream's bad header (KJIT_EPROTO, KJIT_ETOOBIG), or 0 */
	uint64_t skip;                  /* bytes of a skipped frame still to come, dropped as they do */
	uint32_t max;                   /* largest body accepted; 0: KJ_FRAME_MAX */
	const struct kj__alloc *alloc;  /* NULL: the C library's */
};

/* Room for at least want more bytes after those buffered (compacting or
 * growing the buffer; once the current frame's header is in, room for the
 * rest of that frame at least, so a large body is read in place).  0 with
 * *p and *n (>= want) the room, or KJIT_ENOMEM. */
int kj__frames_space(struct kj__frames *f, size_t want, uint8_t **p, size_t *n);
/* n bytes were written into the room kj__frames_space gave. */
void kj__frames_wrote(struct kj__frames *f, size_t n);
/* Copies n bytes in (kj__frames_space and kj__frames_wrote).  0 or
 * KJIT_ENOMEM. */
int kj__frames_feed(struct kj__frames *f, const void *p, size_t n);

/* Bytes still missing before the current frame is whole (the rest of its
 * header, or of its body); 0 when it is whole or the stream is bad.  A
 * blocking reader reads no more than this, so it never reads past a
 * frame. */
size_t kj__frames_need(struct kj__frames *f);
/* The current frame's header: 1 with *h once its 12 bytes are in, 0 before,
 * or the stream's error (KJIT_EPROTO: another version; KJIT_ETOOBIG: over
 * the cap), *h then filled as far as it was read so the caller can answer. */
int kj__frames_peek(struct kj__frames *f, struct kj__frame_hdr *h);
/* 1 with *h and *body (body bytes in the buffer, valid until the next call
 * that adds or drops bytes) when the current frame is whole; 0 when more
 * bytes are needed; or kj__frames_peek's error. */
int kj__frames_next(struct kj__frames *f, struct kj__frame_hdr *h, const uint8_t **body);
/* Drops the current frame, which kj__frames_next returned. */
void kj__frames_consume(struct kj__frames *f);
/* Drops the current frame, whole or not (its header is in): its bytes
 * buffered now, the rest of its body as it arrives.  For a frame refused
 * on its header alone. */
void kj__frames_skip(struct kj__frames *f);
/* kj__frames_next, then hands over the frame's body as an allocation of
 * f->alloc (NULL when empty) and drops the frame: no copy when the buffer
 * holds exactly that body.  1, 0, kj__frames_next's errors, or
 * KJIT_ENOMEM (the frame stays). */
int kj__frames_take(struct kj__frames *f, struct kj__frame_hdr *h, uint8_t **body);
/* Bytes buffered, the current frame's and any after it. */
size_t kj__frames_buffered(const struct kj__frames *f);
/* 1 while a frame is begun: bytes buffered, a header read, or the rest of a
 * skipped frame to come; 0 between frames. */
int kj__frames_begun(const struct kj__frames *f);
/* Frees the buffer and empties the reader (cap, allocator kept); NULL is
 * a no-op. */
void kj__frames_free(struct kj__frames *f);

#endif /* KJ_FRAMES_H */
