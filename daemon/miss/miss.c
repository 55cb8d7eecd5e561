/* miss.c: the miss, one flight per key, as one state machine.  Read it top
 * to bottom: the machine, then the driver that runs it.
 *
 * A flight is a miss in progress and the requests waiting on it: the
 * first waiter opened it (kj__miss_open_or_join, get.c's one call), later
 * requests for the same key join it and get the same bytes.  Its life is
 * one machine (states, events and actions in miss-int.h):
 *
 *   OPENED --START--> REMOTE_LOOKUP (--remote)    or COMPILING (else)
 *   REMOTE_LOOKUP --REMOTE_HIT--> PUBLISHING (serve the fleet's value)
 *                 --REMOTE_MISS--> LEASING (ask the fleet's lease)
 *   LEASING --LEASE_OWNED--> RECHECK (look once more, the lease held)
 *           --LEASE_PUBLISHED--> PUBLISHING (another node compiled it)
 *           --LEASE_UNAVAILABLE--> COMPILING (compile alone)
 *   RECHECK --REMOTE_HIT--> PUBLISHING   --REMOTE_MISS--> COMPILING
 *   COMPILING --JOB_COMPILED--> PUBLISHING   --JOB_FAILED--> FAILED
 *   a miss no waiter may compile (--no-compile, fetch only) -> DONE, refused;
 *   SHUTDOWN while waiting on the tier -> FAILED.
 *
 * kj__miss_next is that table, pure (tests/test-miss.c drives it).  The
 * driver, feed, asks it where an event takes the flight, performs the
 * action (a lookup, the lease, the compile, an answer and the publish),
 * and each callback (the tier's, the pool's) comes back as the next
 * event.  Without --remote, START goes straight to COMPILING: remote/ is
 * never called and nothing of it is allocated.  Entering a final state
 * (PUBLISHING, DONE, FAILED) takes the flight out of the table of open
 * flights before its waiters are answered, and frees it after.
 *
 * PUBLISHING is the one sequence that ends a flight with an object,
 * whatever brought it (a compile, the fleet): the object's entries are
 * checked once (hip and cuda), every waiter is answered (the answer leaves
 * as soon as the object is here: a remote hit is one round trip to the
 * tier), the object enters the shared hit table, its publish starts
 * (publish.c: the file, fsyncs and digest on a thread; the index row,
 * recipe and requesters back on the loop; served from memory meanwhile),
 * each joiner's bytes enter the hit table, and a compile's object is then
 * published to the fleet, handing it the lease.  The helpers (the table,
 * a flight's life, the job frame, refusals, entry checks, the fleet's
 * values) are in miss-help.c; none of them calls back here.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "jobmsg.h"
#include "kj_types.h"
#include "miss-int.h"
#include "missroom-int.h"
#include "remote.h"
#include "util.h"

#define KJ_PUBLISH_UIDS_MAX 64 /* distinct requesters recorded per publish; more are rare and only cost `kjit ls` lines */

/* ---- the machine ---- */

static struct kj__miss_step to(enum kj__miss_state s, enum kj__miss_action a)
{
	return (struct kj__miss_step){ s, a };
}

/* A miss that is not served from the tier: compiled here, unless no
 * waiter may compile (then refused). */
static struct kj__miss_step compile_or_refuse(unsigned flags)
{
	if (flags & KJ_MISS_F_FETCH_ONLY)
		return to(KJ_MISS_DONE, KJ_MISS_DO_REFUSE);
	return to(KJ_MISS_COMPILING, KJ_MISS_DO_COMPILE);
}

struct kj__miss_step kj__miss_next(enum kj__miss_state s, enum kj__miss_event e, unsigned flags)
{
	struct kj__miss_step illegal = to(s, KJ_MISS_DO_ILLEGAL);

	switch (s) {
	case KJ_MISS_OPENED: /* without --remote, the tier is never asked */
		if (e != KJ_MISS_START)
			return illegal;
		return flags & KJ_MISS_F_REMOTE ? to(KJ_MISS_REMOTE_LOOKUP, KJ_MISS_DO_LOOKUP) : compile_or_refuse(flags);
	case KJ_MISS_REMOTE_LOOKUP:
		switch (e) {
		case KJ_MISS_REMOTE_HIT: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE);
		case KJ_MISS_REMOTE_MISS:
			if (flags & KJ_MISS_F_FETCH_ONLY)
				return to(KJ_MISS_DONE, KJ_MISS_DO_REFUSE);
			return to(KJ_MISS_LEASING, KJ_MISS_DO_LEASE);
		case KJ_MISS_SHUTDOWN: return to(KJ_MISS_FAILED, KJ_MISS_DO_FAIL);
		default: return illegal;
		}
	case KJ_MISS_LEASING:
		switch (e) {
		case KJ_MISS_LEASE_OWNED: return to(KJ_MISS_RECHECK, KJ_MISS_DO_RECHECK);
		case KJ_MISS_LEASE_PUBLISHED: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE);
		case KJ_MISS_LEASE_UNAVAILABLE: return compile_or_refuse(flags); /* compile alone */
		case KJ_MISS_SHUTDOWN: return to(KJ_MISS_FAILED, KJ_MISS_DO_FAIL);
		default: return illegal;
		}
	case KJ_MISS_RECHECK: /* published between our lookup and our lease? */
		switch (e) {
		case KJ_MISS_REMOTE_HIT: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE);
		case KJ_MISS_REMOTE_MISS: return compile_or_refuse(flags);
		case KJ_MISS_SHUTDOWN: return to(KJ_MISS_FAILED, KJ_MISS_DO_FAIL);
		default: return illegal;
		}
	case KJ_MISS_COMPILING: /* the pool fails its jobs itself when kjitd stops */
		switch (e) {
		case KJ_MISS_JOB_COMPILED: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_PUBLISH);
		case KJ_MISS_JOB_FAILED: return to(KJ_MISS_FAILED, KJ_MISS_DO_ANSWER_FAILURE);
		default: return illegal;
		}
	default: /* PUBLISHING, DONE, FAILED: the flight has ended */
		return illegal;
	}
}

const char *kj__miss_state_name(enum kj__miss_state s)
{
	static const char *const names[] = { "opened",	  "remote-lookup", "leasing", "recheck",
					     "compiling", "publishing",	   "done",    "failed" };

	return (unsigned)s < KJ_ARRAY_SIZE(names) ? names[s] : "?";
}

const char *kj__miss_event_name(enum kj__miss_event e)
{
	static const char *const names[] = { "start",	      "remote-hit",   "remote-miss",
					     "lease-owned",   "lease-published", "lease-unavailable",
					     "job-compiled",  "job-failed",   "shutdown" };

	return (unsigned)e < KJ_ARRAY_SIZE(names) ? names[e] : "?";
}

/* ---- the driver ---- */

/* What an event brings: the tier's value and how it came, or the job's
 * result. */
struct ev_arg {
	const struct kj__remote_answer *ans;
	const char *how;
	int32_t code;                /* the job's: for the client */
	int counted_as;              /* for the counters: a timeout stays a timeout */
	char *log, *err, *lowered;   /* malloc'd, or NULL */
	const struct kj__field *data;
	uint64_t us;
};

static void feed(struct kj__flight *f, enum kj__miss_event e, struct ev_arg *a);

static unsigned flags_of(const struct kj__flight *f)
{
	return (f->d->miss->remote ? KJ_MISS_F_REMOTE : 0) | (kj__miss_fetch_only(f) ? KJ_MISS_F_FETCH_ONLY : 0);
}

/* The tier's answer to LOOKUP and RECHECK. */
static void on_lookup(void *arg, int code, const struct kj__remote_answer *ans)
{
	struct kj__flight *f = arg;
	struct ev_arg a = { .ans = ans, .how = f->state == KJ_MISS_RECHECK ? "published just before our lease" : "fetched" };

	if (f->d->stopping || f->d->miss->remote == NULL) {
		feed(f, KJ_MISS_SHUTDOWN, &a);
		return;
	}
	if (ans && kj__miss_fits(f, ans)) {
		feed(f, KJ_MISS_REMOTE_HIT, &a);
		return;
	}
	if (code == KJIT_EDENIED)
		kj__log(f->d, "remote value for %s not served: not a KJO2 value signed with this fleet's secret; compiling "
			"it here (remote forged)", f->key);
	feed(f, KJ_MISS_REMOTE_MISS, &a);
}

/* The tier's answer to LEASE. */
static void on_lease(void *arg, int outcome, struct kj__remote_lease *lease, const struct kj__remote_answer *ans)
{
	struct kj__flight *f = arg;
	struct ev_arg a = { .ans = ans, .how = "compiled by another node" };

	if (f->d->stopping) {
		kj__remote_lease_release(lease);
		feed(f, KJ_MISS_SHUTDOWN, &a);
	} else if (outcome == KJ_LEASE_OWNED) {
		f->lease = lease; /* released when the flight ends, or handed to the fleet publish */
		feed(f, KJ_MISS_LEASE_OWNED, &a);
	} else if (outcome == KJ_LEASE_PUBLISHED && kj__miss_fits(f, ans)) {
		feed(f, KJ_MISS_LEASE_PUBLISHED, &a);
	} else { /* unavailable, or not what was asked: compile alone */
		feed(f, KJ_MISS_LEASE_UNAVAILABLE, &a);
	}
}

/* The worker's RESULT for the flight's job (pool.c): decoded (common/jobmsg.c
 * checks every field), then JOB_COMPILED or JOB_FAILED. */
static void on_job_done(struct kj__job *job, int code, const struct kj__msg *res, const char *error)
{
	struct kj__flight *f = job->data;
	struct ev_arg a = { .code = code };
	struct kj__result rm;
	char err[KJ_RESULT_ERROR_MAX];

	if (code == 0 && res) {
		int r = kj__result_decode(res, &rm, err, sizeof err);
		if (r < 0) {
			a.code = r;
			a.err = kj__strdup(err);
		} else {
			a.code = rm.code;
			a.log = rm.log;
			a.err = rm.error;
			a.lowered = rm.lowered;
			a.us = rm.compile_us;
			a.data = rm.data ? kj__msg_get(res, KJ_F_DATA) : NULL; /* the field rm.data points into */
		}
	}
	if (a.code < 0 && a.err == NULL && error)
		a.err = kj__strdup(error);
	/* To a client, KJIT_ETIMEDOUT means the daemon did not answer; a
	 * compile that ran out of time is its worker's failure. */
	a.counted_as = a.code;
	if (a.code == KJIT_ETIMEDOUT)
		a.code = KJIT_EWORKER;
	feed(f, a.code < 0 ? KJ_MISS_JOB_FAILED : KJ_MISS_JOB_COMPILED, &a);
	free(a.log);
	free(a.err);
	free(a.lowered);
}

/* LEASE and COMPILE refuse the waiters that may only fetch, once per
 * flight: those there when the tier missed (or, without --remote, the
 * opener at START); a fetch-only request that joins a flight about to
 * compile is served the object (as it always was). */
static void refuse_fetch_only(struct kj__flight *f)
{
	if (!f->fetch_checked)
		kj__miss_refuse(f);
	f->fetch_checked = 1;
}

/* COMPILE: the waiters that may not compile refused (once), the job built and
 * queued (pool.c: round-robin by uid, an idle worker fed). */
static void do_compile(struct kj__flight *f)
{
	refuse_fetch_only(f);
	int r = kj__miss_make_job(f);
	if (r < 0) {
		struct ev_arg a = { .code = r, .counted_as = r };
		a.err = kj__strdup("the request is too large to hand to a compiler");
		feed(f, KJ_MISS_JOB_FAILED, &a);
		free(a.err);
		return;
	}
	kj__log(f->d, "compile %s: %s for %s (%s), uid %u pid %d%s", f->key, f->source_name, f->e.target,
		kj__pool_family(f->pool), (unsigned)kj__conn_uid(f->w[0].c), (int)kj__conn_pid(f->w[0].c),
		f->lease ? ", fleet lease held" : "");
	f->job.data = f;
	f->job.done = on_job_done;
	kj__pool_submit(f->pool, &f->job); /* may end (and free f) at once */
}

/* PUBLISHING's sequence: every waiter answered (w[0] with status, the
 * others with join_status), the object in the shared hit table for the
 * opener's bytes, its publish started (publish.c; a failure is logged and
 * counted there: the clients have their answer, the object is just not
 * cached), then each joiner's bytes in the hit table (a joiner is there
 * only if its entries passed).  compile_ms: what a hit will save. */
static void publish(struct kj__flight *f, int status, int join_status, const uint8_t *data, size_t len,
		    const uint8_t *digest, const char *log, const char *lowered, uint64_t compile_ms)
{
	struct kj__daemon *d = f->d;
	struct kj__obj_reply o = { f->key, f->e.target, f->e.version, log, lowered, NULL };
	uid_t uids[KJ_PUBLISH_UIDS_MAX];
	size_t n = 0;

	for (size_t i = 0; i < f->n_w; i++) {
		o.explain = f->w[i].explain; /* --explain: this waiter's own */
		kj__send_object(d, f->w[i].c, f->w[i].id, i ? join_status : status, &o, data, len);
	}
	/* A client woken by a Unix socket write is put on the writer's CPU
	 * (the kernel expects the writer to sleep next), but the loop has the
	 * publish's begin, the hit table and the log still to do: ~150 us a
	 * remote hit here, which the client spent waiting.  Let it run first
	 * (issue 35: a 16 KB remote hit 790 -> 570 us on the 2-core VM, with
	 * the legacy key gone); nothing else runnable: an immediate return.
	 * Not after a compile: it took 100 ms or more, and under a full pool
	 * a compile worker on this CPU would take the rest of the loop's
	 * slice.  Nor while a publish is in flight: its thread would be
	 * given the CPU too, and back-to-back remote hits (a warm-up) waited
	 * for it.  Its result changes nothing. */
	if (status == KJIT_STATUS_REMOTE && d->miss->pub_n == 0)
		(void)sched_yield();
	/* What every waiter was just sent.  Not if the table was invalidated
	 * while the flight was open (a header changed). */
	if (f->has_fp)
		kj__hits_put_fp(d, f->uid, f->fp, f->hits_gen, f->key, f->e.target, f->e.version, data, len);
	f->e.compile_ms = compile_ms;
	f->e.log = log;
	f->e.lowered = lowered;
	for (size_t i = 0; i < f->n_w && n < KJ_ARRAY_SIZE(uids); i++) {
		uid_t u = kj__conn_uid(f->w[i].c);
		size_t j = 0;
		while (j < n && uids[j] != u)
			j++;
		if (j == n)
			uids[n++] = u;
	}
	/* the recipe is taken by the publish; a compile's fleet value needs it after: a copy */
	struct kj__buf recipe = { 0 }, *rp = &f->recipe;
	if (status == KJIT_STATUS_COMPILED && d->miss->remote) {
		rp = &recipe;
		if (f->recipe.len && kj__buf_append(&recipe, f->recipe.p, f->recipe.len) < 0)
			kj__buf_free(&recipe); /* replay will miss it */
	}
	kj__publish_start(d, &f->e, data, len, rp, digest, uids, n);
	kj__buf_free(&recipe);
	f->e.log = f->e.lowered = NULL;
	for (size_t i = 0; i < f->n_w; i++) /* w[0] too: the opener may have left (its entry missing) */
		if (f->w[i].has_fp && (!f->has_fp || memcmp(f->w[i].fp, f->fp, sizeof f->fp) != 0))
			kj__hits_put_fp(d, kj__conn_uid(f->w[i].c), f->w[i].fp, f->w[i].hits_gen, f->key, f->e.target,
					f->e.version, data, len);
}

/* PUBLISH: a compiled object to every waiter ("compiled", "joined"),
 * published here, then to the fleet off the request path, handing it the
 * lease (without --remote, or when the value cannot be made, the lease is
 * just released: a waiter elsewhere takes over). */
static void do_publish(struct kj__flight *f, const struct ev_arg *a)
{
	struct kj__daemon *d = f->d;
	const uint8_t *data = a->data ? a->data->p : NULL;
	size_t len = a->data ? a->data->len : 0;
	struct kj__remote_object v;
	struct kj__buf ents;
	char *meta;

	d->stats[KJ_STAT_COMPILES]++;
	d->stats[KJ_STAT_COMPILE_MS] += a->us / 1000;
	if (f->n_w > 1) {
		d->stats[KJ_STAT_JOINED] += f->n_w - 1;
		d->stats[KJ_STAT_SAVED_MS] += (f->n_w - 1) * (a->us / 1000);
	}
	kj__miss_check_object(f, data, len); /* every waiter's entries (hip, cuda: not in the key) */
	publish(f, KJIT_STATUS_COMPILED, KJIT_STATUS_JOINED, data, len, NULL, a->log, a->lowered, a->us / 1000);
	struct kj__remote_lease *lease = f->lease;
	f->lease = NULL;
	if (d->miss->remote == NULL)
		return; /* without --remote there is no lease, and remote/ is never called */
	if (data == NULL || kj__miss_fleet_value(f, data, len, a->log, a->lowered, &v, &meta, &ents) < 0) {
		kj__remote_lease_release(lease);
		return;
	}
	kj__remote_publish(d->miss->remote, f->key, &v, lease); /* consumes the lease; failures are counted there */
	free(meta);
	kj__buf_free(&ents);
}

/* SERVE: a verified value of the fleet to every waiter (`remote hit`),
 * then cached here with its log, lowered names and this request's recipe
 * (so `kjit show` and `kjit warm --replay` work); the lease, if held,
 * given back. */
static void do_serve(struct kj__flight *f, const struct ev_arg *a)
{
	struct kj__daemon *d = f->d;
	const struct kj__remote_object *o = a->ans->obj;
	int split = a->ans->texts_ok; /* else: no memory, nothing is cached */

	if (f->lease) { /* held after RECHECK only */
		kj__remote_lease_release(f->lease);
		f->lease = NULL;
	}
	kj__miss_check_object(f, o->data, o->size);
	d->stats[KJ_STAT_REMOTE_HITS] += f->n_w;
	if (split) {
		/* its digest spares the publish a hash of it: checked against
		 * the object, or the writer's word under the value's MAC or its
		 * checksum trailer (docs/remote.md, "The unsigned value's
		 * checksum": a wrong one is verify's to find) */
		publish(f, KJIT_STATUS_REMOTE, KJIT_STATUS_REMOTE, o->data, o->size, o->raw_digest, a->ans->log,
			a->ans->lowered, 0);
	} else { /* answered, not cached, as any failed publish */
		struct kj__obj_reply r = { f->key, f->e.target, f->e.version, NULL, NULL, NULL };
		for (size_t i = 0; i < f->n_w; i++) {
			r.explain = f->w[i].explain;
			kj__send_object(d, f->w[i].c, f->w[i].id, KJIT_STATUS_REMOTE, &r, o->data, o->size);
		}
		d->stats[KJ_STAT_PUBLISH_ERRORS]++;
		kj__log(d, "could not store %s (%s): served, not cached", f->key, kjit_strerror(KJIT_ENOMEM));
	}
	kj__log(d, "remote hit %s: %s for %s (%zu bytes, %s, %zu request%s)", f->key, f->source_name, f->e.target,
		o->size, a->how, f->n_w, f->n_w == 1 ? "" : "s");
}

/* ANSWER_FAILURE: every waiter gets the compile's failure; a source's own
 * fault is remembered (negcache.c), and the lease given back. */
static void do_answer_failure(struct kj__flight *f, const struct ev_arg *a)
{
	struct kj__daemon *d = f->d;
	const char *why = a->err ? a->err : kjit_strerror(a->code);
	char line[1200];

	if (a->code == KJIT_ECOMPILE)
		snprintf(line, sizeof line, "%s rejected %s for %s: %s", kj__pool_family(f->pool),
			 f->source_name ? f->source_name : "the source", f->e.target, why);
	else
		snprintf(line, sizeof line, "%s", why);
	for (size_t i = 0; i < f->n_w; i++) {
		kj__count_error(d, a->counted_as);
		kj__send_failure(f->w[i].c, f->w[i].id, a->code, line, a->log);
	}
	if (a->code == KJIT_ECOMPILE) /* the source's fault: answer its repeats from memory */
		kj__negcache_put(d->miss->negcache, f->key, a->code, line, a->log);
	kj__log(d, "compile %s failed: %s", f->key, line);
}

/* FAIL (and a bug's ILLEGAL): every waiter gets code and line. */
static void do_fail(struct kj__flight *f, int code, const char *line)
{
	for (size_t i = 0; i < f->n_w; i++) {
		f->d->stats[KJ_STAT_ERR_OTHER]++;
		kj__conn_error(f->w[i].c, f->w[i].id, code, "%s", line);
	}
}

/* One step: where e takes f, and its action.  Entering a final state takes
 * f out of the table first and frees it after; any other action ends in a
 * call (the tier, the pool) whose callback feeds the next event. */
static void feed(struct kj__flight *f, enum kj__miss_event e, struct ev_arg *a)
{
	struct kj__daemon *d = f->d;
	struct kj__miss_step st = kj__miss_next(f->state, e, flags_of(f));

	if (st.action == KJ_MISS_DO_ILLEGAL) {
		kj__log(d, "bug: flight %s got %s in state %s", f->key, kj__miss_event_name(e),
			kj__miss_state_name(f->state));
		if (f->state == KJ_MISS_COMPILING)
			return; /* its job is queued: its result ends it */
		st.state = KJ_MISS_FAILED;
	}
	f->state = st.state;
	if (st.state == KJ_MISS_PUBLISHING || st.state == KJ_MISS_DONE || st.state == KJ_MISS_FAILED)
		kj__flights_remove(d->miss->flights, f);
	switch (st.action) {
	case KJ_MISS_DO_LOOKUP:
	case KJ_MISS_DO_RECHECK: /* the lease held: published between our lookup and our lease? */
		kj__remote_lookup(d->miss->remote, f->key, on_lookup, f);
		return;
	case KJ_MISS_DO_LEASE:
		refuse_fetch_only(f);
		kj__remote_lease(d->miss->remote, f->key, on_lease, f);
		return;
	case KJ_MISS_DO_COMPILE: do_compile(f); return;
	case KJ_MISS_DO_SERVE: do_serve(f, a); break;
	case KJ_MISS_DO_PUBLISH: do_publish(f, a); break;
	case KJ_MISS_DO_REFUSE:
		kj__miss_refuse(f);
		kj__log(d, "refused %s for %s: not cached%s, and this node does not compile it", f->key, f->e.target,
			d->miss->remote ? " locally nor remotely" : "");
		break;
	case KJ_MISS_DO_ANSWER_FAILURE: do_answer_failure(f, a); break;
	case KJ_MISS_DO_FAIL: do_fail(f, KJIT_ESHUTDOWN, "kjitd is shutting down"); break;
	case KJ_MISS_DO_ILLEGAL: do_fail(f, KJIT_EINTERNAL, "kjitd lost track of this compile (a bug: please report)"); break;
	}
	kj__flight_free(f); /* the lease, if still held, released: the fleet goes on */
}

int kj__miss_open_or_join(struct kj__daemon *d, struct kj__miss *m, char *err, size_t errlen)
{
	struct kj__flight *f = kj__flights_find(d->miss->flights, m->key);
	int r;

	if (f)
		return kj__miss_add_waiter(f, m);
	if ((f = kj__miss_flight_new(d, m, &r, err, errlen)) == NULL)
		return r;
	if ((r = kj__flights_insert(d->miss->flights, f)) < 0) {
		kj__flight_free(f); /* with the request it took: get.c holds zeroed ones */
		return r;
	}
	feed(f, KJ_MISS_START, NULL); /* may end (and free f) before it returns */
	return 0;
}

/* ---- the fleet tier's handle (with --remote only) ---- */

static void remote_log(void *arg, const char *line)
{
	kj__log(arg, "%s", line);
}

int kj__fleet_start(struct kj__daemon *d, char *err, size_t errlen)
{
	const struct kj__config *c = &d->cfg;

	if (c->remote_url == NULL)
		return 0;
	struct kj__remote_options o = {
		.url = c->remote_url,
		.prefix = c->remote_prefix,
		.mode = c->remote_mode,
		.timeout_ms = c->remote_timeout_ms,
		.lookup_ms = c->remote_lookup_ms,
		.lookup_ms_per_mib = c->remote_lookup_per_mib,
		.secret = c->remote_secret,
		.secret_len = c->remote_secret_len,
		.ttl_ms = c->remote_ttl_ms,
		.max_object = c->remote_max_object,
		.log = remote_log,
		.log_arg = d,
	};
	int r = kj__remote_new(d->loop, &o, &d->miss->remote, err, errlen);
	if (r < 0)
		return r;
	kj__log(d, "fleet tier: %s (%s%s, %s)", kj__remote_describe(d->miss->remote),
		c->remote_mode == KJ_REMOTE_RO ? "read-only" : "read-write",
		c->no_compile ? ", serve-only: misses refused" : "",
		c->remote_secret ? "values authenticated with the fleet secret" : "values NOT authenticated");
	if (c->remote_secret == NULL)
		kj__log(d, "WARNING: --remote without --remote-secret: anyone who can write to %s can change what every "
			"node of the fleet runs; give every node the same secret file (docs/remote.md, Trust)",
			kj__remote_describe(d->miss->remote));
	return 0;
}

static void release_lease(struct kj__flight *f, void *arg)
{
	(void)arg;
	kj__remote_lease_release(f->lease);
	f->lease = NULL;
}

void kj__fleet_stop(struct kj__daemon *d)
{
	struct kj__remote *r = d->miss->remote;

	if (r == NULL)
		return;
	/* Leases die with the handle: give them back first so the fleet's
	 * waiters take over now rather than after the lease expires. */
	kj__flights_foreach(d->miss->flights, release_lease, NULL);
	d->miss->remote = NULL;
	kj__remote_close(r);
}
