/* conn.c: a client connection: reading its frames, sending its replies.
 *
 * A connection is reference counted: the socket holds one reference and
 * every request still being answered (a compile in flight) holds another,
 * so a client that disconnects mid-compile costs nothing but the dropped
 * reply.  Back-pressure: reading pauses while any reply is unsent or too
 * many requests are unanswered (saturated), and resumes once they drain.
 * An object goes out without a copy (kj__conn_send_ext) unless the socket
 * cannot take it at once; then the rest is queued in a shared buffer
 * (replybuf.c) that every queued reply of the same key references, so the
 * waiters of one flight, pipelined repeats and other clients of the same
 * object hold one copy between them.
 *
 * Reply budget (issue 21): what a queued reply holds (its own bytes, and
 * its object once per uid) is charged to the connection's uid like request
 * bytes, from queueing until written (or the connection closed).  A reply
 * that would pass the uid's budget is replaced by a "busy, retry" error;
 * one partly written already goes out whole (charged past the budget), as
 * a frame cannot be cut.  A connection whose queued replies make no
 * progress for cfg.conn_idle_ms is closed.
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

#include "conn-int.h"
#include "daemon.h"
#include "net-int.h"
#include "hittab.h"
#include "kj_types.h"
#include "util.h"

void kj__conn_ref(struct kj__conn *c)
{
	c->refs++;
}

static void conn_free(struct kj__conn *c)
{
	kj__hitctr_free(c->ctr);
	kj__frames_free(&c->in);
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

uid_t kj__conn_peer_uid(const struct kj__conn *c, int *nested)
{
	if (nested)
		*nested = c->nested;
	return c->peer_uid;
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
	kj__hits_harvest(c->d, c->uid, c->ctr);
	kj__hitctr_free(c->ctr);
	c->ctr = NULL;
	if (c->counted)
		kj__quota_conn_del(c->d, c->uid);
	c->counted = 0;
	kj__quota_release(c->d, c->uid, c->charged);
	c->charged = 0;
	kj__conn_sndbuf_release(c);
	for (unsigned i = 0; i < c->n_held; i++)
		kj__quota_release(c->d, c->uid, c->held[i].len);
	c->n_held = 0;
	if (!c->sink)
		c->d->last_active_us = kj__now_us();
	if (c->prev)
		c->prev->next = c->next;
	else
		c->d->net->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	uv_close((uv_handle_t *)&c->h, on_handle_closed);
	uv_close((uv_handle_t *)&c->idle, on_handle_closed);
	c->refs--; /* the socket's own reference */
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* Enough requests unanswered that no more are read: KJ_CLIENT_INFLIGHT_MAX
 * of them, or KJ_CLIENT_INFLIGHT_BYTES_MAX bytes of them past the first
 * (an over-estimate: the count restarts only when all are answered). */
static int saturated(const struct kj__conn *c)
{
	return c->inflight >= KJ_CLIENT_INFLIGHT_MAX ||
	       (c->inflight > 0 && c->inflight_bytes >= KJ_CLIENT_INFLIGHT_BYTES_MAX);
}

/* A reply in b answers one request: one fewer in flight, and that
 * request's charge (by the reply's id) goes back to its uid. */
void kj__conn_answered(struct kj__conn *c, const struct kj__buf *b)
{
	uint32_t id = 0;

	if (c->inflight > 0)
		c->inflight--; /* every request gets exactly one reply */
	if (b->len < KJ_FRAME_HDR_SIZE || c->refusing)
		return;
	for (int i = 0; i < 4; i++) /* the header's id, as kj__msg_begin wrote it */
		id |= (uint32_t)b->p[8 + i] << (8 * i);
	for (unsigned i = 0; i < c->n_held; i++)
		if (c->held[i].id == id) {
			kj__quota_release(c->d, c->uid, c->held[i].len);
			c->held[i] = c->held[--c->n_held];
			break;
		}
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void process_frames(struct kj__conn *c);

/* Reads the next requests once nothing is owed to the client: no reply
 * unsent, no request unanswered.  (Within process_frames its loop goes on.) */
void kj__conn_resume(struct kj__conn *c)
{
	if (c->closing || c->processing || saturated(c) || c->out_pending > 0)
		return;
	int r = uv_read_start((uv_stream_t *)&c->h, alloc_cb, on_read);
	if (r < 0 && r != UV_EALREADY)
		kj__conn_close(c);
	else
		process_frames(c);
}

struct kj__conn *kj__conn_internal(struct kj__daemon *d, void (*sink)(void *arg, const uint8_t *body, size_t len),
				   void *arg)
{
	struct kj__conn *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->d = d;
	c->refs = 1;
	c->uid = c->peer_uid = getuid();
	c->pid = getpid();
	c->sink = sink;
	c->sink_arg = arg;
	return c;
}

void kj__conn_set_hitctr(struct kj__conn *c, struct kj__hitctr *ctr)
{
	c->ctr = ctr;
}

struct kj__hitctr *kj__conn_hitctr(const struct kj__conn *c)
{
	return c->ctr;
}

void kj__conn_harvest_all(struct kj__daemon *d)
{
	for (struct kj__conn *c = d->net->conns; c; c = c->next)
		kj__hits_harvest(d, c->uid, c->ctr);
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

/* Queued replies made no progress for cfg.conn_idle_ms: the client does
 * not read; what they hold goes back to its uid. */
static void on_stalled(uv_timer_t *t)
{
	struct kj__conn *c = t->data;

	kj__log(c->d, "closing client pid %d (uid %u): %zu reply bytes unread for %llu s", (int)c->pid,
		(unsigned)c->uid, c->out_pending, (unsigned long long)(c->d->cfg.conn_idle_ms / 1000));
	kj__conn_close(c);
}

/* (Re)arms the connection's one timer: the partial-frame timeout while a
 * frame is half read, the idle timeout while nothing is owed either way,
 * the stall timeout while replies wait for the client to read them. */
void kj__conn_arm_timer(struct kj__conn *c)
{
	if (c->closing || c->sink)
		return;
	if (kj__frames_begun(&c->in) && c->inflight == 0 && c->out_pending == 0)
		uv_timer_start(&c->idle, on_idle, KJ_CLIENT_IDLE_TIMEOUT_MS, 0);
	else if (c->inflight == 0 && c->out_pending == 0 && c->d->cfg.conn_idle_ms > 0)
		uv_timer_start(&c->idle, on_silent, c->d->cfg.conn_idle_ms, 0);
	else if (c->out_pending > 0 && c->d->cfg.conn_idle_ms > 0)
		uv_timer_start(&c->idle, on_stalled, c->d->cfg.conn_idle_ms, 0);
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

	if (c->charged || kj__frames_peek(&c->in, &h) <= 0 || h.len == 0)
		return 0;
	int r = kj__quota_charge(c->d, c->uid, h.len, err, sizeof err);
	if (r == 0) {
		c->charged = h.len;
		return 0;
	}
	c->inflight++; /* its busy reply answers it (others may be in flight) */
	c->refusing = 1; /* and must not release another request's charge of the same id */
	kj__conn_error(c, h.id, r, "%s", err);
	c->refusing = 0;
	kj__frames_skip(&c->in); /* its body is dropped as it comes */
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
	while (!c->closing && c->out_pending == 0 && !saturated(c)) {
		if (charge_frame(c))
			continue;
		if ((r = kj__frames_next(&c->in, &h, &body)) == 0)
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
		if (c->inflight++ == 0)
			c->inflight_bytes = 0;
		c->inflight_bytes += h.len;
		c->d->last_active_us = kj__now_us();
		/* The frame's charge stays with it until it is answered: a batch
		 * holds its uid's budget for every request in flight. */
		if (c->charged && c->n_held < KJ_CLIENT_INFLIGHT_MAX) {
			c->held[c->n_held++] = (struct held){ h.id, c->charged };
			c->charged = 0;
		}
		c->dispatch(c->d, c, &h, body);
		if (!c->closing)
			kj__frames_consume(&c->in);
		kj__quota_release(c->d, c->uid, c->charged);
		c->charged = 0;
	}
	c->processing = 0;
	/* Too many requests still being answered (compiles), or a reply
	 * unsent: read nothing more from this client until then, so a client
	 * that pipelines without reading cannot make us hold its requests or
	 * its replies. */
	if (!c->closing && (saturated(c) || c->out_pending > 0))
		uv_read_stop((uv_stream_t *)&c->h);
	kj__conn_arm_timer(c);
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
	kj__frames_wrote(&c->in, (size_t)nread); /* drops what is left of a refused frame */
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
	c->next = d->net->conns;
	if (d->net->conns)
		d->net->conns->prev = c;
	d->net->conns = c;
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
	c->uid = c->peer_uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	*out = c;
	/* a peer in a child user namespace is charged to the namespace's owner */
	char err[256];
	if (kj__userns_owner(fd, cred.pid, cred.uid, &c->uid, &c->nested, err, sizeof err) < 0) {
		kj__log(d, "refused uid %u pid %d: %s", (unsigned)cred.uid, (int)cred.pid, err);
		kj__conn_error(c, 0, KJIT_EDENIED, "access denied: %s", err);
		kj__conn_close(c);
		*out = NULL;
		return KJIT_EDENIED;
	}
	return 0;
}

void kj__conn_start(struct kj__conn *c)
{
	if (uv_read_start((uv_stream_t *)&c->h, alloc_cb, on_read) < 0)
		kj__conn_close(c);
	else
		kj__conn_arm_timer(c);
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
	while (d->net->conns)
		kj__conn_close(d->net->conns);
}
