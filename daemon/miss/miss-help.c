/* miss-help.c: the helpers of the miss's driver (miss.c): each does one
 * thing to a flight and returns to the driver, none calls back into
 * miss.c, none moves the machine.
 *
 *  - the table of open flights (an open-addressing hash on the key's
 *    first 64 bits, at most half full, backward-shift deletion), owned by
 *    the daemon context;
 *  - a flight's life: made from get.c's resolved miss (what the index
 *    will say of its object, its first waiter, the replay recipe, the
 *    request and includes moved in, the opener's uid charged, quota.c),
 *    waiters added, freed (each waiter holds a reference on its
 *    connection until then; the fleet lease, if still held, released);
 *  - the JOB frame, built only when the flight compiles (a remote hit
 *    never copies the source into one), its bytes replacing the source's
 *    and the includes' in the charge;
 *  - refusing the waiters that may not compile (--no-compile, fetch
 *    only), with one line naming the key, the target and how to warm it;
 *  - the entry checks of an object (hip and cuda, whose keys leave the
 *    entries out): its entry list made once from its symbols, each waiter
 *    whose entries it lacks answered with one line naming the missing one;
 *  - the fleet's values.  Trust (docs/remote.md): a remote value is served
 *    only if it decoded and verified in the tier (its digest; with a fleet
 *    secret, its MAC over the store's key, metadata and object) and is for
 *    what was asked: its metadata (the tier reads it into the answer's
 *    struct kj__remote_meta) must name the request's backend, target and
 *    version, its entry list (an entrylist.h list) cover the entries
 *    asked, and the object itself must have them where its symbols can be
 *    listed (kj__entries_check).  Anything
 *    else is counted (remote forged), never served, and the node compiles
 *    as on a miss.  The value a compile publishes (kj__miss_fleet_value)
 *    carries the metadata, the object's entry list, the recipe, the log
 *    and the lowered names; its layout is the tier's (remote/).
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "miss-int.h"
#include "missroom-int.h"
#include "proto.h"
#include "remote.h"
#include "sha.h"
#include "targetid.h"
#include "util.h"

#define KJ_MISS_FLIGHTS_MIN_CAP 64 /* slots at first use; doubles when half full */

/* ---- the table of open flights ---- */

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
		size_t cap = t->cap ? t->cap * 2 : KJ_MISS_FLIGHTS_MIN_CAP, old_cap = t->cap;
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

/* ---- a flight's life ---- */

int kj__miss_add_waiter(struct kj__flight *f, struct kj__miss *m)
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
	w->explain = m->explain; /* --explain: why it was not a hit (offhash.c made it), sent with the object */
	m->explain = NULL;
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
	if (f->lease) /* a compile that never ended: let the fleet go on (without --remote, remote/ is never called) */
		kj__remote_lease_release(f->lease);
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
	free((char *)f->e.entries); /* the object's entry list, set before the publish (kj__miss_check_object) */
	free(f);
}

/* What replay needs to make this request again: the bundled kernel's name,
 * or the source, its headers, entries and options. */
static int build_recipe(struct kj__flight *f, const struct kj__get_req *g)
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

/* The object's extension: a CUDA target gives a cubin (sm_NN) or PTX
 * (compute_NN), or a fatbin when nvcc's --fatbin is among the options. */
static const char *object_ext(const struct kj__get_req *q, const char *target)
{
	switch (q->backend) {
	case KJIT_BACKEND_HIP: return "hsaco";
	case KJIT_BACKEND_CUDA:
		for (size_t i = 0; i < q->n_options; i++)
			if (kj__cuda_fatbin_opt(q->options[i]))
				return "fatbin";
		return strncmp(target, "compute_", 8) == 0 ? "ptx" : "cubin";
	default: return "spv";
	}
}

static int build_job(struct kj__flight *f, const struct kj__get_req *g, const struct kj__includes *inc)
{
	/* hip, cuda: the object is the module's whatever entries are asked;
	 * each waiter's are checked against it when it comes (kj__miss_check_object) */
	int entries = kj__cache_key_entries_in(g->backend);
	struct kj__compile_job job = {
		.target = f->e.target,
		.options = (const char *const *)g->options,
		.n_options = g->n_options,
		.entries = (const char *const *)g->entries,
		.n_entries = entries ? g->n_entries : 0,
		.source_name = f->source_name,
		.source = g->source,
		.source_len = g->source_len,
		.n_headers = inc->n,
	};
	struct kj__header *h = calloc(inc->n + 1, sizeof *h);
	if (h == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < inc->n; i++)
		h[i] = (struct kj__header){ inc->names[i], inc->data[i], inc->len[i] };
	job.headers = h;
	int r = kj__job_encode(&f->job.frame, f->job.id, &job); /* common/jobmsg.c */
	free(h);
	return r;
}


/* The bytes of the resolved includes. */
static uint64_t includes_bytes(const struct kj__includes *inc)
{
	uint64_t n = 0;

	for (size_t i = 0; i < inc->n; i++)
		n += inc->len[i];
	return n;
}

/* Frees the request's headers: the recipe holds them now. */
static void drop_headers(struct kj__get_req *q)
{
	for (size_t i = 0; i < q->n_headers; i++) {
		free(q->hnames[i]);
		free(q->hdata[i]);
	}
	free(q->hnames);
	free(q->hdata);
	free(q->hlen);
	q->hnames = NULL;
	q->hdata = NULL;
	q->hlen = NULL;
	q->n_headers = 0;
}

struct kj__flight *kj__miss_flight_new(struct kj__daemon *d, struct kj__miss *m, int *code, char *err,
				       size_t errlen)
{
	const struct kj__get_req *q = m->q;
	struct kj__flight *f = calloc(1, sizeof *f);

	*code = KJIT_ENOMEM;
	if (f == NULL)
		return NULL;
	snprintf(f->key, sizeof f->key, "%s", m->key);
	f->state = KJ_MISS_OPENED;
	f->d = d;
	f->t0 = m->t0;
	/* The hit table gets the object by these bytes, unless lowered names
	 * must go with it (the table holds none): get.c gives no fp then. */
	f->has_fp = m->fp != NULL;
	if (m->fp)
		memcpy(f->fp, m->fp, sizeof f->fp);
	f->hits_gen = m->hits_gen; /* when its resolve began: a header edited since keeps it out of the table */
	f->job.id = m->id;
	f->pool = m->pool;
	snprintf(f->e.key, sizeof f->e.key, "%s", m->key);
	f->e.backend = q->backend;
	snprintf(f->e.target, sizeof f->e.target, "%s", m->target);
	snprintf(f->e.version, sizeof f->e.version, "%s", m->version);
	snprintf(f->e.ext, sizeof f->e.ext, "%s", object_ext(q, m->target));
	f->source_name = kj__strdup(q->source_name ? q->source_name : "source");
	f->options = kj__words_join((const char *const *)q->options, q->n_options);
	f->compiler = kj__strdup(kj__pool_identity(m->pool));
	f->e.source_name = f->source_name;
	f->e.options = f->options;
	f->e.compiler = f->compiler;
	if (!f->source_name || !f->options || !f->compiler || kj__miss_add_waiter(f, m) < 0 ||
	    (q->module_entries && (f->module_entries = kj__strdup(q->module_entries)) == NULL))
		goto fail;
	if (build_recipe(f, q) != 0)
		kj__buf_free(&f->recipe); /* replay will miss it; the compile goes on */
	/* A flight holds the request's source, its includes and its recipe
	 * (then its job frame) until it ends, even if its client leaves:
	 * charged to the uid that opened it. */
	f->uid = kj__conn_uid(m->c);
	uint64_t held = q->source_len + includes_bytes(m->inc) + f->recipe.len;
	if ((*code = kj__quota_charge(d, f->uid, held, err, errlen)) < 0)
		goto fail;
	f->charged = held;
	f->job.uid = f->uid;
	/* moved, not copied: get.c and offhash.c free zeroed structs */
	f->q = *m->q;
	memset(m->q, 0, sizeof *m->q);
	f->inc = *m->inc;
	memset(m->inc, 0, sizeof *m->inc);
	drop_headers(&f->q); /* in the recipe; the frame takes the includes */
	return f;
fail:
	kj__flight_free(f);
	return NULL;
}

/* ---- the compile job ---- */

/* The frame's bytes are charged forced (the flight was admitted for their
 * like), the freed ones released. */
int kj__miss_make_job(struct kj__flight *f)
{
	uint64_t freed = f->q.source_len + includes_bytes(&f->inc);
	int r;

	if (f->job.frame.len) /* built already: its source and includes are gone */
		return 0;
	if ((r = build_job(f, &f->q, &f->inc)) < 0)
		return r;
	kj__quota_charge_over(f->d, f->uid, f->job.frame.len);
	f->charged += f->job.frame.len;
	free(f->q.source);
	f->q.source = NULL;
	f->q.source_len = 0;
	kj__includes_free(&f->inc);
	kj__quota_release(f->d, f->uid, freed);
	f->charged -= freed;
	return 0;
}

/* ---- refusals ---- */

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
			       f->key, f->e.target, f->source_name, d->miss->remote ? " nor in " : "",
			       d->miss->remote ? kj__remote_describe(d->miss->remote) : "");
	else
		kj__conn_error(w->c, w->id, KJIT_ENOENT, "%s for %s (%s) is not cached here%s%s (fetch only: not compiled)",
			       f->key, f->e.target, f->source_name, d->miss->remote ? " nor in " : "",
			       d->miss->remote ? kj__remote_describe(d->miss->remote) : "");
}

int kj__miss_fetch_only(const struct kj__flight *f)
{
	if (f->d->cfg.no_compile)
		return 1;
	for (size_t i = 0; i < f->n_w; i++)
		if (!f->w[i].no_compile)
			return 0;
	return 1;
}

void kj__miss_refuse(struct kj__flight *f)
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
		refuse_waiter(f, w);
		free(w->explain); /* --explain's text: this waiter gets no object */
		free(w->want);
		kj__conn_unref(w->c);
	}
	f->n_w = kept;
}

/* ---- the entry checks of an object ---- */

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

void kj__miss_check_object(struct kj__flight *f, const uint8_t *data, size_t len)
{
	char *list = NULL;

	if (kj__entries_list(data, len, &list) < 0)
		list = NULL; /* not recorded: filled at its first hit with entries */
	f->e.entries = list; /* the flight's now */
	if (!check_entries(f, list))
		f->has_fp = 0; /* the opener's bytes must not find this object in the hit table */
}

/* ---- the fleet's values ---- */

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
 * when it is answered (kj__miss_check_object), a missing entry being the request's
 * error, not the value's.  1 if it fits, else 0 with why in err. */
static int waiters_covered(const struct kj__flight *f, const struct kj__remote_answer *a, char *err, size_t errlen)
{
	char *list = NULL;
	int r = kj__entries_list(a->obj->data, a->obj->size, &list);

	free(list);
	if (r <= 0 || !a->judged)
		return 1; /* listable: checked per waiter; a KJO1 value: not judged, as before */
	for (size_t i = 0; i < f->n_w; i++) {
		size_t l;
		for (const char *p = f->w[i].want, *name; (name = kj__entries_next(&p, &l)) != NULL;)
			if (!kj__entries_has(a->entries, name, l)) {
				snprintf(err, errlen, "its entry list does not cover the request's");
				return 0;
			}
	}
	return 1;
}

/* What the tier read of a KJO2 value against the request's m and entries
 * want[0..n): 1 if it is for them, else 0 with why in err (quoting up to
 * 200 bytes of its metadata as stored: printable() before logging). */
static int answer_for(const struct kj__remote_answer *a, const struct kj__remote_meta *m, const char *const *want,
		      size_t n, char *err, size_t errlen)
{
	const struct kj__remote_object *o = a->obj;

	if (!a->judged)
		return 1;
	if (!a->meta_ok || a->meta.backend != m->backend || strcmp(a->meta.target, m->target) != 0 ||
	    strcmp(a->meta.version, m->version) != 0) {
		snprintf(err, errlen, "its metadata names another backend, target or version: %.*s",
			 (int)(o->meta_len > 200 ? 200 : o->meta_len), o->meta ? o->meta : "");
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!kj__entries_has(a->entries, want[i], strlen(want[i]))) {
			snprintf(err, errlen, "its entry list does not cover the request's");
			return 0;
		}
	return 1;
}

int kj__miss_fits(struct kj__flight *f, const struct kj__remote_answer *a)
{
	struct kj__buf b = { 0 };
	const char *want[KJ_ENTRIES_MAX_COUNT];
	struct kj__remote_meta m = meta_of(f);
	char err[512] = "";
	int n = job_entries(f, &b, want);

	if (n < 0)
		snprintf(err, sizeof err, "the request's entry points cannot be read (%s)", kjit_strerror(n));
	else if (answer_for(a, &m, want, (size_t)n, err, sizeof err) && waiters_covered(f, a, err, sizeof err))
		kj__entries_check(a->obj->data, a->obj->size, want, (size_t)n, err, sizeof err); /* err set: not there */
	kj__buf_free(&b);
	if (err[0] == '\0')
		return 1;
	kj__remote_note_forged(f->d->miss->remote);
	printable(err, sizeof err, err, strlen(err)); /* its metadata, the object's symbol names */
	kj__log(f->d, "remote value for %s not served: %s; compiling it here (remote forged)", f->key, err);
	return 0;
}

int kj__miss_fleet_value(struct kj__flight *f, const uint8_t *data, size_t len, const char *log,
			 const char *lowered, struct kj__remote_object *v, char **meta, struct kj__buf *ents)
{
	const char *want[KJ_ENTRIES_MAX_COUNT];
	struct kj__remote_meta m = meta_of(f);
	uint8_t dg[KJ_SHA256_LEN];

	*v = (struct kj__remote_object){ 0 };
	if (kj__hex_ok(f->e.sha256))
		memcpy(v->digest, f->e.sha256, KJ_SHA256_HEX_LEN + 1);
	else if (kj__sha256(data, len, dg) == 0)
		kj__hex(dg, v->digest);
	else
		return KJIT_EIO;
	*meta = kj__remote_meta_text(&m);
	if (*meta == NULL)
		return KJIT_ENOMEM;
	*ents = (struct kj__buf){ 0 };
	int r = value_entries(f, ents, want);
	if (r < 0) {
		free(*meta);
		kj__buf_free(ents);
		return r;
	}
	const uint8_t *recipe = f->recipe.len > KJ_FRAME_HDR_SIZE ? f->recipe.p : NULL;
	v->data = data;
	v->size = len;
	v->log = log;
	v->log_len = log ? strlen(log) : 0;
	v->recipe = recipe;
	v->recipe_len = recipe ? f->recipe.len : 0;
	v->meta = *meta;
	v->meta_len = strlen(*meta);
	v->entries = (const char *)ents->p;
	v->entries_len = ents->len;
	v->lowered = lowered;
	v->lowered_len = lowered ? strlen(lowered) : 0;
	return 0;
}
