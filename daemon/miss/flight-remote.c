/* flight-remote.c: a flight and the fleet's values: whether a remote
 * value is what the flight asked for, serving it, and the value a compile
 * publishes.
 *
 * Part of the flight module (flight.c says how it is split; the struct is
 * in flight-int.h); fleet.c holds the conversation with remote/ and calls
 * kj__flight_fits and kj__flight_serve_remote with what it got, and
 * flight-serve.c calls kj__flight_offer after a compile's local publish.
 *
 * Trust (docs/remote.md): a remote value is served only if it decoded and
 * verified in the tier (its digest; on a node with a fleet secret, its MAC
 * over the store's key, metadata and object) and is for what was asked:
 * the tier judges its metadata and entry list against the request's
 * (kj__remote_fits: backend, target, runtime version, entry points), and
 * here the object itself must have them where its symbols can be listed
 * (kj__entries_check).  Anything else is counted (remote forged), never
 * served, and the node compiles as on a miss; its publish overwrites the
 * value.  The value's layout, metadata text and lowered names are the
 * tier's (remote/remote-meta.c).  A served value goes through the one
 * publish sequence (kj__flight_publish) as a compile does, except the
 * publish back to the remote.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "flight-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "proto.h"
#include "remote.h"
#include "sha.h"
#include "util.h"

/* The entry points f's job asks for (build_job: the request's, for a
 * family whose key has them; hip and cuda: none), NUL-terminated back to
 * back in b, and pointers to them in v (KJ_ENTRIES_MAX_COUNT at most): how
 * many, or a negative code.  Read from the request the flight keeps, so a
 * remote value is judged before any job is built. */
static int job_entries(const struct kj__flight *f, struct kj__buf *b, const char **v)
{
	size_t n = kj__cache_key_entries_in(f->q.backend) ? f->q.n_entries : 0;

	if (n > KJ_ENTRIES_MAX_COUNT)
		return KJIT_EPROTO;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(f->q.entries[i]);
		if (l == 0)
			return KJIT_EPROTO;
		if (kj__buf_append(b, f->q.entries[i], l + 1) < 0)
			return KJIT_ENOMEM;
	}
	for (size_t i = 0, off = 0; i < n; i++) {
		v[i] = (const char *)b->p + off;
		off += strlen(v[i]) + 1;
	}
	return (int)n;
}

/* Whether p[0..l) is one of b's NUL-terminated names. */
static int listed(const struct kj__buf *b, const char *p, size_t l)
{
	for (size_t off = 0; off < b->len; off += strlen((const char *)b->p + off) + 1)
		if (strlen((const char *)b->p + off) == l && memcmp(b->p + off, p, l) == 0)
			return 1;
	return 0;
}

/* What a published value lists as its entry points, NUL-terminated back
 * to back in b: the object's full list (f->e.entries), so a node asking
 * for another entry of the module is served (whole names, up to
 * KJ_REMOTE_ENTRIES_MAX: a node judges a listable object by its symbols
 * anyway); for an object whose symbols cannot be listed, the job's and
 * the waiters' entries, the ones it was asked and served for, and every
 * entry of its module when a bundled kernel opened it (request.c), each
 * once.  0 or a negative code. */
static int value_entries(const struct kj__flight *f, struct kj__buf *b, const char **v)
{
	int r = f->e.entries ? 0 : job_entries(f, b, v);

	if (r < 0)
		return r;
	for (size_t i = 0; i <= f->n_w; i++) {
		/* the object's list; else each waiter's entries, then its module's */
		const char *p = f->e.entries ? (i ? "" : f->e.entries) : i < f->n_w ? f->w[i].want : f->module_entries;
		while (p && *p) {
			const char *nl = strchr(p, '\n');
			size_t l = nl ? (size_t)(nl - p) : strlen(p);
			if (listed(b, p, l)) {
				p += l + (nl != NULL);
				continue;
			}
			if (b->len + l + 1 > KJ_REMOTE_ENTRIES_MAX)
				return 0; /* whole names, as many as fit */
			if (kj__buf_append(b, p, l) < 0 || kj__buf_append(b, "", 1) < 0)
				return KJIT_ENOMEM;
			p += l + (nl != NULL);
		}
	}
	return 0;
}

/* What f compiles for, as the tier's metadata. */
static struct kj__remote_meta meta_of(const struct kj__flight *f)
{
	return (struct kj__remote_meta){ f->e.backend, f->e.target, f->e.version, f->e.ext, f->e.compiler };
}

/* s[0..n) for a log line: at most cap - 1 bytes, each control or non-ASCII
 * byte a '.', so what a writer to the store put in a value (its metadata,
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
 * when it is answered (flight-serve.c), a missing entry being the request's
 * error, not the value's.  1 if it fits, else 0 with why in err. */
static int waiters_covered(const struct kj__flight *f, const struct kj__remote_object *o, char *err, size_t errlen)
{
	const char *v[KJ_ENTRIES_MAX_COUNT];
	char *list = NULL;
	int r = kj__entries_list(o->data, o->size, &list);

	free(list);
	if (r <= 0)
		return 1; /* listable: checked per waiter */
	for (size_t i = 0; i < f->n_w; i++) {
		size_t n = 0;
		for (const char *p = f->w[i].want; p && *p && n < KJ_ENTRIES_MAX_COUNT; p = strchr(p, '\n') + 1)
			v[n++] = p;
		for (size_t k = 0; k < n; k++) {
			char one[KJ_NAME_MAX + 1];
			const char *one_v[1] = { one };
			snprintf(one, sizeof one, "%.*s", (int)(strchr(v[k], '\n') - v[k]), v[k]);
			if (!kj__remote_fits(o, NULL, one_v, 1, err, errlen))
				return 0; /* a KJO1 value: not judged, as before */
		}
	}
	return 1;
}

int kj__flight_fits(struct kj__flight *f, const struct kj__remote_object *o)
{
	struct kj__buf b = { 0 };
	const char *want[KJ_ENTRIES_MAX_COUNT];
	struct kj__remote_meta m = meta_of(f);
	char err[512] = "";
	int n = job_entries(f, &b, want);

	if (n < 0)
		snprintf(err, sizeof err, "the request's entry points cannot be read (%s)", kjit_strerror(n));
	else if (kj__remote_fits(o, &m, want, (size_t)n, err, sizeof err) && waiters_covered(f, o, err, sizeof err))
		kj__entries_check(o->data, o->size, want, (size_t)n, err, sizeof err); /* err set: not there */
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
void kj__flight_serve_remote(struct kj__flight *f, const struct kj__remote_object *o, const char *how)
{
	struct kj__daemon *d = f->d;
	char *log = NULL, *lowered = NULL;
	int split = kj__remote_texts(o, &log, &lowered) == 0; /* else: no memory, nothing is cached */

	kj__flights_remove(d->flights, f);
	/* the object's entry points: each waiter's checked, the index keeps them */
	kj__flight_check_object(f, o->data, o->size);
	d->stats[KJ_STAT_REMOTE_HITS] += f->n_w;
	if (split) { /* the one publish sequence: waiters, hit table, cache, recipe, requesters */
		kj__flight_publish(f, KJIT_STATUS_REMOTE, KJIT_STATUS_REMOTE, o->data, o->size, log, lowered, 0);
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

void kj__flight_offer(struct kj__flight *f, const uint8_t *data, size_t len, const char *log, const char *lowered)
{
	struct kj__daemon *d = f->d;
	struct kj__remote_lease *lease = kj__flight_take_lease(f);
	char digest[KJ_SHA256_HEX_LEN + 1];
	uint8_t dg[KJ_SHA256_LEN];

	if (d->remote == NULL || data == NULL) {
		kj__fleet_publish(d, f->key, NULL, lease);
		return;
	}
	if (kj__hex_ok(f->e.sha256)) {
		memcpy(digest, f->e.sha256, sizeof digest);
	} else if (kj__sha256(data, len, dg) == 0) {
		kj__hex(dg, digest);
	} else {
		kj__fleet_publish(d, f->key, NULL, lease);
		return;
	}
	const uint8_t *recipe = f->recipe.len > KJ_FRAME_HDR_SIZE ? f->recipe.p : NULL;
	struct kj__buf ents = { 0 };
	const char *want[KJ_ENTRIES_MAX_COUNT];
	struct kj__remote_meta m = meta_of(f);
	char *meta = kj__remote_meta_text(&m);
	if (meta == NULL || value_entries(f, &ents, want) < 0) { /* not published: nothing is lost */
		free(meta);
		kj__buf_free(&ents);
		kj__fleet_publish(d, f->key, NULL, lease);
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
	kj__fleet_publish(d, f->key, &v, lease); /* consumes the lease; failures are counted there */
	free(meta);
	kj__buf_free(&ents);
}
