/* remote.h: the fleet tier, a store of compiled objects shared by many
 * kjitd (docs/remote.md): the one interface of remote/ to the daemon (the
 * miss puts it on the request path, options.c reads its options, admin.c
 * its counters).  Which store is chosen by the --remote URL's scheme from
 * the backend table in remote/remote.c (remote/backend.h says what a
 * backend implements; today Redis, remote/redis/).  The value format (KJO2,
 * its MAC under the fleet secret) and the metadata text are the tier's
 * (remote-value.c): the daemon hands objects in and gets verified objects
 * out, and never sees the store's protocol.
 *
 * One handle per daemon, created only when --remote is given: a kjitd
 * without it makes no connection, starts no timer and allocates nothing
 * here.  Everything runs on the daemon's libuv loop; no call blocks, and
 * every callback is called exactly once, on the loop (possibly before the
 * call that asked returns: callers must not rely on the order).  The
 * remote is an optimisation only: when it is down, slow or answers
 * garbage, lookups are misses, publishes are dropped and leases are
 * "unavailable", and the daemon goes on locally.
 *
 * Request path (the miss):
 *   local memo/hot/disk miss -> kj__remote_lookup
 *     hit  -> publish locally (cache), serve
 *     miss -> kj__remote_lease
 *       OWNED       -> compile; local publish; kj__remote_publish(.., lease)
 *                      (or kj__remote_lease_release if the compile failed)
 *       PUBLISHED   -> another node compiled: serve the object given
 *       UNAVAILABLE -> compile as if there were no fleet; kj__remote_publish
 *                      (lease NULL)
 */
#ifndef KJ_REMOTE_H
#define KJ_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "sha.h"

struct kj__remote;
struct kj__remote_lease;

/* Checks a --remote URL: its scheme names a backend of the table
 * (redis://, unix:// today) and that backend accepts the rest.  0, or
 * KJIT_EINVAL with a one-line reason in err (an unknown scheme lists the
 * accepted ones); KJIT_ENOMEM. */
int kj__remote_url_check(const char *s, char *err, size_t errlen);

/* Reads the fleet secret (--remote-secret FILE) into *out (malloc'd, *len
 * bytes; trailing newlines are not part of it).  Refused, with one line in
 * err, when FILE is not a regular file, is owned by neither the effective
 * uid nor root, is readable or writable by its group or others, or holds
 * fewer than KJ_REMOTE_SECRET_MIN or more than KJ_REMOTE_SECRET_MAX bytes.
 * 0, KJIT_EINVAL, KJIT_ENOMEM.  The caller wipes and frees *out. */
int kj__remote_secret_load(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen);

enum kj__remote_mode { KJ_REMOTE_RW = 0, KJ_REMOTE_RO = 1 };

struct kj__remote_options {
	const char *url;            /* required */
	const char *prefix;         /* NULL: KJ_REMOTE_PREFIX ("kjit:v1:") */
	const char *daemon_id;      /* lease owner id; NULL: host:pid:random */
	int mode;                   /* enum kj__remote_mode */
	unsigned timeout_ms;        /* connect, handshake, lease ops, publish base; 0: KJ_REMOTE_TIMEOUT_MS */
	unsigned lookup_ms;         /* a GET's deadline; 0: KJ_REMOTE_LOOKUP_MS */
	unsigned lookup_ms_per_mib; /* added per MiB of the reply once its length is read; 0: KJ_REMOTE_LOOKUP_MS_PER_MIB */
	const uint8_t *secret;      /* fleet secret (copied); NULL: values are not authenticated */
	size_t secret_len;
	uint64_t ttl_ms;            /* 0: no expiry; else set on publish, refreshed on read */
	uint64_t max_object;        /* larger objects stay local; 0: KJ_REMOTE_OBJECT_MAX */
	unsigned lease_ms;          /* lease lifetime; 0: KJ_REMOTE_LEASE_MS */
	unsigned lease_poll_ms;     /* waiters' polling; 0: KJ_REMOTE_LEASE_POLL_MS */
	unsigned lease_wait_max_ms; /* a waiter gives up after; 0: KJ_REMOTE_LEASE_WAIT_MS */
	/* Where warnings go (one line, no newline); NULL: stderr. */
	void (*log)(void *arg, const char *line);
	void *log_arg;
};

/* Starts connecting (in the background) and returns the handle; the first
 * operations may miss until the connection is up.  0, KJIT_EINVAL (bad
 * URL or option; reason in err), KJIT_ENOMEM. */
int kj__remote_new(uv_loop_t *loop, const struct kj__remote_options *opt, struct kj__remote **out,
		   char *err, size_t errlen);
/* Disconnects: pending lookups are called with KJIT_ESHUTDOWN, waiting
 * leases with UNAVAILABLE; leases the caller still owns are freed with the
 * handle (publish or release them first: one freed here is not deleted in
 * the store and expires by itself, as a dead daemon's would).  The memory goes
 * once the loop has run the close callbacks.  NULL: no-op. */
void kj__remote_close(struct kj__remote *r);

/* 1 when the command connection is up and authenticated. */
int kj__remote_is_up(const struct kj__remote *r);
/* The URL without its password, for `kjit ping` / logs. */
const char *kj__remote_describe(const struct kj__remote *r);

/* A remote value's parts (remote-value.c).  As a lookup's answer: verified
 * (digest; and the MAC when the node has a secret), valid only during the
 * callback, every pointer into the value.  As what kj__remote_publish
 * stores: data, size, digest, log, recipe, meta, entries, lowered. */
struct kj__remote_object {
	const uint8_t *data;
	size_t size;
	char digest[KJ_SHA256_HEX_LEN + 1];   /* checked: SHA-256 of data (signed values: under the MAC) */
	uint8_t raw_digest[KJ_SHA256_LEN];    /* as stored in the value */
	const char *log;
	size_t log_len;
	const uint8_t *recipe;
	size_t recipe_len;
	const char *meta;        /* "backend=N\ntarget=T\nversion=V\n..." (KJO2); no NUL */
	size_t meta_len;
	const char *entries;     /* entry points, NUL-terminated names back to back (KJO2) */
	size_t entries_len;
	const char *lowered;     /* lowered names, "EXPR\tLOWERED\n" each (KJO2); no NUL */
	size_t lowered_len;
	int format;              /* 1: KJO1 (its log carries the lowered names), 2: KJO2 */
	int authenticated;       /* its MAC (GMAC, or an older HMAC) verified under this node's secret */
	/* no secret: its checksum trailer (KJC1) matched, the object was not
	 * hashed (raw_digest is the writer's word, as under a MAC) */
	int checksummed;
};

/* The value layouts (remote-value.c, docs/remote.md).  HMAC-SHA256 under
 * secret over u32 len(rkey) | rkey | v[0..n): 0 or KJIT_EINTERNAL. */
int kj__remote_hmac(const uint8_t *secret, size_t secret_len, const char *rkey, const uint8_t *v, size_t n,
		    uint8_t out[KJ_SHA256_LEN]);
/* The KJO2 value's size for o (with its 28-byte GMAC when signed_). */
size_t kj__remote_value_size(const struct kj__remote_object *o, int signed_);
/* Appends o as a KJO2 value for the store key rkey to b, with its GMAC when
 * secret is not NULL.  0, KJIT_EINVAL (a part over its cap, a bad digest),
 * KJIT_ENOMEM, KJIT_EINTERNAL. */
struct kj__buf;
int kj__remote_value_encode(const char *rkey, const struct kj__remote_object *o, const uint8_t *secret,
			    size_t secret_len, struct kj__buf *b);
/* Decodes the value v[0..n) read from rkey into o (pointers into v).  0;
 * KJIT_ECORRUPT (bad framing, a length over its cap, the object not
 * hashing to its digest: checked without a secret; with one the digest is
 * under the MAC and the object is not hashed again); KJIT_EDENIED when secret is given and v is not a
 * KJO2 value whose MAC (GMAC; HMAC, flags 0) verifies for rkey (forged: never served). */
int kj__remote_value_decode(const char *rkey, const uint8_t *v, size_t n, const uint8_t *secret, size_t secret_len,
			    struct kj__remote_object *o);
/* The _with calls: the same, through the algorithms a backend fetched once
 * (HMAC, AES-256-GCM) instead of looking them up at each use (NULL: look
 * them up, as the plain calls do).  algs_new: 0, KJIT_ENOMEM, or
 * KJIT_EINTERNAL (OpenSSL has no such provider; the caller goes on with
 * NULL).  The handle also holds AES-256-GCM contexts keyed once: the
 * public checksum's, and (algs_key: 0, KJIT_EINVAL if already keyed or no
 * secret, KJIT_ENOMEM, KJIT_EINTERNAL; without it the GMAC key is derived
 * per value, as before) the fleet secret's, used for calls given that same
 * secret; a call sets only its IV, so one thread at a time uses a handle
 * (the backend's: kjitd's loop); the bytes are those of the plain calls. */
struct kj__remote_algs;
int kj__remote_algs_new(struct kj__remote_algs **out);
int kj__remote_algs_key(struct kj__remote_algs *a, const uint8_t *secret, size_t secret_len);
void kj__remote_algs_free(struct kj__remote_algs *a);
int kj__remote_hmac_with(const struct kj__remote_algs *a, const uint8_t *secret, size_t secret_len, const char *rkey,
			 const uint8_t *v, size_t n, uint8_t out[KJ_SHA256_LEN]);
int kj__remote_value_encode_with(const struct kj__remote_algs *a, const char *rkey, const struct kj__remote_object *o,
				 const uint8_t *secret, size_t secret_len, struct kj__buf *b);
int kj__remote_value_decode_with(const struct kj__remote_algs *a, const char *rkey, const uint8_t *v, size_t n,
				 const uint8_t *secret, size_t secret_len, struct kj__remote_object *o);

/* What an object was compiled for (remote-meta.c): a value's metadata. */
struct kj__remote_meta {
	int backend;              /* enum kjit_backend */
	const char *target, *version;
	const char *ext, *compiler; /* informative; NULL: "" */
};
/* The metadata text a publish stores in v->meta for m: malloc'd, NULL: no
 * memory. */
char *kj__remote_meta_text(const struct kj__remote_meta *m);
/* o's log and lowered names ("EXPR\tLOWERED\n" lines) apart, each
 * malloc'd or NULL when empty (a KJO1 value's names are lines of its log).
 * 0, or KJIT_ENOMEM: *log is the whole log (or NULL), *lowered may be
 * NULL; the caller frees both either way. */
int kj__remote_texts(const struct kj__remote_object *o, char **log, char **lowered);

/* What a lookup, or a lease that found the value published, hands the
 * miss: the verified object and what the value says of it, taken apart by
 * the tier into the daemon's own terms (remote-meta.c), so the miss reads
 * no value format and calls back into remote/ for none of it.  Valid during
 * the callback only. */
struct kj__remote_answer {
	const struct kj__remote_object *obj; /* the verified value: data, size, digest */
	int judged;                  /* 1: a KJO2 value, judged by its metadata and entry list; 0: KJO1, served as is */
	int meta_ok;                 /* judged: its metadata's backend, target and version read into meta */
	struct kj__remote_meta meta; /* judged and meta_ok: what it was compiled for (ext, compiler NULL) */
	const char *entries;         /* judged: its entry list, "NAME\n" each (entrylist.h); "" for none */
	const char *log, *lowered;   /* its log and lowered names ("EXPR\tLOWERED\n" each) apart; NULL when empty */
	int texts_ok;                /* 0: no memory to take them apart (both NULL): serve it, do not cache it */
	char *meta_buf;              /* the tier's: what meta points into */
};

/* Called once: ans is a verified hit, or NULL for a miss (absent, corrupt,
 * truncated, forged, remote down or timed out, no memory to take it apart:
 * code says which: 0 absent, KJIT_ECORRUPT, KJIT_EDENIED (forged: counted
 * in forged), KJIT_ETIMEDOUT, KJIT_ECONNECT, KJIT_EPROTO, KJIT_ENOMEM). */
typedef void (*kj__remote_lookup_cb)(void *arg, int code, const struct kj__remote_answer *ans);
/* Looks key (64 hex digits, the cache key) up; refreshes its TTL (rw
 * mode, ttl set).  Counts hits, misses, corrupt, hit latency. */
void kj__remote_lookup(struct kj__remote *r, const char *key, kj__remote_lookup_cb cb, void *arg);

/* Fire and forget: stores v (a KJO2 value: object, digest, log, recipe,
 * meta, entries, lowered names; signed with the fleet secret when the node
 * has one) under key, with ttl_ms, then releases lease (if not NULL: only
 * if we still own it) and wakes the fleet's waiters on key.  Copies what
 * it needs before returning.  Dropped (counted) in ro mode, when down,
 * when the object is over max_object, or when
 * KJ_REMOTE_PUBLISH_QUEUE_BYTES are already unacknowledged.  Returns 0 if
 * queued, else the reason (KJIT_ETOOBIG, KJIT_ECONNECT, KJIT_EDENIED for
 * ro, KJIT_EBUSY queue full, KJIT_EINVAL).  The lease, if given, is
 * released and freed in every case. */
int kj__remote_publish(struct kj__remote *r, const char *key, const struct kj__remote_object *v,
		       struct kj__remote_lease *lease);
/* Counts a value that decoded but may not be served (entries or meta not
 * those asked for): remote_forged. */
void kj__remote_note_forged(struct kj__remote *r);

enum kj__lease_outcome {
	KJ_LEASE_OWNED = 1,      /* we compile; *lease is ours until publish/release */
	KJ_LEASE_PUBLISHED = 2,  /* another node published: obj is the verified object */
	KJ_LEASE_UNAVAILABLE = 3 /* ro, down, timed out, waited too long: compile alone */
};
/* Called once.  lease is non-NULL only with OWNED; ans only with PUBLISHED
 * (a value that cannot be taken apart, no memory: UNAVAILABLE). */
typedef void (*kj__remote_lease_cb)(void *arg, int outcome, struct kj__remote_lease *lease,
				    const struct kj__remote_answer *ans);
/* Fleet single-flight on key: SET lease NX PX; the owner's lease is renewed
 * every lease_ms/3 until publish or release; a waiter is woken by pub/sub
 * (or polls) and gets the object, or takes the lease over once a dead
 * owner's lease expires. */
void kj__remote_lease(struct kj__remote *r, const char *key, kj__remote_lease_cb cb, void *arg);
/* Gives the lease up without publishing (compile failed): deletes it if we
 * still own it, so a waiter takes over at once.  NULL: no-op. */
void kj__remote_lease_release(struct kj__remote_lease *l);

struct kj__remote_stats {
	uint64_t hits, misses, corrupt, forged;
	uint64_t publishes, publish_dropped;
	uint64_t errors, timeouts, outages, reconnects;
	uint64_t bytes_read, bytes_written;
	uint64_t lease_owned, lease_waits, lease_takeovers, lease_woken;
	uint64_t hit_us_total, hit_us_max;
	int up;
};
void kj__remote_stats(const struct kj__remote *r, struct kj__remote_stats *s);

#endif /* KJ_REMOTE_H */
