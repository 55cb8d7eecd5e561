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
 * Trust (docs/remote.md): a remote value is served only if it decoded and
 * verified in remote-value.c (its digest; on a node with a fleet secret,
 * its HMAC over the Redis key, metadata and object) and here it is for
 * what was asked: its metadata names the request's backend, target and
 * runtime version, its entry list covers the request's entry points, and
 * the object itself has them where its symbols can be listed
 * (kj__entries_check).  Anything else is counted (remote forged), never
 * served, and the node compiles as on a miss; its publish overwrites the
 * value.  KJO2 values carry the lowered names of C++ name expressions in a
 * field of their own; a KJO1 value (read only by a node without a secret)
 * carries them in its log as "kjit: lowered name: EXPR = LOWERED" lines
 * (common/lowered.h), taken out of it here.
 */
#include <stdlib.h>
#include <string.h>

#include "compint.h"
#include "daemon.h"
#include "kj_limits.h"
#include "proto.h"
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

/* The entry points f's job asks for, NUL-terminated back to back in b,
 * and pointers to them in v (KJ_ENTRIES_MAX_COUNT at most): how many, or a
 * negative code. */
static int job_entries(const struct kj__flight *f, struct kj__buf *b, const char **v)
{
	struct kj__msg m;
	size_t pos = 0, n = 0;
	const struct kj__field *fl;
	int r = KJIT_EPROTO;

	if (f->job.frame.len < KJ_FRAME_HDR_SIZE ||
	    kj__msg_decode(f->job.frame.p + KJ_FRAME_HDR_SIZE, f->job.frame.len - KJ_FRAME_HDR_SIZE, &m) < 0)
		return r;
	r = 0;
	while (r == 0 && (fl = kj__msg_next(&m, KJ_F_ENTRY, &pos)) != NULL) {
		if (n == KJ_ENTRIES_MAX_COUNT || memchr(fl->p, '\0', fl->len) != NULL || fl->len == 0)
			r = KJIT_EPROTO;
		else if (kj__buf_append(b, fl->p, fl->len) < 0 || kj__buf_append(b, "", 1) < 0)
			r = KJIT_ENOMEM;
		else
			n++;
	}
	kj__msg_free(&m);
	if (r < 0)
		return r;
	for (size_t i = 0, off = 0; i < n; i++) {
		v[i] = (const char *)b->p + off;
		off += strlen(v[i]) + 1;
	}
	return (int)n;
}

/* What a published value lists as its entry points, NUL-terminated back
 * to back in b: the object's full list (f->e.entries), so a node asking
 * for another entry of the module is served (whole names, up to
 * KJ_REMOTE_ENTRIES_MAX: a node judges a listable object by its symbols
 * anyway); for an object whose symbols cannot be listed, the job's and
 * the waiters' entries, the ones it was asked and served for.  0 or a
 * negative code. */
static int value_entries(const struct kj__flight *f, struct kj__buf *b, const char **v)
{
	int r = f->e.entries ? 0 : job_entries(f, b, v);

	if (r < 0)
		return r;
	for (size_t i = 0; i <= f->n_w; i++) {
		/* the object's list; else each waiter's entries */
		const char *p = f->e.entries ? (i ? "" : f->e.entries) : i < f->n_w ? f->w[i].want : NULL;
		while (p && *p) {
			const char *nl = strchr(p, '\n');
			size_t l = nl ? (size_t)(nl - p) : strlen(p);
			if (b->len + l + 1 > KJ_REMOTE_ENTRIES_MAX)
				return 0; /* whole names, as many as fit */
			if (kj__buf_append(b, p, l) < 0 || kj__buf_append(b, "", 1) < 0)
				return KJIT_ENOMEM;
			p += l + (nl != NULL);
		}
	}
	return 0;
}

/* The start of a KJO2 value's metadata for f: what must match. */
static char *meta_of(const struct kj__flight *f)
{
	return kj__asprintf("backend=%d\ntarget=%s\nversion=%s\n", f->e.backend, f->e.target, f->e.version);
}

/* s[0..n) for a log line: at most cap - 1 bytes, each control or non-ASCII
 * byte a '.', so what a writer to the Redis put in a value (its metadata,
 * its object's symbol names) cannot forge lines of kjitd's log.  out may
 * be s. */
static void printable(char *out, size_t cap, const char *s, size_t n)
{
	size_t i = 0;

	for (; i < n && i + 1 < cap; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '.';
	out[i] = '\0';
}

/* hip, cuda (entries not in the key): an object whose symbols cannot be
 * listed is judged by the value's signed entry list, which must cover
 * every waiter's entries; one whose symbols can be is judged per waiter
 * when it is answered (reply.c), a missing entry being the request's
 * error, not the value's.  1 if it fits, else 0 with why in err. */
static int waiters_covered(const struct kj__flight *f, const struct kj__remote_object *o, char *err, size_t errlen)
{
	const char *v[KJ_ENTRIES_MAX_COUNT];
	char *list = NULL;
	int r = kj__entries_list(o->data, o->size, &list);

	free(list);
	if (r <= 0 || o->format != 2)
		return 1; /* listable (checked per waiter), or a KJO1 value: not judged, as before */
	for (size_t i = 0; i < f->n_w; i++) {
		size_t n = 0;
		for (const char *p = f->w[i].want; p && *p && n < KJ_ENTRIES_MAX_COUNT; p = strchr(p, '\n') + 1)
			v[n++] = p;
		for (size_t k = 0; k < n; k++) {
			char one[KJ_NAME_MAX + 1];
			const char *one_v[1] = { one };
			snprintf(one, sizeof one, "%.*s", (int)(strchr(v[k], '\n') - v[k]), v[k]);
			if (!kj__remote_entries_cover(o, one_v, 1)) {
				snprintf(err, errlen, "its entry list does not cover the request's");
				return 0;
			}
		}
	}
	return 1;
}

/* 1 if o (verified by remote.c) is what f asked for; else 0, counted as
 * forged and logged (why). */
static int remote_fits(struct kj__flight *f, const struct kj__remote_object *o)
{
	struct kj__buf b = { 0 };
	const char *want[KJ_ENTRIES_MAX_COUNT];
	char *meta = meta_of(f), err[512] = "";
	int n = job_entries(f, &b, want);

	if (meta == NULL || n < 0)
		snprintf(err, sizeof err, "the request's entry points cannot be read (%s)", kjit_strerror(meta ? n : KJIT_ENOMEM));
	else if (o->format == 2 && (o->meta_len < strlen(meta) || memcmp(o->meta, meta, strlen(meta)) != 0))
		snprintf(err, sizeof err, "its metadata names another backend, target or version: %.*s",
			 (int)(o->meta_len > 200 ? 200 : o->meta_len), o->meta ? o->meta : "");
	else if (o->format == 2 && !kj__remote_entries_cover(o, want, (size_t)n))
		snprintf(err, sizeof err, "its entry list does not cover the request's");
	else if (waiters_covered(f, o, err, sizeof err))
		kj__entries_check(o->data, o->size, want, (size_t)n, err, sizeof err); /* err set: not there */
	free(meta);
	kj__buf_free(&b);
	if (err[0] == '\0')
		return 1;
	kj__remote_note_forged(f->d->remote);
	printable(err, sizeof err, err, strlen(err)); /* its metadata, the object's symbol names */
	kj__log(f->d, "remote value for %s not served: %s; compiling it here (remote forged)", f->key, err);
	return 0;
}

/* A verified remote object: answered to every waiter, then cached locally
 * (with its log, lowered names and this request's recipe, so `kjit show`
 * and `kjit warm --replay` work). */
static void serve_remote(struct kj__flight *f, const struct kj__remote_object *o, const char *how)
{
	struct kj__daemon *d = f->d;
	char *all = o->log_len ? kj__strndup(o->log, o->log_len) : NULL, *log = NULL, *lowered = NULL;
	int split;

	if (o->format == 2) { /* the names have a field of their own */
		log = all;
		all = NULL;
		lowered = o->lowered_len ? kj__strndup(o->lowered, o->lowered_len) : NULL;
		split = (o->log_len == 0 || log) && (o->lowered_len == 0 || lowered);
	} else {
		split = kj__lowered_split_log(all, &log, &lowered) == 0;
	}

	if (!split) { /* no memory: the whole log goes (libkjit reads the names there), nothing is cached */
		log = all;
		all = NULL;
	}
	free(all);
	kj__flights_remove(d->flights, f);
	/* the object's entry points: each waiter's checked, the index keeps them */
	char *list = NULL;
	if (kj__entries_list(o->data, o->size, &list) < 0)
		list = NULL;
	f->e.entries = list; /* the flight's now */
	if (!kj__flight_check_entries(f, list))
		f->has_fp = 0;
	d->stats[KJ_STAT_REMOTE_HITS] += f->n_w;
	if (split) { /* the one publish sequence: waiters, hit table, cache, recipe, requesters */
		kj__flight_publish(f, KJIT_STATUS_REMOTE, KJIT_STATUS_REMOTE, o->data, o->size, log, lowered, 0);
		kj__flight_hits_joiners(f, o->data, o->size);
	} else { /* answered, not cached, as any failed publish */
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
		if (i == 0 && w->want)
			f->has_fp = 0; /* the opener's entries go unchecked: its bytes stay out of the hit table */
		free(w->explain); /* --explain's text: this waiter gets no object */
		w->explain = NULL;
		free(w->want);
		w->want = NULL;
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
	if (obj && remote_fits(f, obj)) {
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
		if (remote_fits(f, obj)) {
			serve_remote(f, obj, "compiled by another node");
			return;
		}
		break; /* not what was asked: compile alone */
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

	if (d->stopping || d->remote == NULL) {
		fail_flight(f, KJIT_ESHUTDOWN, "kjitd is shutting down");
		return;
	}
	if (obj && remote_fits(f, obj)) {
		serve_remote(f, obj, "fetched");
		return;
	}
	if (code == KJIT_EDENIED)
		kj__log(d, "remote value for %s not served: not a KJO2 value signed with this fleet's secret; compiling "
			"it here (remote forged)", f->key);
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
	struct kj__buf ents = { 0 };
	const char *want[KJ_ENTRIES_MAX_COUNT];
	char *meta = kj__asprintf("backend=%d\ntarget=%s\nversion=%s\next=%s\ncompiler=%s\n", f->e.backend,
				  f->e.target, f->e.version, f->e.ext, f->e.compiler ? f->e.compiler : "");
	if (meta == NULL || value_entries(f, &ents, want) < 0) { /* not published: nothing is lost */
		free(meta);
		kj__buf_free(&ents);
		kj__remote_lease_release(lease);
		return;
	}
	struct kj__remote_object v = {
		.data = data, .size = len, .log = log, .log_len = log ? strlen(log) : 0,
		.recipe = recipe, .recipe_len = recipe ? f->recipe.len : 0,
		.meta = meta, .meta_len = strlen(meta),
		.entries = (const char *)ents.p, .entries_len = ents.len,
		.lowered = lowered, .lowered_len = lowered ? strlen(lowered) : 0,
	};
	memcpy(v.digest, digest, sizeof digest);
	kj__remote_publish(d->remote, f->key, &v, lease); /* consumes the lease; failures are counted there */
	free(meta);
	kj__buf_free(&ents);
}
