/* test-detect.c: GPU detection against fake KFD topologies
 * (tests/fixtures/sysfs/), rocminfo's text, this machine's real Vulkan
 * (lavapipe) and CUDA (none here), and the environment override matrix of
 * kj__resolve_env through a fake getenv. */
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "detect.h"
#include "kjit.h"
#include "targetid.h"
#include "test.h"
#include "util.h"

#define FIXTURES KJIT_SRCDIR "/tests/fixtures/sysfs/"
#define MAXGPU 16

static size_t detect_hip(const char *tree, struct kj__gpu *g, size_t max, char *note, size_t notelen)
{
	size_t n = 99;
	char root[4096];
	snprintf(root, sizeof root, FIXTURES "%s", tree);
	CHECK_EQ_INT(kj__detect(KJIT_BACKEND_HIP, root, g, max, &n, note, notelen), 0);
	CHECK(n <= max);
	for (size_t i = 0; i < n; i++) {
		char canon[KJ_TARGET_MAX];
		CHECK_EQ_INT(g[i].backend, KJIT_BACKEND_HIP);
		CHECK_EQ_INT(kj__target_canon(KJIT_BACKEND_HIP, g[i].target, canon, sizeof canon, NULL, 0), 0);
		CHECK_EQ_STR(canon, g[i].target);
	}
	return n;
}

static void test_sysfs_mi250x(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256] = "x";
	CHECK_EQ_INT(detect_hip("mi250x", g, MAXGPU, note, sizeof note), 2);
	/* CPU node 0 skipped; SRAM ECC bit set; noretry -1 leaves xnack "any". */
	CHECK_EQ_STR(g[0].target, "gfx90a:sramecc+");
	CHECK_EQ_STR(g[1].target, "gfx90a:sramecc+");
	CHECK_EQ_STR(g[0].name, "AMD Instinct MI250X");
	CHECK_EQ_STR(note, "");
}

static void test_sysfs_mixed_xnack_off(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256];
	CHECK_EQ_INT(detect_hip("mixed-xnack-off", g, MAXGPU, note, sizeof note), 2);
	/* only the old, reserved ECC bit (0x80000) is set: that is not sramecc+. */
	CHECK_EQ_STR(g[0].target, "gfx90a:sramecc-:xnack-");
	CHECK_EQ_STR(g[0].name, "aldebaran"); /* no product_name: the KFD node name */
	/* gfx1030 supports neither feature: none reported. */
	CHECK_EQ_STR(g[1].target, "gfx1030");
	CHECK_EQ_STR(g[1].name, "sienna_cichlid");
}

static void test_sysfs_mixed_xnack_on(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256];
	CHECK_EQ_INT(detect_hip("mixed-xnack-on", g, MAXGPU, note, sizeof note), 2);
	CHECK_EQ_STR(g[0].target, "gfx90a:sramecc+:xnack+");
	CHECK_EQ_STR(g[1].target, "gfx1030");
}

static void test_sysfs_max_entries(void)
{
	struct kj__gpu g[1];
	char note[256];
	CHECK_EQ_INT(detect_hip("mixed-xnack-on", g, 1, note, sizeof note), 1);
	CHECK_EQ_STR(g[0].target, "gfx90a:sramecc+:xnack+");
	size_t n = 5;
	CHECK_EQ_INT(kj__detect(KJIT_BACKEND_HIP, FIXTURES "mi250x", NULL, 0, &n, NULL, 0), 0);
	CHECK_EQ_INT(n, 0);
}

static void test_sysfs_unknown_processor(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256];
	CHECK_EQ_INT(detect_hip("unknown-gfx", g, MAXGPU, note, sizeof note), 1);
	CHECK_EQ_STR(g[0].target, "gfx942:sramecc+:xnack+");
	CHECK(strstr(note, "gfx_target_version 90099") != NULL);
}

static void test_sysfs_cpu_only(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256] = "";
	CHECK_EQ_INT(detect_hip("cpu-only", g, MAXGPU, note, sizeof note), 0);
	CHECK(strstr(note, "no AMD GPU") != NULL);
	CHECK(strstr(note, "KJIT_HIP_ARCH") != NULL);
}

static void test_sysfs_missing(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256] = "";
	CHECK_EQ_INT(detect_hip("does-not-exist", g, MAXGPU, note, sizeof note), 0);
	CHECK(strstr(note, "no AMD GPU") != NULL);
	CHECK(strstr(note, "class/kfd absent") != NULL);
	CHECK(strstr(note, "KJIT_HIP_ARCH") != NULL);
}

/* The real /sys of this GPU-less machine: no KFD, rocminfo fails. */
static void test_hip_this_machine(void)
{
	struct kj__gpu g[MAXGPU];
	char note[512] = "";
	size_t n = 99;
	struct stat st;
	CHECK_EQ_INT(kj__detect(KJIT_BACKEND_HIP, NULL, g, MAXGPU, &n, note, sizeof note), 0);
	if (stat("/sys/class/kfd", &st) == 0)
		return; /* a machine with AMD GPUs: nothing fixed to check */
	CHECK_EQ_INT(n, 0);
	CHECK(strstr(note, "no AMD GPU") != NULL);
	CHECK(strstr(note, "KJIT_HIP_ARCH") != NULL);
}

static const char rocminfo_text[] =
	"ROCk module is loaded\n"
	"==========\nHSA Agents\n==========\n"
	"*******\nAgent 1\n*******\n"
	"  Name:                    AMD EPYC 7763 64-Core Processor\n"
	"  Marketing Name:          AMD EPYC 7763 64-Core Processor\n"
	"  Device Type:             CPU\n"
	"*******\nAgent 2\n*******\n"
	"  Name:                    gfx90a\n"
	"  Marketing Name:          AMD Instinct MI250X\n"
	"  Device Type:             GPU\n"
	"  ISA Info:\n"
	"    ISA 1\n"
	"      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-\n"
	"*******\nAgent 3\n*******\n"
	"  Name:                    gfx1030\n"
	"  Marketing Name:          AMD Radeon RX 6800\n"
	"  Device Type:             GPU\n"
	"*******\nAgent 4\n*******\n"
	"  Name:                    gfx1200\n"
	"  Marketing Name:          AMD Radeon RX 9060\n"
	"  Device Type:             GPU\n"
	"  ISA Info:\n"
	"    ISA 1\n"
	"      Name:                    amdgcn-amd-amdhsa--gfx12-generic\n"
	"    ISA 2\n"
	"      Name:                    amdgcn-amd-amdhsa--gfx1200\n"
	"*******\nAgent 5\n*******\n"
	"  Name:                    gfx9999\n"
	"  Device Type:             GPU\n";

static void test_rocminfo_parse(void)
{
	struct kj__gpu g[MAXGPU];
	size_t n = 0;
	CHECK_EQ_INT(kj__hip_parse_rocminfo(rocminfo_text, g, MAXGPU, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_STR(g[0].target, "gfx90a:sramecc+:xnack-");
	CHECK_EQ_STR(g[0].name, "AMD Instinct MI250X");
	CHECK_EQ_STR(g[1].target, "gfx1030");
	CHECK_EQ_STR(g[2].target, "gfx1200");
	CHECK_EQ_INT(kj__hip_parse_rocminfo(rocminfo_text, g, 1, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(kj__hip_parse_rocminfo("ROCk module is NOT loaded, possibly no GPU devices\n", g,
					    MAXGPU, &n), 0);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(kj__hip_parse_rocminfo("", g, MAXGPU, &n), 0);
	CHECK_EQ_INT(n, 0);
}

static void test_cuda_this_machine(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256] = "";
	size_t n = 99;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CHECK_EQ_INT(kj__detect(KJIT_BACKEND_CUDA, NULL, g, MAXGPU, &n, note, sizeof note), 0);
	if (h == NULL) {
		CHECK_EQ_INT(n, 0);
		CHECK_EQ_STR(note, "no NVIDIA GPU: libcuda.so.1 not found; set KJIT_CUDA_ARCH (e.g. sm_90)");
		return;
	}
	dlclose(h);
	printf("# cuda: %zu device(s)%s%s\n", n, n ? "" : ": ", note);
	for (size_t i = 0; i < n; i++) {
		printf("#   %s %s %s\n", g[i].target, g[i].name, g[i].version);
		CHECK_EQ_INT(kj__cuda_target_parse(g[i].target, NULL, NULL, 0), 0);
		CHECK(g[i].version[0] != '\0');
	}
}

static void test_vulkan_lavapipe(void)
{
	struct kj__gpu g[MAXGPU];
	char note[256] = "";
	size_t n = 0, llvmpipe = 0;
	struct stat st;
	void *h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	CHECK_EQ_INT(kj__detect(KJIT_BACKEND_VULKAN, NULL, g, MAXGPU, &n, note, sizeof note), 0);
	if (h == NULL) { /* no loader (the GPU machine): say so, name the variable */
		CHECK_EQ_INT(n, 0);
		CHECK(strstr(note, "libvulkan.so.1") != NULL && strstr(note, "KJIT_VULKAN_ENV") != NULL);
		return;
	}
	dlclose(h);
	if (n == 0)
		fprintf(stderr, "vulkan: %s\n", note);
	/* lavapipe (mesa-vulkan-drivers) is installed on the CPU-only machine. */
	if (stat("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", &st) != 0)
		return;
	CHECK(n >= 1);
	for (size_t i = 0; i < n; i++) {
		printf("# vulkan: %s | %s | %s\n", g[i].target, g[i].name, g[i].version);
		CHECK_EQ_INT(g[i].backend, KJIT_BACKEND_VULKAN);
		CHECK_EQ_INT(kj__vulkan_target_parse(g[i].target, NULL, 0), 0);
		CHECK(strncmp(g[i].version, "1.", 2) == 0);
		if (strstr(g[i].name, "llvmpipe") != NULL)
			llvmpipe++;
	}
	CHECK(llvmpipe >= 1);
}

static void test_runtime_versions(void)
{
	char v[KJ_VERSION_STR_MAX];
	struct stat st;
	CHECK_EQ_INT(kj__detect_runtime_version(KJIT_BACKEND_HIP, v, sizeof v), 0);
	printf("# rocm version: \"%s\"\n", v);
	if (stat("/opt/rocm/.info/version", &st) != 0 &&
	    stat("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153", &st) == 0)
		CHECK_EQ_STR(v, "5.2");
	CHECK_EQ_INT(kj__detect_runtime_version(KJIT_BACKEND_CUDA, v, sizeof v), 0);
	printf("# cuda version: \"%s\"\n", v);
	CHECK_EQ_INT(kj__detect_runtime_version(KJIT_BACKEND_VULKAN, v, sizeof v), 0);
	printf("# vulkan loader version: \"%s\"\n", v);
	if (stat("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", &st) == 0)
		CHECK(strncmp(v, "1.", 2) == 0);
	CHECK_EQ_INT(kj__detect_runtime_version(0, v, sizeof v), KJIT_EBACKEND);
	CHECK_EQ_INT(kj__detect(0, NULL, NULL, 0, &(size_t){ 0 }, NULL, 0), KJIT_EBACKEND);
}

/* ---- the environment matrix, through a fake getenv ---- */

static const char *fake_env[16][2];

static const char *fake_getenv(const char *name)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(fake_env) && fake_env[i][0]; i++)
		if (strcmp(fake_env[i][0], name) == 0)
			return fake_env[i][1];
	return NULL;
}

/* Sets the fake environment from NULL-terminated name, value pairs. */
static void env_set(const char *first, ...)
{
	va_list ap;
	size_t i = 0;
	memset(fake_env, 0, sizeof fake_env);
	va_start(ap, first);
	for (const char *k = first; k != NULL && i < KJ_ARRAY_SIZE(fake_env); k = va_arg(ap, const char *)) {
		fake_env[i][0] = k;
		fake_env[i][1] = va_arg(ap, const char *);
		i++;
	}
	va_end(ap);
}

struct resolved {
	int rc;
	char target[KJ_TARGET_MAX], version[KJ_VERSION_STR_MAX], err[512];
	const char *tfrom, *vfrom;
};

static struct resolved resolve(int backend)
{
	struct resolved r;
	memset(&r, 0, sizeof r);
	r.tfrom = r.vfrom = "unset";
	r.rc = kj__resolve_env(backend, fake_getenv, r.target, &r.tfrom, r.version, &r.vfrom, r.err,
			       sizeof r.err);
	return r;
}

static void expect(int backend, const char *target, const char *tfrom, const char *version,
		   const char *vfrom)
{
	struct resolved r = resolve(backend);
	if (r.rc != 0)
		fprintf(stderr, "resolve: %s\n", r.err);
	CHECK_EQ_INT(r.rc, 0);
	CHECK_EQ_STR(r.target, target);
	CHECK_EQ_STR(r.version, version);
	if (tfrom)
		CHECK_EQ_STR(r.tfrom, tfrom);
	else
		CHECK(r.tfrom == NULL);
	if (vfrom)
		CHECK_EQ_STR(r.vfrom, vfrom);
	else
		CHECK(r.vfrom == NULL);
}

static void expect_err(int backend, int rc, const char *msg)
{
	struct resolved r = resolve(backend);
	CHECK_EQ_INT(r.rc, rc);
	if (strstr(r.err, msg) == NULL)
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", r.err, msg);
	CHECK(strstr(r.err, msg) != NULL);
	CHECK_EQ_STR(r.target, "");
	CHECK_EQ_STR(r.version, "");
	CHECK(r.tfrom == NULL && r.vfrom == NULL);
}

static void test_env_nothing_set(void)
{
	env_set(NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "", NULL);
	expect(KJIT_BACKEND_CUDA, "", NULL, "", NULL);
	expect(KJIT_BACKEND_VULKAN, "", NULL, "", NULL);
	/* Empty values count as unset. */
	env_set("KJIT_HIP_ARCH", "", "HSA_OVERRIDE_GFX_VERSION", "", "KJIT_ROCM_VERSION", "", NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "", NULL);
	/* HSA_XNACK alone sets no target. */
	env_set("HSA_XNACK", "1", NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "", NULL);
	expect_err(0, KJIT_EBACKEND, "unknown backend");
}

static void test_env_each_variable_alone(void)
{
	env_set("KJIT_HIP_ARCH", "gfx90a:xnack-:sramecc+", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a:sramecc+:xnack-", "KJIT_HIP_ARCH", "", NULL);
	env_set("HSA_OVERRIDE_GFX_VERSION", "10.3.0", NULL);
	expect(KJIT_BACKEND_HIP, "gfx1030", "HSA_OVERRIDE_GFX_VERSION", "", NULL);
	env_set("HSA_OVERRIDE_GFX_VERSION", "9.0.10", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a", "HSA_OVERRIDE_GFX_VERSION", "", NULL);
	env_set("CANDLE_ROCM_ARCH", "gfx1100", NULL);
	expect(KJIT_BACKEND_HIP, "gfx1100", "CANDLE_ROCM_ARCH", "", NULL);
	env_set("KJIT_ROCM_VERSION", "6.1.3", NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "6.1.3", "KJIT_ROCM_VERSION");
	env_set("CANDLE_ROCM_VERSION", "5.2", NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "5.2", "CANDLE_ROCM_VERSION");
	env_set("KJIT_CUDA_ARCH", "compute_90", NULL);
	expect(KJIT_BACKEND_CUDA, "compute_90", "KJIT_CUDA_ARCH", "", NULL);
	env_set("KJIT_CUDA_VERSION", "13.0", NULL);
	expect(KJIT_BACKEND_CUDA, "", NULL, "13.0", "KJIT_CUDA_VERSION");
	env_set("KJIT_VULKAN_ENV", "vulkan1.2", NULL);
	expect(KJIT_BACKEND_VULKAN, "vulkan1.2", "KJIT_VULKAN_ENV", "", NULL);
}

/* Each backend reads only its own variables. */
static void test_env_backends_isolated(void)
{
	env_set("KJIT_HIP_ARCH", "gfx90a", "HSA_OVERRIDE_GFX_VERSION", "10.3.0", "CANDLE_ROCM_ARCH",
		"gfx1030", "KJIT_ROCM_VERSION", "6.0", "CANDLE_ROCM_VERSION", "5.7", NULL);
	expect(KJIT_BACKEND_CUDA, "", NULL, "", NULL);
	expect(KJIT_BACKEND_VULKAN, "", NULL, "", NULL);
	env_set("KJIT_CUDA_ARCH", "sm_90", "KJIT_CUDA_VERSION", "13.0", "KJIT_VULKAN_ENV", "vulkan1.3", NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "", NULL);
	expect(KJIT_BACKEND_VULKAN, "vulkan1.3", "KJIT_VULKAN_ENV", "", NULL);
	expect(KJIT_BACKEND_CUDA, "sm_90", "KJIT_CUDA_ARCH", "13.0", "KJIT_CUDA_VERSION");
	/* Garbage in another backend's variables is not this backend's error. */
	env_set("KJIT_CUDA_ARCH", "banana", "HSA_OVERRIDE_GFX_VERSION", "banana", NULL);
	expect(KJIT_BACKEND_VULKAN, "", NULL, "", NULL);
}

static void test_env_precedence_pairs(void)
{
	/* KJIT_HIP_ARCH > HSA_OVERRIDE_GFX_VERSION */
	env_set("KJIT_HIP_ARCH", "gfx908", "HSA_OVERRIDE_GFX_VERSION", "10.3.0", NULL);
	expect(KJIT_BACKEND_HIP, "gfx908", "KJIT_HIP_ARCH", "", NULL);
	/* KJIT_HIP_ARCH > CANDLE_ROCM_ARCH */
	env_set("CANDLE_ROCM_ARCH", "gfx1030", "KJIT_HIP_ARCH", "gfx908", NULL);
	expect(KJIT_BACKEND_HIP, "gfx908", "KJIT_HIP_ARCH", "", NULL);
	/* HSA_OVERRIDE_GFX_VERSION > CANDLE_ROCM_ARCH */
	env_set("CANDLE_ROCM_ARCH", "gfx1030", "HSA_OVERRIDE_GFX_VERSION", "11.0.0", NULL);
	expect(KJIT_BACKEND_HIP, "gfx1100", "HSA_OVERRIDE_GFX_VERSION", "", NULL);
	/* all three */
	env_set("CANDLE_ROCM_ARCH", "gfx1030", "HSA_OVERRIDE_GFX_VERSION", "11.0.0", "KJIT_HIP_ARCH",
		"gfx942:xnack+", NULL);
	expect(KJIT_BACKEND_HIP, "gfx942:xnack+", "KJIT_HIP_ARCH", "", NULL);
	/* KJIT_ROCM_VERSION > CANDLE_ROCM_VERSION */
	env_set("CANDLE_ROCM_VERSION", "5.7", "KJIT_ROCM_VERSION", "6.2", NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "6.2", "KJIT_ROCM_VERSION");
	/* the winner shadows a malformed lower variable (only it is read) */
	env_set("KJIT_HIP_ARCH", "gfx90a", "HSA_OVERRIDE_GFX_VERSION", "banana", "CANDLE_ROCM_ARCH",
		"nonsense", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a", "KJIT_HIP_ARCH", "", NULL);
	env_set("KJIT_ROCM_VERSION", "6.2", "CANDLE_ROCM_VERSION", "x", NULL);
	expect(KJIT_BACKEND_HIP, "", NULL, "6.2", "KJIT_ROCM_VERSION");
	/* target and version resolve independently */
	env_set("CANDLE_ROCM_ARCH", "gfx90a", "KJIT_ROCM_VERSION", "6.2", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a", "CANDLE_ROCM_ARCH", "6.2", "KJIT_ROCM_VERSION");
}

static void test_env_hsa_xnack(void)
{
	env_set("HSA_OVERRIDE_GFX_VERSION", "9.0.10", "HSA_XNACK", "1", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a:xnack+", "HSA_OVERRIDE_GFX_VERSION+HSA_XNACK", "", NULL);
	env_set("HSA_OVERRIDE_GFX_VERSION", "9.0.10", "HSA_XNACK", "0", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a:xnack-", "HSA_OVERRIDE_GFX_VERSION+HSA_XNACK", "", NULL);
	/* like the runtime: values other than 0 and 1 leave the mode alone */
	env_set("HSA_OVERRIDE_GFX_VERSION", "9.0.10", "HSA_XNACK", "yes", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a", "HSA_OVERRIDE_GFX_VERSION", "", NULL);
	/* a processor without xnack ignores it */
	env_set("HSA_OVERRIDE_GFX_VERSION", "10.3.0", "HSA_XNACK", "1", NULL);
	expect(KJIT_BACKEND_HIP, "gfx1030", "HSA_OVERRIDE_GFX_VERSION", "", NULL);
	/* KJIT_HIP_ARCH and CANDLE_ROCM_ARCH are taken as written */
	env_set("KJIT_HIP_ARCH", "gfx90a", "HSA_XNACK", "1", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a", "KJIT_HIP_ARCH", "", NULL);
	env_set("CANDLE_ROCM_ARCH", "gfx90a:xnack-", "HSA_XNACK", "1", NULL);
	expect(KJIT_BACKEND_HIP, "gfx90a:xnack-", "CANDLE_ROCM_ARCH", "", NULL);
}

static void test_hsa_xnack_apply(void)
{
	char t[KJ_TARGET_MAX];
	const char *from = NULL;
	env_set("HSA_XNACK", "1", NULL);
	snprintf(t, sizeof t, "gfx90a:sramecc+");
	CHECK_EQ_INT(kj__hsa_xnack_apply(t, fake_getenv, &from), 0);
	CHECK_EQ_STR(t, "gfx90a:sramecc+:xnack+");
	CHECK_EQ_STR(from, "HSA_XNACK");
	from = NULL;
	snprintf(t, sizeof t, "gfx90a:xnack-"); /* already fixed: kept */
	CHECK_EQ_INT(kj__hsa_xnack_apply(t, fake_getenv, &from), 0);
	CHECK_EQ_STR(t, "gfx90a:xnack-");
	CHECK(from == NULL);
	snprintf(t, sizeof t, "gfx1100");
	CHECK_EQ_INT(kj__hsa_xnack_apply(t, fake_getenv, &from), 0);
	CHECK_EQ_STR(t, "gfx1100");
	env_set(NULL);
	snprintf(t, sizeof t, "gfx942");
	CHECK_EQ_INT(kj__hsa_xnack_apply(t, fake_getenv, NULL), 0);
	CHECK_EQ_STR(t, "gfx942");
	snprintf(t, sizeof t, "bogus");
	CHECK_EQ_INT(kj__hsa_xnack_apply(t, fake_getenv, NULL), KJIT_ETARGET);
}

static void test_env_malformed(void)
{
	env_set("KJIT_HIP_ARCH", "gfx90a:bogus+", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_ETARGET,
		   "KJIT_HIP_ARCH=gfx90a:bogus+: unknown target feature 'bogus' (known: sramecc, xnack)");
	env_set("KJIT_HIP_ARCH", "gfx1030:xnack+", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_ETARGET, "KJIT_HIP_ARCH=gfx1030:xnack+: gfx1030 does not support");
	env_set("KJIT_HIP_ARCH", "GFX90A", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_ETARGET, "KJIT_HIP_ARCH=GFX90A: AMD target IDs are lower case");
	env_set("HSA_OVERRIDE_GFX_VERSION", "banana", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "HSA_OVERRIDE_GFX_VERSION=banana: ");
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "major.minor.stepping, e.g. 10.3.0");
	env_set("HSA_OVERRIDE_GFX_VERSION", "10.3", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "HSA_OVERRIDE_GFX_VERSION=10.3: ");
	env_set("HSA_OVERRIDE_GFX_VERSION", "9.0.99", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "HSA_OVERRIDE_GFX_VERSION=9.0.99: ");
	env_set("HSA_OVERRIDE_GFX_VERSION", "-1.0.0", "HSA_XNACK", "1", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "HSA_OVERRIDE_GFX_VERSION=-1.0.0: ");
	env_set("CANDLE_ROCM_ARCH", "amdgcn-amd-amdhsa--gfx90a", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_ETARGET, "CANDLE_ROCM_ARCH=amdgcn-amd-amdhsa--gfx90a: ");
	env_set("KJIT_ROCM_VERSION", "rocm-6", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "KJIT_ROCM_VERSION=rocm-6: expected a version");
	env_set("KJIT_ROCM_VERSION", "6.2/../../x", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "KJIT_ROCM_VERSION=");
	env_set("CANDLE_ROCM_VERSION", "6.", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "CANDLE_ROCM_VERSION=6.: ");
	env_set("KJIT_ROCM_VERSION", "..", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "KJIT_ROCM_VERSION=..: ");
	/* a good target with a bad version is still an error, and clears both */
	env_set("KJIT_HIP_ARCH", "gfx90a", "KJIT_ROCM_VERSION", "6 2", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "KJIT_ROCM_VERSION=6 2: ");
	env_set("KJIT_CUDA_ARCH", "sm_9", NULL);
	expect_err(KJIT_BACKEND_CUDA, KJIT_ETARGET, "KJIT_CUDA_ARCH=sm_9: ");
	env_set("KJIT_CUDA_VERSION", "thirteen", NULL);
	expect_err(KJIT_BACKEND_CUDA, KJIT_EINVAL, "KJIT_CUDA_VERSION=thirteen: ");
	env_set("KJIT_VULKAN_ENV", "vulkan0.9", NULL);
	expect_err(KJIT_BACKEND_VULKAN, KJIT_ETARGET, "KJIT_VULKAN_ENV=vulkan0.9: ");
	/* control characters never reach the message */
	env_set("KJIT_HIP_ARCH", "gfx90a\n:x", NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_ETARGET, "KJIT_HIP_ARCH=gfx90a?:x: ");
	/* long values are cut */
	static char longv[400];
	memset(longv, '9', sizeof longv - 1);
	env_set("HSA_OVERRIDE_GFX_VERSION", longv, NULL);
	expect_err(KJIT_BACKEND_HIP, KJIT_EINVAL, "...: ");
}

static void test_env_real_getenv(void)
{
	char t[KJ_TARGET_MAX], v[KJ_VERSION_STR_MAX], err[256];
	const char *tf, *vf;
	setenv("KJIT_VULKAN_ENV", "vulkan1.1", 1);
	CHECK_EQ_INT(kj__resolve_env(KJIT_BACKEND_VULKAN, NULL, t, &tf, v, &vf, err, sizeof err), 0);
	CHECK_EQ_STR(t, "vulkan1.1");
	CHECK_EQ_STR(tf, "KJIT_VULKAN_ENV");
	CHECK(vf == NULL);
	CHECK_EQ_STR(kj__target_env_name(KJIT_BACKEND_HIP), "KJIT_HIP_ARCH");
	CHECK_EQ_STR(kj__target_env_name(KJIT_BACKEND_CUDA), "KJIT_CUDA_ARCH");
	CHECK_EQ_STR(kj__target_env_name(KJIT_BACKEND_VULKAN), "KJIT_VULKAN_ENV");
	CHECK(kj__target_env_name(0) != NULL);
}

TEST_LIST(TEST(sysfs_mi250x) TEST(sysfs_mixed_xnack_off) TEST(sysfs_mixed_xnack_on)
	  TEST(sysfs_max_entries) TEST(sysfs_unknown_processor) TEST(sysfs_cpu_only)
	  TEST(sysfs_missing) TEST(hip_this_machine) TEST(rocminfo_parse) TEST(cuda_this_machine)
	  TEST(vulkan_lavapipe) TEST(runtime_versions) TEST(env_nothing_set)
	  TEST(env_each_variable_alone) TEST(env_backends_isolated) TEST(env_precedence_pairs)
	  TEST(env_hsa_xnack) TEST(hsa_xnack_apply) TEST(env_malformed) TEST(env_real_getenv))
