/* _hit.h: what the three files of kjit._hit share (python/kjit/_hit.c, the
 * module, its Hitter and Result types and the making of a kjit.Object;
 * _hitbytes.c, the object's bytes and the bytes kept; _hitcall.c,
 * Client.get's arguments bound to a prepared request in C).
 * Private to the extension; include Python.h first. */
#ifndef KJIT_PY_HIT_H
#define KJIT_PY_HIT_H

#include "kjit.h"

/* libkjit's kj__get_into and its allocator (client/getinto.h, which this
 * restates so that the extension still builds from include/kjit.h alone,
 * as pip's wheel builds it; built in the tree, KJ_GETINTO_CHECK includes
 * that header and checks that both agree). */
typedef void *kj__hit_alloc_fn(void *ctx, size_t size);
typedef int kj__hit_into_fn(kjit_client *c, const kjit_request *req, kjit_result *res, kj__hit_alloc_fn *alloc,
			    void *ctx);
/* and kj__get_into_kept, with its have() */
typedef int kj__hit_have_fn(void *ctx, const uint64_t id[2], size_t size);
typedef int kj__hit_kept_fn(kjit_client *c, const kjit_request *req, kjit_result *res, kj__hit_alloc_fn *alloc,
			    kj__hit_have_fn *have, void *ctx, uint64_t id[2]);
#ifdef KJ_GETINTO_CHECK
#include "getinto.h"
_Static_assert(__builtin_types_compatible_p(kj__get_alloc_fn, kj__hit_alloc_fn) &&
		       __builtin_types_compatible_p(__typeof__(kj__get_into), kj__hit_into_fn) &&
		       __builtin_types_compatible_p(kj__get_have_fn, kj__hit_have_fn) &&
		       __builtin_types_compatible_p(__typeof__(kj__get_into_kept), kj__hit_kept_fn),
	       "python/kjit/_hit.h's kj__get_into or kj__get_into_kept differs from client/getinto.h's");
#endif

/* Bytes objects a Hitter keeps after returning them, by the id of the
 * answer they were copied from (kj__get_into_kept: a process memo entry or
 * a hit table slot at one seq): a repeat of that answer returns the same
 * bytes (immutable, so sharing them is safe) instead of a new copy.  Slot:
 * a hash of the id modulo KEPT_SLOTS; only objects up to KEPT_MAX bytes,
 * so at most 16 x 256 KiB are held.  Dropped whenever the handle changes
 * (Hitter.bind, renew), and used for the bound handle only: ids are a
 * handle's own. */
#define KEPT_SLOTS 16
#define KEPT_MAX (256 * 1024)

/* kjit.Object's slots, in the order of its __init__. */
enum { F_DATA, F_STATUS, F_KEY, F_TARGET, F_VERSION, F_LOG, F_BACKEND, F_LOWERED, F_EXPLAIN, F_N };
#define N_STATUS 5 /* enum kjit_status 1..4; [0] unused */

/* kjit.Client.get's parameters: the six positional ones first, then the
 * keyword-only ones; view last (it shapes the answer, not the request). */
enum {
	A_SOURCE, A_BACKEND, A_TARGET, A_OPTIONS, A_HEADERS, A_NAME, A_KERNEL, A_ENTRIES, A_RUNTIME_VERSION,
	A_NO_ENV, A_INCLUDE_DIRS, A_COMPILER, A_NAME_EXPRESSIONS, A_EXPLAIN, A_VIEW, A_N
};
#define A_POSITIONAL 6

typedef int kj__get_fn(kjit_client *c, const kjit_request *req, kjit_result *res);
typedef void kj__free_fn(kjit_result *res);

typedef struct {
	PyObject_HEAD
	kj__get_fn *get;
	kj__free_fn *free;
	/* libkjit's kj__get_into, or NULL (a libkjit without it): the bytes
	 * path then copies kjit_get's result once more */
	kj__hit_into_fn *get_into;
	/* libkjit's kj__get_into_kept, or NULL: then nothing is kept */
	kj__hit_kept_fn *get_kept;
	struct {
		uint64_t id[2];   /* the answer's id; {0, 0}: empty */
		PyObject *bytes;  /* its bytes, or NULL */
	} kept[KEPT_SLOTS];         /* of the bound handle only (handle, below) */
	Py_ssize_t last_size; /* of the last object kj__get_into made: the next bytes is made that size
			       * before the GIL is released, so that a repeat need not take it back */
	PyTypeObject *type;         /* kjit.Object */
	PyObject *field[F_N];       /* its slots' member descriptors */
	PyObject *status[N_STATUS]; /* "hit", "compiled", "joined", "remote hit" */
	PyObject *key, *target, *version; /* the last ones made, or NULL */
	Py_ssize_t live;            /* Results whose kjit_result is not freed yet */
	/* The Client's lock (its _lock is the Hitter): held while the handle
	 * is used; renewed in a child after fork (Hitter.renew). */
	PyThread_type_lock mutex;
	int locked;
	/* The Client's open handle as client.py binds it (Hitter.bind: on open,
	 * NULL on close and after fork), and the fork counter's value then:
	 * the C path takes a call only while both hold. */
	kjit_client *handle;
	PyObject *stamp;
	/* Client.get in C (_hitcall.c), set up when the Hitter was given the
	 * Client's prepared dict: */
	PyObject *prepared; /* the Client's dict of prepared requests (the same object) */
	PyObject *forks;    /* kjit.client's fork counter, a list of one int */
	PyObject *names[A_N];        /* get()'s parameter names, interned */
	PyObject *s_failure;        /* "_failure" */
	/* The last call answered: its arguments (those of the key), key and
	 * prepared request, so that a repeat finds it without a key. */
	PyObject *last_a[A_N];
	PyObject *last_key, *last_prep;
} Hitter;

/* kjit._hit.Hitter (_hit.c): one per kjit.Client, made by client.py. */
extern PyTypeObject kj__hitter_type;
/* kjit._hit.Get (_hitcall.c): Client.get's method descriptor. */
extern PyTypeObject kj__get_type;

/* The kjit.Object of kjit_get(c, req) (data a bytes, or with view a
 * memoryview over a Result owning the kjit_result), or on failure the
 * tuple (code, error bytes or None, log bytes or None); NULL with an
 * exception set.  The GIL is released during kjit_get. */
PyObject *kj__hit_fetch(Hitter *h, kjit_client *c, const kjit_request *req, PyObject *backend, PyObject *exprs,
			int view);

/* _hitbytes.c: kjit_get(c, req, res) into a bytes object, the GIL released
 * meanwhile: the code; on success *data is the object's bytes (a new
 * reference; NULL with an exception set when they cannot be made): the
 * bytes h keeps of that very answer, or a new bytes the object was copied
 * into once (kj__get_into), or a copy of kjit_get's result. */
int kj__hit_fetch_bytes(Hitter *h, kjit_client *c, const kjit_request *req, kjit_result *res, PyObject **data);
/* Drops the bytes h keeps (the handle changed, or h goes). */
void kj__hit_kept_clear(Hitter *h);

/* Takes h's lock, the GIL released while it waits: 0, or -1 with the
 * exception of a signal handler (KeyboardInterrupt) set. */
int kj__hit_lock(Hitter *h);
/* Releases it (held by the caller). */
void kj__hit_unlock(Hitter *h);

/* Sets Client.get in C up on h, given the Client's prepared dict and the
 * fork counter; 0, or -1 with an exception set. */
int kj__hit_call_init(Hitter *h, PyObject *prepared, PyObject *forks);
/* Drops what kj__hit_call_init took (h's dealloc). */
void kj__hit_call_clear(Hitter *h);

#endif
