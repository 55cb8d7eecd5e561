/* redis-guard.c: what a hostile Redis server (or whoever sits on the
 * unencrypted link to it) may make hiredis build, checked before hiredis
 * builds it (docs/remote.md, "A hostile server").
 *
 * hiredis 0.14's async layer trusts the server: a reply that arrives when
 * no command waits for one, on a connection that is not subscribed, fails
 * an assert() and aborts kjitd; so does a pub/sub message with fewer than
 * two elements or a first element that is not a string; and an array
 * header makes it calloc one pointer per announced element (2^31 of them
 * for one line).  Every reply object is built through the functions here
 * (the reader's object functions, set on each new connection), which
 * refuse what kjit never asks for; hiredis then sees a reader error and
 * drops the connection (its pending ops fail, c->refused is the reason
 * logged), never an abort.
 *
 * Invariants:
 *  - An error reply is always accepted: hiredis gives it to the op waiting
 *    for it or, none waiting, drops the connection with it as the reason
 *    (NOAUTH for a SUBSCRIBE sent without a valid password).
 *  - CMD and PUT (and SUB before its subscription is confirmed): any other
 *    top-level reply is accepted only while an op waits for it (c->head;
 *    every command on them is an op, so ops and hiredis's callbacks are the
 *    same FIFO), and it is never an array: nothing kjit sends is answered
 *    with one (GET: bulk or nil; SET: status or nil; EVAL, PEXPIRE:
 *    integer; AUTH, SELECT, PING: status).
 *  - SUB, subscribed: only ["message" | "subscribe", string, string |
 *    integer], no nesting, so hiredis's pub/sub asserts always hold.
 *  - The objects themselves are hiredis's own (its default functions,
 *    saved per connection), so freeReplyObject frees them as usual.
 */
#include <hiredis/hiredis.h>
#include <string.h>

#include "redis-int.h"

static int word_is(const char *s, size_t len, const char *w)
{
	return s && len == strlen(w) && memcmp(s, w, len) == 0;
}

/* 1 if an object of type (elements for an array; s, len for a string) may
 * be built for task t on c; else 0 with c->refused set. */
static int allowed(struct conn *c, const redisReadTask *t, int type, int elements, const char *s, size_t len)
{
	const char *why = NULL;

	if (t->parent == NULL && type == REDIS_REPLY_ERROR) {
		; /* answers an op, or (none waiting) hiredis drops the connection with it as the reason */
	} else if (t->parent == NULL && (c->role != C_SUB || c->head)) {
		if (c->head == NULL)
			why = "a reply to no request";
		else if (type == REDIS_REPLY_ARRAY)
			why = "an array reply to a command never answered with one";
	} else if (t->parent == NULL) {
		if (type != REDIS_REPLY_ARRAY || elements != 3)
			why = "a malformed pub/sub message";
	} else if (t->parent->parent != NULL || type == REDIS_REPLY_ARRAY || c->role != C_SUB) {
		why = "a nested reply";
	} else if (t->idx == 0 && (type != REDIS_REPLY_STRING ||
				   (!word_is(s, len, "message") && !word_is(s, len, "subscribe")))) {
		why = "a pub/sub message of an unknown kind";
	} else if ((t->idx == 1 && type != REDIS_REPLY_STRING) ||
		   (t->idx == 2 && type != REDIS_REPLY_STRING && type != REDIS_REPLY_INTEGER)) {
		why = "a malformed pub/sub message";
	}
	if (why && c->refused == NULL)
		c->refused = why;
	return why == NULL;
}

static void *guard_string(const redisReadTask *t, char *s, size_t len)
{
	struct conn *c = t->privdata;
	return allowed(c, t, t->type, 0, s, len) ? c->dflt->createString(t, s, len) : NULL;
}

static void *guard_array(const redisReadTask *t, int elements)
{
	struct conn *c = t->privdata;
	return allowed(c, t, REDIS_REPLY_ARRAY, elements, NULL, 0) ? c->dflt->createArray(t, elements) : NULL;
}

static void *guard_integer(const redisReadTask *t, long long v)
{
	struct conn *c = t->privdata;
	return allowed(c, t, REDIS_REPLY_INTEGER, 0, NULL, 0) ? c->dflt->createInteger(t, v) : NULL;
}

static void *guard_nil(const redisReadTask *t)
{
	struct conn *c = t->privdata;
	return allowed(c, t, REDIS_REPLY_NIL, 0, NULL, 0) ? c->dflt->createNil(t) : NULL;
}

void kj__remote_guard_attach(struct conn *c, redisAsyncContext *ac)
{
	redisReader *rd = ac->c.reader;

	c->refused = NULL;
	c->dflt = rd->fn;
	c->fns.createString = guard_string;
	c->fns.createArray = guard_array;
	c->fns.createInteger = guard_integer;
	c->fns.createNil = guard_nil;
	c->fns.freeObject = rd->fn->freeObject;
	rd->fn = &c->fns;
	rd->privdata = c;
}
