/* server.c: kjitd's Unix socket: listening (or taking systemd's socket),
 * accepting clients that the allow-list admits, and dispatching each
 * request to its handler, all on the loop thread.  Connections themselves
 * (reading, replies, back-pressure, reference counts) are conn.c's; the
 * handlers are get.c and admin.c.  Nothing calls back into this file but
 * main.c (start, stop) and the STOP request's timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "kj_types.h"
#include "util.h"

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
	d->stats[KJ_STAT_REQUESTS]++;
	switch (h->type) {
	case KJ_MSG_PING:
		kj__conn_reply_code(c, h->id, 0);
		break;
	case KJ_MSG_GET:
		break; /* answered above */
	case KJ_MSG_ADMIN:
		kj__handle_admin(d, c, h->id, &m);
		break;
	case KJ_MSG_STOP: {
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

static int peer_allowed(struct kj__daemon *d, const struct kj__conn *c)
{
	const struct kj__config *cfg = &d->cfg;
	uid_t uid = kj__conn_uid(c);

	if (cfg->n_allow_uid == 0 && cfg->n_allow_gid == 0)
		return 1;
	if (uid == 0 || uid == getuid())
		return 1;
	for (size_t i = 0; i < cfg->n_allow_uid; i++)
		if (cfg->allow_uid[i] == uid)
			return 1;
	for (size_t i = 0; i < cfg->n_allow_gid; i++)
		if (cfg->allow_gid[i] == kj__conn_gid(c))
			return 1;
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct kj__daemon *d = server->data;
	struct kj__conn *c;

	if (status < 0) {
		kj__log(d, "accept: %s", uv_strerror(status));
		return;
	}
	if (kj__conn_accept(d, server, dispatch, &c) < 0)
		return;
	d->stats[KJ_STAT_CONNECTIONS]++;
	if (!peer_allowed(d, c)) {
		kj__log(d, "refused uid %u gid %u pid %d: not in the allow-list", (unsigned)kj__conn_uid(c),
			(unsigned)kj__conn_gid(c), (int)kj__conn_pid(c));
		kj__conn_error(c, 0, KJIT_EDENIED, "kjitd does not serve uid %u; ask its operator to add you to the allow-list",
			       (unsigned)kj__conn_uid(c));
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
	if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0 || uv_pipe_open(&d->listener, 3) < 0)
		return -1;
	d->listener_from_systemd = 1;
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

int kj__server_start(struct kj__daemon *d)
{
	int r = uv_pipe_init(d->loop, &d->listener, 0);

	if (r < 0)
		return KJIT_EINTERNAL;
	d->listener.data = d;
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
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		if (strlen(d->cfg.socket_path) >= sizeof sa.sun_path) {
			kj__log(d, "socket path too long: %s", d->cfg.socket_path);
			if (probe >= 0)
				close(probe);
			return KJIT_EINVAL;
		}
		strcpy(sa.sun_path, d->cfg.socket_path);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
			close(probe);
			kj__log(d, "another kjitd already answers on %s", d->cfg.socket_path);
			return KJIT_EBUSY;
		}
		if (probe >= 0)
			close(probe);
		if (unlink(d->cfg.socket_path) < 0 && errno != ENOENT) {
			kj__log(d, "cannot remove stale socket %s: %s", d->cfg.socket_path, strerror(errno));
			return KJIT_EIO;
		}
		mode_t old = umask(d->cfg.system_mode ? 0007 : 0077);
		r = uv_pipe_bind(&d->listener, d->cfg.socket_path);
		umask(old);
		if (r < 0) {
			kj__log(d, "cannot bind %s: %s", d->cfg.socket_path, uv_strerror(r));
			return KJIT_EIO;
		}
	}
	r = uv_listen((uv_stream_t *)&d->listener, 128, on_connection);
	if (r < 0) {
		kj__log(d, "cannot listen on %s: %s", d->cfg.socket_path, uv_strerror(r));
		return KJIT_EIO;
	}
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
	if (!uv_is_closing((uv_handle_t *)&d->listener)) {
		uv_close((uv_handle_t *)&d->listener, NULL);
		/* systemd owns a socket it passed us and keeps listening on it. */
		if (!d->listener_from_systemd)
			unlink(d->cfg.socket_path);
	}
	kj__fleet_stop(d); /* before the pools: compiles failing now must not touch the remote */
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->pools); i++) {
		if (d->pools[i])
			kj__pool_shutdown(d->pools[i]);
		if (d->alt_pools[i])
			kj__pool_shutdown(d->alt_pools[i]);
	}
	kj__conn_close_all(d);
	uv_timer_stop(&d->flush_timer);
	uv_close((uv_handle_t *)&d->flush_timer, NULL);
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
	uv_walk(d->loop, on_walk_close, NULL);
}
