/* floor.c: the two floors a cache hit is judged against, timed the same
 * way as bench-hitlat.
 *
 *   bench-floor echo REQ_BYTES REPLY_BYTES [-n N] [-w W]
 *   bench-floor file PATH [-n N] [-w W]
 *
 * echo: two processes joined by a connected AF_UNIX stream socket
 * (socketpair: after connect(2) it is the same kernel path as kjit's
 * socket).  The client writes REQ_BYTES, then reads REPLY_BYTES fully; the
 * server reads the request fully and writes the reply from a ready buffer.
 * No framing, no parsing, no allocation: the transport's limit.
 * file: open(2), read(2) the whole file into a ready buffer, close(2), in
 * this process: the cost of reading the object with no daemon at all.
 * Prints "p50_us p99_us mean_us n bytes".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* Reads exactly n bytes; 0, or -1 on EOF or error. */
static int read_full(int fd, char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int write_full(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void serve(int fd, size_t req, size_t reply)
{
	char *in = malloc(req), *out = calloc(1, reply);

	if (in == NULL || out == NULL)
		_exit(1);
	while (read_full(fd, in, req) == 0 && write_full(fd, out, reply) == 0)
		;
	_exit(0);
}

static void echo(size_t req, size_t reply, double *t, unsigned long n, unsigned long warm)
{
	int sv[2];
	pid_t pid;
	char *in = malloc(reply), *out = calloc(1, req);

	if (in == NULL || out == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		bench_die("socketpair: %s", strerror(errno));
	if ((pid = fork()) < 0)
		bench_die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		serve(sv[1], req, reply);
	}
	close(sv[1]);
	for (unsigned long i = 0; i < warm + n; i++) {
		double t0 = bench_now_us();
		if (write_full(sv[0], out, req) < 0 || read_full(sv[0], in, reply) < 0)
			bench_die("echo: the server went away");
		if (i >= warm)
			t[i - warm] = bench_now_us() - t0;
	}
	close(sv[0]);
	waitpid(pid, NULL, 0);
	free(in);
	free(out);
}

static size_t file(const char *path, double *t, unsigned long n, unsigned long warm)
{
	struct stat st;
	char *buf;

	if (stat(path, &st) < 0 || (buf = malloc((size_t)st.st_size + 1)) == NULL)
		bench_die("%s: %s", path, strerror(errno));
	for (unsigned long i = 0; i < warm + n; i++) {
		double t0 = bench_now_us();
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read_full(fd, buf, (size_t)st.st_size) < 0)
			bench_die("%s: cannot read", path);
		close(fd);
		if (i >= warm)
			t[i - warm] = bench_now_us() - t0;
	}
	free(buf);
	return (size_t)st.st_size;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-floor echo REQ_BYTES REPLY_BYTES [-n N] [-w W]\n"
			"       bench-floor file PATH [-n N] [-w W]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long n = 1000, warm = 100;
	int is_echo = argc > 1 && strcmp(argv[1], "echo") == 0, first = is_echo ? 4 : 3;
	size_t bytes = 0;

	if (argc < first || (!is_echo && strcmp(argv[1], "file") != 0))
		usage();
	for (int i = first; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "-n") == 0)
			n = bench_num("-n", argv[++i]);
		else if (strcmp(argv[i], "-w") == 0)
			warm = bench_num("-w", argv[++i]);
		else
			usage();
	}
	double *t = calloc(n ? n : 1, sizeof *t);
	if (t == NULL || n == 0)
		bench_die("bad -n");
	signal(SIGPIPE, SIG_IGN);
	if (is_echo) {
		size_t req = bench_num("REQ_BYTES", argv[2]);
		bytes = bench_num("REPLY_BYTES", argv[3]);
		if (req == 0 || bytes == 0)
			bench_die("byte counts must be > 0");
		echo(req, bytes, t, n, warm);
	} else {
		bytes = file(argv[2], t, n, warm);
	}
	struct bench_stats s;
	bench_summarize(t, n, &s);
	printf("%.2f %.2f %.2f %zu %zu\n", s.p50, s.p99, s.mean, s.n, bytes);
	free(t);
	return 0;
}
