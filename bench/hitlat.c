/* hitlat.c: latency of kjit_get on one connection, one request at a time.
 *
 *   bench-hitlat REQUEST-FLAGS [-n N] [-w W] [--salt S]
 *
 * Without --salt: W warm-up gets (the first may compile), then N timed gets
 * that must all be hits.  With --salt S: every get carries its own
 * -DSALT=<S+i> option, so each is a fresh compile (a miss) and must come
 * back "compiled"; W of them warm the worker up first.  Prints one line,
 * "p50_us p99_us mean_us n object_bytes", from the sorted samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void usage(void)
{
	fprintf(stderr, "usage: bench-hitlat (--source F | --kernel K) [--backend B] [--target T]"
			" [--opt O]... [-n N] [-w W] [--salt S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench_req b;
	unsigned long n = 1000, warm = 100, salt = 0;
	int salted = 0;

	bench_req_init(&b);
	for (int i = 1; i < argc; i++) {
		int r = bench_req_arg(&b, argc, argv, &i);
		if (r < 0)
			usage();
		if (r > 0)
			continue;
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "-n") == 0)
			n = bench_num("-n", argv[++i]);
		else if (strcmp(argv[i], "-w") == 0)
			warm = bench_num("-w", argv[++i]);
		else if (strcmp(argv[i], "--salt") == 0)
			salt = bench_num("--salt", argv[++i]), salted = 1;
		else
			usage();
	}
	if (n == 0 || (b.req.source == NULL) == (b.req.kernel == NULL))
		usage();

	kjit_client *c = bench_open();
	double *t = calloc(n, sizeof *t);
	size_t size = 0;
	int want = salted ? KJIT_STATUS_COMPILED : KJIT_STATUS_HIT;
	if (t == NULL)
		bench_die("out of memory");
	for (unsigned long i = 0; i < warm; i++) {
		if (salted && bench_req_salt(&b, salt++) < 0)
			bench_die("out of memory");
		bench_get(c, &b, &size);
	}
	for (unsigned long i = 0; i < n; i++) {
		if (salted && bench_req_salt(&b, salt++) < 0)
			bench_die("out of memory");
		double t0 = bench_now_us();
		int st = bench_get(c, &b, &size);
		t[i] = bench_now_us() - t0;
		if (st != want)
			bench_die("get %lu: expected %s, got %s", i, kjit_status_name(want), kjit_status_name(st));
	}

	struct bench_stats s;
	bench_summarize(t, n, &s);
	printf("%.2f %.2f %.2f %zu %zu\n", s.p50, s.p99, s.mean, s.n, size);
	free(t);
	kjit_close(c);
	bench_req_free(&b);
	return 0;
}
