/* hashping.c: how long kjitd takes to answer a ping while other clients
 * send memo misses with large sources (issue 25: a memo miss's include
 * scan and SHA-256, about 0.58 ms per MB, must not hold the loop).
 *
 *   bench-hashping --salt S [-c CLIENTS] [-n N] [--size BYTES]
 *
 * kjitd must run the test compiler family for hip (--hip-compiler test,
 * which echoes the source as the object).  CLIENTS threads (default 2)
 * each send N gets (default 60), one at a time, of a distinct source of
 * BYTES bytes (default 1048576: a first line naming salt, client and
 * request, then filler), so every one is a memo miss and a key miss;
 * meanwhile the main thread pings on a connection of its own, back to back
 * (a 0.5 ms pause between pings), and records each ping sent before every
 * stream has ended.  Prints "pings p50_us p99_us max_us streams_ms".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

struct stream {
	unsigned long salt;
	int id, n;
	size_t size;
	volatile int *left;
};

static void *stream_thread(void *p)
{
	struct stream *s = p;
	kjit_client *c = bench_open();
	char *src = malloc(s->size);

	if (src == NULL)
		bench_die("out of memory");
	for (size_t i = 0; i < s->size; i++)
		src[i] = i % 101 == 100 ? '\n' : (char)('a' + i % 26);
	for (int i = 0; i < s->n; i++) {
		int len = snprintf(src, 64, "// hashping %lu %d %d", s->salt, s->id, i);
		src[len] = '\n';
		kjit_request q = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .source = src,
				   .source_size = s->size, .source_name = "hashping.hip" };
		kjit_result r = { 0 };
		if (kjit_get(c, &q, &r) != 0)
			bench_die("get %d failed: %s", i, r.error ? r.error : kjit_last_error(c));
		if (r.status != KJIT_STATUS_COMPILED)
			bench_die("get %d was not a miss (status %d): use a fresh --salt", i, (int)r.status);
		kjit_result_free(&r);
	}
	free(src);
	kjit_close(c);
	__atomic_sub_fetch(s->left, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

int main(int argc, char **argv)
{
	struct stream s[16];
	pthread_t th[16];
	struct bench_stats st;
	struct timespec nap = { 0, 500000 };
	unsigned long salt = 0;
	int clients = 2, n = 60;
	size_t size = 1 << 20, np = 0, cap = 1024;
	double *lat = malloc(cap * sizeof *lat);
	volatile int left;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--salt") == 0 && i + 1 < argc)
			salt = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			clients = atoi(argv[++i]);
		else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			size = strtoul(argv[++i], NULL, 10);
		else
			bench_die("usage: bench-hashping --salt S [-c CLIENTS] [-n N] [--size BYTES]");
	}
	if (lat == NULL || salt == 0 || n < 1 || clients < 1 || clients > 16 || size < 128)
		bench_die("usage: bench-hashping --salt S [-c CLIENTS] [-n N] [--size BYTES]");
	kjit_client *c = bench_open();
	if (kjit_ping(c) != 0)
		bench_die("no daemon answers");
	left = clients;
	double t0 = bench_now_us();
	for (int i = 0; i < clients; i++) {
		s[i] = (struct stream){ .salt = salt, .id = i, .n = n, .size = size, .left = &left };
		if (pthread_create(&th[i], NULL, stream_thread, &s[i]) != 0)
			bench_die("pthread_create failed");
	}
	nanosleep(&nap, NULL);
	while (__atomic_load_n(&left, __ATOMIC_ACQUIRE) > 0) {
		double p0 = bench_now_us();
		if (kjit_ping(c) != 0)
			bench_die("ping failed: %s", kjit_last_error(c));
		if (np == cap && (lat = realloc(lat, (cap *= 2) * sizeof *lat)) == NULL)
			bench_die("out of memory");
		lat[np++] = bench_now_us() - p0;
		nanosleep(&nap, NULL);
	}
	double ms = (bench_now_us() - t0) / 1000.0;
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	bench_summarize(lat, np, &st);
	printf("%zu %.0f %.0f %.0f %.0f\n", np, st.p50, st.p99, st.max, ms);
	free(lat);
	kjit_close(c);
	return 0;
}
