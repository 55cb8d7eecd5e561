/* hot.c: the hot set, verified objects of a cache kept in memory so a
 * repeated hit costs one stat instead of an open, a read and a SHA-256.
 *
 * Invariants:
 *  - A copy enters only with bytes whose digest was checked (read from
 *    disk and verified, or just hashed by a publish), together with the
 *    identity of the file they came from: device, inode, size and
 *    modification time.
 *  - A copy is served only while its file still has that identity and its
 *    entry's size; otherwise it is dropped and the caller reads and
 *    verifies the file again, so a change on disk is never hidden.
 *  - c->hot_bytes <= c->hot_max: the least recently used copies go first;
 *    one object takes at most 1/HOT_OBJECT_SHARE of the set.
 *  - Every copy is in exactly one bucket chain of c->hot_tab (a power of
 *    two, at least as many buckets as copies) and in the LRU list
 *    c->hot_head .. c->hot_tail.
 *  - Keeping a copy is best effort: failing to allocate one changes
 *    nothing else.
 * The hot set owns the buckets, the copies and their bytes.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cache-int.h"

#define HOT_BUCKETS_MIN 256
#define HOT_OBJECT_SHARE 8 /* one object takes at most 1/8 of the hot set */

static size_t hot_bucket(const struct kj__cache *c, const uint8_t *key)
{
	uint64_t h;
	memcpy(&h, key, sizeof h); /* the key is a SHA-256: its bytes are uniform */
	return (size_t)h & (c->hot_cap - 1);
}

static struct hot *hot_find(const struct kj__cache *c, const uint8_t *key)
{
	if (c->hot_cap == 0)
		return NULL;
	for (struct hot *h = c->hot_tab[hot_bucket(c, key)]; h; h = h->chain)
		if (memcmp(h->key, key, KJ_SHA256_LEN) == 0)
			return h;
	return NULL;
}

static void hot_unlink_lru(struct kj__cache *c, struct hot *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		c->hot_head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	else
		c->hot_tail = h->prev;
	h->prev = h->next = NULL;
}

static void hot_push_front(struct kj__cache *c, struct hot *h)
{
	h->next = c->hot_head;
	if (c->hot_head)
		c->hot_head->prev = h;
	c->hot_head = h;
	if (c->hot_tail == NULL)
		c->hot_tail = h;
}

void kj__hot_remove(struct kj__cache *c, const uint8_t *key)
{
	struct hot **pp, *h;

	if (c->hot_cap == 0)
		return;
	for (pp = &c->hot_tab[hot_bucket(c, key)]; (h = *pp) != NULL; pp = &h->chain) {
		if (memcmp(h->key, key, KJ_SHA256_LEN) == 0) {
			*pp = h->chain;
			hot_unlink_lru(c, h);
			c->hot_bytes -= h->size;
			c->hot_n--;
			c->mem->free(h->data);
			c->mem->free(h);
			return;
		}
	}
}

void kj__hot_free_all(struct kj__cache *c)
{
	while (c->hot_head)
		kj__hot_remove(c, c->hot_head->key);
	c->mem->free(c->hot_tab);
	c->hot_tab = NULL;
	c->hot_cap = 0;
}

/* Doubles the buckets when one more copy would outnumber them.  0, or -1
 * when the new buckets cannot be had (the set is left as it was). */
static int hot_grow(struct kj__cache *c)
{
	if (c->hot_cap != 0 && c->hot_n + 1 <= c->hot_cap)
		return 0;
	size_t cap = c->hot_cap ? c->hot_cap * 2 : HOT_BUCKETS_MIN;
	struct hot **tab = c->mem->calloc(cap, sizeof *tab);
	if (tab == NULL)
		return -1;
	for (size_t b = 0; b < c->hot_cap; b++) {
		for (struct hot *h = c->hot_tab[b], *next; h; h = next) {
			next = h->chain;
			uint64_t v;
			memcpy(&v, h->key, sizeof v);
			h->chain = tab[v & (cap - 1)];
			tab[v & (cap - 1)] = h;
		}
	}
	c->mem->free(c->hot_tab);
	c->hot_tab = tab;
	c->hot_cap = cap;
	return 0;
}

void kj__hot_put_owned(struct kj__cache *c, const uint8_t *key, uint8_t *data, size_t size, const struct stat *st)
{
	if (c->hot_max == 0 || size > c->hot_max / HOT_OBJECT_SHARE) {
		c->mem->free(data);
		return;
	}
	kj__hot_remove(c, key);
	if (hot_grow(c) < 0) {
		c->mem->free(data);
		return;
	}
	while (c->hot_tail && c->hot_bytes + size > c->hot_max)
		kj__hot_remove(c, c->hot_tail->key);
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
	size_t b = hot_bucket(c, key);
	h->chain = c->hot_tab[b];
	c->hot_tab[b] = h;
	hot_push_front(c, h);
	c->hot_bytes += size;
	c->hot_n++;
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
		kj__hot_remove(c, en->key); /* changed or gone: read and verify it again */
		return NULL;
	}
	hot_unlink_lru(c, h);
	hot_push_front(c, h);
	return h;
}
