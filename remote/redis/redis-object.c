/* redis-object.c: kjit objects in Redis: lookup and publish.  One string
 * per key, <prefix><key>, so a verified read is one GET; its layouts (KJO1,
 * KJO2) and their HMAC are remote-value.c's.
 *
 * Invariants:
 *  - Nothing reaches a caller unverified: a value whose length is not
 *    exactly the sum of its parts, or whose object does not hash to its
 *    digest, is corrupt: a miss, counted (corrupt).  On a node with a
 *    secret, a value that is not KJO2 with an HMAC that verifies for its
 *    key is forged: a miss, counted (forged), never served; the node's own
 *    publish after its compile overwrites it.
 *  - A GET's deadline is the lookup time (plus the size term once the
 *    reply's length is known, redis-conn.c), not the operation timeout.
 *  - Lookups go on CMD, and only while it is up; in rw mode with a TTL a
 *    PEXPIRE follows each GET, so what the fleet reads stays.
 *  - A publish is one SET on PUT, never on CMD, so a big SET never delays
 *    a lookup; it is built as one RESP buffer, so the object is copied
 *    once.  It is dropped (counted) in ro mode, while PUT is down, when the
 *    object is over max_object, or when KJ_REMOTE_PUBLISH_QUEUE_BYTES are
 *    already unacknowledged (r->put_bytes, given back by each reply).  The
 *    lease it is given, if any, is released and freed in every case.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_limits.h"
#include "kj_types.h"
#include "proto.h"
#include "redis-int.h"
#include "sha.h"
#include "util.h"

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

int kj__remote_get_result(struct kj__redis *r, const struct op *o, const redisReply *rep,
			  struct kj__remote_object *obj)
{
	if (rep == NULL)
		return kj__remote_conn_failure(o->c);
	if (rep->type == REDIS_REPLY_NIL)
		return 0;
	if (rep->type != REDIS_REPLY_STRING) {
		r->st.errors++;
		return KJIT_EPROTO;
	}
	r->st.bytes_read += rep->len;
	int code = kj__remote_value_decode_with(r->algs, o->rkey, (const uint8_t *)rep->str, rep->len, r->secret,
						r->secret_len, obj);
	if (code == KJIT_EDENIED) {
		r->st.forged++;
		return code;
	}
	if (code < 0) {
		r->st.corrupt++;
		return KJIT_ECORRUPT;
	}
	return 1;
}

static void lookup_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct kj__redis *r = o->c->r;
	struct kj__remote_object obj;
	int code = kj__remote_get_result(r, o, rep, &obj);

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

void kj__remote_get(struct kj__redis *r, const char *key, kj__remote_done_fn *done, kj__remote_be_lookup_cb cb,
		    void *arg, struct kj__redis_lease *l, int *rc)
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
	o->allow_us = r->lookup_us;
	o->per_mib_us = r->lookup_per_mib_us;
	snprintf(o->rkey, sizeof o->rkey, "%s", k);
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

void kj__redis_lookup(struct kj__redis *r, const char *key, kj__remote_be_lookup_cb cb, void *arg)
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
	struct kj__redis *r = o->c->r;

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

/* Builds SET key value [PX ttl] as RESP in one buffer: the value is
 * written straight into it (one copy of the object). */
static int build_set(struct kj__redis *r, const char *k, const struct kj__remote_object *v, struct kj__buf *b)
{
	char ttl[24];
	size_t vlen = kj__remote_value_size(v, r->secret != NULL);
	int rc;

	snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)r->ttl_ms);
	if (kj__buf_printf(b, "*%d\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n", r->ttl_ms ? 5 : 3, strlen(k), k, vlen) < 0)
		return KJIT_ENOMEM;
	size_t at = b->len;
	if ((rc = kj__remote_value_encode_with(r->algs, k, v, r->secret, r->secret_len, b)) < 0)
		return rc;
	if (b->len - at != vlen)
		return KJIT_EINTERNAL;
	if (kj__buf_printf(b, "\r\n") < 0 ||
	    (r->ttl_ms && kj__buf_printf(b, "$2\r\nPX\r\n$%zu\r\n%s\r\n", strlen(ttl), ttl) < 0))
		return KJIT_ENOMEM;
	return 0;
}

int kj__redis_publish(struct kj__redis *r, const char *key, const struct kj__remote_object *v,
		       struct kj__redis_lease *lease)
{
	struct conn *c;
	struct kj__buf b = { 0 };
	uint8_t dg[KJ_SHA256_LEN];
	char *k = NULL;
	int rc = KJIT_EINVAL;

	if (lease)
		kj__remote_lease_unlink(lease);
	if (r == NULL || key == NULL || !kj__hex_ok(key) || v == NULL || (v->data == NULL && v->size) ||
	    hex_to_raw(v->digest, dg) < 0)
		goto out;
	c = &r->conns[C_PUT];
	rc = KJIT_EDENIED;
	if (r->mode == KJ_REMOTE_RO)
		goto out;
	rc = KJIT_ETOOBIG;
	if (v->size > r->max_object)
		goto out;
	rc = KJIT_ECONNECT;
	if (c->state != S_UP)
		goto out;
	rc = KJIT_EBUSY;
	if (r->put_bytes + v->size > KJ_REMOTE_PUBLISH_QUEUE_BYTES)
		goto out;
	rc = KJIT_ENOMEM;
	if ((k = kj__remote_key(r, "", key)) == NULL || (rc = build_set(r, k, v, &b)) < 0)
		goto out;
	rc = KJIT_ENOMEM;
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

void kj__redis_note_forged(struct kj__redis *r)
{
	if (r)
		r->st.forged++;
}
