/* missroom.c: the miss room's part of kjitd's context seen from the other
 * rooms (issue 33, docs/house-plan.md).  The part is struct kj__missroom
 * (missroom-int.h, d->miss), allocated here by kj__miss_init from main.c's
 * rooms_new.  main.c makes the room's tables (the memo, the kept
 * headers, the recent failures, the open flights, the bundled-kernel
 * manifest) through kj__miss_open, frees the pools and flights while the loop can still
 * close their handles (kj__miss_close) and the rest at exit
 * (kj__miss_free); the server shuts the pools down at stop and asks
 * whether a miss is open (kj__miss_stop, kj__miss_busy); admin.c reads
 * the pools, the fleet tier and the manifest for stats, status and ls
 * through kj__miss_pool, kj__miss_remote and kj__miss_manifest.  No file
 * outside daemon/miss/ names one of the room's fields.
 */
#include <stdlib.h>

#include "daemon.h"
#include "kj_types.h"
#include "missroom-int.h"
#include "util.h"

int kj__miss_init(struct kj__daemon *d)
{
	if ((d->miss = calloc(1, sizeof *d->miss)) == NULL)
		return KJIT_ENOMEM;
	return 0;
}

int kj__miss_open(struct kj__daemon *d, char *err, size_t errlen)
{
	err[0] = '\0';
	if (kj__memo_new(&d->miss->memo, d->cfg.memo_size) < 0 || kj__hdrkeep_new(&d->miss->hdrs) < 0 ||
	    kj__flights_new(&d->miss->flights) < 0 ||
	    kj__negcache_new(&d->miss->negcache, d->cfg.failed_ttl_ms) < 0)
		return KJIT_ENOMEM;
	return kj__manifest_load(d->cfg.kernels_dir, &d->miss->manifest, err, errlen);
}

void kj__miss_close(struct kj__daemon *d)
{
	if (d->miss == NULL)
		return;
	kj__flights_free(d->miss->flights);
	d->miss->flights = NULL;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->miss->pools); i++) {
		kj__pool_free(d->miss->pools[i]);
		kj__pool_free(d->miss->alt_pools[i]);
		d->miss->alt_pools[i] = NULL;
		d->miss->pools[i] = NULL;
	}
}

void kj__miss_free(struct kj__daemon *d)
{
	if (d->miss == NULL)
		return;
	kj__miss_close(d); /* nothing left there after main.c's close */
	kj__memo_free(d->miss->memo);
	kj__hdrkeep_free(d->miss->hdrs);
	kj__negcache_free(d->miss->negcache);
	kj__manifest_free(&d->miss->manifest);
	free(d->miss);
	d->miss = NULL;
}

void kj__miss_stop(struct kj__daemon *d)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->miss->pools); i++) {
		if (d->miss->pools[i])
			kj__pool_shutdown(d->miss->pools[i]);
		if (d->miss->alt_pools[i])
			kj__pool_shutdown(d->miss->alt_pools[i]);
	}
}

int kj__miss_busy(const struct kj__daemon *d)
{
	struct kj__pool_stats ps;

	if (kj__flights_count(d->miss->flights) > 0)
		return 1;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(d->miss->pools); i++) {
		struct kj__pool *both[2] = { d->miss->pools[i], d->miss->alt_pools[i] };

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
	return i < 4 ? d->miss->pools[i] : d->miss->alt_pools[i - 4];
}

struct kj__remote *kj__miss_remote(const struct kj__daemon *d)
{
	return d->miss->remote;
}

const struct kj__manifest *kj__miss_manifest(const struct kj__daemon *d)
{
	return &d->miss->manifest;
}
