/* _hitcall.c: kjit.Client.get answered in C (issue 35).  Once a Client
 * has a Hitter, kjit/client.py puts a Get in the class in place of get (a
 * method descriptor: `Client.get` on the class is still the Python
 * function, `c.get(...)` calls the Get with c first).  A Client with a
 * Hitter is answered here: the call's arguments are bound to get()'s
 * parameters, its key is built exactly as get() builds it (the same 13
 * items; "tuple(x) if x else None" for the four lists) and looked up in the
 * Client's own dict of prepared requests (the same dict object get()
 * fills), then, under the Client's lock (the Hitter's own) and on the open
 * handle client.py bound into the Hitter (Hitter.bind: on open, close and
 * in a child after fork), kj__hit_fetch answers.  A repeat of the last call needs no key: when
 * every argument is the very object it was (each of an immutable type:
 * None, bool, int, str, bytes, a tuple of str or bytes) or a list holding
 * the very items it held, the last call's prepared request is taken.
 *
 * Whatever this path does not take goes to the Python get with the call's
 * arguments unchanged: a Client without a Hitter (the ctypes path), a
 * request not prepared yet (get() prepares and keeps it, so the next call
 * is taken here), headers, arguments get() would refuse (it raises as it
 * always did), a sequence that is not a list or tuple (never iterated
 * twice), an unhashable argument, a handle not open yet or closed, a child
 * after fork (get() reconnects).  A failed kjit_get raises the exception
 * the Client's _failure builds, under the lock, as get() does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <string.h>

#include "_hit.h"

#if PY_VERSION_HEX < 0x03090000
#define PyObject_Vectorcall _PyObject_Vectorcall
#endif

static const char *const arg_names[A_N] = {
	"source", "backend", "target", "options", "headers", "name", "kernel", "entries", "runtime_version",
	"no_env", "include_dirs", "compiler", "name_expressions", "explain", "view",
};

/* get()'s key, item by item: the argument, and 1 where the key holds
 * tuple(x) if x else None (kjit/client.py, Client.get). */
static const struct {
	signed char arg, seq;
} key_items[] = {
	{ A_SOURCE, 0 },     { A_BACKEND, 0 },      { A_TARGET, 0 },   { A_OPTIONS, 1 },
	{ A_NAME, 0 },       { A_KERNEL, 0 },       { A_ENTRIES, 1 },  { A_RUNTIME_VERSION, 0 },
	{ A_NO_ENV, 0 },     { A_INCLUDE_DIRS, 1 }, { A_COMPILER, 0 }, { A_NAME_EXPRESSIONS, 1 },
	{ A_EXPLAIN, 0 },
};
#define N_KEY ((Py_ssize_t)(sizeof key_items / sizeof key_items[0]))

int kj__hit_call_init(Hitter *h, PyObject *prepared, PyObject *forks)
{
	if (PyList_GET_SIZE(forks) != 1) {
		PyErr_SetString(PyExc_ValueError, "kjit._hit.Hitter: forks must be a list of one int");
		return -1;
	}
	Py_INCREF(prepared);
	h->prepared = prepared;
	Py_INCREF(forks);
	h->forks = forks;
	for (int i = 0; i < A_N; i++)
		if ((h->names[i] = PyUnicode_InternFromString(arg_names[i])) == NULL)
			return -1;
	if ((h->s_failure = PyUnicode_InternFromString("_failure")) == NULL)
		return -1;
	return 0;
}

/* Forgets the last call. */
static void memo_clear(Hitter *h)
{
	for (int i = 0; i < A_N; i++)
		Py_CLEAR(h->last_a[i]);
	Py_CLEAR(h->last_key);
	Py_CLEAR(h->last_prep);
}

void kj__hit_call_clear(Hitter *h)
{
	memo_clear(h);
	Py_CLEAR(h->prepared);
	Py_CLEAR(h->forks);
	for (int i = 0; i < A_N; i++)
		Py_CLEAR(h->names[i]);
	Py_CLEAR(h->s_failure);
	Py_CLEAR(h->stamp);
}

/* a[i]: argument i of the call (borrowed), or its default.  1 when this
 * path does not take the call (an argument too many, a keyword get() does
 * not have, one given twice): get() then raises as it does. */
static int bind(Hitter *h, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **a)
{
	if (nargs > A_POSITIONAL)
		return 1;
	memset(a, 0, A_N * sizeof *a);
	for (Py_ssize_t i = 0; i < nargs; i++)
		a[i] = args[i];
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	for (Py_ssize_t k = 0; k < nkw; k++) {
		PyObject *n = PyTuple_GET_ITEM(kwnames, k);
		int j = 0;
		while (j < A_N && h->names[j] != n) /* a call's names are interned too, mostly */
			j++;
		if (j == A_N)
			for (j = 0; j < A_N && PyUnicode_Compare(n, h->names[j]) != 0; j++)
				;
		if (j == A_N || a[j] != NULL)
			return 1;
		a[j] = args[nargs + k];
	}
	for (int i = 0; i < A_N; i++)
		if (a[i] == NULL)
			a[i] = i == A_NO_ENV || i == A_EXPLAIN || i == A_VIEW ? Py_False : Py_None;
	return 0;
}

/* The prepared (request, address, exprs) of the call bound in a (a new
 * reference), or NULL, no exception set, when get() must answer. */
/* Whether v (an argument) is of a type whose value an identity fixes:
 * None, bool, int, float, str, bytes, or a tuple or list (its items then
 * compared one by one) of str or bytes. */
static int memo_fixed(PyObject *v, int seq)
{
	if (v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
	    PyUnicode_CheckExact(v) || PyBytes_CheckExact(v))
		return 1;
	if (!PyTuple_CheckExact(v) && !(seq && PyList_CheckExact(v)))
		return 0;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(v); i++) {
		PyObject *x = PySequence_Fast_GET_ITEM(v, i);
		if (!PyUnicode_CheckExact(x) && !PyBytes_CheckExact(x))
			return 0;
	}
	return 1;
}

/* Whether the call bound in a is the last one again (see the top). */
static int memo_same(Hitter *h, PyObject **a)
{
	if (h->last_prep == NULL)
		return 0;
	for (Py_ssize_t i = 0; i < N_KEY; i++) {
		PyObject *v = a[key_items[i].arg], *was = PyTuple_GET_ITEM(h->last_key, i);
		if (v == h->last_a[key_items[i].arg] && !PyList_CheckExact(v))
			continue;
		if (!key_items[i].seq || !PyList_CheckExact(v))
			return 0;
		Py_ssize_t n = PyList_GET_SIZE(v);
		if (n != (was == Py_None ? 0 : PyTuple_GET_SIZE(was)))
			return 0;
		for (Py_ssize_t k = 0; k < n; k++)
			if (PyList_GET_ITEM(v, k) != PyTuple_GET_ITEM(was, k))
				return 0;
	}
	return 1;
}

/* Keeps the call bound in a, its key and prep as the last call, when
 * memo_same can recognize it; else forgets the last call. */
static void memo_keep(Hitter *h, PyObject **a, PyObject *key, PyObject *prep)
{
	memo_clear(h);
	for (Py_ssize_t i = 0; i < N_KEY; i++)
		if (!memo_fixed(a[key_items[i].arg], key_items[i].seq))
			return;
	for (Py_ssize_t i = 0; i < N_KEY; i++) {
		Py_INCREF(a[key_items[i].arg]);
		h->last_a[key_items[i].arg] = a[key_items[i].arg];
	}
	Py_INCREF(key);
	h->last_key = key;
	Py_INCREF(prep);
	h->last_prep = prep;
}

static PyObject *prepared(Hitter *h, PyObject **a)
{
	int t = a[A_HEADERS] == Py_None ? 0 : PyObject_IsTrue(a[A_HEADERS]);
	if (t != 0) /* headers are never prepared; an error is get()'s to raise */
		goto slow;
	if (memo_same(h, a)) {
		Py_INCREF(h->last_prep);
		return h->last_prep;
	}
	PyObject *key = PyTuple_New(N_KEY);
	if (key == NULL)
		goto slow;
	for (Py_ssize_t i = 0; i < N_KEY; i++) {
		PyObject *v = a[key_items[i].arg];
		if (key_items[i].seq && v != Py_None) {
			if (!PyList_CheckExact(v) && !PyTuple_CheckExact(v)) {
				Py_DECREF(key);
				goto slow;
			}
			v = PySequence_Size(v) > 0 ? PySequence_Tuple(v) : (Py_INCREF(Py_None), Py_None);
			if (v == NULL) {
				Py_DECREF(key);
				goto slow;
			}
		} else {
			Py_INCREF(v);
		}
		PyTuple_SET_ITEM(key, i, v);
	}
	PyObject *prep = PyDict_GetItemWithError(h->prepared, key); /* borrowed */
	if (prep != NULL && PyTuple_Check(prep) && PyTuple_GET_SIZE(prep) >= 3) {
		memo_keep(h, a, key, prep);
		Py_DECREF(key);
		Py_INCREF(prep);
		return prep;
	}
	Py_DECREF(key);
slow:
	PyErr_Clear();
	return NULL;
}

/* Whether h's handle was bound in this process (no fork since). */
static int same_process(Hitter *h)
{
	PyObject *now = PyList_GET_ITEM(h->forks, 0);
	if (h->stamp == NULL)
		return 0;
	int same = now == h->stamp ? 1 : PyObject_RichCompareBool(now, h->stamp, Py_EQ);
	if (same < 0)
		PyErr_Clear();
	return same > 0;
}

/* The Client's exception for the failure (code, error, log) of kjit_get on
 * handle c, set; returns NULL. */
static PyObject *raise_failure(Hitter *h, PyObject *client, kjit_client *c, PyObject *failure)
{
	PyObject *hv = PyLong_FromVoidPtr(c);
	PyObject *exc = hv ? PyObject_CallMethodObjArgs(client, h->s_failure, hv, PyTuple_GET_ITEM(failure, 0),
							PyTuple_GET_ITEM(failure, 1), PyTuple_GET_ITEM(failure, 2), NULL)
			   : NULL;
	Py_XDECREF(hv);
	Py_DECREF(failure);
	if (exc != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* kj__hit_fetch of prep on the client's handle, under its lock (the
 * Hitter's; the GIL is released while it waits).  1 with *out set (NULL:
 * an exception), or 0 when get() must answer: no handle bound (not open
 * yet, closed) or bound before a fork. */
static int answer(Hitter *h, PyObject *client, PyObject *prep, PyObject **a, PyObject **out)
{
	const kjit_request *req = PyLong_AsVoidPtr(PyTuple_GET_ITEM(prep, 1));
	int view = req ? PyObject_IsTrue(a[A_VIEW]) : -1;
	if (view < 0) {
		PyErr_Clear(); /* get() raises it again */
		return 0;
	}
	if (h->handle == NULL || !same_process(h))
		return 0;
	if (kj__hit_lock(h) < 0) { /* a signal's exception while waiting */
		*out = NULL;
		return 1;
	}
	kjit_client *c = h->handle; /* again, under the lock: a close may have come first */
	if (c != NULL) {
		*out = kj__hit_fetch(h, c, req, a[A_BACKEND], PyTuple_GET_ITEM(prep, 2), view);
		if (*out != NULL && PyTuple_CheckExact(*out))
			*out = raise_failure(h, client, c, *out);
	}
	kj__hit_unlock(h);
	return c != NULL;
}

/* A Client's get in C: the Python get it stands for, and the call. */
typedef struct {
	PyObject_HEAD
	vectorcallfunc vectorcall;
	PyObject *pyget;    /* the Python get */
	PyObject *s_hitter; /* "_hitter" */
} Get;

/* Get(client, *args, **kw): answered by client's Hitter when it has one
 * and takes the call, else by the Python get. */
static PyObject *get_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	Get *g = (Get *)self;
	Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
	if (nargs >= 1) {
		PyObject *client = args[0];
		PyObject *h = PyObject_GetAttr(client, g->s_hitter);
		if (h != NULL && Py_TYPE(h) == &kj__hitter_type && ((Hitter *)h)->prepared != NULL) {
			PyObject *a[A_N], *out = NULL;
			PyObject *prep = bind((Hitter *)h, args + 1, nargs - 1, kwnames, a) == 0 ? prepared((Hitter *)h, a) : NULL;
			int taken = prep != NULL && answer((Hitter *)h, client, prep, a, &out);
			Py_XDECREF(prep);
			Py_DECREF(h);
			if (taken)
				return out;
		} else {
			Py_XDECREF(h);
			PyErr_Clear();
		}
	}
	return PyObject_Vectorcall(g->pyget, args, nargsf, kwnames);
}

static PyObject *get_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
	PyObject *pyget;
	if (!PyArg_ParseTuple(args, "O:Get", &pyget))
		return NULL;
	if (!PyCallable_Check(pyget)) {
		PyErr_SetString(PyExc_TypeError, "kjit._hit.Get: the Python get must be callable");
		return NULL;
	}
	Get *g = (Get *)t->tp_alloc(t, 0);
	if (g == NULL)
		return NULL;
	g->vectorcall = get_vectorcall;
	Py_INCREF(pyget);
	g->pyget = pyget;
	if ((g->s_hitter = PyUnicode_InternFromString("_hitter")) == NULL) {
		Py_DECREF(g);
		return NULL;
	}
	return (PyObject *)g;
}

static void get_dealloc(PyObject *self)
{
	Get *g = (Get *)self;
	Py_XDECREF(g->pyget);
	Py_XDECREF(g->s_hitter);
	Py_TYPE(self)->tp_free(self);
}

/* On the class: the Python get (its name, signature and docstring); on a
 * Client: a method calling this Get with the Client first. */
static PyObject *get_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
	if (obj == NULL || obj == Py_None) {
		Py_INCREF(((Get *)self)->pyget);
		return ((Get *)self)->pyget;
	}
	return PyMethod_New(self, obj);
}

static PyObject *get_wrapped(PyObject *self, void *unused)
{
	Py_INCREF(((Get *)self)->pyget);
	return ((Get *)self)->pyget;
}

static PyGetSetDef get_getset[] = {
	{ "__wrapped__", get_wrapped, NULL, "The Python get.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL _Py_TPFLAGS_HAVE_VECTORCALL /* 3.8 */
#endif

PyTypeObject kj__get_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "kjit._hit.Get",
	.tp_basicsize = sizeof(Get),
	.tp_dealloc = get_dealloc,
	.tp_vectorcall_offset = offsetof(Get, vectorcall),
	.tp_call = PyVectorcall_Call,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
	.tp_doc = "Get(pyget): kjit.Client.get answered in C for a Client with a Hitter, else by pyget.",
	.tp_getset = get_getset,
	.tp_descr_get = get_descr_get,
	.tp_new = get_new,
};
