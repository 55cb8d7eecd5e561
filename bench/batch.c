/* batch.c: a batch of bundled kernels through kjit_get_many (issue 13).
 *
 *   bench-batch --backend B --target T --salt S [-n N] [-r R] [--serial K] DIR KERNEL...
 *
 * After a warm-up batch of WARM_MISSES misses (workers started), N
 * requests (default 200): KERNEL[i % k] with the option -DKJ_BENCH_SALT=
 * <S + i / k>, so that they are N distinct objects and, with a fresh S, all
 * misses.  Prints one line:
 *
 *   miss_ms hit_us file_us serial_ms_per_compile batch_compile_ms
 *
 * miss_ms: the wall time of one kjit_get_many of the N misses (every result
 * must be "compiled"); hit_us: the median of R kjit_get_many of the same N,
 * now hits; file_us: the median of R passes of open+read+close over the N
 * objects, written to DIR/<i> first (the floor of a file-based cache);
 * serial_ms_per_compile: the mean of K further misses (salts past the
 * batch's) fetched one kjit_get at a time (0 when K is 0);
 * batch_compile_ms: what kjitd's workers reported compiling the batch's
 * misses took, summed (its compile_ms counter before and after).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* Largest object the floor reads (the bundled SPIR-V is a few KB). */
#define OBJECT_READ_MAX (4u << 20)
/* Misses fetched before the timed batch: a few per compile worker. */
#define WARM_MISSES 8

static void usage(void)
{
	fprintf(stderr, "usage: bench-batch --backend B --target T --salt S [-n N] [-r R] [--serial K] DIR KERNEL...\n");
	exit(2);
}

struct reqs {
	kjit_request *q;
	char (*opt)[64];
	const char **optp;
};

static void build(struct reqs *r, size_t n, int backend, const char *target, char **kernels, size_t k,
		  unsigned long salt)
{
	r->q = calloc(n, sizeof *r->q);
	r->opt = calloc(n, sizeof *r->opt);
	r->optp = calloc(n, sizeof *r->optp);
	if (!r->q || !r->opt || !r->optp)
		bench_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		snprintf(r->opt[i], sizeof r->opt[i], "-DKJ_BENCH_SALT=%lu", salt + i / k);
		r->optp[i] = r->opt[i];
		r->q[i] = (kjit_request){ .backend = backend, .target = target, .kernel = kernels[i % k],
					  .options = &r->optp[i], .n_options = 1 };
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_d);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	unsigned long n = 200, reps = 20, serial = 0, salt = 0;
	int backend = 0;
	const char *target = NULL, *dir = NULL;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--backend") == 0)
			backend = kjit_backend_from_name(argv[++i]);
		else if (strcmp(argv[i], "--target") == 0)
			target = argv[++i];
		else if (strcmp(argv[i], "--salt") == 0)
			salt = bench_num("--salt", argv[++i]);
		else if (strcmp(argv[i], "-n") == 0)
			n = bench_num("-n", argv[++i]);
		else if (strcmp(argv[i], "-r") == 0)
			reps = bench_num("-r", argv[++i]);
		else if (strcmp(argv[i], "--serial") == 0)
			serial = bench_num("--serial", argv[++i]);
		else
			usage();
	}
	if (backend <= 0 || i + 2 > argc || n == 0 || reps == 0)
		usage();
	dir = argv[i++];
	char **kernels = argv + i;
	size_t k = (size_t)(argc - i);

	kjit_client *c = bench_open();
	struct reqs r;
	build(&r, n, backend, target, kernels, k, salt);
	kjit_result *res = calloc(n > WARM_MISSES ? n : WARM_MISSES, sizeof *res);
	int rc0;
	double *t = calloc(reps, sizeof *t);
	if (res == NULL || t == NULL)
		bench_die("out of memory");

	/* Warm-up: misses under other salts, so that kjitd's workers are
	 * started and their compilers loaded before the timed batch. */
	struct reqs wu;
	build(&wu, WARM_MISSES, backend, target, kernels, 1, salt + 1000000);
	rc0 = kjit_get_many(c, wu.q, WARM_MISSES, res, NULL, NULL, NULL);
	for (size_t j = 0; j < WARM_MISSES; j++)
		kjit_result_free(&res[j]);
	if (rc0 < 0)
		bench_die("the warm-up batch failed: %s", kjit_strerror(rc0));
	free(wu.q);
	free(wu.opt);
	free(wu.optp);

	/* all misses, in one batch */
	long long cms0 = bench_stat(c, "compile_ms");
	double t0 = bench_now_us();
	int rc = kjit_get_many(c, r.q, n, res, NULL, NULL, NULL);
	double miss_ms = (bench_now_us() - t0) / 1000;
	if (rc < 0)
		bench_die("the batch of misses failed: %s", kjit_strerror(rc));
	long long cms = bench_stat(c, "compile_ms") - cms0;
	for (size_t j = 0; j < n; j++) {
		if (res[j].status != KJIT_STATUS_COMPILED)
			bench_die("request %zu: %s, not compiled (is the salt fresh?)", j, kjit_status_name(res[j].status));
		char path[4096];
		snprintf(path, sizeof path, "%s/%zu", dir, j);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, res[j].data, res[j].size) != (ssize_t)res[j].size || close(fd) < 0)
			bench_die("cannot write %s", path);
		kjit_result_free(&res[j]);
	}

	/* the same batch: all hits */
	for (unsigned long rep = 0; rep < reps; rep++) {
		t0 = bench_now_us();
		rc = kjit_get_many(c, r.q, n, res, NULL, NULL, NULL);
		t[rep] = bench_now_us() - t0;
		for (size_t j = 0; j < n; j++) {
			if (rc < 0 || res[j].status != KJIT_STATUS_HIT)
				bench_die("hit batch: request %zu is %s", j, rc < 0 ? kjit_strerror(rc) : kjit_status_name(res[j].status));
			kjit_result_free(&res[j]);
		}
	}
	double hit_us = median(t, reps);

	/* the floor: N files read in this process */
	uint8_t *buf = malloc(OBJECT_READ_MAX);
	if (buf == NULL)
		bench_die("out of memory");
	for (unsigned long rep = 0; rep < reps; rep++) {
		t0 = bench_now_us();
		for (size_t j = 0; j < n; j++) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%zu", dir, j);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || read(fd, buf, OBJECT_READ_MAX) <= 0)
				bench_die("cannot read %s", path);
			close(fd);
		}
		t[rep] = bench_now_us() - t0;
	}
	double file_us = median(t, reps);

	/* serial compiles, one at a time, for the parallel/serial comparison */
	double serial_ms = 0;
	if (serial) {
		struct reqs s;
		build(&s, serial, backend, target, kernels, k, salt + n / k + 1);
		t0 = bench_now_us();
		for (size_t j = 0; j < serial; j++) {
			kjit_result one;
			rc = kjit_get(c, &s.q[j], &one);
			if (rc < 0 || one.status != KJIT_STATUS_COMPILED)
				bench_die("serial miss %zu failed", j);
			kjit_result_free(&one);
		}
		serial_ms = (bench_now_us() - t0) / 1000 / (double)serial;
		free(s.q);
		free(s.opt);
		free(s.optp);
	}
	printf("%.1f %.1f %.1f %.1f %lld\n", miss_ms, hit_us, file_us, serial_ms, cms);
	free(buf);
	free(t);
	free(res);
	free(r.q);
	free(r.opt);
	free(r.optp);
	kjit_close(c);
	return 0;
}
