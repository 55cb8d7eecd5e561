/* hdrkeep.c: the texts of the headers kjitd read from its own
 * <kernels>/include, kept so that a request resolved on the loop (offhash.c,
 * issue 35) includes them without opening a file.
 *
 * An entry is a header's real path, its bytes, and the proof of the read
 * they came from (kj__read_file_st: the fstat after the read, the clock
 * before the open).  kj__hdrkeep_find gives a copy of the bytes only while
 * kj__file_unchanged_since proves the file at that real path holds them (the
 * memo's proof, round thirteen's kept kernel source): same device, inode,
 * size, mtime and ctime, the ctime settled a second before the read.  A
 * stat proves the file, not the way to it: the include scan still takes the
 * realpath of <kernels>/include/NAME and checks it under the root before it
 * asks (common/incfind.c), so a header replaced by a link leading outside
 * is refused as a fresh read would refuse it, and a kept text is only ever
 * found by the real path the scan just resolved.
 *
 * What a stat cannot see, this cannot either: a write through a shared
 * mapping of a page already dirty leaves the ctime alone, and an NFS
 * client's cached attributes may lag the server.  The kernels directory
 * is the daemon's own, changed by its owner with write or rename (an
 * install, a package): the memo has trusted the same proof since round
 * thirteen.
 *
 * Invariants: only headers read from <kernels>/include go in (offhash.c
 * hands over what the scan read from its one allowed directory: never a
 * request's header, never another folder); the table is read and changed
 * only on the loop (kj__hdrkeep_put from offhash.c's done; find for a
 * resolve run there); an entry's text is at most KJ_HEADER_TEXT_MAX bytes
 * and all entries together cost at most KJ_HEADER_TEXT_TOTAL, the least
 * recently used dropped to make room; a header read again whose stat is
 * the kept one's leaves its entry as it is (the same bytes, proven alike),
 * one that changed replaces it, and one whose read cannot be proven
 * (changed during it, or too large) drops it; an entry found no longer
 * proven is dropped.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"
#include "htab.h"
#include "ilist.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

struct kept_hdr {
	struct kj__hnode hn;         /* in k->tab, hashed by path_hash */
	struct kj__ilink lru;        /* in k->lru, most recently used first */
	char *real;
	uint8_t *text;               /* len bytes and a NUL */
	size_t len;
	size_t cost;                 /* counted against KJ_HEADER_TEXT_TOTAL */
	struct stat st;              /* the read's proof */
	struct timespec read_at;
};

struct kj__hdrkeep {
	struct kj__htab tab;
	struct kj__ilist lru;
	size_t bytes;
};

static uint64_t path_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h ^ (h >> 31);
}

int kj__hdrkeep_new(struct kj__hdrkeep **out)
{
	struct kj__hdrkeep *k = calloc(1, sizeof *k);

	if (k == NULL)
		return KJIT_ENOMEM;
	kj__htab_init(&k->tab, NULL, NULL);
	*out = k;
	return 0;
}

static struct kept_hdr *lookup(const struct kj__hdrkeep *k, const char *real, uint64_t h)
{
	for (struct kj__hnode *x = kj__htab_first(&k->tab, h); x; x = kj__htab_next(x, h)) {
		struct kept_hdr *e = KJ_CONTAINER_OF(x, struct kept_hdr, hn);
		if (strcmp(e->real, real) == 0)
			return e;
	}
	return NULL;
}

static void drop(struct kj__hdrkeep *k, struct kept_hdr *e)
{
	kj__htab_remove(&k->tab, &e->hn);
	kj__ilist_unlink(&k->lru, &e->lru);
	k->bytes -= e->cost;
	free(e->real);
	free(e->text);
	free(e);
}

void kj__hdrkeep_free(struct kj__hdrkeep *k)
{
	if (k == NULL)
		return;
	for (size_t i = 0; i < k->tab.cap; i++)
		while (k->tab.tab[i])
			drop(k, KJ_CONTAINER_OF(k->tab.tab[i], struct kept_hdr, hn));
	kj__htab_fini(&k->tab);
	free(k);
}

int kj__hdrkeep_find(struct kj__hdrkeep *k, const char *real, size_t max_len, uint8_t **data, size_t *len,
		     struct stat *st, struct timespec *read_at)
{
	struct kept_hdr *e = k && k->tab.n ? lookup(k, real, path_hash(real)) : NULL;
	struct stat now;

	if (e == NULL || e->len > max_len)
		return 0;
	if (!kj__file_unchanged_since(real, &e->st, &e->read_at, &now)) {
		drop(k, e); /* changed or gone: the next read on a thread keeps it again */
		return 0;
	}
	if ((*data = malloc(e->len + 1)) == NULL)
		return 0;
	memcpy(*data, e->text, e->len + 1);
	*len = e->len;
	*st = e->st;
	*read_at = e->read_at;
	kj__ilist_to_front(&k->lru, &e->lru);
	return 1;
}

void kj__hdrkeep_put(struct kj__hdrkeep *k, const char *real, const uint8_t *data, size_t len, const struct stat *st,
		     const struct timespec *read_at)
{
	uint64_t h = path_hash(real);
	struct kept_hdr *old = k ? lookup(k, real, h) : NULL, *e = NULL;
	size_t cost = sizeof *e + strlen(real) + 1 + len + 1;
	int proven = read_at->tv_sec != 0 || read_at->tv_nsec != 0;

	if (k == NULL)
		return;
	if (old && proven && kj__stat_same(&old->st, st)) {
		kj__ilist_to_front(&k->lru, &old->lru); /* the file as kept: nothing to copy */
		return;
	}
	if (old) /* the file changed, or this read of it cannot be proven */
		drop(k, old);
	if (len > KJ_HEADER_TEXT_MAX || !proven)
		return;
	while (k->bytes + cost > KJ_HEADER_TEXT_TOTAL && k->lru.tail)
		drop(k, KJ_CONTAINER_OF(k->lru.tail, struct kept_hdr, lru));
	if (kj__htab_reserve(&k->tab) < 0 || (e = calloc(1, sizeof *e)) == NULL)
		return; /* not kept: the next resolve reads it (on a thread) */
	if ((e->real = kj__strdup(real)) == NULL || (e->text = malloc(len + 1)) == NULL) {
		free(e->real);
		free(e);
		return;
	}
	memcpy(e->text, data, len);
	e->text[len] = '\0';
	e->len = len;
	e->cost = cost;
	e->st = *st;
	e->read_at = *read_at;
	kj__htab_insert(&k->tab, &e->hn, h);
	kj__ilist_push_front(&k->lru, &e->lru);
	k->bytes += cost;
}

size_t kj__hdrkeep_bytes(const struct kj__hdrkeep *k)
{
	return k ? k->bytes : 0;
}
