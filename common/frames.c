/* frames.c: the one incremental frame reader (frames.h has the contract).
 *
 * Bytes come in through kj__frames_space/kj__frames_wrote (a read straight
 * into the buffer) or kj__frames_feed (a copy); whole frames go out through
 * kj__frames_next/kj__frames_consume (in place) or kj__frames_take (the
 * body handed over).  The header of each frame is decoded and checked in
 * parse(), once, the moment its 12 bytes are in; its bytes are then
 * dropped, so a body read in place starts at the buffer's first byte and
 * can be handed over without a copy.  The buffer is compacted only when
 * room is asked for, so a chunk of many small frames costs no memmove per
 * frame; a buffer grown past KJ_FRAMES_KEEP_MAX for a large frame is given
 * back once empty.
 */
#include <stdint.h>
#include <string.h>

#include "frames.h"
#include "kj_types.h"

static uint32_t cap_of(const struct kj__frames *f)
{
	return f->max ? f->max : KJ_FRAME_MAX;
}

/* An emptied buffer starts over at its first byte. */
static void tidy(struct kj__frames *f)
{
	if (f->off == f->len)
		f->off = f->len = 0;
}

static void release_if_large(struct kj__frames *f)
{
	if (f->len == 0 && f->cap > KJ_FRAMES_KEEP_MAX) {
		kj__alloc_or_libc(f->alloc)->free(f->p);
		f->p = NULL;
		f->cap = 0;
	}
}

/* Decodes the current frame's header once its bytes are in: the one place
 * a header is checked.  0 (decoded, or not all in yet) or the stream's
 * sticky error. */
static int parse(struct kj__frames *f)
{
	if (f->err)
		return f->err;
	if (f->have_hdr || f->len - f->off < KJ_FRAME_HDR_SIZE)
		return 0;
	int r = kj__frame_hdr_decode(f->p + f->off, &f->hdr);
	if (r == 0 && f->hdr.len > cap_of(f))
		r = KJIT_ETOOBIG;
	if (r < 0)
		return f->err = r;
	f->have_hdr = 1;
	f->off += KJ_FRAME_HDR_SIZE;
	tidy(f);
	return 0;
}

/* Drops what arrived of a skipped frame. */
static void absorb_skip(struct kj__frames *f)
{
	size_t have = f->len - f->off;
	size_t k = f->skip < have ? (size_t)f->skip : have;

	f->off += k;
	f->skip -= k;
	tidy(f);
}

int kj__frames_space(struct kj__frames *f, size_t want, uint8_t **p, size_t *n)
{
	const struct kj__alloc *a = kj__alloc_or_libc(f->alloc);
	size_t have = f->len - f->off;
	int sized = 0; /* room for exactly the rest of a known frame */

	if (f->have_hdr && have < f->hdr.len) {
		/* the whole body at once, in place; a caller asking for more (a
		 * read that may bring the next frame's start too) gets what it
		 * asked, never a doubling of a buffer already about as large as
		 * the frame (whose size is what its reader was charged) */
		size_t rest = f->hdr.len - have;
		want = want > rest ? want : rest;
		sized = 1;
	}
	if (want == 0)
		want = 1;
	if (f->cap - f->len < want && f->off > 0) {
		memmove(f->p, f->p + f->off, have);
		f->len = have;
		f->off = 0;
	}
	if (f->cap - f->len < want) {
		if (want > SIZE_MAX - f->len)
			return KJIT_ENOMEM;
		size_t cap = f->len + want;
		uint8_t *q;
		if (!sized && cap < 2 * f->cap)
			cap = 2 * f->cap; /* small reads into a partial frame: grow by doubling, not per read */
		if (f->len == 0) { /* nothing to keep: no copy */
			a->free(f->p);
			f->p = NULL;
			f->cap = 0;
			q = a->malloc(cap);
		} else {
			q = a->realloc(f->p, cap);
		}
		if (q == NULL)
			return KJIT_ENOMEM;
		f->p = q;
		f->cap = cap;
	}
	*p = f->p + f->len;
	*n = f->cap - f->len;
	return 0;
}

void kj__frames_wrote(struct kj__frames *f, size_t n)
{
	f->len += n;
	if (f->skip)
		absorb_skip(f);
}

int kj__frames_feed(struct kj__frames *f, const void *p, size_t n)
{
	uint8_t *room;
	size_t cap;
	int r = kj__frames_space(f, n, &room, &cap);

	if (r < 0)
		return r;
	if (n)
		memcpy(room, p, n);
	kj__frames_wrote(f, n);
	return 0;
}

size_t kj__frames_need(struct kj__frames *f)
{
	size_t have;

	if (f->skip)
		return f->skip > SIZE_MAX ? SIZE_MAX : (size_t)f->skip;
	if (parse(f) < 0)
		return 0;
	have = f->len - f->off;
	if (!f->have_hdr)
		return KJ_FRAME_HDR_SIZE - have;
	return have < f->hdr.len ? f->hdr.len - have : 0;
}

int kj__frames_peek(struct kj__frames *f, struct kj__frame_hdr *h)
{
	int r = parse(f);

	if (r < 0 || f->have_hdr)
		*h = f->hdr;
	return r < 0 ? r : f->have_hdr;
}

int kj__frames_next(struct kj__frames *f, struct kj__frame_hdr *h, const uint8_t **body)
{
	int r = kj__frames_peek(f, h);

	if (r <= 0 || f->len - f->off < f->hdr.len)
		return r < 0 ? r : 0;
	*body = f->p + f->off;
	return 1;
}

void kj__frames_consume(struct kj__frames *f)
{
	if (!f->have_hdr || f->len - f->off < f->hdr.len)
		return;
	f->off += f->hdr.len;
	f->have_hdr = 0;
	tidy(f);
	release_if_large(f);
}

void kj__frames_skip(struct kj__frames *f)
{
	size_t have = f->len - f->off;

	if (!f->have_hdr)
		return;
	if (have >= f->hdr.len) {
		f->off += f->hdr.len;
	} else {
		f->skip = f->hdr.len - have;
		f->off = f->len;
	}
	f->have_hdr = 0;
	tidy(f);
	release_if_large(f);
}

int kj__frames_take(struct kj__frames *f, struct kj__frame_hdr *h, uint8_t **body)
{
	const uint8_t *b;
	int r = kj__frames_next(f, h, &b);

	*body = NULL;
	if (r <= 0)
		return r;
	if (h->len > 0 && f->off == 0 && f->len == h->len) { /* exactly the body: hand the buffer over */
		*body = f->p;
		f->p = NULL;
		f->off = f->len = f->cap = 0;
		f->have_hdr = 0;
		return 1;
	}
	if (h->len > 0) {
		if ((*body = kj__alloc_or_libc(f->alloc)->malloc(h->len)) == NULL)
			return KJIT_ENOMEM;
		memcpy(*body, b, h->len);
	}
	kj__frames_consume(f);
	return 1;
}

size_t kj__frames_buffered(const struct kj__frames *f)
{
	return f->len - f->off;
}

int kj__frames_begun(const struct kj__frames *f)
{
	return f->len > f->off || f->have_hdr || f->skip > 0;
}

void kj__frames_free(struct kj__frames *f)
{
	if (f == NULL)
		return;
	kj__alloc_or_libc(f->alloc)->free(f->p);
	f->p = NULL;
	f->off = f->len = f->cap = 0;
	f->have_hdr = 0;
	f->err = 0;
	f->skip = 0;
}
