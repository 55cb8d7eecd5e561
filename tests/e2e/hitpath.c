/* hitpath.c: helper of tests/e2e/hitpath.sh, the shared hit table against
 * a real kjitd (KJIT_SOCKET).  Modes:
 *
 *   race SECONDS READERS BACKEND TARGET KERNEL...   (TARGET - : resolved)
 *       READERS processes read KERNELs through libkjit (fast path on, the
 *       process memo off) for SECONDS while another process hammers the
 *       same requests with the fast path off, so that kjitd keeps
 *       rewriting their table entries (and the script invalidates the
 *       table meanwhile).  Every answer is compared with a reference taken
 *       through the socket first; any difference (a torn copy) fails.
 *   scribble
 *       Attaches like libkjit, then tries every way to write the table:
 *       mprotect, a shared writable mmap, write(2), a read-write reopen;
 *       then a child stores into the read-only mapping and must die of
 *       SIGSEGV.  The table's header must be unchanged afterwards.
 *   memo BACKEND TARGET KERNEL
 *       Gets KERNEL, stops kjitd, gets it again on the same handle: prints
 *       "served" (the process memo answered) or "failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kjit.h"
#include "proto.h"

static int backend_of(const char *s)
{
	return strcmp(s, "hip") == 0 ? KJIT_BACKEND_HIP : strcmp(s, "cuda") == 0 ? KJIT_BACKEND_CUDA
											   : KJIT_BACKEND_VULKAN;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static kjit_client *open_client(int fast)
{
	kjit_client *c = NULL;

	if (fast)
		unsetenv("KJIT_FAST_PATH");
	else
		setenv("KJIT_FAST_PATH", "0", 1);
	if (kjit_open(&c, NULL) < 0) {
		fprintf(stderr, "hitpath: kjit_open: %s\n", kjit_last_error(NULL));
		exit(2);
	}
	unsetenv("KJIT_FAST_PATH");
	return c;
}

/* Reads the kernels for secs; with refs, compares.  Returns mismatches. */
static long loop_gets(kjit_client *c, int backend, const char *target, char **kernels, int n, kjit_result *refs,
		      double secs, long *count)
{
	long bad = 0;
	double end = now_s() + secs;

	while (now_s() < end) {
		for (int i = 0; i < n; i++) {
			kjit_request q = { .backend = backend, .target = target, .kernel = kernels[i] };
			kjit_result r;
			if (kjit_get(c, &q, &r) < 0) {
				fprintf(stderr, "hitpath: get %s: %s\n", kernels[i], r.error ? r.error : "?");
				bad++;
			} else if (refs && (r.size != refs[i].size || memcmp(r.data, refs[i].data, r.size) != 0 ||
					    strcmp(r.key, refs[i].key) != 0)) {
				fprintf(stderr, "hitpath: %s: bytes differ from the socket's (%zu vs %zu)\n", kernels[i],
					r.size, refs[i].size);
				bad++;
			}
			kjit_result_free(&r);
			(*count)++;
		}
	}
	return bad;
}

static int race(int argc, char **argv)
{
	double secs = atof(argv[2]);
	int readers = atoi(argv[3]), backend = backend_of(argv[4]), n = argc - 6;
	const char *target = strcmp(argv[5], "-") ? argv[5] : NULL;
	char **kernels = argv + 6;
	kjit_result *refs = calloc((size_t)n, sizeof *refs);
	int failed = 0;

	if (refs == NULL)
		return 2;
	setenv("KJIT_PROCESS_MEMO", "0", 1);
	kjit_client *c = open_client(0);
	for (int i = 0; i < n; i++) {
		kjit_request q = { .backend = backend, .target = target, .kernel = kernels[i] };
		if (kjit_get(c, &q, &refs[i]) < 0) {
			fprintf(stderr, "hitpath: reference %s: %s\n", kernels[i], refs[i].error);
			return 2;
		}
	}
	kjit_close(c);
	pid_t pids[65];
	int np = 0;
	for (int k = 0; k <= readers && k < 65; k++) {
		pid_t p = fork();
		if (p < 0)
			return 2;
		if (p == 0) {
			long count = 0, bad;
			kjit_client *cc = open_client(k < readers); /* the last one: the socket */
			bad = loop_gets(cc, backend, target, kernels, n, refs, secs, &count);
			kjit_close(cc);
			_exit(bad ? 1 : 0);
		}
		pids[np++] = p;
	}
	for (int k = 0; k < np; k++) {
		int st;
		if (waitpid(pids[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	printf("%d of %d processes saw a difference or failed\n", failed, np);
	for (int i = 0; i < n; i++)
		kjit_result_free(&refs[i]);
	free(refs);
	return failed ? 1 : 0;
}

/* The raw ATTACH exchange: two descriptors. */
static int attach_raw(int fds[2])
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct kj__buf b = { 0 };
	const char *path = getenv("KJIT_SOCKET");
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	union {
		char buf[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} u;
	uint8_t reply[256];

	if (s < 0 || path == NULL || strlen(path) >= sizeof sa.sun_path)
		return -1;
	strcpy(sa.sun_path, path);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0 || kj__msg_begin(&b, KJ_MSG_ATTACH, 7) < 0 ||
	    kj__msg_end(&b) < 0 || write(s, b.p, b.len) != (ssize_t)b.len)
		return -1;
	struct iovec iov = { reply, sizeof reply };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	if (recvmsg(s, &mh, 0) <= 0)
		return -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	if (cm == NULL || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int) * 2))
		return -1;
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * 2);
	kj__buf_free(&b);
	return s; /* kept open: the counters belong to this connection */
}

static int scribble(void)
{
	int fds[2], bad = 0;
	struct stat st;
	int s = attach_raw(fds);

	if (s < 0 || fstat(fds[0], &st) < 0) {
		fprintf(stderr, "hitpath: attach failed\n");
		return 2;
	}
	size_t size = (size_t)st.st_size;
	uint8_t *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fds[0], 0);
	if (map == MAP_FAILED)
		return 2;
	uint8_t before[128];
	memcpy(before, map, sizeof before);
#define EXPECT(what, cond)                                                        \
	do {                                                                      \
		if (cond)                                                         \
			printf("refused: %s (%s)\n", what, strerror(errno));      \
		else {                                                            \
			printf("ALLOWED: %s\n", what);                            \
			bad++;                                                    \
		}                                                                 \
	} while (0)
	errno = 0;
	EXPECT("mprotect PROT_WRITE", mprotect(map, 4096, PROT_READ | PROT_WRITE) < 0);
	void *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	EXPECT("shared writable mmap of the descriptor sent", w == MAP_FAILED);
	EXPECT("write(2)", write(fds[0], "x", 1) < 0);
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fds[0]);
	int rw = open(proc, O_RDWR);
	if (rw >= 0) {
		void *w2 = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
		EXPECT("shared writable mmap after a read-write reopen", w2 == MAP_FAILED);
		EXPECT("pwrite after a read-write reopen", pwrite(rw, "x", 1, 0) < 0);
		EXPECT("ftruncate after a read-write reopen", ftruncate(rw, 0) < 0);
		close(rw);
	} else {
		printf("refused: read-write reopen (%s)\n", strerror(errno));
	}
	pid_t p = fork();
	if (p == 0) {
		((volatile uint8_t *)map)[0] = 'X'; /* must die here */
		_exit(0);
	}
	int stc;
	if (p < 0 || waitpid(p, &stc, 0) < 0)
		return 2;
	if (WIFSIGNALED(stc) && WTERMSIG(stc) == SIGSEGV)
		printf("refused: a store into the mapping (the child died of SIGSEGV)\n");
	else {
		printf("ALLOWED: a store into the mapping\n");
		bad++;
	}
	if (memcmp(before, map, sizeof before) != 0) {
		printf("the table's header changed\n");
		bad++;
	}
	close(s);
	return bad ? 1 : 0;
}

static int memo(char **argv)
{
	kjit_client *c = open_client(0); /* no table: only the memo can answer */
	kjit_request q = { .backend = backend_of(argv[2]), .target = strcmp(argv[3], "-") ? argv[3] : NULL,
			   .kernel = argv[4] };
	kjit_result r;

	if (kjit_get(c, &q, &r) < 0) {
		fprintf(stderr, "hitpath: get: %s\n", r.error);
		return 2;
	}
	kjit_result_free(&r);
	if (kjit_stop(c) < 0)
		return 2;
	for (int i = 0; i < 100 && access(getenv("KJIT_SOCKET"), F_OK) == 0; i++)
		usleep(20000);
	printf("%s\n", kjit_get(c, &q, &r) == 0 ? "served" : "failed");
	kjit_result_free(&r);
	kjit_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 7 && strcmp(argv[1], "race") == 0)
		return race(argc, argv);
	if (argc == 2 && strcmp(argv[1], "scribble") == 0)
		return scribble();
	if (argc == 5 && strcmp(argv[1], "memo") == 0)
		return memo(argv);
	fprintf(stderr, "usage: hitpath race SECONDS READERS BACKEND TARGET KERNEL... | scribble | memo BACKEND TARGET KERNEL\n");
	return 2;
}
