/* fuzz-target.c: target names of every backend (common/targetid.c).
 *
 * The input, cut at its first NUL, is tried as a target of every backend
 * (and of backends that do not exist) with kj__target_canon, at several
 * output sizes; as an AMD target ID, whose canonical form must parse again
 * to the same target and format to the same text (format(parse(x)) is a
 * fixed point); and as HSA_OVERRIDE_GFX_VERSION, whose processor must be
 * one the AMD parser accepts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kjit.h"
#include "targetid.h"

static void check_err(const char *err, size_t errlen)
{
	FUZZ_ASSERT(memchr(err, '\0', errlen) != NULL && err[0] != '\0');
	for (const char *p = err; *p; p++)
		FUZZ_ASSERT((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
}

static void check_amd(const char *s)
{
	struct kj__amd_target t, t2;
	char out[KJ_TARGET_MAX], out2[KJ_TARGET_MAX], canon[KJ_TARGET_MAX], err[256];

	memset(&t, 0x5a, sizeof t);
	int r = kj__amd_target_parse(s, &t, err, sizeof err);
	if (r != 0) {
		FUZZ_ASSERT(r == KJIT_ETARGET);
		check_err(err, sizeof err);
		return;
	}
	FUZZ_ASSERT(kj__amd_processor_known(t.processor));
	FUZZ_ASSERT(t.xnack >= KJ_FEAT_ANY && t.xnack <= KJ_FEAT_OFF);
	FUZZ_ASSERT(t.sramecc >= KJ_FEAT_ANY && t.sramecc <= KJ_FEAT_OFF);
	int xn = -1, sr = -1;
	FUZZ_ASSERT(kj__amd_processor_supports(t.processor, &xn, &sr) == 0);
	FUZZ_ASSERT((xn || t.xnack == KJ_FEAT_ANY) && (sr || t.sramecc == KJ_FEAT_ANY));
	FUZZ_ASSERT(kj__amd_target_format(&t, out, sizeof out) == 0);
	/* The canonical form is a fixed point. */
	memset(&t2, 0x5a, sizeof t2);
	FUZZ_ASSERT(kj__amd_target_parse(out, &t2, err, sizeof err) == 0);
	FUZZ_ASSERT(strcmp(t.processor, t2.processor) == 0 && t.xnack == t2.xnack && t.sramecc == t2.sramecc);
	FUZZ_ASSERT(kj__amd_target_format(&t2, out2, sizeof out2) == 0 && strcmp(out, out2) == 0);
	FUZZ_ASSERT(kj__target_canon(KJIT_BACKEND_HIP, s, canon, sizeof canon, err, sizeof err) == 0);
	FUZZ_ASSERT(strcmp(canon, out) == 0);
	/* Too small an output buffer is an error, never a cut string. */
	size_t need = strlen(out) + 1;
	FUZZ_ASSERT(kj__amd_target_format(&t, out2, need - 1) == KJIT_EINVAL);
	FUZZ_ASSERT(kj__amd_target_format(&t, out2, need) == 0 && strcmp(out, out2) == 0);
	/* Compatibility: reflexive; "any" on both features serves everything. */
	FUZZ_ASSERT(kj__amd_target_compatible(&t, &t) == 1);
	struct kj__amd_target any = t;
	any.xnack = any.sramecc = KJ_FEAT_ANY;
	FUZZ_ASSERT(kj__amd_target_compatible(&any, &t) == 1);
	FUZZ_ASSERT(kj__amd_target_compatible(&t, &any) == (t.xnack == KJ_FEAT_ANY && t.sramecc == KJ_FEAT_ANY));
	int w = kj__amd_wavefront(&t);
	FUZZ_ASSERT(w == 32 || w == 64);
}

static void check_canon(const char *s)
{
	static const size_t lens[] = { 1, 5, 8, KJ_TARGET_MAX };
	char out[KJ_TARGET_MAX + 8], err[256];

	for (int b = -1; b <= 5; b++) {
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			memset(out, 'z', sizeof out);
			int r = kj__target_canon(b, s, out, lens[i], err, sizeof err);
			if (r == 0) {
				FUZZ_ASSERT(kjit_backend_name(b) != NULL);
				FUZZ_ASSERT(memchr(out, '\0', lens[i]) != NULL && out[0] != '\0');
				FUZZ_ASSERT(out[lens[i]] == 'z'); /* nothing written past outlen */
				FUZZ_ASSERT(strchr(out, '/') == NULL && strstr(out, "..") == NULL);
				/* Canonical is canonical: canon(canon(x)) == canon(x). */
				char again[KJ_TARGET_MAX];
				FUZZ_ASSERT(kj__target_canon(b, out, again, sizeof again, err, sizeof err) == 0);
				FUZZ_ASSERT(strcmp(again, out) == 0);
			} else {
				FUZZ_ASSERT(r == KJIT_ETARGET || r == KJIT_EBACKEND || r == KJIT_EINVAL);
				FUZZ_ASSERT(out[lens[i]] == 'z');
			}
		}
	}
	int ptx = -1;
	if (kj__cuda_target_parse(s, &ptx, err, sizeof err) == 0)
		FUZZ_ASSERT(ptx == (strncmp(s, "compute_", 8) == 0));
	else
		check_err(err, sizeof err);
	if (kj__vulkan_target_parse(s, err, sizeof err) != 0)
		check_err(err, sizeof err);
}

static void check_hsa(const char *s)
{
	char out[32], err[256];
	struct kj__amd_target t;

	int r = kj__hsa_override_to_processor(s, out, sizeof out, err, sizeof err);
	if (r != 0) {
		FUZZ_ASSERT(r == KJIT_EINVAL);
		check_err(err, sizeof err);
		return;
	}
	FUZZ_ASSERT(kj__amd_processor_known(out));
	FUZZ_ASSERT(kj__amd_target_parse(out, &t, err, sizeof err) == 0 && strcmp(t.processor, out) == 0);
	/* A buffer one byte short is refused. */
	char small[32];
	FUZZ_ASSERT(kj__hsa_override_to_processor(s, small, strlen(out), err, sizeof err) == KJIT_EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size);

	if (s == NULL)
		return 0;
	check_amd(s);
	check_canon(s);
	check_hsa(s);
	FUZZ_ASSERT(kj__target_canon(KJIT_BACKEND_HIP, NULL, (char[8]){ 0 }, 8, NULL, 0) != 0);
	free(s);
	return 0;
}
