/* startd.c: starts kjitd and times it to its first answered ping.
 *
 *   bench-startd SOCKET TIMEOUT_S -- COMMAND [ARGS...]
 *
 * Forks and execs COMMAND (kjitd --foreground ..., or the same under
 * valgrind), then connects to SOCKET and pings every 0.2 ms until the
 * daemon answers.  Prints "start_ms pid" and exits, leaving the daemon
 * running (reparented, its stdout on /dev/null so that a caller reading
 * ours sees its end); the caller stops it.  Exits 1 if the command
 * dies or does not answer within TIMEOUT_S.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static int try_ping(const char *sock)
{
	kjit_open_options o = { .socket_path = sock, .no_autostart = 1, .timeout_ms = 10000 };
	kjit_client *c = NULL;
	int r = kjit_open(&c, &o);

	if (r == 0)
		r = kjit_ping(c);
	kjit_close(c);
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 5 || strcmp(argv[3], "--") != 0)
		bench_die("usage: bench-startd SOCKET TIMEOUT_S -- COMMAND [ARGS...]");
	const char *sock = argv[1];
	double limit = (double)bench_num("TIMEOUT_S", argv[2]) * 1e6;
	struct timespec nap = { 0, 200000 };
	int st;

	double t0 = bench_now_us();
	pid_t pid = fork();
	if (pid < 0)
		bench_die("fork: %s", strerror(errno));
	if (pid == 0) {
		/* Not our stdout: the caller reads it to its end. */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[4], argv + 4);
		fprintf(stderr, "bench-startd: cannot run %s: %s\n", argv[4], strerror(errno));
		_exit(127);
	}
	while (try_ping(sock) != 0) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			bench_die("%s exited before answering", argv[4]);
		if (bench_now_us() - t0 > limit) {
			kill(pid, SIGKILL);
			bench_die("%s did not answer within %s s", argv[4], argv[2]);
		}
		nanosleep(&nap, NULL);
	}
	printf("%.1f %ld\n", (bench_now_us() - t0) / 1e3, (long)pid);
	return 0;
}
