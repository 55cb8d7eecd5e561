/* backend.h: what a store of the fleet tier implements (docs/remote.md,
 * "A second backend"): one struct kj__remote_backend, a row of the table in
 * remote/remote.c, chosen by the --remote URL's scheme.  Only remote/
 * includes it; the daemon sees remote/remote.h.
 *
 * A backend is a handle (void *: its own struct), a lookup, a publish and a
 * fleet lease, all on the daemon's libuv loop, no call blocking, every
 * callback called exactly once (remote.h's rules).  The value it stores is
 * the tier's KJO2 value (kj__remote_value_encode / _decode, remote-value.c):
 * a backend stores and fetches bytes under a key, verifies what it fetched
 * with kj__remote_value_decode before handing an object up, and counts in a
 * struct kj__remote_stats.  A backend without fleet leases answers every
 * lease KJ_LEASE_UNAVAILABLE (each node then compiles its own misses).
 */
#ifndef KJ_REMOTE_BACKEND_H
#define KJ_REMOTE_BACKEND_H

#include <stddef.h>
#include <uv.h>

#include "remote.h"

/* A backend's lookup callback: remote.h's kj__remote_lookup_cb with the
 * verified object itself (remote.c takes it apart for the daemon). */
typedef void (*kj__remote_be_lookup_cb)(void *arg, int code, const struct kj__remote_object *obj);
/* A backend's lease callback: lease (the backend's own, opaque here) is
 * non-NULL only with KJ_LEASE_OWNED, obj only with KJ_LEASE_PUBLISHED. */
typedef void (*kj__remote_be_lease_cb)(void *arg, int outcome, void *lease, const struct kj__remote_object *obj);

struct kj__remote_backend {
	const char *name;             /* "redis": logs */
	const char *schemes[4];       /* the URL schemes it takes ("redis", "unix"), NULL-ended */
	const char *usage;            /* the URL forms, for the error on an unknown scheme */
	/* Checks url (one of its schemes): 0 or KJIT_EINVAL with one line in err, never the password. */
	int (*check_url)(const char *url, char *err, size_t errlen);
	/* Opens a handle (connecting in the background): remote.h's kj__remote_new. */
	int (*open)(uv_loop_t *loop, const struct kj__remote_options *opt, void **out, char *err, size_t errlen);
	void (*close)(void *h);
	int (*is_up)(const void *h);
	const char *(*describe)(const void *h); /* the URL without its password */
	void (*lookup)(void *h, const char *key, kj__remote_be_lookup_cb cb, void *arg);
	/* Stores v under key; then releases lease (its own, or NULL) in every case. */
	int (*publish)(void *h, const char *key, const struct kj__remote_object *v, void *lease);
	void (*lease)(void *h, const char *key, kj__remote_be_lease_cb cb, void *arg);
	void (*lease_release)(void *lease); /* NULL: no-op */
	void (*note_forged)(void *h);
	void (*stats)(const void *h, struct kj__remote_stats *s);
};

/* The answer the daemon gets for the verified object o (remote-meta.c):
 * its metadata read, its entry list made, its texts apart, into a and
 * buffers of its own.  0 (a->texts_ok 0 when only the texts lacked
 * memory) or KJIT_ENOMEM (nothing to free).  kj__remote_answer_clear frees
 * what it made. */
int kj__remote_answer_make(const struct kj__remote_object *o, struct kj__remote_answer *a);
void kj__remote_answer_clear(struct kj__remote_answer *a);

/* The backends (one row each in remote/remote.c's table). */
extern const struct kj__remote_backend kj__remote_redis;

#endif /* KJ_REMOTE_BACKEND_H */
