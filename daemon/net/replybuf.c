/* replybuf.c: shared reply objects, the bytes of one code object queued
 * for any number of replies (issue 21, item 3).
 *
 * A reply whose object the socket could not take at once keeps the rest
 * queued.  Rather than a copy per reply, every queued reply of the same
 * object references one kj__replybuf: the waiters of a flight, pipelined
 * repeats and other clients hitting the same key all share it.  Buffers
 * are found by tag (the cache key) and length; a key names one object
 * (its digest is checked before it is served), so two replies of one key
 * carry the same bytes.
 *
 * Invariants:
 *  - A buffer is in d->net->replybufs exactly while its reference count is
 *    above 0; the last kj__replybuf_unref frees it.
 *  - Its bytes are charged (quota.c) once to each uid that has a reply
 *    queued on it, not once per reply: charge/discharge pairs count the
 *    replies of each uid, and the uid's charge goes back with its last.
 *    A uid is charged for what its unread replies make kjitd hold; another
 *    uid's unread replies never hold its budget.
 * No state outside the daemon's context.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "net-int.h"
#include "kj_types.h"

struct uid_refs {
	uid_t uid;
	unsigned n;                  /* replies of uid queued on the buffer */
};

struct kj__replybuf {
	struct kj__daemon *d;
	struct kj__replybuf *prev, *next;
	unsigned refs;
	char tag[65];
	struct uid_refs *uids;
	size_t n_uids, cap_uids;
	size_t len;
	uint8_t data[];
};

static struct kj__replybuf *find(struct kj__daemon *d, const char *tag, size_t len)
{
	for (struct kj__replybuf *b = d->net->replybufs; b; b = b->next)
		if (b->len == len && strcmp(b->tag, tag) == 0)
			return b;
	return NULL;
}

struct kj__replybuf *kj__replybuf_get(struct kj__daemon *d, const char *tag, const uint8_t *data, size_t len)
{
	struct kj__replybuf *b = tag && strlen(tag) < sizeof b->tag ? find(d, tag, len) : NULL;

	if (b) {
		b->refs++;
		return b;
	}
	if ((b = malloc(sizeof *b + len)) == NULL)
		return NULL;
	memset(b, 0, sizeof *b);
	b->d = d;
	b->refs = 1;
	b->len = len;
	memcpy(b->data, data, len);
	if (tag && strlen(tag) < sizeof b->tag) {
		strcpy(b->tag, tag);
		b->next = d->net->replybufs;
		if (d->net->replybufs)
			d->net->replybufs->prev = b;
		d->net->replybufs = b;
	} else {
		b->prev = b; /* untagged: never found, never listed */
	}
	return b;
}

void kj__replybuf_unref(struct kj__replybuf *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	if (b->prev != b) {
		if (b->prev)
			b->prev->next = b->next;
		else
			b->d->net->replybufs = b->next;
		if (b->next)
			b->next->prev = b->prev;
	}
	for (size_t i = 0; i < b->n_uids; i++) /* not reached when charges are paired */
		kj__quota_release(b->d, b->uids[i].uid, b->len);
	free(b->uids);
	free(b);
}

const uint8_t *kj__replybuf_data(const struct kj__replybuf *b)
{
	return b->data;
}

size_t kj__replybuf_len(const struct kj__replybuf *b)
{
	return b->len;
}

int kj__replybuf_charge(struct kj__replybuf *b, uid_t uid, int force, char *err, size_t errlen)
{
	int r;

	for (size_t i = 0; i < b->n_uids; i++)
		if (b->uids[i].uid == uid) {
			b->uids[i].n++;
			return 0;
		}
	if (b->n_uids == b->cap_uids) {
		size_t cap = b->cap_uids ? b->cap_uids * 2 : 2;
		struct uid_refs *u = realloc(b->uids, cap * sizeof *u);
		if (u == NULL) {
			snprintf(err, errlen, "kjitd is out of memory; retry later");
			return KJIT_ENOMEM;
		}
		b->uids = u;
		b->cap_uids = cap;
	}
	if (force)
		kj__quota_charge_over(b->d, uid, b->len);
	else if ((r = kj__quota_charge(b->d, uid, b->len, err, errlen)) < 0)
		return r;
	b->uids[b->n_uids++] = (struct uid_refs){ uid, 1 };
	return 0;
}

void kj__replybuf_discharge(struct kj__replybuf *b, uid_t uid)
{
	for (size_t i = 0; i < b->n_uids; i++)
		if (b->uids[i].uid == uid) {
			if (--b->uids[i].n == 0) {
				kj__quota_release(b->d, uid, b->len);
				b->uids[i] = b->uids[--b->n_uids];
			}
			return;
		}
}
