/* uidq.c: the jobs waiting for a compile pool's workers (pool.c), one
 * queue per uid, the queues in a ring served round-robin: a user who queues
 * hundreds of compiles delays another user's by at most one job per
 * worker, not by the whole flood.
 *
 * Invariants: a uid has at most one queue in the ring, and a queue in the
 * ring is never empty (freed when its last job leaves); q->n counts the
 * jobs of all queues; within a queue, jobs leave in the order they came.
 * The ring owns its nodes, never the jobs.
 */
#include <stdlib.h>

#include "daemon.h"
#include "kj_types.h"

/* The jobs one uid has queued, in order. */
struct kj__uidq_node {
	struct kj__uidq_node *next;
	uid_t uid;
	struct kj__job *head, *tail;
};

int kj__uidq_push(struct kj__uidq *q, struct kj__job *job)
{
	struct kj__uidq_node **pp = &q->ring;

	while (*pp && (*pp)->uid != job->uid)
		pp = &(*pp)->next;
	if (*pp == NULL && (*pp = calloc(1, sizeof **pp)) == NULL)
		return KJIT_ENOMEM;
	struct kj__uidq_node *n = *pp;
	n->uid = job->uid;
	job->next = NULL;
	if (n->tail && n->head)
		n->tail->next = job;
	else
		n->head = job;
	n->tail = job;
	q->n++;
	return 0;
}

/* The first node whose uid prefer takes (prefer NULL: none), as the link
 * pointing to it; NULL when none does. */
static struct kj__uidq_node **find(struct kj__uidq *q, int (*prefer)(void *arg, uid_t uid), void *arg)
{
	for (struct kj__uidq_node **pp = &q->ring; prefer && *pp; pp = &(*pp)->next)
		if (prefer(arg, (*pp)->uid))
			return pp;
	return NULL;
}

int kj__uidq_any(struct kj__uidq *q, int (*prefer)(void *arg, uid_t uid), void *arg)
{
	return find(q, prefer, arg) != NULL;
}

struct kj__job *kj__uidq_pop(struct kj__uidq *q, int (*prefer)(void *arg, uid_t uid), void *arg)
{
	struct kj__uidq_node **at = find(q, prefer, arg);

	if (q->ring == NULL)
		return NULL;
	at = at ? at : &q->ring;
	struct kj__uidq_node *n = *at;
	struct kj__job *job = n->head;
	n->head = job->next;
	*at = n->next;
	if (n->head == NULL) {
		free(n);
	} else {
		struct kj__uidq_node **pp = &q->ring;
		while (*pp)
			pp = &(*pp)->next;
		n->next = NULL;
		*pp = n;
	}
	q->n--;
	job->next = NULL;
	return job;
}
