/* test-offwork.c: kjitd's one door to libuv's thread pool
 * (daemon/offwork.c), on a real loop and real pool threads, no sockets and
 * no daemon (it knows none): a bounded fair queue (kjitd's resolves) and
 * its fairness between uids, a queue of one at a time (admin tasks) with a
 * finish asking for more runs, a work run here before submit returns,
 * when_idle waiting only for earlier work, a queue whose policy keeps it
 * on the loop, and stop (waiting work ended with KJIT_ESHUTDOWN, work on a
 * thread finished, every work finished exactly once). */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "kj_types.h"
#include "offwork.h"
#include "test.h"

#define N_MAX 64
#define FAIR_MAX 8

/* The test's queues, shaped as kjitd's are (daemon/main.c's table). */
enum { Q_FAIR, Q_OPEN, Q_ONE, Q_LOOP, Q_COUNT };
static const struct kj__offwork_policy policies[Q_COUNT] = {
	[Q_FAIR] = { .run_max = FAIR_MAX, .fair = 1, .end_at_stop = 1 },
	[Q_OPEN] = { 0 },
	[Q_ONE] = { .run_max = 1, .end_at_stop = 1 },
	[Q_LOOP] = { .run_max = 1, .on_loop = 1 },
};

/* One test's state: the works and what happened to them. */
struct rig {
	struct kj__offwork_set *set;
	uv_loop_t loop;
	pthread_t loop_thread;
	atomic_int off_loop_runs;     /* runs not on the loop's thread */
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
	if (!pthread_equal(pthread_self(), r->loop_thread))
		atomic_fetch_add(&r->off_loop_runs, 1);
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
	r->loop_thread = pthread_self();
	CHECK((r->set = kj__offwork_new(&r->loop, policies, Q_COUNT)) != NULL);
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
	/* r->set stays: the checks after rig_done count the queues (each
	 * test runs in its own child and r is static: still reachable). */
}

/* 12 works of uid 1, then 2 of uid 2: at most FAIR_MAX on threads at
 * once, and uid 2's are not held behind all of uid 1's. */
static void test_fair_bound(void)
{
	static struct rig r;

	rig_init(&r);
	for (int i = 0; i < 14; i++) {
		r.it[i].w.uid = i < 12 ? 1 : 2;
		kj__offwork_submit(r.set, Q_FAIR, &r.it[i].w, KJ_OFFWORK_POOL);
	}
	CHECK_EQ_INT(kj__offwork_count(r.set, Q_FAIR, (uid_t)-1), 14);
	CHECK_EQ_INT(kj__offwork_count(r.set, Q_FAIR, 2), 2);
	CHECK_EQ_INT(r.n_order, FAIR_MAX); /* the rest wait */
	rig_done(&r);
	CHECK(atomic_load(&r.most_on_threads) <= FAIR_MAX);
	CHECK_EQ_INT(r.n_order, 14);
	/* the first slot freed goes to uid 2 (none running), not to item 8 */
	CHECK_EQ_INT(r.order[FAIR_MAX], 12);
	for (int i = 0; i < 14; i++) {
		CHECK_EQ_INT(r.it[i].finishes, 1);
		CHECK_EQ_INT(r.it[i].code, 0);
	}
	CHECK_EQ_INT(kj__offwork_count(r.set, Q_FAIR, (uid_t)-1), 0);
}

/* A queue of one (kjitd's admin tasks): one at a time, in arrival order;
 * a finish returning 1 runs the work again in the same slot. */
static void test_one_at_a_time(void)
{
	static struct rig r;

	rig_init(&r);
	r.it[0].runs_wanted = 3;
	for (int i = 0; i < 4; i++)
		kj__offwork_submit(r.set, Q_ONE, &r.it[i].w, KJ_OFFWORK_POOL);
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
	kj__offwork_submit(r.set, Q_FAIR, &r.it[0].w, KJ_OFFWORK_HERE);
	CHECK_EQ_INT(r.it[0].finishes, 1);
	CHECK_EQ_INT(atomic_load(&r.it[0].runs), 1);
	CHECK_EQ_INT(kj__offwork_count(r.set, Q_FAIR, (uid_t)-1), 0);
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
	kj__offwork_when_idle(r.set, Q_OPEN, idle_cb, &r);
	CHECK_EQ_INT(r.idle_fired, 1); /* nothing pending: at once */
	kj__offwork_submit(r.set, Q_OPEN, &r.it[0].w, KJ_OFFWORK_POOL);
	kj__offwork_submit(r.set, Q_OPEN, &r.it[1].w, KJ_OFFWORK_POOL);
	kj__offwork_when_idle(r.set, Q_OPEN, idle_cb, &r);
	r.it[2].runs_wanted = 4; /* later, and long: not waited for */
	kj__offwork_submit(r.set, Q_OPEN, &r.it[2].w, KJ_OFFWORK_POOL);
	CHECK_EQ_INT(r.idle_fired, 1);
	rig_done(&r);
	CHECK_EQ_INT(r.idle_fired, 2);
	CHECK_EQ_INT(r.idle_pending_then, 2);
	CHECK_EQ_INT(r.it[2].finishes, 4);
}

/* stop: those waiting end with KJIT_ESHUTDOWN at once, those on a thread
 * finish (0) or, not begun, are cancelled (KJIT_ESHUTDOWN); each finishes
 * once; later work ends at once; an open queue (kjitd's publishes) is not
 * ended. */
static void test_stop(void)
{
	static struct rig r;
	int shut = 0, done = 0;

	rig_init(&r);
	for (int i = 0; i < 20; i++) {
		r.it[i].w.uid = (uid_t)i;
		kj__offwork_submit(r.set, Q_FAIR, &r.it[i].w, KJ_OFFWORK_POOL);
	}
	kj__offwork_submit(r.set, Q_OPEN, &r.it[30].w, KJ_OFFWORK_POOL);
	kj__offwork_stop(r.set);
	for (int i = FAIR_MAX; i < 20; i++) {
		CHECK_EQ_INT(r.it[i].finishes, 1);
		CHECK_EQ_INT(r.it[i].code, KJIT_ESHUTDOWN);
	}
	kj__offwork_submit(r.set, Q_FAIR, &r.it[21].w, KJ_OFFWORK_POOL);
	CHECK_EQ_INT(r.it[21].code, KJIT_ESHUTDOWN);
	kj__offwork_stop(r.set); /* again: nothing more */
	rig_done(&r);
	for (int i = 0; i < FAIR_MAX; i++) {
		CHECK_EQ_INT(r.it[i].finishes, 1);
		shut += r.it[i].code == KJIT_ESHUTDOWN;
		done += r.it[i].code == 0 && atomic_load(&r.it[i].runs) == 1;
	}
	CHECK_EQ_INT(shut + done, FAIR_MAX);
	CHECK_EQ_INT(r.it[30].finishes, 1);
	CHECK_EQ_INT(r.it[30].code, 0);
}

/* A queue whose policy says on_loop (kjitd's SQLite queues where SQLite
 * is not thread-safe): every run on the loop's thread, none on the pool,
 * one at a time, each finished once. */
static void test_on_loop(void)
{
	static struct rig r;

	rig_init(&r);
	r.it[0].runs_wanted = 2;
	for (int i = 0; i < 3; i++)
		kj__offwork_submit(r.set, Q_LOOP, &r.it[i].w, KJ_OFFWORK_POOL);
	rig_done(&r);
	CHECK_EQ_INT(atomic_load(&r.off_loop_runs), 0);
	CHECK_EQ_INT(atomic_load(&r.it[0].runs), 2);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(r.it[i].code, 0);
	CHECK_EQ_INT(r.it[1].finishes, 1);
	CHECK_EQ_INT(r.it[2].finishes, 1);
	kj__offwork_free(r.set);
	/* the same work on a pool queue runs off the loop */
	rig_init(&r);
	kj__offwork_submit(r.set, Q_OPEN, &r.it[0].w, KJ_OFFWORK_POOL);
	rig_done(&r);
	CHECK_EQ_INT(atomic_load(&r.off_loop_runs), 1);
}

TEST_LIST(TEST(fair_bound) TEST(one_at_a_time) TEST(here) TEST(when_idle) TEST(stop) TEST(on_loop))
