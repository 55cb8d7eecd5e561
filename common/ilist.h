/* ilist.h: one intrusive doubly linked list, the LRU order of the caches
 * kept in memory (cache/hot.c, client/procmemo.c, daemon/miss/memo.c).
 *
 * An element embeds a struct kj__ilink and is found back from it with
 * KJ_CONTAINER_OF; the list owns nothing and allocates nothing.  Invariant:
 * head .. tail through next (tail .. head through prev) is every linked
 * element exactly once; head->prev and tail->next are NULL; an element not
 * in the list has both links NULL.  The functions are inline: they sit on
 * the hit paths, where a call would show in bench/hitlat.c.
 */
#ifndef KJ_ILIST_H
#define KJ_ILIST_H

#include <stddef.h>

struct kj__ilink {
	struct kj__ilink *prev, *next;
};

/* head: most recently used (pushed) first; tail: the next to evict. */
struct kj__ilist {
	struct kj__ilink *head, *tail;
};

/* The element of type type whose member member is at ptr. */
#define KJ_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Puts e, which is in no list, at the head of l. */
static inline void kj__ilist_push_front(struct kj__ilist *l, struct kj__ilink *e)
{
	e->prev = NULL;
	e->next = l->head;
	if (l->head)
		l->head->prev = e;
	l->head = e;
	if (l->tail == NULL)
		l->tail = e;
}

/* Takes e, which is in l, out of it; e's links are NULL after. */
static inline void kj__ilist_unlink(struct kj__ilist *l, struct kj__ilink *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
}

/* Moves e, which is in l, to its head (a use, for an LRU). */
static inline void kj__ilist_to_front(struct kj__ilist *l, struct kj__ilink *e)
{
	if (l->head == e)
		return;
	kj__ilist_unlink(l, e);
	kj__ilist_push_front(l, e);
}

#endif /* KJ_ILIST_H */
