/* connect.c: connecting a client to kjitd, and starting a per-user kjitd
 * when none answers (as sccache does).
 *
 * Autostart is race-free: the clients that find no daemon serialise on an
 * flock of <sockdir>/autostart.lock; the first one in starts kjitd and
 * waits until it answers, the others then find it up.  It never happens for
 * the system socket (KJ_SYSTEM_SOCKET: systemd's job), with
 * KJIT_NO_AUTOSTART=1 or opt->no_autostart, or when the socket's directory
 * is not a private directory of this user (a lock file or a log in someone
 * else's directory could be a trap).
 *
 * The daemon is started detached: double fork, setsid, stdin and stdout on
 * /dev/null, stderr appended to <sockdir>/kjitd.log, no inherited file
 * descriptors, default signal dispositions and an empty signal mask.  Only
 * async-signal-safe calls run between fork and exec, so this is safe in a
 * multi-threaded process.  Every failure leaves one line in c->err that says
 * what happened and what to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"
#include "util.h"

#ifndef KJIT_PREFIX
#define KJIT_PREFIX "/usr/local"
#endif

/* How many descriptors to mark close-on-exec when close_range is missing. */
#define FD_SWEEP_MAX 65536
/* How much of the end of kjitd.log to read for the line quoted in an error. */
#define LOG_TAIL_MAX 4096

/* Connects a new socket to path.  0 with *fd_out, or -errno. */
static int try_connect(const char *path, int *fd_out)
{
	struct sockaddr_un sa;
	size_t n = strlen(path);

	if (n >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, n);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
			*fd_out = fd;
			return 0;
		}
		int e = errno;
		close(fd);
		if (e != EINTR)
			return -e;
	}
}

static int is_down(int r)
{
	return r == -ENOENT || r == -ECONNREFUSED;
}

static int autostart_disabled_by_env(void)
{
	const char *v = getenv("KJIT_NO_AUTOSTART");
	return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

/* The directory part of path, malloc'd ("." for a bare name). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		return kj__strdup(".");
	if (slash == path)
		return kj__strdup("/");
	return kj__strndup(path, (size_t)(slash - path));
}

/* Creates dir (0700) and checks that it is ours and private. */
static int sockdir_prepare(kjit_client *c, const char *dir)
{
	struct stat st;
	int r = kj__mkdir_p(dir, 0700);

	if (r < 0) {
		c->sys_errno = -r;
		return kj__client_fail(c, KJIT_ECONNECT,
			"kjitd is not running at %s and its directory cannot be created: %s; "
			"set KJIT_SOCKET to a path in a directory you own", c->socket_path, strerror(-r));
	}
	if (lstat(dir, &st) < 0) {
		c->sys_errno = errno;
		return kj__client_fail(c, KJIT_ECONNECT, "cannot inspect %s: %s; set KJIT_SOCKET",
				       dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		c->sys_errno = EPERM;
		return kj__client_fail(c, KJIT_ECONNECT,
			"kjitd is not running at %s and was not started: %s is not a private directory "
			"of yours (owner %u, mode %03o); remove it, or set KJIT_SOCKET to a socket in "
			"a directory only you can write", c->socket_path, dir, (unsigned)st.st_uid,
			(unsigned)(st.st_mode & 07777));
	}
	return 0;
}

static int executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The kjitd to start, malloc'd: $KJIT_KJITD, kjitd beside this executable,
 * KJIT_PREFIX/bin/kjitd, kjitd on PATH.  NULL when none is found (or on
 * ENOMEM, which the caller cannot tell apart and need not). */
static char *find_kjitd(void)
{
	char exe[PATH_MAX];
	const char *v = getenv("KJIT_KJITD");

	if (v != NULL && *v != '\0')
		return kj__strdup(v);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *dir = dir_of(exe);
		char *p = dir ? kj__asprintf("%s/kjitd", dir) : NULL;
		free(dir);
		if (p != NULL && executable(p))
			return p;
		free(p);
	}
	if (executable(KJIT_PREFIX "/bin/kjitd"))
		return kj__strdup(KJIT_PREFIX "/bin/kjitd");
	const char *path = getenv("PATH");
	while (path != NULL && *path != '\0') {
		size_t len = strcspn(path, ":");
		char *p = kj__asprintf("%.*s/kjitd", (int)len, len ? path : ".");
		if (p != NULL && executable(p))
			return p;
		free(p);
		path += len;
		if (*path == ':')
			path++;
	}
	return NULL;
}

/* Marks every descriptor from 3 up close-on-exec (async-signal-safe). */
static void cloexec_from_3(void)
{
#if defined(SYS_close_range) && defined(CLOSE_RANGE_CLOEXEC)
	if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
		return;
#endif
	struct rlimit rl;
	int max = FD_SWEEP_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)max)
		max = (int)rl.rlim_cur;
	for (int fd = 3; fd < max; fd++)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* What the children tell the parent through the status pipe. */
struct spawn_note {
	int32_t what; /* 'E': exec failed, 'F': second fork failed */
	int32_t err;  /* errno */
};

static void note_write(int fd, int what, int err)
{
	struct spawn_note n = { what, err };
	ssize_t k = write(fd, &n, sizeof n);
	(void)k;
}

/* The grandchild: becomes kjitd.  Never returns. */
static void __attribute__((noreturn)) child_exec(char *const argv[], int nullfd, int logfd, int notefd)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(nullfd, 0) < 0 || dup2(nullfd, 1) < 0 || dup2(logfd, 2) < 0) {
		note_write(notefd, 'E', errno);
		_exit(127);
	}
	cloexec_from_3();
	execv(argv[0], argv);
	note_write(notefd, 'E', errno);
	_exit(127);
}

/* Starts argv[0] detached.  0, or -errno of what failed (exec's errno when
 * the binary could not be run). */
static int spawn_detached(char *const argv[], int nullfd, int logfd)
{
	struct spawn_note note = { 0, 0 };
	int pfd[2], st;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		close(pfd[0]);
		setsid();
		pid_t g = fork();
		if (g < 0)
			note_write(pfd[1], 'F', errno);
		if (g == 0)
			child_exec(argv, nullfd, logfd, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* EOF comes when the grandchild has exec'd (the pipe is close-on-exec)
	 * or died; a note comes first when something failed. */
	struct pollfd p = { .fd = pfd[0], .events = POLLIN };
	int got = 0;
	if (poll(&p, 1, KJ_AUTOSTART_WAIT_MS) > 0) {
		ssize_t k;
		while ((k = read(pfd[0], &note, sizeof note)) < 0 && errno == EINTR)
			;
		got = k == (ssize_t)sizeof note;
	}
	close(pfd[0]);
	return got ? -(note.err ? note.err : EIO) : 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The last non-empty line kjitd wrote to its log after offset off, or "". */
static void log_tail(int logfd, off_t off, char *out, size_t outlen)
{
	char buf[LOG_TAIL_MAX + 1];
	struct stat st;

	out[0] = '\0';
	if (fstat(logfd, &st) < 0 || st.st_size <= off)
		return;
	if (st.st_size - off > LOG_TAIL_MAX)
		off = st.st_size - LOG_TAIL_MAX;
	ssize_t n = pread(logfd, buf, (size_t)(st.st_size - off), off);
	if (n <= 0)
		return;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	char *line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	char *clean = kj__one_line(line);
	if (clean != NULL) {
		snprintf(out, outlen, ": \"%s\"", clean);
		free(clean);
	}
}

/* Starts kjitd for c->socket_path and waits until it answers.  Called
 * with the autostart lock held. */
static int start_and_wait(kjit_client *c, const char *dir)
{
	char tail[KJ_CLIENT_ERR_MAX / 2];
	char *bin = find_kjitd();
	char *log = kj__asprintf("%s/%s", dir, KJ_AUTOSTART_LOG);
	int r, nullfd = -1, logfd = -1;
	struct stat st;

	if (log == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	if (bin == NULL) {
		c->sys_errno = ENOENT;
		r = kj__client_fail(c, KJIT_ECONNECT,
			"could not start kjitd: no kjitd binary found (beside this program, in "
			KJIT_PREFIX "/bin or on PATH); set KJIT_KJITD to its path or start it yourself");
		goto out;
	}
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (nullfd < 0 || logfd < 0 || fstat(logfd, &st) < 0) {
		c->sys_errno = errno;
		r = kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): cannot open %s: %s; "
				    "check that directory", bin, nullfd < 0 ? "/dev/null" : log,
				    strerror(errno));
		goto out;
	}
	/* An autostarted daemon exits after a while without clients, as
	 * sccache's does; the next client starts it again. */
	char idle[16];
	snprintf(idle, sizeof idle, "%d", KJ_IDLE_TIMEOUT_AUTOSTART_S);
	char *argv[] = { bin, (char *)"--socket", c->socket_path, (char *)"--idle-timeout", idle, NULL };
	r = spawn_detached(argv, nullfd, logfd);
	if (r < 0) {
		c->sys_errno = -r;
		r = kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): %s; see %s", bin,
				    strerror(-r), log);
		goto out;
	}
	uint64_t deadline = kj__now_us() + (uint64_t)KJ_AUTOSTART_WAIT_MS * 1000u;
	for (;;) {
		r = try_connect(c->socket_path, &c->fd);
		if (r == 0)
			goto out;
		if (!is_down(r) || kj__now_us() >= deadline)
			break;
		sleep_ms(KJ_AUTOSTART_POLL_MS);
	}
	c->sys_errno = -r;
	log_tail(logfd, st.st_size, tail, sizeof tail);
	r = kj__client_fail(c, KJIT_ECONNECT,
		"could not start kjitd (%s): it did not answer on %s within %d ms%s; see %s", bin,
		c->socket_path, KJ_AUTOSTART_WAIT_MS, tail, log);
out:
	if (nullfd >= 0)
		close(nullfd);
	if (logfd >= 0)
		close(logfd);
	free(bin);
	free(log);
	return r;
}

/* Takes the autostart lock, and starts kjitd unless a racing client
 * already has by the time the lock is ours. */
static int autostart(kjit_client *c)
{
	char *dir = dir_of(c->socket_path);
	char *lock = dir ? kj__asprintf("%s/%s", dir, KJ_AUTOSTART_LOCK) : NULL;
	int r, fd = -1;

	if (lock == NULL) {
		r = kj__client_fail(c, KJIT_ENOMEM, "out of memory");
		goto out;
	}
	r = sockdir_prepare(c, dir);
	if (r < 0)
		goto out;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		c->sys_errno = errno;
		r = kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd: cannot open %s: %s; "
				    "check that directory", lock, strerror(errno));
		goto out;
	}
	while ((r = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		c->sys_errno = errno;
		r = kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd: cannot lock %s: %s",
				    lock, strerror(errno));
		goto out;
	}
	r = try_connect(c->socket_path, &c->fd);
	if (r == 0)
		goto out;
	r = start_and_wait(c, dir);
out:
	if (fd >= 0)
		close(fd); /* releases the lock */
	free(lock);
	free(dir);
	return r;
}

int kj__client_connect(kjit_client *c)
{
	int r = try_connect(c->socket_path, &c->fd);

	c->used = 0;
	if (r == 0)
		return 0;
	c->fd = -1;
	c->sys_errno = -r;
	if (!is_down(r))
		return kj__client_fail(c, KJIT_ECONNECT,
			"cannot connect to kjitd at %s: %s; check KJIT_SOCKET and the socket's permissions",
			c->socket_path, strerror(-r));
	if (strcmp(c->socket_path, KJ_SYSTEM_SOCKET) == 0)
		return kj__client_fail(c, KJIT_ECONNECT,
			"kjitd is not running at %s and was not started (system socket); "
			"run `systemctl start kjitd.socket`",
			c->socket_path);
	if (c->no_autostart || autostart_disabled_by_env())
		return kj__client_fail(c, KJIT_ECONNECT,
			"no kjitd on %s (autostart is off%s); start one with `kjitd --socket %s` "
			"(or any `kjit get`)",
			c->socket_path, c->no_autostart ? "" : ": KJIT_NO_AUTOSTART", c->socket_path);
	return autostart(c);
}
