/* offwork.h: work off an event loop, on libuv's thread pool (offwork.c):
 * kjitd's one door to a thread (issue 33).  A piece of work is three
 * steps, begin (on the loop, once it may run), run (on a thread) and
 * finish (on the loop, which may ask for another run), in one of a set of
 * queues, each with its own bounds and its own behaviour at stop.
 *
 * A utility below the daemon, as libuv is: it knows no daemon state, only
 * the loop and the queues' policies its owner gives it (kjitd's queues and
 * their policies are daemon.h's KJ_OFFQ_* and main.c's table).  The
 * modules on top: daemon/miss/offhash.c (a GET resolved to its key),
 * daemon/miss/publish.c (a publish's digest, file and fsyncs),
 * daemon/admin/offloop.c (gc, verify, clear, export, import; the index's
 * checkpoint). */
#ifndef KJ_OFFWORK_H
#define KJ_OFFWORK_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

/* A queue's policy.  run_max: works holding a slot at once (0: no bound);
 * fair: a free slot goes to the oldest work of a uid holding none, else
 * the oldest; on_loop: run on the loop, never a thread (a run that needs
 * what is not thread-safe here); end_at_stop: at kj__offwork_stop, works
 * waiting and works queued on the pool but not begun there end with
 * KJIT_ESHUTDOWN (otherwise they run).  Every queue: work on a thread
 * when the set stops finishes, and the loop runs until it has (a queued
 * uv_work_t keeps it alive). */
struct kj__offwork_policy {
	unsigned run_max;
	int fair;
	int on_loop;
	int end_at_stop;
};

#define KJ_OFFWORK_QUEUES_MAX 8

#define KJ_OFFWORK_LATER 1 /* begin: keep the slot; kj__offwork_resume will begin it again */

struct kj__offwork;
/* A work's steps.  begin (NULL: none): on the loop when the work gets its
 * slot: 0 to run, KJ_OFFWORK_LATER, or a negative code (finish is called
 * with it, without a run).  run: on a thread (or on the loop, see above),
 * touching only what its work owns.  finish: on the loop after run (code
 * 0), after a failed begin (its code), or with KJIT_ESHUTDOWN when the set
 * stopped it before it ran; returns 1 to run again (same slot; only with
 * code 0), else 0: the work is done and may be freed within finish. */
struct kj__offwork_ops {
	int (*begin)(struct kj__offwork *w);
	void (*run)(struct kj__offwork *w);
	int (*finish)(struct kj__offwork *w, int code);
};

/* One piece of work, embedded in its module's struct (container_of by
 * offsetof); zeroed, then ops and uid set before submit. */
struct kj__offwork {
	const struct kj__offwork_ops *ops;
	uid_t uid;                   /* a fair queue's turns, kj__offwork_count's uid */
	/* offwork.c's own */
	uv_work_t uw;
	struct kj__offwork_set *set;
	int q;
	int on_thread;               /* handed to uv_queue_work, not yet back */
	uint64_t seq;                /* order of submit (kj__offwork_when_idle) */
	struct kj__offwork *next;
};

/* A set of queues on loop, one per policies[0..n), n at most
 * KJ_OFFWORK_QUEUES_MAX (the policies are copied): NULL when out of
 * memory.  free: after the loop has closed (NULL: nothing). */
struct kj__offwork_set;
struct kj__offwork_set *kj__offwork_new(uv_loop_t *loop, const struct kj__offwork_policy *policies, int n);
void kj__offwork_free(struct kj__offwork_set *s);

/* Where submit runs a work. */
enum { KJ_OFFWORK_POOL, KJ_OFFWORK_HERE };

/* Puts w in queue q.  POOL: it begins when the queue has a slot (perhaps
 * before this returns) and runs on a thread; HERE: begin, run and finish
 * now, on the loop, before this returns, beside the queue's bound (a small
 * resolve, a publish over its byte cap).  A work submitted to a queue that
 * ends work at stop after the set stopped is finished with KJIT_ESHUTDOWN
 * now.  finish is always called: now or later. */
void kj__offwork_submit(struct kj__offwork_set *s, int q, struct kj__offwork *w, int where);
/* After begin returned KJ_OFFWORK_LATER: begins w again (on the loop). */
void kj__offwork_resume(struct kj__offwork *w);
/* Work in queue q holding a slot or waiting for one: all, or (uid not
 * (uid_t)-1) that uid's. */
unsigned kj__offwork_count(const struct kj__offwork_set *s, int q, uid_t uid);
/* Calls fn(arg) on the loop once every work submitted to q before now has
 * finished (later ones are not waited for): at once if none is pending,
 * or when out of memory. */
void kj__offwork_when_idle(struct kj__offwork_set *s, int q, void (*fn)(void *arg), void *arg);
/* The owner is stopping: each queue as its policy says.  Idempotent. */
void kj__offwork_stop(struct kj__offwork_set *s);

#endif /* KJ_OFFWORK_H */
