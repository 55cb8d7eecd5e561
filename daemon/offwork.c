/* offwork.c: kjitd's one door to libuv's thread pool (issue 33).
 *
 * offhash.c (a GET resolved to its key), publish.c (a publish's digest,
 * file and fsyncs) and offloop.c (gc, verify, clear, export, import, the
 * index's checkpoint) each queued their own uv_work_t with their own
 * bounds and their own shutdown; they now hand a struct kj__offwork to a
 * queue here (offwork.h) and keep only their steps.  No other file calls
 * uv_queue_work (tests/e2e/layering.sh).  It knows the loop and its
 * queues' policies, given at kj__offwork_new, and no daemon state (it
 * includes no daemon header: layering.sh), so a walk through the daemon
 * passes it as it passes libuv (docs/design.md, "The walk").
 *
 * Invariants:
 *  - A queue's slots: a work holds one from begin to its last finish
 *    (on a thread, or waiting for kj__offwork_resume); at most the
 *    table's run_max hold one (0: no bound); the rest wait in arrival
 *    order, and a fair queue gives a free slot to the oldest of a uid
 *    with none, else the oldest: one uid's flood does not hold another's
 *    behind it.  A work run HERE takes no slot and is done on return.
 *  - While a queue is in a finish (busy), new work only waits: a finish
 *    that submits more (a pipelined GET answered, then the next) cannot
 *    push the queue past its bound; slots are handed out after.
 *  - Every work gets its finish: after each run, after a failed begin, or
 *    with KJIT_ESHUTDOWN when stopped before it ran.  After a finish that
 *    returns 0, nothing here touches the work (its owner may free it).
 *  - Stop (kj__offwork_stop): in a queue that ends work at stop, those
 *    waiting end now and those on the pool not yet begun are cancelled
 *    (finished with KJIT_ESHUTDOWN when libuv hands them back); work on a
 *    thread always completes, and the loop runs until it has.
 *  - A queue whose policy says on_loop runs its work on the loop (kjitd:
 *    the queues that use the cache's SQLite when it is not thread-safe),
 *    and any work runs there when libuv refuses it: slower, never lost.
 */
#include <stddef.h>
#include <stdlib.h>

#include "kj_types.h"
#include "offwork.h"

/* A callback waiting for the work submitted up to seq to finish. */
struct kj__offidle {
	void (*fn)(void *arg);
	void *arg;
	uint64_t seq;
	struct kj__offidle *next;
};

/* A queue (zeroed: empty). */
struct kj__offq {
	unsigned n_run;              /* holding a slot (begun, on a thread or waiting to resume) */
	unsigned n_wait;
	int busy;                    /* in a finish: new work waits, slots are given after */
	int stopped;
	uint64_t seq;
	struct kj__offwork *run, *wait, *wait_tail;
	struct kj__offidle *idle;
};

/* A set of queues (kjitd's work room, d->work): one per policy. */
struct kj__offwork_set {
	uv_loop_t *loop;
	int n;
	struct kj__offwork_policy policy[KJ_OFFWORK_QUEUES_MAX];
	struct kj__offq q[KJ_OFFWORK_QUEUES_MAX];
};

struct kj__offwork_set *kj__offwork_new(uv_loop_t *loop, const struct kj__offwork_policy *policies, int n)
{
	struct kj__offwork_set *s;

	if (n < 0 || n > KJ_OFFWORK_QUEUES_MAX || (s = calloc(1, sizeof *s)) == NULL)
		return NULL;
	s->loop = loop;
	s->n = n;
	for (int i = 0; i < n; i++)
		s->policy[i] = policies[i];
	return s;
}

void kj__offwork_free(struct kj__offwork_set *s)
{
	free(s);
}

static void go(struct kj__offwork *w);
static void start_waiting(struct kj__offwork_set *s, int q);

static struct kj__offq *queue_of(const struct kj__offwork *w)
{
	return &w->set->q[w->q];
}

static void list_run(struct kj__offwork *w)
{
	struct kj__offq *q = queue_of(w);

	w->next = q->run;
	q->run = w;
	q->n_run++;
}

static void unlist_run(struct kj__offwork *w)
{
	struct kj__offq *q = queue_of(w);
	struct kj__offwork **pp;

	for (pp = &q->run; *pp && *pp != w; pp = &(*pp)->next)
		;
	if (*pp) {
		*pp = w->next;
		q->n_run--;
	}
	w->next = NULL;
}

/* Runs the callbacks no pending work of q holds back any more, in the
 * order they came. */
static void run_idle(struct kj__offwork_set *s, int qi)
{
	struct kj__offq *q = &s->q[qi];
	uint64_t oldest = UINT64_MAX;
	struct kj__offidle **pp = &q->idle, *i, *ready = NULL, **tail = &ready;

	for (struct kj__offwork *w = q->run; w; w = w->next)
		oldest = w->seq < oldest ? w->seq : oldest;
	for (struct kj__offwork *w = q->wait; w; w = w->next)
		oldest = w->seq < oldest ? w->seq : oldest;
	while ((i = *pp) != NULL) {
		if (i->seq < oldest) {
			*pp = i->next;
			i->next = NULL;
			*tail = i;
			tail = &i->next;
		} else {
			pp = &i->next;
		}
	}
	for (; ready; ready = i) {
		i = ready->next;
		ready->fn(ready->arg);
		free(ready);
	}
}

/* w's finish with code; 1 if it runs again (still holding its slot).  A
 * slotted work is out of the queue's list during its finish, which may
 * free it. */
static int finish(struct kj__offwork *w, int code, int slotted)
{
	struct kj__offwork_set *s = w->set;
	int qi = w->q;
	struct kj__offq *q = &s->q[qi];
	int r;

	if (slotted)
		unlist_run(w);
	q->busy++;
	r = w->ops->finish(w, code);
	if (r == 1 && code == 0 && slotted)
		list_run(w);
	q->busy--;
	if (r == 1 && code == 0)
		return 1;
	start_waiting(s, qi);
	if (q->idle && !q->busy)
		run_idle(s, qi);
	return 0;
}

static void on_thread(uv_work_t *uw)
{
	struct kj__offwork *w = uw->data;

	w->ops->run(w);
}

static void on_back(uv_work_t *uw, int status)
{
	struct kj__offwork *w = uw->data;

	w->on_thread = 0;
	if (finish(w, status < 0 ? KJIT_ESHUTDOWN : 0, 1))
		go(w);
}

/* Runs slotted work w: on a thread if it may, else here, over and over
 * while its finish asks for another run. */
static void go(struct kj__offwork *w)
{
	const struct kj__offwork_policy *p = &w->set->policy[w->q];

	do {
		if (!p->on_loop) {
			w->uw.data = w;
			w->on_thread = 1;
			if (uv_queue_work(w->set->loop, &w->uw, on_thread, on_back) == 0)
				return;
			w->on_thread = 0;
		}
		w->ops->run(w); /* no thread to be had: here */
	} while (finish(w, 0, 1));
}

/* w got its slot: begin, then run. */
static void begin(struct kj__offwork *w)
{
	int r = w->ops->begin ? w->ops->begin(w) : 0;

	if (r == KJ_OFFWORK_LATER)
		return;
	if (r < 0) {
		finish(w, r, 1);
		return;
	}
	go(w);
}

static int uid_running(const struct kj__offq *q, uid_t uid)
{
	for (const struct kj__offwork *w = q->run; w; w = w->next)
		if (w->uid == uid)
			return 1;
	return 0;
}

/* Takes the next to begin out of q's waiting list (fair: the first of a
 * uid with no slot, else the oldest). */
static struct kj__offwork *take_waiting(struct kj__offq *q, int fair)
{
	struct kj__offwork **pp = &q->wait, **pick = pp, *prev = NULL, *pick_prev = NULL, *w;

	for (; fair && (w = *pp) != NULL; prev = w, pp = &w->next) {
		if (!uid_running(q, w->uid)) {
			pick = pp;
			pick_prev = prev;
			break;
		}
	}
	w = *pick;
	*pick = w->next;
	if (q->wait_tail == w)
		q->wait_tail = pick_prev;
	w->next = NULL;
	q->n_wait--;
	return w;
}

static int has_slot(const struct kj__offq *q, const struct kj__offwork_policy *p)
{
	return !q->busy && !q->stopped && (p->run_max == 0 || q->n_run < p->run_max);
}

/* Gives q's free slots to those waiting. */
static void start_waiting(struct kj__offwork_set *s, int qi)
{
	struct kj__offq *q = &s->q[qi];

	while (q->wait && has_slot(q, &s->policy[qi])) {
		struct kj__offwork *w = take_waiting(q, s->policy[qi].fair);
		list_run(w);
		begin(w);
	}
}

void kj__offwork_submit(struct kj__offwork_set *s, int qi, struct kj__offwork *w, int where)
{
	struct kj__offq *q = &s->q[qi];
	const struct kj__offwork_policy *p = &s->policy[qi];
	int r;

	w->set = s;
	w->q = qi;
	w->next = NULL;
	w->on_thread = 0;
	w->seq = ++q->seq;
	if (q->stopped && p->end_at_stop) {
		finish(w, KJIT_ESHUTDOWN, 0);
		return;
	}
	if (where == KJ_OFFWORK_HERE) {
		r = w->ops->begin ? w->ops->begin(w) : 0;
		if (r < 0) {
			finish(w, r, 0);
			return;
		}
		do
			w->ops->run(w);
		while (finish(w, 0, 0));
		return;
	}
	if (q->wait == NULL && has_slot(q, p)) {
		list_run(w);
		begin(w);
		return;
	}
	if (q->wait_tail)
		q->wait_tail->next = w;
	else
		q->wait = w;
	q->wait_tail = w;
	q->n_wait++;
}

void kj__offwork_resume(struct kj__offwork *w)
{
	begin(w);
}

unsigned kj__offwork_count(const struct kj__offwork_set *s, int qi, uid_t uid)
{
	const struct kj__offq *q = &s->q[qi];
	unsigned n = 0;

	if (uid == (uid_t)-1)
		return q->n_run + q->n_wait;
	for (const struct kj__offwork *w = q->run; w; w = w->next)
		n += w->uid == uid;
	for (const struct kj__offwork *w = q->wait; w; w = w->next)
		n += w->uid == uid;
	return n;
}

void kj__offwork_when_idle(struct kj__offwork_set *s, int qi, void (*fn)(void *arg), void *arg)
{
	struct kj__offq *q = &s->q[qi];
	struct kj__offidle *i, **pp;

	if ((q->run == NULL && q->wait == NULL) || (i = calloc(1, sizeof *i)) == NULL) {
		fn(arg); /* out of memory: now, without what is pending */
		return;
	}
	i->fn = fn;
	i->arg = arg;
	i->seq = q->seq;
	for (pp = &q->idle; *pp; pp = &(*pp)->next)
		;
	*pp = i;
}

void kj__offwork_stop(struct kj__offwork_set *s)
{
	for (int qi = 0; qi < s->n; qi++) {
		struct kj__offq *q = &s->q[qi];
		struct kj__offwork *w;

		if (q->stopped || !s->policy[qi].end_at_stop)
			continue;
		q->stopped = 1;
		for (w = q->run; w; w = w->next)
			if (w->on_thread)
				uv_cancel((uv_req_t *)&w->uw); /* not begun: on_back gets UV_ECANCELED */
		while ((w = q->wait) != NULL) {
			q->wait = w->next;
			if (q->wait == NULL)
				q->wait_tail = NULL;
			q->n_wait--;
			w->next = NULL;
			finish(w, KJIT_ESHUTDOWN, 0);
		}
	}
}
