/* offloop.c: the admin commands that read or remove the whole cache (gc,
 * verify, clear, and the size cap's own gc) run with their slow part on
 * libuv's thread pool, so that kjitd's loop keeps answering everyone else
 * meanwhile (issue 25); each answers its client when it has finished.
 *
 * Invariants:
 *  - One job at a time: the others wait in d->offloop_head's queue, in
 *    arrival order, and start when the one before has finished.
 *  - The loop's tables (cache/table.c, the hot set, the hit table) change
 *    only on the loop: in kj__cache_job_begin and kj__cache_job_finish,
 *    called here from the loop; the thread runs kj__cache_job_run alone
 *    (cache/job.c says what it may touch).
 *  - A job holds a reference to its connection until it has answered; a
 *    client gone meanwhile is answered into a closed connection (nothing).
 *  - When kjitd stops, the job running completes (the loop runs until it
 *    has), the ones queued are answered with KJIT_ESHUTDOWN.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"
#include "util.h"

struct kj__offloop {
	uv_work_t work;
	struct kj__daemon *d;
	struct kj__conn *conn; /* NULL: the size cap's gc, no one to answer */
	uint32_t id;
	int kind;
	uint64_t cap;
	char *target;
	struct kj__cache_job *job;
	struct kj__buf text;   /* verify: one line per object dropped */
	struct kj__offloop *next;
};

static void job_free(struct kj__offloop *m)
{
	if (m->conn)
		kj__conn_unref(m->conn);
	kj__cache_job_free(m->job);
	kj__buf_free(&m->text);
	free(m->target);
	free(m);
}

static void verify_bad(const struct kj__cache_entry *e, const char *why, void *arg)
{
	struct kj__offloop *m = arg;

	kj__buf_printf(&m->text, "corrupt %s %s-%s: %s (dropped)\n", e->key, e->target, e->version, why);
}

/* The answer of a finished job: its text and JSON, as the commands always
 * printed them.  r: the job's outcome; 0 or a negative code. */
static int answer_text(struct kj__offloop *m, const struct kj__cache_job_result *res, struct kj__buf *json,
		       char *err, size_t errlen)
{
	struct kj__daemon *d = m->d;
	struct kj__cache_totals t = { 0 };
	struct kj__buf *text = &m->text;
	int r = 0;

	kj__cache_totals(d->cache, &t);
	if (m->kind == KJ_CACHE_JOB_GC) {
		r |= kj__buf_printf(text, "gc: evicted %llu entries, freed %llu bytes; %llu entries, %llu bytes remain\n",
				    (unsigned long long)res->evicted, (unsigned long long)res->freed,
				    (unsigned long long)t.entries, (unsigned long long)t.bytes);
		r |= kj__buf_printf(json, "{\"evicted\":%llu,\"freed\":%llu,\"entries\":%llu,\"bytes\":%llu}",
				    (unsigned long long)res->evicted, (unsigned long long)res->freed,
				    (unsigned long long)t.entries, (unsigned long long)t.bytes);
	} else if (m->kind == KJ_CACHE_JOB_VERIFY) {
		r |= kj__buf_printf(text, "verify: %llu objects checked, %llu corrupt or missing (dropped)\n",
				    (unsigned long long)res->checked, (unsigned long long)res->bad);
		r |= kj__buf_printf(json, "{\"checked\":%llu,\"bad\":%llu}", (unsigned long long)res->checked,
				    (unsigned long long)res->bad);
		if (r == 0 && res->bad) {
			snprintf(err, errlen, "verify found %llu corrupt or missing objects (dropped; they will be recompiled)",
				 (unsigned long long)res->bad);
			return KJIT_ECORRUPT;
		}
	} else {
		r |= kj__buf_printf(text, "clear: removed %llu entries\n", (unsigned long long)res->removed);
		r |= kj__buf_printf(json, "{\"removed\":%llu}", (unsigned long long)res->removed);
	}
	return r ? KJIT_ENOMEM : 0;
}

static const char *const kind_name[] = { [KJ_CACHE_JOB_GC] = "gc", [KJ_CACHE_JOB_VERIFY] = "verify",
					 [KJ_CACHE_JOB_CLEAR] = "clear" };

static void answer(struct kj__offloop *m, int r)
{
	struct kj__cache_job_result res = { 0 };
	struct kj__buf json = { 0 };
	char err[512] = "";

	if (m->job)
		kj__cache_job_result(m->job, &res);
	if (m->conn == NULL) {
		if (r < 0)
			kj__log(m->d, "the size cap's gc failed: %s", kjit_strerror(r));
		else if (res.evicted)
			kj__log(m->d, "over the %llu-byte cap: evicted %llu least recently used entries (%llu bytes)",
				(unsigned long long)kj__cache_max_size(m->d->cache), (unsigned long long)res.evicted,
				(unsigned long long)res.freed);
		return;
	}
	if (r >= 0)
		r = answer_text(m, &res, &json, err, sizeof err);
	if (r < 0 && err[0] == '\0')
		snprintf(err, sizeof err, "%s failed: %s", kind_name[m->kind], kjit_strerror(r));
	kj__admin_answer(m->conn, m->id, r, &m->text, &json, err);
	kj__buf_free(&json);
}

static void start_next(struct kj__daemon *d);

static void on_work(uv_work_t *w)
{
	struct kj__offloop *m = w->data;

	kj__cache_job_run(m->job);
}

/* On the loop: apply what the thread found; run again or answer. */
static void on_done(uv_work_t *w, int status)
{
	struct kj__offloop *m = w->data;
	struct kj__daemon *d = m->d;
	struct kj__cache_job_result before, after;

	kj__cache_job_result(m->job, &before);
	int r = status < 0 ? KJIT_EINTERNAL : kj__cache_job_finish(m->job, m->kind == KJ_CACHE_JOB_VERIFY ? verify_bad : NULL, m);
	kj__cache_job_result(m->job, &after);
	if (memcmp(&before, &after, sizeof before) != 0)
		kj__hits_invalidate(d, "maintenance removed objects");
	d->last_active_us = kj__now_us();
	if (r == 1 && kj__cache_job_threaded() && uv_queue_work(d->loop, &m->work, on_work, on_done) == 0)
		return;
	while (r == 1) { /* no thread to be had: the rest runs here, as it always did */
		kj__cache_job_run(m->job);
		r = kj__cache_job_finish(m->job, m->kind == KJ_CACHE_JOB_VERIFY ? verify_bad : NULL, m);
	}
	answer(m, r);
	d->offloop_head = m->next;
	if (d->offloop_head == NULL)
		d->offloop_tail = NULL;
	job_free(m);
	start_next(d);
}

/* Starts the job at the head of the queue, answering those that cannot. */
static void start_next(struct kj__daemon *d)
{
	struct kj__offloop *m;

	while ((m = d->offloop_head) != NULL) {
		int r = d->stopping ? KJIT_ESHUTDOWN
				    : kj__cache_job_begin(d->cache, m->kind, m->cap, m->target, &m->job);
		if (r == 0 && m->kind == KJ_CACHE_JOB_CLEAR)
			kj__hits_invalidate(d, "clear removed objects");
		if (r == 0 && kj__cache_job_threaded() && uv_queue_work(d->loop, &m->work, on_work, on_done) == 0)
			return;
		if (r == 0) {
			/* No thread to be had: the job runs here, as it always did. */
			on_work(&m->work);
			on_done(&m->work, 0);
			return;
		}
		answer(m, r);
		d->offloop_head = m->next;
		if (d->offloop_head == NULL)
			d->offloop_tail = NULL;
		job_free(m);
	}
}

int kj__offloop_start(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int kind, uint64_t cap,
		      const char *target)
{
	struct kj__offloop *m = calloc(1, sizeof *m);

	if (m == NULL || (target && (m->target = strdup(target)) == NULL)) {
		free(m);
		return KJIT_ENOMEM;
	}
	m->work.data = m;
	m->d = d;
	m->conn = c;
	m->id = id;
	m->kind = kind;
	m->cap = cap;
	if (c)
		kj__conn_ref(c);
	if (d->offloop_tail)
		d->offloop_tail->next = m;
	else
		d->offloop_head = m;
	d->offloop_tail = m;
	if (d->offloop_head == m)
		start_next(d);
	return 0;
}

int kj__offloop_busy(const struct kj__daemon *d)
{
	return d->offloop_head != NULL;
}
