/* flight-job.c: a flight's compile, from its opening to its result.
 *
 * Part of the flight module (flight.c says how it is split; the struct is
 * in flight-int.h).  kj__flight_open makes a flight for a key no flight has
 * open: what the index will say of its object (entry, extension, options,
 * compiler identity) and its replay recipe; it takes the request and its
 * includes over from get.c (moved, not copied), charged to the opener's
 * uid (quota.c) until it ends, then puts it in the table and hands it to
 * the fleet tier (fleet.c kj__fleet_miss), which looks the key up in the
 * remote, refuses it, or calls kj__flight_compile.  Only a compile builds
 * the JOB frame (build_job, in kj__flight_compile): a remote hit never
 * copies the source into one; the frame's bytes replace the source's and
 * the includes' in the charge.  When the
 * worker answers (on_job_done) the flight leaves the table, the RESULT is
 * decoded, and every waiter gets the failure (remembered in negcache.c
 * when it is the source's fault) or the object (kj__flight_publish).
 * A flight charged to its uid stays charged until it is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "compiler.h"
#include "flight-int.h"
#include "kj_types.h"
#include "lowered.h"
#include "targetid.h"
#include "util.h"

/* ---- compile completion ---- */

/* What a worker answered for a job. */
struct job_result {
	int32_t code;                /* for the client */
	int counted_as;              /* for the counters: a timeout stays a timeout */
	char *log, *err, *lowered;   /* malloc'd, or NULL */
	const struct kj__field *data;
	uint64_t us;
};

static void job_result_decode(int code, const struct kj__msg *res, struct job_result *jr)
{
	struct kj__result rm;
	char err[KJ_RESULT_ERROR_MAX];

	jr->code = code;
	if (code == 0 && res) { /* common/jobmsg.c checks every field */
		int r = kj__result_decode(res, &rm, err, sizeof err);
		if (r < 0) {
			jr->code = r;
			jr->err = kj__strdup(err);
		} else {
			jr->code = rm.code;
			jr->log = rm.log;
			jr->err = rm.error;
			jr->lowered = rm.lowered;
			jr->us = rm.compile_us;
			jr->data = rm.data ? kj__msg_get(res, KJ_F_DATA) : NULL; /* the field rm.data points into */
		}
	}
	/* To a client, KJIT_ETIMEDOUT means the daemon did not answer; a
	 * compile that ran out of time is its worker's failure. */
	jr->counted_as = jr->code;
	if (jr->code == KJIT_ETIMEDOUT)
		jr->code = KJIT_EWORKER;
}

/* Every waiter gets the failure; a source's own fault is remembered. */
static void job_failed(struct kj__flight *f, const struct job_result *jr, const char *error)
{
	struct kj__daemon *d = f->d;
	const char *why = jr->err ? jr->err : error ? error : kjit_strerror(jr->code);
	char line[1200];

	if (jr->code == KJIT_ECOMPILE)
		snprintf(line, sizeof line, "%s rejected %s for %s: %s", kj__pool_family(f->pool),
			 f->source_name ? f->source_name : "the source", f->e.target, why);
	else
		snprintf(line, sizeof line, "%s", why);
	for (size_t i = 0; i < f->n_w; i++) {
		kj__count_error(d, jr->counted_as);
		kj__send_failure(f->w[i].c, f->w[i].id, jr->code, line, jr->log);
	}
	if (jr->code == KJIT_ECOMPILE) /* the source's fault: answer its repeats from memory */
		kj__negcache_put(d->negcache, f->key, jr->code, line, jr->log);
	kj__log(d, "compile %s failed: %s", f->key, line);
	kj__fleet_publish(d, f->key, NULL, kj__flight_take_lease(f)); /* a waiter elsewhere takes over */
}

/* Every waiter gets the object (the first "compiled", the others
 * "joined"), then it is published and offered to the fleet
 * (kj__flight_publish). */
static void job_compiled(struct kj__flight *f, const struct job_result *jr)
{
	struct kj__daemon *d = f->d;
	const uint8_t *data = jr->data->p;
	size_t len = jr->data->len;

	d->stats[KJ_STAT_COMPILES]++;
	d->stats[KJ_STAT_COMPILE_MS] += jr->us / 1000;
	if (f->n_w > 1) {
		d->stats[KJ_STAT_JOINED] += f->n_w - 1;
		d->stats[KJ_STAT_SAVED_MS] += (f->n_w - 1) * (jr->us / 1000);
	}
	/* the object's entry points: every waiter's are checked (hip, cuda:
	 * not in the key), and the index keeps them beside the object */
	kj__flight_check_object(f, data, len);
	kj__flight_publish(f, KJIT_STATUS_COMPILED, KJIT_STATUS_JOINED, data, len, jr->log, jr->lowered, jr->us / 1000);
}

static void on_job_done(struct kj__job *job, int code, const struct kj__msg *res, const char *error)
{
	struct kj__flight *f = job->data;
	struct job_result jr = { 0 };

	kj__flights_remove(f->d->flights, f);
	job_result_decode(code, res, &jr);
	if (jr.code < 0)
		job_failed(f, &jr, error);
	else
		job_compiled(f, &jr);
	free(jr.log);
	free(jr.err);
	free(jr.lowered);
	kj__flight_free(f);
}


/* ---- opening a flight ---- */

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

static char *join_options(char **v, size_t n)
{
	struct kj__buf b = { 0 };

	for (size_t i = 0; i < n; i++)
		if ((i && kj__buf_append(&b, " ", 1) < 0) || kj__buf_append(&b, v[i], strlen(v[i])) < 0) {
			kj__buf_free(&b);
			return NULL;
		}
	if (kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

static int build_job(struct kj__flight *f, const struct kj__get_req *g, const struct kj__includes *inc)
{
	/* hip, cuda: the object is the module's whatever entries are asked;
	 * each waiter's are checked against it when it comes (flight-serve.c) */
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

/* Opens the flight for m->key: its index entry and replay recipe, the
 * request and its includes moved in (the compile job is built from them
 * only if it compiles: kj__flight_compile), then hands it to the fleet
 * tier (fleet.c: remote lookup, lease, then the compile). */
int kj__flight_open(struct kj__daemon *d, struct kj__miss *m, char *err, size_t errlen)
{
	const struct kj__get_req *q = m->q;
	struct kj__flight *f = kj__flight_new(d, m->key);
	int r = KJIT_ENOMEM;

	if (f == NULL)
		return KJIT_ENOMEM;
	f->t0 = m->t0;
	/* The hit table gets the object by these bytes, unless lowered names
	 * must go with it (the table holds none): get.c gives no fp then. */
	f->has_fp = m->fp != NULL;
	if (m->fp)
		memcpy(f->fp, m->fp, sizeof f->fp);
	f->hits_gen = m->hits_gen; /* when its resolve began: a header edited since keeps it out of the table */
	f->job.data = f;
	f->job.done = on_job_done;
	f->job.id = m->id;
	f->pool = m->pool;
	snprintf(f->e.key, sizeof f->e.key, "%s", m->key);
	f->e.backend = q->backend;
	snprintf(f->e.target, sizeof f->e.target, "%s", m->target);
	snprintf(f->e.version, sizeof f->e.version, "%s", m->version);
	snprintf(f->e.ext, sizeof f->e.ext, "%s", object_ext(q, m->target));
	f->source_name = kj__strdup(q->source_name ? q->source_name : "source");
	f->options = join_options(q->options, q->n_options);
	f->compiler = kj__strdup(kj__pool_identity(m->pool));
	f->e.source_name = f->source_name;
	f->e.options = f->options;
	f->e.compiler = f->compiler;
	if (!f->source_name || !f->options || !f->compiler || kj__flight_add_waiter(f, m) < 0 ||
	    (q->module_entries && (f->module_entries = kj__strdup(q->module_entries)) == NULL))
		goto fail;
	if (kj__flight_build_recipe(f, q) != 0)
		kj__buf_free(&f->recipe); /* replay will miss it; the compile goes on */
	/* A flight holds the request's source, its includes and its recipe
	 * (then its job frame) until it ends, even if its client leaves:
	 * charged to the uid that opened it. */
	f->uid = kj__conn_uid(m->c);
	uint64_t held = q->source_len + includes_bytes(m->inc) + f->recipe.len;
	r = kj__quota_charge(d, f->uid, held, err, errlen);
	if (r < 0)
		goto fail;
	f->charged = held;
	f->job.uid = f->uid;
	r = kj__flights_insert(d->flights, f);
	if (r < 0)
		goto fail;
	/* moved, not copied: get.c and offhash.c free zeroed structs */
	f->q = *m->q;
	memset(m->q, 0, sizeof *m->q);
	f->inc = *m->inc;
	memset(m->inc, 0, sizeof *m->inc);
	drop_headers(&f->q); /* in the recipe; the frame takes the includes */
	f->w[0].explain = m->explain; /* --explain: why it was not a hit (offhash.c made it), sent with the object */
	m->explain = NULL;
	kj__fleet_miss(f); /* remote, lease, compile or refusal: may finish (and free f) at once */
	return 0;
fail:
	kj__flight_free(f);
	return r;
}

/* Builds f's JOB frame from its request and includes, then frees them (the
 * frame holds them now), the uid's charge following: the frame's bytes
 * charged (forced: the flight was admitted for their like), the freed
 * ones released.  0 or a negative code. */
static int make_job(struct kj__flight *f)
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

void kj__flight_compile(struct kj__flight *f)
{
	struct kj__daemon *d = f->d;
	struct kj__pool *pool = f->pool;

	int r = make_job(f);
	if (r < 0) {
		kj__flight_fail(f, r, "the request is too large to hand to a compiler"); /* frees the lease */
		return;
	}
	kj__log(d, "compile %s: %s for %s (%s), uid %u pid %d%s", f->key, f->source_name, f->e.target,
		kj__pool_family(pool), (unsigned)kj__conn_uid(f->w[0].c), (int)kj__conn_pid(f->w[0].c),
		f->lease ? ", fleet lease held" : "");
	kj__pool_submit(pool, &f->job); /* may finish (and free f) at once */
}
