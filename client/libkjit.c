/* libkjit.c: the client handle and the request/reply exchange that every
 * call of kjit.h goes through (kjit_get lives in get.c, connecting and
 * autostart in connect.c).
 *
 * One exchange: give the request the next id, send it whole (send with
 * MSG_NOSIGNAL, so a dead daemon is EPIPE and never SIGPIPE, without
 * touching the process's signal dispositions), read one frame with the
 * client's timeout, check that it is a REPLY to that id, split it into
 * fields and read CODE.  Any transport failure leaves the stream out of
 * step, so the connection is closed and the next call connects again.  A
 * connection the daemon closed while it sat idle (a restart between two
 * calls) is replaced before sending, and a request whose sending fails on
 * a connection made before this call (whether or not it carried requests)
 * is sent once more on a fresh one, unless a refusal waits on the old one;
 * a request that was sent is never sent twice.  kjitd may refuse a
 * connection (not allowed, too many connections, busy) with one REPLY of
 * id 0 and close it; that reply is read even when the send failed because
 * the daemon had already closed, so the client shows its reason, not
 * "closed the connection".
 *
 * Every new connection is offered the shared hit table (ATTACH, unless
 * KJIT_FAST_PATH=0): the reply's first byte carries two descriptors by
 * SCM_RIGHTS, the table (mapped read-only) and this connection's hit
 * counters.  Anything unexpected there means no fast path, nothing more;
 * a refusal (id 0) there drops the connection and the request that
 * opened it meets the refusal itself.
 */
#include <fcntl.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* How long the ATTACH reply may take (the daemon answers it on its loop at
 * once; a daemon too busy for that gives no fast path this time). */
#define ATTACH_TIMEOUT_MS 5000
#define ATTACH_REPLY_MAX 4084 /* an ATTACH reply's body: CODE and SLOTS, or a refusal's one line */

#include "client_int.h"
#include "hittab.h"
#include "procmemo.h"
#include "util.h"

/* Longest administrative argument (a path plus a list of targets); kjitd
 * refuses longer (daemon/admin/admin.c). */
#define ADMIN_ARG_MAX 4096

/* Why this thread's last kjit_open failed, for kjit_last_error(NULL): a
 * failed open has no handle to carry its message.  Per thread, like errno;
 * the only state libkjit keeps outside a handle. */
static _Thread_local char open_err[KJ_CLIENT_ERR_MAX];
/* The errno behind it (kj__last_open_errno: the drop-ins count an
 * untrusted daemon apart from an absent one). */
static _Thread_local int open_errno;

int kj__client_fail(kjit_client *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	for (char *p = c->err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return code;
}

char *kj__one_line(const char *s)
{
	char *p = kj__strdup(s);
	for (char *q = p; q && *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = ' ';
	return p;
}

int kjit_open(kjit_client **out, const kjit_open_options *opt)
{
	kjit_client *c;
	int r;

	if (out == NULL)
		return KJIT_EINVAL;
	*out = NULL;
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return KJIT_ENOMEM;
	c->fd = -1;
	c->next_id = 1;
	c->timeout_ms = opt && opt->timeout_ms > 0 ? opt->timeout_ms : KJ_DEFAULT_TIMEOUT_MS;
	c->no_autostart = opt ? opt->no_autostart : 0;
	const char *env = getenv("KJIT_SOCKET");
	c->found = KJ_FOUND_GIVEN;
	if (opt && opt->socket_path && *opt->socket_path) {
		c->socket_path = kj__strdup(opt->socket_path);
	} else {
		c->found = env && *env ? KJ_FOUND_ENV : KJ_FOUND_USER;
		c->discover = c->found == KJ_FOUND_USER; /* discover.c's order */
		c->socket_path = kj__default_socket_path();
	}
	if (c->socket_path == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	r = kj__procmemo_new(&c->memo, kj__procmemo_enabled_by_env() ? KJ_PROCESS_MEMO_BYTES : 0);
	if (r < 0)
		goto out;
	const char *fp = getenv("KJIT_FAST_PATH");
	c->fast_path = !(fp && strcmp(fp, "0") == 0);
	r = kj__client_open_conn(c);
	if (r < 0)
		goto out;
	*out = c;
	c = NULL;
out:
	snprintf(open_err, sizeof open_err, "%s", r == 0 ? "" : c && c->err[0] ? c->err :
		 kjit_strerror(r));
	open_errno = r == 0 ? 0 : c ? c->sys_errno : ENOMEM;
	kjit_close(c);
	return r;
}

void kjit_close(kjit_client *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->socket_path);
	kj__frames_free(&c->in);
	kj__procmemo_free(c->memo);
	kj__hittab_reader_close(c->hits);
	kj__hitctr_free(c->ctr);
	free(c);
}

const char *kjit_last_error(const kjit_client *c)
{
	return c ? c->err : open_err;
}

int kj__last_open_errno(void)
{
	return open_errno;
}

const char *kjit_socket_path(const kjit_client *c, const char **how, const char **note)
{
	static const char *const words[] = {
		[KJ_FOUND_GIVEN] = "given", [KJ_FOUND_ENV] = "KJIT_SOCKET", [KJ_FOUND_USER] = "per-user",
		[KJ_FOUND_SYSTEM] = "system", [KJ_FOUND_RECORD] = "recorded by the cache's kjitd",
		[KJ_FOUND_STARTED] = "started",
	};

	if (c == NULL)
		return NULL;
	if (how)
		*how = c->found >= 0 && (size_t)c->found < sizeof words / sizeof words[0] ? words[c->found] : "";
	if (note)
		*note = c->note;
	return c->socket_path;
}

static void drop_connection(kjit_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Sends all of b, waiting at most the client's timeout for room each time.
 * 0, KJIT_ECONNECT (peer gone), KJIT_ETIMEDOUT or KJIT_EIO. */
int kj__client_send_all(kjit_client *c, const struct kj__buf *b)
{
	size_t off = 0;

	/* Try first: a request nearly always fits the socket buffer, so the
	 * common case is one system call; wait for room only when told to. */
	while (off < b->len) {
		ssize_t k = send(c->fd, b->p + off, b->len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k >= 0) {
			off += (size_t)k;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			c->sys_errno = errno;
			return errno == EPIPE || errno == ECONNRESET ? KJIT_ECONNECT : KJIT_EIO;
		}
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };
		int pr = poll(&p, 1, c->timeout_ms);
		if (pr == 0)
			return KJIT_ETIMEDOUT;
		if (pr < 0 && errno != EINTR) {
			c->sys_errno = errno;
			return KJIT_EIO;
		}
	}
	return 0;
}

int kj__client_begin(struct kj__buf *b, uint16_t type)
{
	return kj__msg_begin(b, type, 0);
}

/* Writes the id into a begun message (bytes 8..11 of the header). */
void kj__client_set_id(struct kj__buf *b, uint32_t id)
{
	for (int i = 0; i < 4; i++)
		b->p[8 + i] = (uint8_t)(id >> (8 * i));
}

int kj__client_transport_fail(kjit_client *c, int r, const char *what)
{
	drop_connection(c);
	switch (r) {
	case KJIT_ECONNECT:
		return kj__client_fail(c, r, "kjitd closed the connection while %s; "
				       "it may have crashed or been stopped: see its log and retry", what);
	case KJIT_ETIMEDOUT:
		return kj__client_fail(c, r, "kjitd did not answer within %d ms while %s; "
				       "it may be overloaded: retry, or raise the timeout", c->timeout_ms, what);
	case KJIT_ENOMEM:
		return kj__client_fail(c, r, "out of memory while %s", what);
	case KJIT_EIO:
		return kj__client_fail(c, KJIT_ECONNECT, "I/O error while %s: %s; retry",
				       what, strerror(c->sys_errno));
	default:
		return kj__client_fail(c, KJIT_EPROTO, "kjitd sent a malformed reply while %s; "
				       "client and daemon versions may differ: restart kjitd", what);
	}
}

/* ---- the shared hit table ---- */

static void detach(kjit_client *c)
{
	kj__hittab_reader_close(c->hits);
	kj__hitctr_free(c->ctr);
	c->hits = NULL;
	c->ctr = NULL;
}

/* Takes the descriptors of an SCM_RIGHTS message into fds (at most cap;
 * any more are closed).  Returns how many it stored (theirs to close); *bad
 * is set when there were more, or the control data was cut (MSG_CTRUNC) or
 * not what was expected. */
static int take_fds(struct msghdr *mh, int *fds, int cap, int *bad_out)
{
	int n = 0, bad = (mh->msg_flags & MSG_CTRUNC) != 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
			bad = 1;
			continue;
		}
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (n < cap)
				fds[n++] = fd;
			else {
				close(fd);
				bad = 1;
			}
		}
	}
	*bad_out = bad;
	return n;
}

/* Reads the ATTACH reply (small) into the frame reader f, with its
 * descriptors, never past that one frame.  0 once it is whole, or -1
 * (stream out of step: the caller drops it). */
static int attach_recv(kjit_client *c, struct kj__frames *f, int fds[2], int *nfds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct kj__frame_hdr h;
	const uint8_t *body;
	int r;

	*nfds = 0;
	while ((r = kj__frames_next(f, &h, &body)) == 0) {
		size_t need = kj__frames_need(f), room;
		uint8_t *p;
		if (kj__frames_space(f, need, &p, &room) < 0)
			return -1;
		struct iovec iov = { p, need };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b };
		ssize_t k = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (k > 0) {
			int bad;
			*nfds += take_fds(&mh, fds + *nfds, 2 - *nfds, &bad); /* the caller closes them */
			if (bad)
				return -1;
			kj__frames_wrote(f, (size_t)k);
			continue;
		}
		if (k == 0 || (errno != EINTR && errno != EAGAIN))
			return -1;
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		if (errno == EAGAIN && poll(&pf, 1, ATTACH_TIMEOUT_MS) == 0)
			return -1;
	}
	return r < 0 ? -1 : 0;
}

/* Asks for the hit table on the new connection; maps it when given.  0,
 * or the code of kjitd's refusal of the connection (a REPLY of id 0,
 * c->err holding its text; the connection is dropped). */
static int attach(kjit_client *c)
{
	struct kj__buf b = { 0 };
	struct kj__frame_hdr h;
	struct kj__msg m = { 0 };
	struct kj__frames fr = { .max = ATTACH_REPLY_MAX }; /* the reply, or a refusal's one line */
	const uint8_t *body = NULL;
	int fds[2] = { -1, -1 }, nfds = 0, drop = 0, r = 0;
	uint32_t id = c->next_id++, slots = 0;
	int32_t code = 0;
	char *err = NULL;

	if (c->next_id == 0)
		c->next_id = 1;
	/* A new connection after one that had a table: maybe a new daemon, whose
	 * generations say nothing about the old one's, so the memo starts over
	 * (its entries' numbers go on: an id never names two entries' bytes). */
	if (c->hits)
		kj__procmemo_clear(c->memo);
	detach(c);
	if (!c->fast_path || c->attach_refused)
		return 0;
	if (kj__client_begin(&b, KJ_MSG_ATTACH) < 0 || kj__msg_end(&b) < 0)
		goto out;
	kj__client_set_id(&b, id);
	/* A failed send may still leave a refusal to read (kjitd answers and
	 * closes a refused connection at once). */
	int sent = kj__client_send_all(c, &b);
	if (attach_recv(c, &fr, fds, &nfds) < 0 || kj__frames_next(&fr, &h, &body) != 1 ||
	    h.type != KJ_MSG_REPLY || (h.id != id && h.id != 0) || kj__msg_decode(body, h.len, &m) < 0 ||
	    kj__field_i32(kj__msg_get(&m, KJ_F_CODE), &code) < 0) {
		drop = 1;
		goto out;
	}
	if (h.id == 0) { /* the connection refused: that is the answer */
		drop = 1;
		if (kj__field_strdup(kj__msg_get(&m, KJ_F_ERROR), KJ_ERROR_WIRE_MAX, &err) < 0)
			err = NULL;
		r = kj__client_fail(c, code < 0 ? code : KJIT_EPROTO, "%s",
				    err && *err ? err : kjit_strerror(code < 0 ? code : KJIT_EPROTO));
		goto out;
	}
	if (sent < 0) {
		drop = 1;
		goto out;
	}
	if (code == KJIT_EPROTO) {
		/* A daemon from before ATTACH: it closes the connection. */
		c->attach_refused = 1;
		drop = 1;
		goto out;
	}
	if (code < 0 || nfds != 2 || kj__field_u32(kj__msg_get(&m, KJ_F_SLOTS), &slots) < 0)
		goto out;
	if (kj__hittab_reader_open(&c->hits, fds[0]) < 0 || kj__hittab_reader_slots(c->hits) != slots ||
	    kj__hitctr_map(&c->ctr, fds[1], slots) < 0)
		detach(c);
	else /* a table of its own in the ids of its answers (struct kj__sink) */
		kj__hittab_reader_set_id(c->hits, ++c->attaches);
out:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	free(err);
	kj__msg_free(&m);
	kj__frames_free(&fr);
	kj__buf_free(&b);
	if (drop) {
		detach(c);
		drop_connection(c);
	}
	return r;
}

int kj__client_open_conn(kjit_client *c)
{
	int r = kj__client_connect(c);

	if (r < 0)
		return r;
	if ((r = attach(c)) < 0)
		return r; /* refused: c->err says why */
	if (c->fd < 0) /* the daemon closed it (an old daemon): once more, plainly */
		r = kj__client_connect(c);
	return r;
}

/* Receives up to n bytes, waiting (poll) only when none are there yet.
 * The count, or KJIT_ETIMEDOUT / KJIT_ECONNECT / KJIT_EIO. */
static ssize_t recv_some(kjit_client *c, uint8_t *p, size_t n)
{
	for (;;) {
		ssize_t k = recv(c->fd, p, n, MSG_DONTWAIT);
		if (k > 0)
			return k;
		if (k == 0)
			return KJIT_ECONNECT;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			c->sys_errno = errno;
			return errno == ECONNRESET ? KJIT_ECONNECT : KJIT_EIO;
		}
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		int pr = poll(&pf, 1, c->timeout_ms);
		if (pr == 0)
			return KJIT_ETIMEDOUT;
		if (pr < 0 && errno != EINTR) {
			c->sys_errno = errno;
			return KJIT_EIO;
		}
	}
}

/* Reads one reply frame through the frame reader (common/frames.c): one
 * recv of up to KJ_CLIENT_SCRATCH usually brings it whole (header and
 * body); the rest of a larger one is read in place and its body handed
 * over without a copy.  Only one request is outstanding, so bytes past the
 * frame are a protocol error; any failure empties the reader, whose bytes
 * then mean nothing. */
static int read_reply(kjit_client *c, struct kj__frame_hdr *h, uint8_t **body)
{
	struct kj__frames *f = &c->in;
	int r;

	*body = NULL;
	if (kj__frames_begun(f) || f->err)
		kj__frames_free(f); /* left from a connection dropped mid-frame */
	while ((r = kj__frames_take(f, h, body)) == 0) {
		size_t need = kj__frames_need(f), room;
		uint8_t *p;
		if ((r = kj__frames_space(f, need > KJ_CLIENT_SCRATCH ? need : KJ_CLIENT_SCRATCH, &p, &room)) < 0)
			break;
		ssize_t k = recv_some(c, p, room);
		if (k < 0) {
			r = (int)k;
			break;
		}
		kj__frames_wrote(f, (size_t)k);
	}
	if (r > 0 && kj__frames_buffered(f) > 0) {
		free(*body);
		*body = NULL;
		r = KJIT_EPROTO;
	}
	if (r < 0)
		kj__frames_free(f);
	return r < 0 ? r : 0;
}

/* After the daemon closed a fresh connection: the reply it sent before
 * closing (a refusal, id 0, or an answer to id), if one is waiting.  1 with
 * *h and *body set, else 0. */
static int pending_reply(kjit_client *c, uint32_t id, struct kj__frame_hdr *h, uint8_t **body)
{
	if (c->fd < 0 || read_reply(c, h, body) < 0)
		return 0;
	if (h->type == KJ_MSG_REPLY && (h->id == 0 || h->id == id))
		return 1;
	free(*body);
	*body = NULL;
	return 0;
}

/* Sends req and reads the frame that answers it. */
static int exchange(kjit_client *c, struct kj__buf *req, uint8_t **body, struct kj__frame_hdr *h)
{
	uint32_t id = c->next_id++;
	int r;

	if (c->next_id == 0)
		c->next_id = 1;
	kj__client_set_id(req, id);
	/* A daemon that went away since the connection was made shows as EPIPE
	 * on the send (Unix sockets fail at once): reconnect and send again.
	 * The connection may have carried no request (kjit_open's, whose hits
	 * all came from the shared table or the memo): it is no fresher for it. */
	for (int attempt = 0;; attempt++) {
		int fresh = c->fd < 0;
		if (fresh && (r = kj__client_open_conn(c)) < 0)
			return r;
		r = kj__client_send_all(c, req);
		/* A refusal waiting on the connection is the answer, on an old
		 * connection as on a fresh one. */
		if (r == KJIT_ECONNECT && pending_reply(c, id, h, body)) {
			drop_connection(c);
			return 0;
		}
		if (r == KJIT_ECONNECT && !fresh && attempt == 0) {
			drop_connection(c);
			continue;
		}
		if (r < 0)
			return kj__client_transport_fail(c, r, "sending a request");
		break;
	}
	r = read_reply(c, h, body);
	if (r == KJIT_EPROTO && h->version != KJ_PROTO_VERSION) {
		drop_connection(c);
		return kj__client_fail(c, KJIT_EPROTO, "kjitd speaks protocol version %u, this client %u; "
				       "restart kjitd from the same kjit release", h->version, KJ_PROTO_VERSION);
	}
	if (r < 0)
		return kj__client_transport_fail(c, r, "reading the reply");
	if (h->type == KJ_MSG_REPLY && h->id == 0) {
		/* A refusal of the connection: its CODE and ERROR answer this. */
		drop_connection(c);
		return 0;
	}
	if (h->type != KJ_MSG_REPLY || h->id != id) {
		free(*body);
		*body = NULL;
		drop_connection(c);
		return kj__client_fail(c, KJIT_EPROTO, "kjitd answered request %u with message type %u "
				       "for request %u; restart kjitd", id, h->type, h->id);
	}
	c->used++;
	return 0;
}

int kj__client_call(kjit_client *c, struct kj__buf *req, uint8_t **body, struct kj__msg *m,
		    int *code)
{
	struct kj__frame_hdr h = { 0 };
	int32_t v;
	char *err = NULL;

	*body = NULL;
	m->n = 0;
	m->f = NULL;
	c->err[0] = '\0';
	int r = exchange(c, req, body, &h);
	if (r < 0)
		return r;
	r = kj__msg_decode(*body, h.len, m);
	if (r == 0)
		r = kj__field_i32(kj__msg_get(m, KJ_F_CODE), &v);
	if (r == 0 && v > 0)
		r = KJIT_EPROTO;
	if (r == 0)
		r = kj__field_strdup(kj__msg_get(m, KJ_F_ERROR), KJ_ERROR_WIRE_MAX, &err);
	if (r < 0) {
		kj__msg_free(m);
		free(*body);
		*body = NULL;
		return kj__client_transport_fail(c, r, "decoding the reply");
	}
	*code = v;
	if (v < 0)
		kj__client_fail(c, v, "%s", err && *err ? err : kjit_strerror(v));
	free(err);
	return 0;
}

/* Sends a request of type with optional CMD and ARG fields.  Returns the
 * daemon's CODE or a transport failure; when m is given, the reply is left
 * in *m and *body (NULL after a transport failure) for the caller. */
static int simple_call(kjit_client *c, uint16_t type, const char *cmd, const char *arg,
		       struct kj__msg *m, uint8_t **body)
{
	struct kj__buf b = { 0 };
	struct kj__msg lm = { 0 };
	uint8_t *lbody = NULL;
	int code = 0;

	int r = kj__client_begin(&b, type);
	if (r == 0 && cmd)
		r = kj__msg_put_str(&b, KJ_F_CMD, cmd);
	if (r == 0 && arg)
		r = kj__msg_put_str(&b, KJ_F_ARG, arg);
	if (r == 0)
		r = kj__msg_end(&b);
	if (r < 0) {
		kj__buf_free(&b);
		return kj__client_fail(c, r, "cannot build the request: %s", kjit_strerror(r));
	}
	r = kj__client_call(c, &b, m ? body : &lbody, m ? m : &lm, &code);
	kj__buf_free(&b);
	kj__msg_free(&lm);
	free(lbody);
	return r < 0 ? r : code;
}

int kjit_ping(kjit_client *c)
{
	if (c == NULL)
		return KJIT_EINVAL;
	return simple_call(c, KJ_MSG_PING, NULL, NULL, NULL, NULL);
}

int kjit_stop(kjit_client *c)
{
	if (c == NULL)
		return KJIT_EINVAL;
	int r = simple_call(c, KJ_MSG_STOP, NULL, NULL, NULL, NULL);
	if (r == 0) {
		/* The daemon exits: this connection is of no further use. */
		drop_connection(c);
	}
	return r;
}

static int arg_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

int kj__admin_data(kjit_client *c, const char *cmd, const char *arg, const void *data, size_t len)
{
	struct kj__buf b = { 0 };
	struct kj__msg m = { 0 };
	uint8_t *body = NULL;
	int code = 0;

	int r = kj__client_begin(&b, KJ_MSG_ADMIN);
	if (r == 0)
		r = kj__msg_put_str(&b, KJ_F_CMD, cmd);
	if (r == 0)
		r = kj__msg_put_str(&b, KJ_F_ARG, arg);
	if (r == 0)
		r = kj__msg_put(&b, KJ_F_DATA, data, len);
	if (r == 0)
		r = kj__msg_end(&b);
	if (r < 0) {
		kj__buf_free(&b);
		return kj__client_fail(c, r, "cannot build the request: %s", kjit_strerror(r));
	}
	r = kj__client_call(c, &b, &body, &m, &code);
	kj__buf_free(&b);
	kj__msg_free(&m);
	free(body);
	return r < 0 ? r : code;
}

int kjit_admin(kjit_client *c, const char *cmd, const char *arg, char **text, char **json)
{
	struct kj__msg m = { 0 };
	uint8_t *body = NULL;
	char *t = NULL, *j = NULL;

	if (text)
		*text = NULL;
	if (json)
		*json = NULL;
	if (c == NULL)
		return KJIT_EINVAL;
	if (cmd == NULL || !kj__name_ok(cmd))
		return kj__client_fail(c, KJIT_EINVAL, "invalid admin command \"%s\"", cmd ? cmd : "");
	if (arg && !arg_ok(arg, ADMIN_ARG_MAX))
		return kj__client_fail(c, KJIT_EINVAL, "invalid argument to admin command %s", cmd);
	int code = simple_call(c, KJ_MSG_ADMIN, cmd, arg, &m, &body);
	if (body == NULL)
		return code; /* transport failure or request not sent */
	int r = kj__field_strdup(kj__msg_get(&m, KJ_F_TEXT), KJ_FRAME_MAX, &t);
	if (r == 0)
		r = kj__field_strdup(kj__msg_get(&m, KJ_F_JSON), KJ_FRAME_MAX, &j);
	kj__msg_free(&m);
	free(body);
	if (r < 0) {
		free(t);
		free(j);
		return kj__client_transport_fail(c, r, "decoding the reply");
	}
	/* Even a failed command may carry a report (verify: what was corrupt). */
	if (text)
		*text = t;
	else
		free(t);
	if (json)
		*json = j;
	else
		free(j);
	return code;
}
