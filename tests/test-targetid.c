/* test-targetid.c: target IDs of every backend: parsing, canonical form,
 * rejections with their reasons, compatibility both ways, and the
 * HSA_OVERRIDE_GFX_VERSION mapping. */
#include "kjit.h"
#include "targetid.h"
#include "test.h"
#include "util.h"

static void canon_ok(const char *in, const char *want)
{
	char out[KJ_TARGET_MAX], err[256] = "";
	int rc = kj__target_canon(KJIT_BACKEND_HIP, in, out, sizeof out, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "canon(%s): %s\n", in, err);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(out, want);
}

/* in is rejected with KJIT_ETARGET and a reason containing why. */
static void amd_bad(const char *in, const char *why)
{
	struct kj__amd_target t;
	char err[256] = "";
	CHECK_EQ_INT(kj__amd_target_parse(in, &t, err, sizeof err), KJIT_ETARGET);
	if (strstr(err, why) == NULL)
		fprintf(stderr, "parse(%s): reason \"%s\" lacks \"%s\"\n", in ? in : "(null)", err, why);
	CHECK(strstr(err, why) != NULL);
}

static struct kj__amd_target amd(const char *s)
{
	struct kj__amd_target t;
	CHECK_EQ_INT(kj__amd_target_parse(s, &t, NULL, 0), 0);
	return t;
}

static void test_parse_plain(void)
{
	struct kj__amd_target t = amd("gfx90a");
	CHECK_EQ_STR(t.processor, "gfx90a");
	CHECK_EQ_INT(t.xnack, KJ_FEAT_ANY);
	CHECK_EQ_INT(t.sramecc, KJ_FEAT_ANY);
	t = amd("gfx90a:xnack+");
	CHECK_EQ_INT(t.xnack, KJ_FEAT_ON);
	CHECK_EQ_INT(t.sramecc, KJ_FEAT_ANY);
	t = amd("gfx908:sramecc-");
	CHECK_EQ_INT(t.sramecc, KJ_FEAT_OFF);
	canon_ok("gfx1030", "gfx1030");
	canon_ok("gfx1100", "gfx1100");
	canon_ok("gfx942:xnack+", "gfx942:xnack+");
}

static void test_canonical_sorting(void)
{
	canon_ok("gfx90a:xnack-:sramecc+", "gfx90a:sramecc+:xnack-");
	canon_ok("gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack-");
	canon_ok("gfx906:xnack+:sramecc-", "gfx906:sramecc-:xnack+");
	canon_ok("gfx940:xnack-", "gfx940:xnack-");
}

/* Every combination of every feature round-trips through format/parse. */
static void test_roundtrip_combinations(void)
{
	static const char *const procs[] = { "gfx906", "gfx908", "gfx90a", "gfx942" };
	static const char *const st[] = { "", "+", "-" };
	for (size_t p = 0; p < KJ_ARRAY_SIZE(procs); p++)
		for (int s = 0; s < 3; s++)
			for (int x = 0; x < 3; x++) {
				char in[64], out[KJ_TARGET_MAX];
				snprintf(in, sizeof in, "%s%s%s%s%s", procs[p], s ? ":sramecc" : "", st[s],
					 x ? ":xnack" : "", st[x]);
				struct kj__amd_target t = amd(in);
				CHECK_EQ_INT(t.sramecc, s);
				CHECK_EQ_INT(t.xnack, x);
				CHECK_EQ_INT(kj__amd_target_format(&t, out, sizeof out), 0);
				CHECK_EQ_STR(out, in);
			}
}

/* The processors Debian's comgr 2.4 lists, and newer ones LLVM knows. */
static void test_processor_table(void)
{
	static const char *const known[] = {
		"gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704",
		"gfx705", "gfx801", "gfx802", "gfx803", "gfx805", "gfx810", "gfx900", "gfx902",
		"gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940", "gfx941",
		"gfx942", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031",
		"gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1100", "gfx1101",
		"gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1200", "gfx1201",
	};
	for (size_t i = 0; i < KJ_ARRAY_SIZE(known); i++) {
		char out[KJ_TARGET_MAX];
		CHECK(kj__amd_processor_known(known[i]));
		struct kj__amd_target t = amd(known[i]);
		CHECK_EQ_INT(kj__amd_target_format(&t, out, sizeof out), 0);
		CHECK_EQ_STR(out, known[i]);
	}
	CHECK(!kj__amd_processor_known("gfx1000"));
	CHECK(!kj__amd_processor_known("gfx9"));
	CHECK(!kj__amd_processor_known(""));
	/* Feature support columns (LLVM TargetParser.cpp AMDGCNGPUs). */
	struct { const char *p; int x, s; } sup[] = {
		{ "gfx803", 0, 0 }, { "gfx801", 1, 0 }, { "gfx900", 1, 0 }, { "gfx906", 1, 1 },
		{ "gfx908", 1, 1 }, { "gfx90a", 1, 1 }, { "gfx90c", 1, 0 }, { "gfx942", 1, 1 },
		{ "gfx1010", 1, 0 }, { "gfx1030", 0, 0 }, { "gfx1100", 0, 0 }, { "gfx1201", 0, 0 },
	};
	for (size_t i = 0; i < KJ_ARRAY_SIZE(sup); i++) {
		int x = -1, s = -1;
		CHECK_EQ_INT(kj__amd_processor_supports(sup[i].p, &x, &s), 0);
		CHECK_EQ_INT(x, sup[i].x);
		CHECK_EQ_INT(s, sup[i].s);
	}
	CHECK_EQ_INT(kj__amd_processor_supports("gfx123", NULL, NULL), KJIT_ETARGET);
}

static void test_wavefront(void)
{
	struct kj__amd_target t = amd("gfx90a");
	CHECK_EQ_INT(kj__amd_wavefront(&t), 64);
	t = amd("gfx803");
	CHECK_EQ_INT(kj__amd_wavefront(&t), 64);
	t = amd("gfx1010");
	CHECK_EQ_INT(kj__amd_wavefront(&t), 32);
	t = amd("gfx1030");
	CHECK_EQ_INT(kj__amd_wavefront(&t), 32);
	t = amd("gfx1201");
	CHECK_EQ_INT(kj__amd_wavefront(&t), 32);
}

static void test_rejections(void)
{
	amd_bad("amdgcn-amd-amdhsa--gfx90a", "without the triple: 'gfx90a'");
	amd_bad("amdgcn-amd-amdhsa--gfx90a:xnack-", "'gfx90a:xnack-'");
	amd_bad("gfx1030:xnack-", "gfx1030 does not support the xnack feature");
	amd_bad("gfx1100:sramecc+", "does not support the sramecc feature");
	amd_bad("gfx90c:sramecc+", "gfx90c does not support the sramecc feature");
	amd_bad("gfx90a:xnack", "needs '+' or '-'");
	amd_bad("gfx90a:xnack+:xnack-", "given twice");
	amd_bad("gfx90a:sramecc+:sramecc+", "given twice");
	amd_bad("gfx90a:bogus+", "unknown target feature 'bogus' (known: sramecc, xnack)");
	amd_bad("gfx90a:sram-ecc+", "unknown target feature 'sram-ecc'");
	amd_bad("gfx90a:", "empty target feature");
	amd_bad("gfx90a::xnack+", "empty target feature");
	amd_bad("", "empty AMD target ID");
	amd_bad(NULL, "empty AMD target ID");
	amd_bad("gfx9000", "unknown AMD processor 'gfx9000'");
	amd_bad("sm_90", "character '_' not allowed");
	amd_bad("vulkan1", "unknown AMD processor 'vulkan1'");
	amd_bad("gfx90a xnack+", "character ' ' not allowed");
	amd_bad("gfx90a/x", "character '/' not allowed");
	amd_bad("gfx90a\n", "not allowed");
	char longid[300];
	memset(longid, 'a', sizeof longid - 1);
	longid[sizeof longid - 1] = '\0';
	amd_bad(longid, "longer than");
}

/* Decision: upper case is rejected (targetid.h allows only [a-z0-9:+-]), with
 * the lower-case spelling in the reason, so a cache never holds two names
 * for one target and the user sees what to write. */
static void test_upper_case_rejected(void)
{
	amd_bad("GFX90A", "lower case: write 'gfx90a'");
	amd_bad("gfx90A:XNACK+", "write 'gfx90a:xnack+'");
}

static int compat(const char *built, const char *want)
{
	struct kj__amd_target b = amd(built), w = amd(want);
	return kj__amd_target_compatible(&b, &w);
}

static void test_compatibility(void)
{
	/* any serves xnack+ and xnack-, and everything. */
	CHECK(compat("gfx90a", "gfx90a"));
	CHECK(compat("gfx90a", "gfx90a:xnack+"));
	CHECK(compat("gfx90a", "gfx90a:xnack-"));
	CHECK(compat("gfx90a", "gfx90a:sramecc+:xnack-"));
	CHECK(compat("gfx90a:sramecc+", "gfx90a:sramecc+:xnack+"));
	CHECK(compat("gfx90a:xnack+", "gfx90a:sramecc-:xnack+"));
	/* a fixed feature serves only the same value, never "any". */
	CHECK(compat("gfx90a:xnack+", "gfx90a:xnack+"));
	CHECK(!compat("gfx90a:xnack+", "gfx90a"));
	CHECK(!compat("gfx90a:xnack-", "gfx90a"));
	CHECK(!compat("gfx90a:xnack+", "gfx90a:xnack-"));
	CHECK(!compat("gfx90a:xnack-", "gfx90a:xnack+"));
	CHECK(!compat("gfx90a:sramecc+", "gfx90a:sramecc-"));
	CHECK(!compat("gfx90a:sramecc+:xnack-", "gfx90a:xnack-"));
	CHECK(compat("gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack-"));
	/* different processors never, whatever the features. */
	CHECK(!compat("gfx90a", "gfx908"));
	CHECK(!compat("gfx908", "gfx90a"));
	CHECK(!compat("gfx1030", "gfx1031"));
	CHECK(!compat("gfx942", "gfx940"));
	CHECK(!kj__amd_target_compatible(NULL, NULL));
}

static void test_format_errors(void)
{
	struct kj__amd_target t = amd("gfx90a:sramecc+:xnack-");
	char small[8];
	CHECK_EQ_INT(kj__amd_target_format(&t, small, sizeof small), KJIT_EINVAL);
	struct kj__amd_target bad = { .processor = "gfx123" };
	char out[KJ_TARGET_MAX];
	CHECK_EQ_INT(kj__amd_target_format(&bad, out, sizeof out), KJIT_EINVAL);
	t.xnack = 7;
	CHECK_EQ_INT(kj__amd_target_format(&t, out, sizeof out), KJIT_EINVAL);
}

static void override_ok(const char *v, const char *want)
{
	char out[32], err[256] = "";
	int rc = kj__hsa_override_to_processor(v, out, sizeof out, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "override(%s): %s\n", v, err);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(out, want);
}

static void override_bad(const char *v, const char *why)
{
	char out[32], err[256] = "";
	CHECK_EQ_INT(kj__hsa_override_to_processor(v, out, sizeof out, err, sizeof err), KJIT_EINVAL);
	if (strstr(err, why) == NULL)
		fprintf(stderr, "override(%s): reason \"%s\" lacks \"%s\"\n", v ? v : "(null)", err, why);
	CHECK(strstr(err, why) != NULL);
}

static void test_hsa_override_mapping(void)
{
	override_ok("9.0.10", "gfx90a");
	override_ok("10.3.0", "gfx1030");
	override_ok("11.0.0", "gfx1100");
	override_ok("9.0.0", "gfx900");
	override_ok("9.0.6", "gfx906");
	override_ok("9.0.8", "gfx908");
	override_ok("9.0.12", "gfx90c");
	override_ok("9.4.2", "gfx942");
	override_ok("8.0.3", "gfx803");
	override_ok("10.1.0", "gfx1010");
	override_ok("10.3.6", "gfx1036");
	override_ok("11.5.1", "gfx1151");
	override_ok("12.0.1", "gfx1201");
	override_ok("010.3.0", "gfx1030"); /* sscanf %u reads it so too */
}

static void test_hsa_override_malformed(void)
{
	override_bad("banana", "major.minor.stepping");
	override_bad("banana", "e.g. 10.3.0");
	override_bad("10.3", "major.minor.stepping");
	override_bad("10.3.0.1", "major.minor.stepping");
	override_bad("-1.0.0", "major.minor.stepping");
	override_bad("9.0.99", "out of range");
	override_bad("9.0.16", "out of range");
	override_bad("0.0.0", "out of range");
	override_bad("64.0.0", "out of range");
	override_bad("10.2.0", "names no known AMD processor");
	override_bad("9.0.1", "names no known AMD processor (gfx901)");
	override_bad("", "empty");
	override_bad(NULL, "empty");
	override_bad(" 10.3.0", "major.minor.stepping");
	override_bad("10.3.0 ", "major.minor.stepping");
	override_bad("+10.3.0", "major.minor.stepping");
	override_bad("10..0", "major.minor.stepping");
	override_bad("gfx1030", "major.minor.stepping");
	override_bad("1000000000000.3.0", "major.minor.stepping");
}

static void cuda_ok(const char *s, int want_ptx)
{
	int ptx = -1;
	char err[256] = "";
	CHECK_EQ_INT(kj__cuda_target_parse(s, &ptx, err, sizeof err), 0);
	CHECK_EQ_INT(ptx, want_ptx);
}

static void cuda_bad(const char *s)
{
	char err[256] = "";
	CHECK_EQ_INT(kj__cuda_target_parse(s, NULL, err, sizeof err), KJIT_ETARGET);
	CHECK(strstr(err, "sm_90") != NULL);
}

static void test_cuda_targets(void)
{
	cuda_ok("sm_90", 0);
	cuda_ok("sm_90a", 0);
	cuda_ok("sm_52", 0);
	cuda_ok("sm_100", 0);
	cuda_ok("sm_120a", 0);
	cuda_ok("sm_100f", 0);
	cuda_ok("compute_90", 1);
	cuda_ok("compute_90a", 1);
	cuda_ok("compute_75", 1);
	cuda_bad("");
	cuda_bad(NULL);
	cuda_bad("sm_");
	cuda_bad("sm_9");
	cuda_bad("sm_09");
	cuda_bad("sm_900");
	cuda_bad("sm_1000");
	cuda_bad("sm_90b");
	cuda_bad("sm_90aa");
	cuda_bad("SM_90");
	cuda_bad("compute90");
	cuda_bad("gfx90a");
	cuda_bad("sm_90 ");
	char out[KJ_TARGET_MAX];
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_CUDA, "compute_80", out, sizeof out, NULL, 0), 0);
	CHECK_EQ_STR(out, "compute_80");
}

static void test_vulkan_targets(void)
{
	char out[KJ_TARGET_MAX], err[256] = "";
	CHECK_EQ_INT(kj__vulkan_target_parse("vulkan1.1", NULL, 0), 0);
	CHECK_EQ_INT(kj__vulkan_target_parse("vulkan1.2", NULL, 0), 0);
	CHECK_EQ_INT(kj__vulkan_target_parse("vulkan1.3", NULL, 0), 0);
	CHECK_EQ_INT(kj__vulkan_target_parse("vulkan1.0", NULL, 0), 0); /* glslc's default */
	CHECK_EQ_INT(kj__vulkan_target_parse("vulkan0.9", err, sizeof err), KJIT_ETARGET);
	CHECK(strstr(err, "vulkan1.0, vulkan1.1, vulkan1.2 or vulkan1.3") != NULL);
	CHECK_EQ_INT(kj__vulkan_target_parse("vulkan1.4", NULL, 0), KJIT_ETARGET);
	CHECK_EQ_INT(kj__vulkan_target_parse("spv1.5", NULL, 0), KJIT_ETARGET);
	CHECK_EQ_INT(kj__vulkan_target_parse(NULL, err, sizeof err), KJIT_ETARGET);
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_VULKAN, "vulkan1.3", out, sizeof out, NULL, 0), 0);
	CHECK_EQ_STR(out, "vulkan1.3");
}

static void test_canon_dispatch(void)
{
	char out[KJ_TARGET_MAX], err[256] = "";
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_NONE, "gfx90a", out, sizeof out, err, sizeof err),
		     KJIT_EBACKEND);
	CHECK_EQ_INT(kj__target_canon(42, "gfx90a", out, sizeof out, NULL, 0), KJIT_EBACKEND);
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_HIP, "sm_90", out, sizeof out, NULL, 0), KJIT_ETARGET);
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_CUDA, "gfx90a", out, sizeof out, NULL, 0), KJIT_ETARGET);
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_VULKAN, "sm_90", out, sizeof out, NULL, 0), KJIT_ETARGET);
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_CUDA, "sm_90", out, 3, NULL, 0), KJIT_EINVAL);
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_HIP, "gfx90a", NULL, 0, NULL, 0), KJIT_EINVAL);
	/* A one-byte error buffer is not overrun, and NULL err is allowed. */
	char tiny[1] = { 'x' };
	CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_HIP, "gfx90a:bogus+", out, sizeof out, tiny, 1),
		     KJIT_ETARGET);
	CHECK_EQ_INT(tiny[0], '\0');
}

static void test_processor_from_version(void)
{
	char out[32];
	CHECK_EQ_INT(kj__amd_processor_from_version(9, 0, 10, out, sizeof out), 0);
	CHECK_EQ_STR(out, "gfx90a");
	CHECK_EQ_INT(kj__amd_processor_from_version(11, 0, 3, out, sizeof out), 0);
	CHECK_EQ_STR(out, "gfx1103");
	CHECK_EQ_INT(kj__amd_processor_from_version(9, 0, 99, out, sizeof out), KJIT_ETARGET);
	CHECK_EQ_INT(kj__amd_processor_from_version(0, 0, 0, out, sizeof out), KJIT_ETARGET);
	CHECK_EQ_INT(kj__amd_processor_from_version(10, 3, 0, out, 4), KJIT_ETARGET);
}

TEST_LIST(TEST(parse_plain) TEST(canonical_sorting) TEST(roundtrip_combinations)
	  TEST(processor_table) TEST(wavefront) TEST(rejections) TEST(upper_case_rejected)
	  TEST(compatibility) TEST(format_errors) TEST(hsa_override_mapping)
	  TEST(hsa_override_malformed) TEST(cuda_targets) TEST(vulkan_targets)
	  TEST(canon_dispatch) TEST(processor_from_version))
