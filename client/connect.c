/* connect.c: connecting a client to a kjitd it trusts, and starting a
 * per-user kjitd when none answers (as sccache does).
 *
 * Every connect goes through kj__client_connect_trusted: the socket's
 * folder and the listener's uid are checked (trust.c) before a byte is
 * sent.  discover.c picks the socket the first time; this file connects to
 * it, says why it cannot (a permission error names the socket's group and
 * how to join it), and starts a daemon.
 *
 * Autostart is race-free: the clients that find no daemon serialise on an
 * flock of <sockdir>/autostart.lock; the first one in starts kjitd and
 * waits until it answers, the others then find it up.  It never happens for
 * the system socket (systemd's job), with KJIT_NO_AUTOSTART=1 or
 * opt->no_autostart, or when the socket's directory is not a private
 * directory of this user (a lock file or a log in someone else's directory
 * could be a trap: trust.c's folder check, mine only).
 *
 * The daemon is started detached: double fork, setsid, stdin and stdout on
 * /dev/null, stderr appended to <sockdir>/kjitd.log, no inherited file
 * descriptors but a readiness pipe on fd 3 (`--foreground --ready-fd 3`),
 * default signal dispositions and an empty signal mask.  kjitd writes one
 * status byte there (0: it serves) or dies, so a failed start is reported
 * at once with the log's last line (its reason), not after a timeout.
 * Only async-signal-safe calls run between fork and exec, so this is safe
 * in a multi-threaded process.  Every failure leaves one line in c->err
 * that says what happened and what to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
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
/* The descriptor the started kjitd finds its readiness pipe on, and the
 * lowest number the client parks the pipe's end on before the fork (above
 * 0-3, which the child overwrites). */
#define READY_FD 3
#define READY_FD_PARK 10

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

/* Creates dir (0700) and checks that it is ours and private (trust.c's
 * folder check, mine only). */
static int sockdir_prepare(kjit_client *c, const char *dir)
{
	char why[512];
	int r = kj__mkdir_p(dir, 0700);

	if (r < 0) {
		c->sys_errno = -r;
		return kj__client_fail(c, KJIT_ECONNECT,
			"kjitd is not running at %s and its directory cannot be created: %s; "
			"set KJIT_SOCKET to a path in a directory you own", c->socket_path, strerror(-r));
	}
	if ((r = kj__trust_dir(dir, 1, why, sizeof why)) < 0) {
		c->sys_errno = -r;
		return kj__client_fail(c, KJIT_ECONNECT,
			"kjitd is not running at %s and was not started: %s; remove it, or set KJIT_SOCKET "
			"to a socket in a directory only you can write", c->socket_path, why);
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

/* Marks every descriptor from first up close-on-exec (async-signal-safe). */
static void cloexec_from(int first)
{
#if defined(SYS_close_range) && defined(CLOSE_RANGE_CLOEXEC)
	if (syscall(SYS_close_range, (unsigned)first, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
		return;
#endif
	struct rlimit rl;
	int max = FD_SWEEP_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)max)
		max = (int)rl.rlim_cur;
	for (int fd = first; fd < max; fd++)
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

/* The grandchild: becomes kjitd, with the readiness pipe's write end
 * (readyfd, parked above READY_FD) on READY_FD.  Never returns. */
static void __attribute__((noreturn)) child_exec(char *const argv[], int nullfd, int logfd, int readyfd,
						 int notefd)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(nullfd, 0) < 0 || dup2(nullfd, 1) < 0 || dup2(logfd, 2) < 0 || dup2(readyfd, READY_FD) < 0) {
		note_write(notefd, 'E', errno);
		_exit(127);
	}
	cloexec_from(READY_FD + 1);
	execv(argv[0], argv);
	note_write(notefd, 'E', errno);
	_exit(127);
}

/* Starts argv[0] detached, readyfd on its READY_FD.  0, or -errno of what
 * failed (exec's errno when the binary could not be run). */
static int spawn_detached(char *const argv[], int nullfd, int logfd, int readyfd)
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
			child_exec(argv, nullfd, logfd, readyfd, pfd[1]);
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

/* Waits, until KJ_AUTOSTART_WAIT_MS have passed, for the started kjitd's
 * status byte on rfd: 0 when it serves; 1 when it failed (*status: the
 * byte, or -1 when it exited without one); -ETIMEDOUT or -errno. */
static int wait_ready(int rfd, int *status)
{
	uint64_t deadline = kj__now_us() + (uint64_t)KJ_AUTOSTART_WAIT_MS * 1000u;
	unsigned char b;

	for (;;) {
		uint64_t now = kj__now_us();
		if (now >= deadline)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		int n = poll(&p, 1, (int)((deadline - now + 999) / 1000));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		ssize_t k = read(rfd, &b, 1);
		if (k < 0 && errno == EINTR)
			continue;
		*status = k == 1 ? b : -1;
		return k == 1 && b == 0 ? 0 : 1;
	}
}

/* Spawns bin for c->socket_path with a readiness pipe, waits for its
 * word and connects.  0, or KJIT_ECONNECT with c->err set (the daemon's
 * own reason, its log's last line, when it failed). */
static int spawn_and_wait(kjit_client *c, char *bin, const char *log, int nullfd, int logfd, off_t log_off)
{
	char tail[KJ_CLIENT_ERR_MAX / 2], idle[16];
	int pfd[2], park, r, status = -1;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		c->sys_errno = errno;
		return kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd: pipe: %s", strerror(errno));
	}
	park = fcntl(pfd[1], F_DUPFD_CLOEXEC, READY_FD_PARK);
	int e = errno;
	close(pfd[1]);
	if (park < 0) {
		close(pfd[0]);
		c->sys_errno = e;
		return kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd: fcntl: %s", strerror(e));
	}
	/* An autostarted daemon exits after a while without clients, as
	 * sccache's does; the next client starts it again. */
	snprintf(idle, sizeof idle, "%d", KJ_IDLE_TIMEOUT_AUTOSTART_S);
	char *argv[] = { bin, (char *)"--socket", c->socket_path, (char *)"--idle-timeout", idle,
			 (char *)"--foreground", (char *)"--ready-fd", (char *)"3", NULL };
	r = spawn_detached(argv, nullfd, logfd, park);
	close(park);
	if (r < 0) {
		close(pfd[0]);
		c->sys_errno = -r;
		return kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): %s; see %s", bin, strerror(-r), log);
	}
	r = wait_ready(pfd[0], &status);
	close(pfd[0]);
	if (r == 0) {
		r = kj__client_connect_trusted(c, c->socket_path, &c->fd);
		if (r == 0) {
			c->found = KJ_FOUND_STARTED;
			return 0;
		}
		if (r == KJ_UNTRUSTED)
			return KJIT_ECONNECT;
	}
	c->sys_errno = r < 0 ? -r : EIO;
	log_tail(logfd, log_off, tail, sizeof tail);
	if (r == 1 && status > 0)
		return kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): it exited with status %d%s; see %s",
				       bin, status, tail, log);
	if (r == 1)
		return kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): it exited%s; see %s", bin, tail, log);
	if (r == -ETIMEDOUT)
		return kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): it did not answer on %s within %d ms%s; "
				       "see %s", bin, c->socket_path, KJ_AUTOSTART_WAIT_MS, tail, log);
	return kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): it said it serves on %s, but connecting "
			       "failed: %s%s; see %s", bin, c->socket_path, strerror(-r), tail, log);
}

/* Starts kjitd for c->socket_path and waits until it answers.  Called
 * with the autostart lock held. */
static int start_and_wait(kjit_client *c, const char *dir)
{
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
	logfd = open(log, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600); /* read back: log_tail */
	if (nullfd < 0 || logfd < 0 || fstat(logfd, &st) < 0) {
		c->sys_errno = errno;
		r = kj__client_fail(c, KJIT_ECONNECT, "could not start kjitd (%s): cannot open %s: %s; "
				    "check that directory", bin, nullfd < 0 ? "/dev/null" : log,
				    strerror(errno));
		goto out;
	}
	r = spawn_and_wait(c, bin, log, nullfd, logfd, st.st_size);
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
	r = kj__client_connect_trusted(c, c->socket_path, &c->fd);
	if (r == KJ_UNTRUSTED)
		r = KJIT_ECONNECT;
	else if (r < 0)
		r = start_and_wait(c, dir);
out:
	if (fd >= 0)
		close(fd); /* releases the lock */
	free(lock);
	free(dir);
	return r;
}

const char *kj__system_socket_path(void)
{
	const char *v = getenv("KJIT_SYSTEM_SOCKET");
	return v && *v ? v : KJ_SYSTEM_SOCKET;
}

int kj__client_connect_trusted(kjit_client *c, const char *path, int *fd_out)
{
	char why[512];
	char *dir = dir_of(path);
	int fd = -1, r;

	if (dir == NULL)
		return -ENOMEM;
	r = kj__trust_dir(dir, 0, why, sizeof why);
	if (r == -ENOENT || r == -EACCES)
		goto out; /* connect would say the same: no such socket, or not for us */
	if (r < 0)
		goto untrusted;
	if ((r = try_connect(path, &fd)) < 0) {
		r = r == -EPERM ? -EACCES : r; /* KJ_UNTRUSTED is ours alone */
		goto out;
	}
	if (kj__trust_peer(fd, dir, why, sizeof why) < 0) {
		close(fd);
		goto untrusted;
	}
	*fd_out = fd;
	r = 0;
out:
	free(dir);
	return r;
untrusted:
	free(dir);
	c->sys_errno = EPERM;
	kj__client_fail(c, KJIT_ECONNECT, "refusing to talk to kjitd at %s: %s; nothing was sent (remove it if it is "
			"not yours, or set KJIT_SOCKET to a socket in a folder only you or root can write)", path, why);
	return KJ_UNTRUSTED;
}

/* The name of group gid (or its number) into out. */
static void group_name(gid_t gid, char *out, size_t outlen)
{
	struct group g, *res = NULL;
	char buf[4096];

	if (getgrgid_r(gid, &g, buf, sizeof buf, &res) == 0 && res != NULL)
		snprintf(out, outlen, "%s", res->gr_name);
	else
		snprintf(out, outlen, "%u", (unsigned)gid);
}

int kj__client_connect_fail(kjit_client *c, const char *path, int e)
{
	struct passwd pw, *me = NULL;
	char buf[4096], grp[256], user[256];
	struct stat st;

	c->sys_errno = e;
	if (e != EACCES)
		return kj__client_fail(c, KJIT_ECONNECT, "cannot connect to kjitd at %s: %s; check KJIT_SOCKET and the "
				       "socket's permissions", path, strerror(e));
	if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &me) == 0 && me != NULL)
		snprintf(user, sizeof user, "%s", me->pw_name);
	else
		snprintf(user, sizeof user, "%u", (unsigned)geteuid());
	if (stat(path, &st) < 0)
		return kj__client_fail(c, KJIT_ECONNECT, "cannot connect to kjitd at %s: permission denied (its folder is "
				       "closed to you); ask the administrator of that kjitd for access", path);
	group_name(st.st_gid, grp, sizeof grp);
	return kj__client_fail(c, KJIT_ECONNECT, "cannot connect to kjitd at %s: permission denied: the socket is for "
			       "group %s (mode %04o) and this process is not in it; join it with `sudo usermod -aG %s %s`, "
			       "then run `newgrp %s` or log in again", path, grp, (unsigned)(st.st_mode & 07777), grp,
			       user, grp);
}

int kj__client_connect_or_start(kjit_client *c)
{
	int r = kj__client_connect_trusted(c, c->socket_path, &c->fd);

	if (r == 0)
		return 0;
	c->fd = -1;
	if (r == KJ_UNTRUSTED)
		return KJIT_ECONNECT;
	c->sys_errno = -r;
	if (!is_down(r))
		return kj__client_connect_fail(c, c->socket_path, -r);
	if (strcmp(c->socket_path, kj__system_socket_path()) == 0)
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

int kj__client_connect(kjit_client *c)
{
	c->used = 0;
	c->fd = -1;
	return c->discover ? kj__client_discover(c) : kj__client_connect_or_start(c);
}
