/* testcomp.c: the "test" family, a fake compiler for the daemon's crash and
 * hang tests.  The source text says what to do, by the first line of the
 * form "#pragma kjit_test WORD [N]":
 *   abort      abort() (the worker dies of SIGABRT)
 *   spin       loop forever (the daemon's timeout must kill the worker)
 *   sleep N    sleep N milliseconds, then echo the source
 *   probe PATH try to open PATH for reading; the log says what happened
 *              (tests of the worker's Landlock walls)
 *   fds        the log lists the worker's open file descriptors
 *   report [PATH...]  the log reports the walls as seen from inside a
 *              compile, one "name: value" line each (uid, gid, ns-user ...
 *              ns-uts as /proc/self/ns inode numbers, NoNewPrivs, Seccomp,
 *              each socket kind, ptrace, the /dev listing, whether
 *              /etc/shadow, /root, /sys, /home and each PATH opens, the
 *              job's directory and what it holds)
 *   bg N       starts `sleep N` double-forked into its own session (the
 *              worker must kill it when the job ends) and writes a file
 *              beside the job's directory and one in it; the log says its pid
 *   error      fail with KJIT_ECOMPILE and a log containing "error"
 *   alloc N    keep N MiB allocated and touched (never freed: the worker's
 *              resident size stays, as an in-process compiler's may after
 *              a large compile), then echo the source (pool.c's
 *              --worker-max-rss test, tests/e2e/tenancy.sh)
 *   size N [MS] an object of N bytes (at most KJ_OBJECT_MAX), the source
 *              repeated, after MS milliseconds: a small request gets a large
 *              object (the reply-budget and cache-share tests, budget.sh)
 * With no such line the source bytes are echoed back as the object.  Its
 * warm-up obeys KJIT_TEST_WARM (test_warm).
 * Backend HIP, so a request for backend hip can be routed to it; any
 * target that is a plain token is accepted.
 */
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* The warm-up, as the tests set it in kjitd's environment (kept for the
 * worker, daemon/miss/pool.c): KJIT_TEST_WARM=N sleeps N milliseconds
 * (a compiler slow to warm: hits must not wait for it), KJIT_TEST_WARM=fail
 * fails (the HELLO carries it: compiles are refused, hits still served). */
static int test_warm(void *state, char *err, size_t errlen)
{
	const char *v = getenv("KJIT_TEST_WARM");
	long ms;

	(void)state;
	if (v == NULL || *v == '\0')
		return 0;
	if (strcmp(v, "fail") == 0) {
		snprintf(err, errlen, "test compiler: the warm-up failed (KJIT_TEST_WARM=fail)");
		return KJIT_EBACKEND;
	}
	if ((ms = strtol(v, NULL, 10)) <= 0 || ms > 60000)
		return 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
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

/* The "inside:" line: what the job's directory dir holds ("(nothing)"). */
static void list_inside(struct kj__buf *b, const char *dir)
{
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int none = 1;

	kj__buf_printf(b, "inside:");
	while (d && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			kj__buf_printf(b, " %s", e->d_name), none = 0;
	kj__buf_printf(b, "%s\n", none ? " (nothing)" : "");
	if (d)
		closedir(d);
}

/* One line per wall, as a process inside a compile sees it. */
static void report(struct kj__buf *b, const char *paths)
{
	static const char *const ns[] = { "user", "mnt", "pid", "net", "ipc", "uts" };
	static const struct { const char *name; int dom, type; } socks[] = {
		{ "unix-stream", AF_UNIX, SOCK_STREAM }, { "unix-dgram", AF_UNIX, SOCK_DGRAM },
		{ "inet-stream", AF_INET, SOCK_STREAM }, { "inet-dgram", AF_INET, SOCK_DGRAM },
		{ "inet6-stream", AF_INET6, SOCK_STREAM }, { "inet6-dgram", AF_INET6, SOCK_DGRAM },
	};
	static const char *const probes[] = { "/etc/shadow", "/root", "/sys", "/home", "/etc/passwd" };
	char path[64], line[256], copy[512];
	struct stat st;

	kj__buf_printf(b, "uid: %u\ngid: %u\n", (unsigned)getuid(), (unsigned)getgid());
	for (size_t i = 0; i < KJ_ARRAY_SIZE(ns); i++) {
		snprintf(path, sizeof path, "/proc/self/ns/%s", ns[i]);
		kj__buf_printf(b, "ns-%s: %llu\n", ns[i],
			       stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0ull);
	}
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "NoNewPrivs:", 11) == 0 || strncmp(line, "Seccomp:", 8) == 0)
			kj__buf_printf(b, "%s", line);
	if (f)
		fclose(f);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(socks); i++) {
		int fd = socket(socks[i].dom, socks[i].type | SOCK_CLOEXEC, 0);
		kj__buf_printf(b, "socket-%s: %s\n", socks[i].name, fd >= 0 ? "opened" : strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	int sv[2];
	int spr = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	kj__buf_printf(b, "socketpair: %s\n", spr == 0 ? "opened" : strerror(errno));
	if (spr == 0) {
		close(sv[0]);
		close(sv[1]);
	}
	errno = 0;
	long pr = ptrace(PTRACE_PEEKUSER, getppid() > 0 ? getppid() : 1, NULL, NULL);
	kj__buf_printf(b, "ptrace: %s\n", pr == -1 && errno ? strerror(errno) : "worked");
	DIR *d = opendir("/dev");
	struct dirent *e;
	kj__buf_printf(b, "dev:");
	while (d && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			kj__buf_printf(b, " %s", e->d_name);
	kj__buf_printf(b, "%s\n", d ? "" : " (unreadable)");
	if (d)
		closedir(d);
	snprintf(copy, sizeof copy, "%s", paths);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(probes); i++) {
		int fd = open(probes[i], O_RDONLY | O_CLOEXEC);
		kj__buf_printf(b, "read %s: %s\n", probes[i], fd >= 0 ? "opened" : strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	for (char *save = NULL, *p = strtok_r(copy, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		kj__buf_printf(b, "read %s: %s\n", p, fd >= 0 ? "opened" : strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	const char *tmp = getenv("TMPDIR");
	kj__buf_printf(b, "tmpdir: %s\n", tmp ? tmp : "(none)");
	list_inside(b, tmp); /* what the job's own directory holds before it writes: nothing */
	/* What else is beside the job's directory: nothing an earlier job left. */
	snprintf(copy, sizeof copy, "%s", tmp ? tmp : "/tmp");
	char *slash = strrchr(copy, '/');
	if (slash && slash != copy)
		*slash = '\0';
	d = opendir(copy);
	kj__buf_printf(b, "beside:");
	while (d && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..") != 0))
			kj__buf_printf(b, " %s", e->d_name);
	kj__buf_printf(b, "\n");
	if (d)
		closedir(d);
}

/* Starts `sleep secs` twice forked in a session of its own: a job's
 * leftover, which the worker must kill when the job ends. */
static void background(struct kj__buf *b, long secs)
{
	int p[2];
	pid_t pid, got = 0;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		kj__buf_printf(b, "bg: %s\n", strerror(errno));
		return;
	}
	if (pid == 0) {
		setsid();
		pid_t gc = fork();
		if (gc == 0) {
			char arg[32];
			snprintf(arg, sizeof arg, "%ld", secs);
			int devnull = open("/dev/null", O_RDWR);
			if (devnull >= 0) {
				dup2(devnull, 1);
				dup2(devnull, 2);
			}
			execl("/bin/sleep", "sleep", arg, (char *)NULL);
			_exit(127);
		}
		if (write(p[1], &gc, sizeof gc) != (ssize_t)sizeof gc)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &got, sizeof got) != (ssize_t)sizeof got)
		got = -1;
	close(p[0]);
	waitpid(pid, NULL, 0);
	kj__buf_printf(b, "bg: sleep %ld started, pid %d\n", secs, (int)got);
	/* And a file beside the job's directory, for the next job to look for. */
	char path[512];
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/../left-by-a-job", tmp ? tmp : "/tmp");
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	kj__buf_printf(b, "bg: %s %s\n", path, fd >= 0 ? "written" : strerror(errno));
	if (fd >= 0)
		close(fd);
	/* And one in its own directory, which is the next job's path too. */
	snprintf(path, sizeof path, "%s/left-in-the-job", tmp ? tmp : "/tmp");
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	kj__buf_printf(b, "bg: %s %s\n", path, fd >= 0 ? "written" : strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* "fds": the worker's open descriptors, into b. */
static void list_fds(struct kj__buf *b)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;

	kj__buf_printf(b, "fds:");
	while (dir && (e = readdir(dir)) != NULL)
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(dir))
			kj__buf_printf(b, " %s", e->d_name);
	if (dir)
		closedir(dir);
	kj__buf_printf(b, "\n");
}

/* "alloc N": N MiB allocated and touched, deliberately never freed (the
 * worker's resident size stays, as an in-process compiler's may); the log
 * says where, so the compiler cannot drop the allocation.  0 or -1. */
static int keep_memory(long mib, struct kj__compile_out *out)
{
	char *keep = malloc((size_t)mib << 20);

	if (keep == NULL)
		return -1;
	memset(keep, 1, (size_t)mib << 20);
	out->log = kj__asprintf("alloc: kept %ld MiB at %p (%d)\n", mib, (void *)keep, keep[(size_t)mib << 19]);
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
		if (strcmp(word, "probe") == 0 || strcmp(word, "fds") == 0 || strcmp(word, "report") == 0 ||
		    strcmp(word, "bg") == 0) {
			struct kj__buf b = { 0 };
			if (strcmp(word, "report") == 0) {
				report(&b, rest);
			} else if (strcmp(word, "bg") == 0) {
				background(&b, num > 0 ? num : 1000);
			} else if (strcmp(word, "probe") == 0) {
				int fd = open(rest, O_RDONLY | O_CLOEXEC);
				kj__buf_printf(&b, "probe %s: %s\n", rest, fd >= 0 ? "opened" : strerror(errno));
				if (fd >= 0)
					close(fd);
			} else {
				list_fds(&b);
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
		if (strcmp(word, "alloc") == 0 && num > 0 && num <= 4096 && keep_memory(num, out) < 0)
			return kj__out_error(out, KJIT_ENOMEM, "test compiler: cannot allocate");
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
	.init = test_init,
	.warm = test_warm,
	.fini = test_fini,
	.identity = test_identity,
	.check_target = test_check_target,
	.compile = test_compile,
};
