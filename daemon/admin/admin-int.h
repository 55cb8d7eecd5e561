/* admin-int.h: the admin room's part of kjitd's context (issue 33):
 * struct kj__adminroom, d->admin, allocated by kj__admin_init (offloop.c).
 * Private to daemon/admin/ (admin.c's counters, offloop.c's checkpoint);
 * tests/e2e/layering.sh keeps it there. */
#ifndef KJ_ADMIN_INT_H
#define KJ_ADMIN_INT_H

#include "daemon.h"

struct kj__adminroom {
	uint64_t stats_flushed[KJ_STAT_COUNT]; /* admin.c: the counters already added to the cache's */
	struct kj__offwork ckpt_work;          /* offloop.c: the index's checkpoint */
	struct kj__cache *ckpt_cache;          /* offloop.c: the cache it checkpoints */
};

#endif /* KJ_ADMIN_INT_H */
