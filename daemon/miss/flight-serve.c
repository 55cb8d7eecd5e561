/* flight-serve.c: a flight's answers: the entry checks, the object to every
 * waiter, refusals and failures, and the one publish sequence.
 *
 * Part of the flight module (flight.c says how it is split; the struct is
 * in flight-int.h).  Whatever brought a flight its object (a compile,
 * flight-job.c; a remote hit, flight-remote.c), it goes through the same
 * steps, in this order: the object's entry list is made once from its
 * symbols and each waiter whose entries it lacks is answered with one line
 * naming the missing one (kj__flight_check_object; hip and cuda, whose
 * keys leave the entries out); then kj__flight_publish answers every
 * remaining waiter, enters the opener's bytes in the shared hit table,
 * starts the publish (publish.c: file, index row, recipe, requesters),
 * enters each joiner's bytes, and for a compile offers the object to the
 * fleet (flight-remote.c).  The hit table only ever gets bytes whose
 * entries passed, so its answers need no check.  A waiter answered here
 * leaves the flight with its connection's reference dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "flight-int.h"
#include "kj_types.h"
#include "util.h"

#define KJ_PUBLISH_UIDS_MAX 64 /* distinct requesters recorded per publish; more are rare and only cost `kjit ls` lines */

void kj__flight_answer(struct kj__flight *f, int status, const uint8_t *data, size_t len, const char *log,
		       const char *lowered)
{
	struct kj__obj_reply o = { f->key, f->e.target, f->e.version, log, lowered, NULL };

	for (size_t i = 0; i < f->n_w; i++) {
		o.explain = f->w[i].explain; /* --explain: this waiter's own */
		kj__send_object(f->d, f->w[i].c, f->w[i].id, status, &o, data, len);
	}
}

/* Answers each waiter of f whose entries list lacks with that error and
 * takes it out of f; 1 if the waiter that opened f is still in it (its
 * bytes may enter the shared hit table), else 0. */
static int check_entries(struct kj__flight *f, const char *list)
{
	struct kj__daemon *d = f->d;
	char what[300], err[1024];
	size_t kept = 0;
	int opener_ok = 1;

	snprintf(what, sizeof what, "the object of %s for %s", f->source_name ? f->source_name : "the source",
		 f->e.target);
	for (size_t i = 0; i < f->n_w; i++) {
		struct kj__waiter *w = &f->w[i];
		int r = kj__entries_missing(list, w->want, what, err, sizeof err);
		if (r == 0) {
			f->w[kept++] = *w;
			continue;
		}
		if (i == 0)
			opener_ok = 0;
		kj__count_error(d, r);
		kj__send_failure(w->c, w->id, r, err, NULL);
		free(w->explain);
		free(w->want);
		kj__conn_unref(w->c);
	}
	f->n_w = kept;
	return opener_ok;
}

void kj__flight_check_object(struct kj__flight *f, const uint8_t *data, size_t len)
{
	char *list = NULL;

	if (kj__entries_list(data, len, &list) < 0)
		list = NULL; /* not recorded: filled at its first hit with entries */
	f->e.entries = list; /* the flight's now */
	if (!check_entries(f, list))
		f->has_fp = 0; /* the opener's bytes must not find this object in the hit table */
}

/* After f's publish: each joiner's bytes (has_fp) enter the shared hit
 * table with the object, as the opener's did; a joiner is there only if
 * its entries passed (check_entries).  Joiners of one key ask for other
 * entries of the module since entries left the key. */
static void hits_joiners(struct kj__flight *f, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < f->n_w; i++) /* w[0] too: the opener may have left (its entry missing) */
		if (f->w[i].has_fp && (!f->has_fp || memcmp(f->w[i].fp, f->fp, sizeof f->fp) != 0))
			kj__hits_put_fp(f->d, kj__conn_uid(f->w[i].c), f->w[i].fp, f->w[i].hits_gen, f->key, f->e.target, f->e.version, data, len);
}

void kj__flight_publish(struct kj__flight *f, int status, int join_status, const uint8_t *data, size_t len,
			const char *log, const char *lowered, uint64_t compile_ms)
{
	struct kj__daemon *d = f->d;
	struct kj__obj_reply o = { f->key, f->e.target, f->e.version, log, lowered, NULL };

	for (size_t i = 0; i < f->n_w; i++) {
		o.explain = f->w[i].explain; /* --explain: this waiter's own */
		kj__send_object(d, f->w[i].c, f->w[i].id, i ? join_status : status, &o, data, len);
	}
	/* What every waiter was just sent.  Not if the table was invalidated
	 * while the flight was open (a header changed). */
	if (f->has_fp)
		kj__hits_put_fp(d, f->uid, f->fp, f->hits_gen, f->key, f->e.target, f->e.version, data, len);
	f->e.compile_ms = compile_ms;
	f->e.log = log;
	f->e.lowered = lowered;
	uid_t uids[KJ_PUBLISH_UIDS_MAX];
	size_t n = 0;
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
	if (status == KJIT_STATUS_COMPILED) {
		rp = &recipe;
		if (f->recipe.len && kj__buf_append(&recipe, f->recipe.p, f->recipe.len) < 0)
			kj__buf_free(&recipe); /* replay will miss it */
	}
	kj__publish_start(d, &f->e, data, len, rp, uids, n); /* a failure is logged and counted there */
	kj__buf_free(&recipe);
	f->e.log = f->e.lowered = NULL;
	hits_joiners(f, data, len);
	if (status == KJIT_STATUS_COMPILED) /* a remote hit is in the fleet already */
		kj__flight_offer(f, data, len, log, lowered);
}

void kj__flight_fail(struct kj__flight *f, int code, const char *line)
{
	kj__flights_remove(f->d->flights, f);
	for (size_t i = 0; i < f->n_w; i++) {
		f->d->stats[KJ_STAT_ERR_OTHER]++;
		kj__conn_error(f->w[i].c, f->w[i].id, code, "%s", line);
	}
	kj__flight_free(f);
}

/* Refuses w, a waiter of f that may not compile (--no-compile, or fetch
 * only), with one line naming the key, the target and how to warm it. */
static void refuse_waiter(struct kj__flight *f, struct kj__waiter *w)
{
	struct kj__daemon *d = f->d;

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
}

int kj__flight_refuse_fetch_only(struct kj__flight *f)
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
		refuse_waiter(f, w);
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
