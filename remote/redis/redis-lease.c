/* redis-lease.c: single-flight across machines: a lease per key in Redis
 * (<prefix>lease:<key>, holding the owner's daemon id) so that one node of
 * the fleet compiles a key and the others wait for its publish.
 *
 * A lease's life: L_ACQUIRING (SET NX PX sent), then either L_OWNED (handed
 * to the caller, renewed every lease_ms/3 until publish or release) or
 * L_WAITING (another node holds it).  A waiter looks (L_CHECKING: its GET
 * is out) when a publish message names its key, and every poll_ms: the
 * object means PUBLISHED; absent or corrupt, it tries SET NX again, and
 * wins once a dead owner's lease has expired (a takeover, then OWNED).
 * A lease it cannot take is looked at first (PTTL): one without an expiry,
 * or living longer than two lease lives, no node set (a writer to the
 * Redis planted it): counted as forged, UNAVAILABLE at once, never waited
 * for.
 * CMD down, or wait_max_ms over, means UNAVAILABLE.  L_DONE once the
 * caller has been answered and holds nothing, or gave the lease back.
 *
 * Invariants:
 *  - The callback is called exactly once.
 *  - r->leases lists the leases being acquired or waited for, and the
 *    owned ones (for renewal); l->refs is 1 for the list plus 1 per op in
 *    flight, and the lease is freed at zero, so a late reply never touches
 *    freed memory.
 *  - Release and renewal are Lua scripts that act only while the lease
 *    holds our id: a node never deletes or extends a lease that expired
 *    and was taken over.  Release also publishes the key, which wakes the
 *    waiters at once.
 *  - ro mode takes no lease (UNAVAILABLE at once).
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_types.h"
#include "redis-int.h"
#include "util.h"

static const char release_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end "
	"return redis.call('PUBLISH', ARGV[2], ARGV[3])";
static const char renew_lua[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end "
	"return 0";

static void lease_poll(struct kj__redis_lease *l);
static int lease_send_pttl(struct kj__redis_lease *l);

void kj__remote_lease_unlink(struct kj__redis_lease *l)
{
	struct kj__redis *r = l->r;
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

void kj__remote_lease_unref(struct kj__redis_lease *l)
{
	if (--l->refs == 0)
		free(l);
}

void kj__remote_send_release(struct kj__redis *r, struct conn *c, const char *key, const char *owner)
{
	char *lk = kj__remote_key(r, "lease:", key);
	if (lk == NULL)
		return;
	const char *av[7] = { "EVAL", release_lua, "1", lk, owner, r->channel, key };
	kj__remote_send(c, 7, av);
	free(lk);
}

/* Ends a waiting lease with outcome, giving up the list's reference. */
static void lease_finish(struct kj__redis_lease *l, int outcome, const struct kj__remote_object *obj)
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

/* Another node holds the lease: wait for its publish. */
static void lease_held(struct kj__redis_lease *l)
{
	struct kj__redis *r = l->r;

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

/* The PTTL of a lease we could not take.  A node always sets its lease
 * with PX lease_ms and renews it to that: one without an expiry, or
 * outliving two lease lives, was planted by someone else (a writer to the
 * Redis), and waiting for it would cost every miss on the key the whole
 * wait_max_ms; it is counted as forged and the node compiles alone. */
static void lease_on_pttl(struct kj__redis_lease *l, const redisReply *rep)
{
	struct kj__redis *r = l->r;

	if (r == NULL || l->state == L_DONE)
		return;
	if (rep == NULL || rep->type != REDIS_REPLY_INTEGER) {
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
	} else if (rep->integer == -1 || rep->integer > 2 * (long long)r->lease_ms) {
		r->st.forged++;
		kj__remote_say(r, "lease on %.16s... %s than any node sets: not waiting for it; compiling alone "
			       "(remote forged)", l->key, rep->integer == -1 ? "has no expiry, longer" : "lives longer");
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
	} else {
		lease_held(l);
	}
}

static void lease_pttl_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	lease_on_pttl(o->lease, rep);
	kj__remote_lease_unref(o->lease);
}

static int lease_send_pttl(struct kj__redis_lease *l)
{
	struct kj__redis *r = l->r;
	char *lk = kj__remote_key(r, "lease:", l->key);
	struct op *o = lk ? kj__remote_op_new(&r->conns[C_CMD], lease_pttl_done) : NULL;
	int rc = KJIT_ENOMEM;

	if (o) {
		const char *av[2] = { "PTTL", lk };
		o->lease = l;
		l->refs++;
		if ((rc = kj__remote_op_send(o, 2, av, NULL, NULL, 0)) < 0)
			l->refs--;
	}
	free(lk);
	return rc;
}

static void lease_on_set(struct kj__redis_lease *l, int code, const redisReply *rep)
{
	struct kj__redis *r = l->r;
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
	/* held: by another node, or planted (lease_pttl_done looks first) */
	if (lease_send_pttl(l) < 0)
		lease_held(l);
}

static void lease_set_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct conn *c = o->c;

	lease_on_set(o->lease, rep ? 0 : kj__remote_conn_failure(c), rep);
	kj__remote_lease_unref(o->lease);
}

static int lease_send_set(struct kj__redis_lease *l)
{
	struct kj__redis *r = l->r;
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

static void lease_on_check(struct kj__redis_lease *l, int code, const struct kj__remote_object *obj)
{
	if (l->r == NULL || l->state != L_CHECKING)
		return;
	if (code == 1) {
		lease_finish(l, KJ_LEASE_PUBLISHED, obj);
		return;
	}
	if (code < 0 && code != KJIT_ECORRUPT && code != KJIT_EDENIED) {
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
		return;
	}
	/* absent, corrupt or forged: take the lease if its owner is gone */
	if (lease_send_set(l) < 0)
		lease_finish(l, KJ_LEASE_UNAVAILABLE, NULL);
}

static void lease_check_done(struct op *o, redisAsyncContext *ac, const redisReply *rep)
{
	struct kj__remote_object obj;
	int code = kj__remote_get_result(o->c->r, o, rep, &obj);

	lease_on_check(o->lease, code, code == 1 ? &obj : NULL);
	kj__remote_lease_unref(o->lease);
}

/* A waiter looks again: GET the object; absent -> try the lease. */
static void lease_poll(struct kj__redis_lease *l)
{
	struct kj__redis *r = l->r;
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

void kj__redis_lease(struct kj__redis *r, const char *key, kj__redis_lease_cb cb, void *arg)
{
	struct kj__redis_lease *l;

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

void kj__redis_lease_release(struct kj__redis_lease *l)
{
	struct kj__redis *r;

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

static void lease_renew(struct kj__redis_lease *l)
{
	struct kj__redis *r = l->r;
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

void kj__remote_lease_tick(struct kj__redis *r, uint64_t now)
{
	for (struct kj__redis_lease *l = r->leases, *next; l; l = next) {
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

void kj__remote_lease_wake(struct kj__redis *r, const char *key)
{
	for (struct kj__redis_lease *l = r->leases, *next; l; l = next) {
		next = l->next;
		if (memcmp(l->key, key, KJ_SHA256_HEX_LEN) != 0)
			continue;
		if (l->state == L_WAITING)
			lease_poll(l);
		else if (l->state == L_CHECKING)
			l->woken = 1;
	}
}

void kj__remote_lease_close_all(struct kj__redis *r)
{
	while (r->leases) {
		struct kj__redis_lease *l = r->leases;
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
