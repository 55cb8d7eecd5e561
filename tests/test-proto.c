/* test-proto.c: the framing (common/proto.c) and the byte buffer
 * (common/buf.c): a message round trip through every field kind, the size
 * and count caps, truncated bodies and frames, a frame read from a pipe,
 * the buffer's printf and JSON helpers, and an out-of-memory loop in the
 * spirit of SQLite's: fail the n-th allocation of building, decoding and
 * reading messages, for every n, and check that each failure comes back as
 * KJIT_ENOMEM with nothing leaked and the buffer left as it was. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "kj_types.h"
#include "proto.h"
#include "oom.h"
#include "test.h"

#define FIELD_HDR 6 /* u16 tag, u32 len: proto.c's FIELD_HDR_SIZE */

static const struct kj__alloc oom_alloc = { o_malloc, o_calloc, o_realloc, o_free };

/* ---- helpers ---- */

static int field_is(const struct kj__field *f, const void *p, size_t n)
{
	return f != NULL && f->len == n && memcmp(f->p, p, n) == 0;
}

static int field_is_str(const struct kj__field *f, const char *s)
{
	return field_is(f, s, strlen(s));
}

/* A body of k fields, tags 1..k, field i holding i bytes of 'a' + i. */
static void make_body(struct kj__buf *b, int k)
{
	uint8_t data[64];

	CHECK_EQ_INT(kj__msg_begin(b, KJ_MSG_PING, 1), 0);
	for (int i = 1; i <= k; i++) {
		memset(data, 'a' + i, (size_t)i);
		CHECK_EQ_INT(kj__msg_put(b, (uint16_t)i, data, (size_t)i), 0);
	}
	CHECK_EQ_INT(kj__msg_end(b), 0);
}

/* ---- ordinary tests ---- */

static void test_roundtrip(void)
{
	struct kj__buf b = { 0 };
	struct kj__frame_hdr h;
	struct kj__msg m;
	const char *opts[] = { "-O3", "", "-DX=1" };
	uint8_t blob[300];
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	char *s = NULL;

	for (size_t i = 0; i < sizeof blob; i++)
		blob[i] = (uint8_t)i; /* includes NUL bytes: a bytes field may */
	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_GET, 0xdeadbeefu), 0);
	CHECK_EQ_INT(kj__msg_put_u32(&b, KJ_F_BACKEND, 2), 0);
	CHECK_EQ_INT(kj__msg_put_str(&b, KJ_F_TARGET, "gfx90a:xnack-"), 0);
	for (size_t i = 0; i < 3; i++)
		CHECK_EQ_INT(kj__msg_put_str(&b, KJ_F_OPTION, opts[i]), 0);
	CHECK_EQ_INT(kj__msg_put(&b, KJ_F_SOURCE, blob, sizeof blob), 0);
	CHECK_EQ_INT(kj__msg_put_i32(&b, KJ_F_CODE, KJIT_ECOMPILE), 0);
	CHECK_EQ_INT(kj__msg_put_u64(&b, KJ_F_COMPILE_US, 0x0123456789abcdefull), 0);
	CHECK_EQ_INT(kj__msg_end(&b), 0);

	CHECK_EQ_INT(kj__frame_hdr_decode(b.p, &h), 0);
	CHECK_EQ_INT(h.len, b.len - KJ_FRAME_HDR_SIZE);
	CHECK_EQ_INT(h.type, KJ_MSG_GET);
	CHECK_EQ_INT(h.version, KJ_PROTO_VERSION);
	CHECK_EQ_INT(h.flags, 0);
	CHECK_EQ_INT(h.id, 0xdeadbeefu);

	CHECK_EQ_INT(kj__msg_decode(b.p + KJ_FRAME_HDR_SIZE, h.len, &m), 0);
	CHECK_EQ_INT(m.n, 8);
	CHECK_EQ_INT(kj__field_u32(kj__msg_get(&m, KJ_F_BACKEND), &u32), 0);
	CHECK_EQ_INT(u32, 2);
	CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_TARGET), 64, &s), 0);
	CHECK_EQ_STR(s, "gfx90a:xnack-");
	free(s);
	size_t pos = 0;
	for (size_t i = 0; i < 3; i++)
		CHECK(field_is_str(kj__msg_next(&m, KJ_F_OPTION, &pos), opts[i]));
	CHECK(kj__msg_next(&m, KJ_F_OPTION, &pos) == NULL);
	CHECK_EQ_INT(pos, m.n);
	CHECK(field_is(kj__msg_get(&m, KJ_F_SOURCE), blob, sizeof blob));
	CHECK_EQ_INT(kj__field_i32(kj__msg_get(&m, KJ_F_CODE), &i32), 0);
	CHECK_EQ_INT(i32, KJIT_ECOMPILE);
	CHECK_EQ_INT(kj__field_u64(kj__msg_get(&m, KJ_F_COMPILE_US), &u64), 0);
	CHECK(u64 == 0x0123456789abcdefull);
	CHECK(kj__msg_get(&m, KJ_F_KERNEL) == NULL);
	/* absent optional string: NULL and 0 */
	s = (char *)&s;
	CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_KERNEL), 64, &s), 0);
	CHECK(s == NULL);
	kj__msg_free(&m);
	CHECK(m.f == NULL && m.n == 0);
	kj__msg_free(&m); /* twice, and NULL: no-ops */
	kj__msg_free(NULL);

	/* an empty body decodes to no fields and allocates nothing */
	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_STOP, 3), 0);
	CHECK_EQ_INT(b.len, KJ_FRAME_HDR_SIZE);
	CHECK_EQ_INT(kj__msg_end(&b), 0);
	CHECK_EQ_INT(kj__msg_decode(b.p + KJ_FRAME_HDR_SIZE, 0, &m), 0);
	CHECK(m.n == 0 && m.f == NULL);
	kj__buf_free(&b);
	CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
	kj__buf_free(NULL);
}

/* Wrong field lengths and bad strings are refused, not read. */
static void test_field_checks(void)
{
	struct kj__buf b = { 0 };
	struct kj__msg m;
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	char *s = NULL;

	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_REPLY, 1), 0);
	CHECK_EQ_INT(kj__msg_put(&b, KJ_F_CODE, "abc", 3), 0);
	CHECK_EQ_INT(kj__msg_put(&b, KJ_F_COMPILE_US, "abcd", 4), 0);
	CHECK_EQ_INT(kj__msg_put(&b, KJ_F_TARGET, "gfx\0x", 5), 0);
	CHECK_EQ_INT(kj__msg_put_str(&b, KJ_F_ERROR, "0123456789"), 0);
	CHECK_EQ_INT(kj__msg_end(&b), 0);
	CHECK_EQ_INT(kj__msg_decode(b.p + KJ_FRAME_HDR_SIZE, b.len - KJ_FRAME_HDR_SIZE, &m), 0);
	CHECK_EQ_INT(kj__field_u32(kj__msg_get(&m, KJ_F_CODE), &u32), KJIT_EPROTO);
	CHECK_EQ_INT(kj__field_i32(kj__msg_get(&m, KJ_F_CODE), &i32), KJIT_EPROTO);
	CHECK_EQ_INT(kj__field_u64(kj__msg_get(&m, KJ_F_COMPILE_US), &u64), KJIT_EPROTO);
	CHECK_EQ_INT(kj__field_u32(NULL, &u32), KJIT_EPROTO);
	CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_TARGET), 64, &s), KJIT_EPROTO);
	CHECK(s == NULL);
	CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_ERROR), 9, &s), KJIT_EPROTO);
	CHECK(s == NULL);
	CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_ERROR), 10, &s), 0);
	CHECK_EQ_STR(s, "0123456789");
	free(s);
	kj__msg_free(&m);
	kj__buf_free(&b);
}

/* KJ_FRAME_MAX and KJ_FIELD_MAX_COUNT, on building and on decoding. */
static void test_caps(void)
{
	struct kj__buf b = { 0 };
	struct kj__frame_hdr h;
	struct kj__msg m;
	uint8_t hdr[KJ_FRAME_HDR_SIZE];

	/* a field before kj__msg_begin */
	CHECK_EQ_INT(kj__msg_put_u32(&b, KJ_F_BACKEND, 1), KJIT_EINVAL);
	CHECK_EQ_INT(kj__msg_end(&b), KJIT_EINVAL);

	/* building: the cap is checked before anything is copied */
	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_REPLY, 1), 0);
	size_t before = b.len;
	CHECK_EQ_INT(kj__msg_put(&b, KJ_F_DATA, "", (size_t)KJ_FRAME_MAX + 1), KJIT_ETOOBIG);
	CHECK_EQ_INT(kj__msg_put_ext(&b, KJ_F_DATA, KJ_FRAME_MAX - FIELD_HDR + 1), KJIT_ETOOBIG);
	CHECK_EQ_INT(b.len, before);
	/* a zero-copy field exactly filling the frame is fine... */
	CHECK_EQ_INT(kj__msg_put_ext(&b, KJ_F_DATA, KJ_FRAME_MAX - FIELD_HDR), 0);
	CHECK_EQ_INT(kj__msg_end_ext(&b, KJ_FRAME_MAX - FIELD_HDR), 0);
	CHECK_EQ_INT(kj__frame_hdr_decode(b.p, &h), 0);
	CHECK_EQ_INT(h.len, KJ_FRAME_MAX);
	/* ...and one byte more is not */
	CHECK_EQ_INT(kj__msg_end_ext(&b, KJ_FRAME_MAX - FIELD_HDR + 1), KJIT_ETOOBIG);

	/* decoding: a header over the cap, a wrong version (h still filled) */
	memcpy(hdr, b.p, sizeof hdr);
	uint32_t big = KJ_FRAME_MAX + 1;
	for (int i = 0; i < 4; i++)
		hdr[i] = (uint8_t)(big >> (8 * i));
	CHECK_EQ_INT(kj__frame_hdr_decode(hdr, &h), KJIT_ETOOBIG);
	memcpy(hdr, b.p, sizeof hdr);
	hdr[6] = KJ_PROTO_VERSION + 8;
	CHECK_EQ_INT(kj__frame_hdr_decode(hdr, &h), KJIT_EPROTO);
	CHECK_EQ_INT(h.version, KJ_PROTO_VERSION + 8);
	CHECK_EQ_INT(h.type, KJ_MSG_REPLY);
	CHECK_EQ_INT(h.id, 1);
	CHECK_EQ_INT(kj__msg_decode(b.p, (size_t)KJ_FRAME_MAX + 1, &m), KJIT_ETOOBIG);
	CHECK(m.n == 0 && m.f == NULL);

	/* field count: KJ_FIELD_MAX_COUNT empty fields decode, one more does not */
	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_JOB, 2), 0);
	for (int i = 0; i < KJ_FIELD_MAX_COUNT; i++)
		CHECK_EQ_INT(kj__msg_put(&b, KJ_F_OPTION, "", 0), 0);
	CHECK_EQ_INT(kj__msg_end(&b), 0);
	CHECK_EQ_INT(kj__msg_decode(b.p + KJ_FRAME_HDR_SIZE, b.len - KJ_FRAME_HDR_SIZE, &m), 0);
	CHECK_EQ_INT(m.n, KJ_FIELD_MAX_COUNT);
	kj__msg_free(&m);
	CHECK_EQ_INT(kj__msg_put(&b, KJ_F_OPTION, "", 0), 0);
	CHECK_EQ_INT(kj__msg_end(&b), 0);
	CHECK_EQ_INT(kj__msg_decode(b.p + KJ_FRAME_HDR_SIZE, b.len - KJ_FRAME_HDR_SIZE, &m), KJIT_ETOOBIG);
	CHECK(m.n == 0 && m.f == NULL);
	kj__buf_free(&b);
}

/* Every prefix of a body: whole fields decode, a cut field is EPROTO; a
 * field length pointing past the end is EPROTO. */
static void test_truncated(void)
{
	struct kj__buf b = { 0 };
	struct kj__msg m;
	const int k = 6;

	make_body(&b, k);
	const uint8_t *body = b.p + KJ_FRAME_HDR_SIZE;
	size_t len = b.len - KJ_FRAME_HDR_SIZE, boundary = 0;
	int whole = 0;
	for (size_t cut = 0; cut <= len; cut++) {
		int r = kj__msg_decode(body, cut, &m);
		if (cut == boundary) {
			CHECK_EQ_INT(r, 0);
			CHECK_EQ_INT(m.n, whole);
			for (int i = 0; i < whole; i++)
				CHECK_EQ_INT(m.f[i].len, i + 1);
			whole++;
			boundary += FIELD_HDR + (size_t)whole;
		} else {
			CHECK_EQ_INT(r, KJIT_EPROTO);
			CHECK(m.n == 0 && m.f == NULL);
		}
		kj__msg_free(&m);
	}
	CHECK_EQ_INT(whole, k + 1);

	/* the last field claims one byte more than the body holds */
	uint8_t *last = b.p + b.len - k - FIELD_HDR;
	last[2] = (uint8_t)(k + 1);
	CHECK_EQ_INT(kj__msg_decode(body, len, &m), KJIT_EPROTO);
	/* and a length near 4 GiB, which must not wrap the offset */
	last[2] = last[3] = last[4] = last[5] = 0xff;
	CHECK_EQ_INT(kj__msg_decode(body, len, &m), KJIT_EPROTO);
	kj__buf_free(&b);
}

/* Frames through a pipe: whole, cut short by the peer, and timed out. */
static void test_frame_fd(void)
{
	struct kj__buf b = { 0 };
	struct kj__frame_hdr h;
	uint8_t *body = NULL;
	int fds[2];

	oom_at = 0;
	oom_live = 0;
	make_body(&b, 4);
	CHECK(pipe(fds) == 0);
	CHECK_EQ_INT(kj__frame_write_fd(fds[1], &b), 0);
	CHECK_EQ_INT(kj__frame_read_fd_with(fds[0], 1000, &oom_alloc, &h, &body), 0);
	CHECK_EQ_INT(h.len, b.len - KJ_FRAME_HDR_SIZE);
	CHECK(memcmp(body, b.p + KJ_FRAME_HDR_SIZE, h.len) == 0);
	CHECK_EQ_INT(oom_live, 1);
	o_free(body);

	/* the header and part of the body, then the writer goes away */
	CHECK(write(fds[1], b.p, b.len - 3) == (ssize_t)(b.len - 3));
	CHECK(close(fds[1]) == 0);
	body = (uint8_t *)&body;
	CHECK_EQ_INT(kj__frame_read_fd_with(fds[0], 1000, &oom_alloc, &h, &body), KJIT_ECONNECT);
	CHECK(body == NULL);
	CHECK_EQ_INT(oom_live, 0);
	CHECK(close(fds[0]) == 0);

	/* only a header, the writer still there: a timeout, nothing kept */
	CHECK(pipe(fds) == 0);
	CHECK(write(fds[1], b.p, KJ_FRAME_HDR_SIZE) == KJ_FRAME_HDR_SIZE);
	CHECK_EQ_INT(kj__frame_read_fd_with(fds[0], 50, &oom_alloc, &h, &body), KJIT_ETIMEDOUT);
	CHECK(body == NULL);
	CHECK_EQ_INT(oom_live, 0);
	CHECK(close(fds[0]) == 0 && close(fds[1]) == 0);
	/* half a header: a timeout too */
	CHECK(pipe(fds) == 0);
	CHECK(write(fds[1], b.p, 5) == 5);
	CHECK_EQ_INT(kj__frame_read_fd(fds[0], 50, &h, &body), KJIT_ETIMEDOUT);
	CHECK(body == NULL);
	CHECK(close(fds[0]) == 0 && close(fds[1]) == 0);
	kj__buf_free(&b);
}

static void test_buf_text(void)
{
	struct kj__buf b = { 0 };
	char big[1000];

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK_EQ_INT(kj__buf_printf(&b, "%d-%s", 42, "ok"), 0);
	CHECK_EQ_INT(b.len, 5);
	/* longer than printf's stack buffer: the second path */
	CHECK_EQ_INT(kj__buf_printf(&b, "[%s]", big), 0);
	CHECK_EQ_INT(b.len, 5 + 2 + sizeof big - 1);
	CHECK(memcmp(b.p, "42-ok[x", 7) == 0 && b.p[b.len - 1] == ']');
	b.len = 0;
	CHECK_EQ_INT(kj__json_str(&b, "a\"b\\c\n\x01"), 0);
	CHECK_EQ_INT(kj__buf_append(&b, "", 1), 0);
	CHECK_EQ_STR((const char *)b.p, "\"a\\\"b\\\\c\\u000a\\u0001\"");
	b.len = 0;
	CHECK_EQ_INT(kj__json_str(&b, NULL), 0);
	CHECK_EQ_INT(b.len, 2);
	kj__buf_free(&b);
}

/* ---- out of memory ---- */

#define OOM_SOURCE (100u << 10) /* forces the buffer through several doublings */

/* One pass of building, decoding and reading messages with oom_alloc, the
 * oom_at-th allocation failing (0: none).  Every call returns 0 or, once
 * the fault fired, KJIT_ENOMEM, after which the pass stops and frees what
 * it holds.  Returns 1 if the pass ran to its end, 0 if it stopped. */
static int oom_pass(void)
{
	struct kj__buf b = { .alloc = &oom_alloc }, t = { .alloc = &oom_alloc };
	struct kj__buf small = { .alloc = &oom_alloc };
	struct kj__msg m = { 0 };
	struct kj__frame_hdr h;
	uint8_t *src = malloc(OOM_SOURCE), *body = NULL;
	char *target = NULL, *opt = NULL;
	char line[600];
	int fds[2] = { -1, -1 }, done = 0, r = 0;
	size_t before;

	CHECK(src != NULL);
	memset(src, 's', OOM_SOURCE);
	memset(line, 'y', sizeof line - 1);
	line[sizeof line - 1] = '\0';
	CHECK(pipe(fds) == 0);

#define STEP(call)                                                    \
	do {                                                          \
		r = (call);                                           \
		if (r == KJIT_ENOMEM)                                 \
			goto out;                                     \
		CHECK_EQ_INT(r, 0);                                   \
	} while (0)
	/* building: each failed growth leaves the buffer as it was */
	STEP(kj__msg_begin(&b, KJ_MSG_GET, 9));
	STEP(kj__msg_put_u32(&b, KJ_F_BACKEND, 1));
	STEP(kj__msg_put_str(&b, KJ_F_TARGET, "gfx942"));
	for (int i = 0; i < 8; i++) {
		before = b.len;
		r = kj__msg_put_str(&b, KJ_F_OPTION, line);
		if (r == KJIT_ENOMEM)
			CHECK_EQ_INT(b.len, before);
		STEP(r);
	}
	before = b.len;
	r = kj__msg_put(&b, KJ_F_SOURCE, src, OOM_SOURCE);
	if (r == KJIT_ENOMEM)
		CHECK_EQ_INT(b.len, before);
	STEP(r);
	STEP(kj__msg_put_u64(&b, KJ_F_COMPILE_US, 77));
	STEP(kj__msg_end(&b));
	STEP(kj__buf_printf(&t, "%s %s", line, line));
	STEP(kj__json_str(&t, "tab\there \"quoted\""));

	/* decoding */
	STEP(kj__msg_decode_with(b.p + KJ_FRAME_HDR_SIZE, b.len - KJ_FRAME_HDR_SIZE, &oom_alloc, &m));
	STEP(kj__field_strdup_with(kj__msg_get(&m, KJ_F_TARGET), 64, &oom_alloc, &target));
	STEP(kj__field_strdup_with(kj__msg_get(&m, KJ_F_OPTION), sizeof line, &oom_alloc, &opt));

	/* reading a small frame back from a pipe */
	STEP(kj__msg_begin(&small, KJ_MSG_REPLY, 9));
	STEP(kj__msg_put_i32(&small, KJ_F_CODE, 0));
	STEP(kj__msg_put_str(&small, KJ_F_KEY, target));
	STEP(kj__msg_end(&small));
	CHECK_EQ_INT(kj__frame_write_fd(fds[1], &small), 0);
	STEP(kj__frame_read_fd_with(fds[0], 1000, &oom_alloc, &h, &body));
#undef STEP

	/* it all worked: check what came out */
	CHECK_EQ_INT(m.n, 12);
	CHECK_EQ_STR(target, "gfx942");
	CHECK_EQ_STR(opt, line);
	CHECK(field_is(kj__msg_get(&m, KJ_F_SOURCE), src, OOM_SOURCE));
	CHECK_EQ_INT(t.len, 2 * strlen(line) + 1 + strlen("\"tab\\u0009here \\\"quoted\\\"\""));
	CHECK_EQ_INT(h.len, small.len - KJ_FRAME_HDR_SIZE);
	CHECK(memcmp(body, small.p + KJ_FRAME_HDR_SIZE, h.len) == 0);
	done = 1;
out:
	if (!done)
		CHECK_EQ_INT(r, KJIT_ENOMEM);
	kj__buf_free(&b);
	kj__buf_free(&t);
	kj__buf_free(&small);
	kj__msg_free(&m);
	o_free(target);
	o_free(opt);
	o_free(body);
	close(fds[0]);
	close(fds[1]);
	free(src);
	return done;
}

static void test_oom(void)
{
	long n;

	/* count the allocations of a clean pass first */
	oom_at = 0;
	oom_live = 0;
	CHECK_EQ_INT(oom_pass(), 1);
	CHECK_EQ_INT(oom_live, 0);
	for (n = 1; n < 10000; n++) {
		oom_at = n;
		oom_calls = 0;
		oom_live = 0;
		int done = oom_pass();
		int fired = oom_calls >= n;
		CHECK_EQ_INT(oom_live, 0); /* nothing leaked, whatever failed */
		/* a fault that fired must surface; none may surface otherwise */
		CHECK_EQ_INT(done, !fired);
		if (done)
			break;
	}
	/* the pass allocates: buffer growth, the field array, 2 strings, a body */
	CHECK(n > 10);
	CHECK(n < 10000);
}

TEST_LIST(TEST(roundtrip) TEST(field_checks) TEST(caps) TEST(truncated) TEST(frame_fd) TEST(buf_text)
		  TEST(oom))
