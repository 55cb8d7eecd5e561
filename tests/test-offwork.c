/* test-offwork.c: kjitd's one door to libuv's thread pool
 * (daemon/offwork.c), on a real loop and real pool threads, no sockets:
 * the resolve queue's bound and its fairness between uids, the admin
 * queue's one at a time with a finish asking for more runs, a work run
 * here before submit returns, when_idle waiting only for earlier work, and
 * stop (waiting work ended with KJIT_ESHUTDOWN, work on a thread finished,
 * every work finished exactly once). */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "kjit.h"
#include "test.h"

#define N_MAX 64

/* One test's state: the works and what happened to them. */
struct rig {
	struct kj__daemon d;
	uv_loop_t loop;
	struct item {
		struct kj__offwork w;
		struct rig *rig;
		int runs_wanted;          /* finish asks for this many runs */
		atomic_int runs;
		int finishes;
		int code;                 /* the last finish's */
	} it[N_MAX];
	atomic_int on_threads, most_on_threads;
	int order[N_MAX];             /* the items in the order they got their slot (begin) */
	int n_order;
	int idle_fired, idle_pending_then;
};

static struct item *item_of(struct kj__offwork *w)
{
	return (struct item *)((char *)w - offsetof(struct item, w));
}

static int on_begin(struct kj__offwork *w)
{
	struct item *i = item_of(w);

	i->rig->order[i->rig->n_order++] = (int)(i - i->rig->it);
	return 0;
}

static void on_run(struct kj__offwork *w)
{
	struct item *i = item_of(w);
	struct rig *r = i->rig;
	int now = atomic_fetch_add(&r->on_threads, 1) + 1, most = atomic_load(&r->most_on_threads);
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	while (now > most && !atomic_compare_exchange_weak(&r->most_on_threads, &most, now))
		;
	nanosleep(&ts, NULL);
	atomic_fetch_add(&i->runs, 1);
	atomic_fetch_sub(&r->on_threads, 1);
}

static int on_finish(struct kj__offwork *w, int code)
{
	struct item *i = item_of(w);

	i->finishes++;
	i->code = code;
	return code == 0 && atomic_load(&i->runs) < i->runs_wanted ? 1 : 0;
}

static const struct kj__offwork_ops ops = { on_begin, on_run, on_finish };

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof *r);
	CHECK_EQ_INT(uv_loop_init(&r->loop), 0);
	r->d.loop = &r->loop;
	CHECK_EQ_INT(kj__offwork_init(&r->d), 0);
	for (int i = 0; i < N_MAX; i++) {
		r->it[i].rig = r;
		r->it[i].w.ops = &ops;
		r->it[i].runs_wanted = 1;
	}
}

static void rig_done(struct rig *r)
{
	CHECK_EQ_INT(uv_run(&r->loop, UV_RUN_DEFAULT), 0);
	CHECK_EQ_INT(uv_loop_close(&r->loop), 0);
	/* r->d.work stays: the checks after rig_done count the queues (each
	 * test runs in its own child and r is static: still reachable). */
}

/* 12 works of uid 1, then 2 of uid 2: at most KJ_RESOLVE_RUNNING_MAX on
 * threads at once, and uid 2's are not held behind all of uid 1's. */
static void test_resolve_bound_and_fairness(void)
{
	static struct rig r;

	rig_init(&r);
	for (int i = 0; i < 14; i++) {
		r.it[i].w.uid = i < 12 ? 1 : 2;
		kj__offwork_submit(&r.d, KJ_OFFQ_RESOLVE, &r.it[i].w, KJ_OFFWORK_POOL);
	}
	CHECK_EQ_INT(kj__offwork_count(&r.d, KJ_OFFQ_RESOLVE, (uid_t)-1), 14);
	CHECK_EQ_INT(kj__offwork_count(&r.d, KJ_OFFQ_RESOLVE, 2), 2);
	CHECK_EQ_INT(r.n_order, KJ_RESOLVE_RUNNING_MAX); /* the rest wait */
	rig_done(&r);
	CHECK(atomic_load(&r.most_on_threads) <= KJ_RESOLVE_RUNNING_MAX);
	CHECK_EQ_INT(r.n_order, 14);
	/* the first slot freed goes to uid 2 (none running), not to item 8 */
	CHECK_EQ_INT(r.order[KJ_RESOLVE_RUNNING_MAX], 12);
	for (int i = 0; i < 14; i++) {
		CHECK_EQ_INT(r.it[i].finishes, 1);
		CHECK_EQ_INT(r.it[i].code, 0);
	}
	CHECK_EQ_INT(kj__offwork_count(&r.d, KJ_OFFQ_RESOLVE, (uid_t)-1), 0);
}

/* The admin queue: one at a time, in arrival order; a finish returning 1
 * runs the work again in the same slot. */
static void test_admin_one_at_a_time(void)
{
	static struct rig r;

	rig_init(&r);
	r.it[0].runs_wanted = 3;
	for (int i = 0; i < 4; i++)
		kj__offwork_submit(&r.d, KJ_OFFQ_ADMIN, &r.it[i].w, KJ_OFFWORK_POOL);
	CHECK_EQ_INT(r.n_order, 1);
	rig_done(&r);
	CHECK_EQ_INT(atomic_load(&r.most_on_threads), 1);
	CHECK_EQ_INT(atomic_load(&r.it[0].runs), 3);
	CHECK_EQ_INT(r.it[0].finishes, 3);
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(r.order[i], i);
}

/* HERE: begin, run and finish before submit returns, beside the bound. */
static void test_here(void)
{
	static struct rig r;

	rig_init(&r);
	kj__offwork_submit(&r.d, KJ_OFFQ_RESOLVE, &r.it[0].w, KJ_OFFWORK_HERE);
	CHECK_EQ_INT(r.it[0].finishes, 1);
	CHECK_EQ_INT(atomic_load(&r.it[0].runs), 1);
	CHECK_EQ_INT(kj__offwork_count(&r.d, KJ_OFFQ_RESOLVE, (uid_t)-1), 0);
	rig_done(&r);
}

static void idle_cb(void *arg)
{
	struct rig *r = arg;

	r->idle_fired++;
	r->idle_pending_then = r->it[0].finishes + r->it[1].finishes;
}

/* when_idle waits for the work submitted before it, not for later work. */
static void test_when_idle(void)
{
	static struct rig r;

	rig_init(&r);
	kj__offwork_when_idle(&r.d, KJ_OFFQ_PUBLISH, idle_cb, &r);
	CHECK_EQ_INT(r.idle_fired, 1); /* nothing pending: at once */
	kj__offwork_submit(&r.d, KJ_OFFQ_PUBLISH, &r.it[0].w, KJ_OFFWORK_POOL);
	kj__offwork_submit(&r.d, KJ_OFFQ_PUBLISH, &r.it[1].w, KJ_OFFWORK_POOL);
	kj__offwork_when_idle(&r.d, KJ_OFFQ_PUBLISH, idle_cb, &r);
	r.it[2].runs_wanted = 4; /* later, and long: not waited for */
	kj__offwork_submit(&r.d, KJ_OFFQ_PUBLISH, &r.it[2].w, KJ_OFFWORK_POOL);
	CHECK_EQ_INT(r.idle_fired, 1);
	rig_done(&r);
	CHECK_EQ_INT(r.idle_fired, 2);
	CHECK_EQ_INT(r.idle_pending_then, 2);
	CHECK_EQ_INT(r.it[2].finishes, 4);
}

/* stop: those waiting end with KJIT_ESHUTDOWN at once, those on a thread
 * finish (0) or, not begun, are cancelled (KJIT_ESHUTDOWN); each finishes
 * once; later work ends at once; the publish queue is not ended. */
static void test_stop(void)
{
	static struct rig r;
	int shut = 0, done = 0;

	rig_init(&r);
	for (int i = 0; i < 20; i++) {
		r.it[i].w.uid = (uid_t)i;
		kj__offwork_submit(&r.d, KJ_OFFQ_RESOLVE, &r.it[i].w, KJ_OFFWORK_POOL);
	}
	kj__offwork_submit(&r.d, KJ_OFFQ_PUBLISH, &r.it[30].w, KJ_OFFWORK_POOL);
	kj__offwork_stop(&r.d);
	for (int i = KJ_RESOLVE_RUNNING_MAX; i < 20; i++) {
		CHECK_EQ_INT(r.it[i].finishes, 1);
		CHECK_EQ_INT(r.it[i].code, KJIT_ESHUTDOWN);
	}
	kj__offwork_submit(&r.d, KJ_OFFQ_RESOLVE, &r.it[21].w, KJ_OFFWORK_POOL);
	CHECK_EQ_INT(r.it[21].code, KJIT_ESHUTDOWN);
	kj__offwork_stop(&r.d); /* again: nothing more */
	rig_done(&r);
	for (int i = 0; i < KJ_RESOLVE_RUNNING_MAX; i++) {
		CHECK_EQ_INT(r.it[i].finishes, 1);
		shut += r.it[i].code == KJIT_ESHUTDOWN;
		done += r.it[i].code == 0 && atomic_load(&r.it[i].runs) == 1;
	}
	CHECK_EQ_INT(shut + done, KJ_RESOLVE_RUNNING_MAX);
	CHECK_EQ_INT(r.it[30].finishes, 1);
	CHECK_EQ_INT(r.it[30].code, 0);
}

TEST_LIST(TEST(resolve_bound_and_fairness) TEST(admin_one_at_a_time) TEST(here) TEST(when_idle) TEST(stop))
