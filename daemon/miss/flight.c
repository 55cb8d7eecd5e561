/* flight.c: the miss, one flight per key.
 *
 * A flight is a miss in progress and the requests waiting on it: the
 * first waiter opened it, later requests for the same key join it and get
 * the same bytes.  The flight module owns it whole, and struct kj__flight
 * is private to it (flight-int.h, included by daemon/flight*.c only):
 *  - flight.c: the table of open flights, a flight's life (new, waiters,
 *    free), open or join (kj__flight_open_or_join, get.c's one call), the
 *    replay recipe, and what fleet.c may know of a flight (key, lease);
 *  - flight-job.c: opening one (its index entry, compile job, recipe,
 *    quota), the compile, and the job's result (compiled or failed);
 *  - flight-serve.c: the entry checks, the answers to the waiters,
 *    refusals, and the one publish sequence;
 *  - flight-remote.c: judging a remote value for a flight, serving it, and
 *    making a compile's value for the fleet.
 * fleet.c keeps only the conversation with remote/ (lookup, lease,
 * recheck, publish) and calls these functions.
 *
 * The table of open flights is private to this file (an open-addressing
 * hash on the key's first 64 bits, at most half full, backward-shift
 * deletion) and owned by the daemon context; a flight is in the table from
 * kj__flights_insert (when opened) until kj__flights_remove, which the
 * module calls when the flight ends and before it answers the waiters.
 * Each waiter holds a reference on its connection until the flight is
 * freed.
 *
 * kj__flight_publish (flight-serve.c) is the one sequence that ends a
 * flight with an object, whatever brought it (a compile, a remote hit):
 * the waiters are answered first, then the object enters the shared hit
 * table, and its publish starts (publish.c: the file, its fsyncs and the
 * digest on a thread; the index row, the recipe and the requesters back on
 * the loop), the object served from memory until it is done; a compile's
 * object is then offered to the fleet.
 */
#include <stdlib.h>
#include <string.h>

#include "flight-int.h"
#include "kj_types.h"
#include "remote.h"
#include "util.h"

#define FLIGHTS_MIN_CAP 64 /* slots at first use; doubles when half full */

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

int kj__flight_add_waiter(struct kj__flight *f, struct kj__miss *m)
{
	if (f->n_w == f->cap_w) {
		size_t cap = f->cap_w ? f->cap_w * 2 : 4;
		struct kj__waiter *w = realloc(f->w, cap * sizeof *w);
		if (w == NULL)
			return KJIT_ENOMEM;
		f->w = w;
		f->cap_w = cap;
	}
	struct kj__waiter *w = &f->w[f->n_w++];
	kj__conn_ref(m->c);
	w->c = m->c;
	w->id = m->id;
	w->no_compile = m->q->no_compile;
	w->explain = NULL;
	w->want = m->want; /* checked when the object comes */
	m->want = NULL;
	w->has_fp = m->fp != NULL;
	w->hits_gen = m->hits_gen;
	if (m->fp)
		memcpy(w->fp, m->fp, sizeof w->fp);
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
	kj__get_req_clear(&f->q);
	kj__includes_free(&f->inc);
	kj__buf_free(&f->recipe);
	free(f->source_name);
	free(f->module_entries);
	free(f->options);
	free(f->compiler);
	free((char *)f->e.entries); /* the object's entry list, set before the publish (flight-serve.c) */
	free(f);
}

struct kj__daemon *kj__flight_daemon(const struct kj__flight *f)
{
	return f->d;
}

const char *kj__flight_key(const struct kj__flight *f)
{
	return f->key;
}

void kj__flight_set_lease(struct kj__flight *f, struct kj__remote_lease *lease)
{
	f->lease = lease;
}

struct kj__remote_lease *kj__flight_take_lease(struct kj__flight *f)
{
	struct kj__remote_lease *lease = f->lease;

	f->lease = NULL;
	return lease;
}

int kj__flight_open_or_join(struct kj__daemon *d, struct kj__miss *m, char *err, size_t errlen)
{
	struct kj__flight *f = kj__flights_find(d->flights, m->key);
	int r;

	if (f == NULL) /* opens it: may end (and free f) before it returns */
		return kj__flight_open(d, m, err, errlen);
	r = kj__flight_add_waiter(f, m);
	if (r == 0) { /* --explain: why it was not a hit (offhash.c made it), sent with the object */
		f->w[f->n_w - 1].explain = m->explain;
		m->explain = NULL;
	}
	return r;
}

/* What replay needs to make this request again: the bundled kernel's name,
 * or the source, its headers, entries and options. */
int kj__flight_build_recipe(struct kj__flight *f, const struct kj__get_req *g)
{
	struct kj__buf *b = &f->recipe;
	int r = kj__msg_begin(b, KJ_MSG_GET, 0);

	r = r ? r : kj__msg_put_u32(b, KJ_F_BACKEND, (uint32_t)g->backend);
	if (g->family) /* the compiler the request chose */
		r = r ? r : kj__msg_put_str(b, KJ_F_COMPILER, g->family);
	if (g->kernel) {
		r = r ? r : kj__msg_put_str(b, KJ_F_KERNEL, g->kernel);
		return r ? r : kj__msg_end(b);
	}
	r = r ? r : kj__msg_put_str(b, KJ_F_SOURCE_NAME, f->source_name);
	r = r ? r : kj__msg_put(b, KJ_F_SOURCE, g->source, g->source_len);
	for (size_t i = 0; r == 0 && i < g->n_entries; i++)
		r = kj__msg_put_str(b, KJ_F_ENTRY, g->entries[i]);
	for (size_t i = 0; r == 0 && i < g->n_options; i++)
		r = kj__msg_put_str(b, KJ_F_OPTION, g->options[i]);
	for (size_t i = 0; r == 0 && i < g->n_headers; i++) {
		r = kj__msg_put_str(b, KJ_F_HEADER_NAME, g->hnames[i]);
		r = r ? r : kj__msg_put(b, KJ_F_HEADER_DATA, g->hdata[i], g->hlen[i]);
	}
	return r ? r : kj__msg_end(b);
}
