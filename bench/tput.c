/* tput.c: hits per second from many client processes at once.
 *
 *   bench-tput REQUEST-FLAGS -p PROCS [-d SECONDS]
 *
 * PROCS processes are forked; each opens its own connection, makes sure the
 * request is a hit (a few warm-up gets), and waits at a barrier.  Released
 * together, each gets in a loop until a deadline shared by all and counts
 * its hits.  Prints "hits_per_s total_hits wall_s procs", where wall_s runs
 * from the release to the last process's end (so a slow straggler counts
 * against the rate).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define WARMUP_GETS 5

struct shared {
	double deadline_us;
	unsigned long hits[];
};

struct tput {
	struct bench_req *b;
	struct shared *sh;
};

static int client(int i, void *arg, struct bench_fleet *f)
{
	struct tput *t = arg;
	kjit_client *c = bench_open();
	unsigned long n = 0;

	for (int k = 0; k < WARMUP_GETS; k++)
		bench_get(c, t->b, NULL);
	bench_fleet_wait(f);
	while (bench_now_us() < t->sh->deadline_us) {
		if (bench_get(c, t->b, NULL) != KJIT_STATUS_HIT)
			return 1;
		n++;
	}
	t->sh->hits[i] = n;
	kjit_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_req b;
	unsigned long procs = 1, secs = 3;

	bench_req_init(&b);
	for (int i = 1; i < argc; i++) {
		int r = bench_req_arg(&b, argc, argv, &i);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		if (i + 1 < argc && strcmp(argv[i], "-p") == 0)
			procs = bench_num("-p", argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "-d") == 0)
			secs = bench_num("-d", argv[++i]);
		else {
			fprintf(stderr, "usage: bench-tput REQUEST-FLAGS -p PROCS [-d SECONDS]\n");
			return 2;
		}
	}
	if (procs == 0 || procs > 4096 || secs == 0)
		bench_die("bad -p or -d");

	struct tput t = { &b, bench_shared(sizeof(struct shared) + procs * sizeof(unsigned long)) };
	struct bench_fleet f;
	t.sh->deadline_us = 1e300;
	bench_fleet_fork(&f, (int)procs, client, &t);
	bench_fleet_ready(&f);
	double t0 = bench_now_us();
	t.sh->deadline_us = t0 + (double)secs * 1e6;
	bench_fleet_go(&f);
	int failed = bench_fleet_reap(&f);
	double wall = (bench_now_us() - t0) / 1e6;
	if (failed)
		bench_die("%d of %lu clients failed", failed, procs);

	unsigned long total = 0;
	for (unsigned long i = 0; i < procs; i++)
		total += t.sh->hits[i];
	printf("%.0f %lu %.3f %lu\n", (double)total / wall, total, wall, procs);
	bench_req_free(&b);
	return 0;
}
