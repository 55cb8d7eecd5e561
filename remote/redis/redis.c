/* redis.c: the Redis backend's handle (docs/remote.md): the options and their
 * defaults, lifetime, the one timer that drives connections and leases,
 * the counters, and the log line.  The work is done by redis-conn.c (the
 * connections), redis-object.c (values, lookup, publish), redis-lease.c
 * (single-flight across machines) and redis-url.c; redis-int.h says who
 * owns what.
 *
 * Invariants:
 *  - A handle exists only with --remote: a daemon without it runs nothing
 *    of the fleet tier.
 *  - The timer runs only while something is pending (an op, a connection
 *    that is not up, a lease) and stops itself when nothing is; while an
 *    op or a connect is pending its period is half the lookup deadline (or
 *    of the operation timeout, if shorter), 1 ms to KJ_REMOTE_TICK_MS, so a
 *    late op is failed within half a lookup deadline of its own; with only
 *    leases or a retry pending it is KJ_REMOTE_TICK_MS.
 *  - The fleet secret is copied into the handle and wiped when it is
 *    freed; nothing logs it.
 *  - Every line logged (kj__remote_say) is one line: control bytes in it
 *    (an error reply's text, from the server) are written as '.'.
 *  - close fails pending lookups with KJIT_ESHUTDOWN and answers waiting
 *    leases UNAVAILABLE at once; the memory goes only once the timer is
 *    closed and no name resolution is in flight (kj__remote_free).
 *  - r->st is counted by the file that sees each event; kj__redis_stats
 *    copies it.
 *  - The lease owner id is host:pid:64 random bits unless one is given.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_limits.h"
#include "kj_types.h"
#include "redis-int.h"
#include "util.h"

void kj__remote_say(struct kj__redis *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	for (char *p = line; *p; p++) /* what the server said (an error reply) stays on this line */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '.';
	if (r->log)
		r->log(r->log_arg, line);
	else
		fprintf(stderr, "kjitd: %s\n", line);
}

char *kj__remote_key(const struct kj__redis *r, const char *what, const char *key)
{
	return kj__asprintf("%s%s%s", r->prefix, what, key);
}

int kj__remote_seterr(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return KJIT_EINVAL;
}

static char *make_id(void)
{
	char host[256] = "host";
	uint8_t rnd[8];

	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = '\0';
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		memset(rnd, 0, sizeof rnd);
	return kj__asprintf("%s:%ld:%02x%02x%02x%02x%02x%02x%02x%02x", host, (long)getpid(), rnd[0], rnd[1], rnd[2],
			    rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
}

void kj__remote_free(struct kj__redis *r)
{
	if (r->tick_open || r->conns[C_CMD].gai_busy || r->conns[C_PUT].gai_busy || r->conns[C_SUB].gai_busy)
		return;
	kj__redis_url_free(&r->url);
	free(r->describe);
	free(r->prefix);
	free(r->id);
	free(r->channel);
	kj__remote_algs_free(r->algs);
	if (r->secret) {
		explicit_bzero(r->secret, r->secret_len);
		free(r->secret);
	}
	free(r);
}

static void on_tick_closed(uv_handle_t *h)
{
	struct kj__redis *r = h->data;
	r->tick_open = 0;
	kj__remote_free(r);
}

int kj__redis_new(uv_loop_t *loop, const struct kj__remote_options *opt, struct kj__redis **out, char *err,
		   size_t errlen)
{
	struct kj__redis *r;
	int rc;

	*out = NULL;
	if (loop == NULL || opt == NULL || opt->url == NULL)
		return kj__remote_seterr(err, errlen, "no remote URL");
	if (opt->mode != KJ_REMOTE_RW && opt->mode != KJ_REMOTE_RO)
		return kj__remote_seterr(err, errlen, "remote mode must be ro or rw");
	if (opt->secret && (opt->secret_len < KJ_REMOTE_SECRET_MIN || opt->secret_len > KJ_REMOTE_SECRET_MAX))
		return kj__remote_seterr(err, errlen, "the fleet secret must be 16 to 4096 bytes");
	if ((r = calloc(1, sizeof *r)) == NULL)
		return KJIT_ENOMEM;
	if ((rc = kj__redis_url_parse(opt->url, &r->url, err, errlen)) < 0) {
		free(r);
		return rc;
	}
	r->loop = loop;
	r->mode = opt->mode;
	r->timeout_us = (uint64_t)(opt->timeout_ms ? opt->timeout_ms : KJ_REMOTE_TIMEOUT_MS) * 1000;
	r->lookup_us = (uint64_t)(opt->lookup_ms ? opt->lookup_ms : KJ_REMOTE_LOOKUP_MS) * 1000;
	r->lookup_per_mib_us = (uint64_t)(opt->lookup_ms_per_mib ? opt->lookup_ms_per_mib : KJ_REMOTE_LOOKUP_MS_PER_MIB) * 1000;
	r->ttl_ms = opt->ttl_ms;
	r->max_object = opt->max_object ? opt->max_object : KJ_REMOTE_OBJECT_MAX;
	r->lease_ms = opt->lease_ms ? opt->lease_ms : KJ_REMOTE_LEASE_MS;
	r->poll_ms = opt->lease_poll_ms ? opt->lease_poll_ms : KJ_REMOTE_LEASE_POLL_MS;
	r->wait_max_ms = opt->lease_wait_max_ms ? opt->lease_wait_max_ms : KJ_REMOTE_LEASE_WAIT_MS;
	r->log = opt->log;
	r->log_arg = opt->log_arg;
	r->prefix = kj__strdup(opt->prefix ? opt->prefix : KJ_REMOTE_PREFIX);
	r->id = opt->daemon_id ? kj__strdup(opt->daemon_id) : make_id();
	r->describe = kj__redis_url_describe(&r->url);
	r->channel = r->prefix ? kj__asprintf("%spublished", r->prefix) : NULL;
	if (opt->secret && opt->secret_len >= KJ_REMOTE_SECRET_MIN && opt->secret_len <= KJ_REMOTE_SECRET_MAX &&
	    (r->secret = malloc(opt->secret_len)) != NULL) {
		memcpy(r->secret, opt->secret, opt->secret_len);
		r->secret_len = opt->secret_len;
	}
	if (kj__remote_algs_new(&r->algs) < 0) /* none: each value looks them up (remote-value.c) */
		r->algs = NULL;
	else if (r->secret) /* its GMAC key schedule once; on failure each value derives it, for the same bytes */
		(void)kj__remote_algs_key(r->algs, r->secret, r->secret_len);
	uv_timer_init(loop, &r->tick);
	r->tick.data = r;
	r->tick_open = 1;
	if (!r->prefix || !r->id || !r->describe || !r->channel || (opt->secret && r->secret == NULL)) {
		uv_close((uv_handle_t *)&r->tick, on_tick_closed);
		return KJIT_ENOMEM;
	}
	for (int i = 0; i < C_COUNT; i++) {
		r->conns[i].r = r;
		r->conns[i].role = i;
		kj__remote_conn_connect(&r->conns[i]);
	}
	*out = r;
	return 0;
}

void kj__redis_close(struct kj__redis *r)
{
	if (r == NULL)
		return;
	r->closing = 1;
	uv_timer_stop(&r->tick);
	for (int i = 0; i < C_COUNT; i++) {
		struct conn *c = &r->conns[i];
		if (c->gai_busy)
			uv_cancel((uv_req_t *)&c->gai);
		kj__remote_conn_drop(c, KJIT_ESHUTDOWN, "closing");
	}
	kj__remote_lease_close_all(r);
	uv_close((uv_handle_t *)&r->tick, on_tick_closed);
}

int kj__redis_is_up(const struct kj__redis *r)
{
	return r && r->st.up;
}

const char *kj__redis_describe(const struct kj__redis *r)
{
	return r ? r->describe : "";
}

void kj__redis_stats(const struct kj__redis *r, struct kj__remote_stats *s)
{
	*s = r->st;
}

/* Half the lookup deadline (or of the operation timeout, if shorter), 1
 * ms at least, while an op or a connect is pending; else (leases, a
 * connection waiting for its retry) KJ_REMOTE_TICK_MS. */
static uint64_t tick_period(const struct kj__redis *r)
{
	for (int i = 0; i < C_COUNT; i++) {
		const struct conn *c = &r->conns[i];
		if (c->head || c->state == S_CONNECTING || c->state == S_RESOLVING) {
			uint64_t ms = (r->lookup_us < r->timeout_us ? r->lookup_us : r->timeout_us) / 2000;
			return ms < 1 ? 1 : ms > KJ_REMOTE_TICK_MS ? KJ_REMOTE_TICK_MS : ms;
		}
	}
	return KJ_REMOTE_TICK_MS;
}

static void on_tick(uv_timer_t *t)
{
	struct kj__redis *r = t->data;
	uint64_t now = kj__now_us();
	int busy = 0;

	for (int i = 0; i < C_COUNT; i++) {
		kj__remote_conn_tick(&r->conns[i], now);
		busy |= kj__remote_conn_busy(&r->conns[i]);
	}
	kj__remote_lease_tick(r, now);
	if (!busy && r->leases == NULL)
		uv_timer_stop(&r->tick);
	else if (!r->closing && uv_timer_get_repeat(&r->tick) != tick_period(r))
		uv_timer_start(&r->tick, on_tick, tick_period(r), tick_period(r));
}

void kj__remote_tick_ensure(struct kj__redis *r)
{
	if (r->closing)
		return;
	uint64_t ms = tick_period(r);
	if (!uv_is_active((uv_handle_t *)&r->tick) || uv_timer_get_repeat(&r->tick) > ms)
		uv_timer_start(&r->tick, on_tick, ms, ms);
}

/* The row of remote/remote.c's table: the calls above on a void handle. */
static int be_check(const char *url, char *err, size_t errlen)
{
	struct kj__redis_url u;
	int r = kj__redis_url_parse(url, &u, err, errlen);

	if (r == 0)
		kj__redis_url_free(&u);
	return r;
}

static int be_open(uv_loop_t *loop, const struct kj__remote_options *opt, void **out, char *err, size_t errlen)
{
	struct kj__redis *r = NULL;
	int rc = kj__redis_new(loop, opt, &r, err, errlen);

	*out = r;
	return rc;
}

static void be_close(void *h) { kj__redis_close(h); }
static int be_is_up(const void *h) { return kj__redis_is_up(h); }
static const char *be_describe(const void *h) { return kj__redis_describe(h); }
static void be_lookup(void *h, const char *key, kj__remote_be_lookup_cb cb, void *arg) { kj__redis_lookup(h, key, cb, arg); }
static int be_publish(void *h, const char *key, const struct kj__remote_object *v, void *l)
{
	return kj__redis_publish(h, key, v, l);
}
static void be_lease(void *h, const char *key, kj__remote_be_lease_cb cb, void *arg) { kj__redis_lease(h, key, cb, arg); }
static void be_lease_release(void *l) { kj__redis_lease_release(l); }
static void be_note_forged(void *h) { kj__redis_note_forged(h); }
static void be_stats(const void *h, struct kj__remote_stats *s) { kj__redis_stats(h, s); }

const struct kj__remote_backend kj__remote_redis = {
	.name = "redis",
	.schemes = { "redis", "unix", "rediss", NULL }, /* rediss: refused with why (no TLS) */
	.usage = "redis://[[user:]password@]host[:port][/db] or unix:///path",
	.check_url = be_check,
	.open = be_open,
	.close = be_close,
	.is_up = be_is_up,
	.describe = be_describe,
	.lookup = be_lookup,
	.publish = be_publish,
	.lease = be_lease,
	.lease_release = be_lease_release,
	.note_forged = be_note_forged,
	.stats = be_stats,
};
