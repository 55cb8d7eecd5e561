/* testcomp.c: the "test" family, a fake compiler for the daemon's crash and
 * hang tests.  The source text says what to do, by the first line of the
 * form "#pragma kjit_test WORD [N]":
 *   abort      abort() (the worker dies of SIGABRT)
 *   spin       loop forever (the daemon's timeout must kill the worker)
 *   sleep N    sleep N milliseconds, then echo the source
 *   probe PATH try to open PATH for reading; the log says what happened
 *              (tests of the worker's Landlock walls)
 *   fds        the log lists the worker's open file descriptors
 *   error      fail with KJIT_ECOMPILE and a log containing "error"
 *   size N [MS] an object of N bytes (at most KJ_OBJECT_MAX), the source
 *              repeated, after MS milliseconds: a small request gets a large
 *              object (the reply-budget and cache-share tests, budget.sh)
 * With no such line the source bytes are echoed back as the object.
 * Backend HIP, so a request for backend hip can be routed to it; any
 * target that is a plain token is accepted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "testcomp.h"
#include "util.h"

static int test_init(void **state, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	*state = NULL;
	return 0;
}

static void test_fini(void *state)
{
	(void)state;
}

static int test_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen)
{
	(void)state;
	snprintf(id, idlen, "test 1");
	snprintf(rv, rvlen, "0.0");
	return 0;
}

static int test_check_target(void *state, const char *target, char *err, size_t errlen)
{
	(void)state;
	if (target == NULL || !kj__token_ok(target, KJ_TARGET_MAX) || strcmp(target, "bad") == 0) {
		snprintf(err, errlen, "target '%.64s' is not supported by the test compiler",
			 target ? target : "");
		return KJIT_ETARGET;
	}
	return 0;
}

/* The word after "#pragma kjit_test " copied into w, and its number; 0 if none. */
static int directive(const struct kj__compile_job *job, char *w, size_t wlen, long *num, char *rest,
		     size_t restlen)
{
	static const char tag[] = "#pragma kjit_test ";
	const char *s = (const char *)job->source;
	size_t n = job->source_len, tl = sizeof tag - 1;

	for (size_t i = 0; i + tl <= n; i++) {
		if ((i == 0 || s[i - 1] == '\n') && memcmp(s + i, tag, tl) == 0) {
			char line[512] = "";
			size_t k = 0;
			for (i += tl; i < n && s[i] != '\n' && k + 1 < sizeof line; i++)
				line[k++] = s[i];
			*num = 0;
			if (sscanf(line, "%15s %ld", w, num) < 1 || strlen(w) + 1 > wlen)
				return 0;
			const char *r = line + strlen(w);
			r += strspn(r, " ");
			snprintf(rest, restlen, "%s", r);
			return 1;
		}
	}
	return 0;
}

static int test_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	char word[16] = "", rest[512] = "";
	long num = 0;
	char err[256];
	int r;

	memset(out, 0, sizeof *out);
	if ((r = test_check_target(state, job->target, err, sizeof err)) < 0)
		return kj__out_error(out, r, err);
	if (directive(job, word, sizeof word, &num, rest, sizeof rest)) {
		if (strcmp(word, "probe") == 0 || strcmp(word, "fds") == 0) {
			struct kj__buf b = { 0 };
			if (strcmp(word, "probe") == 0) {
				int fd = open(rest, O_RDONLY | O_CLOEXEC);
				kj__buf_printf(&b, "probe %s: %s\n", rest, fd >= 0 ? "opened" : strerror(errno));
				if (fd >= 0)
					close(fd);
			} else {
				DIR *dir = opendir("/proc/self/fd");
				struct dirent *e;
				kj__buf_printf(&b, "fds:");
				while (dir && (e = readdir(dir)) != NULL)
					if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(dir))
						kj__buf_printf(&b, " %s", e->d_name);
				if (dir)
					closedir(dir);
				kj__buf_printf(&b, "\n");
			}
			if (kj__buf_append(&b, "", 1) < 0) {
				kj__buf_free(&b);
				return KJIT_ENOMEM;
			}
			out->log = (char *)b.p;
			return kj__out_error(out, KJIT_ECOMPILE, "test compiler: probe done");
		}
		if (strcmp(word, "abort") == 0)
			abort();
		if (strcmp(word, "spin") == 0) {
			volatile unsigned long spin = 0;
			for (;;)
				spin++;
		}
		if (strcmp(word, "sleep") == 0 && num > 0) {
			struct timespec ts = { num / 1000, (num % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) != 0)
				;
		}
		if (strcmp(word, "error") == 0) {
			out->log = kj__strdup("test.src:1:1: error: requested failure\n");
			return kj__out_error(out, KJIT_ECOMPILE, "test compiler: requested failure");
		}
	}
	if (strcmp(word, "size") == 0 && num > 0 && num <= (long)KJ_OBJECT_MAX && job->source_len) {
		long ms = 0;
		if (sscanf(rest, "%*d %ld", &ms) == 1 && ms > 0) {
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) != 0)
				;
		}
		if ((out->data = malloc((size_t)num)) == NULL)
			return KJIT_ENOMEM;
		for (size_t i = 0; i < (size_t)num; i += job->source_len)
			memcpy(out->data + i, job->source,
			       (size_t)num - i < job->source_len ? (size_t)num - i : job->source_len);
		out->len = (size_t)num;
		return 0;
	}
	if ((out->data = malloc(job->source_len ? job->source_len : 1)) == NULL)
		return KJIT_ENOMEM;
	if (job->source_len)
		memcpy(out->data, job->source, job->source_len);
	out->len = job->source_len;
	return 0;
}

const struct kj__compiler_ops kj__compiler_test = {
	.name = "test",
	.backend = KJIT_BACKEND_HIP,
	.ext = "hsaco",
	.init = test_init,
	.fini = test_fini,
	.identity = test_identity,
	.check_target = test_check_target,
	.compile = test_compile,
};
