/* publish.c: the cache's part of a flight's publish (flight.c), off the
 * loop: cache/publish.c's steps, begin and finish on the loop, run (the
 * object's digest, its file: temporary, fsync, rename, the directory's
 * fsync; the recipe's file) on libuv's thread pool through offwork.c's
 * publish queue, as offloop.c does for the admin commands.  The waiters were answered before begin; from begin
 * to finish a request for the key is served from the copy begin made
 * (cache/publish.c), so nothing is recompiled and no half-written file is
 * read.  The copy is not made on the loop: the publish borrows the bytes
 * of the reply buffer its waiters' replies queued (replybuf.c, one
 * reference until the publish is freed; a new one if none is queued),
 * the run copies them for the hot set, and the recipe is taken over.
 *
 * Invariants:
 *  - The loop's tables (entry table, hot set) change only in finish, on
 *    the loop; a run touches its own pub and the file system only.
 *  - A failure (a full disk) costs the clients nothing: it is logged and
 *    counted (publish_errors; at finish by the cache itself, which counts
 *    into d->stats through its options, main.c), and the object is simply
 *    not cached.
 *  - Publishes in flight are not bounded by count but by bytes: past
 *    KJ_PUBLISH_PENDING_MAX bytes held, or with no thread to be had (a
 *    SQLite that is not thread-safe, a failed queue), a publish runs on the
 *    loop, as it always did: slower, never lost.
 *  - kjitd's loop does not end while a publish is in flight (offwork.c:
 *    work on a thread keeps it alive): a stop finishes them, and the cache is
 *    closed after (main.c).  A crash leaves at worst a temporary file or a
 *    file without a row (cache/store.c), swept later.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "missroom-int.h"

struct kj__publish {
	struct kj__offwork work;     /* in kjitd's publish queue (offwork.c) */
	struct kj__daemon *d;
	struct kj__cache_pub *p;
	struct kj__replybuf *rb;     /* the object's bytes, lent to p until it is freed; NULL: p has a copy */
	size_t len;
};

static void pub_free(struct kj__publish *t)
{
	kj__cache_pub_free(t->p);
	kj__replybuf_unref(t->rb); /* after the pub that borrowed its bytes */
	free(t);
}

void kj__publish_when_idle(struct kj__daemon *d, void (*fn)(void *arg), void *arg)
{
	kj__offwork_when_idle(d->work, KJ_OFFQ_PUBLISH, fn, arg);
}

int kj__publish_pending(const struct kj__daemon *d)
{
	return kj__offwork_count(d->work, KJ_OFFQ_PUBLISH, (uid_t)-1) > 0;
}

static struct kj__publish *pub_of(struct kj__offwork *w)
{
	return (struct kj__publish *)((char *)w - offsetof(struct kj__publish, work));
}

static void on_run(struct kj__offwork *w)
{
	kj__cache_pub_run(pub_of(w)->p);
}

/* The loop's side, handed to the cache as it is (cache/publish.c
 * kj__cache_pub_done: the rows, the table, the hot set; a failure counted
 * in publish_errors and logged there, before the commands waiting for it
 * run); then the bytes it borrowed go back. */
static int on_done(struct kj__offwork *w, int code)
{
	struct kj__publish *t = pub_of(w);

	if (code < 0) /* cannot happen: the publish queue never ends work early; done here then */
		kj__cache_pub_run(t->p);
	kj__cache_pub_done(t->p);
	t->p = NULL;
	t->d->miss->pub_n--;
	t->d->miss->pub_bytes -= t->len;
	pub_free(t);
	return 0;
}

static const struct kj__offwork_ops pub_ops = { NULL, on_run, on_done };

/* The object's bytes for a lent publish: the reply buffer its waiters'
 * replies queued (no copy), else a new one (the one copy); a buffer of the
 * key with other bytes is not used.  NULL when out of memory. */
static struct kj__replybuf *shared_bytes(struct kj__daemon *d, const char *key, const uint8_t *data, size_t len)
{
	struct kj__replybuf *rb = kj__replybuf_get(d, key, data, len);

	if (rb && memcmp(kj__replybuf_data(rb), data, len) != 0) {
		kj__replybuf_unref(rb);
		rb = kj__replybuf_get(d, NULL, data, len); /* untagged: a copy of its own */
	}
	return rb;
}

int kj__publish_start(struct kj__daemon *d, const struct kj__cache_entry *e, const uint8_t *data, size_t len,
		      struct kj__buf *recipe, const uint8_t *digest, const uid_t *uids, size_t n_uids)
{
	struct kj__publish *t = calloc(1, sizeof *t);
	int r = KJIT_ENOMEM;

	if (t == NULL)
		goto fail;
	t->work.ops = &pub_ops;
	t->d = d;
	t->len = len;
	int has_recipe = recipe && recipe->len > KJ_FRAME_HDR_SIZE;
	/* the recipe: the GET frame replay.c sends again, named by its body's
	 * digest; taken, not copied (a compile's is copied: the fleet value
	 * needs it after) */
	t->rb = shared_bytes(d, e->key, data, len);
	if (t->rb) {
		uint8_t *rp = has_recipe ? recipe->p : NULL;
		size_t rl = has_recipe ? recipe->len : 0;
		r = kj__cache_pub_begin_lent(d->cache, e, kj__replybuf_data(t->rb), len, has_recipe ? &rp : NULL, rl,
					     digest, uids, n_uids, &t->p);
		if (has_recipe && rp == NULL) /* taken */
			*recipe = (struct kj__buf){ 0 };
	} else {
		r = kj__cache_pub_begin(d->cache, e, data, len, has_recipe ? recipe->p : NULL,
					has_recipe ? recipe->len : 0, uids, n_uids, &t->p);
	}
	if (r == KJIT_EBUSY) { /* the same key is being published: same object */
		pub_free(t);
		return 0;
	}
	if (r < 0)
		goto fail;
	d->miss->pub_n++;
	d->miss->pub_bytes += len;
	/* over the cap: here, as it always was (and with no thread to be had:
	 * offwork.c) */
	kj__offwork_submit(d->work, KJ_OFFQ_PUBLISH, &t->work,
			   d->miss->pub_bytes <= KJ_PUBLISH_PENDING_MAX ? KJ_OFFWORK_POOL : KJ_OFFWORK_HERE);
	return 0;
fail:
	if (t)
		pub_free(t);
	d->stats[KJ_STAT_PUBLISH_ERRORS]++;
	kj__log(d, "could not store %s (%s): served, not cached", e->key, kjit_strerror(r));
	return r;
}
