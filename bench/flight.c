/* flight.c: single-flight under a stampede.
 *
 *   bench-flight REQUEST-FLAGS [-p PROCS] [-r REPS] --salt S
 *
 * Each repetition first times one solo compile (a get with a fresh
 * -DSALT, from this process), then forks PROCS processes that each connect
 * and wait at a barrier; released together, they all get the same new,
 * uncached key (another fresh salt).  The daemon's "compiles" counter is
 * read before and after.  Prints one line per repetition:
 *   "solo_ms stampede_ms compiles compiled joined hit"
 * where stampede_ms runs from the release to the last answer received, compiles is
 * the counter's delta, and the last three count how the PROCS gets were
 * answered.  The worker is warmed up by one compile before the first rep.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct answer {
	int status;
	double done_us;
};

struct flight {
	struct bench_req *b;
	struct answer *a;
};

static int client(int i, void *arg, struct bench_fleet *f)
{
	struct flight *fl = arg;
	kjit_client *c = bench_open();

	if (kjit_ping(c) < 0)
		return 1;
	bench_fleet_wait(f);
	fl->a[i].status = bench_get(c, fl->b, NULL);
	fl->a[i].done_us = bench_now_us();
	kjit_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_req b;
	unsigned long procs = 64, reps = 3, salt = 0;
	int salted = 0;

	bench_req_init(&b);
	for (int i = 1; i < argc; i++) {
		int r = bench_req_arg(&b, argc, argv, &i);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		if (i + 1 < argc && strcmp(argv[i], "-p") == 0)
			procs = bench_num("-p", argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "-r") == 0)
			reps = bench_num("-r", argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--salt") == 0)
			salt = bench_num("--salt", argv[++i]), salted = 1;
		else {
			fprintf(stderr, "usage: bench-flight REQUEST-FLAGS [-p PROCS] [-r REPS] --salt S\n");
			return 2;
		}
	}
	if (!salted || procs == 0 || procs > 4096)
		bench_die("--salt is required, -p 1..4096");

	struct flight fl = { &b, bench_shared(procs * sizeof(struct answer)) };
	kjit_client *c = bench_open();
	if (bench_req_salt(&b, salt++) < 0)
		bench_die("out of memory");
	bench_get(c, &b, NULL); /* loads the compiler in a worker */

	for (unsigned long rep = 0; rep < reps; rep++) {
		if (bench_req_salt(&b, salt++) < 0)
			bench_die("out of memory");
		double t0 = bench_now_us();
		if (bench_get(c, &b, NULL) != KJIT_STATUS_COMPILED)
			bench_die("the solo get was not a fresh compile");
		double solo = bench_now_us() - t0;

		if (bench_req_salt(&b, salt++) < 0)
			bench_die("out of memory");
		long long before = bench_stat(c, "compiles");
		struct bench_fleet f;
		memset(fl.a, 0, procs * sizeof(struct answer));
		bench_fleet_fork(&f, (int)procs, client, &fl);
		bench_fleet_ready(&f);
		t0 = bench_now_us();
		bench_fleet_go(&f);
		int failed = bench_fleet_reap(&f);
		double last = t0;
		if (failed)
			bench_die("%d of %lu clients failed", failed, procs);
		long long compiles = bench_stat(c, "compiles") - before;
		int n[4] = { 0 };
		for (unsigned long i = 0; i < procs; i++) {
			int st = fl.a[i].status;
			n[st >= 0 && st < 4 ? st : 0]++;
			if (fl.a[i].done_us > last)
				last = fl.a[i].done_us;
		}
		double stampede = last - t0;
		printf("%.1f %.1f %lld %d %d %d\n", solo / 1e3, stampede / 1e3, compiles,
		       n[KJIT_STATUS_COMPILED], n[KJIT_STATUS_JOINED], n[KJIT_STATUS_HIT]);
		fflush(stdout);
	}
	kjit_close(c);
	bench_req_free(&b);
	return 0;
}
