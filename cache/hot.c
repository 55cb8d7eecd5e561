/* hot.c: the hot set, verified objects of a cache kept in memory so a
 * repeated hit costs one stat instead of an open, a read and a SHA-256.
 *
 * Invariants:
 *  - A copy enters only with bytes whose digest was checked (read from
 *    disk and verified, or just published: hashed by the publish, or a
 *    fleet value's whose MAC or checksum covered digest and bytes),
 *    together with the identity of the file they came from: device,
 *    inode, size and modification time.
 *  - A copy is served only while its file still has that identity and its
 *    entry's size; otherwise it is dropped and the caller reads and
 *    verifies the file again, so a change on disk is never hidden.
 *  - c->hot_bytes <= c->hot_max: the least recently used copies go first;
 *    one object takes at most 1/HOT_OBJECT_SHARE of the set.
 *  - Every copy is in c->hot_tab (common/htab.h, hashed by its key) and
 *    in the LRU list c->hot_lru (common/ilist.h), most recent first.
 *  - Keeping a copy is best effort: failing to allocate one changes
 *    nothing else.
 * The hot set owns the buckets, the copies and their bytes.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cache-int.h"

#define HOT_OBJECT_SHARE 8 /* one object takes at most 1/8 of the hot set */

static struct hot *hot_find(const struct kj__cache *c, const uint8_t *key)
{
	uint64_t hash = kj__htab_hash_sha(key);

	for (struct kj__hnode *x = kj__htab_first(&c->hot_tab, hash); x; x = kj__htab_next(x, hash)) {
		struct hot *h = KJ_CONTAINER_OF(x, struct hot, hn);
		if (memcmp(h->key, key, KJ_SHA256_LEN) == 0)
			return h;
	}
	return NULL;
}

static void hot_drop(struct kj__cache *c, struct hot *h)
{
	kj__htab_remove(&c->hot_tab, &h->hn);
	kj__ilist_unlink(&c->hot_lru, &h->lru);
	c->hot_bytes -= h->size;
	c->mem->free(h->data);
	c->mem->free(h);
}

void kj__hot_remove(struct kj__cache *c, const uint8_t *key)
{
	struct hot *h = hot_find(c, key);

	if (h)
		hot_drop(c, h);
}

void kj__hot_free_all(struct kj__cache *c)
{
	while (c->hot_lru.head)
		hot_drop(c, KJ_CONTAINER_OF(c->hot_lru.head, struct hot, lru));
	kj__htab_fini(&c->hot_tab);
}

void kj__hot_put_owned(struct kj__cache *c, const uint8_t *key, uint8_t *data, size_t size, const struct stat *st)
{
	if (c->hot_max == 0 || size > c->hot_max / HOT_OBJECT_SHARE) {
		c->mem->free(data);
		return;
	}
	kj__hot_remove(c, key);
	if (kj__htab_reserve(&c->hot_tab) < 0) {
		c->mem->free(data);
		return;
	}
	while (c->hot_lru.tail && c->hot_bytes + size > c->hot_max)
		hot_drop(c, KJ_CONTAINER_OF(c->hot_lru.tail, struct hot, lru));
	struct hot *h = c->mem->calloc(1, sizeof *h);
	if (h == NULL) {
		c->mem->free(data);
		return;
	}
	memcpy(h->key, key, KJ_SHA256_LEN);
	h->data = data;
	h->size = size;
	h->dev = st->st_dev;
	h->ino = st->st_ino;
	h->mtim = st->st_mtim;
	kj__htab_insert(&c->hot_tab, &h->hn, kj__htab_hash_sha(key));
	kj__ilist_push_front(&c->hot_lru, &h->lru);
	c->hot_bytes += size;
}

void kj__hot_put(struct kj__cache *c, const uint8_t *key, const uint8_t *data, size_t size,
		 const struct stat *st)
{
	if (c->hot_max == 0 || size > c->hot_max / HOT_OBJECT_SHARE)
		return;
	uint8_t *copy = c->mem->malloc(size);
	if (copy == NULL)
		return;
	memcpy(copy, data, size);
	kj__hot_put_owned(c, key, copy, size, st);
}

struct hot *kj__hot_get(struct kj__cache *c, const struct ent *en)
{
	struct hot *h = hot_find(c, en->key);
	char path[PATH_MAX];
	struct stat st;

	if (h == NULL)
		return NULL;
	if (kj__obj_path(c, en, path, sizeof path) < 0 || c->fs->stat(path, &st) < 0 || st.st_dev != h->dev ||
	    st.st_ino != h->ino || (size_t)st.st_size != h->size || st.st_mtim.tv_sec != h->mtim.tv_sec ||
	    st.st_mtim.tv_nsec != h->mtim.tv_nsec || h->size != en->size) {
		hot_drop(c, h); /* changed or gone: read and verify it again */
		return NULL;
	}
	kj__ilist_to_front(&c->hot_lru, &h->lru);
	return h;
}
