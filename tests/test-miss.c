/* test-miss.c: the miss's state machine (daemon/miss/miss.c kj__miss_next)
 * driven with events alone: no flight, no loop, no sockets.  Every state ×
 * event pair is checked against the table below (what is not listed must
 * be refused: state kept, action ILLEGAL); the walks of a compiled result,
 * a remote hit, a lease another node fulfils, a refusal and a shutdown are
 * played through; and without --remote no reachable step ever asks the
 * fleet tier. */
#include <stdio.h>

#include "miss-int.h"
#include "test.h"

#define R KJ_MISS_F_REMOTE
#define FO KJ_MISS_F_FETCH_ONLY
#define ANY 4u /* the step is the same under every flag */

struct row {
	enum kj__miss_state s;
	enum kj__miss_event e;
	unsigned flags;
	enum kj__miss_state to;
	enum kj__miss_action act;
};

/* The legal transitions, all of them. */
static const struct row rows[] = {
	{ KJ_MISS_OPENED, KJ_MISS_START, 0, KJ_MISS_COMPILING, KJ_MISS_DO_COMPILE },
	{ KJ_MISS_OPENED, KJ_MISS_START, FO, KJ_MISS_DONE, KJ_MISS_DO_REFUSE },
	{ KJ_MISS_OPENED, KJ_MISS_START, R, KJ_MISS_REMOTE_LOOKUP, KJ_MISS_DO_LOOKUP },
	{ KJ_MISS_OPENED, KJ_MISS_START, R | FO, KJ_MISS_REMOTE_LOOKUP, KJ_MISS_DO_LOOKUP }, /* fetch: ask first */
	{ KJ_MISS_REMOTE_LOOKUP, KJ_MISS_REMOTE_HIT, ANY, KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE },
	{ KJ_MISS_REMOTE_LOOKUP, KJ_MISS_REMOTE_MISS, 0, KJ_MISS_LEASING, KJ_MISS_DO_LEASE },
	{ KJ_MISS_REMOTE_LOOKUP, KJ_MISS_REMOTE_MISS, R, KJ_MISS_LEASING, KJ_MISS_DO_LEASE },
	{ KJ_MISS_REMOTE_LOOKUP, KJ_MISS_REMOTE_MISS, FO, KJ_MISS_DONE, KJ_MISS_DO_REFUSE },
	{ KJ_MISS_REMOTE_LOOKUP, KJ_MISS_REMOTE_MISS, R | FO, KJ_MISS_DONE, KJ_MISS_DO_REFUSE },
	{ KJ_MISS_REMOTE_LOOKUP, KJ_MISS_SHUTDOWN, ANY, KJ_MISS_FAILED, KJ_MISS_DO_FAIL },
	{ KJ_MISS_LEASING, KJ_MISS_LEASE_OWNED, ANY, KJ_MISS_RECHECK, KJ_MISS_DO_RECHECK },
	{ KJ_MISS_LEASING, KJ_MISS_LEASE_PUBLISHED, ANY, KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE },
	{ KJ_MISS_LEASING, KJ_MISS_LEASE_UNAVAILABLE, 0, KJ_MISS_COMPILING, KJ_MISS_DO_COMPILE },
	{ KJ_MISS_LEASING, KJ_MISS_LEASE_UNAVAILABLE, R, KJ_MISS_COMPILING, KJ_MISS_DO_COMPILE },
	{ KJ_MISS_LEASING, KJ_MISS_LEASE_UNAVAILABLE, FO, KJ_MISS_DONE, KJ_MISS_DO_REFUSE },
	{ KJ_MISS_LEASING, KJ_MISS_LEASE_UNAVAILABLE, R | FO, KJ_MISS_DONE, KJ_MISS_DO_REFUSE },
	{ KJ_MISS_LEASING, KJ_MISS_SHUTDOWN, ANY, KJ_MISS_FAILED, KJ_MISS_DO_FAIL },
	{ KJ_MISS_RECHECK, KJ_MISS_REMOTE_HIT, ANY, KJ_MISS_PUBLISHING, KJ_MISS_DO_SERVE },
	{ KJ_MISS_RECHECK, KJ_MISS_REMOTE_MISS, 0, KJ_MISS_COMPILING, KJ_MISS_DO_COMPILE },
	{ KJ_MISS_RECHECK, KJ_MISS_REMOTE_MISS, R, KJ_MISS_COMPILING, KJ_MISS_DO_COMPILE },
	{ KJ_MISS_RECHECK, KJ_MISS_REMOTE_MISS, FO, KJ_MISS_DONE, KJ_MISS_DO_REFUSE },
	{ KJ_MISS_RECHECK, KJ_MISS_REMOTE_MISS, R | FO, KJ_MISS_DONE, KJ_MISS_DO_REFUSE },
	{ KJ_MISS_RECHECK, KJ_MISS_SHUTDOWN, ANY, KJ_MISS_FAILED, KJ_MISS_DO_FAIL },
	{ KJ_MISS_COMPILING, KJ_MISS_JOB_COMPILED, ANY, KJ_MISS_PUBLISHING, KJ_MISS_DO_PUBLISH },
	{ KJ_MISS_COMPILING, KJ_MISS_JOB_FAILED, ANY, KJ_MISS_FAILED, KJ_MISS_DO_ANSWER_FAILURE },
};

static const struct row *find(enum kj__miss_state s, enum kj__miss_event e, unsigned flags)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (rows[i].s == s && rows[i].e == e && (rows[i].flags == ANY || rows[i].flags == flags))
			return &rows[i];
	return NULL;
}

/* Every state × event × flags: the table's step, or refused. */
static void test_every_pair(void)
{
	int legal = 0;

	for (int s = 0; s < KJ_MISS_N_STATES; s++)
		for (int e = 0; e < KJ_MISS_N_EVENTS; e++)
			for (unsigned fl = 0; fl < 4; fl++) {
				struct kj__miss_step st = kj__miss_next(s, e, fl);
				const struct row *r = find(s, e, fl);
				if (r == NULL) {
					if (st.state != (enum kj__miss_state)s || st.action != KJ_MISS_DO_ILLEGAL)
						fprintf(stderr, "%s + %s (flags %u) not refused\n", kj__miss_state_name(s),
							kj__miss_event_name(e), fl);
					CHECK_EQ_INT(st.state, s);
					CHECK_EQ_INT(st.action, KJ_MISS_DO_ILLEGAL);
					continue;
				}
				legal++;
				if (st.state != r->to || st.action != r->act)
					fprintf(stderr, "%s + %s (flags %u) -> %s, action %d\n", kj__miss_state_name(s),
						kj__miss_event_name(e), fl, kj__miss_state_name(st.state), st.action);
				CHECK_EQ_INT(st.state, r->to);
				CHECK_EQ_INT(st.action, r->act);
			}
	CHECK_EQ_INT(legal, 4 * (1 + 3 + 4 + 3 + 2)); /* the legal events of each state, under each of the 4 flag sets */
}

/* A flight ends in PUBLISHING, DONE or FAILED: nothing moves it on. */
static void test_final_states_refuse_everything(void)
{
	enum kj__miss_state fin[] = { KJ_MISS_PUBLISHING, KJ_MISS_DONE, KJ_MISS_FAILED };

	for (size_t i = 0; i < 3; i++)
		for (int e = 0; e < KJ_MISS_N_EVENTS; e++) {
			struct kj__miss_step st = kj__miss_next(fin[i], e, KJ_MISS_F_REMOTE);
			CHECK_EQ_INT(st.state, fin[i]);
			CHECK_EQ_INT(st.action, KJ_MISS_DO_ILLEGAL);
		}
	/* out of range: refused too */
	CHECK_EQ_INT(kj__miss_next(KJ_MISS_N_STATES, KJ_MISS_START, 0).action, KJ_MISS_DO_ILLEGAL);
	CHECK_EQ_INT(kj__miss_next(KJ_MISS_OPENED, KJ_MISS_N_EVENTS, 0).action, KJ_MISS_DO_ILLEGAL);
	CHECK_EQ_STR(kj__miss_state_name(KJ_MISS_N_STATES), "?");
	CHECK_EQ_STR(kj__miss_event_name(KJ_MISS_N_EVENTS), "?");
	CHECK_EQ_STR(kj__miss_state_name(KJ_MISS_RECHECK), "recheck");
	CHECK_EQ_STR(kj__miss_event_name(KJ_MISS_LEASE_UNAVAILABLE), "lease-unavailable");
}

/* Plays events from OPENED; checks each action and the final state. */
static void play(unsigned flags, const enum kj__miss_event *ev, const enum kj__miss_action *act, size_t n,
		 enum kj__miss_state end)
{
	enum kj__miss_state s = KJ_MISS_OPENED;

	for (size_t i = 0; i < n; i++) {
		struct kj__miss_step st = kj__miss_next(s, ev[i], flags);
		CHECK_EQ_INT(st.action, act[i]);
		s = st.state;
	}
	CHECK_EQ_INT(s, end);
}

static void test_walks(void)
{
	/* a compiled result without --remote: two steps, the tier never asked */
	play(0, (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_JOB_COMPILED },
	     (enum kj__miss_action[]){ KJ_MISS_DO_COMPILE, KJ_MISS_DO_PUBLISH }, 2, KJ_MISS_PUBLISHING);
	/* a remote hit: one lookup, then served */
	play(R, (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_REMOTE_HIT },
	     (enum kj__miss_action[]){ KJ_MISS_DO_LOOKUP, KJ_MISS_DO_SERVE }, 2, KJ_MISS_PUBLISHING);
	/* a fleet compile: lookup, lease, recheck, compile, publish */
	play(R,
	     (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_REMOTE_MISS, KJ_MISS_LEASE_OWNED, KJ_MISS_REMOTE_MISS,
				      KJ_MISS_JOB_COMPILED },
	     (enum kj__miss_action[]){ KJ_MISS_DO_LOOKUP, KJ_MISS_DO_LEASE, KJ_MISS_DO_RECHECK, KJ_MISS_DO_COMPILE,
				       KJ_MISS_DO_PUBLISH },
	     5, KJ_MISS_PUBLISHING);
	/* published just before our lease: the recheck serves it */
	play(R,
	     (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_REMOTE_MISS, KJ_MISS_LEASE_OWNED, KJ_MISS_REMOTE_HIT },
	     (enum kj__miss_action[]){ KJ_MISS_DO_LOOKUP, KJ_MISS_DO_LEASE, KJ_MISS_DO_RECHECK, KJ_MISS_DO_SERVE },
	     4, KJ_MISS_PUBLISHING);
	/* another node compiled it while we waited for the lease */
	play(R, (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_REMOTE_MISS, KJ_MISS_LEASE_PUBLISHED },
	     (enum kj__miss_action[]){ KJ_MISS_DO_LOOKUP, KJ_MISS_DO_LEASE, KJ_MISS_DO_SERVE }, 3, KJ_MISS_PUBLISHING);
	/* the tier unreachable: compile alone, and its failure answered */
	play(R,
	     (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_REMOTE_MISS, KJ_MISS_LEASE_UNAVAILABLE, KJ_MISS_JOB_FAILED },
	     (enum kj__miss_action[]){ KJ_MISS_DO_LOOKUP, KJ_MISS_DO_LEASE, KJ_MISS_DO_COMPILE,
				       KJ_MISS_DO_ANSWER_FAILURE },
	     4, KJ_MISS_FAILED);
	/* kjitd --no-compile --remote: a remote miss is refused, never leased */
	play(R | FO, (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_REMOTE_MISS },
	     (enum kj__miss_action[]){ KJ_MISS_DO_LOOKUP, KJ_MISS_DO_REFUSE }, 2, KJ_MISS_DONE);
	/* stopping while the lease is asked for */
	play(R, (enum kj__miss_event[]){ KJ_MISS_START, KJ_MISS_REMOTE_MISS, KJ_MISS_SHUTDOWN },
	     (enum kj__miss_action[]){ KJ_MISS_DO_LOOKUP, KJ_MISS_DO_LEASE, KJ_MISS_DO_FAIL }, 3, KJ_MISS_FAILED);
}

/* Without --remote, no state reachable from OPENED by any event sequence
 * asks the tier (lookup, lease, recheck, serve) or enters its states. */
static void test_no_remote_never_asks_the_tier(void)
{
	for (unsigned fl = 0; fl <= FO; fl += FO) {
		int seen[KJ_MISS_N_STATES] = { 0 }, grew = 1;
		seen[KJ_MISS_OPENED] = 1;
		while (grew) {
			grew = 0;
			for (int s = 0; s < KJ_MISS_N_STATES; s++)
				for (int e = 0; seen[s] && e < KJ_MISS_N_EVENTS; e++) {
					struct kj__miss_step st = kj__miss_next(s, e, fl);
					if (st.action == KJ_MISS_DO_ILLEGAL)
						continue;
					CHECK(st.action != KJ_MISS_DO_LOOKUP && st.action != KJ_MISS_DO_LEASE &&
					      st.action != KJ_MISS_DO_RECHECK && st.action != KJ_MISS_DO_SERVE);
					if (!seen[st.state])
						seen[st.state] = grew = 1;
				}
		}
		CHECK(!seen[KJ_MISS_REMOTE_LOOKUP] && !seen[KJ_MISS_LEASING] && !seen[KJ_MISS_RECHECK]);
		CHECK(seen[fl ? KJ_MISS_DONE : KJ_MISS_PUBLISHING]);
	}
}

TEST_LIST(TEST(every_pair) TEST(final_states_refuse_everything) TEST(walks) TEST(no_remote_never_asks_the_tier))
