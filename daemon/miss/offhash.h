/* offhash.h: a GET resolved to its cache key on libuv's thread pool
 * (offhash.c): the include scan, the key's SHA-256 and the memo's file
 * checks, so that kjitd's loop never waits on them (issue 25). */
#ifndef KJ_OFFHASH_H
#define KJ_OFFHASH_H

#include "cache.h"
#include "daemon.h"
#include "sha.h"

#define KJ_OFFHASH_ALT_MAX 3 /* compatible AMD targets tried for a miss: one feature dropped, then both */

/* One request's resolution.  The caller fills the first block, then calls
 * kj__offhash_start; the results are valid in done, on the loop. */
struct kj__offhash {
	struct kj__daemon *d;
	const struct kj__get_req *q;
	const uint8_t *raw;            /* the GET's bytes (memo, hit table), or NULL */
	size_t raw_len;
	uid_t uid;                     /* counted against --max-resolves-per-uid */
	const struct kj__pool *pool;   /* ready: its identity and runtime version are copied */
	struct kj__explain *ex;        /* --explain: its candidates (explain.c), or NULL; freed by clear */
	void (*done)(struct kj__offhash *h); /* on the loop, exactly once after a start that returned 0 */
	void *arg;
	/* Results.  code: 0, a request's fault (reason in err), or
	 * KJIT_ESHUTDOWN (kjitd is stopping: nothing else is set). */
	int code;
	char err[1024];
	char key[65];
	char legacy[65];               /* with want: the key before entries left it (cache/key.c); "" if none */
	char target[KJ_TARGET_MAX];    /* canonical */
	char version[KJ_VERSION_STR_MAX];
	char compiler[256];
	char *incdir;                  /* <kernels>/include, for the memo */
	char *want;                    /* entries to check (hip, cuda), "NAME\n" each; NULL: none */
	int want_legacy;               /* want, and the index may hold legacy keys: the thread computes legacy */
	struct kj__includes inc;
	struct kj__key_input ki;       /* the key's inputs: points into the above and q */
	struct kj__memo_files memo;    /* memo.ok: what kj__memo_enter may keep */
	struct kj__hdr_reads reads;    /* headers taken from <kernels>/include: their proofs for the memo;
					* those read (not kept) are kept in done (hdrkeep.c) */
	char *explain;                 /* with q->explain: why it would not be a hit (explain.c), malloc'd */
	int has_fp;                    /* fp: raw's SHA-256, the hit table's name for it */
	uint8_t fp[KJ_SHA256_LEN];
	uint64_t hits_gen;             /* the hit table's generation when the resolve began (on the loop):
					* a put of what it resolved to is refused if a watched file
					* changed since (hits.c), even while the thread was reading it */
	size_t n_alt;                  /* keys of compatible targets with fewer features, most specific first */
	char alt_key[KJ_OFFHASH_ALT_MAX][65];
	char alt_target[KJ_OFFHASH_ALT_MAX][KJ_TARGET_MAX];
	/* offhash.c's own: its place in kjitd's resolve queue (offwork.c) */
	struct kj__offwork work;
	int here;                      /* tried on the loop, with the include scan's budget */
	int over;                      /* ... which ran out: resolved again on a thread */
	size_t inline_left;            /* ... bytes kept headers may add to hash there (KJ_RESOLVE_INLINE_BYTES) */
};

/* Resolves h->q's target on the loop (request, configuration, detection),
 * then queues the rest on the thread pool (offwork.c's resolve queue: past
 * KJ_RESOLVE_RUNNING_MAX, it waits there).  0: done will be called; or a code with the reason
 * for the client in h->err (KJIT_EBUSY past the uid's cap), done never
 * called.  Either way kj__offhash_clear frees what h holds. */
int kj__offhash_start(struct kj__offhash *h);
/* Frees what h holds (its results); not h itself. */
void kj__offhash_clear(struct kj__offhash *h);

#endif /* KJ_OFFHASH_H */
