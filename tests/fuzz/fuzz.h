/* fuzz.h: what the libFuzzer harnesses of tests/fuzz/ share.  Header only.
 *
 * FUZZ_ASSERT turns a broken invariant into abort(), which libFuzzer reports
 * as a crash with the input that caused it.  fuzz_tmpdir() makes one
 * temporary directory per process ($TMPDIR, else /dev/shm, else /tmp),
 * removed at exit.
 */
#ifndef KJ_FUZZ_H
#define KJ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_ASSERT(cond)                                                               \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                        \
		}                                                                       \
	} while (0)

static char fuzz_tmp_path[256];

static inline void fuzz_tmpdir_remove(void)
{
	char cmd[300];

	if (fuzz_tmp_path[0] == '\0')
		return;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_tmp_path);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fuzz_tmp_path);
}

/* A private temporary directory for this process (created once). */
static inline const char *fuzz_tmpdir(void)
{
	if (fuzz_tmp_path[0] != '\0')
		return fuzz_tmp_path;
	/* Harnesses write a file per input: memory (/dev/shm) is much faster. */
	const char *base = getenv("TMPDIR");
	if (base == NULL || *base == '\0')
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(fuzz_tmp_path, sizeof fuzz_tmp_path, "%s/kjit-fuzz.XXXXXX", base);
	if (mkdtemp(fuzz_tmp_path) == NULL) {
		perror("mkdtemp");
		abort();
	}
	atexit(fuzz_tmpdir_remove);
	return fuzz_tmp_path;
}

/* Writes n bytes to path (created or truncated); aborts on failure. */
static inline void fuzz_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
		perror(path);
		abort();
	}
}

#endif /* KJ_FUZZ_H */
