/* miss-int.h: the miss's state machine and its flight, private to the
 * miss (daemon/miss/miss.c, the machine and its driver; miss-help.c, the
 * pure helpers beside it; no other daemon file includes this header,
 * tests/e2e/layering.sh checks it, and tests/test-miss.c drives the
 * machine).  Every other file holds a struct kj__flight only as an opaque
 * pointer and calls the functions daemon.h declares.
 */
#ifndef KJ_MISS_INT_H
#define KJ_MISS_INT_H

/* ---- the machine (miss.c; docs/design.md, "The miss path") ---- */

/* Where a flight is.  A flight is opened (OPENED), looks its key up in
 * the fleet tier (REMOTE_LOOKUP, with --remote only), takes the fleet's
 * lease on a remote miss (LEASING), looks once more with the lease held
 * (RECHECK), compiles (COMPILING), and ends answered and published
 * (PUBLISHING), refused (DONE) or failed (FAILED): those three are final,
 * their action the flight's last. */
enum kj__miss_state {
	KJ_MISS_OPENED,
	KJ_MISS_REMOTE_LOOKUP,
	KJ_MISS_LEASING,
	KJ_MISS_RECHECK,
	KJ_MISS_COMPILING,
	KJ_MISS_PUBLISHING,
	KJ_MISS_DONE,
	KJ_MISS_FAILED,
	KJ_MISS_N_STATES
};

/* What happened.  START: the flight is open with its first waiter.
 * REMOTE_HIT: the tier had a verified value that fits what was asked;
 * REMOTE_MISS: it had none, or one that does not fit (counted forged), or
 * could not be asked.  LEASE_OWNED: this node holds the fleet's lease
 * for the key; LEASE_PUBLISHED: another node published a value that
 * fits while we waited; LEASE_UNAVAILABLE: no lease to be had (the tier
 * unreachable, read-only, or a value that does not fit).  JOB_COMPILED,
 * JOB_FAILED: the worker's answer (or the job that could not be built).
 * SHUTDOWN: kjitd stops while the flight waits on the tier. */
enum kj__miss_event {
	KJ_MISS_START,
	KJ_MISS_REMOTE_HIT,
	KJ_MISS_REMOTE_MISS,
	KJ_MISS_LEASE_OWNED,
	KJ_MISS_LEASE_PUBLISHED,
	KJ_MISS_LEASE_UNAVAILABLE,
	KJ_MISS_JOB_COMPILED,
	KJ_MISS_JOB_FAILED,
	KJ_MISS_SHUTDOWN,
	KJ_MISS_N_EVENTS
};

/* What the driver does next.  LOOKUP: ask the tier for the key.  LEASE:
 * refuse the waiters that may not compile, then ask the tier for the
 * lease.  RECHECK: ask the tier for the key once more (the lease held).
 * COMPILE: refuse the waiters that may not compile, then build the job
 * and queue it.  SERVE: answer every waiter with the tier's value, then
 * publish it here (the lease, if held, given back).  PUBLISH: answer
 * every waiter with the compiled object, publish it here, then in the
 * tier (handing it the lease).  REFUSE: refuse every waiter (none may
 * compile).  ANSWER_FAILURE: every waiter gets the compile's failure
 * (the lease given back).  FAIL: every waiter gets KJIT_ESHUTDOWN.
 * ILLEGAL: the event cannot happen in this state; the state is kept and
 * the driver fails the flight (a bug, logged). */
enum kj__miss_action {
	KJ_MISS_DO_LOOKUP,
	KJ_MISS_DO_LEASE,
	KJ_MISS_DO_RECHECK,
	KJ_MISS_DO_COMPILE,
	KJ_MISS_DO_SERVE,
	KJ_MISS_DO_PUBLISH,
	KJ_MISS_DO_REFUSE,
	KJ_MISS_DO_ANSWER_FAILURE,
	KJ_MISS_DO_FAIL,
	KJ_MISS_DO_ILLEGAL
};

/* What the machine reads of the flight beside its state: REMOTE, a fleet
 * tier is configured (--remote); FETCH_ONLY, no waiter may compile (a
 * --no-compile node, or every waiter asked only to fetch). */
#define KJ_MISS_F_REMOTE 1u
#define KJ_MISS_F_FETCH_ONLY 2u

struct kj__miss_step {
	enum kj__miss_state state;
	enum kj__miss_action action;
};

/* The transition: where a flight in state s goes on event e, and what the
 * driver does there.  Pure (no flight, no daemon): one switch.  An event
 * that cannot happen in s gives {s, KJ_MISS_DO_ILLEGAL}.  kj__miss_state_name
 * and kj__miss_event_name: their names for logs and tests ("?" if out of
 * range). */
struct kj__miss_step kj__miss_next(enum kj__miss_state s, enum kj__miss_event e, unsigned flags);
const char *kj__miss_state_name(enum kj__miss_state s);
const char *kj__miss_event_name(enum kj__miss_event e);

#endif /* KJ_MISS_INT_H */
