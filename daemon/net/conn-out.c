/* conn-out.c: a connection's replies: written at once as far as the
 * socket takes them, the rest queued for uv_write, and what the queued
 * ones hold charged to the connection's uid (issue 21, item 3).
 *
 * Invariants:
 *  - Every request gets exactly one reply (kj__conn_answered on each): an
 *    object, a failure, or, when the uid's budget cannot hold the object's
 *    queued rest, a "busy, retry" error in its place.
 *  - A frame is never cut: once part of it reached the socket, the rest
 *    is queued whatever the budget (charged past it), or the connection
 *    is closed when memory runs out.  So a reply over
 *    KJ_REPLY_UNCHECKED_MAX starts only if the uid's budget could hold it
 *    whole; smaller ones pass the budget by that much per connection at
 *    most.
 *  - A queued write holds its own bytes (charged by their storage) and a
 *    reference on the shared object after them (replybuf.c, charged once
 *    per uid); both go back in on_write, which libuv also calls with
 *    UV_ECANCELED for writes pending at close.
 *  - A reply larger than the socket's send buffer (up to
 *    KJ_REPLY_SNDBUF_MAX) first raises the buffer to hold it whole, when
 *    its uid's budget takes what the kernel may then hold beyond the
 *    buffer's first size: that stays charged (c->sndbuf_charged) until the
 *    buffer is set back, at the connection's next reply once the client
 *    has read everything, or at close.  Otherwise (budget, kernel cap) the
 *    reply leaves as before: written as far as the socket takes it, the
 *    rest queued.
 *  - While anything is queued the connection is not read from; the stall
 *    timer (conn.c) closes it when no queued reply is written out for
 *    cfg.conn_idle_ms (a reply still being written counts as no progress).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "conn-int.h"
#include "kj_types.h"

static int queue_write(struct kj__conn *c, struct kj__buf *b, struct kj__replybuf *obj, size_t off, int must,
		       char *err, size_t errlen);

static void on_write(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct kj__conn *c = w->c;

	c->out_pending -= w->len;
	kj__quota_release(c->d, c->uid, w->b.cap);
	if (w->obj) {
		kj__replybuf_discharge(w->obj, c->uid);
		kj__replybuf_unref(w->obj);
	}
	kj__buf_free(&w->b);
	free(w);
	if (status < 0 && !c->closing) {
		kj__conn_close(c);
	} else {
		kj__conn_resume(c);
		kj__conn_arm_timer(c);
	}
	kj__conn_unref(c);
}

/* The id in a finished frame's header (kj__msg_begin wrote it). */
static uint32_t frame_id(const struct kj__buf *b)
{
	uint32_t id = 0;

	for (int i = 0; b->len >= KJ_FRAME_HDR_SIZE && i < 4; i++)
		id |= (uint32_t)b->p[8 + i] << (8 * i);
	return id;
}

/* Queues, in place of a reply the budget cannot hold, a short error with
 * the reason (charged even past the budget: it is small, and one per
 * request at most). */
static void queue_busy(struct kj__conn *c, uint32_t id, const char *why)
{
	struct kj__buf b = { 0 };
	char err[8];

	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, KJIT_EBUSY) < 0 ||
	    kj__msg_put_str(&b, KJ_F_ERROR, why) < 0 || kj__msg_end(&b) < 0) {
		kj__buf_free(&b);
		kj__conn_close(c);
		return;
	}
	queue_write(c, &b, NULL, 0, 1, err, sizeof err);
}

static int sndbuf_get(uv_os_fd_t fd, int *v)
{
	socklen_t len = sizeof *v;

	return getsockopt(fd, SOL_SOCKET, SO_SNDBUF, v, &len) == 0 && *v > 0 ? 0 : -1;
}

void kj__conn_sndbuf_release(struct kj__conn *c)
{
	uv_os_fd_t fd;
	int base = c->sndbuf_base / 2; /* the kernel doubles what it is given */

	if (c->sndbuf_charged == 0)
		return;
	if (!c->closing && uv_fileno((uv_handle_t *)&c->h, &fd) == 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &base, sizeof base); /* failing: it stays large, until close */
	kj__quota_release(c->d, c->uid, c->sndbuf_charged);
	c->sndbuf_charged = 0;
}

/* A reply larger than the socket's send buffer leaves in pieces, one per
 * turn of the loop that finds the socket writable, so the loop's work after
 * the answer (the hit table, the publish's start) comes between the
 * client's first bytes and its last: 1.9 ms of a 1 MB remote hit (issue
 * 35, docs/remote.md).  Raises the buffer to hold all of a frame of total
 * bytes, charging the uid for what the kernel may then hold beyond the
 * buffer's first size; nothing when the budget or the kernel (wmem_max)
 * does not allow it.  A raised buffer whose bytes the client has all read
 * is set back first, and its charge given back, when the frame fits the
 * first size. */
static void sndbuf_fit(struct kj__conn *c, size_t total)
{
	uv_os_fd_t fd;
	int have, want;
	char err[8];

	if (total <= KJ_REPLY_UNCHECKED_MAX && c->sndbuf_charged == 0)
		return; /* small: as before, no system call (a default buffer, 208 KiB, holds it) */
	if (c->sink || uv_fileno((uv_handle_t *)&c->h, &fd) < 0 || (c->sndbuf_base == 0 && sndbuf_get(fd, &c->sndbuf_base) < 0))
		return;
	uint64_t base = (uint64_t)c->sndbuf_base, need = (uint64_t)total + KJ_REPLY_SNDBUF_SLACK;
	if (need <= base) {
		int queued = 1;
		if (c->sndbuf_charged && ioctl(fd, SIOCOUTQ, &queued) == 0 && queued == 0)
			kj__conn_sndbuf_release(c);
		return;
	}
	if (total > KJ_REPLY_SNDBUF_MAX || need <= base + c->sndbuf_charged)
		return;
	if (kj__quota_charge(c->d, c->uid, need - base - c->sndbuf_charged, err, sizeof err) < 0)
		return;
	c->sndbuf_charged = need - base;
	want = (int)(need / 2);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want) < 0 || sndbuf_get(fd, &have) < 0)
		have = c->sndbuf_base;
	/* the kernel gives at most twice net.core.wmem_max: charge what it gave */
	uint64_t got = (uint64_t)have > base ? (uint64_t)have - base : 0;
	if (got < c->sndbuf_charged) {
		kj__quota_release(c->d, c->uid, c->sndbuf_charged - got);
		c->sndbuf_charged = got;
	}
}

/* Sends frame b and then ext (already counted in b's length): at once as
 * far as the socket takes it, the rest queued (ext's in a buffer shared
 * by tag).  Consumes b. */
static void send_frame(struct kj__conn *c, struct kj__buf *b, const uint8_t *ext, size_t ext_len, const char *tag)
{
	size_t total = b->len + ext_len, done = 0, off = 0;
	uint32_t id = frame_id(b);
	struct kj__replybuf *obj = NULL;
	char err[512];

	kj__conn_answered(c, b);
	/* Once part of a frame is written the rest must follow, budget or not:
	 * a large reply starts only if its uid's budget could hold it all. */
	if (c->out_pending == 0 && total > KJ_REPLY_UNCHECKED_MAX &&
	    kj__quota_room(c->d, c->uid, total, err, sizeof err) == KJIT_EBUSY) {
		kj__buf_free(b);
		queue_busy(c, id, err);
		return;
	}
	if (c->out_pending == 0)
		sndbuf_fit(c, total);
	if (c->out_pending == 0) { /* fast path: most replies fit the socket buffer whole */
		uv_buf_t ub[2] = { uv_buf_init((char *)b->p, (unsigned)b->len), uv_buf_init((char *)ext, (unsigned)ext_len) };
		int n = uv_try_write((uv_stream_t *)&c->h, ub, ext_len ? 2 : 1);
		if (n == (int)total) {
			kj__buf_free(b);
			kj__conn_resume(c);
			return;
		}
		if (n < 0 && n != UV_EAGAIN) {
			kj__buf_free(b);
			kj__conn_close(c);
			return;
		}
		done = n > 0 ? (size_t)n : 0;
	}
	if (done < b->len) {
		memmove(b->p, b->p + done, b->len - done);
		b->len -= done;
	} else {
		off = done - b->len;
		kj__buf_free(b); /* all written: hold (and charge) none of it */
	}
	if (off < ext_len && (obj = kj__replybuf_get(c->d, tag, ext, ext_len)) == NULL) {
		kj__buf_free(b);
		kj__conn_close(c);
		return;
	}
	if (queue_write(c, b, obj, off, done > 0, err, sizeof err) == KJIT_EBUSY)
		queue_busy(c, id, err);
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
	send_frame(c, b, NULL, 0, NULL);
}

/* Hands b's bytes, then obj's from off, to uv_write (libuv keeps them
 * until written), charging c's uid: b's storage, and obj once per uid.
 * Consumes b and the caller's reference on obj.  must: part of the frame
 * is written already, so it is queued whatever the budget; otherwise a
 * reply over it is not queued: KJIT_EBUSY with the reason in err, c left
 * as it was.  Any other failure closes c. */
static int queue_write(struct kj__conn *c, struct kj__buf *b, struct kj__replybuf *obj, size_t off, int must,
		       char *err, size_t errlen)
{
	size_t rest = obj ? kj__replybuf_len(obj) - off : 0;
	struct write_req *w = NULL;
	int r, own = 0, shared = 0;

	if (must)
		kj__quota_charge_over(c->d, c->uid, b->cap);
	else if ((r = kj__quota_charge(c->d, c->uid, b->cap, err, errlen)) < 0)
		goto out;
	own = 1;
	if (obj && (r = kj__replybuf_charge(obj, c->uid, must, err, errlen)) < 0)
		goto out;
	shared = obj != NULL;
	r = KJIT_ENOMEM;
	if ((w = calloc(1, sizeof *w)) == NULL)
		goto out;
	w->c = c;
	w->b = *b;
	w->obj = obj;
	w->obj_off = off;
	w->len = b->len + rest;
	uv_buf_t ub[2];
	unsigned n = 0;
	if (b->len)
		ub[n++] = uv_buf_init((char *)b->p, (unsigned)b->len);
	if (rest)
		ub[n++] = uv_buf_init((char *)kj__replybuf_data(obj) + off, (unsigned)rest);
	if ((r = uv_write(&w->req, (uv_stream_t *)&c->h, ub, n, on_write)) < 0) {
		r = KJIT_EIO;
		goto out;
	}
	memset(b, 0, sizeof *b);
	kj__conn_ref(c);
	c->out_pending += w->len;
	uv_read_stop((uv_stream_t *)&c->h); /* back-pressure: no new requests until drained */
	if (c->out_pending == w->len)
		kj__conn_arm_timer(c); /* the first queued: the stall clock starts (on_write restarts it) */
	return 0;
out:
	free(w);
	if (own)
		kj__quota_release(c->d, c->uid, b->cap);
	if (shared)
		kj__replybuf_discharge(obj, c->uid);
	kj__replybuf_unref(obj);
	kj__buf_free(b);
	if (must || r != KJIT_EBUSY)
		kj__conn_close(c);
	return r;
}

void kj__conn_send_ext(struct kj__conn *c, struct kj__buf *b, const uint8_t *ext, size_t ext_len, const char *tag)
{
	if (c->closing) {
		kj__buf_free(b);
		return;
	}
	if (c->sink) { /* replay: one buffer */
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
	send_frame(c, b, ext, ext_len, tag);
}

int kj__conn_send_fds(struct kj__conn *c, struct kj__buf *b, const int *fds, int n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov;
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	uv_os_fd_t fd;
	ssize_t k;

	if (c->closing || c->sink || c->out_pending > 0 || n < 1 || n > 4 || kj__msg_end(b) < 0 ||
	    uv_fileno((uv_handle_t *)&c->h, &fd) < 0) {
		kj__buf_free(b);
		return KJIT_EINVAL;
	}
	memset(&u, 0, sizeof u);
	iov.iov_base = b->p;
	iov.iov_len = b->len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
	do
		k = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (k < 0 && errno == EINTR);
	if (k < 0) {
		int e = errno;
		kj__buf_free(b);
		if (e == EAGAIN)
			return KJIT_EBUSY; /* nothing sent: the caller answers otherwise */
		kj__conn_close(c);
		return KJIT_EIO;
	}
	kj__conn_answered(c, b);
	if ((size_t)k == b->len) {
		kj__buf_free(b);
		kj__conn_resume(c);
		return 0;
	}
	/* The descriptors went with the first byte; the rest goes as usual. */
	memmove(b->p, b->p + k, b->len - (size_t)k);
	b->len -= (size_t)k;
	char err[8];
	queue_write(c, b, NULL, 0, 1, err, sizeof err);
	return 0;
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
