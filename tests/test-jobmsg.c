/* test-jobmsg.c: the JOB and RESULT codecs (common/jobmsg.c).  A round
 * trip of each message with every field through the real framing (encode,
 * header, split into fields, decode); then malformed messages, each field
 * missing, repeated, oversize, of the wrong width or holding a NUL, and
 * every truncation of a valid body: each must give its code and one line
 * naming the problem, and leave nothing allocated (the heap's bytes in
 * use, mallinfo2, are the same before and after; a SAN=1 build adds
 * LeakSanitizer). */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobmsg.h"
#include "kj_types.h"
#include "proto.h"
#include "test.h"

/* The heap's bytes in use.  glibc counts a block in its per-thread cache
 * (tcache) as in use, and calloc never takes from it, so the binary runs
 * itself again with the cache off (GLIBC_TUNABLES, before main); each
 * check also runs its decode once before measuring. */
static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

__attribute__((constructor)) static void tcache_off(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)envp;
	if (getenv("KJ_TEST_TCACHE_OFF"))
		return;
	if (setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1) == 0 && setenv("KJ_TEST_TCACHE_OFF", "1", 1) == 0)
		execv("/proc/self/exe", argv); /* failing that, the checks run with the cache on */
}

/* Splits the frame in b into header and fields (the body stays in b). */
static void split(const struct kj__buf *b, uint16_t type, struct kj__msg *m)
{
	struct kj__frame_hdr h;

	CHECK(b->len >= KJ_FRAME_HDR_SIZE);
	CHECK_EQ_INT(kj__frame_hdr_decode(b->p, &h), 0);
	CHECK_EQ_INT(h.type, type);
	CHECK_EQ_INT(h.len, b->len - KJ_FRAME_HDR_SIZE);
	CHECK_EQ_INT(kj__msg_decode(b->p + KJ_FRAME_HDR_SIZE, h.len, m), 0);
}

static int one_line(const char *s)
{
	return s[0] != '\0' && strchr(s, '\n') == NULL;
}

/* ---- JOB ---- */

static const char *const opts[] = { "-O3", "-DN=4", "--std=c++17" };
static const char *const ents[] = { "k1", "k2" };
static const uint8_t src[] = "__global__ void k1() {}\n\0binary tail";
static const uint8_t hdr_a[] = "#define A 1\n";
static const struct kj__header hdrs[] = { { "a.h", hdr_a, sizeof hdr_a - 1 }, { "sub/empty.h", (const uint8_t *)"", 0 } };

static struct kj__compile_job full_job(void)
{
	struct kj__compile_job j = { "gfx90a:xnack-", opts, 3, ents, 2, "k.hip", src, sizeof src, hdrs, 2, NULL };
	return j;
}

static void test_job_roundtrip(void)
{
	struct kj__buf b = { 0 };
	struct kj__msg m;
	struct kj__job_msg jm;
	char err[256] = "";
	struct kj__compile_job j = full_job();

	CHECK_EQ_INT(kj__job_encode(&b, 77, &j), 0);
	split(&b, KJ_MSG_JOB, &m);
	CHECK_EQ_INT(((uint32_t)b.p[8] | (uint32_t)b.p[9] << 8), 77);
	CHECK_EQ_INT(kj__job_decode(&m, &jm, err, sizeof err), 0);
	CHECK_EQ_STR(jm.job.target, "gfx90a:xnack-");
	CHECK_EQ_INT(jm.job.n_options, 3);
	for (size_t i = 0; i < 3; i++)
		CHECK_EQ_STR(jm.job.options[i], opts[i]);
	CHECK_EQ_INT(jm.job.n_entries, 2);
	CHECK_EQ_STR(jm.job.entries[1], "k2");
	CHECK_EQ_STR(jm.job.source_name, "k.hip");
	CHECK(jm.job.source_len == sizeof src && memcmp(jm.job.source, src, sizeof src) == 0);
	CHECK_EQ_INT(jm.job.n_headers, 2);
	CHECK_EQ_STR(jm.job.headers[0].name, "a.h");
	CHECK(jm.job.headers[0].len == sizeof hdr_a - 1 && memcmp(jm.job.headers[0].data, hdr_a, sizeof hdr_a - 1) == 0);
	CHECK_EQ_STR(jm.job.headers[1].name, "sub/empty.h");
	CHECK_EQ_INT(jm.job.headers[1].len, 0);
	kj__job_msg_clear(&jm);
	kj__job_msg_clear(&jm); /* twice is harmless */
	kj__msg_free(&m);

	/* the smallest job: no options, entries, headers or source name */
	struct kj__compile_job small = { .target = "sm_90", .source = src, .source_len = 4 };
	CHECK_EQ_INT(kj__job_encode(&b, 1, &small), 0);
	split(&b, KJ_MSG_JOB, &m);
	CHECK_EQ_INT(kj__job_decode(&m, &jm, err, sizeof err), 0);
	CHECK_EQ_STR(jm.job.source_name, "source");
	CHECK(jm.job.n_options == 0 && jm.job.n_entries == 0 && jm.job.n_headers == 0 && jm.job.source_len == 4);
	kj__job_msg_clear(&jm);
	kj__msg_free(&m);

	/* the encoder refuses a job without its required fields */
	small.target = NULL;
	CHECK_EQ_INT(kj__job_encode(&b, 1, &small), KJIT_EINVAL);
	small.target = "sm_90";
	small.source = NULL;
	CHECK_EQ_INT(kj__job_encode(&b, 1, &small), KJIT_EINVAL);
	kj__buf_free(&b);
}

/* Decodes the body in b (begun with kj__msg_begin, fields added) as a JOB:
 * checks the code, that err names want, and that nothing leaked. */
static void expect_job(struct kj__buf *b, int code, const char *want)
{
	struct kj__msg m;
	struct kj__job_msg jm;
	char err[256] = "";

	CHECK_EQ_INT(kj__msg_end(b), 0);
	split(b, KJ_MSG_JOB, &m);
	kj__job_decode(&m, &jm, err, sizeof err);
	kj__job_msg_clear(&jm);
	size_t before = heap_in_use();
	int r = kj__job_decode(&m, &jm, err, sizeof err);
	if (r != code)
		fprintf(stderr, "expected %d (%s), got %d: %s\n", code, want, r, err);
	CHECK_EQ_INT(r, code);
	CHECK(one_line(err));
	if (strstr(err, want) == NULL)
		fprintf(stderr, "'%s' does not name '%s'\n", err, want);
	CHECK(strstr(err, want) != NULL);
	CHECK(jm.target == NULL && jm.options == NULL && jm.headers == NULL); /* emptied */
	kj__job_msg_clear(&jm);
	if (heap_in_use() != before)
		fprintf(stderr, "leak decoding a job: %s\n", err);
	CHECK_EQ_INT(heap_in_use(), before);
	kj__msg_free(&m);
}

/* Starts a JOB with the fields named by mask (1 TARGET, 2 SOURCE). */
static void job_start(struct kj__buf *b, int mask)
{
	CHECK_EQ_INT(kj__msg_begin(b, KJ_MSG_JOB, 9), 0);
	if (mask & 1)
		CHECK_EQ_INT(kj__msg_put_str(b, KJ_F_TARGET, "gfx90a"), 0);
	if (mask & 2)
		CHECK_EQ_INT(kj__msg_put_str(b, KJ_F_SOURCE, "x"), 0);
}

static void test_job_malformed(void)
{
	struct kj__buf b = { 0 };
	static char big[KJ_SOURCE_MAX + 2];

	memset(big, 'a', sizeof big - 1);
	job_start(&b, 2);
	expect_job(&b, KJIT_EINVAL, "TARGET"); /* missing */
	job_start(&b, 3);
	kj__msg_put_str(&b, KJ_F_TARGET, "gfx1030");
	expect_job(&b, KJIT_EINVAL, "two TARGET"); /* repeated */
	job_start(&b, 2);
	kj__msg_put(&b, KJ_F_TARGET, "gfx\0a", 5);
	expect_job(&b, KJIT_EINVAL, "TARGET"); /* a NUL */
	job_start(&b, 2);
	kj__msg_put(&b, KJ_F_TARGET, big, KJ_TARGET_MAX + 1);
	expect_job(&b, KJIT_EINVAL, "TARGET"); /* oversize */
	job_start(&b, 1);
	expect_job(&b, KJIT_EINVAL, "SOURCE"); /* missing */
	job_start(&b, 3);
	kj__msg_put_str(&b, KJ_F_SOURCE, "y");
	expect_job(&b, KJIT_EINVAL, "two SOURCE");
	job_start(&b, 1);
	kj__msg_put(&b, KJ_F_SOURCE, big, KJ_SOURCE_MAX + 1);
	expect_job(&b, KJIT_ETOOBIG, "source is larger");
	job_start(&b, 3);
	kj__msg_put_str(&b, KJ_F_SOURCE_NAME, "a.cu");
	kj__msg_put_str(&b, KJ_F_SOURCE_NAME, "b.cu");
	expect_job(&b, KJIT_EINVAL, "two SOURCE_NAME");
	job_start(&b, 3);
	kj__msg_put(&b, KJ_F_SOURCE_NAME, big, KJ_NAME_MAX + 1);
	expect_job(&b, KJIT_EINVAL, "SOURCE_NAME");
	job_start(&b, 3);
	kj__msg_put_str(&b, KJ_F_OPTION, "-O2");
	kj__msg_put(&b, KJ_F_OPTION, big, KJ_OPTION_MAX + 1);
	expect_job(&b, KJIT_ETOOBIG, "options");
	job_start(&b, 3);
	kj__msg_put(&b, KJ_F_OPTION, "-D\0X", 4);
	expect_job(&b, KJIT_EINVAL, "options");
	job_start(&b, 3);
	for (int i = 0; i <= KJ_OPTIONS_MAX_COUNT; i++)
		kj__msg_put_str(&b, KJ_F_OPTION, "-O2");
	expect_job(&b, KJIT_ETOOBIG, "too many");
	job_start(&b, 3);
	for (int i = 0; i <= KJ_ENTRIES_MAX_COUNT; i++)
		kj__msg_put_str(&b, KJ_F_ENTRY, "k");
	expect_job(&b, KJIT_ETOOBIG, "entries");
	job_start(&b, 3);
	kj__msg_put_str(&b, KJ_F_HEADER_NAME, "a.h");
	expect_job(&b, KJIT_EPROTO, "without its HEADER_DATA"); /* truncated pair */
	job_start(&b, 3);
	kj__msg_put_str(&b, KJ_F_HEADER_DATA, "x");
	expect_job(&b, KJIT_EPROTO, "HEADER_DATA without");
	job_start(&b, 3);
	kj__msg_put(&b, KJ_F_HEADER_NAME, big, KJ_NAME_MAX + 1);
	kj__msg_put_str(&b, KJ_F_HEADER_DATA, "x");
	expect_job(&b, KJIT_EINVAL, "header name");
	job_start(&b, 3);
	for (int i = 0; i <= KJ_HEADERS_MAX_COUNT; i++) {
		kj__msg_put_str(&b, KJ_F_HEADER_NAME, "h");
		kj__msg_put_str(&b, KJ_F_HEADER_DATA, "");
	}
	expect_job(&b, KJIT_ETOOBIG, "headers");
	job_start(&b, 3);
	for (int i = 0; i < 5; i++) {
		kj__msg_put_str(&b, KJ_F_HEADER_NAME, "h");
		CHECK_EQ_INT(kj__msg_put(&b, KJ_F_HEADER_DATA, big, KJ_SOURCE_MAX), 0);
	}
	expect_job(&b, KJIT_ETOOBIG, "add up");
	kj__buf_free(&b);
}

/* Every prefix of a valid body that still splits into fields decodes to
 * success or to a clear error, and leaks nothing either way. */
static void test_job_truncated(void)
{
	struct kj__buf b = { 0 };
	struct kj__compile_job j = full_job();
	char err[256];

	CHECK_EQ_INT(kj__job_encode(&b, 3, &j), 0);
	size_t len = b.len - KJ_FRAME_HDR_SIZE, split_ok = 0, failed = 0;
	for (size_t n = 0; n < len; n++) {
		struct kj__msg m;
		struct kj__job_msg jm;
		if (kj__msg_decode(b.p + KJ_FRAME_HDR_SIZE, n, &m) < 0)
			continue; /* the framing refuses it: the worker exits */
		split_ok++;
		kj__job_decode(&m, &jm, err, sizeof err);
		kj__job_msg_clear(&jm);
		size_t before = heap_in_use();
		err[0] = '\0';
		int r = kj__job_decode(&m, &jm, err, sizeof err);
		if (r < 0) {
			failed++;
			CHECK(one_line(err));
		}
		kj__job_msg_clear(&jm);
		CHECK_EQ_INT(heap_in_use(), before);
		kj__msg_free(&m);
	}
	CHECK(split_ok > 5 && failed > 0); /* field boundaries were reached */
	kj__buf_free(&b);
}

/* ---- RESULT ---- */

static void test_result_roundtrip(void)
{
	struct kj__buf b = { 0 };
	struct kj__msg m;
	struct kj__result out;
	char err[256] = "";
	static const uint8_t obj[] = { 0x7f, 'E', 'L', 'F', 0, 1, 2 };
	struct kj__result ok = { 0, obj, sizeof obj, "warning: x", "f<int>\t_Z1fIiEvv\n", NULL, 1234567890123ull };

	CHECK_EQ_INT(kj__result_encode(&b, 5, &ok), 0);
	split(&b, KJ_MSG_RESULT, &m);
	CHECK_EQ_INT(kj__result_decode(&m, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.code, 0);
	CHECK(out.len == sizeof obj && memcmp(out.data, obj, sizeof obj) == 0);
	CHECK(out.data >= b.p && out.data < b.p + b.len); /* points into the body */
	CHECK_EQ_STR(out.log, "warning: x");
	CHECK_EQ_STR(out.lowered, "f<int>\t_Z1fIiEvv\n");
	CHECK(out.error == NULL);
	CHECK(out.compile_us == 1234567890123ull);
	kj__result_clear(&out);
	kj__result_clear(&out);
	kj__msg_free(&m);

	/* a failure: no DATA or LOWERED on the wire even if given */
	struct kj__result bad = { KJIT_ECOMPILE, obj, sizeof obj, "k.cu(1): error", "a\tb\n", "nvrtc rejected it", 7 };
	CHECK_EQ_INT(kj__result_encode(&b, 6, &bad), 0);
	split(&b, KJ_MSG_RESULT, &m);
	CHECK(kj__msg_get(&m, KJ_F_DATA) == NULL && kj__msg_get(&m, KJ_F_LOWERED) == NULL);
	CHECK_EQ_INT(kj__result_decode(&m, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.code, KJIT_ECOMPILE);
	CHECK(out.data == NULL && out.lowered == NULL);
	CHECK_EQ_STR(out.log, "k.cu(1): error");
	CHECK_EQ_STR(out.error, "nvrtc rejected it");
	CHECK(out.compile_us == 7);
	kj__result_clear(&out);
	kj__msg_free(&m);

	bad.code = 3; /* not a code */
	CHECK_EQ_INT(kj__result_encode(&b, 6, &bad), KJIT_EINVAL);
	kj__buf_free(&b);
}

static void expect_result(struct kj__buf *b, int code, const char *want)
{
	struct kj__msg m;
	struct kj__result out;
	char err[256] = "";

	CHECK_EQ_INT(kj__msg_end(b), 0);
	split(b, KJ_MSG_RESULT, &m);
	kj__result_decode(&m, &out, err, sizeof err);
	kj__result_clear(&out);
	size_t before = heap_in_use();
	int r = kj__result_decode(&m, &out, err, sizeof err);
	if (r != code || strstr(err, want) == NULL)
		fprintf(stderr, "expected %d naming '%s', got %d: %s\n", code, want, r, err);
	CHECK_EQ_INT(r, code);
	CHECK(one_line(err) && strstr(err, want) != NULL);
	CHECK(out.log == NULL && out.error == NULL && out.lowered == NULL && out.data == NULL);
	kj__result_clear(&out);
	CHECK_EQ_INT(heap_in_use(), before);
	kj__msg_free(&m);
}

/* A RESULT: CODE 0 (mask 1), DATA (2), LOG (4). */
static void result_start(struct kj__buf *b, int mask)
{
	CHECK_EQ_INT(kj__msg_begin(b, KJ_MSG_RESULT, 4), 0);
	if (mask & 1)
		kj__msg_put_i32(b, KJ_F_CODE, 0);
	if (mask & 2)
		kj__msg_put_str(b, KJ_F_DATA, "obj");
	if (mask & 4)
		kj__msg_put_str(b, KJ_F_LOG, "a log");
}

static void test_result_malformed(void)
{
	struct kj__buf b = { 0 };
	static char big[KJ_OBJECT_MAX + 2];

	memset(big, 'a', sizeof big - 1);
	result_start(&b, 6);
	expect_result(&b, KJIT_EWORKER, "CODE"); /* missing */
	result_start(&b, 7);
	kj__msg_put_i32(&b, KJ_F_CODE, KJIT_ECOMPILE);
	expect_result(&b, KJIT_EWORKER, "two CODE");
	result_start(&b, 6);
	kj__msg_put_i32(&b, KJ_F_CODE, 1);
	expect_result(&b, KJIT_EWORKER, "CODE"); /* positive: not a code */
	result_start(&b, 6);
	kj__msg_put(&b, KJ_F_CODE, "\0\0", 2);
	expect_result(&b, KJIT_EWORKER, "CODE"); /* wrong width */
	result_start(&b, 5);
	expect_result(&b, KJIT_EWORKER, "no object"); /* DATA missing */
	result_start(&b, 5);
	kj__msg_put(&b, KJ_F_DATA, "", 0);
	expect_result(&b, KJIT_EWORKER, "no object");
	result_start(&b, 7);
	kj__msg_put_str(&b, KJ_F_DATA, "obj2");
	expect_result(&b, KJIT_EWORKER, "two DATA");
	result_start(&b, 5);
	CHECK_EQ_INT(kj__msg_put(&b, KJ_F_DATA, big, KJ_OBJECT_MAX + 1), 0);
	expect_result(&b, KJIT_ETOOBIG, "size limit");
	result_start(&b, 3);
	kj__msg_put(&b, KJ_F_LOG, "a\0b", 3);
	expect_result(&b, KJIT_EWORKER, "LOG");
	result_start(&b, 3);
	kj__msg_put(&b, KJ_F_LOG, big, KJ_RESULT_LOG_MAX + 1);
	expect_result(&b, KJIT_EWORKER, "LOG");
	result_start(&b, 7);
	kj__msg_put_str(&b, KJ_F_LOG, "again");
	expect_result(&b, KJIT_EWORKER, "two LOG");
	result_start(&b, 3);
	kj__msg_put(&b, KJ_F_ERROR, big, KJ_RESULT_ERROR_MAX + 1);
	expect_result(&b, KJIT_EWORKER, "ERROR");
	result_start(&b, 7);
	kj__msg_put_str(&b, KJ_F_LOWERED, "no tab here\n");
	expect_result(&b, KJIT_EWORKER, "lowered names");
	result_start(&b, 7);
	kj__msg_put(&b, KJ_F_LOWERED, big, KJ_LOWERED_MAX + 1);
	expect_result(&b, KJIT_EWORKER, "LOWERED");
	result_start(&b, 7);
	kj__msg_put_u32(&b, KJ_F_COMPILE_US, 5);
	expect_result(&b, KJIT_EWORKER, "COMPILE_US"); /* wrong width */
	result_start(&b, 7);
	kj__msg_put_u64(&b, KJ_F_COMPILE_US, 5);
	kj__msg_put_u64(&b, KJ_F_COMPILE_US, 6);
	expect_result(&b, KJIT_EWORKER, "two COMPILE_US");
	kj__buf_free(&b);
}

static void test_result_truncated(void)
{
	struct kj__buf b = { 0 };
	static const uint8_t obj[] = "object bytes";
	struct kj__result ok = { 0, obj, sizeof obj, "log", "e\tl\n", NULL, 42 };
	char err[256];
	size_t split_ok = 0, failed = 0;

	CHECK_EQ_INT(kj__result_encode(&b, 2, &ok), 0);
	for (size_t n = 0; n < b.len - KJ_FRAME_HDR_SIZE; n++) {
		struct kj__msg m;
		struct kj__result out;
		if (kj__msg_decode(b.p + KJ_FRAME_HDR_SIZE, n, &m) < 0)
			continue;
		split_ok++;
		kj__result_decode(&m, &out, err, sizeof err);
		kj__result_clear(&out);
		size_t before = heap_in_use();
		err[0] = '\0';
		if (kj__result_decode(&m, &out, err, sizeof err) < 0) {
			failed++;
			CHECK(one_line(err));
		}
		kj__result_clear(&out);
		CHECK_EQ_INT(heap_in_use(), before);
		kj__msg_free(&m);
	}
	CHECK(split_ok >= 3 && failed >= 2);
	kj__buf_free(&b);
}

TEST_LIST(TEST(job_roundtrip) TEST(job_malformed) TEST(job_truncated) TEST(result_roundtrip)
	  TEST(result_malformed) TEST(result_truncated))
