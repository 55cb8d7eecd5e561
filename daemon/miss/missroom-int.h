/* missroom-int.h: the miss room's part of kjitd's context (issue 33):
 * struct kj__missroom, d->miss, allocated by kj__miss_init (missroom.c).
 * Private to daemon/miss/ (get.c's pools and memo, miss.c's flights and
 * fleet tier, publish.c's counters); the other rooms go through
 * missroom.c's functions, and tests/e2e/layering.sh keeps it so. */
#ifndef KJ_MISSROOM_INT_H
#define KJ_MISSROOM_INT_H

#include "daemon.h"

struct kj__missroom {
	struct kj__pool *pools[4];     /* by backend */
	struct kj__pool *alt_pools[4]; /* by backend: the other family a request chose (--compiler) */
	struct kj__manifest manifest;  /* the bundled kernels */
	struct kj__memo *memo;         /* request bytes -> key, for the hit path */
	struct kj__hdrkeep *hdrs;      /* texts of <kernels>/include's headers (hdrkeep.c) */
	struct kj__negcache *negcache; /* recently failed compiles (negcache.c) */
	struct kj__flights *flights;   /* misses in progress, by key (miss.c) */
	struct kj__remote *remote;     /* the fleet tier (miss.c); NULL without --remote */
	size_t pub_n;                  /* publish.c: publishes in flight, and their object bytes */
	uint64_t pub_bytes;
};

#endif /* KJ_MISSROOM_INT_H */
