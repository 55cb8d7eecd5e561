/* fuzz-bundle.c: the bundle importer (daemon/admin/bundle.c, `kjit import`).
 *
 * The input is written as a bundle file and imported into a cache opened
 * once in a temporary directory.  When the input's first byte is odd the
 * harness rewrites the trailer (the SHA-256 of everything before it), so
 * the fuzzer gets past the checksum and into the manifest and object checks
 * instead of spending every input on it.  Checked: the import succeeds, or
 * fails with a one-line reason and leaves the cache exactly as it was; after
 * a success every entry verifies (no object with a wrong digest was
 * published).  The cache is cleared after each success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "daemon.h"
#include "fuzz.h"
#include "kjit.h"
#include "sha.h"

static struct kj__daemon d;
static char bundle_path[400], cache_dir[400];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(bundle_path, sizeof bundle_path, "%s/in.kjb", fuzz_tmpdir());
	snprintf(cache_dir, sizeof cache_dir, "%s/cache", fuzz_tmpdir());
	d.cfg.cache_dir = cache_dir;
	d.top = NULL; /* no log: kj__log says nothing */
	FILE *log = fopen("/dev/null", "w");
	struct kj__cache_options o = { .log = log };
	FUZZ_ASSERT(kj__cache_open(&d.cache, cache_dir, &o) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kj__cache_totals before, after;
	uint64_t imported = 0, present = 0, checked = 0, bad = 0;
	char err[512] = "";
	uint8_t *copy = malloc(size ? size : 1);

	FUZZ_ASSERT(copy != NULL);
	memcpy(copy, data, size);
	if (size > KJ_SHA256_LEN && (data[0] & 1))
		FUZZ_ASSERT(kj__sha256(copy, size - KJ_SHA256_LEN, copy + size - KJ_SHA256_LEN) == 0);
	fuzz_write_file(bundle_path, copy, size);
	free(copy);
	FUZZ_ASSERT(kj__cache_totals(d.cache, &before) == 0);
	int r = kj__bundle_import(&d, bundle_path, &imported, &present, err, sizeof err);
	FUZZ_ASSERT(kj__cache_totals(d.cache, &after) == 0);
	if (r < 0) {
		FUZZ_ASSERT(err[0] != '\0' && strchr(err, '\n') == NULL);
		/* Refused before any publish: nothing changed. */
		if (imported == 0)
			FUZZ_ASSERT(after.entries == before.entries && after.bytes == before.bytes);
		return 0;
	}
	FUZZ_ASSERT(after.entries == before.entries + imported);
	FUZZ_ASSERT(kj__cache_verify(d.cache, NULL, NULL, &checked, &bad) == 0 && bad == 0);
	FUZZ_ASSERT(kj__cache_clear(d.cache, NULL, NULL) == 0);
	return 0;
}
