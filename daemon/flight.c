/* flight.c: single-flight, one compile per key.
 *
 * A flight is a compile in progress and the requests waiting on it: the
 * first waiter opened it, later requests for the same key join it and get
 * the same bytes.  The table of open flights is private to this file (an
 * open-addressing hash on the key's first 64 bits, at most half full,
 * backward-shift deletion) and owned by the daemon context; a flight is
 * in the table from kj__flights_insert until kj__flights_remove, which
 * get.c calls when its job ends and before it answers the waiters.  Each
 * waiter holds a reference on its connection until the flight is freed.
 *
 * kj__flight_publish is the one sequence that ends a flight with an
 * object, whatever brought it (a compile, get.c; a remote hit, fleet.c):
 * the waiters are answered first, then the object enters the shared hit
 * table, and its publish starts (publish.c: the file, its fsyncs and the
 * digest on a thread; the index row, the recipe and the requesters back on
 * the loop), the object served from memory until it is done.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"
#include "remote.h"
#include "util.h"

#define FLIGHTS_MIN_CAP 64 /* slots at first use; doubles when half full */
#define KJ_PUBLISH_UIDS_MAX 64 /* distinct requesters recorded per publish; more are rare and only cost `kjit ls` lines */

struct kj__flights {
	struct kj__flight **slot; /* cap slots, NULL = empty */
	size_t cap, n;
};

int kj__flights_new(struct kj__flights **out)
{
	*out = calloc(1, sizeof **out);
	return *out ? 0 : KJIT_ENOMEM;
}

void kj__flights_free(struct kj__flights *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i])
			kj__flight_free(t->slot[i]);
	free(t->slot);
	free(t);
}

static size_t flight_slot(const struct kj__flights *t, const char *key)
{
	size_t h = 0;
	for (int i = 0; i < 16; i++)
		h = h * 16 + (size_t)(key[i] <= '9' ? key[i] - '0' : key[i] - 'a' + 10);
	return h & (t->cap - 1);
}

/* Puts f in the first free slot from its home (the table has room). */
static void place(struct kj__flights *t, struct kj__flight *f)
{
	size_t j = flight_slot(t, f->key);

	while (t->slot[j])
		j = (j + 1) & (t->cap - 1);
	t->slot[j] = f;
}

size_t kj__flights_count(const struct kj__flights *t)
{
	return t ? t->n : 0;
}

struct kj__flight *kj__flights_find(struct kj__flights *t, const char *key)
{
	if (t->cap == 0)
		return NULL;
	for (size_t i = flight_slot(t, key);; i = (i + 1) & (t->cap - 1)) {
		struct kj__flight *f = t->slot[i];
		if (f == NULL)
			return NULL;
		if (strcmp(f->key, key) == 0)
			return f;
	}
}

int kj__flights_insert(struct kj__flights *t, struct kj__flight *f)
{
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : FLIGHTS_MIN_CAP, old_cap = t->cap;
		struct kj__flight **old = t->slot, **slot = calloc(cap, sizeof *slot);
		if (slot == NULL)
			return KJIT_ENOMEM;
		t->slot = slot;
		t->cap = cap;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i])
				place(t, old[i]);
		free(old);
	}
	place(t, f);
	t->n++;
	return 0;
}

void kj__flights_remove(struct kj__flights *t, struct kj__flight *f)
{
	size_t i = flight_slot(t, f->key);

	while (t->slot[i] != f)
		i = (i + 1) & (t->cap - 1);
	t->slot[i] = NULL;
	t->n--;
	/* Re-insert the rest of the cluster (backward-shift deletion). */
	for (size_t j = (i + 1) & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1)) {
		struct kj__flight *g = t->slot[j];
		t->slot[j] = NULL;
		place(t, g);
	}
}

void kj__flights_foreach(struct kj__flights *t, void (*fn)(struct kj__flight *f, void *arg), void *arg)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i])
			fn(t->slot[i], arg);
}

struct kj__flight *kj__flight_new(struct kj__daemon *d, const char *key)
{
	struct kj__flight *f = calloc(1, sizeof *f);

	if (f == NULL)
		return NULL;
	snprintf(f->key, sizeof f->key, "%s", key);
	f->d = d;
	return f;
}

int kj__flight_add_waiter(struct kj__flight *f, struct kj__conn *c, uint32_t id)
{
	if (f->n_w == f->cap_w) {
		size_t cap = f->cap_w ? f->cap_w * 2 : 4;
		struct kj__waiter *w = realloc(f->w, cap * sizeof *w);
		if (w == NULL)
			return KJIT_ENOMEM;
		f->w = w;
		f->cap_w = cap;
	}
	kj__conn_ref(c);
	f->w[f->n_w].c = c;
	f->w[f->n_w].id = id;
	f->w[f->n_w].no_compile = 0;
	f->w[f->n_w].explain = NULL;
	f->w[f->n_w].want = NULL;
	f->w[f->n_w].has_fp = 0;
	f->n_w++;
	return 0;
}

void kj__flight_free(struct kj__flight *f)
{
	if (f == NULL)
		return;
	kj__quota_release(f->d, f->uid, f->charged);
	kj__remote_lease_release(f->lease); /* a compile that never ended: let the fleet go on */
	for (size_t i = 0; i < f->n_w; i++) {
		kj__conn_unref(f->w[i].c);
		free(f->w[i].explain);
		free(f->w[i].want);
	}
	free(f->w);
	kj__buf_free(&f->job.frame);
	kj__buf_free(&f->recipe);
	free(f->source_name);
	free(f->options);
	free(f->compiler);
	free((char *)f->e.entries); /* the object's entry list, set by get.c or fleet.c before the publish */
	free(f);
}

int kj__flight_publish(struct kj__flight *f, int status, int join_status, const uint8_t *data, size_t len,
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
		kj__hits_put_fp(d, f->fp, f->hits_gen, f->key, f->e.target, f->e.version, data, len);
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
	int r = kj__publish_start(d, &f->e, data, len, &f->recipe, uids, n);
	f->e.log = f->e.lowered = NULL;
	return r;
}
