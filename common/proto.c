/* proto.c: encoding and decoding of kjit frames (see proto.h and
 * docs/protocol.md).  Every length read from the wire is checked against
 * what remains before any byte is touched; nothing here trusts its input.
 * Allocations go through a struct kj__alloc (the buffer's, the message's,
 * or a parameter), never straight to malloc, so tests can fail any one. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frames.h"
#include "kj_types.h"
#include "proto.h"
#include "util.h"

#define FIELD_HDR_SIZE 6 /* u16 tag, u32 len */

static void put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int kj__msg_begin(struct kj__buf *b, uint16_t type, uint32_t id)
{
	uint8_t h[KJ_FRAME_HDR_SIZE];

	b->len = 0;
	put_le32(h, 0);
	put_le16(h + 4, type);
	h[6] = KJ_PROTO_VERSION;
	h[7] = 0;
	put_le32(h + 8, id);
	return kj__buf_append(b, h, sizeof h);
}

int kj__msg_put(struct kj__buf *b, uint16_t tag, const void *p, size_t n)
{
	uint8_t h[FIELD_HDR_SIZE];

	if (b->len < KJ_FRAME_HDR_SIZE)
		return KJIT_EINVAL;
	if (n > KJ_FRAME_MAX || b->len - KJ_FRAME_HDR_SIZE + FIELD_HDR_SIZE + n > KJ_FRAME_MAX)
		return KJIT_ETOOBIG;
	put_le16(h, tag);
	put_le32(h + 2, (uint32_t)n);
	int r = kj__buf_reserve(b, sizeof h + n);
	if (r < 0)
		return r;
	kj__buf_append(b, h, sizeof h);
	return kj__buf_append(b, p, n);
}

int kj__msg_put_str(struct kj__buf *b, uint16_t tag, const char *s)
{
	return kj__msg_put(b, tag, s, strlen(s));
}

int kj__msg_put_u32(struct kj__buf *b, uint16_t tag, uint32_t v)
{
	uint8_t p[4];
	put_le32(p, v);
	return kj__msg_put(b, tag, p, sizeof p);
}

int kj__msg_put_i32(struct kj__buf *b, uint16_t tag, int32_t v)
{
	return kj__msg_put_u32(b, tag, (uint32_t)v);
}

int kj__msg_put_u64(struct kj__buf *b, uint16_t tag, uint64_t v)
{
	uint8_t p[8];
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
	return kj__msg_put(b, tag, p, sizeof p);
}

int kj__msg_end(struct kj__buf *b)
{
	if (b->len < KJ_FRAME_HDR_SIZE)
		return KJIT_EINVAL;
	size_t body = b->len - KJ_FRAME_HDR_SIZE;
	if (body > KJ_FRAME_MAX)
		return KJIT_ETOOBIG;
	put_le32(b->p, (uint32_t)body);
	return 0;
}

int kj__msg_put_ext(struct kj__buf *b, uint16_t tag, size_t n)
{
	uint8_t h[FIELD_HDR_SIZE];

	if (b->len < KJ_FRAME_HDR_SIZE)
		return KJIT_EINVAL;
	if (n > KJ_FRAME_MAX || b->len - KJ_FRAME_HDR_SIZE + FIELD_HDR_SIZE + n > KJ_FRAME_MAX)
		return KJIT_ETOOBIG;
	put_le16(h, tag);
	put_le32(h + 2, (uint32_t)n);
	return kj__buf_append(b, h, sizeof h);
}

int kj__msg_end_ext(struct kj__buf *b, size_t n)
{
	if (b->len < KJ_FRAME_HDR_SIZE)
		return KJIT_EINVAL;
	size_t body = b->len - KJ_FRAME_HDR_SIZE + n;
	if (body > KJ_FRAME_MAX)
		return KJIT_ETOOBIG;
	put_le32(b->p, (uint32_t)body);
	return 0;
}

int kj__frame_hdr_decode(const uint8_t *p, struct kj__frame_hdr *h)
{
	h->len = get_le32(p);
	h->type = get_le16(p + 4);
	h->version = p[6];
	h->flags = p[7];
	h->id = get_le32(p + 8);
	if (h->len > KJ_FRAME_MAX)
		return KJIT_ETOOBIG;
	if (h->version != KJ_PROTO_VERSION)
		return KJIT_EPROTO;
	return 0;
}

/* Walks the body once; returns the field count or a negative code. */
static int count_fields(const uint8_t *body, size_t len, size_t *count)
{
	size_t off = 0, n = 0;

	while (off < len) {
		if (len - off < FIELD_HDR_SIZE)
			return KJIT_EPROTO;
		uint32_t flen = get_le32(body + off + 2);
		off += FIELD_HDR_SIZE;
		if (flen > len - off)
			return KJIT_EPROTO;
		off += flen;
		if (++n > KJ_FIELD_MAX_COUNT)
			return KJIT_ETOOBIG;
	}
	*count = n;
	return 0;
}

int kj__msg_decode(const uint8_t *body, size_t len, struct kj__msg *m)
{
	return kj__msg_decode_with(body, len, NULL, m);
}

int kj__msg_decode_with(const uint8_t *body, size_t len, const struct kj__alloc *a, struct kj__msg *m)
{
	size_t n = 0, off = 0;

	m->n = 0;
	m->f = NULL;
	m->alloc = a;
	if (len > KJ_FRAME_MAX)
		return KJIT_ETOOBIG;
	int r = count_fields(body, len, &n);
	if (r < 0)
		return r;
	if (n == 0)
		return 0;
	m->f = kj__alloc_or_libc(a)->calloc(n, sizeof *m->f);
	if (m->f == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		m->f[i].tag = get_le16(body + off);
		m->f[i].len = get_le32(body + off + 2);
		m->f[i].p = body + off + FIELD_HDR_SIZE;
		off += FIELD_HDR_SIZE + m->f[i].len;
	}
	m->n = n;
	return 0;
}

void kj__msg_free(struct kj__msg *m)
{
	if (m == NULL)
		return;
	kj__alloc_or_libc(m->alloc)->free(m->f);
	m->f = NULL;
	m->n = 0;
}

const struct kj__field *kj__msg_next(const struct kj__msg *m, uint16_t tag, size_t *pos)
{
	for (size_t i = *pos; i < m->n; i++) {
		if (m->f[i].tag == tag) {
			*pos = i + 1;
			return &m->f[i];
		}
	}
	*pos = m->n;
	return NULL;
}

const struct kj__field *kj__msg_get(const struct kj__msg *m, uint16_t tag)
{
	size_t pos = 0;
	return kj__msg_next(m, tag, &pos);
}

int kj__field_strdup(const struct kj__field *f, size_t max, char **out)
{
	return kj__field_strdup_with(f, max, NULL, out);
}

int kj__field_strdup_with(const struct kj__field *f, size_t max, const struct kj__alloc *a, char **out)
{
	*out = NULL;
	if (f == NULL)
		return 0;
	if (f->len > max || memchr(f->p, '\0', f->len) != NULL)
		return KJIT_EPROTO;
	char *s = kj__alloc_or_libc(a)->malloc((size_t)f->len + 1);
	if (s == NULL)
		return KJIT_ENOMEM;
	memcpy(s, f->p, f->len);
	s[f->len] = '\0';
	*out = s;
	return 0;
}

int kj__field_u32(const struct kj__field *f, uint32_t *v)
{
	if (f == NULL || f->len != 4)
		return KJIT_EPROTO;
	*v = get_le32(f->p);
	return 0;
}

int kj__field_i32(const struct kj__field *f, int32_t *v)
{
	uint32_t u;
	int r = kj__field_u32(f, &u);
	if (r == 0)
		memcpy(v, &u, sizeof *v);
	return r;
}

int kj__field_u64(const struct kj__field *f, uint64_t *v)
{
	if (f == NULL || f->len != 8)
		return KJIT_EPROTO;
	*v = (uint64_t)get_le32(f->p) | (uint64_t)get_le32(f->p + 4) << 32;
	return 0;
}

int kj__frame_write_fd(int fd, const struct kj__buf *b)
{
	int r = kj__write_all(fd, b->p, b->len);
	if (r == -EPIPE || r == -ECONNRESET)
		return KJIT_ECONNECT;
	if (r < 0) {
		errno = -r;
		return KJIT_EIO;
	}
	return 0;
}

/* Reads at most n bytes (at least one), waiting at most timeout_ms.  The
 * count, or KJIT_ETIMEDOUT / KJIT_ECONNECT / KJIT_EIO. */
static ssize_t read_timed(int fd, uint8_t *p, size_t n, int timeout_ms)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int pr = poll(&pfd, 1, timeout_ms);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			return KJIT_EIO;
		}
		if (pr == 0)
			return KJIT_ETIMEDOUT;
		ssize_t k = read(fd, p, n);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno == ECONNRESET ? KJIT_ECONNECT : KJIT_EIO;
		}
		return k == 0 ? KJIT_ECONNECT : k;
	}
}

int kj__frame_read_fd(int fd, int timeout_ms, struct kj__frame_hdr *h, uint8_t **body)
{
	return kj__frame_read_fd_with(fd, timeout_ms, NULL, h, body);
}

/* The one frame reader (frames.c) fed by reads of no more than the frame
 * still needs, so nothing past it is taken off the stream; the body lands
 * in place and is handed over without a copy. */
int kj__frame_read_fd_with(int fd, int timeout_ms, const struct kj__alloc *a, struct kj__frame_hdr *h,
			   uint8_t **body)
{
	struct kj__frames f = { .alloc = a };
	int r;

	while ((r = kj__frames_take(&f, h, body)) == 0) {
		size_t need = kj__frames_need(&f), room;
		uint8_t *p;
		if ((r = kj__frames_space(&f, need, &p, &room)) < 0)
			break;
		ssize_t k = read_timed(fd, p, need, timeout_ms);
		if (k < 0) {
			r = (int)k;
			break;
		}
		kj__frames_wrote(&f, (size_t)k);
	}
	kj__frames_free(&f);
	return r < 0 ? r : 0;
}
