/* test-objcheck.c: the drop-ins' check of kjitd's answers (client/objcheck.c)
 * on real objects of our compilers (tests/fixtures/objcheck/: NVRTC 13's
 * PTX for compute_90 and CUBINs for sm_90 and sm_80, hiprtc 5.2's code
 * objects for gfx90a and gfx1030, each the kernel
 * `extern "C" __global__ void k(float*x){x[0]=1;}`), and on corrupted
 * variants of them: every one is refused with a phrase saying why.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objcheck.h"
#include "test.h"

#define FIX KJIT_SRCDIR "/tests/fixtures/objcheck/"

/* The file's bytes, malloc'd, into *n. */
static uint8_t *slurp(const char *name, size_t *n)
{
	FILE *f = fopen(name, "rb");
	CHECK(f != NULL);
	uint8_t *p = malloc(1 << 20);
	CHECK(p != NULL);
	*n = fread(p, 1, 1 << 20, f);
	CHECK(*n > 0 && *n < (1 << 20));
	fclose(f);
	return p;
}

static int ok(int backend, const char *target, const uint8_t *p, size_t n)
{
	char why[160];
	int r = kj__object_check(backend, target, p, n, why, sizeof why);
	if (r < 0)
		CHECK(why[0] != '\0');
	return r == 0;
}

static void test_ptx(void)
{
	size_t n;
	uint8_t *p = slurp(FIX "k-compute_90.ptx", &n);

	CHECK(ok(KJIT_BACKEND_CUDA, "compute_90", p, n));
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_80", p, n));   /* .target sm_90 */
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90a", p, n));
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90", p, n - 1)); /* not NUL-terminated */
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90", p, 0));
	p[n / 2] = 0x01; /* a control byte inside */
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90", p, n));
	p[n / 2] = '\0'; /* a NUL inside */
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90", p, n));
	free(p);
	p = slurp(FIX "k-compute_90.ptx", &n);
	char *v = strstr((char *)p, ".version");
	CHECK(v != NULL);
	v[1] = 'V'; /* no .version after the comments */
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90", p, n));
	free(p);
	/* Bytes a squatter might send: text, not PTX; an ELF given as PTX. */
	static const char hello[] = "hello";
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90", (const uint8_t *)hello, sizeof hello));
	p = slurp(FIX "k-sm_90.cubin", &n);
	CHECK(!ok(KJIT_BACKEND_CUDA, "compute_90", p, n));
	free(p);
}

static void test_cubin(void)
{
	size_t n, m;
	uint8_t *p = slurp(FIX "k-sm_90.cubin", &n), *q = slurp(FIX "k-sm_80.cubin", &m);

	CHECK(ok(KJIT_BACKEND_CUDA, "sm_90", p, n));
	CHECK(ok(KJIT_BACKEND_CUDA, "sm_80", q, m));
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_80", p, n)); /* the wrong architecture */
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", q, m));
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", p, 40)); /* cut inside the header */
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", p, n / 4)); /* section headers cut off */
	CHECK(!ok(KJIT_BACKEND_HIP, "gfx90a", p, n));   /* a CUBIN is no AMDGPU object */
	p[18] = 62; /* EM_X86_64 */
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", p, n));
	p[18] = 190;
	p[0] = 'X';
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", p, n));
	p[0] = 0x7f;
	p[4] = 1; /* ELFCLASS32 */
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", p, n));
	free(p);
	free(q);
}

static void test_hsaco(void)
{
	size_t n, m;
	uint8_t *p = slurp(FIX "k-gfx90a.hsaco", &n), *q = slurp(FIX "k-gfx1030.hsaco", &m);

	CHECK(ok(KJIT_BACKEND_HIP, "gfx90a", p, n));
	CHECK(ok(KJIT_BACKEND_HIP, "gfx90a:sramecc+:xnack-", p, n));
	CHECK(ok(KJIT_BACKEND_HIP, "gfx1030", q, m));
	CHECK(!ok(KJIT_BACKEND_HIP, "gfx1030", p, n)); /* the wrong gfx */
	CHECK(!ok(KJIT_BACKEND_HIP, "gfx942", p, n));
	CHECK(!ok(KJIT_BACKEND_HIP, "gfx90a", q, m));
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", p, n)); /* an AMDGPU object is no CUBIN */
	CHECK(!ok(KJIT_BACKEND_HIP, "gfx90a", p, 63));
	p[18] = 190;
	CHECK(!ok(KJIT_BACKEND_HIP, "gfx90a", p, n));
	free(p);
	free(q);
}

static void test_no_check(void)
{
	static const uint8_t spv[] = { 0x03, 0x02, 0x23, 0x07 };
	CHECK(!ok(KJIT_BACKEND_VULKAN, "vulkan1.3", spv, sizeof spv));
	CHECK(!ok(KJIT_BACKEND_CUDA, NULL, spv, sizeof spv));
	CHECK(!ok(KJIT_BACKEND_CUDA, "sm_90", NULL, 0));
}

TEST_LIST(TEST(ptx) TEST(cubin) TEST(hsaco) TEST(no_check))
