/* maintping.c: how long kjitd takes to answer a ping while an admin
 * command (verify, gc, export, import, clear) runs on it (issue 25).
 *
 *   bench-maintping CMD [ARG]
 *
 * One thread sends the admin command and waits for its answer; meanwhile
 * the main thread pings on a connection of its own, back to back (a
 * 0.5 ms pause between pings), and records the round trip of each ping
 * sent before the command has answered.  Prints
 * "pings p50_us p99_us max_us cmd_ms code" when the command has answered
 * (code: its return, 0 or a negative kjit code; verify returns
 * KJIT_ECORRUPT when it dropped something).  KJIT_SOCKET names the
 * daemon, as for every client.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

struct admin_run {
	const char *cmd, *arg;
	int code;
	double ms;
	volatile int done;
};

static void *admin_thread(void *p)
{
	struct admin_run *a = p;
	kjit_client *c = bench_open();
	char *text = NULL, *json = NULL;
	double t0 = bench_now_us();

	a->code = kjit_admin(c, a->cmd, a->arg, &text, &json);
	a->ms = (bench_now_us() - t0) / 1000.0;
	free(text);
	free(json);
	kjit_close(c);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(int argc, char **argv)
{
	struct admin_run a = { 0 };
	struct bench_stats st;
	struct timespec nap = { 0, 500000 };
	size_t n = 0, cap = 1024;
	double *lat = malloc(cap * sizeof *lat);
	pthread_t th;

	if (argc < 2 || argc > 3)
		bench_die("usage: bench-maintping CMD [ARG]");
	if (lat == NULL)
		bench_die("out of memory");
	a.cmd = argv[1];
	a.arg = argc > 2 ? argv[2] : NULL;
	kjit_client *c = bench_open();
	if (kjit_ping(c) != 0)
		bench_die("no daemon answers");
	if (pthread_create(&th, NULL, admin_thread, &a) != 0)
		bench_die("pthread_create failed");
	nanosleep(&nap, NULL);
	while (!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE)) {
		double t0 = bench_now_us();
		if (kjit_ping(c) != 0)
			bench_die("ping failed: %s", kjit_last_error(c));
		double dt = bench_now_us() - t0;
		/* Sent while the command ran: counted, even if answered after
		 * it (a loop busy with the command answers then). */
		if (n == cap && (lat = realloc(lat, (cap *= 2) * sizeof *lat)) == NULL)
			bench_die("out of memory");
		lat[n++] = dt;
		nanosleep(&nap, NULL);
	}
	pthread_join(th, NULL);
	bench_summarize(lat, n, &st);
	printf("%zu %.0f %.0f %.0f %.0f %d\n", n, st.p50, st.p99, st.max, a.ms, a.code);
	free(lat);
	kjit_close(c);
	return 0;
}
