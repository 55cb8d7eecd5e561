/* missroom.c: the miss room's part of kjitd's context seen from the other
 * rooms (issue 33, docs/house-plan.md).  main.c makes the room's tables
 * (the memo, the recent failures, the open flights, the bundled-kernel
 * manifest) through kj__miss_open, frees the pools and flights while the
 * loop can still close their handles (kj__miss_close) and the rest at
 * exit (kj__miss_free); the server shuts the pools down at stop and asks
 * whether a miss is open (kj__miss_stop, kj__miss_busy); admin.c reads
 * the pools, the fleet tier and the manifest for stats, status and ls
 * through kj__miss_pool, kj__miss_remote and kj__miss_manifest.  No file
 * outside daemon/miss/ names one of the room's fields.
 */
#include <stdlib.h>

#include "daemon.h"
#include "kj_types.h"
#include "util.h"

int kj__miss_open(struct kj__daemon *d, char *err, size_t errlen)
{
	err[0] = '\0';
	if (kj__memo_new(&d->memo, d->cfg.memo_size) < 0 || kj__flights_new(&d->flights) < 0 ||
	    kj__negcache_new(&d->negcache, d->cfg.failed_ttl_ms) < 0)
		return KJIT_ENOMEM;
	return kj__manifest_load(d->cfg.kernels_dir, &d->manifest, err, errlen);
}

void kj__miss_close(struct kj__daemon *d)
{
	kj__flights_free(d->flights);
	d->flights = NULL;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->pools); i++) {
		kj__pool_free(d->pools[i]);
		kj__pool_free(d->alt_pools[i]);
		d->alt_pools[i] = NULL;
		d->pools[i] = NULL;
	}
}

void kj__miss_free(struct kj__daemon *d)
{
	kj__memo_free(d->memo);
	d->memo = NULL;
	kj__negcache_free(d->negcache);
	d->negcache = NULL;
	kj__manifest_free(&d->manifest);
}

void kj__miss_stop(struct kj__daemon *d)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->pools); i++) {
		if (d->pools[i])
			kj__pool_shutdown(d->pools[i]);
		if (d->alt_pools[i])
			kj__pool_shutdown(d->alt_pools[i]);
	}
}

int kj__miss_busy(const struct kj__daemon *d)
{
	struct kj__pool_stats ps;

	if (kj__flights_count(d->flights) > 0)
		return 1;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->pools); i++) {
		struct kj__pool *both[2] = { d->pools[i], d->alt_pools[i] };

		for (size_t j = 0; j < KJ_ARRAY_SIZE(both); j++) {
			if (both[j] == NULL)
				continue;
			kj__pool_stats(both[j], &ps);
			if (ps.busy > 0)
				return 1;
		}
	}
	return 0;
}

struct kj__pool *kj__miss_pool(const struct kj__daemon *d, int i)
{
	if (i < 0 || i >= 8)
		return NULL;
	return i < 4 ? d->pools[i] : d->alt_pools[i - 4];
}

struct kj__remote *kj__miss_remote(const struct kj__daemon *d)
{
	return d->remote;
}

const struct kj__manifest *kj__miss_manifest(const struct kj__daemon *d)
{
	return &d->manifest;
}
