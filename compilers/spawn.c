/* spawn.c: running a full compiler (hipcc, nvcc) as a child process in a
 * private job directory (the worker's, at its fixed path, or one made
 * here outside a worker): the directory's making, filling and removal, and
 * the run itself through posix_spawn with a clean environment (PATH, HOME
 * and TMPDIR pointing into the directory, LC_ALL=C), its own process group
 * (a job past its time has the whole group killed) and stdout+stderr
 * captured as the log, capped at KJ_LOG_MAX, with the directory's path
 * removed so no private path reaches a user.  The run ends when the
 * compiler exits, even if something it started still holds the pipe (the
 * worker kills such leftovers after the job).  No state outside the calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "compint.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

#define SPAWN_POLL_MS 100 /* how often a silent compiler is checked for having exited */

/* Reads the child's output into po until it ends (end of file, or the
 * child gone and the pipe quiet) or the deadline passes (the group is
 * killed).  0, or KJIT_ENOMEM (the group is killed). */
static int read_output(int fd, pid_t pid, uint64_t deadline, struct kj__proc_out *po)
{
	for (int exited = 0;;) {
		char buf[8192];
		uint64_t now = kj__now_us();
		if (now >= deadline) {
			po->timed_out = 1;
			kill(-pid, SIGKILL);
			return 0;
		}
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t wait_ms = (deadline - now) / 1000 + 1;
		int pr = poll(&pf, 1, exited ? 0 : (int)(wait_ms < SPAWN_POLL_MS ? wait_ms : SPAWN_POLL_MS));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0 && exited)
			return 0; /* the compiler is gone; what it left holding the pipe is the worker's to kill */
		if (pr == 0 && !exited && waitpid(pid, &po->status, WNOHANG) == pid) {
			exited = 1;
			continue;
		}
		if (pr <= 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		po->total += (size_t)n;
		if (po->log.len < KJ_LOG_MAX) {
			size_t k = (size_t)n < KJ_LOG_MAX - po->log.len ? (size_t)n : KJ_LOG_MAX - po->log.len;
			if (kj__buf_append(&po->log, buf, k) < 0) {
				kill(-pid, SIGKILL);
				return KJIT_ENOMEM;
			}
		}
	}
}

int kj__run_capture(const char *const *argv, const char *dir, int timeout_ms, struct kj__proc_out *po)
{
	int r = KJIT_EIO, fds[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid = -1;
	char home[PATH_MAX + 8], tmpd[PATH_MAX + 8];
	char *envp[] = { "PATH=/usr/bin:/bin", home, tmpd, "LC_ALL=C", "LANG=C", "HIP_PLATFORM=amd",
			 NULL };
	uint64_t deadline = kj__now_us() + (uint64_t)timeout_ms * 1000;

	memset(po, 0, sizeof *po);
	snprintf(home, sizeof home, "HOME=%s", dir);
	snprintf(tmpd, sizeof tmpd, "TMPDIR=%s", dir);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return KJIT_EIO;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawn_file_actions_addchdir_np(&fa, dir);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	int e = posix_spawn(&pid, argv[0], &fa, &at, (char *const *)argv, envp);
	close(fds[1]);
	fds[1] = -1;
	if (e != 0) {
		errno = e;
		goto out;
	}
	r = read_output(fds[0], pid, deadline, po);
	while (waitpid(pid, &po->status, 0) < 0 && errno == EINTR)
		; /* (ECHILD when already reaped above: status is kept) */
	kill(-pid, SIGKILL); /* stragglers of the group, if any */
out:
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return r;
}

void kj__rm_job_dir(const char *dir)
{
	int r = kj__rm_rf(dir);
	if (r < 0)
		fprintf(stderr, "kjit worker: cannot remove %s: %s\n", dir, strerror(-r));
}

int kj__make_job_dir(const char *root, const char *family, char *dir, size_t dirlen)
{
	if ((size_t)snprintf(dir, dirlen, "%s/kjit-%s-XXXXXX", root, family) >= dirlen)
		return KJIT_EINVAL;
	return mkdtemp(dir) ? 0 : KJIT_EIO;
}

int kj__job_dir_open(const struct kj__compile_job *job, const char *root, const char *family, char *dir,
		     size_t dirlen, int *made)
{
	*made = 0;
	if (job->dir == NULL) {
		int r = kj__make_job_dir(root, family, dir, dirlen);
		*made = r == 0;
		return r;
	}
	return (size_t)snprintf(dir, dirlen, "%s", job->dir) < dirlen ? 0 : KJIT_EINVAL;
}

int kj__put_file(const char *dir, const char *name, const uint8_t *data, size_t len)
{
	char path[PATH_MAX];
	int r = KJIT_EIO, fd = -1;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return KJIT_EINVAL;
	for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return KJIT_EIO;
		*s = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto out;
	if (kj__write_all(fd, data, len) < 0)
		goto out;
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	return r;
}

char *kj__clean_log(const struct kj__proc_out *po, const char *dir)
{
	char pre[PATH_MAX + 2];
	size_t pl = (size_t)snprintf(pre, sizeof pre, "%s/", dir), w = 0;
	char *s = malloc(po->log.len + 1);

	if (s == NULL || po->log.len == 0) {
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < po->log.len;) {
		if (po->log.len - i >= pl && memcmp(po->log.p + i, pre, pl) == 0) {
			i += pl;
			continue;
		}
		s[w++] = (char)po->log.p[i++];
	}
	/* The removed prefixes shrink the log; the omitted count stays exact. */
	char *l = kj__log_dup_of(s, w, w + (po->total - po->log.len));
	free(s);
	return l;
}

