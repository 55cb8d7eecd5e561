/* slowfsync.c: an LD_PRELOAD shim for tests/e2e/publish.sh, a slow disk:
 * fsync(2) of a file whose name has ".tmp." (an object being published,
 * cache/store.c) sleeps KJIT_TEST_SLOW_FSYNC_MS milliseconds first, while
 * the file named by KJIT_TEST_SLOW_FSYNC_FLAG exists (unset: always).
 * Every other call is the C library's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fsync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	const char *ms = getenv("KJIT_TEST_SLOW_FSYNC_MS"), *flag = getenv("KJIT_TEST_SLOW_FSYNC_FLAG");
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	if (ms && n > 0 && (flag == NULL || access(flag, F_OK) == 0)) {
		path[n] = '\0';
		if (strstr(path, ".tmp.") && !strstr(path, "/recipes/")) {
			long v = atol(ms);
			struct timespec t = { v / 1000, (v % 1000) * 1000000L };
			nanosleep(&t, NULL);
		}
	}
	return real ? real(fd) : -1;
}
