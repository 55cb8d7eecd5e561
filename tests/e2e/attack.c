/* attack.c: helper of tests/e2e/isolation-attacks.sh, run as the attacking
 * user against a real kjitd (KJIT_SOCKET).  Modes:
 *
 *   attach-scan MARKER...
 *       Sends ATTACH as libkjit does and, for every descriptor kjitd hands
 *       back, maps it read-only and scans every byte for each MARKER (a
 *       string from another user's source, key or object).  Prints
 *       "no table: CODE" when kjitd shares none, else "mapped N bytes" and
 *       one "FOUND MARKER" line per marker present.  Exit 0 unless it
 *       could not talk to kjitd (2).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"

/* Sends ATTACH on a new connection; the descriptors received (0..2) go to
 * fds, their count to *nfd, the reply's first bytes to reply.  The socket,
 * kept open, or -1. */
static int attach(int fds[2], int *nfd, uint8_t *reply, size_t rlen, ssize_t *got)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct kj__buf b = { 0 };
	const char *path = getenv("KJIT_SOCKET");
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	union {
		char buf[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} u;

	*nfd = 0;
	if (s < 0 || path == NULL || strlen(path) >= sizeof sa.sun_path)
		return -1;
	strcpy(sa.sun_path, path);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0 || kj__msg_begin(&b, KJ_MSG_ATTACH, 7) < 0 ||
	    kj__msg_end(&b) < 0 || write(s, b.p, b.len) != (ssize_t)b.len) {
		close(s);
		kj__buf_free(&b);
		return -1;
	}
	kj__buf_free(&b);
	struct iovec iov = { reply, rlen };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	if ((*got = recvmsg(s, &mh, 0)) <= 0) {
		close(s);
		return -1;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds, CMSG_DATA(cm), sizeof(int) * (size_t)(n > 2 ? 2 : n));
			*nfd = n > 2 ? 2 : n;
		}
	return s;
}

static int attach_scan(int argc, char **argv)
{
	int fds[2] = { -1, -1 }, nfd = 0;
	uint8_t reply[512];
	ssize_t got = 0;
	int s = attach(fds, &nfd, reply, sizeof reply, &got);

	if (s < 0) {
		fprintf(stderr, "attack: cannot attach: %s\n", strerror(errno));
		return 2;
	}
	if (nfd == 0) {
		/* the reply's text, printable bytes only: the reason kjitd gave */
		printf("no table: ");
		for (ssize_t i = 0; i < got; i++)
			if (reply[i] >= 0x20 && reply[i] < 0x7f)
				putchar(reply[i]);
		putchar('\n');
		close(s);
		return 0;
	}
	for (int i = 0; i < nfd; i++) {
		struct stat st;
		if (fstat(fds[i], &st) < 0 || st.st_size == 0)
			continue;
		const uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fds[i], 0);
		if (m == MAP_FAILED) {
			fprintf(stderr, "attack: mmap: %s\n", strerror(errno));
			continue;
		}
		printf("mapped %lld bytes\n", (long long)st.st_size);
		for (int k = 0; k < argc; k++)
			if (memmem(m, (size_t)st.st_size, argv[k], strlen(argv[k])) != NULL)
				printf("FOUND %s\n", argv[k]);
		munmap((void *)m, (size_t)st.st_size);
		close(fds[i]);
	}
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "attach-scan") == 0)
		return attach_scan(argc - 2, argv + 2);
	fprintf(stderr, "usage: attack attach-scan MARKER...\n");
	return 2;
}
