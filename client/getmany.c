/* getmany.c: kjit_get_many, N gets in one round trip.
 *
 * Each request is checked and encoded as kjit_get does (get.c), then
 * answered locally when it can be (process memo, shared hit table).  The
 * rest are sent back to back as ordinary GET frames with consecutive ids
 * (pipelined; kjitd answers up to KJ_CLIENT_INFLIGHT_MAX of one connection
 * at once, compiling the misses in parallel) while the replies are read as
 * they come: one poll loop sends while the socket takes bytes and reads
 * whenever a reply is there, so neither side waits on the other.  A reply
 * is matched to its request by id; each result is handed to the caller's
 * callback as soon as it is decoded.  Any transport failure fails every
 * request not yet answered and closes the connection, as kjit_get does.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_int.h"
#include "util.h"

/* Reads at least this much at a time from the socket. */
#define RECV_CHUNK (64u << 10)

struct many {
	kjit_client *c;
	const kjit_request *reqs;
	unsigned flags;             /* KJ_GET_* for every request */
	kjit_result *res;
	int *codes;                 /* every request's outcome */
	int *user_codes;            /* the caller's array, or NULL */
	kjit_get_many_fn *on_ready;
	void *arg;
	struct kj__local_key *lk;
	size_t *idx;                /* k-th request sent -> its index */
	size_t *ends;               /* k-th frame ends at this offset of out */
	unsigned char *done;        /* by index */
	size_t n, n_sent;           /* requests; frames to send */
	uint32_t base;              /* id of frame 0 */
	struct kj__buf out;
	size_t out_off;
	struct kj__frames in;       /* replies as they come (common/frames.c) */
	size_t answered;
	int refused;                /* kjitd's refusal of the connection, or 0 */
};

static void deliver(struct many *m, size_t i, int code)
{
	if (code < 0)
		kj__get_set_error(m->c, code, &m->res[i]);
	m->codes[i] = code;
	m->done[i] = 1;
	if (m->user_codes)
		m->user_codes[i] = code;
	if (m->on_ready)
		m->on_ready(m->arg, i, code, &m->res[i]);
}

/* Fails every request sent and not answered with r (c->err says why). */
static void fail_rest(struct many *m, int r)
{
	for (size_t k = 0; k < m->n_sent; k++)
		if (!m->done[m->idx[k]])
			deliver(m, m->idx[k], r);
}

/* A REPLY of id 0: kjitd refused the connection (not allowed, too many
 * connections or bytes for the uid, shutting down) and closes it.  Its
 * code, with c->err holding its text; every request not answered meets it. */
static int take_refusal(struct many *m, const struct kj__frame_hdr *h, const uint8_t *p)
{
	struct kj__msg msg = { 0 };
	char *err = NULL;
	int32_t v = 0;

	if (kj__msg_decode(p, h->len, &msg) < 0 || kj__field_i32(kj__msg_get(&msg, KJ_F_CODE), &v) < 0 || v >= 0 ||
	    kj__field_strdup(kj__msg_get(&msg, KJ_F_ERROR), KJ_ERROR_WIRE_MAX, &err) < 0) {
		kj__msg_free(&msg);
		return KJIT_EPROTO;
	}
	m->refused = kj__client_fail(m->c, v, "%s", err && *err ? err : kjit_strerror(v));
	free(err);
	kj__msg_free(&msg);
	return m->refused;
}

/* Takes one whole reply frame (header h, body p) off the stream.  0, or a
 * transport code (the stream cannot be trusted). */
static int take_frame(struct many *m, const struct kj__frame_hdr *h, const uint8_t *p)
{
	struct kj__msg msg = { 0 };
	char *err = NULL;
	int32_t v = 0;

	if (h->type == KJ_MSG_REPLY && h->id == 0)
		return take_refusal(m, h, p);
	if (h->type != KJ_MSG_REPLY || h->id - m->base >= m->n_sent || m->done[m->idx[h->id - m->base]])
		return KJIT_EPROTO;
	size_t i = m->idx[h->id - m->base];
	int r = kj__msg_decode(p, h->len, &msg);
	if (r == 0)
		r = kj__field_i32(kj__msg_get(&msg, KJ_F_CODE), &v);
	if (r == 0 && v > 0)
		r = KJIT_EPROTO;
	if (r == 0)
		r = kj__field_strdup(kj__msg_get(&msg, KJ_F_ERROR), KJ_ERROR_WIRE_MAX, &err);
	if (r == 0) {
		m->c->err[0] = '\0';
		if (v < 0)
			kj__client_fail(m->c, v, "%s", err && *err ? err : kjit_strerror(v));
		deliver(m, i, kj__get_take_reply(m->c, &m->reqs[i], &msg, v, &m->lk[i], &m->res[i], NULL));
		m->answered++;
	}
	free(err);
	kj__msg_free(&msg);
	return r;
}

/* Takes every whole frame buffered. */
static int take_frames(struct many *m)
{
	struct kj__frame_hdr h;
	const uint8_t *body;
	int r;

	while ((r = kj__frames_next(&m->in, &h, &body)) == 1) {
		r = take_frame(m, &h, body);
		kj__frames_consume(&m->in);
		if (r < 0)
			return r;
	}
	return r;
}

/* Reads what the socket has.  0, or a transport code. */
static int read_some(struct many *m)
{
	kjit_client *c = m->c;
	uint8_t *p;
	size_t room;
	int r = kj__frames_space(&m->in, RECV_CHUNK, &p, &room);

	if (r < 0)
		return r;
	ssize_t k = recv(c->fd, p, room, MSG_DONTWAIT);
	if (k == 0)
		return KJIT_ECONNECT;
	if (k < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		c->sys_errno = errno;
		return errno == ECONNRESET ? KJIT_ECONNECT : KJIT_EIO;
	}
	kj__frames_wrote(&m->in, (size_t)k);
	return take_frames(m);
}

/* Sends what the window allows without waiting.  0, or a transport code. */
static int send_some(struct many *m)
{
	size_t window = m->answered + KJ_CLIENT_INFLIGHT_MAX;
	size_t limit = m->ends[(window < m->n_sent ? window : m->n_sent) - 1];

	while (m->out_off < limit) {
		ssize_t k = send(m->c->fd, m->out.p + m->out_off, limit - m->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k >= 0) {
			m->out_off += (size_t)k;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;
		m->c->sys_errno = errno;
		return errno == EPIPE || errno == ECONNRESET ? KJIT_ECONNECT : KJIT_EIO;
	}
	return 0;
}

/* The exchange: sends the frames in out and takes every reply. */
static int exchange(struct many *m)
{
	kjit_client *c = m->c;
	int r = 0;

	for (int attempt = 0;; attempt++) {
		int fresh = c->fd < 0;
		if (fresh && (r = kj__client_open_conn(c)) < 0)
			return r;
		r = send_some(m);
		/* A connection the daemon closed while idle (made before this call,
		 * whether or not it carried requests): once more, fresh (nothing of
		 * this call was sent on it). */
		if (r == KJIT_ECONNECT && m->out_off == 0 && !fresh && attempt == 0) {
			(void)read_some(m); /* a refusal waiting on it is the answer */
			if (m->refused)
				break;
			close(c->fd);
			c->fd = -1;
			continue;
		}
		break;
	}

	while (r == 0 && m->answered < m->n_sent) {
		size_t window = m->answered + KJ_CLIENT_INFLIGHT_MAX;
		size_t limit = m->ends[(window < m->n_sent ? window : m->n_sent) - 1];
		struct pollfd pf = { .fd = c->fd, .events = POLLIN | (m->out_off < limit ? POLLOUT : 0) };
		int pr = poll(&pf, 1, c->timeout_ms);
		if (pr == 0)
			r = KJIT_ETIMEDOUT;
		else if (pr < 0 && errno != EINTR) {
			c->sys_errno = errno;
			r = KJIT_EIO;
		} else if (pr > 0) {
			if (pf.revents & (POLLIN | POLLHUP | POLLERR))
				r = read_some(m);
			if (r == 0 && (pf.revents & POLLOUT))
				r = send_some(m);
		}
	}
	/* The daemon closed on us while we sent: a refusal may wait to be read. */
	if (r == KJIT_ECONNECT && !m->refused && c->fd >= 0)
		(void)read_some(m);
	if (m->refused)
		r = m->refused;
	if (r == 0 && kj__frames_begun(&m->in))
		r = KJIT_EPROTO; /* bytes nobody asked for */
	if (r == 0)
		c->used++;
	return r;
}

/* Encodes request i, or answers it locally.  0, or KJIT_ENOMEM. */
static int add_request(struct many *m, const kjit_request *req, size_t i)
{
	struct kj__buf b = { 0 };
	kjit_client *c = m->c;
	int r;

	c->err[0] = '\0';
	r = kj__get_prepare(c, req, m->flags, &b);
	if (r < 0) {
		deliver(m, i, r);
		kj__buf_free(&b);
		return 0;
	}
	kj__get_local_key(c, req, &b, &m->lk[i]);
	if (kj__get_local_answer(c, &m->lk[i], &m->res[i])) {
		deliver(m, i, 0);
		kj__buf_free(&b);
		return 0;
	}
	kj__client_set_id(&b, m->base + (uint32_t)m->n_sent);
	r = kj__buf_append(&m->out, b.p, b.len);
	kj__buf_free(&b);
	if (r < 0)
		return KJIT_ENOMEM;
	m->idx[m->n_sent] = i;
	m->ends[m->n_sent++] = m->out.len;
	return 0;
}

int kjit_get_many(kjit_client *c, const kjit_request *reqs, size_t n, kjit_result *results, int *codes,
		  kjit_get_many_fn *on_ready, void *arg)
{
	return kj__get_many_flags(c, reqs, n, 0, results, codes, on_ready, arg);
}

int kj__get_many_flags(kjit_client *c, const kjit_request *reqs, size_t n, unsigned flags, kjit_result *results,
		       int *codes, kjit_get_many_fn *on_ready, void *arg)
{
	struct many m = { .c = c, .reqs = reqs, .flags = flags, .res = results, .user_codes = codes, .on_ready = on_ready, .arg = arg, .n = n };
	int r = 0;

	if (c == NULL || (n > 0 && (reqs == NULL || results == NULL)) || n > UINT32_MAX / 2)
		return KJIT_EINVAL;
	memset(results, 0, n * sizeof *results);
	if (n == 0)
		return 0;
	m.codes = calloc(n, sizeof *m.codes);
	m.lk = calloc(n, sizeof *m.lk);
	m.idx = calloc(n, sizeof *m.idx);
	m.ends = calloc(n, sizeof *m.ends);
	m.done = calloc(n, 1);
	if (!m.codes || !m.lk || !m.idx || !m.ends || !m.done) {
		r = kj__client_fail(c, KJIT_ENOMEM, "out of memory for a batch of %zu requests", n);
		goto out;
	}
	/* Consecutive ids that do not wrap (0 is never an id). */
	if (c->next_id > UINT32_MAX - (uint32_t)n - 1)
		c->next_id = 1;
	m.base = c->next_id;
	for (size_t i = 0; i < n && r == 0; i++)
		r = add_request(&m, &reqs[i], i);
	if (r < 0) {
		kj__client_fail(c, r, "out of memory for a batch of %zu requests", n);
		goto out;
	}
	c->next_id += (uint32_t)m.n_sent;
	if (m.n_sent > 0 && (r = exchange(&m)) < 0) {
		if (m.refused && c->fd >= 0) { /* c->err holds kjitd's words */
			close(c->fd);
			c->fd = -1;
		} else if (c->fd >= 0)
			r = kj__client_transport_fail(c, r, "exchanging a batch of requests");
		fail_rest(&m, r);
	}
	r = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		r = m.codes[i];
out:
	/* Out of memory before anything was sent: what is not answered fails. */
	for (size_t i = 0; m.done && m.codes && i < n; i++)
		if (!m.done[i])
			deliver(&m, i, r < 0 ? r : KJIT_ENOMEM);
	kj__buf_free(&m.out);
	kj__frames_free(&m.in);
	free(m.codes);
	free(m.lk);
	free(m.idx);
	free(m.ends);
	free(m.done);
	return r;
}
