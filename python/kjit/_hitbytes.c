/* _hitbytes.c: kjit.Client.get's bytes (issue 35).  The object is copied
 * once, from the process memo, the shared table or the reply straight into
 * the bytes object returned (libkjit's kj__get_into, client/getinto.h,
 * with an allocator that makes the bytes), or not at all when the Hitter
 * still keeps the bytes of that very answer (kj__get_into_kept: an answer
 * of the memo or the table has an id naming its bytes; _hit.h's
 * KEPT_SLOTS).  Split out of _hit.c, which makes the Object around them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_hit.h"

/* Drops the bytes h keeps (the handle changed, or h goes). */
void kj__hit_kept_clear(Hitter *h)
{
	for (int i = 0; i < KEPT_SLOTS; i++) {
		h->kept[i].id[0] = h->kept[i].id[1] = 0;
		Py_CLEAR(h->kept[i].bytes);
	}
}

/* kj__get_into's buffer: a bytes object made for it, under the GIL taken
 * back for the moment (the call runs without it). */
struct into {
	PyThreadState *ts; /* this thread's, while the GIL is released */
	PyObject *bytes;   /* the last one made, or NULL */
	int given;         /* libkjit asked for it (a bytes made ahead may not be) */
	const Hitter *h;   /* whose kept bytes into_have looks at */
	PyObject *held;    /* the kept bytes libkjit was told this caller holds (borrowed), or NULL */
};

/* The kept slot of the answer id. */
static unsigned kept_slot(const uint64_t id[2])
{
	uint64_t x = (id[0] * 0x9e3779b97f4a7c15ull) ^ id[1];
	return (unsigned)((x ^ x >> 29) % KEPT_SLOTS);
}

/* kj__get_into_kept's have(): whether h keeps the bytes of the answer id.
 * Runs without the GIL: it only reads h->kept, which changes only under
 * the Client's lock, held by this call's caller. */
static int into_have(void *ctx, const uint64_t id[2], size_t size)
{
	struct into *in = ctx;
	unsigned s = kept_slot(id);
	PyObject *b = in->h->kept[s].bytes;
	in->held = NULL;
	if (b == NULL || in->h->kept[s].id[0] != id[0] || in->h->kept[s].id[1] != id[1] ||
	    (size_t)PyBytes_GET_SIZE(b) != size)
		return 0;
	in->held = b;
	return 1;
}

/* Keeps b, the bytes of the answer id ({0, 0}: none), in its slot of h. */
static void kept_put(Hitter *h, const uint64_t id[2], PyObject *b)
{
	if ((id[0] == 0 && id[1] == 0) || PyBytes_GET_SIZE(b) > KEPT_MAX)
		return;
	unsigned s = kept_slot(id);
	Py_INCREF(b);
	h->kept[s].id[0] = id[0];
	h->kept[s].id[1] = id[1];
	Py_XSETREF(h->kept[s].bytes, b);
}

static void *into_alloc(void *ctx, size_t size)
{
	struct into *in = ctx;
	in->given = 0;
	in->held = NULL; /* asked for a buffer: whatever have() said before is not the answer */
	if (in->bytes != NULL && (size_t)PyBytes_GET_SIZE(in->bytes) == size) {
		in->given = 1; /* made ahead at the last object's size, or a retry after a raced copy */
		return PyBytes_AS_STRING(in->bytes);
	}
	if (size > (size_t)PY_SSIZE_T_MAX)
		return NULL;
	PyEval_RestoreThread(in->ts);
	Py_XSETREF(in->bytes, PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size));
	if (in->bytes == NULL)
		PyErr_Clear(); /* libkjit answers KJIT_ENOMEM or the next way */
	in->ts = PyEval_SaveThread();
	in->given = in->bytes != NULL;
	return in->bytes ? PyBytes_AS_STRING(in->bytes) : NULL;
}

/* kjit_get(c, req, res) into a bytes object, the GIL released meanwhile:
 * the code; on success *data is the object's bytes (a new reference; NULL
 * with an exception set when they cannot be made).  Through kj__get_into
 * where libkjit has it (one copy of the memo's, the table's or the reply's
 * bytes), else kjit_get and a copy of its result. */
int kj__hit_fetch_bytes(Hitter *h, kjit_client *c, const kjit_request *req, kjit_result *res, PyObject **data)
{
	struct into in = { NULL, NULL, 0, h, NULL };
	uint64_t id[2] = { 0, 0 };
	int code;
	/* The kept ids are those of the handle bound (Hitter.bind drops them when
	 * it changes): on any other handle nothing is kept. */
	kj__hit_kept_fn *kept = c == h->handle ? h->get_kept : NULL;
	if (h->get_into && h->last_size > 0 && (in.bytes = PyBytes_FromStringAndSize(NULL, h->last_size)) == NULL)
		PyErr_Clear(); /* into_alloc tries again */
	in.ts = PyEval_SaveThread();
	if (kept)
		code = kept(c, req, res, into_alloc, into_have, &in, id);
	else
		code = h->get_into ? h->get_into(c, req, res, into_alloc, &in) : h->get(c, req, res);
	PyEval_RestoreThread(in.ts);
	*data = NULL;
	if (code < 0) {
		Py_XDECREF(in.bytes);
		return code;
	}
	if (res->data == NULL && in.held != NULL && (id[0] || id[1]) && (size_t)PyBytes_GET_SIZE(in.held) == res->size) {
		Py_XDECREF(in.bytes); /* made ahead, not needed: a repeat of a kept answer */
		h->last_size = 0;
		Py_INCREF(in.held);
		*data = in.held; /* kept since they were copied */
		return code;
	}
	if (res->data == NULL && in.given && (size_t)PyBytes_GET_SIZE(in.bytes) == res->size) {
		*data = in.bytes; /* the object is in it */
		h->last_size = PyBytes_GET_SIZE(in.bytes);
		kept_put(h, id, in.bytes);
		return code;
	}
	Py_XDECREF(in.bytes);
	if (res->data == NULL) /* cannot happen: libkjit filled neither */
		PyErr_SetString(PyExc_SystemError, "kjit._hit: kj__get_into answered without the object");
	else
		*data = PyBytes_FromStringAndSize((const char *)res->data, (Py_ssize_t)res->size);
	return code;
}
