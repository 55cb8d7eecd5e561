/* bench.h: helpers shared by the benchmark programs of bench/ (benchlib.c).
 *
 * Each program measures one thing and prints one line of numbers that
 * bench/bench.sh reads; nothing here is part of libkjit.  Times are
 * CLOCK_MONOTONIC microseconds as doubles.  A request is described on the
 * command line the way `kjit get` takes it (--source FILE | --kernel NAME,
 * --backend, --target, --opt...), parsed by bench_req_arg().
 */
#ifndef KJ_BENCH_H
#define KJ_BENCH_H

#include <stddef.h>

#include "kjit.h"

#define BENCH_MAX_OPTS 32

/* Monotonic time in microseconds. */
double bench_now_us(void);

/* Percentiles of n samples (sorted in place). */
struct bench_stats {
	double p50, p99, mean, min, max;
	size_t n;
};
void bench_summarize(double *samples, size_t n, struct bench_stats *out);

/* A kjit request built from command-line flags; owns the source and the
 * option strings it adds. */
struct bench_req {
	kjit_request req;
	const char *opts[BENCH_MAX_OPTS + 1];
	char *owned_opt;              /* the salt option, rewritten per call */
	void *source;
};

/* Starts b as an empty request for backend hip, environment ignored. */
void bench_req_init(struct bench_req *b);
/* Consumes argv[*i] (and its value) if it is a request flag:
 * --source FILE, --kernel NAME, --backend B, --target T, --opt O.  Returns
 * 1 if consumed, 0 if not a request flag, -1 on a bad value (message
 * printed). */
int bench_req_arg(struct bench_req *b, int argc, char **argv, int *i);
/* Sets the trailing -DSALT=<n> option (added on first use). */
int bench_req_salt(struct bench_req *b, unsigned long n);
void bench_req_free(struct bench_req *b);

/* Opens a client on $KJIT_SOCKET without autostart; exits on failure. */
kjit_client *bench_open(void);

/* One get; returns the status (KJIT_STATUS_*) and *size, or exits with a
 * message on failure. */
int bench_get(kjit_client *c, const struct bench_req *b, size_t *size);

/* A counter from `stats` JSON ("compiles", "hits"...); -1 if absent. */
long long bench_stat(kjit_client *c, const char *name);

/* A fleet of client processes released together: fork p children, each
 * runs body(i, arg), which connects, warms up, calls bench_fleet_wait()
 * and then does the measured work; its return value is its exit status.
 * The parent waits with bench_fleet_ready() until every child is at the
 * barrier, releases them all at once with bench_fleet_go(), and collects
 * them with bench_fleet_reap() (the number of children that failed).
 * Results go through bench_shared() memory. */
struct bench_fleet {
	int p;
	int go[2], ready[2];
	int *pids;
};
void bench_fleet_fork(struct bench_fleet *f, int p, int (*body)(int i, void *arg, struct bench_fleet *f),
		      void *arg);
void bench_fleet_wait(struct bench_fleet *f);
void bench_fleet_ready(struct bench_fleet *f);
void bench_fleet_go(struct bench_fleet *f);
int bench_fleet_reap(struct bench_fleet *f);
/* Zeroed memory shared with children forked later; exits on failure. */
void *bench_shared(size_t size);

/* Prints "prog: message" and exits 1. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Parses an unsigned decimal argument or dies naming flag. */
unsigned long bench_num(const char *flag, const char *s);

#endif /* KJ_BENCH_H */
