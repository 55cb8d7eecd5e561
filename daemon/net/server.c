/* server.c: kjitd's Unix socket: listening (or taking systemd's socket),
 * accepting clients that the allow-list admits, and dispatching each
 * request to its handler, all on the loop thread.  Connections themselves
 * (reading, replies, back-pressure, reference counts) are conn.c's; the
 * handlers are get.c and admin.c.  Nothing calls back into this file but
 * main.c (start, stop, tick) and the STOP request's timer.
 *
 * Admission, in order: the allow-list (uid, primary or supplementary gid),
 * then the connection caps (quota.c); a refused client is sent one error
 * reply with id 0 (libkjit shows its text) and closed.  The tick, on the
 * flush timer, ends the daemon when its socket file was removed or replaced
 * (a client would otherwise start a second daemon beside an unreachable
 * one) or when --idle-timeout has passed with no client and no work.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "net-int.h"
#include "kj_types.h"
#include "util.h"

int kj__net_init(struct kj__daemon *d)
{
	if ((d->net = calloc(1, sizeof *d->net)) == NULL)
		return KJIT_ENOMEM;
	return 0;
}

void kj__net_free(struct kj__daemon *d)
{
	if (d->net == NULL)
		return;
	kj__uploads_free(d);
	kj__hits_free(d->net->hits);
	free(d->net->quota);
	free(d->net);
	d->net = NULL;
}

static void on_stop_timer(uv_handle_t *h)
{
	free(h);
}

static void stop_soon(uv_timer_t *t)
{
	struct kj__daemon *d = t->data;
	uv_close((uv_handle_t *)t, on_stop_timer);
	kj__server_stop(d);
}

static void dispatch(struct kj__daemon *d, struct kj__conn *c, const struct kj__frame_hdr *h, const uint8_t *body)
{
	struct kj__msg m = { 0 };
	int r;

	/* GET's body is decoded by get.c, and only when the memo misses: the
	 * hit path needs nothing but the raw bytes. */
	if (h->type == KJ_MSG_GET)
		r = kj__handle_get(d, c, h->id, body, h->len);
	else
		r = kj__msg_decode(body, h->len, &m);
	if (r < 0) {
		kj__conn_error(c, h->id, r, "malformed request body (%s); closing the connection",
			       kjit_strerror(r));
		kj__conn_close(c);
		return;
	}
	if (h->type != KJ_MSG_ATTACH) /* mapping the hit table is set-up, not a request (`kjit stats` counts none) */
		d->stats[KJ_STAT_REQUESTS]++;
	switch (h->type) {
	case KJ_MSG_PING:
		kj__conn_reply_code(c, h->id, 0);
		break;
	case KJ_MSG_GET:
		break; /* answered above */
	case KJ_MSG_ATTACH:
		kj__hits_attach(d, c, h->id);
		break;
	case KJ_MSG_ADMIN:
		kj__handle_admin(d, c, h->id, &m);
		break;
	case KJ_MSG_STOP: {
		if (kj__admin_refused(d, c, h->id, "stop")) /* access.c: owner, root, --admin-gid */
			break;
		kj__log(d, "stop requested by uid %u pid %d", (unsigned)kj__conn_uid(c), (int)kj__conn_pid(c));
		kj__conn_reply_code(c, h->id, 0);
		/* Let the reply go out before the loop winds down. */
		uv_timer_t *t = malloc(sizeof *t);
		if (t == NULL || uv_timer_init(d->loop, t) < 0) {
			free(t);
			kj__server_stop(d);
			break;
		}
		t->data = d;
		uv_timer_start(t, stop_soon, 10, 0);
		break;
	}
	default:
		kj__conn_error(c, h->id, KJIT_EPROTO, "unknown message type %u; closing the connection",
			       (unsigned)h->type);
		kj__conn_close(c);
		break;
	}
	kj__msg_free(&m);
}

/* A peer in a child user namespace (access.c) is admitted when its own uid
 * is, or when its namespace's owner is: by uid, or by a group that both
 * the peer kept and the owner's account has (a subordinate uid keeps its
 * owner's groups: it must not be admitted on them alone). */
static int peer_allowed(struct kj__daemon *d, const struct kj__conn *c)
{
	const struct kj__config *cfg = &d->cfg;
	int nested;
	uid_t uid = kj__conn_peer_uid(c, &nested), owner = kj__conn_uid(c);

	if (cfg->n_allow_uid == 0 && cfg->n_allow_gid == 0)
		return 1;
	if (uid == 0 || uid == getuid() || (nested && (owner == 0 || owner == getuid())))
		return 1;
	for (size_t i = 0; i < cfg->n_allow_uid; i++)
		if (cfg->allow_uid[i] == uid || (nested && cfg->allow_uid[i] == owner))
			return 1;
	for (size_t i = 0; i < cfg->n_allow_gid; i++)
		if (kj__conn_in_group(c, cfg->allow_gid[i]) && (!nested || kj__uid_in_group(owner, cfg->allow_gid[i])))
			return 1;
	return 0;
}

/* Logs a refused connection, at most one line a second (a flood would
 * otherwise fill the log): the rest are counted into the next line. */
static void log_refusal(struct kj__daemon *d, const struct kj__conn *c, const char *why)
{
	static const uint64_t every_us = 1000000;
	uint64_t now = kj__now_us();

	d->net->refused_conns++;
	if (now - d->net->refused_log_us < every_us)
		return;
	kj__log(d, "refused uid %u pid %d: %s (%llu refused since the last such line)", (unsigned)kj__conn_uid(c),
		(int)kj__conn_pid(c), why, (unsigned long long)d->net->refused_conns);
	d->net->refused_conns = 0;
	d->net->refused_log_us = now;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct kj__daemon *d = server->data;
	struct kj__conn *c;

	if (status < 0) {
		kj__log(d, "accept: %s", uv_strerror(status));
		return;
	}
	char err[512];

	if (kj__conn_accept(d, server, dispatch, &c) < 0)
		return;
	d->stats[KJ_STAT_CONNECTIONS]++;
	d->last_active_us = kj__now_us();
	if (!peer_allowed(d, c)) {
		kj__log(d, "refused uid %u gid %u pid %d: not in the allow-list", (unsigned)kj__conn_uid(c),
			(unsigned)kj__conn_gid(c), (int)kj__conn_pid(c));
		kj__conn_error(c, 0, KJIT_EDENIED, "access denied: uid %u is not allowed by kjitd (--allow-uid/--allow-gid)",
			       (unsigned)kj__conn_uid(c));
		kj__conn_close(c);
		return;
	}
	if (kj__conn_count(c, err, sizeof err) < 0) {
		log_refusal(d, c, err);
		kj__conn_error(c, 0, KJIT_EBUSY, "%s", err);
		kj__conn_close(c);
		return;
	}
	if (d->stopping) {
		kj__conn_error(c, 0, KJIT_ESHUTDOWN, "kjitd is shutting down; retry in a moment");
		kj__conn_close(c);
		return;
	}
	kj__conn_start(c);
}

/* Uses a listening socket passed by systemd (LISTEN_FDS), if any: 1 if so. */
static int take_systemd_socket(struct kj__daemon *d)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

	if (pid == NULL || fds == NULL || atoi(pid) != (int)getpid() || atoi(fds) < 1)
		return 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0 || uv_pipe_open(&d->net->listener, 3) < 0)
		return -1;
	d->net->listener_from_systemd = 1;
	kj__log(d, "listening on the socket passed by systemd");
	return 1;
}

/* Makes the socket's directory: 0700 and ours for a per-user socket. */
static int prepare_socket_dir(struct kj__daemon *d)
{
	char *dir = kj__strdup(d->cfg.socket_path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	struct stat st;
	int r = 0;

	if (dir == NULL)
		return KJIT_ENOMEM;
	if (slash == NULL || slash == dir)
		goto out;
	*slash = '\0';
	if (stat(dir, &st) < 0) {
		r = kj__mkdir_p(dir, d->cfg.system_mode ? 0755 : 0700);
		if (r < 0) {
			kj__log(d, "cannot create %s: %s", dir, strerror(-r));
			r = KJIT_EIO;
		}
		goto out;
	}
	if (!d->cfg.system_mode && !(st.st_mode & S_ISVTX) && (st.st_mode & 022) != 0 &&
	    st.st_uid != getuid()) {
		kj__log(d, "refusing socket directory %s: writable by others and not ours", dir);
		r = KJIT_EDENIED;
	}
out:
	free(dir);
	return r;
}

/* The cache directory of kjitd pid, from the index it holds open, into
 * out ("" if it cannot be read: another user's daemon, or no /proc). */
static void peer_cache_dir(pid_t pid, char *out, size_t outlen)
{
	char path[64], target[4096];
	static const char idx[] = "/index.sqlite";

	out[0] = '\0';
	for (int fd = 0; fd < KJ_PROBE_FDS; fd++) {
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n < 0) {
			if (errno == EACCES || errno == EPERM)
				return;
			continue;
		}
		target[n] = '\0';
		size_t k = sizeof idx - 1;
		if ((size_t)n > k && strcmp(target + n - k, idx) == 0) {
			target[n - k] = '\0';
			snprintf(out, outlen, "%s", target);
			return;
		}
	}
}

int kj__server_probe(struct kj__daemon *d, char *why, size_t whylen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof cred;
	char dir[4096], *mine = NULL;
	int fd, r = 0;

	if (strlen(d->cfg.socket_path) >= sizeof sa.sun_path) {
		snprintf(why, whylen, "socket path too long: %s", d->cfg.socket_path);
		return KJIT_EINVAL;
	}
	strcpy(sa.sun_path, d->cfg.socket_path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 0; /* bind will say what is wrong */
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		goto out;
	r = KJIT_EBUSY;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0) {
		snprintf(why, whylen, "the socket %s is in use by another kjitd; stop it or pass another --socket",
			 d->cfg.socket_path);
		goto out;
	}
	peer_cache_dir(cred.pid, dir, sizeof dir);
	mine = realpath(d->cfg.cache_dir, NULL);
	if (dir[0] && mine && strcmp(dir, mine) == 0)
		snprintf(why, whylen, "another kjitd (pid %d) already serves %s on %s; `kjit ping` reaches it",
			 (int)cred.pid, dir, d->cfg.socket_path);
	else if (dir[0])
		snprintf(why, whylen, "the socket %s is in use by another kjitd (pid %d, cache %s); stop it or pass "
			 "another --socket", d->cfg.socket_path, (int)cred.pid, dir);
	else
		snprintf(why, whylen, "the socket %s is in use by another kjitd (pid %d); stop it or pass another "
			 "--socket", d->cfg.socket_path, (int)cred.pid);
out:
	free(mine);
	close(fd);
	return r;
}

/* --socket-group: the socket becomes GROUP's, mode 0660, so its members
 * connect (with --allow-gid, they are also let in).  0 or KJIT_EIO. */
static int socket_group(struct kj__daemon *d)
{
	if (d->cfg.socket_group == NULL)
		return 0;
	if (chown(d->cfg.socket_path, (uid_t)-1, d->cfg.socket_gid) < 0 || chmod(d->cfg.socket_path, 0660) < 0) {
		kj__log(d, "cannot give %s to group %s (--socket-group): %s", d->cfg.socket_path, d->cfg.socket_group,
			strerror(errno));
		return KJIT_EIO;
	}
	return 0;
}

/* The path of the socket record in the cache folder, malloc'd. */
static char *record_path(struct kj__daemon *d)
{
	return kj__asprintf("%s/%s", d->cfg.cache_dir, KJ_SOCKET_RECORD);
}

/* Writes the socket record (tmp file, then rename): where this daemon
 * serves its cache, for a client of the same user under another runtime
 * folder (client/discover.c) and a second kjitd on this cache
 * (kj__server_recorded).  A failure is logged, nothing more. */
static void record_socket(struct kj__daemon *d)
{
	char *path = record_path(d);
	char *tmp = path ? kj__asprintf("%s.tmp", path) : NULL;
	int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, d->cfg.system_mode ? 0640 : 0600)
		     : -1;
	size_t n = strlen(d->cfg.socket_path);

	if (fd < 0 || write(fd, d->cfg.socket_path, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || close(fd) < 0 ||
	    rename(tmp, path) < 0) {
		kj__log(d, "cannot record the socket in %s: %s", path ? path : d->cfg.cache_dir, strerror(errno));
		if (tmp)
			unlink(tmp);
	}
	free(tmp);
	free(path);
}

/* The path recorded in the cache folder into out ("" when none). */
static void read_record(struct kj__daemon *d, char *out, size_t outlen)
{
	char *path = record_path(d);
	int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1;
	ssize_t n = fd >= 0 ? read(fd, out, outlen - 1) : -1;

	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	if (fd >= 0)
		close(fd);
	free(path);
}

/* Removes the socket record when it names our socket (another daemon may
 * have the cache now). */
static void unrecord_socket(struct kj__daemon *d)
{
	char rec[PATH_MAX];
	char *path = record_path(d);

	read_record(d, rec, sizeof rec);
	if (path && strcmp(rec, d->cfg.socket_path) == 0 && unlink(path) < 0 && errno != ENOENT)
		kj__log(d, "cannot remove %s: %s", path, strerror(errno));
	free(path);
}

int kj__server_recorded(struct kj__daemon *d, char *why, size_t whylen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof cred;
	char rec[PATH_MAX];
	int r = 0;

	read_record(d, rec, sizeof rec);
	if (rec[0] != '/' || strlen(rec) >= sizeof sa.sun_path || strcmp(rec, d->cfg.socket_path) == 0)
		return 0;
	strcpy(sa.sun_path, rec);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		r = KJIT_EBUSY;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			cred.pid = 0;
		snprintf(why, whylen, "another kjitd (pid %d) already serves %s, on %s; use it (`KJIT_SOCKET=%s kjit ping`; "
			 "clients find it by themselves), or stop it", (int)cred.pid, d->cfg.cache_dir, rec, rec);
	}
	close(fd);
	return r;
}

int kj__server_start(struct kj__daemon *d)
{
	int r = uv_pipe_init(d->loop, &d->net->listener, 0);

	if (r < 0)
		return KJIT_EINTERNAL;
	d->net->listener.data = d;
	r = take_systemd_socket(d);
	if (r < 0) {
		kj__log(d, "cannot use the socket passed by systemd: %s", strerror(errno));
		return KJIT_EIO;
	}
	if (r == 0) {
		if ((r = prepare_socket_dir(d)) < 0)
			return r;
		/* We hold the cache lock, so a socket left here is stale unless
		 * another daemon with another cache answers on it. */
		char why[1024];
		if ((r = kj__server_probe(d, why, sizeof why)) < 0) {
			kj__log(d, "%s", why);
			return r;
		}
		if (unlink(d->cfg.socket_path) < 0 && errno != ENOENT) {
			kj__log(d, "cannot remove stale socket %s: %s", d->cfg.socket_path, strerror(errno));
			return KJIT_EIO;
		}
		mode_t old = umask(d->cfg.system_mode ? 0007 : 0077);
		r = uv_pipe_bind(&d->net->listener, d->cfg.socket_path);
		umask(old);
		if (r < 0) {
			kj__log(d, "cannot bind %s: %s", d->cfg.socket_path, uv_strerror(r));
			return KJIT_EIO;
		}
		if ((r = socket_group(d)) < 0)
			return r;
		struct stat st;
		if (stat(d->cfg.socket_path, &st) == 0) {
			d->net->sock_dev = st.st_dev;
			d->net->sock_ino = st.st_ino;
		}
	}
	r = uv_listen((uv_stream_t *)&d->net->listener, 128, on_connection);
	if (r < 0) {
		kj__log(d, "cannot listen on %s: %s", d->cfg.socket_path, uv_strerror(r));
		return KJIT_EIO;
	}
	if (!d->net->listener_from_systemd)
		record_socket(d);
	return 0;
}

static void on_walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	(void)h;
}

void kj__server_stop(struct kj__daemon *d)
{
	if (d->stopping)
		return;
	d->stopping = 1;
	kj__log(d, "shutting down");
	sd_notify(0, "STOPPING=1");
	if (!uv_is_closing((uv_handle_t *)&d->net->listener)) {
		uv_close((uv_handle_t *)&d->net->listener, NULL);
		/* systemd owns a socket it passed us and keeps listening on it;
		 * a path that now names another socket is another daemon's. */
		struct stat st;
		if (!d->net->listener_from_systemd && !d->net->sock_lost && stat(d->cfg.socket_path, &st) == 0 &&
		    st.st_dev == d->net->sock_dev && st.st_ino == d->net->sock_ino)
			unlink(d->cfg.socket_path);
		if (!d->net->listener_from_systemd && d->net->sock_ino != 0)
			unrecord_socket(d);
	}
	kj__offwork_stop(d->work); /* work queued off the loop ends now; work on a thread finishes (the loop waits) */
	kj__fleet_stop(d); /* before the pools: compiles failing now must not touch the remote */
	kj__miss_stop(d);
	kj__hits_stop(d);
	kj__conn_close_all(d);
	kj__top_stop(d);
	uv_walk(d->loop, on_walk_close, NULL);
}

/* Is the socket file still the one we bound?  0 if so, else why not. */
static const char *socket_gone(struct kj__daemon *d)
{
	struct stat st;

	if (d->net->listener_from_systemd || d->net->sock_ino == 0)
		return NULL;
	if (stat(d->cfg.socket_path, &st) < 0)
		return errno == ENOENT ? "was removed" : "cannot be checked";
	if (st.st_dev != d->net->sock_dev || st.st_ino != d->net->sock_ino)
		return "was replaced by another file";
	return NULL;
}

static int has_work(struct kj__daemon *d)
{
	return d->net->conns != NULL || kj__miss_busy(d);
}

struct pid_probe {
	pid_t pid;
	int found;
};

static void find_process(uv_handle_t *h, void *arg)
{
	struct pid_probe *q = arg;

	/* A process handle not yet closed: libuv will reap it and call its
	 * exit callback (a closed one is off libuv's list: ours to reap). */
	if (h->type == UV_PROCESS && !uv_is_closing(h) && ((uv_process_t *)h)->pid == q->pid)
		q->found = 1;
}

void kj__reap_orphans(struct kj__daemon *d, int wait_ms)
{
	uint64_t until = kj__now_us() + (uint64_t)wait_ms * 1000;
	siginfo_t si;

	for (;;) {
		memset(&si, 0, sizeof si);
		/* Look without reaping: a worker's exit is libuv's to collect. */
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
			return; /* ECHILD: none left */
		if (si.si_pid == 0) {
			if (kj__now_us() >= until)
				return;
			struct timespec ts = { 0, 10 * 1000000L };
			nanosleep(&ts, NULL);
			continue;
		}
		struct pid_probe q = { si.si_pid, 0 };
		if (d->loop && wait_ms == 0)
			uv_walk(d->loop, find_process, &q);
		if (q.found)
			return; /* a worker: libuv's (the next tick looks again) */
		waitpid(si.si_pid, NULL, WNOHANG);
	}
}

void kj__server_tick(struct kj__daemon *d)
{
	const char *why;

	kj__reap_orphans(d, 0);
	if (d->stopping)
		return;
	kj__quota_tick(d);
	if ((why = socket_gone(d)) != NULL) {
		/* Nobody can reach us any more, and the next client starts a new
		 * daemon, which waits for our cache lock: leave at once. */
		kj__log(d, "the socket %s %s: no client can reach this kjitd; exiting", d->cfg.socket_path, why);
		d->net->sock_lost = 1;
		kj__server_stop(d);
		return;
	}
	if (d->cfg.idle_timeout_ms == 0 || has_work(d)) {
		if (has_work(d))
			d->last_active_us = kj__now_us();
		return;
	}
	if (kj__now_us() - d->last_active_us >= d->cfg.idle_timeout_ms * 1000) {
		kj__log(d, "no client for %llu s (--idle-timeout); exiting",
			(unsigned long long)(d->cfg.idle_timeout_ms / 1000));
		kj__server_stop(d);
	}
}
