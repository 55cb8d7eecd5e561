/* offloop.c: the admin commands that read or change the whole cache (gc,
 * verify, clear, export, import, and the size cap's own gc) run with their
 * slow part on libuv's thread pool, so that kjitd's loop keeps answering
 * everyone else meanwhile (issue 25); each answers its client when it has
 * finished.
 *
 * A task is a set of steps (struct kj__offloop_ops): begin on the loop,
 * run on a thread, finish on the loop, which may ask for another run and
 * finish.  gc, verify and clear are cache/job.c's steps, wrapped here;
 * export and import are bundle.c's.
 *
 * Invariants:
 *  - One task at a time: the others wait in offwork.c's admin queue, in
 *    arrival order, and begin when the one before has finished.  So no two
 *    tasks' runs overlap (a verify's sweep never meets an import's files).
 *  - The loop's tables (cache/table.c, the hot set, the hit table) change
 *    only in begin and finish; run touches what its task says it may.
 *  - A task holds a reference to its connection until it has answered; a
 *    client gone meanwhile is answered into a closed connection (nothing).
 *  - A task begins once the publishes in flight when it reached the head
 *    of the queue have finished (publish.c): it sees every object
 *    answered before it.
 *  - When kjitd stops, the task running completes (the loop runs until it
 *    has); the ones queued are answered with KJIT_ESHUTDOWN (offwork.c).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "admin-int.h"
#include "daemon.h"
#include "kj_types.h"
#include "util.h"

struct kj__offloop {
	struct kj__offwork work;     /* in kjitd's admin queue (offwork.c) */
	struct kj__daemon *d;
	struct kj__conn *conn;       /* NULL: no one to answer (the size cap's gc) */
	uint32_t id;
	const struct kj__offloop_ops *ops;
	void *arg;
	int waited;                  /* the publishes in flight at its turn were waited for */
	char err[512];
};

static struct kj__offloop *task_of(struct kj__offwork *w)
{
	return (struct kj__offloop *)((char *)w - offsetof(struct kj__offloop, work));
}

static void task_free(struct kj__offloop *m)
{
	if (m->conn)
		kj__conn_unref(m->conn);
	if (m->ops->free)
		m->ops->free(m->arg);
	free(m);
}

static void answer(struct kj__offloop *m, int r, struct kj__buf *text, struct kj__buf *json, char *err, size_t errlen)
{
	if (r < 0 && err[0] == '\0')
		snprintf(err, errlen, "%s failed: %s", m->ops->name, kjit_strerror(r));
	if (m->conn)
		kj__admin_answer(m->conn, m->id, r, text, json, err);
	else if (r < 0)
		kj__log(m->d, "%s", err);
}

static void resume_after_publishes(void *arg)
{
	struct kj__offloop *m = arg;

	kj__offwork_resume(&m->work);
}

/* Its turn (the head of the queue): once the publishes in flight have
 * finished (publish.c), so that a command sees in the index every object
 * answered before it, the task's own begin. */
static int on_begin(struct kj__offwork *w)
{
	struct kj__offloop *m = task_of(w);
	struct kj__daemon *d = m->d;

	if (d->stopping)
		return KJIT_ESHUTDOWN;
	if (!m->waited && kj__publish_pending(d)) {
		m->waited = 1;
		kj__publish_when_idle(d, resume_after_publishes, m); /* may resume at once: m not touched after */
		return KJ_OFFWORK_LATER;
	}
	m->waited = 1;
	m->err[0] = '\0';
	return m->ops->begin ? m->ops->begin(d, m->arg, m->err, sizeof m->err) : 0;
}

static void on_work(struct kj__offwork *w)
{
	struct kj__offloop *m = task_of(w);

	m->ops->run(m->arg);
}

/* The loop's side of a run that ended (or of a begin that failed, or of a
 * task kjitd stopped before its turn): finish, then another run or the
 * answer. */
static int on_done(struct kj__offwork *w, int code)
{
	struct kj__offloop *m = task_of(w);
	struct kj__daemon *d = m->d;
	struct kj__buf text = { 0 }, json = { 0 };
	int r = code;

	d->last_active_us = kj__now_us();
	if (r == 0)
		r = m->ops->finish(d, m->arg, &text, &json, m->err, sizeof m->err);
	if (r != 1)
		answer(m, r, &text, &json, m->err, sizeof m->err);
	kj__buf_free(&text);
	kj__buf_free(&json);
	if (r == 1)
		return 1;
	task_free(m);
	return 0;
}

static const struct kj__offwork_ops task_ops = { on_begin, on_work, on_done };

int kj__offloop_task(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const struct kj__offloop_ops *ops,
		     void *arg)
{
	struct kj__offloop *m = calloc(1, sizeof *m);

	if (m == NULL) {
		if (ops->free)
			ops->free(arg);
		return KJIT_ENOMEM;
	}
	m->work.ops = &task_ops;
	m->d = d;
	m->conn = c;
	m->id = id;
	m->ops = ops;
	m->arg = arg;
	if (c)
		kj__conn_ref(c);
	kj__offwork_submit(d->work, KJ_OFFQ_ADMIN, &m->work, KJ_OFFWORK_POOL);
	return 0;
}

int kj__offloop_busy(const struct kj__daemon *d)
{
	return kj__offwork_count(d->work, KJ_OFFQ_ADMIN, (uid_t)-1) > 0;
}

/* ---- the index's checkpoint ---- */

int kj__admin_init(struct kj__daemon *d)
{
	if ((d->admin = calloc(1, sizeof *d->admin)) == NULL)
		return KJIT_ENOMEM;
	return 0;
}

void kj__admin_free(struct kj__daemon *d)
{
	free(d->admin);
	d->admin = NULL;
}

static void ckpt_run(struct kj__offwork *w)
{
	struct kj__adminroom *a = (struct kj__adminroom *)((char *)w - offsetof(struct kj__adminroom, ckpt_work));

	kj__cache_checkpoint(a->ckpt_cache); /* logged if it fails; tried again at the next flush */
}

static int ckpt_done(struct kj__offwork *w, int code)
{
	(void)w;
	(void)code;
	return 0;
}

static const struct kj__offwork_ops ckpt_ops = { NULL, ckpt_run, ckpt_done };

void kj__offloop_checkpoint(struct kj__daemon *d)
{
	if (d->stopping || kj__offwork_count(d->work, KJ_OFFQ_CHECKPOINT, (uid_t)-1) > 0 ||
	    kj__cache_wal_pages(d->cache) < KJ_WAL_CHECKPOINT_PAGES || !kj__cache_job_threaded())
		return;
	d->admin->ckpt_work = (struct kj__offwork){ .ops = &ckpt_ops };
	d->admin->ckpt_cache = d->cache;
	kj__offwork_submit(d->work, KJ_OFFQ_CHECKPOINT, &d->admin->ckpt_work, KJ_OFFWORK_POOL);
}

/* ---- gc, verify and clear: cache/job.c's steps ---- */

struct cachejob {
	int kind;
	int quiet;             /* the size cap's gc: logged, not answered */
	uint64_t cap;
	char *target;
	struct kj__cache_job *job;
	struct kj__buf lines;  /* verify: one line per object dropped */
};

static const char *const kind_name[] = { [KJ_CACHE_JOB_GC] = "gc", [KJ_CACHE_JOB_VERIFY] = "verify",
					 [KJ_CACHE_JOB_CLEAR] = "clear" };

static int cj_begin(struct kj__daemon *d, void *arg, char *err, size_t errlen)
{
	struct cachejob *j = arg;
	int r = kj__cache_job_begin(d->cache, j->kind, j->cap, j->target, &j->job);

	if (r == 0 && j->kind == KJ_CACHE_JOB_CLEAR)
		kj__hits_invalidate(d, "clear removed objects");
	return r;
}

static void cj_run(void *arg)
{
	struct cachejob *j = arg;

	kj__cache_job_run(j->job);
}

static void verify_bad(const struct kj__cache_entry *e, const char *why, void *arg)
{
	struct cachejob *j = arg;

	kj__buf_printf(&j->lines, "corrupt %s %s-%s: %s (dropped)\n", e->key, e->target, e->version, why);
}

/* The text and JSON the commands always printed. */
static int cj_answer(struct kj__daemon *d, struct cachejob *j, const struct kj__cache_job_result *res,
		     struct kj__buf *text, struct kj__buf *json, char *err, size_t errlen)
{
	struct kj__cache_totals t = { 0 };
	int r = 0;

	kj__cache_totals(d->cache, &t);
	if (j->kind == KJ_CACHE_JOB_GC) {
		r |= kj__buf_printf(text, "gc: evicted %llu entries, freed %llu bytes; %llu entries, %llu bytes remain\n",
				    (unsigned long long)res->evicted, (unsigned long long)res->freed,
				    (unsigned long long)t.entries, (unsigned long long)t.bytes);
		r |= kj__buf_printf(json, "{\"evicted\":%llu,\"freed\":%llu,\"entries\":%llu,\"bytes\":%llu}",
				    (unsigned long long)res->evicted, (unsigned long long)res->freed,
				    (unsigned long long)t.entries, (unsigned long long)t.bytes);
	} else if (j->kind == KJ_CACHE_JOB_VERIFY) {
		if (j->lines.len)
			r |= kj__buf_append(text, j->lines.p, j->lines.len);
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

static int cj_finish(struct kj__daemon *d, void *arg, struct kj__buf *text, struct kj__buf *json, char *err,
		     size_t errlen)
{
	struct cachejob *j = arg;
	struct kj__cache_job_result before, after;

	kj__cache_job_result(j->job, &before);
	int r = kj__cache_job_finish(j->job, j->kind == KJ_CACHE_JOB_VERIFY ? verify_bad : NULL, j);
	kj__cache_job_result(j->job, &after);
	if (memcmp(&before, &after, sizeof before) != 0)
		kj__hits_invalidate(d, "maintenance removed objects");
	if (r == 1)
		return 1;
	if (j->quiet) {
		if (r < 0)
			snprintf(err, errlen, "the size cap's gc failed: %s", kjit_strerror(r));
		else if (after.evicted)
			kj__log(d, "over the %llu-byte cap: evicted %llu least recently used entries (%llu bytes)",
				(unsigned long long)kj__cache_max_size(d->cache), (unsigned long long)after.evicted,
				(unsigned long long)after.freed);
		return r;
	}
	if (r < 0)
		snprintf(err, errlen, "%s failed: %s", kind_name[j->kind], kjit_strerror(r));
	return r < 0 ? r : cj_answer(d, j, &after, text, json, err, errlen);
}

static void cj_free(void *arg)
{
	struct cachejob *j = arg;

	kj__cache_job_free(j->job);
	kj__buf_free(&j->lines);
	free(j->target);
	free(j);
}

static const struct kj__offloop_ops cachejob_ops[] = {
	[KJ_CACHE_JOB_GC] = { "gc", cj_begin, cj_run, cj_finish, cj_free },
	[KJ_CACHE_JOB_VERIFY] = { "verify", cj_begin, cj_run, cj_finish, cj_free },
	[KJ_CACHE_JOB_CLEAR] = { "clear", cj_begin, cj_run, cj_finish, cj_free },
};

int kj__offloop_start(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int kind, uint64_t cap,
		      const char *target)
{
	struct cachejob *j;

	if (kind != KJ_CACHE_JOB_GC && kind != KJ_CACHE_JOB_VERIFY && kind != KJ_CACHE_JOB_CLEAR)
		return KJIT_EINVAL;
	if ((j = calloc(1, sizeof *j)) == NULL || (target && (j->target = strdup(target)) == NULL)) {
		free(j);
		return KJIT_ENOMEM;
	}
	j->kind = kind;
	j->cap = cap;
	j->quiet = c == NULL;
	return kj__offloop_task(d, c, id, &cachejob_ops[kind], j);
}
