/* hitctr.c: per-client hit counters beside the shared hit table
 * (hittab.h).  The writer side (kj__hitctr_create) makes a small sealed
 * memfd: a 64-byte header {magic, slot count, total hits, total bytes} and
 * one u32 hit count per hit-table slot.  The other side maps it read-write
 * (kj__hitctr_map), adds to it with relaxed atomics on each hit
 * (kj__hitctr_count), and the creator collects and zeroes the counts
 * (kj__hitctr_harvest).  Both sides write the same bytes, so nothing read
 * from the page decides a size: each side uses its own slot count (checked
 * against the page once, at map); a forged count can only misstate counts.
 * Split out of hittab.c (issue 10); nothing outside tests calls it yet.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hittab.h"
#include "kj_types.h"

struct ctr_hdr {
	uint64_t magic;
	uint32_t n_slots;
	uint32_t pad;
	_Atomic uint64_t hits;
	_Atomic uint64_t bytes;
	uint8_t pad1[32];
};
_Static_assert(sizeof(struct ctr_hdr) == 64, "counters layout");

struct kj__hitctr {
	uint8_t *map;
	size_t size;
	struct ctr_hdr *h;
	_Atomic uint32_t *slot_hits;
	uint32_t n_slots;        /* ours, never read back from the page */
};

static size_t ctr_size(uint32_t n_slots)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = sizeof(struct ctr_hdr) + (size_t)n_slots * sizeof(uint32_t);
	return (n + page - 1) / page * page;
}

static int ctr_wrap(struct kj__hitctr **out, uint8_t *map, size_t size, uint32_t n_slots)
{
	struct kj__hitctr *c = calloc(1, sizeof *c);

	if (c == NULL) {
		munmap(map, size);
		return KJIT_ENOMEM;
	}
	c->map = map;
	c->size = size;
	c->h = (struct ctr_hdr *)map;
	c->slot_hits = (_Atomic uint32_t *)(map + sizeof(struct ctr_hdr));
	c->n_slots = n_slots;
	*out = c;
	return 0;
}

int kj__hitctr_create(struct kj__hitctr **out, uint32_t n_slots, int *fd)
{
	*out = NULL;
	*fd = -1;
	if (n_slots == 0 || n_slots > KJ_HITTAB_SLOTS_MAX)
		return KJIT_EINVAL;
	size_t size = ctr_size(n_slots);
	int f = memfd_create("kjit-hitctr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (f < 0)
		return KJIT_EIO;
	if (ftruncate(f, (off_t)size) < 0 ||
	    fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(f);
		return KJIT_EIO;
	}
	uint8_t *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (map == MAP_FAILED) {
		close(f);
		return KJIT_EIO;
	}
	struct ctr_hdr *h = (struct ctr_hdr *)map;
	h->magic = KJ_HITCTR_MAGIC;
	h->n_slots = n_slots;
	int r = ctr_wrap(out, map, size, n_slots);
	if (r < 0) {
		close(f);
		return r;
	}
	*fd = f;
	return 0;
}

int kj__hitctr_map(struct kj__hitctr **out, int fd, uint32_t n_slots)
{
	struct stat st;

	*out = NULL;
	if (n_slots == 0 || n_slots > KJ_HITTAB_SLOTS_MAX)
		return KJIT_EPROTO;
	size_t size = ctr_size(n_slots);
	int seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) < 0)
		return KJIT_EIO;
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
		return KJIT_EPROTO;
	uint8_t *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return KJIT_EIO;
	const struct ctr_hdr *h = (const struct ctr_hdr *)map;
	if (h->magic != KJ_HITCTR_MAGIC || h->n_slots != n_slots) {
		munmap(map, size);
		return KJIT_EPROTO;
	}
	return ctr_wrap(out, map, size, n_slots);
}

void kj__hitctr_free(struct kj__hitctr *c)
{
	if (c == NULL)
		return;
	munmap(c->map, c->size);
	free(c);
}

void kj__hitctr_count(struct kj__hitctr *c, uint32_t slot, size_t size)
{
	atomic_fetch_add_explicit(&c->h->hits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->h->bytes, size, memory_order_relaxed);
	if (slot < c->n_slots)
		atomic_fetch_add_explicit(&c->slot_hits[slot], 1, memory_order_relaxed);
}

void kj__hitctr_harvest(struct kj__hitctr *c, uint64_t *hits, uint64_t *bytes,
			void (*fn)(void *arg, uint32_t slot, uint32_t n), void *arg)
{
	*hits = atomic_exchange_explicit(&c->h->hits, 0, memory_order_relaxed);
	*bytes = atomic_exchange_explicit(&c->h->bytes, 0, memory_order_relaxed);
	for (uint32_t i = 0; i < c->n_slots; i++) {
		if (atomic_load_explicit(&c->slot_hits[i], memory_order_relaxed) == 0)
			continue;
		uint32_t n = atomic_exchange_explicit(&c->slot_hits[i], 0, memory_order_relaxed);
		if (n && fn)
			fn(arg, i, n);
	}
}
