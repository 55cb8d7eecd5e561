/* fuzz-frame.c: the framing of common/proto.c and its one frame reader,
 * common/frames.c (daemon/net/framer.c hands libuv its room).
 *
 * The input is a byte stream as a client would send it.  Checked:
 *  - kj__frame_hdr_decode on its first 12 bytes, and kj__msg_decode on the
 *    body (and on the whole input taken as a body);
 *  - every accessor on every field (strdup with several caps, u32, i32,
 *    u64), kj__msg_next walks and kj__msg_get, with their contracts;
 *  - re-encoding a decoded body with kj__msg_put gives the same bytes;
 *  - the frame reader fed the stream in chunks whose sizes come from the
 *    input bytes (half through kj__frames_feed, half the way libuv does it,
 *    through kj__framer_alloc and kj__frames_wrote), yields exactly the
 *    frames a plain linear parse of the stream finds, and stops at the
 *    same bad header, with kj__frames_need 0 at each whole frame.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "fuzz.h"
#include "kjit.h"
#include "proto.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Every accessor on every field, and the message's walking functions. */
static void exercise_msg(const uint8_t *body, size_t len, const struct kj__msg *m)
{
	static const size_t caps[] = { 0, 1, 8, KJ_NAME_MAX, KJ_FRAME_MAX };

	for (size_t i = 0; i < m->n; i++) {
		const struct kj__field *f = &m->f[i];
		FUZZ_ASSERT(f->p >= body && f->p <= body + len && f->len <= (size_t)(body + len - f->p));
		for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
			char *s = (char *)1;
			int r = kj__field_strdup(f, caps[c], &s);
			if (r == 0) {
				FUZZ_ASSERT(s != NULL && strlen(s) == f->len && memcmp(s, f->p, f->len) == 0);
				FUZZ_ASSERT(f->len <= caps[c]);
			} else {
				FUZZ_ASSERT(r == KJIT_EPROTO && s == NULL);
				FUZZ_ASSERT(f->len > caps[c] || memchr(f->p, 0, f->len) != NULL);
			}
			free(s);
		}
		uint32_t u = 0;
		int32_t i32 = 0;
		uint64_t u64 = 0;
		int r = kj__field_u32(f, &u);
		FUZZ_ASSERT((r == 0) == (f->len == 4));
		if (r == 0)
			FUZZ_ASSERT(u == le32(f->p));
		r = kj__field_i32(f, &i32);
		FUZZ_ASSERT((r == 0) == (f->len == 4));
		if (r == 0)
			FUZZ_ASSERT((uint32_t)i32 == u);
		r = kj__field_u64(f, &u64);
		FUZZ_ASSERT((r == 0) == (f->len == 8));
		if (r == 0)
			FUZZ_ASSERT(u64 == ((uint64_t)le32(f->p) | (uint64_t)le32(f->p + 4) << 32));
		/* The first field with this tag is at or before i; walking finds i. */
		const struct kj__field *first = kj__msg_get(m, f->tag);
		FUZZ_ASSERT(first != NULL && first <= f && first->tag == f->tag);
		size_t pos = 0, seen = 0;
		const struct kj__field *g;
		int found = 0;
		while ((g = kj__msg_next(m, f->tag, &pos)) != NULL) {
			FUZZ_ASSERT(g->tag == f->tag && pos <= m->n);
			found |= g == f;
			FUZZ_ASSERT(++seen <= m->n);
		}
		FUZZ_ASSERT(found && pos == m->n);
	}
	FUZZ_ASSERT(kj__field_strdup(NULL, 10, &(char *){ NULL }) == 0);
	FUZZ_ASSERT(kj__field_u32(NULL, &(uint32_t){ 0 }) == KJIT_EPROTO);
	FUZZ_ASSERT(kj__field_u64(NULL, &(uint64_t){ 0 }) == KJIT_EPROTO);
	FUZZ_ASSERT(kj__msg_get(m, 0xffff) == NULL || m->n > 0);
}

/* Decodes body; on success checks the fields and that re-encoding them
 * gives the same bytes.  Returns kj__msg_decode's code. */
static int check_body(const uint8_t *body, size_t len, uint16_t type, uint32_t id)
{
	struct kj__msg m;
	int r = kj__msg_decode(body, len, &m);

	if (r < 0) {
		FUZZ_ASSERT(r == KJIT_EPROTO || r == KJIT_ETOOBIG || r == KJIT_ENOMEM);
		FUZZ_ASSERT(m.n == 0 && m.f == NULL);
		return r;
	}
	FUZZ_ASSERT(m.n <= KJ_FIELD_MAX_COUNT);
	FUZZ_ASSERT((m.n == 0) == (len == 0));
	exercise_msg(body, len, &m);
	struct kj__buf b = { 0 };
	FUZZ_ASSERT(kj__msg_begin(&b, type, id) == 0);
	for (size_t i = 0; i < m.n; i++)
		FUZZ_ASSERT(kj__msg_put(&b, m.f[i].tag, m.f[i].p, m.f[i].len) == 0);
	FUZZ_ASSERT(kj__msg_end(&b) == 0);
	FUZZ_ASSERT(b.len == KJ_FRAME_HDR_SIZE + len);
	FUZZ_ASSERT(len == 0 || memcmp(b.p + KJ_FRAME_HDR_SIZE, body, len) == 0);
	struct kj__frame_hdr h;
	FUZZ_ASSERT(kj__frame_hdr_decode(b.p, &h) == 0);
	FUZZ_ASSERT(h.len == len && h.type == type && h.id == id && h.flags == 0);
	kj__buf_free(&b);
	kj__msg_free(&m);
	kj__msg_free(&m); /* twice: must be harmless */
	return 0;
}

/* The plain reading of the stream: frame k starts at off[k]. */
struct linear {
	size_t *off; /* size / 12 + 1 entries */
	size_t n;
	int end_code; /* 0: ran out of bytes; <0: bad header at off[n] */
};

static void parse_linear(const uint8_t *p, size_t size, struct linear *L)
{
	size_t off = 0;

	L->n = 0;
	L->end_code = 0;
	while (size - off >= KJ_FRAME_HDR_SIZE) {
		struct kj__frame_hdr h;
		int r = kj__frame_hdr_decode(p + off, &h);
		FUZZ_ASSERT(h.len == le32(p + off));
		if (r < 0) {
			FUZZ_ASSERT((r == KJIT_ETOOBIG && h.len > KJ_FRAME_MAX) ||
				    (r == KJIT_EPROTO && h.len <= KJ_FRAME_MAX && h.version != KJ_PROTO_VERSION));
			L->end_code = r;
			L->off[L->n] = off;
			return;
		}
		FUZZ_ASSERT(h.version == KJ_PROTO_VERSION && h.len <= KJ_FRAME_MAX);
		if (size - off - KJ_FRAME_HDR_SIZE < h.len)
			return;
		L->off[L->n++] = off;
		off += KJ_FRAME_HDR_SIZE + h.len;
	}
}

/* Feeds the stream to a framer in input-derived chunks; checks each frame
 * against the linear parse. */
static void check_framer(const uint8_t *data, size_t size, const struct linear *L)
{
	struct kj__frames f = { 0 };
	size_t fed = 0, k = 0, consumed = 0, step = 0;
	int stopped = 0;

	while (fed < size && !stopped) {
		/* Chunk sizes: 1..64 bytes, or a large one, chosen by the bytes. */
		uint8_t sel = data[(fed * 7 + step * 13) % size];
		size_t n = sel < 0xf0 ? 1 + sel % 64 : 1 + ((size_t)sel << 6);
		if (n > size - fed)
			n = size - fed;
		if (step++ & 1) {
			FUZZ_ASSERT(kj__frames_feed(&f, data + fed, n) == 0);
		} else {
			uv_buf_t buf;
			kj__framer_alloc(&f, sel * 257u, &buf);
			FUZZ_ASSERT(buf.base != NULL && buf.len >= n);
			FUZZ_ASSERT((uint8_t *)buf.base == f.p + f.len);
			memcpy(buf.base, data + fed, n);
			kj__frames_wrote(&f, n); /* what conn.c's on_read does */
		}
		fed += n;
		FUZZ_ASSERT(kj__frames_buffered(&f) + (f.have_hdr ? KJ_FRAME_HDR_SIZE : 0) == fed - consumed &&
			    f.len <= f.cap);
		for (;;) {
			struct kj__frame_hdr h;
			const uint8_t *body = NULL;
			int r = kj__frames_next(&f, &h, &body);
			if (r == 0)
				break;
			if (r < 0) {
				/* The daemon answers and drops the peer here. */
				FUZZ_ASSERT(k == L->n && r == L->end_code && consumed == L->off[k]);
				stopped = 1;
				break;
			}
			FUZZ_ASSERT(k < L->n && consumed == L->off[k]);
			FUZZ_ASSERT(kj__frames_need(&f) == 0 && body == f.p + f.off);
			FUZZ_ASSERT(memcmp(body, data + consumed + KJ_FRAME_HDR_SIZE, h.len) == 0);
			check_body(body, h.len, h.type, h.id);
			consumed += KJ_FRAME_HDR_SIZE + (size_t)h.len;
			kj__frames_consume(&f);
			k++;
			FUZZ_ASSERT(kj__frames_buffered(&f) + (f.have_hdr ? KJ_FRAME_HDR_SIZE : 0) == fed - consumed);
		}
	}
	if (!stopped) /* every frame seen, and no bad header missed */
		FUZZ_ASSERT(k == L->n && L->end_code == 0);
	kj__frames_free(&f);
	kj__frames_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct linear L;

	/* The input as one frame: header, then its body if all there. */
	if (size >= KJ_FRAME_HDR_SIZE) {
		struct kj__frame_hdr h;
		int r = kj__frame_hdr_decode(data, &h);
		if (r == 0 && h.len <= size - KJ_FRAME_HDR_SIZE)
			check_body(data + KJ_FRAME_HDR_SIZE, h.len, h.type, h.id);
	}
	/* The input as a body. */
	check_body(data, size, KJ_MSG_GET, 1);
	/* The input as a stream. */
	if (size > 0) {
		L.off = malloc((size / KJ_FRAME_HDR_SIZE + 1) * sizeof *L.off);
		FUZZ_ASSERT(L.off != NULL);
		parse_linear(data, size, &L);
		check_framer(data, size, &L);
		free(L.off);
	}
	return 0;
}
