/* log.c: kjitd's log.
 *
 * One line per event, flushed at once so a crash loses nothing already
 * said.  Where it goes (d->top->log_mode): the --log file, or stderr, each line
 * with a timestamp and our pid; or the journal without either (journald adds
 * both): by sd_journal_send() when a detached kjitd left a terminal on a
 * machine with a journal, or as "<N>line" on a stderr that is a journal
 * stream ($JOURNAL_STREAM names it: systemd's StandardError=journal, whose
 * SyslogLevelPrefix= reads the priority).  A detached kjitd without a
 * journal logs to <socket folder>/kjitd.log, the file a client's autostart
 * uses, never to the terminal it left.
 *
 * Priorities: a message may start with sd-daemon.h's SD_ERR, SD_WARNING...
 * marker; one without is a warning when its first words say a failure
 * ("cannot", "could not", "failed", "refused", ...), else info, so the
 * call sites all over the daemon need no edit.  --log-level drops what is
 * less urgent.  Every byte below 0x20, 0x7f and the backslash is escaped
 * (\n, \t, \\, \xNN), so a request field (a source name, a target) cannot
 * forge a line of its own.
 *
 * The --log file is created 0600, or 0640 with group kjit under --system
 * (the group of the system socket, whose members may read what the daemon
 * did), whatever the umask, and an existing one is brought to that mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "daemon-int.h" /* and daemon.h */
#include "util.h"

enum { KJ_LOG_STDERR = 0, KJ_LOG_FILE, KJ_LOG_STREAM, KJ_LOG_JOURNAL };

/* The words that make an unmarked message a warning. */
static const char *const warn_words[] = {
	"cannot ", "could not ", "failed", "refused", "refusing", "killed", "crashed", "timed out", "out of memory",
	"error", "invalid", "corrupt", "lost", "giving up",
};

static int guess_priority(const char *msg)
{
	size_t n = strlen(msg) < 100 ? strlen(msg) : 100; /* the first words (past a key) only */
	for (size_t i = 0; i < KJ_ARRAY_SIZE(warn_words); i++) {
		const char *p = strstr(msg, warn_words[i]);
		if (p && (size_t)(p - msg) < n)
			return LOG_WARNING;
	}
	return LOG_INFO;
}

/* src escaped into dst (always terminated; cut at the end of dst). */
static void escape(char *dst, size_t cap, const char *src)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)src; *p && o + 5 < cap; p++) {
		if (*p == '\n')
			o += (size_t)snprintf(dst + o, cap - o, "\\n");
		else if (*p == '\t')
			o += (size_t)snprintf(dst + o, cap - o, "\\t");
		else if (*p == '\\')
			o += (size_t)snprintf(dst + o, cap - o, "\\\\");
		else if (*p < 0x20 || *p == 0x7f)
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", *p);
		else
			dst[o++] = (char)*p;
	}
	dst[o] = '\0';
}

void kj__log(struct kj__daemon *d, const char *fmt, ...)
{
	char raw[4096], msg[4096 * 2], ts[32];
	va_list ap;
	int prio;

	if (d->top == NULL || d->top->log == NULL) /* no log (yet), or a unit test's bare context */
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	const char *body = raw;
	if (raw[0] == '<' && raw[1] >= '0' && raw[1] <= '7' && raw[2] == '>') {
		prio = raw[1] - '0';
		body = raw + 3;
	} else {
		prio = guess_priority(raw);
	}
	if (prio > (d->cfg.log_level ? d->cfg.log_level : LOG_INFO))
		return;
	escape(msg, sizeof msg, body);
	if (d->top->log_mode == KJ_LOG_JOURNAL &&
	    sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", prio, "SYSLOG_IDENTIFIER=kjitd", NULL) == 0)
		return;
	if (d->top->log_mode == KJ_LOG_STREAM) {
		fprintf(d->top->log, "<%d>%s\n", prio, msg);
	} else {
		time_t now = time(NULL);
		struct tm tm;
		strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
		fprintf(d->top->log, "%s kjitd[%d]: %s%s\n", ts, (int)getpid(), prio <= LOG_ERR ? "error: " :
			prio == LOG_WARNING ? "warning: " : "", msg);
	}
	fflush(d->top->log);
}

/* Opens path for appending, 0600, or 0640 for the first --admin-gid group
 * (the administrators, who may read every user's entries anyway), whatever
 * the umask; an existing file of ours is brought to that mode.  Not the
 * socket's group: its members are the users, and the log names their
 * sources, uids and errors.  The descriptor, or -errno. */
static int open_log_file(struct kj__daemon *d, const char *path)
{
	mode_t mode = 0600;
	gid_t gid = (gid_t)-1;

	if (d->cfg.n_admin_gid > 0) {
		mode = 0640;
		gid = d->cfg.admin_gid[0];
	}
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
		if (gid != (gid_t)-1 && st.st_gid != gid && fchown(fd, (uid_t)-1, gid) < 0)
			mode = 0600; /* not our group to give: nobody else reads it */
		if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
	}
	return fd;
}

/* Is stderr the journal stream systemd gave us ($JOURNAL_STREAM=dev:ino)? */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int kj__log_open(struct kj__daemon *d)
{
	if (d->cfg.log_path == NULL) {
		d->top->log = stderr;
		d->top->log_mode = stderr_is_journal() ? KJ_LOG_STREAM : KJ_LOG_STDERR;
		return 0;
	}
	int fd = open_log_file(d, d->cfg.log_path);
	if (fd < 0 || (d->top->log = fdopen(fd, "a")) == NULL) {
		fprintf(stderr, "kjitd: cannot open log %s: %s\n", d->cfg.log_path, strerror(fd < 0 ? -fd : errno));
		if (fd >= 0)
			close(fd);
		d->top->log = NULL;
		return 1;
	}
	d->top->log_mode = KJ_LOG_FILE;
	return 0;
}

int kj__log_reopen(struct kj__daemon *d)
{
	if (d->top->log_mode != KJ_LOG_FILE || d->cfg.log_path == NULL)
		return 0;
	int fd = open_log_file(d, d->cfg.log_path);
	if (fd < 0) {
		kj__log(d, "cannot reopen the log %s: %s (still writing to the old file)", d->cfg.log_path, strerror(-fd));
		return fd;
	}
	fflush(d->top->log);
	/* The same FILE (the cache and the workers' stderr hold its descriptor's
	 * number) now writes to the new file. */
	int r = dup3(fd, fileno(d->top->log), O_CLOEXEC) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		kj__log(d, "cannot reopen the log %s: %s", d->cfg.log_path, strerror(-r));
	else
		kj__log(d, "log reopened");
	return r;
}

void kj__log_detached(struct kj__daemon *d)
{
	int fd = -1;

	if (d->top->log_mode == KJ_LOG_FILE) {
		fd = dup(fileno(d->top->log)); /* stray writes to stderr go to the log too */
	} else if (isatty(2)) {
		/* Left a terminal: the journal if this machine has one, else
		 * the file beside the socket that autostart uses. */
		if (access("/run/systemd/journal/socket", W_OK) == 0 &&
		    (fd = sd_journal_stream_fd("kjitd", LOG_INFO, 1)) >= 0) {
			d->top->log_mode = KJ_LOG_JOURNAL;
			kj__log(d, "logging to the journal");
		} else {
			char *dir = kj__strdup(d->cfg.socket_path), *slash = dir ? strrchr(dir, '/') : NULL;
			char *path = slash ? (*slash = '\0', kj__asprintf("%s/kjitd.log", *dir ? dir : "/")) : NULL;
			fd = path ? open_log_file(d, path) : -ENOMEM;
			if (fd >= 0)
				fprintf(stderr, "kjitd: serving; the log is %s\n", path);
			free(path);
			free(dir);
		}
	}
	if (fd >= 0) {
		fflush(stderr);
		if (dup2(fd, 2) < 0)
			kj__log(d, "cannot move stderr off the terminal: %s", strerror(errno));
		close(fd);
	}
}

int kj__log_fd(const struct kj__daemon *d)
{
	return d->top && d->top->log ? fileno(d->top->log) : 2;
}
