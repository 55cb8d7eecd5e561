/* pubping.c: how long kjitd takes to answer a ping while a stream of
 * misses with large objects is published (issue 25: the publish's write,
 * fsyncs, rename and digest must not hold the loop).
 *
 *   bench-pubping --salt S [-n N] [--size BYTES]
 *
 * kjitd must run the test compiler family for hip (--hip-compiler test).
 * One thread asks, one kjit_get at a time, for N (default 40) objects of
 * BYTES bytes each (default 8000000: "#pragma kjit_test size BYTES", a
 * distinct source per request, so each is a miss and a publish);
 * meanwhile the main thread pings on a connection of its own, back to back
 * (a 0.5 ms pause between pings), and records each ping sent before the
 * stream has ended.  Prints "pings p50_us p99_us max_us stream_ms".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

struct stream {
	unsigned long salt;
	int n;
	unsigned long size;
	double ms;
	volatile int done;
};

static void *stream_thread(void *p)
{
	struct stream *s = p;
	kjit_client *c = bench_open();
	double t0 = bench_now_us();

	for (int i = 0; i < s->n; i++) {
		char src[128];
		int len = snprintf(src, sizeof src, "#pragma kjit_test size %lu\n// pubping %lu %d\n", s->size, s->salt, i);
		kjit_request q = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .source = src,
				   .source_size = (size_t)len, .source_name = "pubping.hip" };
		kjit_result r = { 0 };
		int rc = kjit_get(c, &q, &r);
		if (rc != 0)
			bench_die("get %d failed: %s", i, r.error ? r.error : kjit_last_error(c));
		if (r.status != KJIT_STATUS_COMPILED)
			bench_die("get %d was not a miss (status %d): use a fresh --salt", i, (int)r.status);
		kjit_result_free(&r);
	}
	s->ms = (bench_now_us() - t0) / 1000.0;
	kjit_close(c);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(int argc, char **argv)
{
	struct stream s = { .n = 40, .size = 8000000 };
	struct bench_stats st;
	struct timespec nap = { 0, 500000 };
	size_t n = 0, cap = 1024;
	double *lat = malloc(cap * sizeof *lat);
	pthread_t th;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--salt") == 0 && i + 1 < argc)
			s.salt = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			s.n = atoi(argv[++i]);
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			s.size = strtoul(argv[++i], NULL, 10);
		else
			bench_die("usage: bench-pubping --salt S [-n N] [--size BYTES]");
	}
	if (lat == NULL || s.salt == 0 || s.n < 1)
		bench_die("usage: bench-pubping --salt S [-n N] [--size BYTES]");
	kjit_client *c = bench_open();
	if (kjit_ping(c) != 0)
		bench_die("no daemon answers");
	if (pthread_create(&th, NULL, stream_thread, &s) != 0)
		bench_die("pthread_create failed");
	nanosleep(&nap, NULL);
	while (!__atomic_load_n(&s.done, __ATOMIC_ACQUIRE)) {
		double t0 = bench_now_us();
		if (kjit_ping(c) != 0)
			bench_die("ping failed: %s", kjit_last_error(c));
		if (n == cap && (lat = realloc(lat, (cap *= 2) * sizeof *lat)) == NULL)
			bench_die("out of memory");
		lat[n++] = bench_now_us() - t0;
		nanosleep(&nap, NULL);
	}
	pthread_join(th, NULL);
	bench_summarize(lat, n, &st);
	printf("%zu %.0f %.0f %.0f %.0f\n", n, st.p50, st.p99, st.max, s.ms);
	free(lat);
	kjit_close(c);
	return 0;
}
