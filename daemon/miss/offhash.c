/* offhash.c: a GET resolved to its cache key off kjitd's loop (issue 25).
 *
 * On a memo miss, a request's key takes its include scan (headers read
 * from <kernels>/include), the SHA-256 over its source and headers (about
 * 0.58 ms per MB), the memo's re-reading of the files that went in, the
 * key before entries left it (hip, cuda with entries) and the keys of
 * compatible AMD targets.  All of that runs on libuv's thread pool
 * (offwork.c's resolve queue); get.c answers with the results on the loop.
 * A small request (at most KJ_RESOLVE_INLINE_BYTES to hash, no --explain)
 * is resolved on the loop instead, the hop to a thread and back costing
 * more than its resolve (issue 35): its include scan has a budget (no
 * header opened from disk, at most KJ_RESOLVE_INLINE_PROBES names looked
 * up there), and one that outgrows it is resolved again on a thread from
 * the start, so the loop never reads a header nor hashes much.  A header
 * of <kernels>/include read before stands in for its read while a stat
 * proves its kept text current (hdrkeep.c, round fourteen): the thread
 * records what it read (h->reads), done keeps it.  The results, and the
 * memo's checks, are the same either way.
 *
 * Invariants:
 *  - A run touches only its own struct kj__offhash, the request it points
 *    to (read-only), and the file system: the target, the pool's identity
 *    and runtime version, <kernels>/include are copied in on the loop
 *    before it is queued.  The loop's tables (memo, index, flights, hit
 *    table, negcache, stats, kept headers) are read and changed only in
 *    done, on the loop; a run on the loop (here) also reads the kept
 *    headers (kept_header), never one on a thread.
 *  - The queueing is offwork.c's (its resolve queue): at most
 *    KJ_RESOLVE_RUNNING_MAX runs are on the pool at once, so a publish or
 *    an admin task queued behind them waits for at most that many; the
 *    rest wait there (their bytes are already charged to their uid,
 *    quota.c), and the next to run is the oldest of a uid with none
 *    running, else the oldest: a pipelined flood from one uid (a
 *    kjit_get_many of hundreds) does not hold another uid's request behind
 *    it.  A uid with cfg.resolve_max_per_uid running or waiting gets
 *    "kjitd is busy ... retry" for the next, as a uid over its byte quota
 *    does: the quota bounds their bytes, the cap their count.
 *  - Every started resolution gets exactly one done.  When kjitd stops
 *    (kj__offwork_stop), those waiting end at once with KJIT_ESHUTDOWN, those on the pool
 *    are cancelled if not yet begun (done with KJIT_ESHUTDOWN) or finish
 *    (done sees d->stopping): the loop runs until the last has returned,
 *    as publish.c's runs do.
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kj_types.h"
#include "missroom-int.h"
#include "offhash.h"
#include "resolve.h"
#include "targetid.h"
#include "util.h"

/* The target when the request has none: configuration, then detection. */
static int default_target(struct kj__daemon *d, int backend, const char **out, const char **from)
{
	if (d->cfg.arch[backend]) {
		*out = d->cfg.arch[backend];
		*from = "kjitd configuration";
		return 0;
	}
	for (size_t i = 0, n = kj__daemon_n_gpus(d); i < n; i++) {
		if (kj__daemon_gpu(d, i)->backend == backend) {
			*out = kj__daemon_gpu(d, i)->target;
			*from = "detected";
			return 0;
		}
	}
	return KJIT_ENOTARGET;
}

/* The request's target (else configuration, else detection), canonical. */
static int resolve_target(struct kj__offhash *h)
{
	struct kj__daemon *d = h->d;
	int backend = h->q->backend;
	const char *target = h->q->target, *from = h->q->target_from ? h->q->target_from : "request";
	char terr[256] = "";
	int r;

	if (target == NULL && default_target(d, backend, &target, &from) < 0) {
		static const char *const example[] = { "", "gfx90a", "sm_90", "vulkan1.2" };
		const char *var = kj__target_env_name(backend);
		snprintf(h->err, sizeof h->err,
			 "no %s target: none requested, configured or detected (%s); set %s, e.g. %s=%s",
			 kjit_backend_name(backend), kj__daemon_detect_note(d, backend, "no device found"),
			 var, var, example[backend]);
		return KJIT_ENOTARGET;
	}
	r = kj__target_canon(backend, target, h->target, sizeof h->target, terr, sizeof terr);
	if (r < 0)
		snprintf(h->err, sizeof h->err, "target '%s' (from %s): %s", target, from, terr);
	return r;
}

/* The keys of the AMD targets with fewer features set that may serve a
 * miss for h->target (clang's isCompatibleTargetID, never the reverse):
 * one feature dropped, then both, the most specific first. */
static void compatible_keys(struct kj__offhash *h)
{
	static const int drops[][2] = { { 0, 1 }, { 1, 0 }, { 1, 1 } };
	struct kj__amd_target want, t;
	char err[128];

	if (h->ki.backend != KJIT_BACKEND_HIP || kj__amd_target_parse(h->target, &want, err, sizeof err) < 0)
		return;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(drops) && h->n_alt < KJ_OFFHASH_ALT_MAX; i++) {
		t = want;
		if (drops[i][0])
			t.xnack = KJ_FEAT_ANY;
		if (drops[i][1])
			t.sramecc = KJ_FEAT_ANY;
		char *name = h->alt_target[h->n_alt];
		if ((t.xnack == want.xnack && t.sramecc == want.sramecc) || !kj__amd_target_compatible(&t, &want) ||
		    kj__amd_target_format(&t, name, KJ_TARGET_MAX) < 0)
			continue;
		struct kj__key_input alt = h->ki;
		alt.target = name;
		if (kj__cache_key(&alt, h->alt_key[h->n_alt]) == 0)
			h->n_alt++;
	}
}

/* The include scan's kept (on the loop only): a header of <kernels>/include
 * from the kept texts while a stat proves it current and the bytes to hash
 * stay within KJ_RESOLVE_INLINE_BYTES; 1, else 0 (a thread reads it). */
static int kept_header(void *arg, const char *real, uint8_t **data, size_t *len, struct stat *st,
		       struct timespec *read_at)
{
	struct kj__offhash *h = arg;

	if (kj__hdrkeep_find(h->d->miss->hdrs, real, h->inline_left, data, len, st, read_at) != 1)
		return 0;
	h->inline_left -= *len;
	return 1;
}

/* The include scan's seen: each header of <kernels>/include, recorded in
 * h->reads (its own: any thread).  Without memory it is not: the memo
 * reads that header again, and done does not keep it. */
static void seen_header(void *arg, const char *name, const char *real, const uint8_t *data, size_t len,
			const struct stat *st, const struct timespec *read_at, int kept)
{
	struct kj__offhash *h = arg;
	struct kj__hdr_reads *rs = &h->reads;

	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 8;
		struct kj__hdr_read *v = realloc(rs->v, cap * sizeof *v);
		if (v == NULL)
			return;
		rs->v = v;
		rs->cap = cap;
	}
	struct kj__hdr_read *r = &rs->v[rs->n];
	*r = (struct kj__hdr_read){ kj__strdup(name), kj__strdup(real), data, len, *st, *read_at, kept };
	if (r->name == NULL || r->real == NULL) {
		free(r->name);
		free(r->real);
		return;
	}
	rs->n++;
}

static void reads_free(struct kj__hdr_reads *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->v[i].name);
		free(rs->v[i].real);
	}
	free(rs->v);
	memset(rs, 0, sizeof *rs);
}

/* On a thread: includes, key, legacy and compatible keys, the memo's files,
 * the hit table's fingerprint. */
static void on_work(struct kj__offwork *w)
{
	struct kj__offhash *h = (struct kj__offhash *)((char *)w - offsetof(struct kj__offhash, work));
	const struct kj__get_req *q = h->q;
	const char *dir = h->incdir;
	/* the options carry -D/-U (computed includes) and pre-included headers */
	struct kj__inc_keep keep = { h->here ? kept_header : NULL, seen_header, h };
	struct kj__include_tree opts = { .options = (const char *const *)q->options, .n_options = q->n_options,
					 .keep = &keep };
	if (h->here) /* on the loop: no header read from disk (a kept text may do), few names looked up */
		opts.probes_max = KJ_RESOLVE_INLINE_PROBES;
	int r = kj__includes_resolve_tree(q->source_name, q->source, q->source_len, (const char *const *)q->hnames,
					  (const uint8_t *const *)q->hdata, q->hlen, q->n_headers, &dir, 1, &opts,
					  &h->inc, h->err, sizeof h->err);

	if (opts.over) { /* too much for the loop: a thread does it all again */
		h->over = 1;
		h->err[0] = '\0';
		kj__includes_free(&h->inc);
		reads_free(&h->reads);
		return;
	}
	if (r < 0) { /* the scan freed its result, which the reads point into */
		reads_free(&h->reads);
		goto out;
	}
	/* whatever the scan admits, a /proc or /dev path never reaches a compiler
	 * (one that blocks reading /proc/self/fd/2 holds its worker) */
	for (size_t i = 0; r == 0 && i < h->inc.n + h->inc.n_missing; i++) {
		const char *name = i < h->inc.n ? h->inc.names[i] : h->inc.missing[i - h->inc.n];
		if (kj__proc_dev_path(name)) {
			snprintf(h->err, sizeof h->err, "#include %.200s refused: /proc and /dev paths never reach a compiler",
				 name);
			r = KJIT_EDENIED;
		}
	}
	if (r < 0)
		goto out;
	h->ki = (struct kj__key_input){
		.backend = q->backend,
		.compiler = h->compiler,
		.target = h->target,
		.version = h->version,
		.options = (const char *const *)q->options,
		.n_options = q->n_options,
		.entries = (const char *const *)q->entries,
		.n_entries = q->n_entries,
		.source = q->source,
		.source_len = q->source_len,
		.header_names = (const char *const *)h->inc.names,
		.header_data = (const uint8_t *const *)h->inc.data,
		.header_len = h->inc.len,
		.n_headers = h->inc.n,
		.missing = (const char *const *)h->inc.missing,
		.n_missing = h->inc.n_missing,
	};
	r = kj__cache_key(&h->ki, h->key);
	if (r < 0)
		goto out;
	/* The legacy key is a second pass over the source: only when the index
	 * may hold an object stored under one (read on the loop at start). */
	if (!h->want_legacy || kj__cache_key_legacy(&h->ki, h->legacy) < 0)
		h->legacy[0] = '\0';
	/* An explicit target asks for exactly that build; one from the
	 * environment, configuration or detection may be served by a
	 * compatible object (get.c). */
	if (q->target == NULL || q->target_from != NULL)
		compatible_keys(h);
	if (h->raw && !kj__get_req_wants_lowered(q))
		kj__memo_gather(h->raw, h->raw_len, q, &h->inc, h->incdir, &h->reads, &h->memo);
	if (h->has_fp) /* asked for on the loop: the hit table is there */
		h->has_fp = kj__sha256(h->raw, h->raw_len, h->fp) == 0;
	if (q->explain) /* made before the loop knows whether it is a hit: a hit frees it */
		h->explain = kj__explain_run(h->ex, h->key, &h->ki);
out:
	h->code = r;
}

static const struct kj__offwork_ops resolve_ops;

/* On the loop: the run ended (or never ran: kjitd is stopping).  A run
 * on the loop whose include scan outgrew its budget goes to a thread. */
static int on_done(struct kj__offwork *w, int code)
{
	struct kj__offhash *h = (struct kj__offhash *)((char *)w - offsetof(struct kj__offhash, work));
	struct kj__daemon *d = h->d;

	if (code == 0 && h->over) {
		h->here = h->over = 0;
		h->work = (struct kj__offwork){ .ops = &resolve_ops, .uid = h->uid };
		kj__offwork_submit(d->work, KJ_OFFQ_RESOLVE, &h->work, KJ_OFFWORK_POOL);
		return 0;
	}
	d->stats[h->here ? KJ_STAT_RESOLVED_INLINE : KJ_STAT_RESOLVED_POOL]++;
	d->stats[KJ_STAT_LEGACY_KEYS] += code == 0 && h->code == 0 && h->legacy[0] != '\0';
	if (code < 0 || d->stopping)
		h->code = KJIT_ESHUTDOWN;
	for (size_t i = 0; h->code == 0 && i < h->reads.n; i++) { /* the texts read, for the next resolve here */
		const struct kj__hdr_read *r = &h->reads.v[i];
		if (!r->kept)
			kj__hdrkeep_put(d->miss->hdrs, r->real, r->data, r->len, &r->st, &r->read_at);
	}
	h->done(h);
	return 0;
}

static const struct kj__offwork_ops resolve_ops = { NULL, on_work, on_done };

/* 1 if h is cheaper resolved here, on the loop, than handed to a thread
 * and back (issue 35: the hop costs 0.2 to 14 ms on a loaded machine, the
 * SHA-256 of 16 KiB about 45 us on one without SHA instructions): few
 * bytes to hash and no --explain (it reads the caller's entries).  The
 * include scan is bounded in on_work: a header to read from <kernels>/include
 * (a disk may be slow: offhash.sh) or more than KJ_RESOLVE_INLINE_PROBES
 * names looked up there send it to a thread, from the start. */
static int small(struct kj__offhash *h)
{
	const struct kj__get_req *q = h->q;
	uint64_t n = (uint64_t)q->source_len + (h->has_fp ? h->raw_len : 0);

	for (size_t i = 0; i < q->n_headers; i++)
		n += q->hlen[i];
	h->inline_left = n <= KJ_RESOLVE_INLINE_BYTES ? KJ_RESOLVE_INLINE_BYTES - (size_t)n : 0;
	return !q->explain && n <= KJ_RESOLVE_INLINE_BYTES;
}

int kj__offhash_start(struct kj__offhash *h)
{
	struct kj__daemon *d = h->d;
	const struct kj__get_req *q = h->q;
	unsigned cap = d->cfg.resolve_max_per_uid, n;
	int r;

	h->err[0] = '\0';
	if (cap == 0) /* not given */
		cap = KJ_RESOLVE_PER_UID_MAX;
	else if (cap == UINT_MAX) /* given as 0 */
		cap = 0;
	if (d->stopping)
		return KJIT_ESHUTDOWN;
	if ((r = resolve_target(h)) < 0)
		return r;
	if (cap && (n = kj__offwork_count(d->work, KJ_OFFQ_RESOLVE, h->uid)) >= cap) {
		snprintf(h->err, sizeof h->err,
			 "kjitd is busy: uid %u has %u requests being resolved, the limit per user (--max-resolves-per-uid); "
			 "retry once some are answered", (unsigned)h->uid, n);
		return KJIT_EBUSY;
	}
	snprintf(h->version, sizeof h->version, "%s", q->version ? q->version : kj__pool_runtime_version(h->pool));
	snprintf(h->compiler, sizeof h->compiler, "%s", kj__pool_identity(h->pool));
	if ((h->incdir = kj__asprintf("%s/include", d->cfg.kernels_dir)) == NULL)
		return KJIT_ENOMEM;
	if (!kj__cache_key_entries_in(q->backend) && q->n_entries &&
	    (h->want = kj__entries_join(q->entries, q->n_entries)) == NULL)
		return KJIT_ENOMEM;
	h->want_legacy = h->want != NULL && kj__cache_may_hold_legacy(d->cache);
	h->has_fp = h->raw != NULL && kj__hits_on(d);
	h->hits_gen = kj__hits_gen(d); /* before the thread reads any file */
	h->work = (struct kj__offwork){ .ops = &resolve_ops, .uid = h->uid };
	h->here = small(h);
	h->over = 0;
	kj__offwork_submit(d->work, KJ_OFFQ_RESOLVE, &h->work, h->here ? KJ_OFFWORK_HERE : KJ_OFFWORK_POOL);
	return 0;
}

void kj__offhash_clear(struct kj__offhash *h)
{
	kj__includes_free(&h->inc);
	kj__memo_files_free(&h->memo);
	reads_free(&h->reads);
	free(h->incdir);
	free(h->want);
	free(h->explain);
	kj__explain_free(h->ex);
	h->incdir = NULL;
	h->want = NULL;
	h->explain = NULL;
	h->ex = NULL;
}
