/* get.c: answering GET, kjitd's one hot request.
 *
 * The hit path first: a request whose exact bytes were resolved before
 * (the memo) is answered from the cache before its body is even decoded.
 * Otherwise the request is parsed and checked (request.c), its bundled
 * kernel (if named) read, and once its compiler's pool knows its identity
 * the request is resolved to a key on a thread of libuv's pool (offhash.c:
 * target from the request, else the daemon's --*-arch, else detection;
 * includes; hash), answered back on the loop (get_answer).  A cached
 * object is answered at once (answer_hit, the hot set first; every reply
 * is written by reply.c).  A miss is handed, with what it resolved to, to
 * the miss's machine (kj__miss_open_or_join, miss.c): it joins the
 * flight for its key if one is open (one compile per key, the others
 * answered "joined" with the same bytes) or opens one; from there the
 * flight module answers it, publishes the object and offers it to the
 * fleet.  get.c never sees a flight's fields.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler.h"
#include "daemon.h"
#include "kj_types.h"
#include "lowered.h"
#include "missroom-int.h"
#include "offhash.h"
#include "sha.h"
#include "targetid.h"
#include "util.h"

/* A request being resolved (it may wait for its pool to say hello, then
 * for its key on a thread: offhash.c). */
struct get_req {
	struct kj__daemon *d;
	struct kj__conn *c;          /* referenced */
	uint32_t id;
	uint64_t t0;
	uint8_t *raw;                /* the request's bytes, for the memo */
	size_t raw_len;
	uint64_t charged;            /* request bytes charged to the peer's uid (quota.c) */
	struct kj__get_req q;
	struct kj__pool *pool;       /* the pool that compiles it (pool_for) */
	struct kj__offhash h;        /* its key and what made it (offhash.c) */
};

static void get_req_free(struct get_req *g)
{
	if (g == NULL)
		return;
	kj__offhash_clear(&g->h);
	kj__get_req_clear(&g->q);
	free(g->raw);
	if (g->c) {
		kj__quota_release(g->d, kj__conn_uid(g->c), g->charged);
		kj__conn_unref(g->c);
	}
	free(g);
}

/* Answers a hit for key if its object is cached: from the hot set without
 * a copy, else read and verified from its file; with lowered, the lowered
 * names the index keeps go with it (--name-expression), and a hit whose
 * names cannot be read is not answered: the compile gives them again; with
 * lowered & 2 (KJ_F_WANT_LOG), the compile's log goes with it too.  The
 * hit table gets the object under the GET's bytes body, or their digest fp
 * when the caller has it (NULL: body's is computed), the latter only if
 * the table's generation is still gen, the one its key was resolved
 * under.  want
 * (NULL: none): the entry points asked for, checked against the object's
 * list (reply.c); a missing one is answered with its error instead.  1 if
 * answered with the object (or the client is gone), 2 if with an entry
 * error, 0 if not cached (nothing sent). */
static int answer_hit(struct kj__daemon *d, struct kj__conn *c, uint32_t id, uint64_t t0, const char *key,
		      const char *target, const char *version, const uint8_t *body, size_t body_len,
		      const uint8_t *fp, uint64_t gen, int lowered, const char *want)
{
	struct kj__obj_reply o = { key, target, version, NULL, NULL, NULL };
	char *names = NULL, *log = NULL, *list = NULL, err[1024];
	const uint8_t *hot, *obj;
	uint8_t *data = NULL;
	size_t len = 0;
	uint32_t saved = 0;
	struct kj__cache_entry e;
	int r;

	/* body: the GET's bytes, published in the shared hit table with the
	 * object; never with lowered names or a log, which the table does not
	 * hold: a KJ_F_WANT_LOG request goes in only when its entry has
	 * neither, so the table's answer to it is whole. */
	if (lowered) {
		if (kj__lowered_of(d, key, &names, &log) < 0)
			return 0;
		if (!(lowered & 2) || names || log) {
			body = NULL;
			fp = NULL;
		}
	}
	o.lowered = names;
	o.log = lowered & 2 ? log : NULL; /* KJ_F_WANT_LOG */
	if (kj__cache_peek(d->cache, key, &hot, &len, &saved) == 0) {
		obj = hot;
	} else if ((r = kj__cache_lookup(d->cache, key, &data, &len, &e)) == 0) {
		obj = data;
		saved = (uint32_t)e.compile_ms;
	} else {
		if (r == KJIT_ECORRUPT)
			kj__hits_remove_key(d, key);
		free(names);
		free(log);
		return 0;
	}
	if (want && (r = kj__object_entries(d, key, obj, len, &list)) == 0 &&
	    (r = kj__entries_missing(list, want, "the cached object", err, sizeof err)) < 0) {
		kj__count_error(d, r);
		kj__send_failure(c, id, r, err, NULL);
		r = 2;
		goto out;
	}
	d->stats[KJ_STAT_SAVED_MS] += saved;
	kj__send_object(d, c, id, KJIT_STATUS_HIT, &o, obj, len);
	if (fp) /* its entries were checked */
		kj__hits_put_fp(d, kj__conn_uid(c), fp, gen, key, target, version, obj, len);
	else
		kj__hits_put(d, kj__conn_uid(c), body, body_len, key, target, version, obj, len);
	d->stats[KJ_STAT_HITS]++;
	kj__record_latency(d, t0);
	r = 1;
out:
	free(data);
	free(list);
	free(log);
	free(names);
	return r;
}

/* A miss for an AMD target with features set (gfx90a:xnack+) that describes
 * the process's mode (not an explicit request for that build) may be served
 * by an object built for a compatible target with fewer features set
 * (gfx90a:xnack+ is served by gfx90a): their keys were computed with the
 * request's (offhash.c).  The index in h's alternatives of the first
 * cached, most specific first; -1 if none. */
static int compatible_object(struct kj__daemon *d, const struct kj__offhash *h)
{
	for (size_t i = 0; i < h->n_alt; i++)
		if (kj__cache_peek_exists(d->cache, h->alt_key[i]))
			return (int)i;
	return -1;
}

/* ---- resolving a request to its key ---- */

/* A hit of rs's key, else (a request with entries to check) of its legacy
 * key (cache/key.c: an object cached before entries left the key); a hit
 * whose entries were checked is remembered in the memo under the key that
 * answered.  Keys, digests and the memo's files were computed off the loop
 * (offhash.c).  1 if answered (object or entry error), else 0. */
static int answer_resolved(struct get_req *g, struct kj__offhash *rs, int lowered)
{
	struct kj__daemon *d = g->d;
	const uint8_t *fp = rs->has_fp ? rs->fp : NULL;
	int a = answer_hit(d, g->c, g->id, g->t0, rs->key, rs->target, rs->version, NULL, 0, fp, rs->hits_gen, lowered, rs->want);
	const char *key = rs->key;

	if (a == 0 && rs->want && rs->legacy[0] &&
	    (a = answer_hit(d, g->c, g->id, g->t0, rs->legacy, rs->target, rs->version, NULL, 0, fp, rs->hits_gen, lowered,
			    rs->want)) != 0)
		key = rs->legacy;
	if (a == 1 && rs->want)
		kj__memo_enter(d->miss->memo, g->raw, g->raw_len, &rs->memo, g->q.backend, key, rs->target, rs->version);
	return a != 0;
}

/* ---- a miss: one compile per key ---- */

/* Joins the open flight for rs->key, or opens one (miss.c: its recipe,
 * the fleet tier when --remote, then the compile), with the GET body's
 * fingerprint for the hit table unless lowered names must go with the
 * object (the table holds none).  0 (g's client will be answered when the
 * flight ends) or a code, reason in err. */
static int join_or_open_flight(struct get_req *g, struct kj__offhash *rs, char *err, size_t errlen)
{
	/* the GET body's digest was taken off the loop (offhash.c) */
	int has_fp = g->raw && !kj__get_req_wants_lowered(&g->q) && rs->has_fp;
	struct kj__miss m = {
		.c = g->c, .id = g->id, .t0 = g->t0, .q = &g->q, .pool = g->pool,
		.key = rs->key, .target = rs->target, .version = rs->version,
		.inc = &rs->inc, .explain = rs->explain, .fp = has_fp ? rs->fp : NULL, .hits_gen = rs->hits_gen,
		.want = rs->want,
	};
	int r = kj__miss_open_or_join(g->d, &m, err, errlen);

	rs->want = m.want; /* NULL once the flight took it */
	rs->explain = m.explain;
	return r;
}

static void refuse(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int code, const char *err)
{
	const char *why = err[0] ? err : kjit_strerror(code);

	kj__count_error(d, code);
	kj__log(d, "refused a get from uid %u pid %d: %s", (unsigned)kj__conn_uid(c), (int)kj__conn_pid(c), why);
	kj__conn_error(c, id, code, "%s", why);
}

/* On the loop, once g's key is resolved (offhash.c): a hit, a compatible
 * object, a recent failure, else the flight of its key. */
static void get_answer(struct kj__offhash *rs)
{
	struct get_req *g = rs->arg;
	struct kj__daemon *d = g->d;
	char err[1024] = "";
	int r = rs->code, a;

	if (r < 0) {
		snprintf(err, sizeof err, "%s", rs->err);
		goto fail;
	}
	if (!kj__conn_alive(g->c))
		goto out; /* its client left meanwhile: nothing to answer, no compile for no one */
	/* remembered unless lowered names must go with every answer (a memo hit
	 * carries none) or entries are to be checked (answer_resolved, once a
	 * hit did: a memo answer never needs a check) */
	if (rs->want == NULL)
		kj__memo_enter(d->miss->memo, g->raw, g->raw_len, &rs->memo, g->q.backend, rs->key, rs->target, rs->version);
	int lowered = kj__get_req_wants_lowered(&g->q) | (g->q.want_log ? 2 : 0);
	if (answer_resolved(g, rs, lowered))
		goto out;
	if ((a = compatible_object(d, rs)) >= 0 &&
	    answer_hit(d, g->c, g->id, g->t0, rs->alt_key[a], rs->alt_target[a], rs->version, NULL, 0, NULL, rs->hits_gen, lowered,
		       rs->want))
		goto out;
	/* A compile of these exact bytes failed moments ago (negcache.c). */
	int ncode;
	const char *nline, *nlog;
	if (kj__negcache_get(d->miss->negcache, rs->key, &ncode, &nline, &nlog)) {
		kj__count_error(d, ncode);
		kj__send_failure(g->c, g->id, ncode, nline, nlog);
		goto out;
	}
	d->stats[KJ_STAT_MISSES]++;
	r = join_or_open_flight(g, rs, err, sizeof err); /* --explain's text goes with the object */
	if (r == 0)
		goto out;
fail:
	refuse(d, g->c, g->id, r, err);
out:
	get_req_free(g);
}

/* Runs once g's pool knows its compiler (code < 0: it failed to load):
 * hands g to a thread to resolve its key (offhash.c). */
static void get_resolved(void *arg, int code, const char *error)
{
	struct get_req *g = arg;
	int r = code;

	if (r < 0) {
		refuse(g->d, g->c, g->id, r, error ? error : kjit_strerror(r));
		get_req_free(g);
		return;
	}
	g->h.d = g->d;
	g->h.q = &g->q;
	g->h.raw = g->raw;
	g->h.raw_len = g->raw_len;
	g->h.uid = kj__conn_uid(g->c);
	g->h.pool = g->pool;
	/* --explain: the entries this uid may see, compared on the thread */
	if (g->q.explain)
		g->h.ex = kj__explain_begin(g->d, g->q.backend, g->q.source_name, g->h.uid, kj__peer_is_admin(g->d, g->c));
	g->h.done = get_answer;
	g->h.arg = g;
	r = kj__offhash_start(&g->h);
	if (r < 0) {
		refuse(g->d, g->c, g->id, r, g->h.err);
		get_req_free(g);
	}
}

/* The backend's family: the one kjitd was told (--hip-compiler,
 * --cuda-compiler), else the compilers' default (compilers/compiler.c). */
static const char *family_for(struct kj__daemon *d, int backend)
{
	const char *told = backend == KJIT_BACKEND_HIP ? d->cfg.hip_compiler
			   : backend == KJIT_BACKEND_CUDA ? d->cfg.cuda_compiler : NULL;
	const char *def = kj__family_default(backend);

	return told ? told : def ? def : "";
}

/* The pool of g's compiler: the backend's configured family, or the one
 * the request chose (--compiler), each started on first use.  A backend has
 * one other family (hiprtc/hipcc, nvrtc/nvcc), so one alternative pool
 * each; a third (a test configuration) is refused.  0 or a negative code,
 * reason in err. */
static int pool_for(struct kj__daemon *d, struct get_req *g, char *err, size_t errlen)
{
	const char *def = family_for(d, g->q.backend);
	const char *want = g->q.family ? g->q.family : def;
	int alt = strcmp(want, def) != 0;
	struct kj__pool **slot = alt ? &d->miss->alt_pools[g->q.backend] : &d->miss->pools[g->q.backend];
	int r = 0;

	if (*slot == NULL)
		r = kj__pool_new(d, want, slot);
	else if (strcmp(kj__pool_family(*slot), want) != 0) {
		snprintf(err, errlen, "compiler '%s' is not available: this kjitd runs %s and %s for %s", want, def,
			 kj__pool_family(*slot), kjit_backend_name(g->q.backend));
		return KJIT_EBACKEND;
	}
	g->pool = *slot;
	return r;
}

static void prestarted(void *arg, int code, const char *error)
{
	if (code < 0)
		kj__log(arg, "--prestart: %s", error ? error : kjit_strerror(code));
}

void kj__pool_prestart(struct kj__daemon *d)
{
	const char *s = d->cfg.prestart ? d->cfg.prestart : getenv("KJITD_PRESTART");
	char name[64];

	while (s && *s) {
		size_t l = strcspn(s, ",");
		int b = 0;
		snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), s);
		s += l + (s[l] == ',');
		while (b < 4 && kj__family_choose(name, b, 1) == NULL)
			b++;
		struct kj__pool **slot = b == 4 ? NULL : strcmp(family_for(d, b), name) == 0 ? &d->miss->pools[b] : &d->miss->alt_pools[b];
		if (slot == NULL || (*slot && strcmp(kj__pool_family(*slot), name) != 0)) {
			kj__log(d, "--prestart: no compiler family '%s' to start here", name);
			continue;
		}
		if (*slot == NULL && kj__pool_new(d, name, slot) < 0)
			return;
		kj__pool_when_ready(*slot, prestarted, d);
	}
}

/* The hit path: these exact bytes were resolved before, and the object is
 * in the cache.  1 if answered. */
static int answer_from_memo(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const uint8_t *body,
			    size_t len, uint64_t t0)
{
	struct kj__memo_hit mh;

	if (!kj__memo_find(d->miss->memo, body, len, &mh))
		return 0;
	/* never kept with lowered names; never kept for a request with entries to check until they were */
	return answer_hit(d, c, id, t0, mh.key, mh.target, mh.version, body, len, NULL, kj__hits_gen(d), 0, NULL) != 0;
}

int kj__handle_get(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const uint8_t *body, size_t len)
{
	uint64_t t0 = kj__now_us();
	struct kj__msg m;
	struct get_req *g;
	char err[512] = "";
	int r;

	if (answer_from_memo(d, c, id, body, len, t0))
		return 0;
	/* Until it is resolved, a request holds its bytes twice (the copy for
	 * the memo, the parsed fields): charged to the peer's uid. */
	r = kj__quota_charge(d, kj__conn_uid(c), (uint64_t)len * KJ_REQ_COPIES, err, sizeof err);
	if (r < 0) {
		kj__count_error(d, r);
		kj__conn_error(c, id, r, "%s", err);
		return 0;
	}
	r = kj__msg_decode(body, len, &m);
	if (r < 0) {
		kj__quota_release(d, kj__conn_uid(c), (uint64_t)len * KJ_REQ_COPIES);
		return r;
	}
	g = calloc(1, sizeof *g);
	if (g == NULL) {
		kj__msg_free(&m);
		kj__quota_release(d, kj__conn_uid(c), (uint64_t)len * KJ_REQ_COPIES);
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		return 0;
	}
	kj__conn_ref(c);
	g->charged = (uint64_t)len * KJ_REQ_COPIES;
	g->d = d;
	g->c = c;
	g->id = id;
	g->t0 = t0;
	if (len > 0 && (g->raw = malloc(len)) != NULL) {
		memcpy(g->raw, body, len);
		g->raw_len = len;
	}
	r = kj__get_req_parse(&g->q, &m, err, sizeof err);
	kj__msg_free(&m);
	if (r == 0 && g->q.kernel)
		r = kj__get_req_load_kernel(&g->q, &d->miss->manifest, d->cfg.kernels_dir, err, sizeof err);
	if (r == 0)
		r = pool_for(d, g, err, sizeof err);
	if (r < 0) {
		refuse(d, c, id, r, err);
		get_req_free(g);
		return 0;
	}
	kj__pool_when_ready(g->pool, get_resolved, g);
	return 0;
}
