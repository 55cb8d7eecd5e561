/* hittab.h: the shared read-only hit table (docs/hitpath.md).
 *
 * kjitd writes verified objects into a sealed memfd, indexed by the
 * SHA-256 of the exact GET body a client sends (the bytes daemon/miss/memo.c
 * keys on); clients map it PROT_READ and copy a hit out without waking the
 * daemon.  Each slot carries a seqlock; the header a global generation that
 * invalidates every entry at once.  The writer (kj__hittab_*) lives in the
 * daemon; the reader (kj__hittab_reader_*) in libkjit and never trusts the
 * mapping: every offset and length is bounds-checked, and a read that raced
 * a rewrite is retried, then given up (the caller asks the socket).
 *
 * Per-client hit counters (kj__hitctr_*) are a second, small memfd per
 * connection that the client maps read-write and the daemon sums.
 */
#ifndef KJ_HITTAB_H
#define KJ_HITTAB_H

#include <stddef.h>
#include <stdint.h>

#include "kj_limits.h"
#include "sha.h"

#define KJ_HITTAB_MAGIC 0x3142415454494a4bull /* "KJITTAB1" little-endian */
#define KJ_HITTAB_VERSION 1
#define KJ_HITCTR_MAGIC 0x3152544354494a4bull /* "KJITCTR1" */

/* Where a copied-out object goes (kj__hittab_lookup_into, the process
 * memo's kj__procmemo_get_into): alloc(ctx, size) returns a buffer of size
 * bytes that the object is copied into, or NULL (out of memory).  It may
 * be called more than once for one answer (a read that raced a rewrite is
 * copied again); the object is in the buffer of the last call.  The
 * buffers are the caller's: nothing here frees them.
 *
 * Bytes the caller kept (both may be NULL): an answer of the process
 * memo or of the table has an id, two words naming its bytes among all
 * the answers one client handle can give (a memo entry: {1, its number};
 * a table slot: {the reader's id << 32 | slot + 2, the slot's seq}, the
 * reader's id set by its owner, kj__hittab_reader_set_id).  Bytes under an
 * id never change, and no other bytes ever take it.  have(ctx, id, size)
 * returns nonzero when the caller still holds the bytes of id: nothing is
 * then copied and alloc is not called.  id (when set) receives the id of
 * the answer given, {0, 0} when it has none. */
struct kj__sink {
	void *(*alloc)(void *ctx, size_t size);
	void *ctx;
	int (*have)(void *ctx, const uint64_t id[2], size_t size);
	uint64_t *id;
};

/* The buffer an answer of size bytes whose id is id is copied into: a
 * malloc'd one (sink NULL: the caller's to free), the sink's, or none when
 * the sink's caller holds those bytes (*held set).  NULL with *held 0: out
 * of memory. */
void *kj__sink_take(const struct kj__sink *sink, const uint64_t id[2], size_t size, int *held);
/* Gives the sink (when it asks) the id of the answer given. */
void kj__sink_answered(const struct kj__sink *sink, const uint64_t id[2]);

/* What a reader copies out of a hit.  data is malloc'd (the caller frees
 * it) or, from kj__hittab_lookup_into, the sink's buffer (not freed here);
 * target and version are NUL-terminated. */
struct kj__hit {
	uint8_t *data;
	size_t size;
	uint8_t key[KJ_SHA256_LEN];
	char target[KJ_TARGET_MAX];
	char version[KJ_VERSION_STR_MAX];
	uint32_t slot;       /* for the hit counters */
};

/* ---- writer (kjitd) ---- */

struct kj__hittab;

/* Creates a table of at most bytes (KJ_HITTAB_BYTES_MIN..MAX) with n_slots
 * slots (a power of two, 2*KJ_HITTAB_PROBE..KJ_HITTAB_SLOTS_MAX): a memfd,
 * sized, mapped read-write here, then sealed against growing, shrinking and
 * any new writable mapping or write(2) (F_SEAL_FUTURE_WRITE), and against
 * new seals.  0, KJIT_EINVAL (sizes), KJIT_ENOMEM, or KJIT_EIO (a system
 * call failed, e.g. a kernel before 5.1 without F_SEAL_FUTURE_WRITE: run
 * without the fast path). */
int kj__hittab_create(struct kj__hittab **out, size_t bytes, uint32_t n_slots);
void kj__hittab_free(struct kj__hittab *w);

/* A new read-only descriptor of the table (opened O_RDONLY through
 * /proc/self/fd) to send to a client with SCM_RIGHTS; the caller closes it
 * after sending.  0 or KJIT_EIO. */
int kj__hittab_reader_fd(struct kj__hittab *w, int *fd);

/* Publishes an object verified by its digest, for the request whose GET
 * body has fingerprint fp: replaces an entry with the same fingerprint,
 * else takes a free slot of its probe window, else the oldest one there;
 * evicts the oldest objects until the bytes fit.  Never call it with bytes
 * that were not verified.  0, KJIT_EINVAL (a bad argument: empty object,
 * target or version not a token), KJIT_ETOOBIG (over 1/KJ_HITTAB_RECORD_SHARE
 * of the arena: served by the socket only). */
int kj__hittab_put(struct kj__hittab *w, const uint8_t fp[KJ_SHA256_LEN], const uint8_t key[KJ_SHA256_LEN],
		   const char *target, const char *version, const void *data, size_t size);

/* Drops the entry of fp; 1 if there was one, 0 if not. */
int kj__hittab_remove(struct kj__hittab *w, const uint8_t fp[KJ_SHA256_LEN]);
/* Drops every entry whose object has cache key key (removed, cleared or
 * found corrupt on disk); returns how many. */
int kj__hittab_remove_key(struct kj__hittab *w, const uint8_t key[KJ_SHA256_LEN]);
/* Bumps the global generation: every entry is invalid from now on (an
 * include file or a compiler changed, so a request's bytes may now mean
 * another key).  Returns the new generation. */
uint64_t kj__hittab_invalidate(struct kj__hittab *w);
/* The generation now (a put made later is current while it stays so). */
uint64_t kj__hittab_gen(const struct kj__hittab *w);

/* The cache key of the object in slot (for the hit counters): 1 and *key,
 * or 0 if the slot holds nothing current. */
int kj__hittab_slot_key(const struct kj__hittab *w, uint32_t slot, uint8_t key[KJ_SHA256_LEN]);

/* Entries and object bytes now live (for stats and tests). */
void kj__hittab_usage(const struct kj__hittab *w, size_t *entries, size_t *bytes);
uint32_t kj__hittab_slots(const struct kj__hittab *w);

/* ---- reader (libkjit) ---- */

struct kj__hittab_reader;

/* Maps the table behind fd PROT_READ (fd may be closed afterwards) and
 * checks its header; the geometry is copied then and never read again.
 * Refused (KJIT_EPROTO) unless the memfd is sealed against shrinking (a
 * shrunk file would SIGBUS us) and against writes, and its header is
 * consistent with its size.  0, KJIT_EPROTO, KJIT_ENOMEM or KJIT_EIO. */
int kj__hittab_reader_open(struct kj__hittab_reader **out, int fd);
void kj__hittab_reader_close(struct kj__hittab_reader *r);

/* Looks fp up and copies the hit into *hit.  0 on a hit; KJIT_ENOENT when
 * absent or of an old generation; KJIT_ETIMEDOUT when every try raced a
 * rewrite (ask the socket); KJIT_ECORRUPT when the entry is malformed
 * (ask the socket); KJIT_ENOMEM.  Never reads outside the mapping. */
int kj__hittab_lookup(struct kj__hittab_reader *r, const uint8_t fp[KJ_SHA256_LEN], struct kj__hit *hit);
/* kj__hittab_lookup copying the object into the sink's buffer instead of a
 * malloc'd one (hit->data then points there and is not to be freed).  The
 * copy is validated against the slot's sequence and the table's
 * generation after it is made, as ever: a rewrite under it asks the sink
 * again (or ends in KJIT_ETIMEDOUT); a NULL buffer gives KJIT_ENOMEM. */
int kj__hittab_lookup_into(struct kj__hittab_reader *r, const uint8_t fp[KJ_SHA256_LEN], struct kj__hit *hit,
			   const struct kj__sink *sink);
/* The generation the table has now (the process memo keys its entries on
 * it, so that an invalidation reaches them too). */
uint64_t kj__hittab_reader_gen(const struct kj__hittab_reader *r);
uint32_t kj__hittab_reader_slots(const struct kj__hittab_reader *r);
/* Names r among the readers one client handle opens (the first word of
 * its answers' ids, struct kj__sink): a handle gives each table it maps a
 * number of its own.  0 until set. */
void kj__hittab_reader_set_id(struct kj__hittab_reader *r, uint32_t id);

/* ---- per-client hit counters ---- */

struct kj__hitctr;

/* Daemon side: a counters memfd for one connection of a table of n_slots
 * slots, mapped read-write here and sealed against resizing; *fd is the
 * descriptor to send (the client maps it read-write).  0, KJIT_EINVAL,
 * KJIT_ENOMEM, KJIT_EIO. */
int kj__hitctr_create(struct kj__hitctr **out, uint32_t n_slots, int *fd);
/* Client side: maps fd read-write after checking its size and header
 * against the table's n_slots.  0, KJIT_EPROTO, KJIT_EIO, KJIT_ENOMEM. */
int kj__hitctr_map(struct kj__hitctr **out, int fd, uint32_t n_slots);
void kj__hitctr_free(struct kj__hitctr *c);

/* Client: counts one hit of slot of size bytes (atomic adds, no syscall). */
void kj__hitctr_count(struct kj__hitctr *c, uint32_t slot, size_t size);
/* Daemon: takes (and zeroes) what was counted since the last harvest:
 * totals into *hits and *bytes, and fn(arg, slot, n) for every slot hit n
 * times (to refresh its index entry).  The counts are the client's word:
 * they are only ever used as counts. */
void kj__hitctr_harvest(struct kj__hitctr *c, uint64_t *hits, uint64_t *bytes,
			void (*fn)(void *arg, uint32_t slot, uint32_t n), void *arg);

#endif /* KJ_HITTAB_H */
