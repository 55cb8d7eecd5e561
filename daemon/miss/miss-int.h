/* miss-int.h: the miss's state machine and its flight, private to the
 * miss (daemon/miss/miss.c, the machine and its driver; miss-help.c, the
 * pure helpers beside it; no other daemon file includes this header,
 * tests/e2e/layering.sh checks it, and tests/test-miss.c drives the
 * machine).  Every other file holds a struct kj__flight only as an opaque
 * pointer and calls the functions daemon.h declares.
 */
#ifndef KJ_MISS_INT_H
#define KJ_MISS_INT_H

#include "daemon.h"
#include "includes.h"
#include "remote.h"

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
 * COMPILE: refuse the waiters that may not compile (unless LEASE did:
 * once a flight, struct kj__flight's fetch_checked), then build the job
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

/* ---- the flight (its driver: miss.c; its helpers: miss-help.c) ---- */

struct kj__waiter {
	struct kj__conn *c;          /* referenced while in the flight */
	uint32_t id;
	int no_compile;              /* fetch only: a miss is refused, not compiled */
	char *explain;               /* --explain: why it was not a hit (explain.c), sent with the object; owned */
	char *want;                  /* the entry points it asked for, "NAME\n" each, checked
				      * against the object (hip, cuda); NULL: none; owned */
	uint8_t fp[32];              /* a joiner's GET body fingerprint, for the hit table */
	int has_fp;                  /* (w[0]'s is the flight's fp) */
	uint64_t hits_gen;           /* the hit table's generation when its resolve began */
};
struct kj__flight {
	char key[65];
	enum kj__miss_state state;   /* where the machine has it (miss.c) */
	struct kj__daemon *d;
	struct kj__waiter *w;        /* w[0] opened the flight */
	size_t n_w, cap_w;
	struct kj__job job;          /* its frame built only when the flight compiles (kj__miss_make_job) */
	struct kj__get_req q;        /* the opener's request, moved from get.c: what the JOB frame is built
				      * from; its headers freed once the recipe holds them, its source once
				      * the frame does */
	struct kj__includes inc;     /* its resolved includes, moved from offhash.c; freed once the frame holds them */
	struct kj__cache_entry e;    /* what the index will say; strings below */
	char *source_name, *options, *compiler;
	char *module_entries;        /* the request's, if a bundled kernel of hip or cuda (request.c); owned */
	struct kj__buf recipe;       /* the request without target and version */
	uid_t uid;                   /* who opened it, charged for what it holds: the request's source,
				      * its includes and recipe, then the job frame in their place */
	uint64_t charged;
	uint64_t t0;
	uint8_t fp[32];              /* w[0]'s GET body fingerprint, for the hit table */
	int has_fp;
	uint64_t hits_gen;           /* the hit table's generation when the flight opened */
	struct kj__pool *pool;       /* the compiler family it runs on */
	struct kj__remote_lease *lease; /* the fleet's lease while compiling; released on free */
	int fetch_checked;           /* the waiters that may only fetch were refused, once: when the
				      * tier missed (or, without --remote, at START); a fetch-only
				      * request joining later is served whatever the flight gets */
};

/* miss-help.c: what the driver calls, each returning to it (none calls
 * back into miss.c).
 *
 * The table of open flights (kj__flights_new/free/count in daemon.h).
 * find: the open flight for key, or NULL.  insert: adds f (no flight for
 * its key open): 0 or KJIT_ENOMEM (not added).  remove: takes f, which is
 * in t, out of it.  foreach: fn on each open flight (fn must not add or
 * remove any). */
struct kj__flight *kj__flights_find(struct kj__flights *t, const char *key);
int kj__flights_insert(struct kj__flights *t, struct kj__flight *f);
void kj__flights_remove(struct kj__flights *t, struct kj__flight *f);
void kj__flights_foreach(struct kj__flights *t, void (*fn)(struct kj__flight *f, void *arg), void *arg);
/* A new flight for m, state OPENED, not in the table: its index entry
 * (extension, options, compiler identity), m's client its first waiter
 * (with m->want and m->explain, taken), its replay recipe, the request
 * and includes moved in (m->q and m->inc zeroed; the request's headers
 * dropped: the recipe holds them), charged to the opener's uid.  NULL
 * with a code in *code and the reason in err (m's q and inc untouched). */
struct kj__flight *kj__miss_flight_new(struct kj__daemon *d, struct kj__miss *m, int *code, char *err,
				       size_t errlen);
/* Appends a waiter for m's client, taking a reference on it and m->want
 * and m->explain (set NULL), with its fetch-only flag and fingerprint:
 * 0 or KJIT_ENOMEM (nothing taken). */
int kj__miss_add_waiter(struct kj__flight *f, struct kj__miss *m);
/* Releases f's charge and lease, drops the waiters' references and frees
 * f and what it owns (NULL ok; never while f is in the table). */
void kj__flight_free(struct kj__flight *f);
/* Builds f's JOB frame from its request and includes, then frees them,
 * the uid's charge following (once: later calls do nothing).  0 or a
 * negative code. */
int kj__miss_make_job(struct kj__flight *f);
/* 1 if no waiter of f may compile (a --no-compile node, or every one
 * fetch-only), else 0. */
int kj__miss_fetch_only(const struct kj__flight *f);
/* Refuses the waiters of f that may not compile with one line naming the
 * key, the target and how to warm it, and takes them out of f. */
void kj__miss_refuse(struct kj__flight *f);
/* The object's entry list (data's symbols) becomes f->e.entries (the
 * index keeps it), and each waiter whose entries it lacks is answered
 * with that error and taken out of f; if the opener was, its bytes stay
 * out of the hit table (f->has_fp cleared). */
void kj__miss_check_object(struct kj__flight *f, const uint8_t *data, size_t len);
/* 1 if the verified remote object o is what f asked for (metadata, entry
 * list, the object's symbols), else 0, counted as forged and logged. */
int kj__miss_fits(struct kj__flight *f, const struct kj__remote_answer *a);
/* The fleet value of f's compiled object data into *v (metadata, entry
 * list, recipe, log, lowered names); *meta and *ents hold what it points
 * to (free them after the publish).  0, or a negative code (nothing to
 * free). */
int kj__miss_fleet_value(struct kj__flight *f, const uint8_t *data, size_t len, const char *log,
			 const char *lowered, struct kj__remote_object *v, char **meta, struct kj__buf *ents);

#endif /* KJ_MISS_INT_H */
