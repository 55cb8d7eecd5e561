/* redis-conn.c: one connection to Redis (hiredis async, on the loop) and
 * the operations queued on it: sending, replies, the handshake, outages,
 * reconnecting with backoff, and the per-operation deadline.
 *
 * Invariants:
 *  - Replies on a connection come in the order sent, so each keeps its
 *    pending ops in a FIFO (c->head .. c->tail).  Every op has an absolute
 *    deadline fixed when it is sent: its start plus its allowance (a GET:
 *    the lookup time; a lease op: timeout_ms; a publish: timeout_ms plus
 *    its size at KJ_REMOTE_SLOW_LINK_BPS, counted from the previous
 *    publish's deadline since PUT sends them one after another).  Bytes
 *    arriving are not progress: a reply trickling in is as late as a
 *    silent one.  The only extension is a GET's size term, applied once
 *    when the tick sees its reply's bulk length (capped; a length over
 *    the largest value drops the connection at once).  The tick drops a
 *    connection when any of its ops, or its connect (start plus
 *    timeout_ms), is past its deadline: its ops fail, the stream (perhaps
 *    mid-reply) is thrown away, and it connects again.  hiredis 0.14 has no
 *    timeouts of its own.
 *  - Every op's done function is called exactly once, with the reply, or
 *    with NULL when the connection fails or is dropped (then
 *    kj__remote_conn_failure says why), and the op is freed here after it.
 *  - A connection's reader holds at most buffer_cap unparsed bytes (one
 *    value, or Redis's pub/sub limit on SUB, which has no deadline): past
 *    it reading stops (c->overfull) and the tick drops c, so a server
 *    streaming an endless bulk costs bounded memory; redis-guard.c checks
 *    the replies themselves.
 *  - A reply being read is read on in the same turn of the loop while
 *    bytes come (at most KJ_REMOTE_READS_PER_TURN reads of hiredis's
 *    16 KiB, never past buffer_cap), hiredis's needless stop and start of
 *    the poll after each read is skipped, and the reader keeps its buffer
 *    between replies up to KJ_REMOTE_READER_KEEP: a 1 MiB value is not 64
 *    events, 128 epoll_ctl and a fresh 2 MiB buffer.  A command sent on
 *    an up connection is written in the same turn (write_now), the write
 *    event armed only for what the socket does not take.
 *  - A connection is dropped only from the tick or from close, never from
 *    inside a hiredis callback.  A lost one is S_DOWN and connects again
 *    after a backoff doubling from KJ_REMOTE_RETRY_MIN_MS to
 *    KJ_REMOTE_RETRY_MAX_MS, reset once it is up.
 *  - Up means the handshake was answered: AUTH and SELECT when the URL asks
 *    for them, then PING (CMD, PUT) or the SUBSCRIBE confirmation (SUB).
 *    An error reply during the handshake (AUTH refused) is kept in c->why
 *    and is the reason logged when the connect deadline drops it.
 *  - Host names are resolved with uv_getaddrinfo first, so hiredis only
 *    ever connects to an address and nothing blocks the loop.
 *  - An outage is one log line when it starts and one when all three
 *    connections are up again; an error reply is logged once per outage,
 *    never once per request.
 */
#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_limits.h"
#include "kj_types.h"
#include "redis-int.h"
#include "util.h"

/* hiredis reads 16 KiB at a time; a bulk with more than this left to come
 * is read straight into the reader's buffer instead (read_bulk_direct). */
#define DIRECT_MIN (16u << 10)

struct op *kj__remote_op_new(struct conn *c, kj__remote_done_fn *done)
{
	struct op *o = calloc(1, sizeof *o);
	if (o == NULL)
		return NULL;
	o->c = c;
	o->done = done;
	o->start_us = kj__now_us();
	o->allow_us = c->r->timeout_us;
	o->sized = 1;
	return o;
}

static void op_unlink(struct op *o)
{
	struct conn *c = o->c;
	struct op **pp = &c->head, *prev = NULL;

	while (*pp && *pp != o) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp == NULL)
		return;
	*pp = o->next;
	if (c->tail == o)
		c->tail = prev;
}

/* Every reply (NULL: the connection failed or was dropped) comes here
 * once, in the order sent; the op's done function handles it. */
static void redis_reply_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct op *o = priv;
	struct conn *c = o->c;

	op_unlink(o);
	if (reply == NULL && !c->r->closing && c->drop_code == 0)
		c->r->st.errors++;
	o->done(o, ac, reply);
	free(o);
}

static void guarded_events(redisLibuvEvents *p, int add, int del);
static int reply_bulk_len(const struct conn *c, long long *len, size_t *hdr);

/* The command hiredis just queued on an up c, written now rather than on
 * the next turn's write event (which cost a turn of the loop and two
 * stops and starts of the poll, four epoll_ctl, per GET): what the
 * socket does not take, or an error, is left to the write event as
 * before, so a failure is still handled from the poll, never here. */
static void write_now(struct conn *c)
{
	int done = 0;

	if (!c->want_write)
		return;
	c->want_write = 0;
	if (redisBufferWrite(&c->ac->c, &done) != REDIS_OK || !done)
		guarded_events(c->ac->ev.data, UV_WRITABLE, 0);
}

int kj__remote_op_send(struct op *o, int argc, const char **argv, const size_t *lens, const char *resp,
		       size_t resp_len)
{
	struct conn *c = o->c;
	int rc;

	if (c->ac == NULL) {
		free(o);
		return KJIT_ECONNECT;
	}
	uint64_t from = o->start_us;
	if (c->role == C_PUT && c->tail && c->tail->deadline_us > from)
		from = c->tail->deadline_us; /* publishes go one after another */
	o->deadline_us = from + o->allow_us;
	o->sized = o->per_mib_us == 0;
	o->next = NULL;
	if (c->tail)
		c->tail->next = o;
	else
		c->head = o;
	c->tail = o;
	c->direct = c->state == S_UP;
	c->want_write = 0;
	if (resp)
		rc = redisAsyncFormattedCommand(c->ac, redis_reply_cb, o, resp, resp_len);
	else
		rc = redisAsyncCommandArgv(c->ac, redis_reply_cb, o, argc, argv, lens);
	c->direct = 0;
	if (rc != REDIS_OK) {
		op_unlink(o);
		free(o);
		return KJIT_ECONNECT;
	}
	write_now(c);
	kj__remote_tick_ensure(c->r);
	return 0;
}

static int send_argv(struct conn *c, kj__remote_done_fn *done, int argc, const char **argv, const size_t *lens)
{
	struct op *o = kj__remote_op_new(c, done);
	return o ? kj__remote_op_send(o, argc, argv, lens, NULL, 0) : KJIT_ENOMEM;
}

int kj__remote_conn_failure(const struct conn *c)
{
	return c->drop_code ? c->drop_code : KJIT_ECONNECT;
}

static void outage_begin(struct kj__redis *r, const char *why)
{
	r->st.errors++;
	if (r->warned)
		return;
	r->warned = 1;
	r->said_error = 0;
	r->st.outages++;
	r->down_since_us = kj__now_us();
	kj__remote_say(r, "remote %s unreachable (%s); serving from the local cache, retrying in the background",
		       r->describe, why);
}

static void conn_schedule_retry(struct conn *c)
{
	c->state = S_DOWN;
	c->ac = NULL;
	c->backoff_ms = c->backoff_ms == 0 ? KJ_REMOTE_RETRY_MIN_MS
					   : c->backoff_ms * 2 > KJ_REMOTE_RETRY_MAX_MS ? KJ_REMOTE_RETRY_MAX_MS
					   : c->backoff_ms * 2;
	c->retry_at_us = kj__now_us() + (uint64_t)c->backoff_ms * 1000;
	kj__remote_tick_ensure(c->r);
}

static void conn_up(struct conn *c)
{
	struct kj__redis *r = c->r;

	c->state = S_UP;
	c->backoff_ms = 0;
	if (c->role == C_CMD)
		r->st.up = 1;
	for (int i = 0; i < C_COUNT; i++)
		if (r->conns[i].state != S_UP)
			return;
	if (r->warned) {
		r->warned = 0;
		r->st.reconnects++;
		kj__remote_say(r, "remote %s reachable again after %.1f s", r->describe,
			       (double)(kj__now_us() - r->down_since_us) / 1e6);
	}
}

static void conn_lost(struct conn *c, const char *why)
{
	if (c->role == C_CMD)
		c->r->st.up = 0;
	if (!c->r->closing)
		outage_begin(c->r, why);
	conn_schedule_retry(c);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct conn *c = ac->data;
	if (c == NULL || status == REDIS_OK)
		return;
	/* hiredis frees ac after this; pending ops already got NULL replies */
	c->ac = NULL;
	conn_lost(c, ac->errstr[0] ? ac->errstr : "connect failed");
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct conn *c = ac->data;
	if (c == NULL || c->ac == NULL)
		return; /* we dropped it ourselves and already know */
	c->ac = NULL;
	if (c->refused)
		c->r->st.errors++;
	conn_lost(c, c->refused           ? c->refused
		     : status == REDIS_OK ? "connection closed"
		     : ac->errstr[0]      ? ac->errstr
					  : "I/O error");
}

void kj__remote_conn_drop(struct conn *c, int code, const char *why)
{
	redisAsyncContext *ac = c->ac;

	if (ac == NULL)
		return;
	c->drop_code = code;
	c->ac = NULL;
	c->overfull = 0;
	c->state = S_DOWN;
	if (c->role == C_CMD)
		c->r->st.up = 0;
	redisAsyncFree(ac);   /* calls the pending callbacks with NULL, then on_disconnect */
	c->drop_code = 0;
	if (!c->r->closing)
		conn_lost(c, why);
}

/* The PING that ends the handshake of CMD and PUT. */
static void hello_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct conn *c = o->c;

	if (rep && rep->type != REDIS_REPLY_ERROR && c->ac == ac)
		conn_up(c);
	else if (rep && c->why[0] == '\0')
		snprintf(c->why, sizeof c->why, "%.*s", (int)rep->len, rep->str);
}

/* AUTH, SELECT, PEXPIRE, release scripts: only an error reply matters. */
static void misc_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct conn *c = o->c;
	struct kj__redis *r = c->r;

	if (rep && rep->type == REDIS_REPLY_ERROR) {
		r->st.errors++;
		if (c->state == S_CONNECTING) {
			if (c->why[0] == '\0')
				snprintf(c->why, sizeof c->why, "%.*s", (int)rep->len, rep->str);
		} else if (!r->said_error) {
			r->said_error = 1;   /* once until the next outage: not per request */
			kj__remote_say(r, "remote %s answered an error: %.*s", r->describe, (int)rep->len, rep->str);
		}
	}
}

int kj__remote_send(struct conn *c, int argc, const char **argv)
{
	return send_argv(c, misc_done, argc, argv, NULL);
}

/* SUB's one callback: the SUBSCRIBE confirmation marks SUB up; each
 * message names a key just published somewhere in the fleet. */
static void on_sub_message(redisAsyncContext *ac, void *reply, void *priv)
{
	struct kj__redis *r = priv;
	struct conn *c = &r->conns[C_SUB];
	redisReply *rep = reply;

	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements < 3)
		return;
	const redisReply *kind = rep->element[0], *msg = rep->element[2];
	if (kind->type != REDIS_REPLY_STRING)
		return;
	if (strcmp(kind->str, "subscribe") == 0 && c->ac == ac) {
		conn_up(c);
		return;
	}
	if (strcmp(kind->str, "message") != 0 || msg->type != REDIS_REPLY_STRING || msg->len != KJ_SHA256_HEX_LEN)
		return;
	kj__remote_lease_wake(r, msg->str);
}

static void conn_hello(struct conn *c)
{
	struct kj__redis *r = c->r;
	char db[16];
	int rc = 0;

	if (r->url.password) {
		const char *av[3] = { "AUTH", r->url.user ? r->url.user : r->url.password, r->url.password };
		rc = send_argv(c, misc_done, r->url.user ? 3 : 2, av, NULL);
	}
	if (rc == 0 && r->url.db) {
		snprintf(db, sizeof db, "%d", r->url.db);
		const char *av[2] = { "SELECT", db };
		rc = send_argv(c, misc_done, 2, av, NULL);
	}
	if (rc == 0 && c->role == C_SUB) {
		/* the subscribe callback marks SUB up on its confirmation */
		if (redisAsyncCommand(c->ac, on_sub_message, r, "SUBSCRIBE %s", r->channel) != REDIS_OK)
			rc = KJIT_ECONNECT;
	} else if (rc == 0) {
		const char *av[1] = { "PING" };
		rc = send_argv(c, hello_done, 1, av, NULL);
	}
	if (rc < 0)
		c->state = S_CONNECTING; /* the tick's connect deadline drops it */
}

/* The most bytes c's reader may hold unparsed: one reply as large as any
 * value (CMD, PUT), or as much as Redis itself lets pile up for a
 * subscriber (SUB), plus slack for the read in progress. */
static uint64_t value_cap(const struct kj__redis *r)
{
	return r->max_object + KJ_REMOTE_META_MAX + KJ_REMOTE_ENTRIES_MAX + KJ_LOWERED_MAX + KJ_REMOTE_LOG_MAX +
	       KJ_FRAME_MAX + 256;
}

static uint64_t buffer_cap(const struct conn *c)
{
	return (c->role == C_SUB ? KJ_REMOTE_SUB_BUF_MAX : value_cap(c->r)) + KJ_REMOTE_READ_SLACK;
}


/* Reads the rest of the bulk reply being read on c straight into the
 * reader's buffer, made large enough for all of it at once: one read per
 * what the socket holds, rather than hiredis's 16 KiB reads into its stack,
 * each copied on and the buffer grown as the value comes (issue 35: a 1 MiB
 * value was 64 reads and copies).  Only for a bulk no larger than any value
 * (a larger one is the tick's to drop, size_head), so a hostile server's
 * header alone reserves at most one value's worth, the bound a connection
 * had anyway (past 4 MiB malloc maps it, and pages come only as bytes
 * do; the deadline drops a bulk that never comes); what a read finds
 * beyond EAGAIN (the end of the stream, an error) is left to hiredis's own
 * read right after, which meets it again. */
static void read_bulk_direct(struct conn *c)
{
	redisReader *rd = c->ac ? c->ac->c.reader : NULL;
	long long len;
	size_t hdr;

	if (rd == NULL || c->role == C_SUB || !reply_bulk_len(c, &len, &hdr) || len <= 0 ||
	    (unsigned long long)len > value_cap(c->r))
		return;
	size_t need = hdr + (size_t)len + 2, have = rd->len - rd->pos;
	if (have >= need || need - have <= DIRECT_MIN)
		return;
	sds b = sdsMakeRoomFor(rd->buf, need - have);
	if (b == NULL)
		return; /* hiredis's read goes on as before */
	rd->buf = b;
	while (have < need) {
		ssize_t n = read(c->ac->c.fd, rd->buf + rd->len, need - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sdsIncrLen(rd->buf, (int)n);
		rd->len += (size_t)n;
		have += (size_t)n;
	}
}

/* The libuv adapter's poll callback, then a look at what the reader holds:
 * over buffer_cap (a bulk larger than any value, streamed on a connection
 * whose tick is idle, or on SUB, which has no deadline), reading stops and
 * the tick drops c, so memory stays bounded whatever the server sends. */
static void guarded_poll(uv_poll_t *h, int status, int events)
{
	redisLibuvEvents *p = h->data;
	redisAsyncContext *ac = p->context;
	size_t before = ac && ac->c.reader ? ac->c.reader->len : 0;

	redisLibuvPoll(h, status, events);
	/* hiredis reads 16 KiB per event: while a reply is still coming and
	 * each read brought bytes, read on in this turn of the loop rather
	 * than one poll (and one event) per 16 KiB (a 1 MiB value: 64) */
	for (unsigned i = 0; status == 0 && (events & UV_READABLE) && i < KJ_REMOTE_READS_PER_TURN; i++) {
		const redisReader *rd = ac && p->context == ac ? ac->c.reader : NULL;
		struct conn *cc = rd ? ac->data : NULL;
		if (cc == NULL || cc->ac != ac || cc->overfull || rd->len <= before || rd->len == rd->pos ||
		    rd->len - rd->pos > buffer_cap(cc))
			break;
		before = rd->len;
		read_bulk_direct(cc);
		redisAsyncHandleRead(ac);
	}
	ac = p->context; /* NULL: hiredis let go of it */
	struct conn *c = ac ? ac->data : NULL;
	if (c == NULL || c->ac != ac || ac->c.reader == NULL)
		return;
	if (ac->c.reader->len - ac->c.reader->pos > buffer_cap(c)) {
		c->overfull = 1;
		guarded_events(p, 0, UV_READABLE);
		kj__remote_tick_ensure(c->r);
	}
}

/* The adapter's event switches, with guarded_poll as the callback (and no
 * reading once overfull). */
static void guarded_events(redisLibuvEvents *p, int add, int del)
{
	redisAsyncContext *ac = p->context;
	const struct conn *c = ac ? ac->data : NULL;
	int was = p->events;

	p->events = (p->events | add) & ~del;
	if (c && c->overfull)
		p->events &= ~UV_READABLE;
	if (p->events && p->events == was && uv_is_active((uv_handle_t *)&p->handle))
		return; /* hiredis asks again after every read: no stop and start (two epoll_ctl) for nothing */
	if (p->events)
		uv_poll_start(&p->handle, p->events, guarded_poll);
	else
		uv_poll_stop(&p->handle);
}

static void guarded_add_read(void *p)
{
	guarded_events(p, UV_READABLE, 0);
}

static void guarded_del_read(void *p)
{
	guarded_events(p, 0, UV_READABLE);
}

static void guarded_add_write(void *p)
{
	redisAsyncContext *ac = ((redisLibuvEvents *)p)->context;
	struct conn *c = ac ? ac->data : NULL;

	if (c && c->ac == ac && c->direct) { /* kj__remote_op_send writes it at once */
		c->want_write = 1;
		return;
	}
	guarded_events(p, UV_WRITABLE, 0);
}

static void guarded_del_write(void *p)
{
	guarded_events(p, 0, UV_WRITABLE);
}

static void conn_start_at(struct conn *c, const char *ip)
{
	struct kj__redis *r = c->r;
	redisAsyncContext *ac = ip ? redisAsyncConnect(ip, r->url.port) : redisAsyncConnectUnix(r->url.path);

	if (ac == NULL || ac->err) {
		const char *why = ac && ac->errstr[0] ? ac->errstr : "out of memory";
		char msg[256];
		snprintf(msg, sizeof msg, "%s", why);
		if (ac)
			redisAsyncFree(ac);
		conn_lost(c, msg);
		return;
	}
	ac->data = c;
	if (redisLibuvAttach(ac, r->loop) != REDIS_OK) {
		redisAsyncFree(ac);
		conn_lost(c, "cannot attach to the loop");
		return;
	}
	kj__remote_guard_attach(c, ac);
	ac->c.reader->maxbuf = KJ_REMOTE_READER_KEEP; /* hiredis frees a buffer over 16 KiB once empty */
	ac->ev.addRead = guarded_add_read;
	ac->ev.delRead = guarded_del_read;
	ac->ev.addWrite = guarded_add_write;
	ac->ev.delWrite = guarded_del_write;
	c->overfull = 0;
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	c->ac = ac;
	c->state = S_CONNECTING;
	c->since_us = kj__now_us();
	c->why[0] = '\0';
	conn_hello(c);
	kj__remote_tick_ensure(r);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct conn *c = req->data;
	char ip[64] = "";

	c->gai_busy = 0;
	if (status == 0 && res)
		uv_ip_name(res->ai_addr, ip, sizeof ip);
	uv_freeaddrinfo(res);
	if (c->r->closing) {
		c->state = S_DOWN;
		kj__remote_free(c->r);
		return;
	}
	if (ip[0] == '\0') {
		conn_lost(c, status == 0 ? "no address" : uv_strerror(status));
		return;
	}
	conn_start_at(c, ip);
}

void kj__remote_conn_connect(struct conn *c)
{
	struct kj__redis *r = c->r;
	struct addrinfo hints;

	if (r->url.path) {
		conn_start_at(c, NULL);
		return;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	c->gai.data = c;
	c->state = S_RESOLVING;
	c->since_us = kj__now_us();
	int rc = uv_getaddrinfo(r->loop, &c->gai, on_resolved, r->url.host, NULL, &hints);
	if (rc < 0) {
		conn_lost(c, uv_strerror(rc));
		return;
	}
	c->gai_busy = 1;
}

int kj__remote_conn_busy(const struct conn *c)
{
	return c->head || c->overfull || c->state == S_CONNECTING || c->state == S_RESOLVING || c->state == S_DOWN;
}

/* The bulk length of the reply being read on c, once its header is in the
 * reader's buffer: 1 with *len, else 0 (not yet, or not a bulk). */
static int reply_bulk_len(const struct conn *c, long long *len, size_t *hdr)
{
	const redisReader *rd = c->ac ? c->ac->c.reader : NULL;

	if (rd == NULL || rd->buf == NULL || rd->pos >= rd->len)
		return 0;
	const char *p = rd->buf + rd->pos, *end = rd->buf + rd->len;
	if (rd->ridx >= 0 && rd->rstack[rd->ridx].type == REDIS_REPLY_STRING && *p != '$')
		; /* hiredis took the type byte already */
	else if (*p == '$')
		p++;
	else
		return 0;
	long long v = 0;
	int digits = 0, neg = p < end && *p == '-';
	for (p += neg; p < end && *p >= '0' && *p <= '9' && digits < 19; p++, digits++)
		v = v * 10 + (*p - '0');
	if (p >= end || *p != '\r' || digits == 0)
		return 0;
	*len = neg ? -v : v;
	*hdr = (size_t)(p + 2 - (rd->buf + rd->pos)); /* the bulk's bytes start after its line's CRLF */
	return 1;
}

/* Past the head GET's bulk length: its size term (capped), or a drop when
 * no value can be that large.  0, or KJIT_ETOOBIG. */
static int size_head(struct conn *c)
{
	struct op *o = c->head;
	long long len;
	size_t hdr;

	if (o == NULL || o->sized || !reply_bulk_len(c, &len, &hdr))
		return 0;
	o->sized = 1;
	if (len <= 0)
		return 0;
	if ((unsigned long long)len > value_cap(c->r))
		return KJIT_ETOOBIG;
	uint64_t mib = ((uint64_t)len + (1u << 20) - 1) >> 20;
	o->deadline_us += mib * o->per_mib_us;
	return 0;
}

void kj__remote_conn_tick(struct conn *c, uint64_t now)
{
	if (c->state == S_DOWN) {
		if (now >= c->retry_at_us && !c->r->closing)
			kj__remote_conn_connect(c);
		return;
	}
	if (c->overfull || size_head(c) < 0) {
		c->r->st.errors++;
		kj__remote_conn_drop(c, KJIT_EPROTO, c->role == C_SUB ? "a pub/sub message larger than any"
									: "a reply larger than any value");
		return;
	}
	int late = c->state == S_CONNECTING && now - c->since_us > c->r->timeout_us;
	for (const struct op *o = c->head; !late && o; o = o->next)
		late = now > o->deadline_us;
	if (late) {
		char why[160];
		snprintf(why, sizeof why, "%s", c->why[0] ? c->why
				: c->state == S_CONNECTING ? "connect timed out" : "operation timed out");
		if (c->why[0] == '\0')
			c->r->st.timeouts++;
		kj__remote_conn_drop(c, KJIT_ETIMEDOUT, why);
	}
}
