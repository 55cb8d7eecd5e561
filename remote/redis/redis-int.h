/* redis-int.h: what the files of the Redis backend share and nothing outside
 * them may include (the rest of the daemon sees only remote/remote.h): the handle,
 * its three connections, the operations queued on them, the leases, and
 * the internal calls each file offers the others.
 *
 * Who owns what (each file opens with the invariants it keeps):
 *   redis.c         the handle: options, lifetime, the one timer that
 *                   drives connections and leases, stats, logging; the
 *                   backend row (kj__remote_redis)
 *   redis-url.c     the --remote URL and its password-free description
 *   redis-conn.c    struct conn and struct op: a connection, the FIFO of
 *                   operations on it, the handshake, outages, reconnect
 *                   with backoff, the per-operation absolute deadline
 *   redis-object.c  lookup and publish of the tier's values (their layout
 *                   and MAC are remote/remote-value.c's)
 *   redis-lease.c   struct kj__redis_lease and r->leases: single-flight
 *                   across machines (acquire, renew, wait, take over)
 *   redis-guard.c   the reply objects a hostile server may make hiredis
 *                   build (c->fns)
 *
 * Everything runs on the daemon's libuv loop, on one thread.  The handle
 * owns its connections, ops and leases; a lease is handed to the caller
 * with KJ_LEASE_OWNED and comes back through kj__redis_publish or
 * kj__redis_lease_release.  An op that refers to a lease holds a reference
 * (l->refs); the lease is freed at zero.
 */
#ifndef KJ_REDIS_INT_H
#define KJ_REDIS_INT_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kj_limits.h"
#include "backend.h"
#include "remote.h"
#include "sha.h"

/* A parsed --remote URL:
 *   redis://[[user:]password@]host[:port][/db]   (host may be [v6addr])
 *   unix://[[user:]password@]/path/redis.sock[?db=N]
 * user and password are percent-decoded.  rediss:// is refused: Debian 12's
 * hiredis 0.14 has no TLS. */
struct kj__redis_url {
	char *host;      /* NULL for unix:// */
	char *path;      /* NULL for redis:// */
	char *user;      /* NULL: none (AUTH password alone, or no AUTH) */
	char *password;  /* NULL: no AUTH */
	int port;        /* 6379 unless given */
	int db;          /* 0 unless given: SELECT db when not 0 */
};
/* Parses s into u (owned strings; free with kj__redis_url_free).  0, or
 * KJIT_EINVAL with a one-line reason in err; KJIT_ENOMEM. */
int kj__redis_url_parse(const char *s, struct kj__redis_url *u, char *err, size_t errlen);
void kj__redis_url_free(struct kj__redis_url *u);

/* The backend's calls (remote.h's, on a struct kj__redis; redis.c puts
 * them in the kj__remote_redis row). */
struct kj__redis;
struct kj__redis_lease;
typedef kj__remote_be_lease_cb kj__redis_lease_cb;
int kj__redis_new(uv_loop_t *loop, const struct kj__remote_options *opt, struct kj__redis **out, char *err,
		  size_t errlen);
void kj__redis_close(struct kj__redis *r);
int kj__redis_is_up(const struct kj__redis *r);
const char *kj__redis_describe(const struct kj__redis *r);
void kj__redis_lookup(struct kj__redis *r, const char *key, kj__remote_be_lookup_cb cb, void *arg);
int kj__redis_publish(struct kj__redis *r, const char *key, const struct kj__remote_object *v,
		      struct kj__redis_lease *lease);
void kj__redis_lease(struct kj__redis *r, const char *key, kj__redis_lease_cb cb, void *arg);
void kj__redis_lease_release(struct kj__redis_lease *l);
void kj__redis_note_forged(struct kj__redis *r);
void kj__redis_stats(const struct kj__redis *r, struct kj__remote_stats *s);

/* The connections: CMD carries lookups and leases (the request path), PUT
 * the publishes (a big SET never delays a lookup), SUB one SUBSCRIBE on
 * <prefix>published, whose messages name the key just published. */
enum { C_CMD, C_PUT, C_SUB, C_COUNT };
enum { S_DOWN, S_RESOLVING, S_CONNECTING, S_UP };
enum { L_ACQUIRING, L_OWNED, L_WAITING, L_CHECKING, L_DONE };

struct op;

/* What handles an op's reply: rep is NULL when the connection failed or was
 * dropped (c->drop_code then says why, 0: failed by itself).  Called once,
 * on the loop; the op is freed after it returns. */
typedef void kj__remote_done_fn(struct op *o, redisAsyncContext *ac, const redisReply *rep);

struct conn {
	struct kj__redis *r;
	int role;
	int state;
	redisAsyncContext *ac;
	struct op *head, *tail;
	uint64_t since_us;          /* when the connect (resolve, connect, handshake) started */
	uint64_t retry_at_us;       /* when S_DOWN: next connect attempt */
	unsigned backoff_ms;
	int drop_code;              /* why pending ops fail while we drop */
	uv_getaddrinfo_t gai;
	int gai_busy;
	char why[128];              /* an error reply during the handshake (AUTH refused) */
	redisReplyObjectFunctions fns; /* the reader's: redis-guard.c's checks, then dflt's */
	redisReplyObjectFunctions *dflt; /* hiredis's own object functions */
	const char *refused;        /* why redis-guard.c refused a reply (the drop's reason) */
	int overfull;               /* the reader holds more than any reply: reading stopped, the tick drops c */
	int direct;                 /* kj__remote_op_send is queuing a command on an up c: written at once */
	int want_write;             /* hiredis asked for the write event meanwhile (not armed yet) */
};

struct op {
	struct op *next;
	struct conn *c;
	kj__remote_done_fn *done;
	uint64_t start_us;
	uint64_t allow_us;          /* its time, set before sending: the deadline is start (or, on
				     * PUT, the previous op's deadline) plus this */
	uint64_t deadline_us;       /* absolute: past it the connection is dropped, the op failed */
	uint64_t per_mib_us;        /* a GET: added per MiB once its reply's length is read */
	int sized;                  /* the size term was applied (or the length is not a bulk) */
	char rkey[KJ_NAME_MAX + KJ_SHA256_HEX_LEN + 1]; /* a GET's Redis key (the HMAC covers it) */
	size_t bytes;
	kj__remote_be_lookup_cb cb;
	void *arg;
	struct kj__redis_lease *lease;
};

struct kj__redis_lease {
	struct kj__redis *r;
	struct kj__redis_lease *prev, *next;
	char key[KJ_SHA256_HEX_LEN + 1];
	int state;
	int refs;                   /* 1 for the list, 1 per op in flight */
	kj__redis_lease_cb cb;
	void *arg;
	uint64_t started_us, next_us; /* owned: next renewal; waiting: next poll */
	int renewing;
	int woken;                 /* a publish message came while checking */
};

struct kj__redis {
	uv_loop_t *loop;
	uv_timer_t tick;
	struct kj__redis_url url;
	char *describe;
	char *prefix;
	char *id;
	char *channel;
	int mode;
	uint64_t timeout_us, ttl_ms, max_object;
	uint64_t lookup_us, lookup_per_mib_us; /* a GET's deadline and its size term */
	uint8_t *secret;            /* fleet secret (NULL: none); wiped at free */
	size_t secret_len;
	struct kj__remote_algs *algs; /* HMAC and AES-256-GCM fetched once at open, or NULL (looked up per value) */
	unsigned lease_ms, poll_ms, wait_max_ms;
	void (*log)(void *, const char *);
	void *log_arg;
	struct conn conns[C_COUNT];
	struct kj__redis_lease *leases;
	uint64_t put_bytes;         /* publishes not yet acknowledged */
	int warned;                 /* an outage was reported and has not ended */
	int said_error;             /* an error reply was logged since the last outage */
	uint64_t down_since_us;
	int closing;
	int tick_open;              /* the timer handle is not closed yet */
	struct kj__remote_stats st;
};

/* redis.c */
/* One warning line through the log function given at creation (stderr
 * without one). */
void kj__remote_say(struct kj__redis *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes msg into err; returns KJIT_EINVAL. */
int kj__remote_seterr(char *err, size_t errlen, const char *msg);
/* <prefix><what><key>, allocated; NULL: no memory. */
char *kj__remote_key(const struct kj__redis *r, const char *what, const char *key);
/* Starts the timer unless it runs or the handle is closing: call after
 * queuing an op, losing a connection or adding a lease. */
void kj__remote_tick_ensure(struct kj__redis *r);
/* Frees r once closed and nothing of it is pending (the timer closed, no
 * name resolution in flight); else does nothing and is called again by
 * the last of them. */
void kj__remote_free(struct kj__redis *r);

/* redis-url.c */
/* "redis://host:port/db" or "unix:///path?db=N", never the userinfo.
 * Allocated; NULL: no memory. */
char *kj__redis_url_describe(const struct kj__redis_url *u);

/* redis-conn.c */
/* A new op on c whose reply goes to done (its time starts now); NULL: no
 * memory.  Fill cb, arg, lease, bytes, allow_us, then kj__remote_op_send. */
struct op *kj__remote_op_new(struct conn *c, kj__remote_done_fn *done);
/* Queues o's command (argv, or resp: a preformatted RESP buffer) on its
 * connection; o is consumed either way.  0, or KJIT_ECONNECT (o freed,
 * done not called). */
int kj__remote_op_send(struct op *o, int argc, const char **argv, const size_t *lens, const char *resp,
		       size_t resp_len);
/* Fire and forget (PEXPIRE, a release script): only an error reply
 * counts, and is logged once per outage.  0, KJIT_ENOMEM, KJIT_ECONNECT. */
int kj__remote_send(struct conn *c, int argc, const char **argv);
/* Why an op on c got no reply: the code it was dropped with, else
 * KJIT_ECONNECT. */
int kj__remote_conn_failure(const struct conn *c);
/* Resolves (redis://) and connects c in the background; a failure is an
 * outage and schedules a retry. */
void kj__remote_conn_connect(struct conn *c);
/* Drops c (from the tick or close only, never inside a hiredis callback):
 * its pending ops fail with code; unless closing, it is an outage and c
 * is retried. */
void kj__remote_conn_drop(struct conn *c, int code, const char *why);
/* The watchdog's look at c: reconnects when its backoff is over, drops it
 * when its head (or its connect) made no progress in time. */
void kj__remote_conn_tick(struct conn *c, uint64_t now);
/* 1 while c needs the timer: ops pending, or not up. */
int kj__remote_conn_busy(const struct conn *c);

/* redis-object.c */
/* GET <prefix><key> on CMD (and the TTL refresh) as an op for done, with
 * cb, arg and l stored in it.  *rc: 0 or why nothing was queued. */
void kj__remote_get(struct kj__redis *r, const char *key, kj__remote_done_fn *done, kj__remote_be_lookup_cb cb,
		    void *arg, struct kj__redis_lease *l, int *rc);
/* Classifies a GET reply: 1 hit (obj filled, valid while rep is), 0
 * absent, or an error (KJIT_ECORRUPT, KJIT_EDENIED forged, KJIT_EPROTO, why
 * o's connection failed); counts. */
int kj__remote_get_result(struct kj__redis *r, const struct op *o, const redisReply *rep,
			  struct kj__remote_object *obj);

/* redis-guard.c */
/* Makes ac's reader build its replies through c->fns, which refuse what no
 * command of c is answered with (c->refused says why; hiredis drops the
 * connection).  Call once per new connection, before any byte is read. */
void kj__remote_guard_attach(struct conn *c, redisAsyncContext *ac);

/* redis-lease.c */
/* Takes l off r->leases (no-op if it is not on it). */
void kj__remote_lease_unlink(struct kj__redis_lease *l);
/* Drops a reference; frees l at zero. */
void kj__remote_lease_unref(struct kj__redis_lease *l);
/* On c: deletes the lease on key if owner holds it, and publishes key on
 * the channel so the fleet's waiters look (owner "": only the publish). */
void kj__remote_send_release(struct kj__redis *r, struct conn *c, const char *key, const char *owner);
/* The timer's work on leases: renewals due, waiters' polls, waiters that
 * waited too long. */
void kj__remote_lease_tick(struct kj__redis *r, uint64_t now);
/* A publish message for key came on SUB: its waiters look now. */
void kj__remote_lease_wake(struct kj__redis *r, const char *key);
/* At close: waiters hear UNAVAILABLE; owned leases die with the handle
 * (not deleted in Redis: they expire, as a dead daemon's would). */
void kj__remote_lease_close_all(struct kj__redis *r);

#endif /* KJ_REDIS_INT_H */
