/* server.c: kjitd's Unix socket: accepting clients, reading their frames,
 * dispatching requests and writing replies, all on the loop thread.
 *
 * A connection is reference counted: the socket holds one reference and
 * every request still being answered (a compile in flight) holds another,
 * so a client that disconnects mid-compile costs nothing but the dropped
 * reply.  Back-pressure: while a client has more than KJ_CLIENT_OUTBUF_MAX
 * unsent reply bytes it is dropped; reading pauses while any reply is
 * unsent, so one client cannot make the daemon buffer without bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "kjit.h"
#include "util.h"

struct kj__conn {
	uv_pipe_t h;
	uv_timer_t idle;
	struct kj__daemon *d;
	struct kj__conn *prev, *next;
	struct kj__framer in;
	size_t out_pending;          /* bytes queued in uv_write, not yet written */
	unsigned inflight;           /* requests read but not yet answered */
	int processing;              /* inside process_frames */
	unsigned refs;
	unsigned handles_open;
	int closing;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	/* An internal connection (replay) has no socket: replies go to sink. */
	void (*sink)(void *arg, const uint8_t *body, size_t len);
	void *sink_arg;
};

struct write_req {
	uv_write_t req;
	struct kj__conn *c;
	struct kj__buf b;
};

static void conn_close(struct kj__conn *c);

void kj__log(struct kj__daemon *d, const char *fmt, ...)
{
	va_list ap;
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;

	if (d->log == NULL)
		return;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
	fprintf(d->log, "%s kjitd[%d]: ", ts, (int)getpid());
	va_start(ap, fmt);
	vfprintf(d->log, fmt, ap);
	va_end(ap);
	fputc('\n', d->log);
	fflush(d->log);
}

void kj__conn_ref(struct kj__conn *c)
{
	c->refs++;
}

static void conn_free(struct kj__conn *c)
{
	kj__framer_free(&c->in);
	free(c);
}

void kj__conn_unref(struct kj__conn *c)
{
	if (--c->refs == 0 && c->handles_open == 0)
		conn_free(c);
}

uid_t kj__conn_uid(const struct kj__conn *c)
{
	return c->uid;
}

pid_t kj__conn_pid(const struct kj__conn *c)
{
	return c->pid;
}

int kj__conn_alive(const struct kj__conn *c)
{
	return !c->closing;
}

static void on_handle_closed(uv_handle_t *h)
{
	struct kj__conn *c = h->data;

	if (--c->handles_open == 0 && c->refs == 0)
		conn_free(c);
}

static void conn_close(struct kj__conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->d->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	uv_close((uv_handle_t *)&c->h, on_handle_closed);
	uv_close((uv_handle_t *)&c->idle, on_handle_closed);
	c->refs--; /* the socket's own reference */
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void process_frames(struct kj__conn *c);
static void resume_reading(struct kj__conn *c);
static void queue_write(struct kj__conn *c, struct kj__buf *b);

/* Reads the next requests once nothing is owed to the client: no reply
 * unsent, no request unanswered.  (Within process_frames its loop goes on.) */
static void resume_reading(struct kj__conn *c)
{
	if (c->closing || c->processing || c->inflight > 0 || c->out_pending > 0)
		return;
	int r = uv_read_start((uv_stream_t *)&c->h, alloc_cb, on_read);
	if (r < 0 && r != UV_EALREADY)
		conn_close(c);
	else
		process_frames(c);
}

static void on_write(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct kj__conn *c = w->c;

	c->out_pending -= w->b.len;
	kj__buf_free(&w->b);
	free(w);
	if (status < 0 && !c->closing)
		conn_close(c);
	else
		resume_reading(c);
	kj__conn_unref(c);
}

struct kj__conn *kj__conn_internal(struct kj__daemon *d, void (*sink)(void *arg, const uint8_t *body, size_t len),
				   void *arg)
{
	struct kj__conn *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->d = d;
	c->refs = 1;
	c->uid = getuid();
	c->pid = getpid();
	c->sink = sink;
	c->sink_arg = arg;
	return c;
}

void kj__conn_send(struct kj__conn *c, struct kj__buf *b)
{
	if (c->closing || kj__msg_end(b) < 0) {
		kj__buf_free(b);
		return;
	}
	if (c->sink) {
		c->sink(c->sink_arg, b->p + KJ_FRAME_HDR_SIZE, b->len - KJ_FRAME_HDR_SIZE);
		kj__buf_free(b);
		return;
	}
	if (c->inflight > 0)
		c->inflight--; /* every request gets exactly one reply */
	if (c->out_pending + b->len > KJ_CLIENT_OUTBUF_MAX) {
		kj__log(c->d, "dropping client pid %d: %zu reply bytes unread", (int)c->pid, c->out_pending);
		kj__buf_free(b);
		conn_close(c);
		return;
	}
	/* Fast path: most replies fit the socket buffer whole. */
	if (c->out_pending == 0) {
		uv_buf_t ub = uv_buf_init((char *)b->p, (unsigned)b->len);
		int n = uv_try_write((uv_stream_t *)&c->h, &ub, 1);
		if (n == (int)b->len) {
			kj__buf_free(b);
			resume_reading(c);
			return;
		}
		if (n > 0) {
			memmove(b->p, b->p + n, b->len - (size_t)n);
			b->len -= (size_t)n;
		} else if (n != UV_EAGAIN) {
			kj__buf_free(b);
			conn_close(c);
			return;
		}
	}
	queue_write(c, b);
}

/* Hands b to uv_write (libuv keeps it until written). */
static void queue_write(struct kj__conn *c, struct kj__buf *b)
{
	struct write_req *w = calloc(1, sizeof *w);
	if (w == NULL) {
		kj__buf_free(b);
		conn_close(c);
		return;
	}
	w->c = c;
	w->b = *b;
	memset(b, 0, sizeof *b);
	uv_buf_t ub = uv_buf_init((char *)w->b.p, (unsigned)w->b.len);
	if (uv_write(&w->req, (uv_stream_t *)&c->h, &ub, 1, on_write) < 0) {
		kj__buf_free(&w->b);
		free(w);
		conn_close(c);
		return;
	}
	kj__conn_ref(c);
	c->out_pending += w->b.len;
	uv_read_stop((uv_stream_t *)&c->h); /* back-pressure: no new requests until drained */
}

void kj__conn_send_ext(struct kj__conn *c, struct kj__buf *b, const uint8_t *ext, size_t ext_len)
{
	size_t total = b->len + ext_len;

	if (c->closing || c->sink || c->out_pending > 0) {
		/* Rare paths (replay, a client behind on reading): one buffer. */
		if (kj__buf_append(b, ext, ext_len) < 0) {
			kj__buf_free(b);
			conn_close(c);
			return;
		}
		struct kj__buf whole = *b;
		memset(b, 0, sizeof *b);
		kj__conn_send(c, &whole); /* kj__msg_end recomputes the same length */
		return;
	}
	if (c->inflight > 0)
		c->inflight--;
	uv_buf_t ub[2] = { uv_buf_init((char *)b->p, (unsigned)b->len), uv_buf_init((char *)ext, (unsigned)ext_len) };
	int n = uv_try_write((uv_stream_t *)&c->h, ub, 2);
	if (n == (int)total) {
		kj__buf_free(b);
		resume_reading(c);
		return;
	}
	if (n < 0 && n != UV_EAGAIN) {
		kj__buf_free(b);
		conn_close(c);
		return;
	}
	/* The socket took part of it: keep the rest, copied, for uv_write. */
	size_t done = n > 0 ? (size_t)n : 0;
	struct kj__buf rest = { 0 };
	int r = 0;
	if (done < b->len)
		r = kj__buf_append(&rest, b->p + done, b->len - done);
	size_t ext_done = done > b->len ? done - b->len : 0;
	if (r == 0)
		r = kj__buf_append(&rest, ext + ext_done, ext_len - ext_done);
	kj__buf_free(b);
	if (r < 0) {
		kj__buf_free(&rest);
		conn_close(c);
		return;
	}
	queue_write(c, &rest);
}

void kj__conn_error(struct kj__conn *c, uint32_t id, int code, const char *fmt, ...)
{
	struct kj__buf b = { 0 };
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, code) < 0 ||
	    kj__msg_put_str(&b, KJ_F_ERROR, line) < 0) {
		kj__buf_free(&b);
		conn_close(c);
		return;
	}
	kj__conn_send(c, &b);
}

static void reply_code(struct kj__conn *c, uint32_t id, int code)
{
	struct kj__buf b = { 0 };

	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, code) < 0) {
		kj__buf_free(&b);
		conn_close(c);
		return;
	}
	kj__conn_send(c, &b);
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

static void dispatch(struct kj__conn *c, const struct kj__frame_hdr *h, const uint8_t *body)
{
	struct kj__daemon *d = c->d;
	struct kj__msg m;
	int r = kj__msg_decode(body, h->len, &m);

	if (r < 0) {
		kj__conn_error(c, h->id, r, "malformed request body (%s); closing the connection",
			       kjit_strerror(r));
		conn_close(c);
		return;
	}
	d->stats[KJ_STAT_REQUESTS]++;
	switch (h->type) {
	case KJ_MSG_PING:
		reply_code(c, h->id, 0);
		break;
	case KJ_MSG_GET:
		kj__handle_get(d, c, h->id, &m, body, h->len);
		break;
	case KJ_MSG_ADMIN:
		kj__handle_admin(d, c, h->id, &m);
		break;
	case KJ_MSG_STOP: {
		kj__log(d, "stop requested by uid %u pid %d", (unsigned)c->uid, (int)c->pid);
		reply_code(c, h->id, 0);
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
		conn_close(c);
		break;
	}
	kj__msg_free(&m);
}

static void on_idle(uv_timer_t *t)
{
	struct kj__conn *c = t->data;

	kj__log(c->d, "closing client pid %d: a partial frame sat for %d ms", (int)c->pid,
		KJ_CLIENT_IDLE_TIMEOUT_MS);
	kj__conn_error(c, 0, KJIT_ETIMEDOUT, "request incomplete after %d s; closing the connection",
		       KJ_CLIENT_IDLE_TIMEOUT_MS / 1000);
	conn_close(c);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct kj__conn *c = h->data;
	kj__framer_alloc(&c->in, suggested, buf);
}

/* Handles every whole frame buffered, unless a reply is still unsent. */
static void process_frames(struct kj__conn *c)
{
	struct kj__frame_hdr h;
	const uint8_t *body;
	int r;

	kj__conn_ref(c);
	c->processing = 1;
	while (!c->closing && c->out_pending == 0 && c->inflight == 0 &&
	       (r = kj__framer_next(&c->in, &h, &body)) != 0) {
		if (r < 0) {
			if (r == KJIT_ETOOBIG)
				kj__conn_error(c, h.id, r, "frame of %u bytes is over the %u-byte limit; closing the connection",
					       h.len, KJ_FRAME_MAX);
			else
				kj__conn_error(c, h.id, r, "protocol version %u not supported (this kjitd speaks %d); closing the connection",
					       h.version, KJ_PROTO_VERSION);
			conn_close(c);
			break;
		}
		c->inflight++;
		dispatch(c, &h, body);
		if (!c->closing)
			kj__framer_consume(&c->in, &h);
	}
	c->processing = 0;
	/* A request still being answered (a compile): read nothing more from
	 * this client until it is, so a client that pipelines without reading
	 * cannot make us hold its replies. */
	if (!c->closing && (c->inflight > 0 || c->out_pending > 0))
		uv_read_stop((uv_stream_t *)&c->h);
	if (!c->closing) {
		/* Only a partial frame we wait on the client for can time out. */
		if (c->in.len > 0 && c->inflight == 0 && c->out_pending == 0)
			uv_timer_start(&c->idle, on_idle, KJ_CLIENT_IDLE_TIMEOUT_MS, 0);
		else
			uv_timer_stop(&c->idle);
	}
	kj__conn_unref(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct kj__conn *c = s->data;

	(void)buf;
	if (nread < 0) {
		conn_close(c);
		return;
	}
	c->in.len += (size_t)nread;
	process_frames(c);
}

static int peer_allowed(struct kj__daemon *d, struct kj__conn *c)
{
	const struct kj__config *cfg = &d->cfg;

	if (cfg->n_allow_uid == 0 && cfg->n_allow_gid == 0)
		return 1;
	if (c->uid == 0 || c->uid == getuid())
		return 1;
	for (size_t i = 0; i < cfg->n_allow_uid; i++)
		if (cfg->allow_uid[i] == c->uid)
			return 1;
	for (size_t i = 0; i < cfg->n_allow_gid; i++)
		if (cfg->allow_gid[i] == c->gid)
			return 1;
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct kj__daemon *d = server->data;
	struct kj__conn *c;
	struct ucred cred;
	socklen_t len = sizeof cred;
	uv_os_fd_t fd;

	if (status < 0) {
		kj__log(d, "accept: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL || uv_pipe_init(d->loop, &c->h, 0) < 0) {
		free(c);
		return;
	}
	c->d = d;
	c->refs = 1;
	c->handles_open = 2;
	c->h.data = c;
	uv_timer_init(d->loop, &c->idle);
	c->idle.data = c;
	c->next = d->conns;
	if (d->conns)
		d->conns->prev = c;
	d->conns = c;
	if (uv_accept(server, (uv_stream_t *)&c->h) < 0) {
		conn_close(c);
		return;
	}
	if (uv_fileno((uv_handle_t *)&c->h, &fd) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->pid = cred.pid;
	} else {
		kj__log(d, "SO_PEERCRED failed: %s; refusing the connection", strerror(errno));
		conn_close(c);
		return;
	}
	d->stats[KJ_STAT_CONNECTIONS]++;
	if (!peer_allowed(d, c)) {
		kj__log(d, "refused uid %u gid %u pid %d: not in the allow-list", (unsigned)c->uid,
			(unsigned)c->gid, (int)c->pid);
		kj__conn_error(c, 0, KJIT_EDENIED, "kjitd does not serve uid %u; ask its operator to add you to the allow-list",
			       (unsigned)c->uid);
		conn_close(c);
		return;
	}
	if (d->stopping) {
		kj__conn_error(c, 0, KJIT_ESHUTDOWN, "kjitd is shutting down; retry in a moment");
		conn_close(c);
		return;
	}
	if (uv_read_start((uv_stream_t *)&c->h, alloc_cb, on_read) < 0)
		conn_close(c);
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
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->pools); i++) {
		if (d->pools[i])
			kj__pool_shutdown(d->pools[i]);
		if (d->alt_pools[i])
			kj__pool_shutdown(d->alt_pools[i]);
	}
	while (d->conns)
		conn_close(d->conns);
	uv_timer_stop(&d->flush_timer);
	uv_close((uv_handle_t *)&d->flush_timer, NULL);
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
	uv_walk(d->loop, on_walk_close, NULL);
}
