/* admin.c: the administrative requests (ADMIN CMD ARG): stats, targets,
 * kernels, gc, verify, clear, export, import (ls and show: entries.c;
 * replay: replay.c).
 * Each answers with a human text and one JSON object, both built here so
 * every client prints the same.  Who may make which request is access.c's
 * rule (docs/protocol.md, "Roles"): the ones that change or stop the
 * service only for an administrator; ls and show give a user only the
 * entries it requested. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin-int.h" /* and daemon.h */
#include "compiler.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "remote.h"
#include "sha.h"
#include "util.h"

const char *const kj__stat_names[KJ_STAT_COUNT] = {
	[KJ_STAT_REQUESTS] = "requests",
	[KJ_STAT_HITS] = "hits",
	[KJ_STAT_MISSES] = "misses",
	[KJ_STAT_COMPILES] = "compiles",
	[KJ_STAT_JOINED] = "joined",
	[KJ_STAT_ERR_COMPILE] = "errors_compile",
	[KJ_STAT_ERR_TARGET] = "errors_target",
	[KJ_STAT_ERR_WORKER] = "errors_worker",
	[KJ_STAT_ERR_TIMEOUT] = "errors_timeout",
	[KJ_STAT_ERR_INPUT] = "errors_input",
	[KJ_STAT_ERR_OTHER] = "errors_other",
	[KJ_STAT_BYTES_SERVED] = "bytes_served",
	[KJ_STAT_COMPILE_MS] = "compile_ms",
	[KJ_STAT_SAVED_MS] = "saved_ms",
	[KJ_STAT_PUBLISH_ERRORS] = "publish_errors",
	[KJ_STAT_CONNECTIONS] = "connections",
	[KJ_STAT_FAST_HITS] = "fast_hits",
	[KJ_STAT_REMOTE_HITS] = "remote_hits",
	[KJ_STAT_REFUSED] = "refused",
	[KJ_STAT_RESOLVED_INLINE] = "resolved_inline",
	[KJ_STAT_RESOLVED_POOL] = "resolved_pool",
	[KJ_STAT_LEGACY_KEYS] = "legacy_keys",
};

struct answer {
	struct kj__buf text;
	struct kj__buf json;
	int code;
	char error[512];
};

void kj__stats_flush(struct kj__daemon *d)
{
	for (int i = 0; i < KJ_STAT_COUNT; i++) {
		uint64_t delta = d->stats[i] - d->admin->stats_flushed[i];
		if (delta == 0)
			continue;
		if (kj__cache_counter_add(d->cache, kj__stat_names[i], (int64_t)delta) == 0)
			d->admin->stats_flushed[i] = d->stats[i];
	}
	kj__cache_flush(d->cache);
	kj__offloop_checkpoint(d); /* the WAL's copy back, fsync included, on a thread */
	/* The size cap, off the request path and off the loop: a gc on the
	 * pool (offloop.c), from the flush timer; objects being sent are never
	 * at risk (a reply's bytes are in the socket or a buffer of their own). */
	struct kj__cache_totals t;
	if (!d->stopping && !kj__offloop_busy(d) && kj__cache_totals(d->cache, &t) == 0 &&
	    t.bytes > kj__cache_max_size(d->cache) && kj__offloop_start(d, NULL, 0, KJ_CACHE_JOB_GC, 0, NULL) < 0)
		kj__log(d, "over the size cap, and no memory to start a gc");
}

/* A counter as saved in the index plus what is not saved yet (the index
 * may be unwritable: a full disk is when publish_errors matters most). */
static int64_t stat_value(struct kj__daemon *d, int i)
{
	int64_t v = 0;

	kj__cache_counter_get(d->cache, kj__stat_names[i], &v);
	return v + (int64_t)(d->stats[i] - d->admin->stats_flushed[i]);
}

/* The fleet tier's counters since start (docs/remote.md), by name. */
struct remote_counter {
	const char *name;
	uint64_t v;
};
static size_t remote_counters(struct kj__daemon *d, struct remote_counter *c, int *up)
{
	struct kj__remote_stats s;
	size_t n = 0;

	kj__remote_stats(kj__miss_remote(d), &s);
	*up = s.up;
#define RC(field, label) c[n++] = (struct remote_counter){ label, s.field }
	RC(hits, "hits");
	RC(misses, "misses");
	RC(corrupt, "corrupt");
	RC(forged, "forged");
	RC(publishes, "publishes");
	RC(publish_dropped, "publish_dropped");
	RC(errors, "errors");
	RC(timeouts, "timeouts");
	RC(outages, "outages");
	RC(reconnects, "reconnects");
	RC(bytes_read, "bytes_read");
	RC(bytes_written, "bytes_written");
	RC(lease_owned, "lease_owned");
	RC(lease_waits, "lease_waits");
	RC(lease_takeovers, "lease_takeovers");
	RC(lease_woken, "lease_woken");
	RC(hit_us_total, "hit_us_total");
	RC(hit_us_max, "hit_us_max");
#undef RC
	c[n++] = (struct remote_counter){ "hit_us_mean", s.hits ? s.hit_us_total / s.hits : 0 };
	return n;
}
#define REMOTE_COUNTERS 19

/* "remote":{...} (JSON) or null: the URL without its password, up/down,
 * the mode and, with counters, the counters. */
static int remote_json(struct kj__daemon *d, struct kj__buf *b, int counters)
{
	struct remote_counter c[REMOTE_COUNTERS];
	int up = 0, r = 0;

	if (kj__miss_remote(d) == NULL)
		return kj__buf_printf(b, "\"remote\":null");
	size_t n = remote_counters(d, c, &up);
	r |= kj__buf_printf(b, "\"remote\":{\"url\":");
	r |= kj__json_str(b, kj__remote_describe(kj__miss_remote(d)));
	r |= kj__buf_printf(b, ",\"up\":%s,\"mode\":\"%s\",\"no_compile\":%s", up ? "true" : "false",
			    d->cfg.remote_mode == KJ_REMOTE_RO ? "ro" : "rw", d->cfg.no_compile ? "true" : "false");
	for (size_t i = 0; counters && i < n; i++)
		r |= kj__buf_printf(b, ",\"%s\":%llu", c[i].name, (unsigned long long)c[i].v);
	r |= kj__buf_printf(b, "}");
	return r;
}

static int remote_text(struct kj__daemon *d, struct kj__buf *b, int counters)
{
	struct remote_counter c[REMOTE_COUNTERS];
	int up = 0, r = 0;

	if (kj__miss_remote(d) == NULL)
		return kj__buf_printf(b, "remote           none%s\n", d->cfg.no_compile ? " (serve-only: misses refused)" : "");
	size_t n = remote_counters(d, c, &up);
	r |= kj__buf_printf(b, "remote           %s %s (%s%s)\n", kj__remote_describe(kj__miss_remote(d)), up ? "up" : "DOWN",
			    d->cfg.remote_mode == KJ_REMOTE_RO ? "read-only" : "read-write",
			    d->cfg.no_compile ? ", serve-only" : "");
	for (size_t i = 0; counters && i < n; i++)
		r |= kj__buf_printf(b, "remote_%-9s %llu\n", c[i].name, (unsigned long long)c[i].v);
	return r;
}

/* node_exporter's textfile format: one gauge or counter per line. */
static int stats_prometheus(struct kj__daemon *d, struct answer *a)
{
	struct kj__cache_totals t = { 0 };
	int r = 0;

	kj__cache_totals(d->cache, &t);
	for (int i = 0; i < KJ_STAT_COUNT; i++) {
		int64_t v = stat_value(d, i);
		r |= kj__buf_printf(&a->text, "# TYPE kjit_%s_total counter\nkjit_%s_total %lld\n", kj__stat_names[i],
				    kj__stat_names[i], (long long)v);
	}
	r |= kj__buf_printf(&a->text, "# TYPE kjit_entries gauge\nkjit_entries %llu\n# TYPE kjit_bytes gauge\nkjit_bytes %llu\n",
			    (unsigned long long)t.entries, (unsigned long long)t.bytes);
	r |= kj__buf_printf(&a->text, "# TYPE kjit_hit_latency_us histogram\n");
	uint64_t cum = 0;
	for (int i = 0; i < KJ_LAT_BUCKETS; i++) {
		cum += d->lat_hist[i];
		r |= kj__buf_printf(&a->text, "kjit_hit_latency_us_bucket{le=\"%llu\"} %llu\n", 1ull << i,
				    (unsigned long long)cum);
	}
	r |= kj__buf_printf(&a->text, "kjit_hit_latency_us_bucket{le=\"+Inf\"} %llu\nkjit_hit_latency_us_count %llu\n",
			    (unsigned long long)cum, (unsigned long long)cum);
	if (kj__miss_remote(d)) {
		struct remote_counter c[REMOTE_COUNTERS];
		int up = 0;
		size_t n = remote_counters(d, c, &up);
		r |= kj__buf_printf(&a->text, "# TYPE kjit_remote_up gauge\nkjit_remote_up %d\n", up);
		for (size_t i = 0; i < n; i++) {
			int gauge = strncmp(c[i].name, "hit_us_m", 8) == 0;
			r |= kj__buf_printf(&a->text, "# TYPE kjit_remote_%s%s %s\nkjit_remote_%s%s %llu\n", c[i].name,
					    gauge ? "" : "_total", gauge ? "gauge" : "counter", c[i].name,
					    gauge ? "" : "_total", (unsigned long long)c[i].v);
		}
	}
	r |= kj__buf_printf(&a->json, "{}");
	return r ? KJIT_ENOMEM : 0;
}

/* Counters the cache keeps itself (cache/cache.c): corrupt objects dropped,
 * entries evicted by gc. */
static const char *const cache_counters[] = { "corrupt", "evictions" };

static void per_target(const char *target, const char *version, uint64_t entries, uint64_t bytes, void *arg)
{
	struct answer *a = arg;
	static const char sep[] = ",";

	kj__buf_printf(&a->text, "  %-28s %-8s %8llu entries %12llu bytes\n", target, version,
		       (unsigned long long)entries, (unsigned long long)bytes);
	if (a->json.len && a->json.p[a->json.len - 1] != '[')
		kj__buf_append(&a->json, sep, 1);
	kj__buf_printf(&a->json, "{\"target\":");
	kj__json_str(&a->json, target);
	kj__buf_printf(&a->json, ",\"version\":");
	kj__json_str(&a->json, version);
	kj__buf_printf(&a->json, ",\"entries\":%llu,\"bytes\":%llu}", (unsigned long long)entries,
		       (unsigned long long)bytes);
}

/* One owner's line of `kjit stats`: what its objects take of the cache
 * (cache/share.c), shown to admins for every uid, to others for their own. */
struct uid_rows {
	struct answer *a;
	const struct kj__conn *c;
	int admin, own_seen, n;
};

static void per_uid(void *arg, uid_t uid, uint64_t bytes, uint64_t n)
{
	struct uid_rows *u = arg;

	if (!u->admin && uid != kj__conn_uid(u->c))
		return;
	u->own_seen |= uid == kj__conn_uid(u->c);
	kj__buf_printf(&u->a->text, "  uid %-10u %8llu entries %12llu bytes\n", (unsigned)uid, (unsigned long long)n,
		       (unsigned long long)bytes);
	kj__buf_printf(&u->a->json, "%s{\"uid\":%u,\"entries\":%llu,\"bytes\":%llu}", u->n++ ? "," : "", (unsigned)uid,
		       (unsigned long long)n, (unsigned long long)bytes);
}

/* The per-uid part of the stats: "max_size_per_uid" and "uids" (JSON),
 * after the per-target list.  0, or 1 when a buffer could not grow. */
static int stats_uids(struct kj__daemon *d, const struct kj__conn *c, struct answer *a)
{
	struct uid_rows u = { a, c, kj__peer_is_admin(d, c), 0, 0 };
	uint64_t share = kj__cache_share(d->cache, 0);
	int r = 0;

	r |= kj__buf_printf(&a->text, "per uid (share %llu bytes each):\n", (unsigned long long)share);
	r |= kj__buf_printf(&a->json, ",\"max_size_per_uid\":%llu,\"uids\":[", (unsigned long long)share);
	r |= kj__cache_uid_bytes(d->cache, per_uid, &u) ? 1 : 0;
	if (!u.own_seen && !u.admin)
		per_uid(&u, kj__conn_uid(c), 0, 0);
	r |= kj__buf_printf(&a->json, "]");
	return r;
}

/* Which daemon this is (socket, cache folder) and its hit rate: hits
 * over hits and misses (a miss compiled, joined or failed), "-" before
 * the first. */
static int stats_where(struct kj__daemon *d, struct answer *a)
{
	int64_t hits = stat_value(d, KJ_STAT_HITS), misses = stat_value(d, KJ_STAT_MISSES);
	int r = kj__buf_printf(&a->text, "%-16s %s\n%-16s %s\n", "socket", d->cfg.socket_path, "cache", d->cfg.cache_dir);

	if (hits + misses > 0)
		r |= kj__buf_printf(&a->text, "%-16s %.1f%% (%lld of %lld)\n", "hit rate", 100.0 * (double)hits /
				    (double)(hits + misses), (long long)hits, (long long)(hits + misses));
	else
		r |= kj__buf_printf(&a->text, "%-16s -\n", "hit rate");
	r |= kj__buf_printf(&a->json, "\"socket\":");
	r |= kj__json_str(&a->json, d->cfg.socket_path);
	r |= kj__buf_printf(&a->json, ",\"cache_dir\":");
	r |= kj__json_str(&a->json, d->cfg.cache_dir);
	if (hits + misses > 0)
		r |= kj__buf_printf(&a->json, ",\"hit_rate\":%.4f,", (double)hits / (double)(hits + misses));
	else
		r |= kj__buf_printf(&a->json, ",\"hit_rate\":null,");
	return r;
}

static int do_stats(struct kj__daemon *d, const struct kj__conn *c, const char *arg, struct answer *a)
{
	struct kj__cache_totals t = { 0 };
	int r = 0;

	kj__stats_flush(d);
	if (arg && strcmp(arg, "prometheus") == 0)
		return stats_prometheus(d, a);
	if (arg && strcmp(arg, "zero") == 0) {
		for (int i = 0; i < KJ_STAT_COUNT; i++) {
			int64_t v = 0;
			if (kj__cache_counter_get(d->cache, kj__stat_names[i], &v) == 0 && v != 0)
				kj__cache_counter_add(d->cache, kj__stat_names[i], -v);
		}
		for (size_t i = 0; i < KJ_ARRAY_SIZE(cache_counters); i++) {
			int64_t v = 0;
			if (kj__cache_counter_get(d->cache, cache_counters[i], &v) == 0 && v != 0)
				kj__cache_counter_add(d->cache, cache_counters[i], -v);
		}
		memset(d->lat_hist, 0, sizeof d->lat_hist);
	}
	kj__cache_totals(d->cache, &t);
	r |= kj__buf_printf(&a->json, "{");
	r |= stats_where(d, a);
	for (int i = 0; i < KJ_STAT_COUNT; i++) {
		int64_t v = stat_value(d, i);
		r |= kj__buf_printf(&a->text, "%-16s %lld\n", kj__stat_names[i], (long long)v);
		r |= kj__buf_printf(&a->json, "\"%s\":%lld,", kj__stat_names[i], (long long)v);
	}
	for (size_t i = 0; i < KJ_ARRAY_SIZE(cache_counters); i++) {
		int64_t v = 0;
		kj__cache_counter_get(d->cache, cache_counters[i], &v);
		r |= kj__buf_printf(&a->text, "%-16s %lld\n", cache_counters[i], (long long)v);
		r |= kj__buf_printf(&a->json, "\"%s\":%lld,", cache_counters[i], (long long)v);
	}
	r |= kj__buf_printf(&a->text, "%-16s %llu\n%-16s %llu (cap %llu)\n", "entries", (unsigned long long)t.entries,
			    "bytes", (unsigned long long)t.bytes, (unsigned long long)kj__cache_max_size(d->cache));
	r |= kj__buf_printf(&a->json, "\"max_size\":%llu,", (unsigned long long)kj__cache_max_size(d->cache));
	r |= kj__buf_printf(&a->json, "\"entries\":%llu,\"bytes\":%llu,\"uptime_s\":%lld,\"hit_latency_us\":{",
			    (unsigned long long)t.entries, (unsigned long long)t.bytes,
			    (long long)(kj__wall_s() - d->started));
	r |= kj__buf_printf(&a->text, "hit latency (since start):");
	for (int i = 0; i < KJ_LAT_BUCKETS; i++) {
		r |= kj__buf_printf(&a->json, "%s\"lt%llu\":%llu", i ? "," : "", 1ull << i,
				    (unsigned long long)d->lat_hist[i]);
		if (d->lat_hist[i])
			r |= kj__buf_printf(&a->text, " <%lluus:%llu", 1ull << i, (unsigned long long)d->lat_hist[i]);
	}
	r |= kj__buf_printf(&a->text, "\n");
	r |= kj__buf_printf(&a->json, "},\"workers\":{");
	int first = 1;
	for (int b = 1; b < 8; b++) { /* each backend's pool, then the other families requests chose */
		struct kj__pool_stats ps;
		struct kj__pool *pool = kj__miss_pool(d, b);
		if (pool == NULL)
			continue;
		kj__pool_stats(pool, &ps);
		r |= kj__buf_printf(&a->json, "%s\"%s\":{\"alive\":%u,\"busy\":%u,\"started\":%llu,\"crashed\":%llu,\"timeouts\":%llu}",
				    first ? "" : ",", kj__pool_family(pool), ps.alive, ps.busy,
				    (unsigned long long)ps.started, (unsigned long long)ps.crashed,
				    (unsigned long long)ps.timeouts);
		r |= kj__buf_printf(&a->text, "workers %-8s alive %u busy %u started %llu crashed %llu timeouts %llu\n",
				    kj__pool_family(pool), ps.alive, ps.busy, (unsigned long long)ps.started,
				    (unsigned long long)ps.crashed, (unsigned long long)ps.timeouts);
		first = 0;
	}
	r |= remote_text(d, &a->text, 1);
	r |= kj__buf_printf(&a->json, "},");
	r |= remote_json(d, &a->json, 1);
	/* Per target last, after the totals, so a reader that takes the first
	 * "bytes" gets the total. */
	r |= kj__buf_printf(&a->text, "per target:\n");
	r |= kj__buf_printf(&a->json, ",\"targets\":[");
	r |= kj__cache_totals_by_target(d->cache, per_target, a) ? 1 : 0;
	r |= kj__buf_printf(&a->json, "]");
	r |= stats_uids(d, c, a);
	r |= kj__buf_printf(&a->json, "}");
	return r ? KJIT_ENOMEM : 0;
}

/* Each compiler family's worker walls (docs/reliability.md): the trees it
 * may read, and what its last worker reported, if one has started. */
static int worker_walls(struct kj__daemon *d, struct answer *a)
{
	int r = kj__buf_printf(&a->json, "\"workers\":[");
	char trees[KJ_WALL_TREES_MAX * 64];

	for (int i = 0, first = 1; i < 8; i++) {
		struct kj__pool *p = kj__miss_pool(d, i);
		if (p == NULL || kj__worker_trees(kj__pool_family(p), trees, sizeof trees) < 0)
			continue;
		r |= kj__buf_printf(&a->json, "%s{\"family\":", first ? "" : ",");
		r |= kj__json_str(&a->json, kj__pool_family(p));
		r |= kj__buf_printf(&a->json, ",\"reads\":[");
		char *save = NULL;
		for (char *t = strtok_r(trees, " ", &save), *sep = ""; t; t = strtok_r(NULL, " ", &save), sep = ",") {
			r |= kj__buf_printf(&a->json, "%s", sep);
			r |= kj__json_str(&a->json, t);
		}
		r |= kj__buf_printf(&a->json, "],\"walls\":");
		r |= kj__pool_walls(p)[0] ? kj__json_str(&a->json, kj__pool_walls(p)) : kj__buf_printf(&a->json, "null");
		r |= kj__buf_printf(&a->json, "}");
		if (kj__pool_walls(p)[0])
			r |= kj__buf_printf(&a->text, "worker  %-7s %s\n", kj__pool_family(p), kj__pool_walls(p));
		first = 0;
	}
	return r | kj__buf_printf(&a->json, "],");
}

static int do_targets(struct kj__daemon *d, struct answer *a)
{
	int r = kj__buf_printf(&a->json, "{\"backends\":[");

	for (int b = 1; b < 4; b++) {
		const char *name = kjit_backend_name(b);
		const char *target = NULL, *from = NULL, *version = "";
		if (d->cfg.arch[b]) {
			target = d->cfg.arch[b];
			from = "kjitd configuration";
		}
		r |= kj__buf_printf(&a->json, "%s{\"backend\":\"%s\",\"devices\":[", b > 1 ? "," : "", name);
		int first = 1;
		for (size_t i = 0, n = kj__daemon_n_gpus(d); i < n; i++) {
			const struct kj__gpu *g = kj__daemon_gpu(d, i);
			if (g->backend != b)
				continue;
			if (target == NULL) {
				target = g->target;
				from = "detected";
			}
			if (!*version)
				version = g->version;
			r |= kj__buf_printf(&a->json, "%s{\"target\":", first ? "" : ",");
			r |= kj__json_str(&a->json, g->target);
			r |= kj__buf_printf(&a->json, ",\"name\":");
			r |= kj__json_str(&a->json, g->name);
			r |= kj__buf_printf(&a->json, ",\"version\":");
			r |= kj__json_str(&a->json, g->version);
			r |= kj__buf_printf(&a->json, "}");
			r |= kj__buf_printf(&a->text, "%-7s device  %s (%s) %s\n", name, g->target, g->name, g->version);
			first = 0;
		}
		r |= kj__buf_printf(&a->json, "],\"target\":");
		r |= target ? kj__json_str(&a->json, target) : kj__buf_printf(&a->json, "null");
		r |= kj__buf_printf(&a->json, ",\"from\":");
		r |= from ? kj__json_str(&a->json, from) : kj__buf_printf(&a->json, "null");
		r |= kj__buf_printf(&a->json, ",\"note\":");
		r |= kj__json_str(&a->json, kj__daemon_detect_note(d, b, ""));
		r |= kj__buf_printf(&a->json, "}");
		if (target)
			r |= kj__buf_printf(&a->text, "%-7s daemon  target %s (%s)\n", name, target, from);
		else
			r |= kj__buf_printf(&a->text, "%-7s daemon  no target: %s\n", name,
					    kj__daemon_detect_note(d, b, "none detected"));
	}
	r |= kj__buf_printf(&a->json, "],");
	r |= worker_walls(d, a);
	r |= remote_json(d, &a->json, 0);
	r |= kj__buf_printf(&a->json, "}");
	r |= remote_text(d, &a->text, 0);
	return r ? KJIT_ENOMEM : 0;
}

/* The fleet tier's state alone, for `kjit ping --json`. */
static int do_remote(struct kj__daemon *d, struct answer *a)
{
	int r = kj__buf_printf(&a->json, "{");

	r |= remote_json(d, &a->json, 0);
	r |= kj__buf_printf(&a->json, "}");
	r |= remote_text(d, &a->text, 0);
	return r ? KJIT_ENOMEM : 0;
}

static int do_kernels(struct kj__daemon *d, const char *arg, struct answer *a)
{
	int backend = arg && *arg ? kjit_backend_from_name(arg) : KJIT_BACKEND_NONE;
	int r = kj__buf_printf(&a->json, "{\"kernels\":[");
	int first = 1;

	if (arg && *arg && backend == KJIT_BACKEND_NONE) {
		snprintf(a->error, sizeof a->error, "unknown backend '%s'; use hip, cuda or vulkan", arg);
		return KJIT_EBACKEND;
	}
	for (size_t i = 0; i < kj__miss_manifest(d)->n; i++) {
		const struct kj__kernel *k = &kj__miss_manifest(d)->k[i];
		if (backend && k->backend != backend)
			continue;
		r |= kj__buf_printf(&a->text, "%s %s\n", k->name, kjit_backend_name(k->backend));
		r |= kj__buf_printf(&a->json, "%s{\"name\":\"%s\",\"backend\":\"%s\",\"file\":\"%s\"}", first ? "" : ",",
				    k->name, kjit_backend_name(k->backend), k->file);
		first = 0;
	}
	r |= kj__buf_printf(&a->json, "]}");
	return r ? KJIT_ENOMEM : 0;
}

/* gc, verify and clear: checked here, run by offloop.c, which answers. */
static int start_maint(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *cmd, const char *arg,
		       struct answer *a)
{
	uint64_t cap = 0;
	int kind = strcmp(cmd, "gc") == 0 ? KJ_CACHE_JOB_GC : strcmp(cmd, "verify") == 0 ? KJ_CACHE_JOB_VERIFY
											: KJ_CACHE_JOB_CLEAR;

	if (kind == KJ_CACHE_JOB_GC && arg && *arg && kj__parse_size(arg, &cap) < 0) {
		snprintf(a->error, sizeof a->error, "bad size '%s' (e.g. 512M, 5G)", arg);
		return KJIT_EINVAL;
	}
	return kj__offloop_start(d, c, id, kind, cap, kind == KJ_CACHE_JOB_CLEAR && arg && *arg ? arg : NULL);
}

/* export and import read and write files by path: only for the daemon's
 * own user (or root), never on behalf of another user, not even an
 * --admin-gid member (access.c). */
static int path_allowed(struct kj__conn *c, const char *arg, struct answer *a)
{
	uid_t uid = kj__conn_uid(c);

	if (uid != 0 && uid != getuid()) {
		snprintf(a->error, sizeof a->error, "export and import are reserved to kjitd's own user (uid %u) and root",
			 (unsigned)getuid());
		return KJIT_EDENIED;
	}
	if (arg == NULL || arg[0] != '/') {
		snprintf(a->error, sizeof a->error, "export and import need an absolute path");
		return KJIT_EINVAL;
	}
	return 0;
}

/* Answered by the export task (bundle.c, offloop.c) when it has finished. */
static int do_export(struct kj__daemon *d, struct kj__conn *c, uint32_t id, char *arg, struct answer *a)
{
	const char *targets[64];
	size_t n = 0;
	int r = path_allowed(c, arg, a);

	if (r < 0)
		return r;
	char *comma = strchr(arg, ',');
	if (comma) {
		*comma = '\0';
		for (char *save = NULL, *t = strtok_r(comma + 1, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (n == KJ_ARRAY_SIZE(targets)) {
				snprintf(a->error, sizeof a->error, "at most %zu targets per export", KJ_ARRAY_SIZE(targets));
				return KJIT_EINVAL;
			}
			targets[n++] = t;
		}
	}
	return kj__bundle_export(d, c, id, arg, targets, n);
}

/* Answered by the import task (bundle.c, offloop.c) when it has finished. */
static int do_import(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *arg, struct answer *a)
{
	if (arg && strcmp(arg, "-") == 0) /* what the client streamed */
		return kj__upload_import(d, c, id, a->error, sizeof a->error);
	int r = path_allowed(c, arg, a);

	return r < 0 ? r : kj__bundle_import_task(d, c, id, arg);
}

void kj__admin_answer(struct kj__conn *c, uint32_t id, int r, struct kj__buf *text, struct kj__buf *json,
		      const char *err)
{
	struct kj__buf b = { 0 };

	if (kj__buf_append(text, "", 1) < 0 || kj__buf_append(json, "", 1) < 0 ||
	    kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, r) < 0 ||
	    kj__msg_put_str(&b, KJ_F_TEXT, (char *)text->p) < 0 || kj__msg_put_str(&b, KJ_F_JSON, (char *)json->p) < 0 ||
	    (r < 0 && kj__msg_put_str(&b, KJ_F_ERROR, err) < 0)) {
		kj__buf_free(&b);
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		return;
	}
	kj__conn_send(c, &b);
}

/* What a command's row gets; its run returns 0 with a filled, a negative
 * code (a.error may say why), or LATER when it answers by itself. */
struct admin_call {
	struct kj__daemon *d;
	struct kj__conn *c;
	uint32_t id;
	const char *cmd;
	char *arg;
	struct answer *a;
};
#define LATER 1

static int cmd_stats(struct admin_call *x)
{
	/* Looking is not using: the count server.c made of this request is
	 * taken back, so `watch kjit stats` leaves "requests" alone. */
	if (x->d->stats[KJ_STAT_REQUESTS] > x->d->admin->stats_flushed[KJ_STAT_REQUESTS])
		x->d->stats[KJ_STAT_REQUESTS]--;
	else /* already written to the index (a flush came between) */
		kj__cache_counter_add(x->d->cache, kj__stat_names[KJ_STAT_REQUESTS], -1);
	kj__conn_harvest_all(x->d); /* fast-path hits up to this moment */
	return do_stats(x->d, x->c, x->arg, x->a);
}
static int cmd_targets(struct admin_call *x) { return do_targets(x->d, x->a); }
static int cmd_remote(struct admin_call *x) { return do_remote(x->d, x->a); }
static int cmd_kernels(struct admin_call *x) { return do_kernels(x->d, x->arg, x->a); }
static int cmd_ls(struct admin_call *x) { return kj__admin_ls(x->d, x->c, x->arg, &x->a->text, &x->a->json); }
static int cmd_show(struct admin_call *x)
{
	return kj__admin_show(x->d, x->c, x->arg, &x->a->text, &x->a->json, x->a->error, sizeof x->a->error);
}
static int cmd_config(struct admin_call *x) { return kj__admin_config(x->d, &x->a->text, &x->a->json); }
static int cmd_replay(struct admin_call *x)
{
	kj__handle_replay(x->d, x->c, x->id, x->arg); /* answers when every recipe has */
	return LATER;
}
static int cmd_maint(struct admin_call *x)
{
	int r = start_maint(x->d, x->c, x->id, x->cmd, x->arg, x->a);
	return r == 0 ? LATER : r; /* offloop.c answers when the job has finished */
}
static int cmd_export(struct admin_call *x)
{
	int r = do_export(x->d, x->c, x->id, x->arg, x->a);
	return r == 0 ? LATER : r;
}
static int cmd_import(struct admin_call *x)
{
	int r = do_import(x->d, x->c, x->id, x->arg, x->a);
	return r == 0 ? LATER : r;
}

/* The one list of admin commands.  restricted: it changes or stops the
 * service, administrators only (access.c); "stats zero" is too. */
static const struct admin_cmd {
	const char *name;
	int restricted;
	int (*run)(struct admin_call *x);
} admin_cmds[] = {
	{ "stats", 0, cmd_stats },   { "targets", 0, cmd_targets }, { "remote", 0, cmd_remote },
	{ "kernels", 0, cmd_kernels }, { "ls", 0, cmd_ls },         { "show", 0, cmd_show },
	{ "replay", 1, cmd_replay }, { "gc", 1, cmd_maint },        { "verify", 1, cmd_maint },
	{ "clear", 1, cmd_maint },   { "export", 1, cmd_export },   { "import", 1, cmd_import },
	{ "config", 0, cmd_config },
};

/* Runs cmd (arg) for request id on c and answers, or leaves the answer to
 * the command (LATER). */
static void admin_run(struct kj__daemon *d, struct kj__conn *c, uint32_t id, char *cmd, char *arg)
{
	struct answer a = { 0 };
	const struct admin_cmd *row = NULL;
	int r;

	for (size_t i = 0; i < KJ_ARRAY_SIZE(admin_cmds) && row == NULL; i++)
		if (strcmp(cmd, admin_cmds[i].name) == 0)
			row = &admin_cmds[i];
	int zero = row && row->run == cmd_stats && arg && strcmp(arg, "zero") == 0;
	if (row && (row->restricted || zero) && kj__admin_refused(d, c, id, zero ? "stats zero" : cmd))
		goto out;
	if (row == NULL) {
		snprintf(a.error, sizeof a.error, "unknown admin command '%s'", cmd);
		r = KJIT_EINVAL;
	} else if ((r = row->run(&(struct admin_call){ d, c, id, cmd, arg, &a })) == LATER) {
		goto out;
	}
	if (r < 0 && a.error[0] == '\0')
		snprintf(a.error, sizeof a.error, "%s failed: %s", cmd, kjit_strerror(r));
	kj__admin_answer(c, id, r, &a.text, &a.json, a.error);
out:
	kj__buf_free(&a.text);
	kj__buf_free(&a.json);
}

/* An admin command waiting for the publishes in flight (publish.c). */
struct admin_later {
	struct kj__daemon *d;
	struct kj__conn *c; /* referenced */
	uint32_t id;
	char *cmd, *arg;
};

static void admin_later_run(void *p)
{
	struct admin_later *l = p;

	admin_run(l->d, l->c, l->id, l->cmd, l->arg);
	kj__conn_unref(l->c);
	free(l->cmd);
	free(l->arg);
	free(l);
}

void kj__handle_admin(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const struct kj__msg *m)
{
	char *cmd = NULL, *arg = NULL;
	struct admin_later *l;

	if (kj__field_strdup(kj__msg_get(m, KJ_F_CMD), 32, &cmd) < 0 || cmd == NULL ||
	    kj__field_strdup(kj__msg_get(m, KJ_F_ARG), 4096, &arg) < 0) {
		kj__conn_error(c, id, KJIT_EINVAL, "malformed admin request");
		goto out;
	}
	/* A chunk of a streamed bundle: at once, in order (the client waits
	 * for each answer); administrators only, as import is. */
	if (strcmp(cmd, "import-data") == 0) {
		if (!kj__admin_refused(d, c, id, "import"))
			kj__upload_chunk(d, c, id, arg, kj__msg_get(m, KJ_F_DATA));
		goto out;
	}
	/* after the publishes in flight: it sees every object answered before it */
	if (kj__publish_pending(d) && (l = calloc(1, sizeof *l)) != NULL) {
		*l = (struct admin_later){ d, c, id, cmd, arg };
		kj__conn_ref(c);
		kj__publish_when_idle(d, admin_later_run, l);
		return;
	}
	admin_run(d, c, id, cmd, arg);
out:
	free(cmd);
	free(arg);
}
