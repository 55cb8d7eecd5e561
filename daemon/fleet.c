/* fleet.c: the fleet tier on kjitd's request path (docs/remote.md).
 *
 * The glue between get.c's flights and remote.c.  A local miss opens a
 * flight; kj__fleet_miss then looks the key up in the remote once for the
 * flight (requests that join meanwhile share the lookup).  A verified
 * remote object is published into the local cache and answered to every
 * waiter as KJIT_STATUS_REMOTE.  A remote miss takes the fleet lease: the
 * owner compiles (the lease stays in the flight until kj__fleet_compiled
 * publishes or releases it; it looks the key up once more first, since
 * the object may have been published between its lookup and its lease),
 * a waiter is served the object another node publishes, and an unreachable (or read-only) remote means compiling
 * alone.  A serve-only node (--no-compile), and waiters that asked only to
 * fetch (`kjit warm --remote-only`), are refused a miss with one line
 * naming the key, the target and how to warm it elsewhere.  Without
 * --remote none of this allocates or connects anything: a miss goes
 * straight to the compile (or the refusal).
 *
 * The remote's value (format 1, docs/remote.md) has a log and no other
 * place for the lowered names of C++ name expressions: they are written
 * into its log as the lines older kjit used ("kjit: lowered name: EXPR =
 * LOWERED", common/lowered.h) and taken out of it again on a remote hit,
 * so nodes of either age read each other's objects with their names.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"
#include "lowered.h"
#include "remote.h"
#include "sha.h"
#include "util.h"

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
		.ttl_ms = c->remote_ttl_ms,
		.max_object = c->remote_max_object,
		.log = remote_log,
		.log_arg = d,
	};
	int r = kj__remote_new(d->loop, &o, &d->remote, err, errlen);
	if (r == 0)
		kj__log(d, "fleet tier: %s (%s%s)", kj__remote_describe(d->remote),
			c->remote_mode == KJ_REMOTE_RO ? "read-only" : "read-write",
			c->no_compile ? ", serve-only: misses refused" : "");
	return r;
}

static void release_lease(struct kj__flight *f, void *arg)
{
	(void)arg;
	kj__remote_lease_release(f->lease);
	f->lease = NULL;
}

void kj__fleet_stop(struct kj__daemon *d)
{
	struct kj__remote *r = d->remote;

	if (r == NULL)
		return;
	/* Leases die with the handle: give them back first so the fleet's
	 * waiters take over now rather than after the lease expires. */
	kj__flights_foreach(d->flights, release_lease, NULL);
	d->remote = NULL;
	kj__remote_close(r);
}

/* Answers every waiter of f (taken out of the table) with an error and
 * frees f. */
static void fail_flight(struct kj__flight *f, int code, const char *line)
{
	kj__flights_remove(f->d->flights, f);
	for (size_t i = 0; i < f->n_w; i++) {
		f->d->stats[KJ_STAT_ERR_OTHER]++;
		kj__conn_error(f->w[i].c, f->w[i].id, code, "%s", line);
	}
	kj__flight_free(f);
}

/* A verified remote object: answered to every waiter, then cached locally
 * (with its log, lowered names and this request's recipe, so `kjit show`
 * and `kjit warm --replay` work). */
static void serve_remote(struct kj__flight *f, const struct kj__remote_object *o, const char *how)
{
	struct kj__daemon *d = f->d;
	char *all = o->log_len ? kj__strndup(o->log, o->log_len) : NULL, *log = NULL, *lowered = NULL;
	int split = kj__lowered_split_log(all, &log, &lowered) == 0;

	if (!split) { /* no memory: the whole log goes (libkjit reads the names there), nothing is cached */
		log = all;
		all = NULL;
	}
	free(all);
	kj__flights_remove(d->flights, f);
	d->stats[KJ_STAT_REMOTE_HITS] += f->n_w;
	if (split) /* the one publish sequence: waiters, hit table, cache, recipe, requesters */
		kj__flight_publish(f, KJIT_STATUS_REMOTE, KJIT_STATUS_REMOTE, o->data, o->size, log, lowered, 0);
	else { /* answered, not cached, as any failed publish */
		kj__flight_answer(f, KJIT_STATUS_REMOTE, o->data, o->size, log, lowered);
		d->stats[KJ_STAT_PUBLISH_ERRORS]++;
		kj__log(d, "could not store %s (%s): served, not cached", f->key, kjit_strerror(KJIT_ENOMEM));
	}
	kj__log(d, "remote hit %s: %s for %s (%zu bytes, %s, %zu request%s)", f->key, f->source_name, f->e.target,
		o->size, how, f->n_w, f->n_w == 1 ? "" : "s");
	free(log);
	free(lowered);
	kj__flight_free(f);
}

/* Refuses the waiters that may not compile (all of them on a serve-only
 * node).  1 if none is left (f freed), else 0. */
static int refuse_fetch_only(struct kj__flight *f)
{
	struct kj__daemon *d = f->d;
	size_t kept = 0;

	for (size_t i = 0; i < f->n_w; i++) {
		struct kj__waiter *w = &f->w[i];
		if (!d->cfg.no_compile && !w->no_compile) {
			f->w[kept++] = *w;
			continue;
		}
		d->stats[KJ_STAT_REFUSED]++;
		if (d->cfg.no_compile)
			kj__conn_error(w->c, w->id, KJIT_ENOENT,
				       "kjitd --no-compile: %s for %s (%s) is not cached here%s%s; warm it on a compiling "
				       "node (`kjit warm` against a kjitd with the same --remote) or copy it with "
				       "`kjit export` there and `kjit import` here",
				       f->key, f->e.target, f->source_name, d->remote ? " nor in " : "",
				       d->remote ? kj__remote_describe(d->remote) : "");
		else
			kj__conn_error(w->c, w->id, KJIT_ENOENT, "%s for %s (%s) is not cached here%s%s (fetch only: not compiled)",
				       f->key, f->e.target, f->source_name, d->remote ? " nor in " : "",
				       d->remote ? kj__remote_describe(d->remote) : "");
		kj__conn_unref(w->c);
	}
	f->n_w = kept;
	if (kept)
		return 0;
	kj__log(d, "refused %s for %s: not cached%s, and this node does not compile it", f->key, f->e.target,
		d->remote ? " locally nor remotely" : "");
	kj__flights_remove(d->flights, f);
	kj__flight_free(f);
	return 1;
}

static void compile(struct kj__flight *f)
{
	struct kj__daemon *d = f->d;
	struct kj__pool *pool = f->pool;

	kj__log(d, "compile %s: %s for %s (%s), uid %u pid %d%s", f->key, f->source_name, f->e.target,
		kj__pool_family(pool), (unsigned)kj__conn_uid(f->w[0].c), (int)kj__conn_pid(f->w[0].c),
		f->lease ? ", fleet lease held" : "");
	kj__pool_submit(pool, &f->job); /* may finish (and free f) at once */
}

/* After taking the lease: the object may have been published (and the
 * previous owner's lease deleted) between our lookup and our SET NX; one
 * more GET closes that window, so a key is compiled once in the fleet. */
static void on_recheck(void *arg, int code, const struct kj__remote_object *obj)
{
	struct kj__flight *f = arg;

	(void)code;
	if (f->d->stopping || f->d->remote == NULL) {
		fail_flight(f, KJIT_ESHUTDOWN, "kjitd is shutting down"); /* frees the lease */
		return;
	}
	if (obj) {
		kj__remote_lease_release(f->lease);
		f->lease = NULL;
		serve_remote(f, obj, "published just before our lease");
		return;
	}
	compile(f);
}

static void on_lease(void *arg, int outcome, struct kj__remote_lease *lease, const struct kj__remote_object *obj)
{
	struct kj__flight *f = arg;

	if (f->d->stopping) {
		kj__remote_lease_release(lease);
		fail_flight(f, KJIT_ESHUTDOWN, "kjitd is shutting down");
		return;
	}
	switch (outcome) {
	case KJ_LEASE_PUBLISHED:
		serve_remote(f, obj, "compiled by another node");
		return;
	case KJ_LEASE_OWNED:
		f->lease = lease;
		kj__remote_lookup(f->d->remote, f->key, on_recheck, f);
		return;
	default:
		break; /* unavailable: compile as if alone */
	}
	compile(f);
}

static void on_lookup(void *arg, int code, const struct kj__remote_object *obj)
{
	struct kj__flight *f = arg;
	struct kj__daemon *d = f->d;

	(void)code;
	if (d->stopping || d->remote == NULL) {
		fail_flight(f, KJIT_ESHUTDOWN, "kjitd is shutting down");
		return;
	}
	if (obj) {
		serve_remote(f, obj, "fetched");
		return;
	}
	if (refuse_fetch_only(f))
		return;
	kj__remote_lease(d->remote, f->key, on_lease, f);
}

void kj__fleet_miss(struct kj__flight *f)
{
	struct kj__daemon *d = f->d;

	if (d->remote) {
		kj__remote_lookup(d->remote, f->key, on_lookup, f);
		return;
	}
	if (refuse_fetch_only(f))
		return;
	compile(f);
}

void kj__fleet_compiled(struct kj__flight *f, const uint8_t *data, size_t len, const char *log,
			const char *lowered)
{
	struct kj__daemon *d = f->d;
	struct kj__remote_lease *lease = f->lease;
	char digest[KJ_SHA256_HEX_LEN + 1];
	uint8_t dg[KJ_SHA256_LEN];

	f->lease = NULL;
	if (d->remote == NULL || data == NULL) {
		kj__remote_lease_release(lease);
		return;
	}
	if (kj__hex_ok(f->e.sha256)) {
		memcpy(digest, f->e.sha256, sizeof digest);
	} else if (kj__sha256(data, len, dg) == 0) {
		kj__hex(dg, digest);
	} else {
		kj__remote_lease_release(lease);
		return;
	}
	const uint8_t *recipe = f->recipe.len > KJ_FRAME_HDR_SIZE ? f->recipe.p : NULL;
	int oom = 0;
	char *all = kj__lowered_join_log(log, lowered, &oom);
	if (oom && lowered) { /* its names could not go with it: not published */
		kj__remote_lease_release(lease);
		return;
	}
	kj__remote_publish(d->remote, f->key, data, len, digest, all, all ? strlen(all) : 0, recipe,
			   recipe ? f->recipe.len : 0, lease); /* consumes the lease; failures are counted there */
	free(all);
}
