/* test-key.c: the cache key (cache/key.c).  The known answer below pins the
 * on-disk encoding of docs/cache.md: it was computed once, independently of
 * this code, with python3's hashlib over the encoding written out by hand
 * (see docs/cache.md, "Cache key").  If it changes, every existing cache is
 * silently invalidated: change KEY_VERSION_TAG instead. */
#include <string.h>

#include "cache.h"
#include "kjit.h"
#include "sha.h"
#include "test.h"

static const char *const opts[] = { "-O3", "-ffast-math" };
static const char *const ents[] = { "rms_norm", "add", "add" };
static const char *const hnames[] = { "b.h", "a.h" };
static const uint8_t hb[] = "int b;";
static const uint8_t ha[] = "int a;";
static const uint8_t *const hdata[] = { hb, ha };
static const size_t hlen[] = { 6, 6 };
static const uint8_t src[] = "#include \"a.h\"\n__global__ void add() {}\n";

static struct kj__key_input base(void)
{
	struct kj__key_input in = {
		.backend = KJIT_BACKEND_HIP,
		.compiler = "hiprtc 6.0",
		.target = "gfx90a:sramecc+:xnack-",
		.version = "6.0",
		.options = opts,
		.n_options = 2,
		.entries = ents,
		.n_entries = 3,
		.source = src,
		.source_len = sizeof src - 1,
		.header_names = hnames,
		.header_data = hdata,
		.header_len = hlen,
		.n_headers = 2,
	};
	return in;
}

static void key_of(const struct kj__key_input *in, char hex[65])
{
	CHECK_EQ_INT(kj__cache_key(in, hex), 0);
	CHECK_EQ_INT(strlen(hex), 64);
}

static void test_known_answer(void)
{
	struct kj__key_input in = base();
	char hex[65];

	/* python3 hashlib, see the header comment: the legacy key (entries in
	 * it, tag 6), what every backend's key was before entries left it */
	CHECK_EQ_INT(kj__cache_key_legacy(&in, hex), 0);
	CHECK_EQ_STR(hex, "c4f378b7d37b742011e19230c3bf20009f23ba5d6f799b2750f7f8ad4febfaec");
	/* hip's key now: the same encoding without tag 6 */
	key_of(&in, hex);
	CHECK_EQ_STR(hex, "3bd0ccb203a453892f3e4b7f102e4e35e8e185195606c49d6f6891974e6c76e8");
	/* vulkan keeps its entries (shaderc's entry point changes the SPIR-V) */
	in.backend = KJIT_BACKEND_VULKAN;
	key_of(&in, hex);
	CHECK_EQ_STR(hex, "96dddbdd51b8bf98a3f46be0bcc6c2b93eef2e85704baebb9e3c01daa79ee417");
	CHECK_EQ_INT(kj__cache_key_legacy(&in, hex), 0);
	CHECK_EQ_STR(hex, "96dddbdd51b8bf98a3f46be0bcc6c2b93eef2e85704baebb9e3c01daa79ee417");
}

/* SHA-256 (common/sha.c, OpenSSL's SHA256_* functions): the FIPS 180-2
 * vectors one-shot and streamed in uneven pieces, and streamed equal to
 * one-shot at every length over a block boundary or two. */
static void test_sha_vectors(void)
{
	static const struct {
		const char *msg;
		size_t repeat;
		const char *hex;
	} fips[] = {
		{ "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
		{ "", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
	};
	uint8_t d[KJ_SHA256_LEN], buf[300];
	char hex[65];

	for (size_t i = 0; i < sizeof fips / sizeof fips[0]; i++) {
		size_t n = strlen(fips[i].msg), total = n * fips[i].repeat;
		uint8_t *m = malloc(total + 1);
		CHECK(m != NULL);
		for (size_t k = 0; k < fips[i].repeat; k++)
			memcpy(m + k * n, fips[i].msg, n);
		CHECK_EQ_INT(kj__sha256(m, total, d), 0);
		kj__hex(d, hex);
		CHECK_EQ_STR(hex, fips[i].hex);
		struct kj__sha *s = NULL;
		CHECK_EQ_INT(kj__sha_new(&s), 0);
		for (size_t off = 0, step = 1; off < total; off += step, step = step * 3 + 1)
			CHECK_EQ_INT(kj__sha_update(s, m + off, step < total - off ? step : total - off), 0);
		CHECK_EQ_INT(kj__sha_final(s, d), 0);
		kj__sha_free(s);
		kj__hex(d, hex);
		CHECK_EQ_STR(hex, fips[i].hex);
		free(m);
	}
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 13 + 5);
	for (size_t n = 0; n <= sizeof buf; n += 7) {
		uint8_t x[KJ_SHA256_LEN];
		struct kj__sha *s = NULL;
		CHECK_EQ_INT(kj__sha256(buf, n, x), 0);
		CHECK_EQ_INT(kj__sha_new(&s), 0);
		CHECK_EQ_INT(kj__sha_update(s, buf, n / 2), 0);
		CHECK_EQ_INT(kj__sha_update(s, buf + n / 2, n - n / 2), 0);
		CHECK_EQ_INT(kj__sha_final(s, d), 0);
		kj__sha_free(s);
		CHECK(memcmp(x, d, sizeof x) == 0);
	}
	kj__sha_free(NULL);
}

/* hip and cuda: every entry list gives one key, the entry-less request's
 * key under the legacy rule too (so old objects of entry-less requests stay
 * valid); the legacy key still tells entry lists apart. */
static void test_entries_leave_the_key(void)
{
	static const char *const ents2[] = { "rms_norm" };
	static const int backends[] = { KJIT_BACKEND_HIP, KJIT_BACKEND_CUDA };
	char k0[65], k[65], l0[65], l[65];

	for (size_t b = 0; b < 2; b++) {
		struct kj__key_input in = base();
		in.backend = backends[b];
		CHECK_EQ_INT(kj__cache_key_entries_in(in.backend), 0);
		key_of(&in, k0);
		CHECK_EQ_INT(kj__cache_key_legacy(&in, l0), 0);
		CHECK(strcmp(k0, l0) != 0);
		in.entries = ents2;
		in.n_entries = 1;
		key_of(&in, k);
		CHECK_EQ_STR(k, k0);
		CHECK_EQ_INT(kj__cache_key_legacy(&in, l), 0);
		CHECK(strcmp(l, l0) != 0);
		in.n_entries = 0;
		key_of(&in, k);
		CHECK_EQ_STR(k, k0);
		CHECK_EQ_INT(kj__cache_key_legacy(&in, l), 0);
		CHECK_EQ_STR(l, k0);
	}
	CHECK_EQ_INT(kj__cache_key_entries_in(KJIT_BACKEND_VULKAN), 1);
}

static void test_every_field_changes_key(void)
{
	struct kj__key_input in;
	char k0[65], k[65];
	static const char *const opts2[] = { "-O2", "-ffast-math" };
	static const char *const ents2[] = { "rms_norm" };
	static const uint8_t hb2[] = "int B;";
	static const uint8_t *const hdata2[] = { hb2, ha };
	static const char *const hnames2[] = { "c.h", "a.h" };
	static const uint8_t src2[] = "#include \"a.h\"\n__global__ void add() { }\n";

	in = base();
	key_of(&in, k0);
#define DIFFERS(stmt)                  \
	do {                           \
		in = base();           \
		stmt;                  \
		key_of(&in, k);        \
		CHECK(strcmp(k, k0) != 0); \
	} while (0)
	DIFFERS(in.backend = KJIT_BACKEND_CUDA);
	DIFFERS(in.compiler = "hiprtc 6.1");
	DIFFERS(in.target = "gfx90a");
	DIFFERS(in.version = "6.1");
	DIFFERS(in.options = opts2);
	DIFFERS(in.n_options = 1);
	DIFFERS(in.n_options = 0);
	in = base();
	in.backend = KJIT_BACKEND_VULKAN; /* the backend whose key has its entries */
	key_of(&in, k0);
	DIFFERS(in.backend = KJIT_BACKEND_VULKAN; in.entries = ents2; in.n_entries = 1);
	DIFFERS(in.backend = KJIT_BACKEND_VULKAN; in.n_entries = 0);
	in = base();
	key_of(&in, k0);
	DIFFERS(in.source = src2; in.source_len = sizeof src2 - 1);
	DIFFERS(in.source_len--);
	DIFFERS(in.header_data = hdata2);
	DIFFERS(in.header_names = hnames2);
	DIFFERS(in.n_headers = 1);
	DIFFERS(in.n_headers = 0);
#undef DIFFERS
}

static void test_field_boundaries(void)
{
	/* Moving bytes from one field into the next must change the key. */
	struct kj__key_input in = base();
	char a[65], b[65];
	static const char *const o1[] = { "-O3 -x" };
	static const char *const o2[] = { "-O3", "-x" };

	in.options = o1;
	in.n_options = 1;
	key_of(&in, a);
	in.options = o2;
	in.n_options = 2;
	key_of(&in, b);
	CHECK(strcmp(a, b) != 0);
	in = base();
	in.compiler = "hiprtc 6.0gfx90a";
	in.target = "";
	key_of(&in, a);
	in.compiler = "hiprtc 6.0";
	in.target = "gfx90a";
	key_of(&in, b);
	CHECK(strcmp(a, b) != 0);
}

static void test_entry_order_and_duplicates_do_not_matter(void)
{
	struct kj__key_input in = base();
	char k0[65], k[65];

	in.backend = KJIT_BACKEND_VULKAN;
	static const char *const e1[] = { "add", "rms_norm" };
	static const char *const e2[] = { "rms_norm", "add", "rms_norm", "add" };

	key_of(&in, k0);
	in.entries = e1;
	in.n_entries = 2;
	key_of(&in, k);
	CHECK_EQ_STR(k, k0);
	in.entries = e2;
	in.n_entries = 4;
	key_of(&in, k);
	CHECK_EQ_STR(k, k0);
}

static void test_option_order_matters(void)
{
	struct kj__key_input in = base();
	char k0[65], k[65];
	static const char *const o[] = { "-ffast-math", "-O3" };

	key_of(&in, k0);
	in.options = o;
	key_of(&in, k);
	CHECK(strcmp(k, k0) != 0);
}

static void test_header_order_does_not_matter(void)
{
	struct kj__key_input in = base();
	char k0[65], k[65];
	static const char *const n2[] = { "a.h", "b.h" };
	static const uint8_t *const d2[] = { ha, hb };

	key_of(&in, k0);
	in.header_names = n2;
	in.header_data = d2;
	key_of(&in, k);
	CHECK_EQ_STR(k, k0);
}

static void test_bad_input(void)
{
	struct kj__key_input in = base();
	char k[65];
	static const char *const dup[] = { "a.h", "a.h" };

	in.backend = 0;
	CHECK_EQ_INT(kj__cache_key(&in, k), KJIT_EINVAL);
	in = base();
	in.target = NULL;
	CHECK_EQ_INT(kj__cache_key(&in, k), KJIT_EINVAL);
	in = base();
	in.header_names = dup;
	CHECK_EQ_INT(kj__cache_key(&in, k), KJIT_EINVAL);
	in = base();
	in.source = NULL;
	CHECK_EQ_INT(kj__cache_key(&in, k), KJIT_EINVAL);
	/* empty everything is fine */
	struct kj__key_input e = { .backend = KJIT_BACKEND_VULKAN, .compiler = "", .target = "", .version = "" };
	CHECK_EQ_INT(kj__cache_key(&e, k), 0);
}

TEST_LIST(TEST(known_answer) TEST(sha_vectors) TEST(entries_leave_the_key) TEST(every_field_changes_key) TEST(field_boundaries)
	  TEST(entry_order_and_duplicates_do_not_matter) TEST(option_order_matters)
	  TEST(header_order_does_not_matter) TEST(bad_input))
