/* slowopen.c: an LD_PRELOAD shim for tests/e2e/offhash.sh, a slow disk for
 * headers: open(2) of a path containing "kjit-slow" sleeps
 * KJIT_TEST_SLOW_OPEN_MS milliseconds first, while the file named by
 * KJIT_TEST_SLOW_OPEN_FLAG exists (unset: always).  kjitd opens such a
 * header only to resolve a request's includes and to check it for the memo,
 * both on libuv's thread pool (daemon/miss/offhash.c): a loop that still did
 * that work itself would stop answering for as long.  Every other call is
 * the C library's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);

static void maybe_sleep(const char *path)
{
	const char *ms = getenv("KJIT_TEST_SLOW_OPEN_MS"), *flag = getenv("KJIT_TEST_SLOW_OPEN_FLAG");

	if (ms && path && strstr(path, "kjit-slow") && (flag == NULL || access(flag, F_OK) == 0)) {
		long v = atol(ms);
		struct timespec t = { v / 1000, (v % 1000) * 1000000L };
		nanosleep(&t, NULL);
	}
}

static int call(const char *name, const char *path, int flags, mode_t mode)
{
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);

	maybe_sleep(path);
	return real ? real(path, flags, mode) : -1;
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return call("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return call("open64", path, flags, mode);
}
