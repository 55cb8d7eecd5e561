/* htab.h: one intrusive hash table with chained buckets, the index of the
 * caches kept in memory (cache/hot.c, client/procmemo.c, daemon/miss/memo.c).
 *
 * An element embeds a struct kj__hnode holding its 64-bit hash; the table
 * holds pointers to nodes and never the elements' keys, so a caller walks
 * the nodes of one hash (kj__htab_first, kj__htab_next) and compares its
 * own keys: a SHA-256 key's first 8 bytes are its hash (kj__htab_hash_sha),
 * a longer body is hashed by its owner and compared in full.
 *
 * Invariants: cap is 0 or a power of two >= KJ_HTAB_MIN; every node is in
 * the chain of bucket hash & (cap - 1) exactly once; n counts the nodes;
 * kj__htab_reserve keeps n <= cap, so chains stay short.  The table owns
 * its buckets only (through the calloc and free it was given); removing a
 * node never frees it.  Not thread-safe: one owner at a time.
 */
#ifndef KJ_HTAB_H
#define KJ_HTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KJ_HTAB_MIN 256 /* buckets of a table's first allocation */

struct kj__hnode {
	struct kj__hnode *chain; /* next in the bucket */
	uint64_t hash;
};

struct kj__htab {
	struct kj__hnode **tab;
	size_t cap, n;
	void *(*calloc)(size_t n, size_t size);
	void (*free)(void *p);
};

/* An empty table allocating its buckets through calloc_fn and free_fn
 * (both NULL: the C library's).  Allocates nothing yet. */
void kj__htab_init(struct kj__htab *t, void *(*calloc_fn)(size_t, size_t), void (*free_fn)(void *));

/* Frees the buckets (not the nodes; the caller removes or frees those
 * first) and leaves t empty, ready for reuse. */
void kj__htab_fini(struct kj__htab *t);

/* Makes room for one more node: doubles the buckets when n + 1 would
 * outnumber them.  0, or -1 when they cannot be had (t is unchanged). */
int kj__htab_reserve(struct kj__htab *t);

/* Adds node with hash h; kj__htab_reserve must have succeeded since the
 * last insert.  The newest node of a hash is found first. */
void kj__htab_insert(struct kj__htab *t, struct kj__hnode *node, uint64_t h);

/* Takes node, which is in t, out of it. */
void kj__htab_remove(struct kj__htab *t, struct kj__hnode *node);

/* The first node with hash h, or NULL; kj__htab_next gives the next one
 * with the same hash after node.  Removing the returned node is allowed
 * when the walk stops there. */
static inline struct kj__hnode *kj__htab_next(const struct kj__hnode *node, uint64_t h)
{
	struct kj__hnode *x = node->chain;

	while (x && x->hash != h)
		x = x->chain;
	return x;
}

static inline struct kj__hnode *kj__htab_first(const struct kj__htab *t, uint64_t h)
{
	struct kj__hnode *x;

	if (t->cap == 0)
		return NULL;
	x = t->tab[h & (t->cap - 1)];
	while (x && x->hash != h)
		x = x->chain;
	return x;
}

/* The hash of a SHA-256 digest: its first 8 bytes (uniform already). */
static inline uint64_t kj__htab_hash_sha(const uint8_t *digest)
{
	uint64_t h;

	memcpy(&h, digest, sizeof h);
	return h;
}

#endif /* KJ_HTAB_H */
