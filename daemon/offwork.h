/* offwork.h: work off kjitd's loop, on libuv's thread pool (offwork.c):
 * the one place the daemon hands work to a thread (issue 33).  A piece of
 * work is three steps, begin (on the loop, once it may run), run (on a
 * thread) and finish (on the loop, which may ask for another run), in one
 * of kjitd's queues, each with its own bounds and its own behaviour when
 * kjitd stops.  The modules on top: daemon/miss/offhash.c (a GET resolved
 * to its key), daemon/miss/publish.c (a publish's digest, file and
 * fsyncs), daemon/admin/offloop.c (gc, verify, clear, export, import; the
 * index's checkpoint). */
#ifndef KJ_OFFWORK_H
#define KJ_OFFWORK_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

struct kj__daemon;

/* kjitd's queues (offwork.c's table says each one's bounds):
 *  RESOLVE: GETs resolving, KJ_RESOLVE_RUNNING_MAX on the pool at once,
 *    the next the oldest of a uid with none running; at stop, those
 *    waiting and those not yet begun on the pool end with KJIT_ESHUTDOWN.
 *  PUBLISH: no bound on count (publish.c bounds the bytes); never ended
 *    early: what was answered is cached.
 *  ADMIN: one at a time, in arrival order; at stop those waiting end with
 *    KJIT_ESHUTDOWN, the one running completes.
 *  CHECKPOINT: the index's WAL checkpoint, one at a time.
 * PUBLISH, ADMIN and CHECKPOINT use the cache's SQLite on their thread:
 * where it is not thread-safe (kj__cache_job_threaded), they run on the
 * loop, as they always could.  Every queue: work on a thread when kjitd
 * stops finishes, and the loop runs until it has (a queued uv_work_t keeps
 * it alive). */
enum { KJ_OFFQ_RESOLVE, KJ_OFFQ_PUBLISH, KJ_OFFQ_ADMIN, KJ_OFFQ_CHECKPOINT, KJ_OFFQ_COUNT };

#define KJ_OFFWORK_LATER 1 /* begin: keep the slot; kj__offwork_resume will begin it again */

struct kj__offwork;
/* A work's steps.  begin (NULL: none): on the loop when the work gets its
 * slot: 0 to run, KJ_OFFWORK_LATER, or a negative code (finish is called
 * with it, without a run).  run: on a thread (or on the loop, see above),
 * touching only what its work owns.  finish: on the loop after run (code
 * 0), after a failed begin (its code), or with KJIT_ESHUTDOWN when kjitd
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
	uid_t uid;                   /* RESOLVE: the fairness between uids and kj__offwork_count */
	/* offwork.c's own */
	uv_work_t uw;
	struct kj__daemon *d;
	int q;
	int on_thread;               /* handed to uv_queue_work, not yet back */
	uint64_t seq;                /* order of submit (kj__offwork_when_idle) */
	struct kj__offwork *next;
};

/* The queues (offwork.c's own struct kj__offwork_set, d->work).  init:
 * allocates them, empty; 0 or KJIT_ENOMEM.  free: after the loop has
 * closed (NULL: nothing). */
struct kj__offwork_set;
int kj__offwork_init(struct kj__daemon *d);
void kj__offwork_free(struct kj__daemon *d);

/* Where submit runs a work. */
enum { KJ_OFFWORK_POOL, KJ_OFFWORK_HERE };

/* Puts w in queue q.  POOL: it begins when the queue has a slot (perhaps
 * before this returns) and runs on a thread; HERE: begin, run and finish
 * now, on the loop, before this returns, beside the queue's bound (a small
 * resolve, a publish over its byte cap).  A work submitted to a queue that
 * ends work at stop after kjitd stopped is finished with KJIT_ESHUTDOWN
 * now.  finish is always called: now or later. */
void kj__offwork_submit(struct kj__daemon *d, int q, struct kj__offwork *w, int where);
/* After begin returned KJ_OFFWORK_LATER: begins w again (on the loop). */
void kj__offwork_resume(struct kj__offwork *w);
/* Work in queue q holding a slot or waiting for one: all, or (uid not
 * (uid_t)-1) that uid's. */
unsigned kj__offwork_count(const struct kj__daemon *d, int q, uid_t uid);
/* Calls fn(arg) on the loop once every work submitted to q before now has
 * finished (later ones are not waited for): at once if none is pending,
 * or when out of memory. */
void kj__offwork_when_idle(struct kj__daemon *d, int q, void (*fn)(void *arg), void *arg);
/* kjitd is stopping: each queue as its entry above says.  Idempotent. */
void kj__offwork_stop(struct kj__daemon *d);

#endif /* KJ_OFFWORK_H */
