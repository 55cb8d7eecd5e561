/* remote.c: the fleet tier: kjit objects in a shared Redis, on the loop.
 *
 * The connections (CMD, PUT, SUB), the ops queued on them and the
 * watchdog are in remote-conn.c.
 *
 * Value layout (one string per key, so a verified read is one GET):
 *   "KJO1" | u64 size | u32 log_len | u32 recipe_len | sha256[32] | object | log | recipe
 * (little-endian).  A value whose length is not exactly the sum, or whose
 * object does not hash to the digest, is corrupt: a miss, counted.
 *
 * Ownership: the handle owns its connections, ops and leases; a lease is
 * handed to the caller with KJ_LEASE_OWNED and comes back through
 * kj__remote_publish or kj__remote_lease_release.  An op that refers to a
 * lease holds a reference (l->refs); the lease is freed at zero.
 */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "kj_limits.h"
#include "kj_types.h"
#include "proto.h"
#include "remote-int.h"
#include "sha.h"
#include "util.h"

#define VAL_MAGIC "KJO1"
#define VAL_HDR (4 + 8 + 4 + 4 + KJ_SHA256_LEN)

static const char release_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end "
	"return redis.call('PUBLISH', ARGV[2], ARGV[3])";
static const char renew_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end "
	"return 0";

static void lease_poll(struct kj__remote_lease *l);

/* ---- values, lookup and publish ---- */

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int hex_to_raw(const char *hex, uint8_t out[KJ_SHA256_LEN])
{
	if (hex == NULL || !kj__hex_ok(hex))
		return KJIT_EINVAL;
	for (int i = 0; i < KJ_SHA256_LEN; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return KJIT_EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* Decodes and verifies a stored value.  0, or KJIT_ECORRUPT. */
static int value_decode(const uint8_t *v, size_t n, struct kj__remote_object *o)
{
	uint8_t dg[KJ_SHA256_LEN];

	if (n < VAL_HDR || memcmp(v, VAL_MAGIC, 4) != 0)
		return KJIT_ECORRUPT;
	uint64_t size = get_le(v + 4, 8), log_len = get_le(v + 12, 4), rec_len = get_le(v + 16, 4);
	if (size > n || log_len > n || rec_len > n || VAL_HDR + size + log_len + rec_len != n)
		return KJIT_ECORRUPT;
	o->data = v + VAL_HDR;
	o->size = (size_t)size;
	o->log = (const char *)v + VAL_HDR + size;
	o->log_len = (size_t)log_len;
	o->recipe = v + VAL_HDR + size + log_len;
	o->recipe_len = (size_t)rec_len;
	if (kj__sha256(o->data, o->size, dg) < 0 || memcmp(dg, v + 20, KJ_SHA256_LEN) != 0)
		return KJIT_ECORRUPT;
	kj__hex(dg, o->digest);
	return 0;
}

int kj__remote_get_result(struct kj__remote *r, struct conn *c, const redisReply *rep,
			  struct kj__remote_object *obj)
{
	if (rep == NULL)
		return kj__remote_conn_failure(c);
	if (rep->type == REDIS_REPLY_NIL)
		return 0;
	if (rep->type != REDIS_REPLY_STRING) {
		r->st.errors++;
		return KJIT_EPROTO;
	}
	r->st.bytes_read += rep->len;
	if (value_decode((const uint8_t *)rep->str, rep->len, obj) < 0) {
		r->st.corrupt++;
		return KJIT_ECORRUPT;
	}
	return 1;
}

static void lookup_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct kj__remote *r = o->c->r;
	struct kj__remote_object obj;
	int code = kj__remote_get_result(r, o->c, rep, &obj);

	if (code == 1) {
		uint64_t us = kj__now_us() - o->start_us;
		r->st.hits++;
		r->st.hit_us_total += us;
		if (us > r->st.hit_us_max)
			r->st.hit_us_max = us;
		o->cb(o->arg, 0, &obj);
	} else {
		if (code == 0)
			r->st.misses++;
		o->cb(o->arg, code, NULL);
	}
}

void kj__remote_get(struct kj__remote *r, const char *key, kj__remote_done_fn *done, kj__remote_lookup_cb cb,
		    void *arg, struct kj__remote_lease *l, int *rc)
{
	struct conn *c = &r->conns[C_CMD];
	char *k = kj__remote_key(r, "", key);
	struct op *o = k ? kj__remote_op_new(c, done) : NULL;

	*rc = KJIT_ENOMEM;
	if (o == NULL)
		goto out;
	o->cb = cb;
	o->arg = arg;
	o->lease = l;
	const char *av[2] = { "GET", k };
	if ((*rc = kj__remote_op_send(o, 2, av, NULL, NULL, 0)) < 0)
		goto out;
	if (r->ttl_ms && r->mode == KJ_REMOTE_RW) {
		char ttl[24];
		snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)r->ttl_ms);
		const char *pv[3] = { "PEXPIRE", k, ttl };
		kj__remote_send(c, 3, pv);
	}
out:
	free(k);
}

void kj__remote_lookup(struct kj__remote *r, const char *key, kj__remote_lookup_cb cb, void *arg)
{
	int rc = KJIT_EINVAL;

	if (r == NULL || key == NULL || !kj__hex_ok(key))
		goto fail;
	rc = KJIT_ECONNECT;
	if (r->conns[C_CMD].state != S_UP)
		goto fail;
	kj__remote_get(r, key, lookup_done, cb, arg, NULL, &rc);
	if (rc == 0)
		return;
fail:
	if (r)
		r->st.errors++;
	cb(arg, rc, NULL);
}

static void publish_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct kj__remote *r = o->c->r;

	r->put_bytes -= o->bytes;
	if (rep && rep->type == REDIS_REPLY_STATUS) {
		r->st.publishes++;
		r->st.bytes_written += o->bytes;
	} else {
		if (rep)
			r->st.errors++;
		r->st.publish_dropped++;
	}
}

/* Builds SET key value [PX ttl] as RESP in one buffer. */
static int build_set(struct kj__remote *r, const char *k, const uint8_t *obj, size_t size, const uint8_t dg[32],
		     const char *log, size_t log_len, const uint8_t *recipe, size_t recipe_len, struct kj__buf *b)
{
	char ttl[24];
	size_t vlen = VAL_HDR + size + log_len + recipe_len;
	uint8_t hdr[VAL_HDR];

	snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)r->ttl_ms);
	memcpy(hdr, VAL_MAGIC, 4);
	put_le(hdr + 4, size, 8);
	put_le(hdr + 12, log_len, 4);
	put_le(hdr + 16, recipe_len, 4);
	memcpy(hdr + 20, dg, KJ_SHA256_LEN);
	if (kj__buf_printf(b, "*%d\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n", r->ttl_ms ? 5 : 3, strlen(k), k, vlen) < 0 ||
	    kj__buf_append(b, hdr, sizeof hdr) < 0 || kj__buf_append(b, obj, size) < 0 || kj__buf_append(b, log, log_len) < 0 ||
	    kj__buf_append(b, recipe, recipe_len) < 0 ||
	    kj__buf_printf(b, "\r\n") < 0 ||
	    (r->ttl_ms && kj__buf_printf(b, "$2\r\nPX\r\n$%zu\r\n%s\r\n", strlen(ttl), ttl) < 0))
		return KJIT_ENOMEM;
	return 0;
}

int kj__remote_publish(struct kj__remote *r, const char *key, const uint8_t *obj, size_t size,
		       const char digest[KJ_SHA256_HEX_LEN + 1], const char *log, size_t log_len,
		       const uint8_t *recipe, size_t recipe_len, struct kj__remote_lease *lease)
{
	struct conn *c;
	struct kj__buf b = { 0 };
	uint8_t dg[KJ_SHA256_LEN];
	char *k = NULL;
	int rc = KJIT_EINVAL;

	if (lease)
		kj__remote_lease_unlink(lease);
	if (r == NULL || key == NULL || !kj__hex_ok(key) || (obj == NULL && size) || hex_to_raw(digest, dg) < 0 ||
	    log_len > UINT32_MAX || recipe_len > UINT32_MAX)
		goto out;
	c = &r->conns[C_PUT];
	rc = KJIT_EDENIED;
	if (r->mode == KJ_REMOTE_RO)
		goto out;
	rc = KJIT_ETOOBIG;
	if (size > r->max_object)
		goto out;
	rc = KJIT_ECONNECT;
	if (c->state != S_UP)
		goto out;
	rc = KJIT_EBUSY;
	if (r->put_bytes + size > KJ_REMOTE_PUBLISH_QUEUE_BYTES)
		goto out;
	rc = KJIT_ENOMEM;
	if ((k = kj__remote_key(r, "", key)) == NULL ||
	    build_set(r, k, obj, size, dg, log, log_len, recipe, recipe_len, &b) < 0)
		goto out;
	struct op *o = kj__remote_op_new(c, publish_done);
	if (o == NULL)
		goto out;
	o->bytes = b.len;
	o->allow_us += (uint64_t)b.len * 1000000 / KJ_REMOTE_SLOW_LINK_BPS;
	if ((rc = kj__remote_op_send(o, 0, NULL, NULL, (const char *)b.p, b.len)) < 0)
		goto out;
	r->put_bytes += b.len;
	kj__remote_send_release(r, c, key, lease ? r->id : "");
	rc = 0;
out:
	if (rc < 0 && r)
		r->st.publish_dropped++;
	if (lease && lease->state == L_OWNED && rc < 0 && r && r->mode == KJ_REMOTE_RW &&
	    r->conns[C_CMD].state == S_UP)
		kj__remote_send_release(r, &r->conns[C_CMD], lease->key, r->id);
	if (lease) {
		lease->state = L_DONE;
		kj__remote_lease_unref(lease);
	}
	kj__buf_free(&b);
	free(k);
	return rc;
}

/* ---- leases ---- */

void kj__remote_lease_unlink(struct kj__remote_lease *l)
{
	struct kj__remote *r = l->r;
	if (r == NULL || (l->prev == NULL && r->leases != l))
		return;
	if (l->prev)
		l->prev->next = l->next;
	else
		r->leases = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

void kj__remote_lease_unref(struct kj__remote_lease *l)
{
	if (--l->refs == 0)
		free(l);
}

void kj__remote_send_release(struct kj__remote *r, struct conn *c, const char *key, const char *owner)
{
	char *lk = kj__remote_key(r, "lease:", key);
	if (lk == NULL)
		return;
	const char *av[7] = { "EVAL", release_lua, "1", lk, owner, r->channel, key };
	kj__remote_send(c, 7, av);
	free(lk);
}

/* Ends a waiting lease with outcome, giving up the list's reference. */
static void lease_finish(struct kj__remote_lease *l, int outcome, const struct kj__remote_object *obj)
{
	kj__remote_lease_unlink(l);
	l->state = L_DONE;
	if (outcome == KJ_LEASE_OWNED) {
		l->state = L_OWNED;
		/* back in the list for renewals; the caller holds it now */
		l->next = l->r->leases;
		if (l->next)
			l->next->prev = l;
		l->r->leases = l;
		l->next_us = kj__now_us() + (uint64_t)l->r->lease_ms * 1000 / 3;
		l->r->st.lease_owned++;
		kj__remote_tick_ensure(l->r);
		l->cb(l->arg, outcome, l, NULL);
		return;
	}
	if (outcome == KJ_LEASE_PUBLISHED)
		l->r->st.lease_woken++;
	l->cb(l->arg, outcome, NULL, obj);
	kj__remote_lease_unref(l);
}

static void lease_on_set(struct kj__remote_lease *l, int code, const redisReply *rep)
{
	struct kj__remote *r = l->r;
	if (r == NULL || l->state == L_DONE)
		return;
	if (code < 0 || rep->type == REDIS_REPLY_ERROR) {
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
		return;
	}
	if (rep->type == REDIS_REPLY_STATUS) {
		if (l->state == L_CHECKING)
			r->st.lease_takeovers++;
		lease_finish(l, KJ_LEASE_OWNED, NULL);
		return;
	}
	/* held by another node: wait for its publish */
	if (l->state == L_ACQUIRING) {
		r->st.lease_waits++;
		l->state = L_WAITING;
		lease_poll(l);   /* it may have published between our GET and SET */
		return;
	}
	l->state = L_WAITING;
	l->next_us = kj__now_us() + (uint64_t)r->poll_ms * 1000;
	if (l->woken) {
		l->woken = 0;
		lease_poll(l);
	}
}

static void lease_set_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct conn *c = o->c;

	lease_on_set(o->lease, rep ? 0 : kj__remote_conn_failure(c), rep);
	kj__remote_lease_unref(o->lease);
}

static int lease_send_set(struct kj__remote_lease *l)
{
	struct kj__remote *r = l->r;
	char ms[16];
	char *lk = kj__remote_key(r, "lease:", l->key);
	struct op *o = lk ? kj__remote_op_new(&r->conns[C_CMD], lease_set_done) : NULL;
	int rc = KJIT_ENOMEM;

	if (o) {
		snprintf(ms, sizeof ms, "%u", r->lease_ms);
		const char *av[6] = { "SET", lk, r->id, "NX", "PX", ms };
		o->lease = l;
		l->refs++;
		if ((rc = kj__remote_op_send(o, 6, av, NULL, NULL, 0)) < 0)
			l->refs--;
	}
	free(lk);
	return rc;
}

static void lease_on_check(struct kj__remote_lease *l, int code, const struct kj__remote_object *obj)
{
	if (l->r == NULL || l->state != L_CHECKING)
		return;
	if (code == 1) {
		lease_finish(l, KJ_LEASE_PUBLISHED, obj);
		return;
	}
	if (code < 0 && code != KJIT_ECORRUPT) {
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
		return;
	}
	/* absent or corrupt: take the lease if its owner is gone */
	if (lease_send_set(l) < 0)
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
}

static void lease_check_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct kj__remote_object obj;
	int code = kj__remote_get_result(o->c->r, o->c, rep, &obj);

	lease_on_check(o->lease, code, code == 1 ? &obj : NULL);
	kj__remote_lease_unref(o->lease);
}

/* A waiter looks again: GET the object; absent -> try the lease. */
static void lease_poll(struct kj__remote_lease *l)
{
	struct kj__remote *r = l->r;
	int rc;

	if (l->state != L_WAITING)
		return;
	if (r->conns[C_CMD].state != S_UP) {
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
		return;
	}
	l->state = L_CHECKING;
	l->refs++;
	kj__remote_get(r, l->key, lease_check_done, NULL, NULL, l, &rc);
	if (rc < 0) {
		l->refs--;
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
	}
}

void kj__remote_lease(struct kj__remote *r, const char *key, kj__remote_lease_cb cb, void *arg)
{
	struct kj__remote_lease *l;

	if (r == NULL || key == NULL || !kj__hex_ok(key) || r->mode == KJ_REMOTE_RO ||
	    r->conns[C_CMD].state != S_UP || (l = calloc(1, sizeof *l)) == NULL) {
		cb(arg, KJ_LEASE_UNAVAILABLE, NULL, NULL);
		return;
	}
	l->r = r;
	memcpy(l->key, key, KJ_SHA256_HEX_LEN + 1);
	l->cb = cb;
	l->arg = arg;
	l->refs = 1;
	l->state = L_ACQUIRING;
	l->started_us = kj__now_us();
	l->next = r->leases;
	if (l->next)
		l->next->prev = l;
	r->leases = l;
	kj__remote_tick_ensure(r);
	if (lease_send_set(l) < 0)
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
}

void kj__remote_lease_release(struct kj__remote_lease *l)
{
	struct kj__remote *r;

	if (l == NULL)
		return;
	r = l->r;
	kj__remote_lease_unlink(l);
	if (r && l->state == L_OWNED && r->conns[C_CMD].state == S_UP)
		kj__remote_send_release(r, &r->conns[C_CMD], l->key, r->id);
	l->state = L_DONE;
	kj__remote_lease_unref(l);
}

static void renew_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	o->lease->renewing = 0;
	if (rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 0 && o->lease->state == L_OWNED)
		kj__remote_say(o->c->r, "lease on %.16s... lost while compiling (expired or taken over)",
			       o->lease->key);
	kj__remote_lease_unref(o->lease);
}

static void lease_renew(struct kj__remote_lease *l)
{
	struct kj__remote *r = l->r;
	char ms[16];
	char *lk = kj__remote_key(r, "lease:", l->key);
	struct op *o = lk ? kj__remote_op_new(&r->conns[C_CMD], renew_done) : NULL;

	if (o) {
		snprintf(ms, sizeof ms, "%u", r->lease_ms);
		const char *av[6] = { "EVAL", renew_lua, "1", lk, r->id, ms };
		o->lease = l;
		l->refs++;
		l->renewing = 1;
		if (kj__remote_op_send(o, 6, av, NULL, NULL, 0) < 0) {
			l->refs--;
			l->renewing = 0;
		}
	}
	free(lk);
}

void kj__remote_lease_tick(struct kj__remote *r, uint64_t now)
{
	for (struct kj__remote_lease *l = r->leases, *next; l; l = next) {
		next = l->next;
		if (l->state == L_OWNED && now >= l->next_us && !l->renewing) {
			l->next_us = now + (uint64_t)r->lease_ms * 1000 / 3;
			if (r->conns[C_CMD].state == S_UP)
				lease_renew(l);
		} else if (l->state == L_WAITING && now - l->started_us > (uint64_t)r->wait_max_ms * 1000) {
			lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
		} else if (l->state == L_WAITING && now >= l->next_us) {
			lease_poll(l);
		}
	}
}

void kj__remote_lease_wake(struct kj__remote *r, const char *key)
{
	for (struct kj__remote_lease *l = r->leases, *next; l; l = next) {
		next = l->next;
		if (memcmp(l->key, key, KJ_SHA256_HEX_LEN) != 0)
			continue;
		if (l->state == L_WAITING)
			lease_poll(l);
		else if (l->state == L_CHECKING)
			l->woken = 1;
	}
}

void kj__remote_lease_close_all(struct kj__remote *r)
{
	while (r->leases) {
		struct kj__remote_lease *l = r->leases;
		int was = l->state;
		l->state = L_DONE;
		r->leases = l->next;
		l->prev = l->next = NULL;
		l->r = NULL;
		if (was != L_OWNED && was != L_DONE)
			l->cb(l->arg, KJ_LEASE_UNAVAILABLE, NULL, NULL);
		free(l);
	}
}

/* ---- the handle ---- */

void kj__remote_say(struct kj__remote *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (r->log)
		r->log(r->log_arg, line);
	else
		fprintf(stderr, "kjitd: %s\n", line);
}

char *kj__remote_key(const struct kj__remote *r, const char *what, const char *key)
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

void kj__remote_free(struct kj__remote *r)
{
	if (r->tick_open || r->conns[C_CMD].gai_busy || r->conns[C_PUT].gai_busy || r->conns[C_SUB].gai_busy)
		return;
	kj__remote_url_free(&r->url);
	free(r->describe);
	free(r->prefix);
	free(r->id);
	free(r->channel);
	free(r);
}

static void on_tick_closed(uv_handle_t *h)
{
	struct kj__remote *r = h->data;
	r->tick_open = 0;
	kj__remote_free(r);
}

int kj__remote_new(uv_loop_t *loop, const struct kj__remote_options *opt, struct kj__remote **out, char *err,
		   size_t errlen)
{
	struct kj__remote *r;
	int rc;

	*out = NULL;
	if (loop == NULL || opt == NULL || opt->url == NULL)
		return kj__remote_seterr(err, errlen, "no remote URL");
	if (opt->mode != KJ_REMOTE_RW && opt->mode != KJ_REMOTE_RO)
		return kj__remote_seterr(err, errlen, "remote mode must be ro or rw");
	if ((r = calloc(1, sizeof *r)) == NULL)
		return KJIT_ENOMEM;
	if ((rc = kj__remote_url_parse(opt->url, &r->url, err, errlen)) < 0) {
		free(r);
		return rc;
	}
	r->loop = loop;
	r->mode = opt->mode;
	r->timeout_us = (uint64_t)(opt->timeout_ms ? opt->timeout_ms : KJ_REMOTE_TIMEOUT_MS) * 1000;
	r->ttl_ms = opt->ttl_ms;
	r->max_object = opt->max_object ? opt->max_object : KJ_REMOTE_OBJECT_MAX;
	r->lease_ms = opt->lease_ms ? opt->lease_ms : KJ_REMOTE_LEASE_MS;
	r->poll_ms = opt->lease_poll_ms ? opt->lease_poll_ms : KJ_REMOTE_LEASE_POLL_MS;
	r->wait_max_ms = opt->lease_wait_max_ms ? opt->lease_wait_max_ms : KJ_REMOTE_LEASE_WAIT_MS;
	r->log = opt->log;
	r->log_arg = opt->log_arg;
	r->prefix = kj__strdup(opt->prefix ? opt->prefix : KJ_REMOTE_PREFIX);
	r->id = opt->daemon_id ? kj__strdup(opt->daemon_id) : make_id();
	r->describe = kj__remote_url_describe(&r->url);
	r->channel = r->prefix ? kj__asprintf("%spublished", r->prefix) : NULL;
	uv_timer_init(loop, &r->tick);
	r->tick.data = r;
	r->tick_open = 1;
	if (!r->prefix || !r->id || !r->describe || !r->channel) {
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

void kj__remote_close(struct kj__remote *r)
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

int kj__remote_is_up(const struct kj__remote *r)
{
	return r && r->st.up;
}

const char *kj__remote_describe(const struct kj__remote *r)
{
	return r ? r->describe : "";
}

void kj__remote_stats(const struct kj__remote *r, struct kj__remote_stats *s)
{
	*s = r->st;
}

static void on_tick(uv_timer_t *t)
{
	struct kj__remote *r = t->data;
	uint64_t now = kj__now_us();
	int busy = 0;

	for (int i = 0; i < C_COUNT; i++) {
		kj__remote_conn_tick(&r->conns[i], now);
		busy |= kj__remote_conn_busy(&r->conns[i]);
	}
	kj__remote_lease_tick(r, now);
	if (!busy && r->leases == NULL)
		uv_timer_stop(&r->tick);
}

void kj__remote_tick_ensure(struct kj__remote *r)
{
	if (!r->closing && !uv_is_active((uv_handle_t *)&r->tick)) {
		uint64_t ms = r->timeout_us / 4000;
		ms = ms < 5 ? 5 : ms > KJ_REMOTE_TICK_MS ? KJ_REMOTE_TICK_MS : ms;
		uv_timer_start(&r->tick, on_tick, ms, ms);
	}
}
