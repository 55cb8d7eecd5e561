/* amd.c: facts about the AMD toolchain that hiprtc and hipcc share: where
 * the device-libs bitcode lives, a fingerprint of it for the cache key, and
 * target parsing through common/targetid.h.
 *
 * Device-libs version: Debian's rocm-device-libs ships no version file
 * (AMDDeviceLibsConfig.cmake has none, and a worker must not run
 * dpkg-query), so the identity is "device-libs " plus the first 16 hex
 * digits of SHA-256 over the sorted names, sizes and contents of every *.bc
 * file of the bitcode directory (3.3 MB; about 10 ms once per worker).  It
 * changes exactly when the bitcode that is linked into every object does.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compint.h"
#include "kj_types.h"
#include "sha.h"
#include "targetid.h"
#include "util.h"

#define DEVLIBS_ID_HEX 16         /* hex digits of the fingerprint we keep */
#define DEVLIBS_FILE_MAX (64u << 20) /* one .bc file; the largest is ~1 MB */

static const char *const bitcode_dirs[] = {
	"/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", /* Debian, Ubuntu */
	"/opt/rocm/amdgcn/bitcode",                  /* AMD's packages */
	"/opt/rocm/lib/llvm/lib/clang/amdgcn/bitcode",
	"/usr/lib64/amdgcn/bitcode",                 /* Fedora */
	"/usr/lib/amdgcn/bitcode",
};

const char *kj__amd_bitcode_dir(void)
{
	struct stat st;

	for (size_t i = 0; i < KJ_ARRAY_SIZE(bitcode_dirs); i++)
		if (stat(bitcode_dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
			return bitcode_dirs[i];
	return NULL;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Feeds name, size and bytes of each *.bc file of dir, sorted by name, to s. */
static int hash_dir(struct kj__sha *s, const char *dir)
{
	int r = KJIT_EIO;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		goto out;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 4 || strcmp(e->d_name + l - 3, ".bc") != 0)
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap ? cap * 2 : 64) * sizeof *names);
			if (nn == NULL) {
				r = KJIT_ENOMEM;
				goto out;
			}
			names = nn;
			cap = cap ? cap * 2 : 64;
		}
		if ((names[n] = kj__strdup(e->d_name)) == NULL) {
			r = KJIT_ENOMEM;
			goto out;
		}
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof *names, name_cmp);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		uint8_t *data = NULL;
		size_t len = 0;
		char sz[32];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (kj__read_file(path, DEVLIBS_FILE_MAX, &data, &len) < 0)
			goto out;
		snprintf(sz, sizeof sz, " %zu\n", len);
		kj__sha_update(s, names[i], strlen(names[i]));
		kj__sha_update(s, sz, strlen(sz));
		kj__sha_update(s, data, len);
		free(data);
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (d)
		closedir(d);
	return r;
}

int kj__amd_devlibs_id(char *out, size_t outlen)
{
	int r = KJIT_ENOMEM;
	struct kj__sha *s = NULL;
	uint8_t dig[KJ_SHA256_LEN];
	char hex[KJ_SHA256_HEX_LEN + 1];
	const char *dir = kj__amd_bitcode_dir();

	if (dir == NULL) {
		snprintf(out, outlen, "device-libs none");
		return 0;
	}
	if (kj__sha_new(&s) < 0)
		goto out;
	if ((r = hash_dir(s, dir)) < 0)
		goto out;
	if ((r = kj__sha_final(s, dig)) < 0)
		goto out;
	kj__hex(dig, hex);
	snprintf(out, outlen, "device-libs %.*s", DEVLIBS_ID_HEX, hex);
	r = 0;
out:
	kj__sha_free(s);
	return r;
}

int kj__amd_target_ok(const char *target, char *err, size_t errlen)
{
	struct kj__amd_target t;
	char canon[KJ_TARGET_MAX];

	if (target == NULL || !kj__token_ok(target, KJ_TARGET_MAX)) {
		snprintf(err, errlen, "target '%.64s' is not a valid AMD target ID",
			 target ? target : "");
		return KJIT_ETARGET;
	}
	int r = kj__amd_target_parse(target, &t, err, errlen);
	if (r < 0)
		return KJIT_ETARGET;
	if (kj__amd_target_format(&t, canon, sizeof canon) < 0) {
		snprintf(err, errlen, "target '%s' cannot be formatted", target);
		return KJIT_ETARGET;
	}
	if (strcmp(canon, target) != 0) {
		snprintf(err, errlen, "target '%s' is not canonical (expected '%s')", target, canon);
		return KJIT_ETARGET;
	}
	return 0;
}
