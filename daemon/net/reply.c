/* reply.c: the replies to GET, for get.c (hits, refusals) and the
 * miss (compiles, joins, remote hits; miss.c): an object with what goes with it (key, target,
 * version, the compile log, the lowered names of C++ name expressions),
 * or a failure with its one line and log; and the counters replies move.
 *
 * The lowered names (common/lowered.h) travel in their own field,
 * KJ_F_LOWERED, whatever answered: a compile carries the worker's, a hit
 * the index's column (kj__lowered_of), a remote hit those of the fleet
 * value.  Only requests that named expressions get them (get.c asks).
 *
 * Entry points (hip and cuda: not in the key, cache/key.c): every answer
 * checks the entries its request asked for against the object's list, the
 * index's entries column (schema 5), filled from the object's symbols
 * (compilers/symbols.c) when the object is published, and for a row of an
 * older index the first time a request with entries is answered from it.
 * A request for an entry the object lacks gets KJIT_ECOMPILE and one line
 * naming it and the entries there are; the object stays cached (it is the
 * module's, right for its other entries).  An object whose symbols cannot
 * be listed is not judged (as the worker's check never judged it).
 * No state of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"

#include "daemon.h"
#include "kj_types.h"
#include "util.h"

void kj__count_error(struct kj__daemon *d, int code)
{
	switch (code) {
	case KJIT_ECOMPILE: d->stats[KJ_STAT_ERR_COMPILE]++; break;
	case KJIT_ETARGET:
	case KJIT_ENOTARGET: d->stats[KJ_STAT_ERR_TARGET]++; break;
	case KJIT_EWORKER: d->stats[KJ_STAT_ERR_WORKER]++; break;
	case KJIT_ETIMEDOUT: d->stats[KJ_STAT_ERR_TIMEOUT]++; break;
	case KJIT_EINVAL:
	case KJIT_EINCLUDE:
	case KJIT_ETOOBIG:
	case KJIT_ENOKERNEL:
	case KJIT_EPROTO: d->stats[KJ_STAT_ERR_INPUT]++; break;
	default: d->stats[KJ_STAT_ERR_OTHER]++; break;
	}
}

void kj__send_object(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int status,
		     const struct kj__obj_reply *o, const uint8_t *data, size_t len)
{
	struct kj__buf b = { 0 };

	if (!kj__conn_alive(c))
		return;
	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, 0) < 0 ||
	    kj__msg_put_u32(&b, KJ_F_STATUS, (uint32_t)status) < 0 || kj__msg_put_str(&b, KJ_F_KEY, o->key) < 0 ||
	    kj__msg_put_str(&b, KJ_F_TARGET, o->target) < 0 || kj__msg_put_str(&b, KJ_F_VERSION, o->version) < 0 ||
	    (o->log && *o->log && kj__msg_put_str(&b, KJ_F_LOG, o->log) < 0) ||
	    (o->lowered && *o->lowered && kj__msg_put_str(&b, KJ_F_LOWERED, o->lowered) < 0) ||
	    (o->explain && *o->explain && kj__msg_put_str(&b, KJ_F_EXPLAIN, o->explain) < 0) ||
	    kj__msg_put_ext(&b, KJ_F_DATA, len) < 0 || kj__msg_end_ext(&b, len) < 0) {
		kj__buf_free(&b);
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		return;
	}
	d->stats[KJ_STAT_BYTES_SERVED] += len;
	kj__conn_send_ext(c, &b, data, len, o->key); /* queued replies of a key share one copy */
}

void kj__send_failure(struct kj__conn *c, uint32_t id, int code, const char *error, const char *log)
{
	struct kj__buf b = { 0 };

	if (!kj__conn_alive(c))
		return;
	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, code) < 0 ||
	    kj__msg_put_str(&b, KJ_F_ERROR, error) < 0 || (log && kj__msg_put_str(&b, KJ_F_LOG, log) < 0)) {
		kj__buf_free(&b);
		kj__conn_error(c, id, code, "%s", error);
		return;
	}
	kj__conn_send(c, &b);
}

void kj__record_latency(struct kj__daemon *d, uint64_t t0)
{
	uint64_t us = kj__now_us() - t0;
	unsigned i = 0;

	while (i + 1 < KJ_LAT_BUCKETS && us >= (1ull << i))
		i++;
	d->lat_hist[i]++;
}

int kj__lowered_of(struct kj__daemon *d, const char *key, char **out, char **log)
{
	struct kj__cache_entry e;
	int r;

	*out = *log = NULL;
	if ((r = kj__cache_get(d->cache, key, &e)) < 0)
		return r;
	if (e.lowered && *e.lowered && (*out = kj__strdup(e.lowered)) == NULL)
		r = KJIT_ENOMEM;
	if (r == 0 && e.log && *e.log && (*log = kj__strdup(e.log)) == NULL) {
		free(*out);
		*out = NULL;
		r = KJIT_ENOMEM;
	}
	kj__cache_entry_free(&e);
	return r;
}

int kj__object_entries(struct kj__daemon *d, const char *key, const uint8_t *data, size_t len, char **list)
{
	int r = kj__cache_entries(d->cache, key, list);

	if (r < 0 && r != KJIT_ENOENT)
		return r;
	if (*list || data == NULL)
		return 0;
	r = kj__entries_list(data, len, list); /* a row of an older index: once */
	if (r < 0)
		return r;
	if (*list && kj__cache_set_entries(d->cache, key, *list) < 0)
		kj__log(d, "could not record the entry points of %s", key);
	return 0;
}
