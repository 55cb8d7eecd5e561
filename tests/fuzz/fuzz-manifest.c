/* fuzz-manifest.c: the bundled-kernel manifest parser (daemon/admin/manifest.c).
 *
 * The input is written as MANIFEST in a fixed temporary directory and
 * loaded with kj__manifest_load.  Checked: 0 or KJIT_EINVAL with a message;
 * every kernel loaded has a safe name, a known backend, a relative file
 * path without ".." or empty components, at least one entry point of safe
 * characters, options without whitespace; kj__manifest_find finds each
 * kernel by its name and backend; kj__manifest_free leaves it empty.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "fuzz.h"
#include "kjit.h"
#include "util.h"

static char manifest_path[400];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(manifest_path, sizeof manifest_path, "%s/MANIFEST", fuzz_tmpdir());
	return 0;
}

static void check_kernel(const struct kj__manifest *m, const struct kj__kernel *k)
{
	FUZZ_ASSERT(k->name && kj__name_ok(k->name));
	FUZZ_ASSERT(kjit_backend_name(k->backend) != NULL);
	FUZZ_ASSERT(k->file && k->file[0] != '\0' && k->file[0] != '/');
	FUZZ_ASSERT(strstr(k->file, "//") == NULL && k->file[strlen(k->file) - 1] != '/');
	for (const char *p = k->file; (p = strstr(p, "..")) != NULL; p++)
		FUZZ_ASSERT(!((p == k->file || p[-1] == '/') && (p[2] == '/' || p[2] == '\0')));
	FUZZ_ASSERT(k->n_entries >= 1 && k->entries != NULL);
	for (size_t i = 0; i < k->n_entries; i++)
		FUZZ_ASSERT(k->entries[i] && kj__name_ok(k->entries[i]));
	for (size_t i = 0; i < k->n_options; i++)
		FUZZ_ASSERT(k->options[i] && k->options[i][0] && strpbrk(k->options[i], " \t\r\n#") == NULL);
	const struct kj__kernel *f = kj__manifest_find(m, k->name, k->backend);
	FUZZ_ASSERT(f != NULL && strcmp(f->name, k->name) == 0 && f->backend == k->backend);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kj__manifest m;
	char err[512];

	fuzz_write_file(manifest_path, data, size);
	err[0] = '\0';
	int r = kj__manifest_load(fuzz_tmpdir(), &m, err, sizeof err);
	if (r == 0) {
		for (size_t i = 0; i < m.n; i++)
			check_kernel(&m, &m.k[i]);
		FUZZ_ASSERT(kj__manifest_find(&m, "", KJIT_BACKEND_HIP) == NULL);
	} else {
		FUZZ_ASSERT(r == KJIT_EINVAL || r == KJIT_ENOMEM);
		FUZZ_ASSERT(err[0] != '\0' && memchr(err, '\0', sizeof err) != NULL);
		FUZZ_ASSERT(strchr(err, '\n') == NULL);
	}
	kj__manifest_free(&m);
	FUZZ_ASSERT(m.n == 0);
	kj__manifest_free(&m);
	return 0;
}
