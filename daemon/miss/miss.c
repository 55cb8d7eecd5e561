/* miss.c: the miss, one flight per key, as one state machine.
 * (driver to come in the next step)
 */
#include "miss-int.h"
#include "util.h"

/* ---- the machine ---- */

static struct kj__miss_step to(enum kj__miss_state s, enum kj__miss_action a)
{
	return (struct kj__miss_step){ s, a };
}

/* A miss that is not served from the tier: compiled here, unless no
 * waiter may compile (then refused). */
static struct kj__miss_step compile_or_refuse(unsigned flags)
{
	if (flags & KJ_MISS_F_FETCH_ONLY)
		return to(KJ_MISS_DONE, KJ_MISS_DO_REFUSE);
	return to(KJ_MISS_COMPILING, KJ_MISS_DO_COMPILE);
}

struct kj__miss_step kj__miss_next(enum kj__miss_state s, enum kj__miss_event e, unsigned flags)
{
	struct kj__miss_step illegal = to(s, KJ_MISS_DO_ILLEGAL);

	switch (s) {
	case KJ_MISS_OPENED: /* without --remote, the tier is never asked */
		if (e != KJ_MISS_START)
			return illegal;
		return flags & KJ_MISS_F_REMOTE ? to(KJ_MISS_REMOTE_LOOKUP, KJ_MISS_DO_LOOKUP) : compile_or_refuse(flags);
	case KJ_MISS_REMOTE_LOOKUP:
		switch (e) {
		case KJ_MISS_REMOTE_HIT: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE);
		case KJ_MISS_REMOTE_MISS:
			if (flags & KJ_MISS_F_FETCH_ONLY)
				return to(KJ_MISS_DONE, KJ_MISS_DO_REFUSE);
			return to(KJ_MISS_LEASING, KJ_MISS_DO_LEASE);
		case KJ_MISS_SHUTDOWN: return to(KJ_MISS_FAILED, KJ_MISS_DO_FAIL);
		default: return illegal;
		}
	case KJ_MISS_LEASING:
		switch (e) {
		case KJ_MISS_LEASE_OWNED: return to(KJ_MISS_RECHECK, KJ_MISS_DO_RECHECK);
		case KJ_MISS_LEASE_PUBLISHED: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE);
		case KJ_MISS_LEASE_UNAVAILABLE: return compile_or_refuse(flags); /* compile alone */
		case KJ_MISS_SHUTDOWN: return to(KJ_MISS_FAILED, KJ_MISS_DO_FAIL);
		default: return illegal;
		}
	case KJ_MISS_RECHECK: /* published between our lookup and our lease? */
		switch (e) {
		case KJ_MISS_REMOTE_HIT: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE);
		case KJ_MISS_REMOTE_MISS: return compile_or_refuse(flags);
		case KJ_MISS_SHUTDOWN: return to(KJ_MISS_FAILED, KJ_MISS_DO_FAIL);
		default: return illegal;
		}
	case KJ_MISS_COMPILING: /* the pool fails its jobs itself when kjitd stops */
		switch (e) {
		case KJ_MISS_JOB_COMPILED: return to(KJ_MISS_PUBLISHING, KJ_MISS_DO_PUBLISH);
		case KJ_MISS_JOB_FAILED: return to(KJ_MISS_FAILED, KJ_MISS_DO_ANSWER_FAILURE);
		default: return illegal;
		}
	default: /* PUBLISHING, DONE, FAILED: the flight has ended */
		return illegal;
	}
}

const char *kj__miss_state_name(enum kj__miss_state s)
{
	static const char *const names[] = { "opened",	  "remote-lookup", "leasing", "recheck",
					     "compiling", "publishing",	   "done",    "failed" };

	return (unsigned)s < KJ_ARRAY_SIZE(names) ? names[s] : "?";
}

const char *kj__miss_event_name(enum kj__miss_event e)
{
	static const char *const names[] = { "start",	      "remote-hit",   "remote-miss",
					     "lease-owned",   "lease-published", "lease-unavailable",
					     "job-compiled",  "job-failed",   "shutdown" };

	return (unsigned)e < KJ_ARRAY_SIZE(names) ? names[e] : "?";
}
