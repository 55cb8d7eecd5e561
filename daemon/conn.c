/* conn.c: a client connection: reading its frames, sending its replies.
 *
 * A connection is reference counted: the socket holds one reference and
 * every request still being answered (a compile in flight) holds another,
 * so a client that disconnects mid-compile costs nothing but the dropped
 * reply.  Back-pressure: while a client has more than KJ_CLIENT_OUTBUF_MAX
 * unsent reply bytes it is dropped; reading pauses while any reply is
 * unsent or any request unanswered, so one client cannot make the daemon
 * buffer without bound.  A hit's object goes out without a copy
 * (kj__conn_send_ext) unless the socket cannot take it at once.
 *
 * Limits (quota.c): a connection counts against its uid from
 * kj__conn_count on; a frame's length is charged to its uid as soon as its
 * header is read, before its body is buffered, and a frame over the budget
 * is answered "busy, retry" and its body read and dropped.  A connection
 * with nothing in flight that stays silent for cfg.conn_idle_ms is closed
 * without a word (clients reconnect), so silent connections cannot pile up.
 *
 * This file knows nothing of what a request means: each whole frame goes
 * to the dispatch function the server gave kj__conn_accept, so handlers
 * (get.c, admin.c) depend on conn.c and the server on both, never back.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "kj_types.h"
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
	int counted;                 /* counted against its uid (quota.c) */
	uint64_t charged;            /* bytes of the frame being read, charged to uid */
	uint64_t skip;               /* bytes of a refused frame still to read and drop */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	kj__conn_dispatch_fn *dispatch; /* the server's: called for each whole frame */
	/* An internal connection (replay) has no socket: replies go to sink. */
	void (*sink)(void *arg, const uint8_t *body, size_t len);
	void *sink_arg;
};

struct write_req {
	uv_write_t req;
	struct kj__conn *c;
	struct kj__buf b;
};

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

gid_t kj__conn_gid(const struct kj__conn *c)
{
	return c->gid;
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

void kj__conn_close(struct kj__conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->counted)
		kj__quota_conn_del(c->d, c->uid);
	c->counted = 0;
	kj__quota_release(c->d, c->uid, c->charged);
	c->charged = 0;
	if (!c->sink)
		c->d->last_active_us = kj__now_us();
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
		kj__conn_close(c);
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
		kj__conn_close(c);
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
		kj__conn_close(c);
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
			kj__conn_close(c);
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
		kj__conn_close(c);
		return;
	}
	w->c = c;
	w->b = *b;
	memset(b, 0, sizeof *b);
	uv_buf_t ub = uv_buf_init((char *)w->b.p, (unsigned)w->b.len);
	if (uv_write(&w->req, (uv_stream_t *)&c->h, &ub, 1, on_write) < 0) {
		kj__buf_free(&w->b);
		free(w);
		kj__conn_close(c);
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
			kj__conn_close(c);
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
		kj__conn_close(c);
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
		kj__conn_close(c);
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
		kj__conn_close(c);
		return;
	}
	kj__conn_send(c, &b);
}

void kj__conn_reply_code(struct kj__conn *c, uint32_t id, int code)
{
	struct kj__buf b = { 0 };

	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, code) < 0) {
		kj__buf_free(&b);
		kj__conn_close(c);
		return;
	}
	kj__conn_send(c, &b);
}

static void on_idle(uv_timer_t *t)
{
	struct kj__conn *c = t->data;

	kj__log(c->d, "closing client pid %d: a partial frame sat for %d ms", (int)c->pid,
		KJ_CLIENT_IDLE_TIMEOUT_MS);
	kj__conn_error(c, 0, KJIT_ETIMEDOUT, "request incomplete after %d s; closing the connection",
		       KJ_CLIENT_IDLE_TIMEOUT_MS / 1000);
	kj__conn_close(c);
}

/* A connection with nothing in flight was silent for cfg.conn_idle_ms. */
static void on_silent(uv_timer_t *t)
{
	kj__conn_close(t->data);
}

/* (Re)arms the connection's one timer: the partial-frame timeout while a
 * frame is half read, the idle timeout while nothing is owed either way. */
static void arm_timer(struct kj__conn *c)
{
	if (c->closing || c->sink)
		return;
	if ((c->in.len > 0 || c->skip > 0) && c->inflight == 0 && c->out_pending == 0)
		uv_timer_start(&c->idle, on_idle, KJ_CLIENT_IDLE_TIMEOUT_MS, 0);
	else if (c->inflight == 0 && c->out_pending == 0 && c->d->cfg.conn_idle_ms > 0)
		uv_timer_start(&c->idle, on_silent, c->d->cfg.conn_idle_ms, 0);
	else
		uv_timer_stop(&c->idle);
}

/* Charges the next frame's length to the peer's uid once its header is
 * in; a frame over the budget is answered busy and dropped (its body is
 * skipped as it comes).  0 to go on, 1 when the frame was refused. */
static int charge_frame(struct kj__conn *c)
{
	struct kj__frame_hdr h;
	char err[512];

	if (c->charged || c->in.len < KJ_FRAME_HDR_SIZE || kj__frame_hdr_decode(c->in.p, &h) < 0 || h.len == 0)
		return 0;
	int r = kj__quota_charge(c->d, c->uid, h.len, err, sizeof err);
	if (r == 0) {
		c->charged = h.len;
		return 0;
	}
	kj__conn_error(c, h.id, r, "%s", err);
	size_t total = KJ_FRAME_HDR_SIZE + (size_t)h.len;
	if (c->in.len >= total) {
		kj__framer_consume(&c->in, &h);
	} else {
		c->skip = total - c->in.len;
		c->in.len = 0;
	}
	return 1;
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
	while (!c->closing && c->out_pending == 0 && c->inflight == 0 && c->skip == 0) {
		if (charge_frame(c))
			continue;
		if ((r = kj__framer_next(&c->in, &h, &body)) == 0)
			break;
		if (r < 0) {
			if (r == KJIT_ETOOBIG)
				kj__conn_error(c, h.id, r, "frame of %u bytes is over the %u-byte limit; closing the connection",
					       h.len, KJ_FRAME_MAX);
			else
				kj__conn_error(c, h.id, r, "protocol version %u not supported (this kjitd speaks %d); closing the connection",
					       h.version, KJ_PROTO_VERSION);
			kj__conn_close(c);
			break;
		}
		c->inflight++;
		c->d->last_active_us = kj__now_us();
		c->dispatch(c->d, c, &h, body);
		if (!c->closing)
			kj__framer_consume(&c->in, &h);
		kj__quota_release(c->d, c->uid, c->charged);
		c->charged = 0;
	}
	c->processing = 0;
	/* A request still being answered (a compile): read nothing more from
	 * this client until it is, so a client that pipelines without reading
	 * cannot make us hold its replies. */
	if (!c->closing && (c->inflight > 0 || c->out_pending > 0))
		uv_read_stop((uv_stream_t *)&c->h);
	arm_timer(c);
	kj__conn_unref(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct kj__conn *c = s->data;

	(void)buf;
	if (nread < 0) {
		kj__conn_close(c);
		return;
	}
	c->in.len += (size_t)nread;
	if (c->skip > 0) { /* the rest of a refused frame */
		size_t n = c->skip < c->in.len ? (size_t)c->skip : c->in.len;
		memmove(c->in.p, c->in.p + n, c->in.len - n);
		c->in.len -= n;
		c->skip -= n;
	}
	process_frames(c);
}


int kj__conn_accept(struct kj__daemon *d, uv_stream_t *server, kj__conn_dispatch_fn *dispatch,
		    struct kj__conn **out)
{
	struct kj__conn *c = calloc(1, sizeof *c);
	struct ucred cred;
	socklen_t len = sizeof cred;
	uv_os_fd_t fd;

	*out = NULL;
	if (c == NULL || uv_pipe_init(d->loop, &c->h, 0) < 0) {
		free(c);
		return KJIT_ENOMEM;
	}
	c->d = d;
	c->dispatch = dispatch;
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
		kj__conn_close(c);
		return KJIT_EIO;
	}
	if (uv_fileno((uv_handle_t *)&c->h, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		kj__log(d, "SO_PEERCRED failed: %s; refusing the connection", strerror(errno));
		kj__conn_close(c);
		return KJIT_EIO;
	}
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	*out = c;
	return 0;
}

void kj__conn_start(struct kj__conn *c)
{
	if (uv_read_start((uv_stream_t *)&c->h, alloc_cb, on_read) < 0)
		kj__conn_close(c);
	else
		arm_timer(c);
}

int kj__conn_count(struct kj__conn *c, char *err, size_t errlen)
{
	int r = kj__quota_conn_add(c->d, c->uid, err, errlen);

	c->counted = r == 0;
	return r;
}

int kj__conn_in_group(const struct kj__conn *c, gid_t gid)
{
	gid_t small[64], *g = small;
	socklen_t len = sizeof small;
	uv_os_fd_t fd;
	int found = 0;

	if (c->gid == gid)
		return 1;
	if (c->sink || uv_fileno((const uv_handle_t *)&c->h, &fd) < 0)
		return 0;
	/* The peer's supplementary groups as of connect (Linux 4.13). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0) {
		if (errno != ERANGE || (g = malloc(len)) == NULL)
			return 0;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0) {
			free(g);
			return 0;
		}
	}
	for (size_t i = 0; i < len / sizeof *g && !found; i++)
		found = g[i] == gid;
	if (g != small)
		free(g);
	return found;
}

void kj__conn_close_all(struct kj__daemon *d)
{
	while (d->conns)
		kj__conn_close(d->conns);
}
