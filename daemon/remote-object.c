/* remote-object.c: kjit objects in Redis: the value layout, lookup and
 * publish.
 *
 * Value layout (one string per key, <prefix><key>, so a verified read is
 * one GET):
 *   "KJO1" | u64 size | u32 log_len | u32 recipe_len | sha256[32] | object | log | recipe
 * (little-endian).
 *
 * Invariants:
 *  - Nothing reaches a caller unverified: a value whose length is not
 *    exactly the sum of its parts, or whose object does not hash to its
 *    digest, is corrupt: a miss, counted.
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
#include "remote-int.h"
#include "sha.h"
#include "util.h"

#define VAL_MAGIC "KJO1"
#define VAL_HDR (4 + 8 + 4 + 4 + KJ_SHA256_LEN)

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
