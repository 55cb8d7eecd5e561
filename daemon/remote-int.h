/* remote-int.h: what the files of the fleet tier share and nothing outside
 * them may include (the rest of the daemon sees only remote.h): the handle,
 * its three connections, the operations queued on them, the leases, and
 * the internal calls each file offers the others.
 *
 * Who owns what (each file opens with the invariants it keeps):
 *   remote.c         the handle: options, lifetime, the one timer that
 *                    drives connections and leases, stats, logging
 *   remote-url.c     the --remote URL and its password-free description
 *
 * Everything runs on the daemon's libuv loop, on one thread.  The handle
 * owns its connections, ops and leases; a lease is handed to the caller
 * with KJ_LEASE_OWNED and comes back through kj__remote_publish or
 * kj__remote_lease_release.  An op that refers to a lease holds a reference
 * (l->refs); the lease is freed at zero.
 */
#ifndef KJ_REMOTE_INT_H
#define KJ_REMOTE_INT_H

#include <hiredis/async.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "remote.h"
#include "sha.h"

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
	struct kj__remote *r;
	int role;
	int state;
	redisAsyncContext *ac;
	struct op *head, *tail;
	uint64_t since_us;          /* last progress: connect start, a reply, bytes read */
	size_t reader_seen;         /* bytes buffered by the reader at the last tick */
	uint64_t retry_at_us;       /* when S_DOWN: next connect attempt */
	unsigned backoff_ms;
	int drop_code;              /* why pending ops fail while we drop */
	uv_getaddrinfo_t gai;
	int gai_busy;
	char why[128];              /* an error reply during the handshake (AUTH refused) */
};

struct op {
	struct op *next;
	struct conn *c;
	kj__remote_done_fn *done;
	uint64_t start_us;
	uint64_t allow_us;          /* this op's time once it is the head */
	size_t bytes;
	kj__remote_lookup_cb cb;
	void *arg;
	struct kj__remote_lease *lease;
};

struct kj__remote_lease {
	struct kj__remote *r;
	struct kj__remote_lease *prev, *next;
	char key[KJ_SHA256_HEX_LEN + 1];
	int state;
	int refs;                   /* 1 for the list, 1 per op in flight */
	kj__remote_lease_cb cb;
	void *arg;
	uint64_t started_us, next_us; /* owned: next renewal; waiting: next poll */
	int renewing;
	int woken;                 /* a publish message came while checking */
};

struct kj__remote {
	uv_loop_t *loop;
	uv_timer_t tick;
	struct kj__remote_url url;
	char *describe;
	char *prefix;
	char *id;
	char *channel;
	int mode;
	uint64_t timeout_us, ttl_ms, max_object;
	unsigned lease_ms, poll_ms, wait_max_ms;
	void (*log)(void *, const char *);
	void *log_arg;
	struct conn conns[C_COUNT];
	struct kj__remote_lease *leases;
	uint64_t put_bytes;         /* publishes not yet acknowledged */
	int warned;                 /* an outage was reported and has not ended */
	int said_error;             /* an error reply was logged since the last outage */
	uint64_t down_since_us;
	int closing;
	int tick_open;              /* the timer handle is not closed yet */
	struct kj__remote_stats st;
};

/* remote.c */
/* Writes msg into err; returns KJIT_EINVAL. */
int kj__remote_seterr(char *err, size_t errlen, const char *msg);

/* remote-url.c */
/* "redis://host:port/db" or "unix:///path?db=N", never the userinfo.
 * Allocated; NULL: no memory. */
char *kj__remote_url_describe(const struct kj__remote_url *u);

#endif /* KJ_REMOTE_INT_H */
