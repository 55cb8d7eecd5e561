/* htab.c: the intrusive hash table of htab.h: its buckets, their growth
 * (doubling, every node moved to its new chain) and the chains' edits.
 * The lookups are inline in htab.h, on the hit paths.
 */
#include <stdlib.h>

#include "htab.h"

void kj__htab_init(struct kj__htab *t, void *(*calloc_fn)(size_t, size_t), void (*free_fn)(void *))
{
	t->tab = NULL;
	t->cap = t->n = 0;
	t->calloc = calloc_fn ? calloc_fn : calloc;
	t->free = free_fn ? free_fn : free;
}

void kj__htab_fini(struct kj__htab *t)
{
	t->free(t->tab);
	t->tab = NULL;
	t->cap = t->n = 0;
}

int kj__htab_reserve(struct kj__htab *t)
{
	if (t->cap != 0 && t->n + 1 <= t->cap)
		return 0;
	if (t->cap > SIZE_MAX / 2 / sizeof *t->tab)
		return -1;
	size_t cap = t->cap ? t->cap * 2 : KJ_HTAB_MIN;
	struct kj__hnode **tab = t->calloc(cap, sizeof *tab);
	if (tab == NULL)
		return -1;
	for (size_t b = 0; b < t->cap; b++) {
		for (struct kj__hnode *x = t->tab[b], *next; x; x = next) {
			next = x->chain;
			x->chain = tab[x->hash & (cap - 1)];
			tab[x->hash & (cap - 1)] = x;
		}
	}
	t->free(t->tab);
	t->tab = tab;
	t->cap = cap;
	return 0;
}

void kj__htab_insert(struct kj__htab *t, struct kj__hnode *node, uint64_t h)
{
	struct kj__hnode **b = &t->tab[h & (t->cap - 1)];

	node->hash = h;
	node->chain = *b;
	*b = node;
	t->n++;
}

void kj__htab_remove(struct kj__htab *t, struct kj__hnode *node)
{
	struct kj__hnode **pp = &t->tab[node->hash & (t->cap - 1)];

	while (*pp != node)
		pp = &(*pp)->chain;
	*pp = node->chain;
	node->chain = NULL;
	t->n--;
}
