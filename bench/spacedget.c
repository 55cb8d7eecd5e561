/* spacedget.c: a bare Redis GET timed the way scenario 8 times a remote hit.
 *
 *   bench-spacedget SOCKET SIZE [-n N] [--gap MS]
 *
 * redis-benchmark's GET floor is a hot loop: one client sending the next GET
 * the moment the last reply arrived, so both processes stay on a CPU.  A
 * remote hit in scenario 8 is timed differently: one request every --gap ms
 * from a process that slept in between (bench-hitlat --gap), so the client,
 * kjitd and Redis all wake cold.  This program times a GET in that same
 * style, so the two can be compared like with like: it SETs N keys of SIZE
 * random bytes on the Redis Unix socket SOCKET (plain RESP, no library),
 * then, on one connection, sleeps --gap ms (untimed) before each GET and
 * times the GET from its write to the last byte of its reply.  Prints one
 * line, "p50_us p99_us mean_us n size", as bench-hitlat does.  The keys
 * (bench:spacedget:I) are deleted at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static void usage(void)
{
	fprintf(stderr, "usage: bench-spacedget SOCKET SIZE [-n N] [--gap MS]\n");
	exit(2);
}

static void put_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			bench_die("write to redis: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* Reads one reply whose length is known in advance (want bytes) into buf. */
static void read_reply(int fd, char *buf, size_t want)
{
	size_t got = 0;
	while (got < want) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			bench_die("read from redis: %s", r == 0 ? "closed" : strerror(errno));
		got += (size_t)r;
	}
}

/* The RESP command "*3 SET key value" (or "*2 GET key" when val is NULL). */
static char *command(const char *key, const char *val, size_t vlen, size_t *len)
{
	size_t klen = strlen(key), cap = vlen + klen + 128;
	char *c = malloc(cap);
	if (c == NULL)
		bench_die("out of memory");
	int h = val ? snprintf(c, cap, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n", klen, key, vlen)
		    : snprintf(c, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", klen, key);
	size_t n = (size_t)h;
	if (val) {
		memcpy(c + n, val, vlen);
		memcpy(c + n + vlen, "\r\n", 2);
		n += vlen + 2;
	}
	*len = n;
	return c;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		bench_die("socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		bench_die("connect %s: %s", path, strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	unsigned long n = 200, gap_ms = 20;
	if (argc < 3)
		usage();
	const char *path = argv[1];
	size_t size = bench_num("SIZE", argv[2]);
	for (int i = 3; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "-n") == 0)
			n = bench_num("-n", argv[++i]);
		else if (strcmp(argv[i], "--gap") == 0)
			gap_ms = bench_num("--gap", argv[++i]);
		else
			usage();
	}
	if (n == 0 || size == 0)
		usage();

	int fd = connect_unix(path);
	char *val = malloc(size), key[64], hdr[32];
	double *t = calloc(n, sizeof *t);
	if (val == NULL || t == NULL)
		bench_die("out of memory");
	for (size_t i = 0; i < size; i++)
		val[i] = (char)('a' + rand() % 26);
	int hlen = snprintf(hdr, sizeof hdr, "$%zu\r\n", size);
	size_t want = (size_t)hlen + size + 2, len;
	char *reply = malloc(want);
	if (reply == NULL)
		bench_die("out of memory");
	for (unsigned long i = 0; i < n; i++) {
		snprintf(key, sizeof key, "bench:spacedget:%lu", i);
		char *c = command(key, val, size, &len);
		put_all(fd, c, len);
		read_reply(fd, reply, 5);
		if (memcmp(reply, "+OK\r\n", 5) != 0)
			bench_die("SET %s: unexpected reply", key);
		free(c);
	}
	for (unsigned long i = 0; i < n; i++) {
		snprintf(key, sizeof key, "bench:spacedget:%lu", i);
		char *c = command(key, NULL, 0, &len);
		struct timespec ts = { (time_t)(gap_ms / 1000), (long)(gap_ms % 1000) * 1000000L };
		while (gap_ms && nanosleep(&ts, &ts) != 0)
			;
		double t0 = bench_now_us();
		put_all(fd, c, len);
		read_reply(fd, reply, want);
		t[i] = bench_now_us() - t0;
		if (memcmp(reply, hdr, (size_t)hlen) != 0)
			bench_die("GET %s: unexpected reply", key);
		free(c);
	}
	for (unsigned long i = 0; i < n; i++) {
		char del[96];
		snprintf(key, sizeof key, "bench:spacedget:%lu", i);
		int m = snprintf(del, sizeof del, "*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n", strlen(key), key);
		put_all(fd, del, (size_t)m);
		read_reply(fd, reply, 4); /* ":1\r\n" */
	}

	struct bench_stats s;
	bench_summarize(t, n, &s);
	printf("%.2f %.2f %.2f %zu %zu\n", s.p50, s.p99, s.mean, s.n, size);
	free(t);
	free(val);
	free(reply);
	close(fd);
	return 0;
}
