/* publish.c: a publish in steps, so that kjitd's loop never waits on the
 * disk or on a digest for it (issue 25): begin on the cache's thread
 * (copies, paths, a place among the publishes in flight), run on another
 * thread (the object's digest, its file: temporary, fsync, rename, the
 * directory's fsync; the recipe's digest and file), finish on the cache's
 * thread (the index's rows, all or none: the object's, its recipe's, its
 * requesters'; then the table and the hot set as the rows say).
 * kj__cache_publish is the three in a row; kj__cache_pub_done is finish
 * for a caller that only hands the publish over (kjitd), the failure
 * counted and logged here.
 *
 * Invariants:
 *  - From begin to finish the object is in c->pubs, and the hit path
 *    (cache.c: peek, lookup, peek_exists; index.c: kj__cache_get) serves
 *    it from the pub's copy, checked before the table: a hit never reads
 *    a file being written, nor one renamed before its row is in.
 *  - c->pubs changes only on the cache's thread; a run reads its pub's
 *    copies and writes only its result fields (dg, st, r, err, recipe_hex,
 *    recipe_r), which the cache's thread reads after run, never during.
 *  - The file is renamed into place only when whole and durable, and its
 *    rows are inserted after, in one transaction (finish calls index.c's
 *    kj__db_publish_rows itself): a crash leaves at worst a temporary file
 *    or a file without a row, as before, and never a row without its
 *    recipe's or requesters' rows.  The sweeps of the cache's thread leave
 *    a pub's files alone (kj__obj_sweepable).
 *  - One publish per key at a time (begin says KJIT_EBUSY to a second).
 *  - Temporary names are unique by c->tmp_seq, taken at begin.
 *  - A lent publish (kj__cache_pub_begin_lent) serves the caller's bytes,
 *    which stay valid and unchanged until finish or free; its run makes
 *    the copy the hot set keeps (own), read by the cache's thread only
 *    after the run, so the cache's thread never copies the object.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache-int.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

struct kj__cache_pub {
	struct kj__cache *c;
	struct kj__cache_pub *next;   /* c->pubs */
	int listed;                   /* in c->pubs */
	struct kj__cache_entry e;     /* strings owned (c->mem) */
	struct ent en;
	struct kj__pub_paths p;
	uint8_t *data;                /* c->mem; moves to the hot set at finish; lent: the caller's */
	size_t len;
	int lent;                     /* data is the caller's until finish or free; own is the run's copy */
	uint8_t *own;                 /* lent: c->mem, made by the run, read by the cache's thread after it */
	uint8_t *recipe;              /* c->mem, or NULL */
	size_t recipe_len;
	uint64_t recipe_seq;
	uid_t *uids;                  /* requesters (c->mem), recorded at finish */
	size_t n_uids;
	/* run's results */
	uint8_t dg[KJ_SHA256_LEN];
	int dg_known;                 /* dg given at begin_lent (the caller's): not hashed by the run */
	struct stat st;
	int r, err, ran;
	char recipe_hex[KJ_SHA256_HEX_LEN + 1];
	int recipe_r;
};

struct kj__cache_pub *kj__pub_find(const struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN])
{
	for (struct kj__cache_pub *p = c->pubs; p; p = p->next)
		if (memcmp(p->en.key, key, KJ_SHA256_LEN) == 0)
			return p;
	return NULL;
}

size_t kj__cache_pub_count(const struct kj__cache *c, uint64_t *bytes)
{
	size_t n = 0;

	if (bytes)
		*bytes = 0;
	for (struct kj__cache_pub *p = c->pubs; p; p = p->next) {
		n++;
		if (bytes)
			*bytes += p->len;
	}
	return n;
}

static void unlist(struct kj__cache_pub *p)
{
	struct kj__cache_pub **pp;

	if (!p->listed)
		return;
	for (pp = &p->c->pubs; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	p->listed = 0;
}

void kj__cache_pub_free(struct kj__cache_pub *p)
{
	if (p == NULL)
		return;
	struct kj__cache *c = p->c;
	unlist(p);
	c->mem->free((void *)p->e.source_name);
	c->mem->free((void *)p->e.options);
	c->mem->free((void *)p->e.compiler);
	c->mem->free((void *)p->e.log);
	c->mem->free((void *)p->e.lowered);
	c->mem->free((void *)p->e.entries);
	if (!p->lent)
		c->mem->free(p->data);
	c->mem->free(p->own);
	c->mem->free(p->recipe);
	c->mem->free(p->uids);
	c->mem->free(p);
}

/* src's copy through c->mem into *dst (NULL stays NULL).  0 or KJIT_ENOMEM. */
static int dup_str(struct kj__cache *c, const char **dst, const char *src)
{
	*dst = NULL;
	return src && (*dst = kj__cache_strdup(c, src)) == NULL ? KJIT_ENOMEM : 0;
}

static int dup_bytes(struct kj__cache *c, uint8_t **dst, const uint8_t *src, size_t len)
{
	if ((*dst = c->mem->malloc(len ? len : 1)) == NULL)
		return KJIT_ENOMEM;
	memcpy(*dst, src, len);
	return 0;
}

/* begin's body.  lent: data stays the caller's (copied by the run);
 * take: *recipe (malloc'd) becomes the pub's, set NULL, instead of a copy;
 * both only with the default allocator, else copies as before. */
static int begin(struct kj__cache *c, const struct kj__cache_entry *e, const uint8_t *data, size_t len, int lent,
		 uint8_t **recipe_in, size_t recipe_len, int take, const uid_t *uids, size_t n_uids,
		 struct kj__cache_pub **out)
{
	const uint8_t *recipe = recipe_in ? *recipe_in : NULL;
	struct kj__cache_pub *p;
	uint8_t key[KJ_SHA256_LEN];
	int r;

	*out = NULL;
	if ((r = kj__obj_entry_ok(e, data, len)) < 0)
		return r;
	kj__cache_unhex(e->key, key);
	if (c->pubs && kj__pub_find(c, key))
		return KJIT_EBUSY;
	if ((p = c->mem->calloc(1, sizeof *p)) == NULL)
		return KJIT_ENOMEM;
	p->c = c;
	p->e = *e;
	if (c->mem != &kj__cache_alloc_default)
		lent = take = 0; /* the run's copy and the recipe's free need the default allocator */
	p->e.source_name = p->e.options = p->e.compiler = p->e.log = p->e.lowered = p->e.entries = NULL;
	p->e.sha256[0] = '\0'; /* the run's */
	if ((r = dup_str(c, &p->e.source_name, e->source_name)) < 0 || (r = dup_str(c, &p->e.options, e->options)) < 0 ||
	    (r = dup_str(c, &p->e.compiler, e->compiler)) < 0 || (r = dup_str(c, &p->e.log, e->log)) < 0 ||
	    (r = dup_str(c, &p->e.lowered, e->lowered)) < 0 || (r = dup_str(c, &p->e.entries, e->entries)) < 0 ||
	    (!lent && (r = dup_bytes(c, &p->data, data, len)) < 0) ||
	    (recipe && !take && (r = dup_bytes(c, &p->recipe, recipe, recipe_len)) < 0) ||
	    (n_uids && (r = dup_bytes(c, (uint8_t **)&p->uids, (const uint8_t *)uids, n_uids * sizeof *uids)) < 0) ||
	    (r = kj__obj_prepare(c, &p->e, len, &p->en, &p->p)) < 0) {
		kj__cache_pub_free(p);
		return r;
	}
	if (lent) {
		p->lent = 1;
		p->data = (uint8_t *)data; /* read only, served until finish */
	}
	if (recipe && take) {
		p->recipe = *recipe_in;
		*recipe_in = NULL;
	}
	p->len = len;
	p->recipe_len = recipe_len;
	p->n_uids = n_uids;
	if (recipe)
		p->recipe_seq = ++c->tmp_seq;
	p->next = c->pubs;
	c->pubs = p;
	p->listed = 1;
	*out = p;
	return 0;
}

int kj__cache_pub_begin(struct kj__cache *c, const struct kj__cache_entry *e, const uint8_t *data, size_t len,
			const uint8_t *recipe, size_t recipe_len, const uid_t *uids, size_t n_uids,
			struct kj__cache_pub **out)
{
	uint8_t *rp = (uint8_t *)recipe; /* copied, never taken */

	return begin(c, e, data, len, 0, recipe ? &rp : NULL, recipe_len, 0, uids, n_uids, out);
}

int kj__cache_pub_begin_lent(struct kj__cache *c, const struct kj__cache_entry *e, const uint8_t *data, size_t len,
			     uint8_t **recipe, size_t recipe_len, const uint8_t *digest, const uid_t *uids,
			     size_t n_uids, struct kj__cache_pub **out)
{
	int r = begin(c, e, data, len, 1, recipe && *recipe ? recipe : NULL, recipe_len, 1, uids, n_uids, out);

	if (r == 0 && digest) { /* the run's hash, spared */
		memcpy((*out)->dg, digest, KJ_SHA256_LEN);
		(*out)->dg_known = 1;
	}
	return r;
}

void kj__cache_pub_run(struct kj__cache_pub *p)
{
	struct kj__cache *c = p->c;
	uint8_t rd[KJ_SHA256_LEN];

	p->ran = 1;
	p->recipe_r = KJIT_ENOENT;
	if (p->lent) { /* the copy the hot set keeps, made here rather than on the cache's thread */
		if ((p->own = c->mem->malloc(p->len ? p->len : 1)) == NULL) {
			p->r = KJIT_ENOMEM;
			return;
		}
		memcpy(p->own, p->data, p->len);
	}
	if (!p->dg_known && (p->r = kj__sha256(p->data, p->len, p->dg)) < 0)
		return;
	if ((p->r = kj__obj_place(c, &p->p, p->data, p->len, &p->st)) < 0) {
		p->err = errno;
		return;
	}
	/* The recipe after the object: its row links to the object's key. */
	if (p->recipe == NULL)
		return;
	/* a GET frame, named by the digest of its body (recipe.c, replay.c) */
	if (p->recipe_len <= KJ_FRAME_HDR_SIZE)
		p->recipe_r = KJIT_EINVAL;
	else if ((p->recipe_r = kj__sha256(p->recipe + KJ_FRAME_HDR_SIZE, p->recipe_len - KJ_FRAME_HDR_SIZE, rd)) == 0) {
		kj__hex(rd, p->recipe_hex);
		p->recipe_r = kj__obj_place_recipe(c, p->recipe_hex, p->recipe, p->recipe_len, p->recipe_seq);
	}
}

/* finish's rows failed, none written: the file is not indexed.  A prior
 * row is kept only for the same bytes (the file now holds the new ones),
 * else dropped; without one the file is removed. */
static void unindexed(struct kj__cache *c, size_t prior, const uint8_t key[KJ_SHA256_LEN],
		      const uint8_t dg[KJ_SHA256_LEN], const char *final)
{
	uint8_t prior_dg[KJ_SHA256_LEN];

	if (prior != NONE && kj__db_row_digest(c, key, prior_dg) == 0 && memcmp(prior_dg, dg, KJ_SHA256_LEN) == 0)
		return;
	if (prior != NONE)
		kj__obj_drop(c, prior);
	else if (c->fs->unlink(final) < 0 && errno != ENOENT)
		kj__cache_say(c, "cannot remove %s: %s", final, strerror(errno));
}

int kj__cache_pub_finish(struct kj__cache_pub *p)
{
	struct kj__cache *c = p->c;
	size_t prior;
	int r;

	unlist(p); /* from here on, the table and the hot set serve it */
	if (!p->ran)
		return KJIT_EINTERNAL;
	if (p->r < 0) {
		errno = p->err;
		return p->r;
	}
	kj__hex(p->dg, p->e.sha256);
	if ((r = kj__tab_reserve(c, c->n + 1)) < 0) {
		if (c->fs->unlink(p->p.final) < 0 && errno != ENOENT)
			kj__cache_say(c, "cannot remove %s: %s", p->p.final, strerror(errno));
		return r;
	}
	/* the rows in one transaction: the object's, its recipe's (when the run
	 * stored the file) and its requesters'; then the table as the rows are */
	struct kj__pub_rows w = { .recipe = p->recipe && p->recipe_r == 0 ? p->recipe_hex : NULL,
				  .rsize = kj__recipe_rsize(p->recipe_len), .uids = p->uids, .n_uids = p->n_uids };
	prior = kj__tab_find(c, p->en.key);
	/* No legacy_rows here: a publish is under the key kj__cache_key gave
	 * its request, never a legacy one, whether or not its entries could be
	 * listed (an object without symbols once cost every later request with
	 * entries a second SHA-256 of its source: issue 35) */
	if ((r = kj__db_publish_rows(c, &p->e, p->en.seq, &w)) < 0) {
		unindexed(c, prior, p->en.key, p->dg, p->p.final);
		errno = EIO;
		return r;
	}
	p->en.rsize = w.recipe ? w.rsize : 0;
	p->en.owner = p->n_uids ? (uint32_t)p->uids[0] + 1 : 0;
	/* the table and the hot set in one call; the bytes are the ones hashed
	 * by the run, so they count as verified */
	kj__tab_put(c, &p->en, prior, p->lent ? p->own : p->data, &p->st);
	p->own = NULL;
	p->data = NULL;
	p->lent = 0;
	if (p->recipe && p->recipe_r < 0)
		kj__cache_say(c, "could not store the recipe of %s: `kjit warm --replay` will not rebuild it", p->e.key);
	return 0;
}

int kj__cache_pub_done(struct kj__cache_pub *p)
{
	struct kj__cache *c = p->c;
	int r = kj__cache_pub_finish(p);

	if (r < 0) { /* counted before the caller's next step (kjitd: the commands waiting for it) */
		int err = errno;
		if (c->pub_errors)
			(*c->pub_errors)++;
		kj__cache_say(c, "could not store %s (%s%s%s): served, not cached", p->e.key, kjit_strerror(r),
			      r == KJIT_EIO ? ": " : "", r == KJIT_EIO ? strerror(err) : "");
	}
	kj__cache_pub_free(p);
	return r;
}

int kj__cache_publish(struct kj__cache *c, struct kj__cache_entry *e, const uint8_t *data, size_t len)
{
	struct kj__cache_pub *p;
	int r = kj__cache_pub_begin(c, e, data, len, NULL, 0, NULL, 0, &p);

	if (r < 0)
		return r;
	kj__cache_pub_run(p);
	r = kj__cache_pub_finish(p);
	if (r == 0) {
		memcpy(e->sha256, p->e.sha256, sizeof e->sha256);
		e->size = p->e.size;
		e->created = p->e.created;
		e->last_used = p->e.last_used;
		e->hits = 0;
	}
	int saved = errno;
	kj__cache_pub_free(p);
	errno = saved;
	return r;
}

/* ---- serving a publish in flight (cache.c, index.c) ---- */

int kj__pub_peek(struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], const uint8_t **data, size_t *len,
		 uint32_t *compile_ms)
{
	struct kj__cache_pub *p = c->pubs ? kj__pub_find(c, key) : NULL;

	if (p == NULL)
		return KJIT_ENOENT;
	*data = p->data;
	*len = p->len;
	if (compile_ms)
		*compile_ms = p->en.compile_ms;
	return 0;
}

int kj__pub_entry(struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], struct kj__cache_entry *e, int dup)
{
	struct kj__cache_pub *p = c->pubs ? kj__pub_find(c, key) : NULL;
	int r = 0;

	if (p == NULL)
		return KJIT_ENOENT;
	*e = p->e;
	if (!dup)
		return 0;
	e->source_name = e->options = e->compiler = e->log = e->lowered = e->entries = NULL;
	if (dup_str(c, &e->source_name, p->e.source_name) < 0 || dup_str(c, &e->options, p->e.options) < 0 ||
	    dup_str(c, &e->compiler, p->e.compiler) < 0 || dup_str(c, &e->log, p->e.log) < 0 ||
	    dup_str(c, &e->lowered, p->e.lowered) < 0 || dup_str(c, &e->entries, p->e.entries) < 0) {
		kj__cache_entry_free(e);
		r = KJIT_ENOMEM;
	}
	return r;
}

int kj__pub_requested(const struct kj__cache *c, const uint8_t key[KJ_SHA256_LEN], uid_t uid)
{
	struct kj__cache_pub *p = c->pubs ? kj__pub_find(c, key) : NULL;

	for (size_t i = 0; p && i < p->n_uids; i++)
		if (p->uids[i] == uid)
			return 1;
	return 0;
}

int kj__pub_foreach(struct kj__cache *c, const char *target, int all, uid_t uid,
		    int (*fn)(const struct kj__cache_entry *e, void *arg), void *arg)
{
	for (struct kj__cache_pub *p = c->pubs; p; p = p->next) {
		int r;
		if ((target && strcmp(target, p->e.target) != 0) || (!all && !kj__pub_requested(c, p->en.key, uid)))
			continue;
		if ((r = fn(&p->e, arg)) != 0)
			return r;
	}
	return 0;
}
