/* fuzz-include.c: include resolution (kj__includes_resolve, common/include.c)
 * over fuzzed source text and fuzzed request headers.
 *
 * Input: SOURCE, then any number of '\0' NAME '\n' DATA request headers
 * (tests/fuzz/mkseeds.c writes seeds in this form).  The allowed include
 * directory is a fixed temporary one made at start:
 *     inc/common.h      includes "sub/util.h"
 *     inc/sub/util.h
 *     inc/escape.h   -> ../secret.txt   (a symlink leaving the directory)
 *     inc/dir.h/        a directory, not a file
 *     secret.txt        "KJ_SECRET_..." outside the allowed directory
 * plus a second allowed directory that does not exist.  Checked: the call
 * returns 0 or a documented code; on success every resolved header is
 * listed once, sorted, under a name with no "..", no leading '/' and no
 * control character, holding exactly the request's bytes or the allowed
 * file's bytes; the secret never appears in a result or a message; a
 * message is one line.  And (issue 25) the scan finds exactly what the
 * byte-by-byte scan it replaced (tests/include-ref.c) finds: the same code,
 * message, headers, bytes and missing names.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "includes.h"
#include "fuzz.h"
#include "kj_limits.h"
#include "kjit.h"

#include "../include-ref.c" /* ref_includes_resolve_tree: the scan as it was at 197e918 */

#define SECRET "KJ_SECRET_7f3a9c"
#define MAX_REQ 64

static char inc_dir[300], missing_dir[300];

static void mk(const char *rel, const char *text)
{
	char path[400];
	snprintf(path, sizeof path, "%s/%s", fuzz_tmpdir(), rel);
	fuzz_write_file(path, text, strlen(text));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[400], target[400];
	const char *t = fuzz_tmpdir();

	snprintf(inc_dir, sizeof inc_dir, "%s/inc", t);
	snprintf(missing_dir, sizeof missing_dir, "%s/missing", t);
	snprintf(path, sizeof path, "%s/inc/sub", t);
	FUZZ_ASSERT(mkdir(inc_dir, 0700) == 0 && mkdir(path, 0700) == 0);
	snprintf(path, sizeof path, "%s/inc/dir.h", t);
	FUZZ_ASSERT(mkdir(path, 0700) == 0);
	mk("inc/common.h", "#pragma once\n#include \"sub/util.h\"\n#define KJ_ONE 1\n");
	mk("inc/sub/util.h", "#pragma once\n#include \"leaf.h\"\nstatic inline int kj_twice(int x) { return 2 * x; }\n");
	mk("inc/sub/leaf.h", "/* leaf, found next to sub/util.h */\n");
	mk("secret.txt", SECRET "\n");
	snprintf(path, sizeof path, "%s/inc/escape.h", t);
	snprintf(target, sizeof target, "%s/secret.txt", t);
	FUZZ_ASSERT(symlink(target, path) == 0);
	return 0;
}

/* The bytes a resolved header must hold: the first request header of that
 * name, else the allowed file. */
static void check_header(const char *name, const uint8_t *data, size_t len, char **rn, const uint8_t **rd,
			 const size_t *rl, size_t n_req)
{
	FUZZ_ASSERT(name[0] != '\0' && name[0] != '/' && strlen(name) <= 2 * KJ_NAME_MAX + 1);
	for (const char *p = name; *p; p++)
		FUZZ_ASSERT((unsigned char)*p >= 0x20 && *p != 0x7f && *p != '\\');
	for (const char *p = name; (p = strstr(p, "..")) != NULL; p++)
		FUZZ_ASSERT(!((p == name || p[-1] == '/') && (p[2] == '/' || p[2] == '\0')));
	FUZZ_ASSERT(data != NULL && data[len] == '\0');
	for (size_t i = 0; i < n_req; i++) {
		if (strcmp(rn[i], name) == 0) {
			FUZZ_ASSERT(len == rl[i] && (len == 0 || memcmp(data, rd[i], len) == 0));
			return;
		}
	}
	char path[PATH_MAX], real[PATH_MAX], dir[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", inc_dir, name);
	FUZZ_ASSERT(realpath(path, real) != NULL && realpath(inc_dir, dir) != NULL);
	FUZZ_ASSERT(strncmp(real, dir, strlen(dir)) == 0 && real[strlen(dir)] == '/');
	uint8_t *file = NULL;
	size_t flen = 0;
	FILE *f = fopen(real, "rb");
	FUZZ_ASSERT(f != NULL);
	file = malloc(4096);
	flen = fread(file, 1, 4096, f);
	fclose(f);
	FUZZ_ASSERT(flen == len && memcmp(file, data, len) == 0);
	FUZZ_ASSERT(memmem(data, len, SECRET, strlen(SECRET)) == NULL);
	free(file);
}

/* The reference scan on the same input gives the same result as r, out
 * and err (the fast scan's). */
static void same_as_ref(const uint8_t *src, size_t src_len, const char *const *rn, const uint8_t **rd,
			const size_t *rl, size_t n_req, int r, const struct kj__includes *out, const char *err)
{
	const char *dirs[] = { inc_dir, missing_dir };
	struct kj__includes ref;
	char rerr[600];
	int rr = ref_includes_resolve_tree(NULL, src, src_len, rn, rd, rl, n_req, dirs, 2, NULL, &ref, rerr,
					   sizeof rerr);

	FUZZ_ASSERT(rr == r && strcmp(rerr, err) == 0 && ref.n == out->n && ref.n_missing == out->n_missing);
	for (size_t i = 0; i < ref.n; i++)
		FUZZ_ASSERT(strcmp(ref.names[i], out->names[i]) == 0 && ref.len[i] == out->len[i] &&
			    memcmp(ref.data[i], out->data[i], ref.len[i]) == 0);
	for (size_t i = 0; i < ref.n_missing; i++)
		FUZZ_ASSERT(strcmp(ref.missing[i], out->missing[i]) == 0);
	kj__includes_free(&ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *rn[MAX_REQ];
	const uint8_t *rd[MAX_REQ];
	size_t rl[MAX_REQ], n_req = 0;
	const char *dirs[] = { inc_dir, missing_dir };
	struct kj__includes out;
	char err[600];
	int secret_in_request = memmem(data, size, SECRET, strlen(SECRET)) != NULL;

	/* Split: SOURCE, then '\0' NAME '\n' DATA pieces. */
	const uint8_t *end = data + size, *p = memchr(data, '\0', size);
	size_t src_len = p ? (size_t)(p - data) : size;
	while (p != NULL && p < end && n_req < MAX_REQ) {
		const uint8_t *piece = p + 1;
		const uint8_t *next = memchr(piece, '\0', (size_t)(end - piece));
		const uint8_t *pend = next ? next : end;
		const uint8_t *nl = memchr(piece, '\n', (size_t)(pend - piece));
		if (nl != NULL) {
			rn[n_req] = strndup((const char *)piece, (size_t)(nl - piece));
			rd[n_req] = nl + 1;
			rl[n_req] = (size_t)(pend - nl - 1);
			n_req++;
		}
		p = next;
	}
	/* The source as its own allocation, so ASan sees reads past its end. */
	uint8_t *src = malloc(src_len ? src_len : 1);
	memcpy(src, data, src_len);
	memset(err, 'x', sizeof err);
	int r = kj__includes_resolve(NULL, src, src_len, (const char *const *)rn, rd, rl, n_req, dirs, 2, &out,
				     err, sizeof err);
	FUZZ_ASSERT(memchr(err, '\0', sizeof err) != NULL);
	same_as_ref(src, src_len, (const char *const *)rn, rd, rl, n_req, r, &out, err);
	for (const char *q = err; *q; q++)
		FUZZ_ASSERT((unsigned char)*q >= 0x20 || *q == '\t');
	if (!secret_in_request)
		FUZZ_ASSERT(strstr(err, SECRET) == NULL);
	if (r == 0) {
		FUZZ_ASSERT(out.n <= KJ_HEADERS_MAX_COUNT);
		for (size_t i = 0; i < out.n; i++) {
			if (i > 0)
				FUZZ_ASSERT(strcmp(out.names[i - 1], out.names[i]) < 0);
			check_header(out.names[i], out.data[i], out.len[i], rn, rd, rl, n_req);
		}
		kj__includes_free(&out);
	} else {
		FUZZ_ASSERT(r == KJIT_EINCLUDE || r == KJIT_ETOOBIG || r == KJIT_ENOMEM);
		FUZZ_ASSERT(err[0] != '\0');
		FUZZ_ASSERT(out.n == 0 && out.names == NULL);
	}
	kj__includes_free(&out);
	for (size_t i = 0; i < n_req; i++)
		free(rn[i]);
	free(src);
	return 0;
}
