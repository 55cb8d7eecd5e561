/* notify-listen.c: a stand-in for systemd's notification socket, for
 * tests/e2e/systemd.sh.
 *
 *   notify-listen PATH SECONDS
 *
 * Binds a datagram socket at PATH (what NOTIFY_SOCKET names), prints every
 * datagram it receives on stdout, one line per assignment, each datagram
 * preceded by a line SENDER_PID=N (from SO_PASSCRED: systemd, with
 * NotifyAccess=main, accepts only the main process's), and exits 0 as
 * soon as one of them carries READY=1; 1 if none did within SECONDS; 2 on a
 * usage or socket error.  PATH is removed on exit.  Built by the test with
 * cc, so the suite needs neither python nor socat.
 */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DGRAM_MAX 4096 /* sd_notify messages are a few short lines */

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Receives one datagram into buf; its sender's pid (-1 if not given) in *pid. */
static ssize_t recv_with_pid(int fd, char *buf, size_t size, pid_t *pid)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
			     .msg_controllen = sizeof ctl };
	ssize_t len = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

	*pid = -1;
	for (struct cmsghdr *c = len >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;
			memcpy(&cred, CMSG_DATA(c), sizeof cred);
			*pid = cred.pid;
		}
	}
	return len;
}

/* Prints one datagram a line per assignment; 1 if it holds READY=1. */
static int print_datagram(char *msg)
{
	int ready = 0;
	for (char *line = strtok(msg, "\n"); line; line = strtok(NULL, "\n")) {
		printf("%s\n", line);
		if (strcmp(line, "READY=1") == 0)
			ready = 1;
	}
	fflush(stdout);
	return ready;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[DGRAM_MAX + 1];
	pid_t pid;
	int fd, rc = 1;

	if (argc != 3 || strlen(argv[1]) >= sizeof sa.sun_path || atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: notify-listen PATH SECONDS\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int on = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "notify-listen: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	long deadline = now_ms() + atoi(argv[2]) * 1000L;
	while (rc == 1) {
		long left = deadline - now_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0)
			break;
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ssize_t len = recv_with_pid(fd, buf, DGRAM_MAX, &pid);
		if (len < 0) {
			fprintf(stderr, "notify-listen: recv: %s\n", strerror(errno));
			rc = 2;
			break;
		}
		buf[len] = '\0';
		printf("SENDER_PID=%ld\n", (long)pid);
		if (print_datagram(buf))
			rc = 0;
	}
	close(fd);
	unlink(argv[1]);
	return rc;
}
