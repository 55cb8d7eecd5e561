/* framer.c: reassembles frames from the byte stream of a libuv handle.
 * libuv reads straight into the framer's storage (kj__framer_alloc), so a
 * frame is copied once at most, when a partial frame is moved to the front. */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"

#define FRAMER_MIN_READ (64u << 10) /* libuv asks for 64 KiB; give at least that */

int kj__framer_feed(struct kj__framer *f, const char *p, size_t n)
{
	if (f->cap - f->len < n) {
		size_t cap = f->cap ? f->cap : FRAMER_MIN_READ;
		while (cap - f->len < n)
			cap *= 2;
		uint8_t *q = realloc(f->p, cap);
		if (q == NULL)
			return KJIT_ENOMEM;
		f->p = q;
		f->cap = cap;
	}
	memcpy(f->p + f->len, p, n);
	f->len += n;
	return 0;
}

void kj__framer_alloc(struct kj__framer *f, size_t suggested, uv_buf_t *buf)
{
	size_t want = suggested < FRAMER_MIN_READ ? FRAMER_MIN_READ : suggested;

	if (f->cap - f->len < want) {
		size_t cap = f->cap ? f->cap : want;
		while (cap - f->len < want)
			cap *= 2;
		uint8_t *q = realloc(f->p, cap);
		if (q == NULL) {
			*buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
			return;
		}
		f->p = q;
		f->cap = cap;
	}
	*buf = uv_buf_init((char *)f->p + f->len, (unsigned)(f->cap - f->len));
}

int kj__framer_next(struct kj__framer *f, struct kj__frame_hdr *h, const uint8_t **body)
{
	if (f->len < KJ_FRAME_HDR_SIZE)
		return 0;
	int r = kj__frame_hdr_decode(f->p, h);
	if (r < 0)
		return r;
	if (f->len - KJ_FRAME_HDR_SIZE < h->len)
		return 0;
	*body = f->p + KJ_FRAME_HDR_SIZE;
	return 1;
}

void kj__framer_consume(struct kj__framer *f, const struct kj__frame_hdr *h)
{
	size_t used = KJ_FRAME_HDR_SIZE + (size_t)h->len;

	memmove(f->p, f->p + used, f->len - used);
	f->len -= used;
	/* Give back the memory of a large frame once it is handled. */
	if (f->len == 0 && f->cap > 4 * FRAMER_MIN_READ) {
		free(f->p);
		f->p = NULL;
		f->cap = 0;
	}
}

void kj__framer_free(struct kj__framer *f)
{
	free(f->p);
	f->p = NULL;
	f->len = f->cap = 0;
}
