/* procmemo.c: the per-process memo of libkjit: what a client handle was
 * answered, remembered by the fingerprint of the exact GET body it sent,
 * so that asking again for the same bytes costs a hash and a copy, no
 * socket and no table (issue 13, docs/hitpath.md).
 *
 * The fingerprint is the SHA-256 of the GET body (the bytes after the
 * frame header, which alone holds the request id): the same value the
 * daemon's shared hit table is indexed by, so one hash serves both.  Only
 * successful answers are kept (hit, compiled, joined), with their lowered
 * names (--name-expression: the same body asks for the same names), each
 * with the generation of the shared table when one is mapped (0
 * otherwise): an entry of another generation is dropped, so an
 * invalidation by the daemon (an include file or a compiler changed)
 * reaches the memo too.  Bounded by
 * KJ_PROCESS_MEMO_BYTES, least recently used out first; one object takes at
 * most 1/KJ_PROCESS_MEMO_SHARE of it.  KJIT_PROCESS_MEMO=0 turns it off.
 * Indexed by common/htab.h (hashed by the fingerprint), ordered by
 * common/ilist.h.  Owned by one kjit_client and used by one thread at a time, like it.
 */
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "htab.h"
#include "ilist.h"
#include "procmemo.h"
#include "util.h"

struct pm_ent {
	uint8_t fp[KJ_SHA256_LEN];
	uint64_t gen;
	uint64_t serial; /* this entry's number: m->serials when it was entered (its id {1, serial}) */
	uint8_t *data;
	size_t size;
	uint8_t *base; /* what to free: data, or the reply frame data points into (kj__procmemo_adopt) */
	char key[65];
	char *target, *version;
	char **lowered; /* the result's lowered_names (--name-expression), kept with it */
	size_t n_lowered;
	size_t cost;
	struct kj__hnode hn;  /* in m->tab, hashed by fp */
	struct kj__ilink lru; /* in m->lru */
};

struct kj__procmemo {
	struct kj__htab tab;
	struct kj__ilist lru; /* most recently used first */
	size_t bytes, max_bytes;
	uint64_t serials; /* entries ever entered: the last one's number (struct kj__sink's ids) */
};

int kj__procmemo_new(struct kj__procmemo **out, size_t max_bytes)
{
	*out = NULL;
	if (max_bytes == 0)
		return 0;
	struct kj__procmemo *m = calloc(1, sizeof *m);
	if (m == NULL)
		return KJIT_ENOMEM;
	m->max_bytes = max_bytes;
	kj__htab_init(&m->tab, NULL, NULL);
	*out = m;
	return 0;
}

int kj__procmemo_enabled_by_env(void)
{
	const char *v = getenv("KJIT_PROCESS_MEMO");
	return v == NULL || strcmp(v, "0") != 0;
}

/* Copies n lowered names (entries may be NULL) into *out.  0 or KJIT_ENOMEM
 * with *out NULL. */
static int copy_lowered(char *const *in, size_t n, char ***out)
{
	*out = NULL;
	if (n == 0)
		return 0;
	char **v = calloc(n, sizeof *v);
	if (v == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (in[i] != NULL && (v[i] = kj__strdup(in[i])) == NULL) {
			while (i > 0)
				free(v[--i]);
			free(v);
			return KJIT_ENOMEM;
		}
	}
	*out = v;
	return 0;
}

static void ent_free(struct pm_ent *e)
{
	for (size_t i = 0; e->lowered && i < e->n_lowered; i++)
		free(e->lowered[i]);
	free(e->lowered);
	free(e->base);
	free(e->target);
	free(e->version);
	free(e);
}

static void drop(struct kj__procmemo *m, struct pm_ent *e)
{
	kj__htab_remove(&m->tab, &e->hn);
	kj__ilist_unlink(&m->lru, &e->lru);
	m->bytes -= e->cost;
	ent_free(e);
}

void kj__procmemo_clear(struct kj__procmemo *m)
{
	while (m && m->lru.head)
		drop(m, KJ_CONTAINER_OF(m->lru.head, struct pm_ent, lru));
}

void kj__procmemo_free(struct kj__procmemo *m)
{
	if (m == NULL)
		return;
	kj__procmemo_clear(m);
	kj__htab_fini(&m->tab);
	free(m);
}

static struct pm_ent *find(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN])
{
	uint64_t h = kj__htab_hash_sha(fp);

	for (struct kj__hnode *x = kj__htab_first(&m->tab, h); x; x = kj__htab_next(x, h)) {
		struct pm_ent *e = KJ_CONTAINER_OF(x, struct pm_ent, hn);
		if (memcmp(e->fp, fp, KJ_SHA256_LEN) == 0)
			return e;
	}
	return NULL;
}

int kj__procmemo_get(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen, kjit_result *res)
{
	return kj__procmemo_get_into(m, fp, gen, res, NULL);
}

int kj__procmemo_get_into(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen, kjit_result *res,
			  const struct kj__sink *sink)
{
	if (m == NULL)
		return 0;
	struct pm_ent *e = find(m, fp);
	if (e == NULL)
		return 0;
	if (e->gen != gen) {
		drop(m, e); /* the daemon has invalidated what it answered then */
		return 0;
	}
	memset(res, 0, sizeof *res);
	/* The caller holds these very bytes already: nothing to copy. */
	uint64_t id[2] = { 1, e->serial };
	int held;
	uint8_t *to = kj__sink_take(sink, id, e->size, &held);
	if (!sink)
		res->data = to;
	if ((to == NULL && !held) || (res->target = kj__strdup(e->target)) == NULL ||
	    (res->runtime_version = kj__strdup(e->version)) == NULL ||
	    copy_lowered(e->lowered, e->n_lowered, &res->lowered_names) < 0) {
		kjit_result_free(res);
		return KJIT_ENOMEM;
	}
	res->n_lowered_names = e->n_lowered;
	if (!held)
		memcpy(to, e->data, e->size);
	kj__sink_answered(sink, id);
	res->size = e->size;
	memcpy(res->key, e->key, sizeof res->key);
	res->status = KJIT_STATUS_HIT;
	kj__ilist_to_front(&m->lru, &e->lru);
	return 1;
}

/* Enters res for fp: its object copied (buf NULL) or, from *buf (a
 * malloc'd block of buf_len bytes holding res->data), taken over. */
static int enter(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen, const kjit_result *res,
		 uint8_t **buf, size_t buf_len)
{
	if (m == NULL || res->data == NULL || res->size == 0)
		return 0;
	size_t cost = sizeof(struct pm_ent) + (buf ? buf_len : res->size) + (res->target ? strlen(res->target) : 0) +
		      (res->runtime_version ? strlen(res->runtime_version) : 0) + 2;
	for (size_t i = 0; i < res->n_lowered_names; i++)
		cost += sizeof(char *) + (res->lowered_names[i] ? strlen(res->lowered_names[i]) + 1 : 0);
	if (cost > m->max_bytes / KJ_PROCESS_MEMO_SHARE)
		return 0; /* too large to keep: the socket or the table serves it */
	if (kj__htab_reserve(&m->tab) < 0)
		return KJIT_ENOMEM;
	struct pm_ent *e = calloc(1, sizeof *e);
	if (e == NULL || (!buf && (e->base = malloc(res->size)) == NULL) ||
	    (e->target = kj__strdup(res->target ? res->target : "")) == NULL ||
	    (e->version = kj__strdup(res->runtime_version ? res->runtime_version : "")) == NULL ||
	    copy_lowered(res->lowered_names, res->n_lowered_names, &e->lowered) < 0) {
		if (e)
			ent_free(e);
		return KJIT_ENOMEM;
	}
	e->n_lowered = res->n_lowered_names;
	memcpy(e->fp, fp, KJ_SHA256_LEN);
	e->gen = gen;
	e->serial = ++m->serials;
	if (buf) {
		e->base = *buf;
		e->data = res->data;
		*buf = NULL;
	} else {
		e->data = e->base;
		memcpy(e->data, res->data, res->size);
	}
	e->size = res->size;
	memcpy(e->key, res->key, sizeof e->key);
	e->key[sizeof e->key - 1] = '\0';
	e->cost = cost;
	struct pm_ent *old = find(m, fp);
	if (old)
		drop(m, old);
	while (m->lru.tail && m->bytes + cost > m->max_bytes)
		drop(m, KJ_CONTAINER_OF(m->lru.tail, struct pm_ent, lru));
	kj__htab_insert(&m->tab, &e->hn, kj__htab_hash_sha(fp));
	kj__ilist_push_front(&m->lru, &e->lru);
	m->bytes += cost;
	return 0;
}

int kj__procmemo_put(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen,
		     const kjit_result *res)
{
	return enter(m, fp, gen, res, NULL, 0);
}

int kj__procmemo_adopt(struct kj__procmemo *m, const uint8_t fp[KJ_SHA256_LEN], uint64_t gen,
		       const kjit_result *res, uint8_t **buf, size_t buf_len)
{
	if (*buf == NULL || res->data < *buf || res->size > buf_len || (size_t)(res->data - *buf) > buf_len - res->size)
		return KJIT_EINVAL; /* not inside the block: the caller keeps it */
	return enter(m, fp, gen, res, buf, buf_len);
}

void kj__procmemo_usage(const struct kj__procmemo *m, size_t *entries, size_t *bytes)
{
	*entries = m ? m->tab.n : 0;
	*bytes = m ? m->bytes : 0;
}
