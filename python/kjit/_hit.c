/* _hit.c: kjit._hit, the CPython extension under kjit.Client.get's hit
 * path (issue 35).  It does what the ctypes path of kjit/client.py does,
 * less ctypes' per-call set-up: one kjit_get on a request that
 * kjit/client.py built and keeps (passed as its address), the GIL released
 * meanwhile, then the kjit.Object made here.  Object.data is either a
 * bytes (made here and handed to libkjit's kj__get_into, client/getinto.h,
 * which copies the memo's, the table's or the reply's bytes straight into
 * it: one copy, as kjit_get's own; with a libkjit without that entry, a
 * copy of kjit_get's result, freed at once) or,
 * where the caller asks (get(..., view=True)), a read-only memoryview over
 * a Result that owns the kjit_result and frees it when the last view of it
 * is released or collected: no copy at all.
 *
 * libkjit is not linked.  A Hitter is given the addresses of kjit_get,
 * kjit_result_free and kj__get_into in the library kjit._lib loaded
 * through ctypes, so both paths use one library, one handle and one
 * process memo, and the extension needs no soname or path of its own;
 * include/kjit.h's structs (which only grow) and kj__get_into's type
 * (restated in _hit.h) are all it shares with libkjit.
 *
 * Ownership.  A Hitter (one per kjit.Client, called under the Client's
 * lock) holds kjit.Object's type, the member descriptors of its nine slots
 * (checked once: an Object grown a slot is refused, not half-filled), and
 * the last key, target and version strings it made, reused while equal (a
 * repeated hit allocates no string), and the bytes objects it returned,
 * by the id of the answer they were copied from (_hit.h's KEPT_SLOTS:
 * libkjit's kj__get_into_kept then copies nothing for a repeat of that
 * answer, and the same bytes are returned again).  A Result holds a reference to its
 * Hitter (the free function; the count of live Results, `live`) and its
 * kjit_result.  While a memoryview exports its buffer it cannot be
 * released (BufferError); once released it exports nothing (ValueError).
 * The strings are decoded as client.py's ctypes path decodes them (strict
 * UTF-8, the log and explain with errors="replace"), so both paths give
 * the same results and the same errors.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_hit.h"

static const char *const field_names[F_N] = {
	"data", "status", "key", "target", "version", "log", "backend", "lowered_names", "explain",
};

/* A kjit_result exporting its object as a read-only buffer. */
typedef struct {
	PyObject_HEAD
	Hitter *owner; /* a reference: its free function and live count */
	kjit_result res;
	Py_ssize_t exports; /* buffers handed out and not released */
	int freed;
} Result;

static PyTypeObject ResultType;

/* ---- Result: a kjit_result exporting its object as a read-only buffer ---- */

static void result_free(Result *r)
{
	if (!r->freed) {
		r->owner->free(&r->res);
		r->freed = 1;
		r->owner->live--;
	}
}

/* A Result owning a zeroed kjit_result, counted live in h; NULL with an
 * exception set when out of memory. */
static Result *result_new(Hitter *h)
{
	Result *r = PyObject_New(Result, &ResultType);
	if (r == NULL)
		return NULL;
	Py_INCREF(h);
	r->owner = h;
	memset(&r->res, 0, sizeof r->res);
	r->exports = 0;
	r->freed = 0;
	h->live++;
	return r;
}

static void result_dealloc(PyObject *self)
{
	Result *r = (Result *)self;
	result_free(r);
	Py_DECREF(r->owner);
	PyObject_Free(self);
}

static int result_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	Result *r = (Result *)self;
	if (r->freed) {
		PyErr_SetString(PyExc_ValueError, "this kjit result was released");
		view->obj = NULL;
		return -1;
	}
	void *data = r->res.size ? (void *)r->res.data : (void *)"";
	if (PyBuffer_FillInfo(view, self, data, (Py_ssize_t)r->res.size, 1, flags) < 0)
		return -1;
	r->exports++;
	return 0;
}

static void result_releasebuffer(PyObject *self, Py_buffer *view)
{
	((Result *)self)->exports--;
}

static PyObject *result_release(PyObject *self, PyObject *unused)
{
	Result *r = (Result *)self;
	if (r->exports > 0) {
		PyErr_Format(PyExc_BufferError, "this kjit result has %zd open memoryview(s); release them first",
			     r->exports);
		return NULL;
	}
	result_free(r);
	Py_RETURN_NONE;
}

static PyObject *result_released(PyObject *self, void *unused)
{
	return PyBool_FromLong(((Result *)self)->freed);
}

static Py_ssize_t result_len(PyObject *self)
{
	Result *r = (Result *)self;
	return r->freed ? 0 : (Py_ssize_t)r->res.size;
}

static PyMethodDef result_methods[] = {
	{ "release", result_release, METH_NOARGS,
	  "Frees the kjit_result now (BufferError while a memoryview of it is open); idempotent." },
	{ NULL, NULL, 0, NULL },
};
static PyGetSetDef result_getset[] = {
	{ "released", result_released, NULL, "True once the kjit_result is freed.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};
static PyBufferProcs result_buffer = { result_getbuffer, result_releasebuffer };
static PySequenceMethods result_sequence = { .sq_length = result_len };

/* ---- Hitter ---- */

/* Checks that type is a plain class whose instances hold exactly the
 * slots of field_names, and keeps their member descriptors. */
static int hitter_take_type(Hitter *h, PyObject *type)
{
	if (!PyType_Check(type) || ((PyTypeObject *)type)->tp_new != PyBaseObject_Type.tp_new ||
	    ((PyTypeObject *)type)->tp_dictoffset != 0) {
		PyErr_SetString(PyExc_TypeError, "kjit._hit.Hitter: object_type must be a class of __slots__ only");
		return -1;
	}
	PyObject *slots = PyObject_GetAttrString(type, "__slots__");
	if (slots == NULL)
		return -1;
	Py_ssize_t n = PyObject_Length(slots);
	Py_DECREF(slots);
	if (n != F_N) {
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_TypeError, "kjit._hit.Hitter: object_type has %zd slots, this module fills %d",
				     n, F_N);
		return -1;
	}
	for (int i = 0; i < F_N; i++) {
		PyObject *d = PyObject_GetAttrString(type, field_names[i]);
		if (d == NULL)
			return -1;
		if (Py_TYPE(d) != &PyMemberDescr_Type || Py_TYPE(d)->tp_descr_set == NULL) {
			Py_DECREF(d);
			PyErr_Format(PyExc_TypeError, "kjit._hit.Hitter: object_type.%s is not a slot", field_names[i]);
			return -1;
		}
		h->field[i] = d;
	}
	Py_INCREF(type);
	h->type = (PyTypeObject *)type;
	return 0;
}

static PyObject *hitter_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "get",   "free",     "object_type", "statuses", "prepared",
				  "forks", "get_into", "get_kept",    NULL };
	unsigned long long get_at, free_at, into_at = 0, kept_at = 0;
	PyObject *type, *statuses, *prepared = NULL, *forks = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "KKOO!|$O!O!KK:Hitter", kwlist, &get_at, &free_at, &type,
					 &PyDict_Type, &statuses, &PyDict_Type, &prepared, &PyList_Type, &forks,
					 &into_at, &kept_at))
		return NULL;
	if ((prepared == NULL) != (forks == NULL)) {
		PyErr_SetString(PyExc_TypeError, "kjit._hit.Hitter: prepared and forks go together");
		return NULL;
	}
	if (get_at == 0 || free_at == 0) {
		PyErr_SetString(PyExc_ValueError, "kjit._hit.Hitter: kjit_get and kjit_result_free must not be NULL");
		return NULL;
	}
	Hitter *h = (Hitter *)t->tp_alloc(t, 0); /* zeroed */
	if (h == NULL)
		return NULL;
	if ((h->mutex = PyThread_allocate_lock()) == NULL) {
		PyErr_NoMemory();
		goto fail;
	}
	h->get = (kj__get_fn *)(uintptr_t)get_at;
	h->free = (kj__free_fn *)(uintptr_t)free_at;
	h->get_into = (kj__hit_into_fn *)(uintptr_t)into_at;
	h->get_kept = into_at ? (kj__hit_kept_fn *)(uintptr_t)kept_at : NULL;
	if (hitter_take_type(h, type) < 0)
		goto fail;
	for (int s = 1; s < N_STATUS; s++) {
		PyObject *k = PyLong_FromLong(s);
		PyObject *v = k ? PyDict_GetItemWithError(statuses, k) : NULL;
		Py_XDECREF(k);
		if (v == NULL || !PyUnicode_Check(v)) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_TypeError, "kjit._hit.Hitter: statuses[%d] must be a str", s);
			goto fail;
		}
		Py_INCREF(v);
		h->status[s] = v;
	}
	if (prepared != NULL && kj__hit_call_init(h, prepared, forks) < 0)
		goto fail;
	return (PyObject *)h;
fail:
	Py_DECREF(h);
	return NULL;
}

static void hitter_dealloc(PyObject *self)
{
	Hitter *h = (Hitter *)self;
	kj__hit_kept_clear(h);
	Py_XDECREF(h->type);
	for (int i = 0; i < F_N; i++)
		Py_XDECREF(h->field[i]);
	for (int s = 0; s < N_STATUS; s++)
		Py_XDECREF(h->status[s]);
	Py_XDECREF(h->key);
	Py_XDECREF(h->target);
	Py_XDECREF(h->version);
	kj__hit_call_clear(h);
	if (h->mutex != NULL) {
		if (h->locked)
			PyThread_release_lock(h->mutex);
		PyThread_free_lock(h->mutex);
	}
	Py_XDECREF(h->stamp);
	Py_TYPE(self)->tp_free(self);
}

/* s (NUL-terminated; NULL reads as "") as a str, strict UTF-8: the cached
 * *last when it holds the same text, else a new one that replaces it. */
static PyObject *str_cached(PyObject **last, const char *s)
{
	if (s == NULL)
		s = "";
	size_t n = strlen(s);
	if (*last != NULL) {
		Py_ssize_t ln;
		const char *u = PyUnicode_AsUTF8AndSize(*last, &ln);
		if (u == NULL)
			return NULL;
		if ((size_t)ln == n && memcmp(u, s, n) == 0) {
			Py_INCREF(*last);
			return *last;
		}
	}
	PyObject *v = PyUnicode_FromStringAndSize(s, (Py_ssize_t)n);
	if (v == NULL)
		return NULL;
	Py_INCREF(v);
	Py_XSETREF(*last, v);
	return v;
}

/* s decoded as UTF-8 with errors="replace"; dflt (a new reference) for NULL. */
static PyObject *str_replace(const char *s, PyObject *dflt)
{
	if (s == NULL) {
		Py_INCREF(dflt);
		return dflt;
	}
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* {exprs[i]: lowered name of i, or None} for i < res->n_lowered_names. */
static PyObject *lowered_names(const kjit_result *res, PyObject *exprs)
{
	PyObject *d = PyDict_New();
	if (d == NULL || exprs == Py_None)
		return d;
	PyObject *seq = PySequence_Fast(exprs, "kjit._hit: exprs must be a sequence of str");
	if (seq == NULL)
		goto fail;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
	for (Py_ssize_t i = 0; i < n && (size_t)i < res->n_lowered_names; i++) {
		const char *ln = res->lowered_names[i];
		PyObject *v = ln ? PyUnicode_FromString(ln) : Py_None;
		if (v == NULL)
			goto fail_seq;
		if (v == Py_None)
			Py_INCREF(v);
		int rc = PyDict_SetItem(d, PySequence_Fast_GET_ITEM(seq, i), v);
		Py_DECREF(v);
		if (rc < 0)
			goto fail_seq;
	}
	Py_DECREF(seq);
	return d;
fail_seq:
	Py_DECREF(seq);
fail:
	Py_DECREF(d);
	return NULL;
}

/* The value of slot i of the Object of a successful result (a new
 * reference), or NULL with an exception set. */
static PyObject *slot_value(Hitter *h, int i, const kjit_result *res, PyObject *backend, PyObject *exprs)
{
	switch (i) {
	case F_STATUS:
		if (res->status > 0 && res->status < N_STATUS) {
			Py_INCREF(h->status[res->status]);
			return h->status[res->status];
		}
		return PyUnicode_FromFormat("%d", res->status);
	case F_KEY:
		return str_cached(&h->key, res->key);
	case F_TARGET:
		return str_cached(&h->target, res->target);
	case F_VERSION:
		return str_cached(&h->version, res->runtime_version);
	case F_LOG:
		return res->log ? str_replace(res->log, Py_None) : PyUnicode_FromStringAndSize("", 0);
	case F_BACKEND:
		Py_INCREF(backend);
		return backend;
	case F_LOWERED:
		return lowered_names(res, exprs);
	case F_EXPLAIN:
		return str_replace(res->explain, Py_None);
	}
	PyErr_SetString(PyExc_SystemError, "kjit._hit: no such slot");
	return NULL;
}

/* The kjit.Object of a successful result, each slot set through its
 * descriptor as __init__ would.  data: a new reference to what goes in
 * Object.data (stolen; NULL: an exception is set). */
static PyObject *object_of(Hitter *h, const kjit_result *res, PyObject *data, PyObject *backend, PyObject *exprs)
{
	if (data == NULL)
		return NULL;
	PyObject *o = h->type->tp_alloc(h->type, 0);
	PyObject *v = data;
	for (int i = F_DATA; o != NULL && i < F_N; i++) {
		if (i != F_DATA)
			v = slot_value(h, i, res, backend, exprs);
		if (v == NULL || Py_TYPE(h->field[i])->tp_descr_set(h->field[i], o, v) < 0)
			Py_CLEAR(o);
		Py_XDECREF(v);
		v = NULL;
	}
	Py_XDECREF(v); /* data, when the allocation failed */
	return o;
}

/* (code, error bytes or None, log bytes or None) of a failed get. */
static PyObject *failure_of(int code, const kjit_result *res)
{
	return Py_BuildValue("(iyy)", code, res->error, res->log);
}

PyObject *kj__hit_fetch(Hitter *h, kjit_client *c, const kjit_request *req, PyObject *backend, PyObject *exprs,
			int view)
{
	Result *r = NULL;
	kjit_result local, *res = &local;
	memset(&local, 0, sizeof local);
	if (view) {
		if ((r = result_new(h)) == NULL)
			return NULL;
		res = &r->res;
	}
	int code;
	PyObject *data = NULL, *out;
	if (view) {
		Py_BEGIN_ALLOW_THREADS
		code = h->get(c, req, res);
		Py_END_ALLOW_THREADS
	} else {
		code = kj__hit_fetch_bytes(h, c, req, res, &data);
	}
	if (code < 0)
		out = failure_of(code, res);
	else if (view)
		out = object_of(h, res, PyMemoryView_FromObject((PyObject *)r), backend, exprs);
	else
		out = object_of(h, res, data, backend, exprs);
	if (view)
		Py_DECREF(r); /* the memoryview holds it now, or it is freed here */
	else
		h->free(&local);
	return out;
}

/* Hitter.get(client, request, backend, exprs, view): kj__hit_fetch of the
 * kjit_request at address request on the kjit_client at address client
 * (both kept alive by the caller, which holds the client's lock). */
static PyObject *hitter_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs != 5) {
		PyErr_Format(PyExc_TypeError, "Hitter.get takes 5 arguments (%zd given)", nargs);
		return NULL;
	}
	kjit_client *c = PyLong_AsVoidPtr(args[0]);
	const kjit_request *req = c ? PyLong_AsVoidPtr(args[1]) : NULL;
	if (c == NULL || req == NULL) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "Hitter.get: client and request must not be NULL");
		return NULL;
	}
	int view = PyObject_IsTrue(args[4]);
	if (view < 0)
		return NULL;
	return kj__hit_fetch((Hitter *)self, c, req, args[2], args[3], view);
}

int kj__hit_lock(Hitter *h)
{
	if (!PyThread_acquire_lock(h->mutex, NOWAIT_LOCK)) {
		PyLockStatus r;
		do { /* as threading.Lock: a signal's handler runs while waiting */
			Py_BEGIN_ALLOW_THREADS
			r = PyThread_acquire_lock_timed(h->mutex, -1, 1);
			Py_END_ALLOW_THREADS
			if (r == PY_LOCK_INTR && Py_MakePendingCalls() < 0)
				return -1;
		} while (r != PY_LOCK_ACQUIRED);
	}
	h->locked = 1;
	return 0;
}

void kj__hit_unlock(Hitter *h)
{
	h->locked = 0;
	PyThread_release_lock(h->mutex);
}

static PyObject *hitter_acquire(PyObject *self, PyObject *unused)
{
	if (kj__hit_lock((Hitter *)self) < 0)
		return NULL;
	Py_RETURN_TRUE;
}

static PyObject *hitter_release(PyObject *self, PyObject *unused)
{
	Hitter *h = (Hitter *)self;
	if (!h->locked) {
		PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
		return NULL;
	}
	kj__hit_unlock(h);
	Py_RETURN_NONE;
}

static PyObject *hitter_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	return hitter_release(self, NULL);
}

/* Hitter.bind(handle, stamp): the Client's open handle (an int) and the
 * fork counter's value, or bind(None, None) once it is closed. */
static PyObject *hitter_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	Hitter *h = (Hitter *)self;
	if (nargs != 2) {
		PyErr_Format(PyExc_TypeError, "Hitter.bind takes 2 arguments (%zd given)", nargs);
		return NULL;
	}
	kjit_client *c = args[0] == Py_None ? NULL : PyLong_AsVoidPtr(args[0]);
	if (c == NULL && PyErr_Occurred())
		return NULL;
	h->handle = c;
	kj__hit_kept_clear(h); /* a new handle numbers its memo's entries from 1 again */
	Py_INCREF(args[1]);
	Py_XSETREF(h->stamp, args[1]);
	Py_RETURN_NONE;
}

/* Hitter.renew(): in a child after fork, a new lock (the old one may be
 * held by a thread of the parent) and no handle. */
static PyObject *hitter_renew(PyObject *self, PyObject *unused)
{
	Hitter *h = (Hitter *)self;
	PyThread_type_lock m = PyThread_allocate_lock();
	if (m == NULL)
		return PyErr_NoMemory();
	PyThread_free_lock(h->mutex); /* no thread of this process waits on it */
	h->mutex = m;
	h->locked = 0;
	h->handle = NULL;
	kj__hit_kept_clear(h);
	Py_RETURN_NONE;
}

static PyObject *hitter_live(PyObject *self, void *unused)
{
	return PyLong_FromSsize_t(((Hitter *)self)->live);
}

static PyMethodDef hitter_methods[] = {
	{ "get", (PyCFunction)(void (*)(void))hitter_get, METH_FASTCALL,
	  "get(client, request, backend, exprs, view): a kjit.Object, or (code, error, log) on failure." },
	{ "acquire", hitter_acquire, METH_NOARGS, "Takes the Client's lock (threading.Lock's acquire())." },
	{ "release", hitter_release, METH_NOARGS, "Releases it (RuntimeError when not held)." },
	{ "__enter__", hitter_acquire, METH_NOARGS, "acquire()" },
	{ "bind", (PyCFunction)(void (*)(void))hitter_bind, METH_FASTCALL,
	  "bind(handle, stamp): the Client's open handle and the fork counter then; bind(None, None) when closed." },
	{ "renew", hitter_renew, METH_NOARGS, "In a child after fork: a new lock, no handle." },
	{ "__exit__", (PyCFunction)(void (*)(void))hitter_exit, METH_FASTCALL, "release()" },
	{ NULL, NULL, 0, NULL },
};
static PyObject *hitter_into(PyObject *self, void *unused)
{
	return PyBool_FromLong(((Hitter *)self)->get_into != NULL);
}

static PyGetSetDef hitter_getset[] = {
	{ "live", hitter_live, NULL, "Results of this Hitter whose kjit_result is not freed yet.", NULL },
	{ "into", hitter_into, NULL, "True when get() makes its bytes through libkjit's kj__get_into (one copy).",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject kj__hitter_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "kjit._hit.Hitter",
	.tp_basicsize = sizeof(Hitter),
	.tp_dealloc = hitter_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Hitter(get, free, object_type, statuses, *, prepared, forks, get_into, get_kept): kjit_get for one\n"
		  "kjit.Client, and its lock.",
	.tp_methods = hitter_methods,
	.tp_getset = hitter_getset,
	.tp_new = hitter_new,
};

static PyTypeObject ResultType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "kjit._hit.Result",
	.tp_basicsize = sizeof(Result),
	.tp_dealloc = result_dealloc,
	.tp_as_sequence = &result_sequence,
	.tp_as_buffer = &result_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A kjit_result whose object is exported read-only; freed by release() or when collected.",
	.tp_methods = result_methods,
	.tp_getset = result_getset,
};

static struct PyModuleDef hit_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "kjit._hit",
	.m_doc = "kjit.Client.get's hit path in C (python/kjit/_hit.c).",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__hit(void);
PyMODINIT_FUNC PyInit__hit(void)
{
	if (PyType_Ready(&kj__hitter_type) < 0 || PyType_Ready(&ResultType) < 0 || PyType_Ready(&kj__get_type) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&hit_module);
	if (m == NULL)
		return NULL;
	Py_INCREF(&kj__hitter_type);
	Py_INCREF(&ResultType);
	Py_INCREF(&kj__get_type);
	if (PyModule_AddObject(m, "Hitter", (PyObject *)&kj__hitter_type) < 0 ||
	    PyModule_AddObject(m, "Result", (PyObject *)&ResultType) < 0 ||
	    PyModule_AddObject(m, "Get", (PyObject *)&kj__get_type) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
