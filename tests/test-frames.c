/* test-frames.c: the one incremental frame reader (common/frames.c).  A
 * stream of frames of several sizes (empty body, small, one past the
 * reader's first room) is fed split at every byte boundary, byte by byte,
 * whole in one chunk, and read the way a blocking reader does (never more
 * than kj__frames_need); each way must give back exactly the frames sent.
 * Then: a header announcing more than the cap (the default and a lower
 * one) is refused before any body byte is read or room made for it; another
 * protocol version and garbage are refused and the refusal sticks; a
 * skipped frame's body is dropped as it arrives; a body read in place is
 * handed over without a copy; kj__frame_read_fd reads two frames written
 * at once one at a time; and an out-of-memory loop fails every allocation
 * in turn and checks that nothing leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "frames.h"
#include "kj_types.h"
#include "proto.h"
#include "oom.h"
#include "test.h"

static const struct kj__alloc oom_alloc = { o_malloc, o_calloc, o_realloc, o_free };

/* ---- a stream of frames ---- */

#define N_FRAMES 5
static const size_t body_len[N_FRAMES] = { 0, 1, 37, 5, 200 };

/* Frame i: a DATA field of body_len[i] - 6 bytes (or none), id 100 + i. */
static void build_stream(struct kj__buf *s, size_t big)
{
	struct kj__buf b = { 0 };

	s->len = 0;
	for (size_t i = 0; i < N_FRAMES; i++) {
		size_t n = i == N_FRAMES - 1 && big ? big : body_len[i];
		CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_REPLY, (uint32_t)(100 + i)), 0);
		if (n >= 6) {
			uint8_t *d = malloc(n - 6 + 1);
			CHECK(d != NULL);
			for (size_t k = 0; k < n - 6; k++)
				d[k] = (uint8_t)(k * 7 + i);
			CHECK_EQ_INT(kj__msg_put(&b, KJ_F_DATA, d, n - 6), 0);
			free(d);
		} else if (n > 0) {
			CHECK_EQ_INT(kj__buf_append(&b, "xxxxx", n), 0); /* raw body bytes: the reader does not parse them */
		}
		CHECK_EQ_INT(kj__msg_end(&b), 0);
		CHECK_EQ_INT(kj__buf_append(s, b.p, b.len), 0);
	}
	kj__buf_free(&b);
}

/* Takes every whole frame out of f, checking each against the stream;
 * *k counts frames seen, *at the stream offset of the next. */
static void drain(struct kj__frames *f, const struct kj__buf *s, size_t *k, size_t *at)
{
	struct kj__frame_hdr h;
	const uint8_t *body;
	int r;

	while ((r = kj__frames_next(f, &h, &body)) == 1) {
		struct kj__frame_hdr want;
		CHECK(*k < N_FRAMES);
		CHECK_EQ_INT(kj__frame_hdr_decode(s->p + *at, &want), 0);
		CHECK(h.len == want.len && h.id == 100 + *k && h.type == KJ_MSG_REPLY);
		CHECK(memcmp(body, s->p + *at + KJ_FRAME_HDR_SIZE, h.len) == 0);
		CHECK_EQ_INT(kj__frames_need(f), 0);
		kj__frames_consume(f);
		*at += KJ_FRAME_HDR_SIZE + h.len;
		(*k)++;
	}
	CHECK_EQ_INT(r, 0);
}

static void test_split_everywhere(void)
{
	struct kj__buf s = { 0 };

	build_stream(&s, 0);
	for (size_t cut = 0; cut <= s.len; cut++) {
		struct kj__frames f = { .alloc = &oom_alloc };
		size_t k = 0, at = 0;
		CHECK_EQ_INT(kj__frames_feed(&f, s.p, cut), 0);
		drain(&f, &s, &k, &at);
		CHECK_EQ_INT(kj__frames_feed(&f, s.p + cut, s.len - cut), 0);
		drain(&f, &s, &k, &at);
		CHECK(k == N_FRAMES && at == s.len && !kj__frames_begun(&f));
		kj__frames_free(&f);
		CHECK_EQ_INT(oom_live, 0);
	}
	/* byte by byte, and all frames in one chunk */
	struct kj__frames f = { 0 };
	size_t k = 0, at = 0;
	for (size_t i = 0; i < s.len; i++) {
		CHECK_EQ_INT(kj__frames_feed(&f, s.p + i, 1), 0);
		drain(&f, &s, &k, &at);
	}
	CHECK(k == N_FRAMES && at == s.len);
	k = at = 0;
	CHECK_EQ_INT(kj__frames_feed(&f, s.p, s.len), 0);
	drain(&f, &s, &k, &at);
	CHECK(k == N_FRAMES && at == s.len && kj__frames_buffered(&f) == 0);
	kj__frames_free(&f);
	kj__buf_free(&s);
}

/* Many frames in one chunk come out in order; a large one after them too. */
static void test_many_in_one_chunk(void)
{
	struct kj__buf s = { 0 }, one = { 0 };
	struct kj__frames f = { 0 };
	struct kj__frame_hdr h;
	const uint8_t *body;

	for (uint32_t i = 0; i < 1000; i++) {
		CHECK_EQ_INT(kj__msg_begin(&one, KJ_MSG_PING, i), 0);
		CHECK_EQ_INT(kj__msg_put_u32(&one, KJ_F_SLOTS, i), 0);
		CHECK_EQ_INT(kj__msg_end(&one), 0);
		CHECK_EQ_INT(kj__buf_append(&s, one.p, one.len), 0);
	}
	CHECK_EQ_INT(kj__frames_feed(&f, s.p, s.len), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		struct kj__msg m;
		uint32_t v = 0;
		CHECK_EQ_INT(kj__frames_next(&f, &h, &body), 1);
		CHECK_EQ_INT(h.id, i);
		CHECK_EQ_INT(kj__msg_decode(body, h.len, &m), 0);
		CHECK(kj__field_u32(kj__msg_get(&m, KJ_F_SLOTS), &v) == 0 && v == i);
		kj__msg_free(&m);
		kj__frames_consume(&f);
	}
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), 0);
	CHECK(!kj__frames_begun(&f));
	kj__frames_free(&f);
	kj__buf_free(&one);
	kj__buf_free(&s);
}

/* The blocking way: read no more than kj__frames_need, into the room
 * kj__frames_space gives, then take the body: handed over in place. */
static void test_blocking_take(void)
{
	struct kj__buf s = { 0 };

	build_stream(&s, 300000); /* the last frame is larger than any first room */
	struct kj__frames f = { .alloc = &oom_alloc };
	size_t at = 0;
	for (size_t k = 0; k < N_FRAMES; k++) {
		struct kj__frame_hdr h;
		uint8_t *body = NULL, *room, *last_room = NULL;
		size_t n;
		int r;
		while ((r = kj__frames_take(&f, &h, &body)) == 0) {
			size_t need = kj__frames_need(&f);
			CHECK(need > 0 && at + need <= s.len);
			CHECK_EQ_INT(kj__frames_space(&f, need, &room, &n), 0);
			CHECK(n >= need);
			size_t step = need > 1000 ? need / 3 : need; /* short reads */
			memcpy(room, s.p + at, step);
			kj__frames_wrote(&f, step);
			at += step;
			last_room = room;
		}
		CHECK_EQ_INT(r, 1);
		CHECK_EQ_INT(h.id, 100 + k);
		if (h.len > 0) { /* the body was read in place and handed over: no copy */
			CHECK(memcmp(body, s.p + at - h.len, h.len) == 0);
			CHECK(body <= last_room && last_room < body + h.len);
		} else {
			CHECK(body == NULL);
		}
		o_free(body);
	}
	CHECK(at == s.len && !kj__frames_begun(&f));
	kj__frames_free(&f);
	CHECK_EQ_INT(oom_live, 0);
	kj__buf_free(&s);
}

static void put_hdr(uint8_t *p, uint32_t len, uint8_t version, uint32_t id)
{
	memset(p, 0, KJ_FRAME_HDR_SIZE);
	for (int i = 0; i < 4; i++) {
		p[i] = (uint8_t)(len >> (8 * i));
		p[8 + i] = (uint8_t)(id >> (8 * i));
	}
	p[4] = KJ_MSG_GET;
	p[6] = version;
}

static void test_over_limit(void)
{
	uint8_t hdr[KJ_FRAME_HDR_SIZE];
	struct kj__frame_hdr h;
	const uint8_t *body;
	struct kj__frames f = { .alloc = &oom_alloc };

	put_hdr(hdr, KJ_FRAME_MAX + 1, KJ_PROTO_VERSION, 42);
	CHECK_EQ_INT(kj__frames_feed(&f, hdr, sizeof hdr), 0);
	long live = oom_live;
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), KJIT_ETOOBIG);
	CHECK(h.len == KJ_FRAME_MAX + 1 && h.id == 42); /* filled, so the caller can answer */
	CHECK_EQ_INT(kj__frames_need(&f), 0);           /* asks for no body */
	CHECK_EQ_INT(kj__frames_peek(&f, &h), KJIT_ETOOBIG);
	CHECK_EQ_INT(kj__frames_feed(&f, "more", 4), 0);
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), KJIT_ETOOBIG); /* sticks */
	CHECK(f.cap < (1u << 20) && oom_live == live);             /* no room made for it */
	kj__frames_free(&f);

	/* a lower cap: exactly max passes, one more does not */
	struct kj__frames g = { .max = 100 };
	uint8_t fr[KJ_FRAME_HDR_SIZE + 100] = { 0 };
	put_hdr(fr, 100, KJ_PROTO_VERSION, 1);
	CHECK_EQ_INT(kj__frames_feed(&g, fr, sizeof fr), 0);
	CHECK_EQ_INT(kj__frames_next(&g, &h, &body), 1);
	kj__frames_consume(&g);
	put_hdr(fr, 101, KJ_PROTO_VERSION, 2);
	CHECK_EQ_INT(kj__frames_feed(&g, fr, KJ_FRAME_HDR_SIZE), 0);
	CHECK_EQ_INT(kj__frames_next(&g, &h, &body), KJIT_ETOOBIG);
	CHECK_EQ_INT(h.len, 101);
	kj__frames_free(&g);
	CHECK_EQ_INT(oom_live, 0);
}

static void test_garbage(void)
{
	uint8_t hdr[KJ_FRAME_HDR_SIZE];
	struct kj__frame_hdr h;
	const uint8_t *body;
	struct kj__frames f = { 0 };

	put_hdr(hdr, 3, KJ_PROTO_VERSION + 1, 9);
	CHECK_EQ_INT(kj__frames_feed(&f, hdr, sizeof hdr), 0);
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), KJIT_EPROTO);
	CHECK(h.version == KJ_PROTO_VERSION + 1 && h.id == 9);
	kj__frames_free(&f); /* and a freed reader starts over */
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), 0);

	/* pseudo-random bytes: frames or a refusal, never past the buffer */
	uint32_t x = 12345;
	for (int round = 0; round < 200; round++) {
		uint8_t junk[256];
		for (size_t i = 0; i < sizeof junk; i++) {
			x = x * 1103515245u + 12345u;
			junk[i] = (uint8_t)(x >> 16);
		}
		junk[6] = round & 1 ? KJ_PROTO_VERSION : junk[6]; /* now and then a plausible header */
		struct kj__frames g = { .max = 1000 };
		int r = 0;
		for (size_t i = 0; i < sizeof junk && r >= 0; i += 7) {
			CHECK_EQ_INT(kj__frames_feed(&g, junk + i, i + 7 <= sizeof junk ? 7 : sizeof junk - i), 0);
			while ((r = kj__frames_next(&g, &h, &body)) == 1) {
				CHECK(h.len <= 1000 && body >= g.p && body + h.len <= g.p + g.len);
				kj__frames_consume(&g);
			}
		}
		CHECK(r == 0 || r == KJIT_EPROTO || r == KJIT_ETOOBIG);
		kj__frames_free(&g);
	}
}

/* A frame refused on its header: its body is dropped, now and as it comes;
 * the next frame reads as usual. */
static void test_skip(void)
{
	struct kj__buf s = { 0 };
	struct kj__frames f = { 0 };
	struct kj__frame_hdr h;
	const uint8_t *body;

	build_stream(&s, 0);
	size_t first = KJ_FRAME_HDR_SIZE + body_len[0], second = KJ_FRAME_HDR_SIZE + body_len[1];
	size_t third_end = first + second + KJ_FRAME_HDR_SIZE + body_len[2];
	/* frames 0 and 1 whole, frame 2's header and 10 of its 37 bytes */
	CHECK_EQ_INT(kj__frames_feed(&f, s.p, first + second + KJ_FRAME_HDR_SIZE + 10), 0);
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), 1);
	kj__frames_consume(&f);
	CHECK_EQ_INT(kj__frames_peek(&f, &h), 1);
	CHECK_EQ_INT(h.id, 101);
	kj__frames_skip(&f); /* whole: dropped at once */
	CHECK_EQ_INT(kj__frames_peek(&f, &h), 1);
	CHECK_EQ_INT(h.id, 102);
	kj__frames_skip(&f); /* partial: 27 bytes still to come */
	CHECK(kj__frames_begun(&f) && kj__frames_need(&f) == 27);
	CHECK_EQ_INT(kj__frames_feed(&f, s.p + first + second + KJ_FRAME_HDR_SIZE + 10, 20), 0);
	CHECK(kj__frames_buffered(&f) == 0 && kj__frames_need(&f) == 7);
	CHECK_EQ_INT(kj__frames_feed(&f, s.p + third_end - 7, s.len - (third_end - 7)), 0);
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), 1);
	CHECK_EQ_INT(h.id, 103);
	kj__frames_consume(&f);
	CHECK_EQ_INT(kj__frames_next(&f, &h, &body), 1);
	CHECK_EQ_INT(h.id, 104);
	kj__frames_consume(&f);
	CHECK(!kj__frames_begun(&f));
	kj__frames_free(&f);
	kj__buf_free(&s);
}

/* kj__frame_read_fd (proto.c, on the reader) takes two frames written at
 * once one at a time: it never reads past the frame it returns. */
static void test_read_fd_two_frames(void)
{
	struct kj__buf s = { 0 };
	int fds[2];
	struct kj__frame_hdr h;
	uint8_t *body = NULL;

	build_stream(&s, 0);
	CHECK(pipe(fds) == 0);
	CHECK(write(fds[1], s.p, s.len) == (ssize_t)s.len);
	close(fds[1]);
	size_t at = 0;
	for (uint32_t k = 0; k < N_FRAMES; k++) {
		CHECK_EQ_INT(kj__frame_read_fd(fds[0], 1000, &h, &body), 0);
		CHECK_EQ_INT(h.id, 100 + k);
		CHECK(h.len == 0 ? body == NULL : memcmp(body, s.p + at + KJ_FRAME_HDR_SIZE, h.len) == 0);
		at += KJ_FRAME_HDR_SIZE + h.len;
		free(body);
	}
	CHECK_EQ_INT(kj__frame_read_fd(fds[0], 1000, &h, &body), KJIT_ECONNECT);
	close(fds[0]);
	kj__buf_free(&s);
}

/* Fail the n-th allocation for every n: each failure is KJIT_ENOMEM, the
 * frame stays, and nothing leaks; past the last one the stream reads. */
static void test_oom(void)
{
	struct kj__buf s = { 0 };

	build_stream(&s, 300000);
	for (oom_at = 1;; oom_at++) {
		struct kj__frames f = { .alloc = &oom_alloc };
		size_t at = 0, frames = 0;
		int failed = 0;
		oom_calls = 0;
		while (at < s.len || kj__frames_begun(&f)) {
			struct kj__frame_hdr h;
			uint8_t *body = NULL, *room;
			size_t n, need;
			int r = kj__frames_take(&f, &h, &body);
			if (r == 1) {
				o_free(body);
				frames++;
				continue;
			}
			if (r == KJIT_ENOMEM) {
				failed = 1;
				break;
			}
			CHECK_EQ_INT(r, 0);
			need = kj__frames_need(&f);
			if ((r = kj__frames_space(&f, need > 4096 ? need : 4096, &room, &n)) == KJIT_ENOMEM) {
				failed = 1;
				break;
			}
			CHECK_EQ_INT(r, 0);
			size_t step = n < s.len - at ? n : s.len - at;
			memcpy(room, s.p + at, step);
			kj__frames_wrote(&f, step);
			at += step;
		}
		kj__frames_free(&f);
		CHECK_EQ_INT(oom_live, 0);
		if (!failed) {
			CHECK_EQ_INT(frames, N_FRAMES);
			break;
		}
	}
	CHECK(oom_at > 2); /* several allocations were failed in turn */
	oom_at = 0;
	kj__buf_free(&s);
}

/* A large frame read the way a socket delivers it (the reader asks for 64
 * KiB of room each time, the kernel gives up to 212992 bytes): its buffer
 * ends no larger than the frame and one read's room, never doubled (the
 * frame's size is what its reader is charged for). */
static void test_large_frame_room(void)
{
	const size_t big = 8u << 20, chunks[] = { 212992, 200000, 100000, 65536, 8000 };
	struct kj__buf s = { 0 };

	build_stream(&s, big);
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		struct kj__frames f = { 0 };
		size_t at = 0, k = 0, seen = 0, max_cap = 0;
		while (at < s.len) {
			uint8_t *room;
			size_t n;
			CHECK_EQ_INT(kj__frames_space(&f, 65536, &room, &n), 0);
			size_t step = n < chunks[c] ? n : chunks[c];
			step = step < s.len - at ? step : s.len - at;
			memcpy(room, s.p + at, step);
			kj__frames_wrote(&f, step);
			at += step;
			max_cap = f.cap > max_cap ? f.cap : max_cap;
			drain(&f, &s, &k, &seen);
		}
		CHECK(k == N_FRAMES && seen == s.len);
		CHECK(max_cap <= KJ_FRAME_HDR_SIZE + big + 65536 + 4096);
		kj__frames_free(&f);
	}
	kj__buf_free(&s);
}

TEST_LIST(TEST(split_everywhere) TEST(many_in_one_chunk) TEST(blocking_take) TEST(over_limit) TEST(garbage)
	  TEST(skip) TEST(read_fd_two_frames) TEST(oom)
	  TEST(large_frame_room))
