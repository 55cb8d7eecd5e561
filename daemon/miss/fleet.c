/* fleet.c: the fleet tier on kjitd's request path (docs/remote.md).
 *
 * The conversation between a flight (the flight module, flight.c) and
 * remote/: lookup, lease, recheck, publish; what a flight is and what it
 * does with a value is the flight module's (kj__flight_fits,
 * kj__flight_serve_remote, kj__flight_compile...).  A local miss opens a
 * flight; kj__fleet_miss then looks the key up in the remote once for the
 * flight (requests that join meanwhile share the lookup).  A verified
 * remote object that fits is answered to every waiter as
 * KJIT_STATUS_REMOTE and published locally.  A remote miss takes the fleet
 * lease: the owner compiles (the lease stays in the flight until the
 * compile's publish hands it to kj__fleet_publish, or the flight ends; it
 * looks the key up once more first, since the object may have been
 * published between its lookup and its lease), a waiter is served the
 * object another node publishes, and an unreachable (or read-only) remote
 * means compiling alone.  A serve-only node (--no-compile), and waiters
 * that asked only to fetch (`kjit warm --remote-only`), are refused a miss
 * with one line naming the key, the target and how to warm it elsewhere.
 * Without --remote none of this allocates or connects anything: a miss
 * goes straight to the compile (or the refusal).  Trust: flight-remote.c.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"
#include "remote.h"
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
		.lookup_ms = c->remote_lookup_ms,
		.lookup_ms_per_mib = c->remote_lookup_per_mib,
		.secret = c->remote_secret,
		.secret_len = c->remote_secret_len,
		.ttl_ms = c->remote_ttl_ms,
		.max_object = c->remote_max_object,
		.log = remote_log,
		.log_arg = d,
	};
	int r = kj__remote_new(d->loop, &o, &d->remote, err, errlen);
	if (r < 0)
		return r;
	kj__log(d, "fleet tier: %s (%s%s, %s)", kj__remote_describe(d->remote),
		c->remote_mode == KJ_REMOTE_RO ? "read-only" : "read-write",
		c->no_compile ? ", serve-only: misses refused" : "",
		c->remote_secret ? "values authenticated with the fleet secret" : "values NOT authenticated");
	if (c->remote_secret == NULL)
		kj__log(d, "WARNING: --remote without --remote-secret: anyone who can write to %s can change what every "
			"node of the fleet runs; give every node the same secret file (docs/remote.md, Trust)",
			kj__remote_describe(d->remote));
	return 0;
}

static void release_lease(struct kj__flight *f, void *arg)
{
	(void)arg;
	kj__remote_lease_release(kj__flight_take_lease(f));
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

/* After taking the lease: the object may have been published (and the
 * previous owner's lease deleted) between our lookup and our SET NX; one
 * more GET closes that window, so a key is compiled once in the fleet. */
static void on_recheck(void *arg, int code, const struct kj__remote_object *obj)
{
	struct kj__flight *f = arg;
	struct kj__daemon *d = kj__flight_daemon(f);

	(void)code;
	if (d->stopping || d->remote == NULL) {
		kj__flight_fail(f, KJIT_ESHUTDOWN, "kjitd is shutting down"); /* frees the lease */
		return;
	}
	if (obj && kj__flight_fits(f, obj)) {
		kj__remote_lease_release(kj__flight_take_lease(f));
		kj__flight_serve_remote(f, obj, "published just before our lease");
		return;
	}
	kj__flight_compile(f);
}

static void on_lease(void *arg, int outcome, struct kj__remote_lease *lease, const struct kj__remote_object *obj)
{
	struct kj__flight *f = arg;
	struct kj__daemon *d = kj__flight_daemon(f);

	if (d->stopping) {
		kj__remote_lease_release(lease);
		kj__flight_fail(f, KJIT_ESHUTDOWN, "kjitd is shutting down");
		return;
	}
	switch (outcome) {
	case KJ_LEASE_PUBLISHED:
		if (kj__flight_fits(f, obj)) {
			kj__flight_serve_remote(f, obj, "compiled by another node");
			return;
		}
		break; /* not what was asked: compile alone */
	case KJ_LEASE_OWNED:
		kj__flight_set_lease(f, lease);
		kj__remote_lookup(d->remote, kj__flight_key(f), on_recheck, f);
		return;
	default:
		break; /* unavailable: compile as if alone */
	}
	kj__flight_compile(f);
}

static void on_lookup(void *arg, int code, const struct kj__remote_object *obj)
{
	struct kj__flight *f = arg;
	struct kj__daemon *d = kj__flight_daemon(f);

	if (d->stopping || d->remote == NULL) {
		kj__flight_fail(f, KJIT_ESHUTDOWN, "kjitd is shutting down");
		return;
	}
	if (obj && kj__flight_fits(f, obj)) {
		kj__flight_serve_remote(f, obj, "fetched");
		return;
	}
	if (code == KJIT_EDENIED)
		kj__log(d, "remote value for %s not served: not a KJO2 value signed with this fleet's secret; compiling "
			"it here (remote forged)", kj__flight_key(f));
	if (kj__flight_refuse_fetch_only(f))
		return;
	kj__remote_lease(d->remote, kj__flight_key(f), on_lease, f);
}

void kj__fleet_miss(struct kj__flight *f)
{
	struct kj__daemon *d = kj__flight_daemon(f);

	if (d->remote) {
		kj__remote_lookup(d->remote, kj__flight_key(f), on_lookup, f);
		return;
	}
	if (kj__flight_refuse_fetch_only(f))
		return;
	kj__flight_compile(f);
}

void kj__fleet_publish(struct kj__daemon *d, const char *key, const struct kj__remote_object *v,
		       struct kj__remote_lease *lease)
{
	if (d->remote == NULL || v == NULL) {
		kj__remote_lease_release(lease);
		return;
	}
	kj__remote_publish(d->remote, key, v, lease); /* consumes the lease; failures are counted there */
}
