/* scan.c: the include scan's throughput (issue 25): kj__includes_resolve
 * (common/include.c, run by kjitd for every memo miss and by libkjit for
 * -I) over a 1 MiB source held in memory, in MB/s (10^6 bytes a second).
 *
 *   bench-scan [KERNELS_DIR] [ROUNDS]
 *
 * Two sources of exactly 1 MiB: "kernels", every *.cu file of KERNELS_DIR
 * (default kernels_src) concatenated and repeated (real CUDA: comments,
 * strings, a few #include and #if lines); "worst", generated text where
 * nearly every line is a directive or a comment (#define, #if/#endif,
 * block and line comments, strings, "%:" and continued lines): the case
 * the skipping helps least.  No allowed directory and no request header:
 * every include is a missing name, so what is timed is the scan, not a
 * disk.  Each source is scanned ROUNDS times (default 50); the best and the
 * median round are printed, one line per source.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/includes.h"

#define SRC_BYTES (1u << 20)

static double now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
		perror("clock_gettime");
		exit(1);
	}
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Appends the file at path to buf (grown as needed). */
static void append_file(char **buf, size_t *len, size_t *cap, const char *path)
{
	FILE *f = fopen(path, "rb");
	char chunk[65536];
	size_t n;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (*len + n > *cap) {
			*cap = (*len + n) * 2;
			if ((*buf = realloc(*buf, *cap)) == NULL) {
				perror("realloc");
				exit(1);
			}
		}
		memcpy(*buf + *len, chunk, n);
		*len += n;
	}
	if (ferror(f) || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* Every *.cu of dir, concatenated, repeated to exactly SRC_BYTES. */
static char *kernels_source(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *all = NULL, path[4096], *out;
	size_t len = 0, cap = 0;

	if (d == NULL) {
		perror(dir);
		exit(1);
	}
	while ((e = readdir(d)) != NULL) {
		size_t nl = strlen(e->d_name);
		if (nl < 4 || strcmp(e->d_name + nl - 3, ".cu") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		append_file(&all, &len, &cap, path);
	}
	closedir(d);
	if (len == 0 || (out = malloc(SRC_BYTES)) == NULL) {
		fprintf(stderr, "bench-scan: no .cu file in %s\n", dir);
		exit(1);
	}
	for (size_t k = 0; k < SRC_BYTES; k++)
		out[k] = all[k % len];
	free(all);
	return out;
}

/* Text where nearly every line is a directive or a comment. */
static char *worst_source(void)
{
	static const char *const lines[] = {
		"#define KJ_A%zu (1 << 3) /* shift */ // and a line comment\n",
		"#if defined(KJ_A%zu) && KJ_B > 2\n",
		"  # ifdef KJ_C%zu\n",
		"/* a block comment, #include \"no.h\" inside it, %zu */\n",
		"%%: define KJ_D%zu \"a string with // and /* inside\"\n",
		"#  endif\n",
		"#endif // KJ_A%zu\n",
		"// #include <commented.h> %zu\n",
		"#define KJ_LONG%zu a \\\n  b \\\n  c\n",
		"#pragma unroll /* %zu */\n",
		"#include <cuda_fp16.h> /* %zu */\n",
	};
	char *out = malloc(SRC_BYTES + 256);
	size_t len = 0;

	if (out == NULL) {
		perror("malloc");
		exit(1);
	}
	for (size_t k = 0; len < SRC_BYTES; k++)
		len += (size_t)snprintf(out + len, 256, lines[k % (sizeof lines / sizeof *lines)], k);
	memset(out + SRC_BYTES - 1, '\n', 1);
	return out;
}

static void run(const char *what, const char *src, int rounds)
{
	double *t = malloc((size_t)rounds * sizeof *t);
	struct kj__includes inc;
	char err[512];
	size_t names = 0, missing = 0;

	if (t == NULL) {
		perror("malloc");
		exit(1);
	}
	for (int r = 0; r < rounds; r++) {
		double t0 = now();
		int rc = kj__includes_resolve("bench.cu", (const uint8_t *)src, SRC_BYTES, NULL, NULL, NULL, 0,
					      NULL, 0, &inc, err, sizeof err);
		t[r] = now() - t0;
		if (rc != 0) {
			fprintf(stderr, "bench-scan: %s: %d %s\n", what, rc, err);
			exit(1);
		}
		names = inc.n;
		missing = inc.n_missing;
		kj__includes_free(&inc);
	}
	qsort(t, (size_t)rounds, sizeof *t, cmp_d);
	printf("%-8s 1 MiB: best %7.1f MB/s (%.3f ms), median %7.1f MB/s (%.3f ms); %zu found, %zu missing\n",
	       what, SRC_BYTES / t[0] / 1e6, t[0] * 1e3, SRC_BYTES / t[rounds / 2] / 1e6, t[rounds / 2] * 1e3,
	       names, missing);
	free(t);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "kernels_src";
	int rounds = argc > 2 ? atoi(argv[2]) : 50;
	char *k, *w;

	if (rounds < 1) {
		fprintf(stderr, "usage: bench-scan [KERNELS_DIR] [ROUNDS]\n");
		return 2;
	}
	k = kernels_source(dir);
	w = worst_source();
	run("kernels", k, rounds);
	run("worst", w, rounds);
	free(k);
	free(w);
	return 0;
}
