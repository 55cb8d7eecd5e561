/* hitlat.c: latency of kjit_get on one connection, one request at a time.
 *
 *   bench-hitlat REQUEST-FLAGS [-n N] [-w W] [--salt S] [--want STATUS]
 *
 * Without --salt: W warm-up gets (the first may compile), then N timed gets
 * that must all be hits.  With --salt S: every get carries its own
 * -DSALT=<S+i> option, so each is a fresh compile (a miss) and must come
 * back "compiled"; W of them warm the worker up first.  Prints one line,
 * "p50_us p99_us mean_us n object_bytes", from the sorted samples.  --want
 * names the status every timed get must have instead ("hit", "compiled",
 * "remote" for a fleet-tier hit, "any").  --gap MS sleeps that long before
 * each timed get (untimed), so the daemon's work after the previous answer
 * (a remote hit's local publish) is not in the next sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

static void usage(void)
{
	fprintf(stderr, "usage: bench-hitlat (--source F | --kernel K) [--backend B] [--target T]"
			" [--opt O]... [-n N] [-w W] [--salt S] [--want hit|compiled|remote|any] [--gap MS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench_req b;
	unsigned long n = 1000, warm = 100, salt = 0, gap_ms = 0;
	int salted = 0, want = -1;

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
		else if (strcmp(argv[i], "--gap") == 0)
			gap_ms = bench_num("--gap", argv[++i]);
		else if (strcmp(argv[i], "--want") == 0) {
			const char *w = argv[++i];
			want = strcmp(w, "hit") == 0 ? KJIT_STATUS_HIT : strcmp(w, "compiled") == 0 ? KJIT_STATUS_COMPILED
			     : strcmp(w, "remote") == 0 ? KJIT_STATUS_REMOTE : strcmp(w, "any") == 0 ? 0 : -2;
			if (want == -2)
				usage();
		}
		else
			usage();
	}
	if (n == 0 || (b.req.source == NULL) == (b.req.kernel == NULL))
		usage();

	kjit_client *c = bench_open();
	double *t = calloc(n, sizeof *t);
	size_t size = 0;
	if (want < 0)
		want = salted ? KJIT_STATUS_COMPILED : KJIT_STATUS_HIT;
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
		if (gap_ms) {
			struct timespec ts = { (time_t)(gap_ms / 1000), (long)(gap_ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) != 0)
				;
		}
		double t0 = bench_now_us();
		int st = bench_get(c, &b, &size);
		t[i] = bench_now_us() - t0;
		if (want && st != want)
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
