/* hittab.c: the shared read-only hit table, its writer (kjitd) and its
 * reader (libkjit); the per-client hit counters are in hitctr.c.  docs/hitpath.md
 * explains the layout, the seqlock and the memory ordering; in short:
 *
 *   [header 128 B][slots: n_slots x 64 B][arena: records, a circular log]
 *
 * A slot holds {seq, gen, off, len, fp[32]}; a record in the arena holds a
 * 64-byte header {magic, object length, target and version lengths, cache
 * key} then the target, the version and the object.  Only the writer
 * writes, with the seqlock of the slot around every change of it; a slot
 * is valid when its gen equals the header's.  Before arena bytes are
 * reused, every slot pointing at them is cleared (its seq moves on), so a
 * reader that copied from there sees its seq changed and throws the copy
 * away.  The writer keeps its own bookkeeping (which record each slot
 * owns, the order of records in the arena) in private memory: nothing it
 * decides depends on what a reader could see or a client could forge.
 *
 * The reader copies the geometry once at open, checks every offset and
 * length it reads against it before touching the bytes, and validates the
 * slot's seq and the header's generation after the copy.  The object bytes
 * are copied with memcpy while the writer may be rewriting them: such a
 * copy is always discarded (its seq changed); see docs/hitpath.md for why
 * this is the usual seqlock compromise with the C11 model.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hittab.h"
#include "kj_types.h"
#include "util.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define HDR_SIZE 128
#define SLOT_SIZE 64
#define REC_HDR_SIZE 64
#define REC_ALIGN 64
#define REC_MAGIC 0x4345524bu /* "KREC" */

/* The header, at offset 0.  gen sits on its own cache line. */
struct hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint64_t total_size;
	uint32_t n_slots;
	uint32_t slot_size;
	uint64_t slots_off;
	uint64_t arena_off;
	uint64_t arena_size;
	uint8_t pad0[8];
	_Atomic uint64_t gen;      /* offset 64: generation, >= 1 */
	uint8_t pad1[56];
};
_Static_assert(sizeof(struct hdr) == HDR_SIZE, "header layout");

struct slot {
	_Atomic uint64_t seq;      /* odd while the writer changes the slot */
	_Atomic uint64_t gen;      /* 0: empty */
	_Atomic uint64_t off;      /* record offset in the arena */
	_Atomic uint32_t len;      /* record length, REC_ALIGN multiple */
	_Atomic uint32_t pad;
	_Atomic uint64_t fp[4];    /* SHA-256 of the GET body */
};
_Static_assert(sizeof(struct slot) == SLOT_SIZE, "slot layout");

struct rec_hdr {
	uint32_t magic;
	uint32_t obj_len;
	uint16_t target_len;
	uint16_t version_len;
	uint32_t reserved;
	uint8_t key[KJ_SHA256_LEN];
	uint8_t pad[16];
};
_Static_assert(sizeof(struct rec_hdr) == REC_HDR_SIZE, "record layout");

/* ---- helpers shared by both sides ---- */

static uint32_t fp_index(const uint8_t fp[KJ_SHA256_LEN])
{
	return (uint32_t)fp[0] | (uint32_t)fp[1] << 8 | (uint32_t)fp[2] << 16 | (uint32_t)fp[3] << 24;
}

static uint64_t fp_word(const uint8_t *fp, int i)
{
	uint64_t w;
	memcpy(&w, fp + 8 * i, sizeof w);
	return w;
}

static int is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* 1 if s is a target (a token) or a version (a token or empty), as the
 * client's own checks and util.c's kj__token_ok define them. */
static int strings_ok(const char *target, const char *version)
{
	return kj__token_ok(target, KJ_TARGET_MAX) &&
	       (version[0] == '\0' || kj__token_ok(version, KJ_VERSION_STR_MAX));
}

static size_t rec_len_for(size_t tl, size_t vl, size_t size)
{
	return (REC_HDR_SIZE + tl + vl + size + REC_ALIGN - 1) & ~(size_t)(REC_ALIGN - 1);
}

/* ---- writer ---- */

/* A record of the arena, in the writer's private log. */
struct rec {
	uint64_t off;
	uint32_t len;
	int32_t slot;              /* the slot it is published in, or -1 (dead) */
	uint8_t key[KJ_SHA256_LEN];
};

struct kj__hittab {
	int fd;
	uint8_t *map;
	size_t size;
	struct hdr *h;
	struct slot *slots;
	uint8_t *arena;
	uint64_t arena_size;
	uint32_t n_slots;
	uint64_t gen;
	/* The log of records, oldest first: ids front..back-1, at id % cap. */
	struct rec *log;
	uint64_t cap, front, back;
	uint64_t head;             /* where the next record goes */
	uint64_t *slot_rec;        /* per slot: record id + 1, or 0 */
	size_t live, live_bytes;
};

static void seq_begin(struct slot *s)
{
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
	atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
	/* The odd seq is visible before any later store (slot or arena). */
	atomic_thread_fence(memory_order_release);
}

static void seq_end(struct slot *s)
{
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
	atomic_store_explicit(&s->seq, q + 1, memory_order_release);
}

/* Empties slot i (seqlock) and marks its record dead. */
static void slot_clear(struct kj__hittab *w, uint32_t i)
{
	struct slot *s = &w->slots[i];

	seq_begin(s);
	atomic_store_explicit(&s->gen, 0, memory_order_relaxed);
	seq_end(s);
	if (w->slot_rec[i]) {
		struct rec *r = &w->log[(w->slot_rec[i] - 1) % w->cap];
		r->slot = -1;
		w->live--;
		w->live_bytes -= r->len;
		w->slot_rec[i] = 0;
	}
}

static void evict_front(struct kj__hittab *w)
{
	struct rec *r = &w->log[w->front % w->cap];
	if (r->slot >= 0)
		slot_clear(w, (uint32_t)r->slot);
	w->front++;
}

/* Room for len bytes at w->head, evicting the oldest records in the way. */
static uint64_t arena_alloc(struct kj__hittab *w, uint64_t len)
{
	if (w->back - w->front == w->cap)
		evict_front(w);
	if (w->head + len > w->arena_size) {
		/* Wrap: records above head are the older lap; they go first. */
		while (w->front < w->back && w->log[w->front % w->cap].off >= w->head)
			evict_front(w);
		w->head = 0;
	}
	while (w->front < w->back) {
		const struct rec *r = &w->log[w->front % w->cap];
		if (!(r->off < w->head + len && w->head < r->off + r->len))
			break;
		evict_front(w);
	}
	uint64_t off = w->head;
	w->head += len;
	return off;
}

int kj__hittab_create(struct kj__hittab **out, size_t bytes, uint32_t n_slots)
{
	struct kj__hittab *w = NULL;
	int r = KJIT_EINVAL;

	*out = NULL;
	if (bytes < KJ_HITTAB_BYTES_MIN || bytes > KJ_HITTAB_BYTES_MAX || !is_pow2(n_slots) ||
	    n_slots < 2 * KJ_HITTAB_PROBE || n_slots > KJ_HITTAB_SLOTS_MAX ||
	    HDR_SIZE + (uint64_t)n_slots * SLOT_SIZE + bytes / 2 > bytes)
		return KJIT_EINVAL;
	r = KJIT_ENOMEM;
	if ((w = calloc(1, sizeof *w)) == NULL)
		goto out;
	w->fd = -1;
	w->map = MAP_FAILED;
	w->cap = 2 * (uint64_t)n_slots;
	if ((w->log = calloc(w->cap, sizeof *w->log)) == NULL ||
	    (w->slot_rec = calloc(n_slots, sizeof *w->slot_rec)) == NULL)
		goto out;
	r = KJIT_EIO;
	w->fd = memfd_create("kjit-hits", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (w->fd < 0 || ftruncate(w->fd, (off_t)bytes) < 0)
		goto out;
	/* The header and slots allocated now (1 MiB by default): a reader's
	 * probe of a slot never written would otherwise fault in a fresh,
	 * zeroed page of its own, ~30 us on a VM, on every miss of a new
	 * slot (issue 35); the arena is written before it is read. */
	if (fallocate(w->fd, 0, 0, (off_t)(HDR_SIZE + (uint64_t)n_slots * SLOT_SIZE)) < 0)
		goto out;
	w->size = bytes;
	w->map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
	if (w->map == MAP_FAILED)
		goto out;
	/* After mmap: F_SEAL_FUTURE_WRITE keeps this mapping writable and
	 * forbids every later writable one, write(2) and hole punching. */
	if (fcntl(w->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
		goto out;
	w->n_slots = n_slots;
	w->h = (struct hdr *)w->map;
	w->slots = (struct slot *)(w->map + HDR_SIZE);
	uint64_t arena_off = HDR_SIZE + (uint64_t)n_slots * SLOT_SIZE;
	w->arena = w->map + arena_off;
	w->arena_size = (bytes - arena_off) & ~(uint64_t)(REC_ALIGN - 1);
	w->gen = 1;
	w->h->version = KJ_HITTAB_VERSION;
	w->h->hdr_size = HDR_SIZE;
	w->h->total_size = bytes;
	w->h->n_slots = n_slots;
	w->h->slot_size = SLOT_SIZE;
	w->h->slots_off = HDR_SIZE;
	w->h->arena_off = arena_off;
	w->h->arena_size = w->arena_size;
	atomic_store_explicit(&w->h->gen, w->gen, memory_order_relaxed);
	/* No reader exists yet: the descriptor is sent only after this. */
	w->h->magic = KJ_HITTAB_MAGIC;
	*out = w;
	w = NULL;
	r = 0;
out:
	kj__hittab_free(w);
	return r;
}

void kj__hittab_free(struct kj__hittab *w)
{
	if (w == NULL)
		return;
	if (w->map != MAP_FAILED)
		munmap(w->map, w->size);
	if (w->fd >= 0)
		close(w->fd);
	free(w->log);
	free(w->slot_rec);
	free(w);
}

int kj__hittab_reader_fd(struct kj__hittab *w, int *fd)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/self/fd/%d", w->fd);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	return *fd < 0 ? KJIT_EIO : 0;
}

static int slot_has(const struct kj__hittab *w, uint32_t i, const uint8_t fp[KJ_SHA256_LEN])
{
	const struct slot *s = &w->slots[i];

	if (w->slot_rec[i] == 0)
		return 0;
	for (int k = 0; k < 4; k++)
		if (atomic_load_explicit(&s->fp[k], memory_order_relaxed) != fp_word(fp, k))
			return 0;
	return 1;
}

int kj__hittab_put(struct kj__hittab *w, const uint8_t fp[KJ_SHA256_LEN], const uint8_t key[KJ_SHA256_LEN],
		   const char *target, const char *version, const void *data, size_t size)
{
	if (w == NULL || fp == NULL || key == NULL || target == NULL || version == NULL || data == NULL ||
	    size == 0 || size > KJ_OBJECT_MAX)
		return KJIT_EINVAL;
	if (!strings_ok(target, version))
		return KJIT_EINVAL;
	size_t tl = strlen(target), vl = strlen(version);
	uint64_t len = rec_len_for(tl, vl, size);
	if (len > w->arena_size / KJ_HITTAB_RECORD_SHARE)
		return KJIT_ETOOBIG;

	/* The slot: this fingerprint's, else a free one, else the oldest. */
	uint32_t mask = w->n_slots - 1, base = fp_index(fp), pick = UINT32_MAX, oldest = UINT32_MAX;
	for (uint32_t k = 0; k < KJ_HITTAB_PROBE; k++) {
		uint32_t i = (base + k) & mask;
		if (slot_has(w, i, fp)) {
			slot_clear(w, i);
			pick = i;
			break;
		}
		if (w->slot_rec[i] == 0 && pick == UINT32_MAX)
			pick = i;
		if (w->slot_rec[i] && (oldest == UINT32_MAX || w->slot_rec[i] < w->slot_rec[oldest]))
			oldest = i;
	}
	if (pick == UINT32_MAX) {
		slot_clear(w, oldest);
		pick = oldest;
	}

	uint64_t off = arena_alloc(w, len);
	struct rec_hdr rh = { .magic = REC_MAGIC, .obj_len = (uint32_t)size,
			      .target_len = (uint16_t)tl, .version_len = (uint16_t)vl };
	memcpy(rh.key, key, sizeof rh.key);
	/* Slots cleared above have their seq moved on before these bytes. */
	atomic_thread_fence(memory_order_release);
	uint8_t *p = w->arena + off;
	memcpy(p, &rh, sizeof rh);
	memcpy(p + REC_HDR_SIZE, target, tl);
	memcpy(p + REC_HDR_SIZE + tl, version, vl);
	memcpy(p + REC_HDR_SIZE + tl + vl, data, size);

	struct slot *s = &w->slots[pick];
	seq_begin(s);
	for (int k = 0; k < 4; k++)
		atomic_store_explicit(&s->fp[k], fp_word(fp, k), memory_order_relaxed);
	atomic_store_explicit(&s->off, off, memory_order_relaxed);
	atomic_store_explicit(&s->len, (uint32_t)len, memory_order_relaxed);
	atomic_store_explicit(&s->gen, w->gen, memory_order_relaxed);
	seq_end(s);

	struct rec *r = &w->log[w->back % w->cap];
	r->off = off;
	r->len = (uint32_t)len;
	r->slot = (int32_t)pick;
	memcpy(r->key, key, sizeof r->key);
	w->slot_rec[pick] = ++w->back;  /* id + 1 of the record just added */
	w->live++;
	w->live_bytes += len;
	return 0;
}

int kj__hittab_remove(struct kj__hittab *w, const uint8_t fp[KJ_SHA256_LEN])
{
	uint32_t mask = w->n_slots - 1, base = fp_index(fp);

	for (uint32_t k = 0; k < KJ_HITTAB_PROBE; k++) {
		uint32_t i = (base + k) & mask;
		if (slot_has(w, i, fp)) {
			slot_clear(w, i);
			return 1;
		}
	}
	return 0;
}

int kj__hittab_remove_key(struct kj__hittab *w, const uint8_t key[KJ_SHA256_LEN])
{
	int n = 0;

	for (uint64_t id = w->front; id < w->back; id++) {
		struct rec *r = &w->log[id % w->cap];
		if (r->slot >= 0 && memcmp(r->key, key, sizeof r->key) == 0) {
			slot_clear(w, (uint32_t)r->slot);
			n++;
		}
	}
	return n;
}

uint64_t kj__hittab_invalidate(struct kj__hittab *w)
{
	w->gen++;
	atomic_store_explicit(&w->h->gen, w->gen, memory_order_release);
	/* Each live slot is cleared too, so that its seq moves on before its
	 * bytes are reused: a reader never depends on the generation alone. */
	for (uint32_t i = 0; i < w->n_slots; i++)
		if (w->slot_rec[i])
			slot_clear(w, i);
	return w->gen;
}

uint64_t kj__hittab_gen(const struct kj__hittab *w)
{
	return w->gen;
}

int kj__hittab_slot_key(const struct kj__hittab *w, uint32_t slot, uint8_t key[KJ_SHA256_LEN])
{
	if (slot >= w->n_slots || w->slot_rec[slot] == 0)
		return 0;
	memcpy(key, w->log[(w->slot_rec[slot] - 1) % w->cap].key, KJ_SHA256_LEN);
	return 1;
}

void kj__hittab_usage(const struct kj__hittab *w, size_t *entries, size_t *bytes)
{
	*entries = w->live;
	*bytes = w->live_bytes;
}

uint32_t kj__hittab_slots(const struct kj__hittab *w)
{
	return w->n_slots;
}

/* ---- reader ---- */

struct kj__hittab_reader {
	const uint8_t *map;
	size_t size;
	const struct hdr *h;
	const struct slot *slots;
	const uint8_t *arena;
	uint64_t arena_size;
	uint32_t n_slots;
	uint32_t id; /* kj__hittab_reader_set_id */
};

int kj__hittab_reader_open(struct kj__hittab_reader **out, int fd)
{
	struct kj__hittab_reader *r = NULL;
	struct stat st;
	struct hdr h;
	void *map = MAP_FAILED;
	int rc = KJIT_EIO;

	*out = NULL;
	if (fstat(fd, &st) < 0)
		goto out;
	rc = KJIT_EPROTO;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || !(seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
		goto out;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)HDR_SIZE || (uint64_t)st.st_size > KJ_HITTAB_BYTES_MAX)
		goto out;
	rc = KJIT_EIO;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	rc = KJIT_EPROTO;
	memcpy(&h, map, offsetof(struct hdr, gen));
	atomic_thread_fence(memory_order_acquire);
	uint64_t size = (uint64_t)st.st_size;
	if (h.magic != KJ_HITTAB_MAGIC || h.version != KJ_HITTAB_VERSION || h.hdr_size != HDR_SIZE ||
	    h.total_size != size || h.slot_size != SLOT_SIZE || !is_pow2(h.n_slots) ||
	    h.n_slots < 2 * KJ_HITTAB_PROBE || h.n_slots > KJ_HITTAB_SLOTS_MAX || h.slots_off < HDR_SIZE ||
	    h.slots_off % SLOT_SIZE || h.slots_off > size || (uint64_t)h.n_slots * SLOT_SIZE > size - h.slots_off ||
	    h.arena_off < h.slots_off + (uint64_t)h.n_slots * SLOT_SIZE || h.arena_off % REC_ALIGN ||
	    h.arena_off > size || h.arena_size < REC_ALIGN || h.arena_size > size - h.arena_off)
		goto out;
	rc = KJIT_ENOMEM;
	if ((r = calloc(1, sizeof *r)) == NULL)
		goto out;
	r->map = map;
	r->size = (size_t)size;
	r->h = map;
	r->slots = (const struct slot *)(r->map + h.slots_off);
	r->arena = r->map + h.arena_off;
	r->arena_size = h.arena_size;
	r->n_slots = h.n_slots;
	/* The slots' page table entries made now, not one minor fault per slot
	 * page on the first probes (every miss goes through them).  Best effort:
	 * a kernel before 5.14 (EINVAL) or a failure only leaves those faults. */
	long pg = sysconf(_SC_PAGESIZE);
	if (pg > 0) {
		uintptr_t lo = (uintptr_t)r->slots & ~((uintptr_t)pg - 1);
		(void)madvise((void *)lo, (uintptr_t)(r->slots + h.n_slots) - lo, MADV_POPULATE_READ);
	}
	*out = r;
	map = MAP_FAILED;
	rc = 0;
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	return rc;
}

void kj__hittab_reader_close(struct kj__hittab_reader *r)
{
	if (r == NULL)
		return;
	munmap((void *)r->map, r->size);
	free(r);
}

uint64_t kj__hittab_reader_gen(const struct kj__hittab_reader *r)
{
	return atomic_load_explicit(&((struct hdr *)r->h)->gen, memory_order_acquire);
}

uint32_t kj__hittab_reader_slots(const struct kj__hittab_reader *r)
{
	return r->n_slots;
}

void kj__hittab_reader_set_id(struct kj__hittab_reader *r, uint32_t id)
{
	r->id = id;
}

void *kj__sink_take(const struct kj__sink *sink, const uint64_t id[2], size_t size, int *held)
{
	*held = sink && sink->have && sink->have(sink->ctx, id, size);
	if (*held)
		return NULL;
	return sink ? sink->alloc(sink->ctx, size) : malloc(size);
}

void kj__sink_answered(const struct kj__sink *sink, const uint64_t id[2])
{
	if (sink && sink->id)
		memcpy(sink->id, id, 2 * sizeof *id);
}

enum { TRY_MISS, TRY_HIT, TRY_RACED, TRY_CORRUPT, TRY_NOMEM };

/* One seqlock read of slot i.  TRY_*; on TRY_HIT *hit is filled, its
 * object copied into a malloc'd buffer or, with sink, into the buffer the
 * sink gives (it may be asked again after a race: the object is in the
 * buffer of its last answer). */
static int try_slot(struct kj__hittab_reader *r, uint32_t i, const uint8_t fp[KJ_SHA256_LEN], uint64_t g,
		    struct kj__hit *hit, const struct kj__sink *sink)
{
	/* The mapping is PROT_READ; the atomics are only ever loaded. */
	struct slot *s = (struct slot *)&r->slots[i];
	_Atomic uint64_t *hgen = &((struct hdr *)r->h)->gen;
	struct rec_hdr rh;

	uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
	if (s1 & 1)
		return TRY_RACED;
	for (int k = 0; k < 4; k++)
		if (atomic_load_explicit(&s->fp[k], memory_order_relaxed) != fp_word(fp, k))
			return TRY_MISS;
	uint64_t sg = atomic_load_explicit(&s->gen, memory_order_relaxed);
	uint64_t off = atomic_load_explicit(&s->off, memory_order_relaxed);
	uint64_t len = atomic_load_explicit(&s->len, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != s1)
		return TRY_RACED;
	if (sg != g || sg == 0)
		return TRY_MISS;
	if (off % REC_ALIGN || len < REC_HDR_SIZE || off > r->arena_size || len > r->arena_size - off)
		return TRY_CORRUPT;
	memcpy(&rh, r->arena + off, sizeof rh);
	if (rh.magic != REC_MAGIC || rh.obj_len == 0 || rh.obj_len > KJ_OBJECT_MAX ||
	    rh.target_len == 0 || rh.target_len >= KJ_TARGET_MAX || rh.version_len >= KJ_VERSION_STR_MAX ||
	    (uint64_t)REC_HDR_SIZE + rh.target_len + rh.version_len + rh.obj_len > len) {
		atomic_thread_fence(memory_order_acquire);
		return atomic_load_explicit(&s->seq, memory_order_relaxed) != s1 ? TRY_RACED : TRY_CORRUPT;
	}
	/* The record's bytes stay as they are while the slot's seq does
	 * (the writer clears every slot on bytes before reusing them), so
	 * bytes the caller kept from this slot at this seq are these. */
	uint64_t id[2] = { (uint64_t)r->id << 32 | (i + 2u), s1 };
	int held;
	uint8_t *data = kj__sink_take(sink, id, rh.obj_len, &held);
	if (data == NULL && !held)
		return TRY_NOMEM;
	const uint8_t *p = r->arena + off + REC_HDR_SIZE;
	memcpy(hit->target, p, rh.target_len);
	hit->target[rh.target_len] = '\0';
	memcpy(hit->version, p + rh.target_len, rh.version_len);
	hit->version[rh.version_len] = '\0';
	if (!held)
		memcpy(data, p + rh.target_len + rh.version_len, rh.obj_len);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != s1 ||
	    atomic_load_explicit(hgen, memory_order_relaxed) != g) {
		if (!sink)
			free(data);
		return TRY_RACED;
	}
	if (memchr(hit->target, '\0', rh.target_len) || memchr(hit->version, '\0', rh.version_len) ||
	    !strings_ok(hit->target, hit->version)) {
		if (!sink)
			free(data);
		return TRY_CORRUPT;
	}
	hit->data = data;
	hit->size = rh.obj_len;
	memcpy(hit->key, rh.key, sizeof hit->key);
	hit->slot = i;
	kj__sink_answered(sink, id);
	return TRY_HIT;
}

int kj__hittab_lookup(struct kj__hittab_reader *r, const uint8_t fp[KJ_SHA256_LEN], struct kj__hit *hit)
{
	return kj__hittab_lookup_into(r, fp, hit, NULL);
}

int kj__hittab_lookup_into(struct kj__hittab_reader *r, const uint8_t fp[KJ_SHA256_LEN], struct kj__hit *hit,
			   const struct kj__sink *sink)
{
	uint32_t mask = r->n_slots - 1, base = fp_index(fp);

	memset(hit, 0, sizeof *hit);
	for (int t = 0; t < KJ_HITTAB_RETRIES; t++) {
		uint64_t g = kj__hittab_reader_gen(r);
		int raced = 0;
		for (uint32_t k = 0; k < KJ_HITTAB_PROBE; k++) {
			switch (try_slot(r, (base + k) & mask, fp, g, hit, sink)) {
			case TRY_HIT:
				return 0;
			case TRY_RACED:
				raced = 1;
				break;
			case TRY_CORRUPT:
				return KJIT_ECORRUPT;
			case TRY_NOMEM:
				return KJIT_ENOMEM;
			default:
				break;
			}
		}
		if (!raced)
			return KJIT_ENOENT;
	}
	return KJIT_ETIMEDOUT;
}
