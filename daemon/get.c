/* get.c: answering GET, kjitd's one hot request.
 *
 * A request is checked field by field, its bundled kernel (if named) is
 * looked up in the manifest, its target resolved (request, else the
 * daemon's --*-arch, else detection), its includes resolved, and its key
 * computed.  A hit is answered from the cache at once.  A miss joins the
 * flight for its key if one is open (single-flight: one compile per key,
 * the others answered "joined" with the same bytes), or opens one and
 * queues a compile job.  When the job ends every waiter is answered, then
 * the object is published, so a publish failure (a full disk) costs the
 * clients nothing but a later recompile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler.h"
#include "daemon.h"
#include "kjit.h"
#include "sha.h"
#include "targetid.h"
#include "util.h"

struct waiter {
	struct kj__conn *c;
	uint32_t id;
};

struct kj__flight {
	char key[65];
	struct kj__daemon *d;
	struct waiter *w;
	size_t n_w, cap_w;
	struct kj__job job;
	struct kj__cache_entry e;   /* what the index will say; strings owned */
	char *source_name, *options, *compiler;
	struct kj__buf recipe;      /* the request without target and version */
	uint64_t t0;
	struct kj__pool *pool;      /* the compiler family it runs on */
};

/* A request being resolved (it may wait for its pool to say hello). */
struct get_req {
	struct kj__daemon *d;
	struct kj__conn *c;
	uint32_t id;
	uint64_t t0;
	int backend;
	char *target, *version, *kernel, *source_name, *target_from;
	char *kernel_path;          /* a bundled kernel's source file */
	uint8_t *raw;               /* the request's bytes, for the memo */
	size_t raw_len;
	uint8_t *source;
	size_t source_len;
	char **entries;
	size_t n_entries;
	char **options;
	size_t n_options;
	char **hnames;
	uint8_t **hdata;
	size_t *hlen;
	size_t n_headers;
	char *family;               /* the request's compiler choice, or NULL */
	struct kj__pool *pool;      /* the pool that compiles it */
};

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void get_req_free(struct get_req *g)
{
	if (g == NULL)
		return;
	free(g->target);
	free(g->version);
	free(g->kernel);
	free(g->source_name);
	free(g->target_from);
	free(g->kernel_path);
	free(g->family);
	free(g->raw);
	free(g->source);
	strv_free(g->entries, g->n_entries);
	strv_free(g->options, g->n_options);
	strv_free(g->hnames, g->n_headers);
	for (size_t i = 0; g->hdata && i < g->n_headers; i++)
		free(g->hdata[i]);
	free(g->hdata);
	free(g->hlen);
	if (g->c)
		kj__conn_unref(g->c);
	free(g);
}

static void count_error(struct kj__daemon *d, int code)
{
	switch (code) {
	case KJIT_ECOMPILE: d->stats[KJ_STAT_ERR_COMPILE]++; break;
	case KJIT_ETARGET:
	case KJIT_ENOTARGET: d->stats[KJ_STAT_ERR_TARGET]++; break;
	case KJIT_EWORKER: d->stats[KJ_STAT_ERR_WORKER]++; break;
	case KJIT_ETIMEDOUT: d->stats[KJ_STAT_ERR_TIMEOUT]++; break;
	case KJIT_EINVAL:
	case KJIT_EINCLUDE:
	case KJIT_ETOOBIG:
	case KJIT_ENOKERNEL:
	case KJIT_EPROTO: d->stats[KJ_STAT_ERR_INPUT]++; break;
	default: d->stats[KJ_STAT_ERR_OTHER]++; break;
	}
}

/* ---- the flight table: open addressing on the key's first bytes ---- */

static size_t flight_slot(const struct kj__daemon *d, const char *key)
{
	size_t h = 0;
	for (int i = 0; i < 16; i++)
		h = h * 16 + (size_t)(key[i] <= '9' ? key[i] - '0' : key[i] - 'a' + 10);
	return h & (d->flights_cap - 1);
}

static struct kj__flight *flight_find(struct kj__daemon *d, const char *key)
{
	if (d->flights_cap == 0)
		return NULL;
	for (size_t i = flight_slot(d, key);; i = (i + 1) & (d->flights_cap - 1)) {
		struct kj__flight *f = d->flights[i];
		if (f == NULL)
			return NULL;
		if (strcmp(f->key, key) == 0)
			return f;
	}
}

static int flight_insert(struct kj__daemon *d, struct kj__flight *f)
{
	if ((d->flights_n + 1) * 2 > d->flights_cap) {
		size_t cap = d->flights_cap ? d->flights_cap * 2 : 64;
		struct kj__flight **old = d->flights;
		size_t old_cap = d->flights_cap;
		d->flights = calloc(cap, sizeof *d->flights);
		if (d->flights == NULL) {
			d->flights = old;
			return KJIT_ENOMEM;
		}
		d->flights_cap = cap;
		for (size_t i = 0; i < old_cap; i++) {
			if (old[i] == NULL)
				continue;
			size_t j = flight_slot(d, old[i]->key);
			while (d->flights[j])
				j = (j + 1) & (cap - 1);
			d->flights[j] = old[i];
		}
		free(old);
	}
	size_t j = flight_slot(d, f->key);
	while (d->flights[j])
		j = (j + 1) & (d->flights_cap - 1);
	d->flights[j] = f;
	d->flights_n++;
	return 0;
}

static void flight_remove(struct kj__daemon *d, struct kj__flight *f)
{
	size_t i = flight_slot(d, f->key);

	while (d->flights[i] != f)
		i = (i + 1) & (d->flights_cap - 1);
	d->flights[i] = NULL;
	d->flights_n--;
	/* Re-insert the rest of the cluster (backward-shift deletion). */
	for (size_t j = (i + 1) & (d->flights_cap - 1); d->flights[j]; j = (j + 1) & (d->flights_cap - 1)) {
		struct kj__flight *g = d->flights[j];
		d->flights[j] = NULL;
		size_t k = flight_slot(d, g->key);
		while (d->flights[k])
			k = (k + 1) & (d->flights_cap - 1);
		d->flights[k] = g;
	}
}

static void flight_free(struct kj__flight *f)
{
	for (size_t i = 0; i < f->n_w; i++)
		kj__conn_unref(f->w[i].c);
	free(f->w);
	kj__buf_free(&f->job.frame);
	kj__buf_free(&f->recipe);
	free(f->source_name);
	free(f->options);
	free(f->compiler);
	free(f);
}

void kj__flights_free(struct kj__daemon *d)
{
	for (size_t i = 0; i < d->flights_cap; i++)
		if (d->flights[i])
			flight_free(d->flights[i]);
	free(d->flights);
	d->flights = NULL;
	d->flights_cap = d->flights_n = 0;
}

static int flight_add_waiter(struct kj__flight *f, struct kj__conn *c, uint32_t id)
{
	if (f->n_w == f->cap_w) {
		size_t cap = f->cap_w ? f->cap_w * 2 : 4;
		struct waiter *w = realloc(f->w, cap * sizeof *w);
		if (w == NULL)
			return KJIT_ENOMEM;
		f->w = w;
		f->cap_w = cap;
	}
	kj__conn_ref(c);
	f->w[f->n_w].c = c;
	f->w[f->n_w].id = id;
	f->n_w++;
	return 0;
}

/* ---- replies ---- */

static void send_object(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int status, const char *key,
			const char *target, const char *version, const uint8_t *data, size_t len, const char *log)
{
	struct kj__buf b = { 0 };

	if (!kj__conn_alive(c))
		return;
	if (kj__buf_reserve(&b, len + 512 + (log ? strlen(log) : 0)) < 0 ||
	    kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, 0) < 0 ||
	    kj__msg_put_u32(&b, KJ_F_STATUS, (uint32_t)status) < 0 || kj__msg_put_str(&b, KJ_F_KEY, key) < 0 ||
	    kj__msg_put_str(&b, KJ_F_TARGET, target) < 0 || kj__msg_put_str(&b, KJ_F_VERSION, version) < 0 ||
	    (log && *log && kj__msg_put_str(&b, KJ_F_LOG, log) < 0) ||
	    kj__msg_put(&b, KJ_F_DATA, data, len) < 0) {
		kj__buf_free(&b);
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		return;
	}
	d->stats[KJ_STAT_BYTES_SERVED] += len;
	kj__conn_send(c, &b);
}

/* Answers a hit from the hot set without copying the object, if it is
 * there; 1 if answered. */
static int send_hot_hit(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *key,
			const char *target, const char *version)
{
	const uint8_t *data;
	size_t len;
	uint32_t saved = 0;
	struct kj__buf b = { 0 };

	if (kj__cache_peek(d->cache, key, &data, &len, &saved) < 0)
		return 0;
	d->stats[KJ_STAT_SAVED_MS] += saved;
	if (!kj__conn_alive(c))
		return 1;
	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, 0) < 0 ||
	    kj__msg_put_u32(&b, KJ_F_STATUS, KJIT_STATUS_HIT) < 0 || kj__msg_put_str(&b, KJ_F_KEY, key) < 0 ||
	    kj__msg_put_str(&b, KJ_F_TARGET, target) < 0 || kj__msg_put_str(&b, KJ_F_VERSION, version) < 0 ||
	    kj__msg_put_ext(&b, KJ_F_DATA, len) < 0 || kj__msg_end_ext(&b, len) < 0) {
		kj__buf_free(&b);
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		return 1;
	}
	d->stats[KJ_STAT_BYTES_SERVED] += len;
	kj__conn_send_ext(c, &b, data, len);
	return 1;
}

static void send_compile_error(struct kj__conn *c, uint32_t id, int code, const char *error, const char *log)
{
	struct kj__buf b = { 0 };

	if (!kj__conn_alive(c))
		return;
	if (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, code) < 0 ||
	    kj__msg_put_str(&b, KJ_F_ERROR, error) < 0 || (log && kj__msg_put_str(&b, KJ_F_LOG, log) < 0)) {
		kj__buf_free(&b);
		kj__conn_error(c, id, code, "%s", error);
		return;
	}
	kj__conn_send(c, &b);
}

static void record_latency(struct kj__daemon *d, uint64_t t0)
{
	uint64_t us = kj__now_us() - t0;
	unsigned i = 0;

	while (i + 1 < KJ_LAT_BUCKETS && us >= (1ull << i))
		i++;
	d->lat_hist[i]++;
}

/* ---- recipes, for replay ---- */

/* What replay needs to make this request again: the bundled kernel's name,
 * or the source, its headers, entries and options. */
static int build_recipe(struct kj__flight *f, const struct get_req *g)
{
	struct kj__buf *b = &f->recipe;
	int r = kj__msg_begin(b, KJ_MSG_GET, 0);

	r = r ? r : kj__msg_put_u32(b, KJ_F_BACKEND, (uint32_t)g->backend);
	if (g->family) /* the compiler the request chose */
		r = r ? r : kj__msg_put_str(b, KJ_F_COMPILER, g->family);
	if (g->kernel) {
		r = r ? r : kj__msg_put_str(b, KJ_F_KERNEL, g->kernel);
		return r ? r : kj__msg_end(b);
	}
	r = r ? r : kj__msg_put_str(b, KJ_F_SOURCE_NAME, f->source_name);
	r = r ? r : kj__msg_put(b, KJ_F_SOURCE, g->source, g->source_len);
	for (size_t i = 0; r == 0 && i < g->n_entries; i++)
		r = kj__msg_put_str(b, KJ_F_ENTRY, g->entries[i]);
	for (size_t i = 0; r == 0 && i < g->n_options; i++)
		r = kj__msg_put_str(b, KJ_F_OPTION, g->options[i]);
	for (size_t i = 0; r == 0 && i < g->n_headers; i++) {
		r = kj__msg_put_str(b, KJ_F_HEADER_NAME, g->hnames[i]);
		r = r ? r : kj__msg_put(b, KJ_F_HEADER_DATA, g->hdata[i], g->hlen[i]);
	}
	return r ? r : kj__msg_end(b);
}

static void store_recipe(struct kj__daemon *d, struct kj__flight *f)
{
	uint8_t dg[KJ_SHA256_LEN];
	char hex[65];

	if (f->recipe.len <= KJ_FRAME_HDR_SIZE ||
	    kj__sha256(f->recipe.p + KJ_FRAME_HDR_SIZE, f->recipe.len - KJ_FRAME_HDR_SIZE, dg) < 0)
		return;
	kj__hex(dg, hex);
	if (kj__cache_recipe_store(d->cache, f->key, hex, f->recipe.p, f->recipe.len) < 0)
		kj__log(d, "could not store the recipe of %s: `kjit warm --replay` will not rebuild it", f->key);
}

/* ---- compile completion ---- */

static void on_job_done(struct kj__job *job, int code, const struct kj__msg *res, const char *error)
{
	struct kj__flight *f = job->data;
	struct kj__daemon *d = f->d;
	char *log = NULL, *err = NULL;
	const struct kj__field *data = NULL;
	uint64_t us = 0;
	int32_t wcode = code;

	flight_remove(d, f);
	if (code == 0 && res) {
		if (kj__field_i32(kj__msg_get(res, KJ_F_CODE), &wcode) < 0)
			wcode = KJIT_EWORKER;
		kj__field_strdup(kj__msg_get(res, KJ_F_LOG), KJ_LOG_MAX + 64, &log);
		kj__field_strdup(kj__msg_get(res, KJ_F_ERROR), 1024, &err);
		kj__field_u64(kj__msg_get(res, KJ_F_COMPILE_US), &us);
		data = kj__msg_get(res, KJ_F_DATA);
		if (wcode == 0 && (data == NULL || data->len == 0 || data->len > KJ_OBJECT_MAX)) {
			wcode = data && data->len > KJ_OBJECT_MAX ? KJIT_ETOOBIG : KJIT_EWORKER;
			free(err);
			err = kj__strdup(wcode == KJIT_ETOOBIG ? "the compiled object is over the size limit"
							     : "the compiler returned no object");
		}
	}
	/* To a client, KJIT_ETIMEDOUT means the daemon did not answer; a
	 * compile that ran out of time is its worker's failure. */
	int counted_as = wcode;
	if (wcode == KJIT_ETIMEDOUT)
		wcode = KJIT_EWORKER;
	if (wcode < 0) {
		char line[1200];
		const char *why = err ? err : error ? error : kjit_strerror(wcode);
		if (wcode == KJIT_ECOMPILE)
			snprintf(line, sizeof line, "%s rejected %s for %s: %s", kj__pool_family(f->pool),
				 f->source_name ? f->source_name : "the source", f->e.target, why);
		else
			snprintf(line, sizeof line, "%s", why);
		for (size_t i = 0; i < f->n_w; i++) {
			count_error(d, counted_as);
			send_compile_error(f->w[i].c, f->w[i].id, wcode, line, log);
		}
		if (wcode == KJIT_ECOMPILE) /* the source's fault: answer its repeats from memory */
			kj__negcache_put(d->negcache, f->key, wcode, line, log);
		kj__log(d, "compile %s failed: %s", f->key, line);
		goto out;
	}
	d->stats[KJ_STAT_COMPILES]++;
	d->stats[KJ_STAT_COMPILE_MS] += us / 1000;
	for (size_t i = 0; i < f->n_w; i++) {
		int status = i == 0 ? KJIT_STATUS_COMPILED : KJIT_STATUS_JOINED;
		if (i > 0) {
			d->stats[KJ_STAT_JOINED]++;
			d->stats[KJ_STAT_SAVED_MS] += us / 1000;
		}
		send_object(d, f->w[i].c, f->w[i].id, status, f->key, f->e.target, f->e.version, data->p, data->len,
			    log);
	}
	f->e.compile_ms = us / 1000;
	f->e.log = log;
	int r = kj__cache_publish(d->cache, &f->e, data->p, data->len);
	if (r < 0) {
		d->stats[KJ_STAT_PUBLISH_ERRORS]++;
		kj__log(d, "could not store %s (%s): served, not cached", f->key, kjit_strerror(r));
	} else {
		store_recipe(d, f);
	}
out:
	free(log);
	free(err);
	flight_free(f);
}

/* ---- request parsing ---- */

/* The request's compiler choice (COMPILER, a family name such as "nvcc"),
 * which must build for its backend.  0, or KJIT_EBACKEND with err. */
static int parse_family(struct get_req *g, const struct kj__msg *m, char *err, size_t errlen)
{
	const struct kj__compiler_ops *ops;

	if (kj__field_strdup(kj__msg_get(m, KJ_F_COMPILER), KJ_NAME_MAX, &g->family) < 0) {
		snprintf(err, errlen, "the compiler name is malformed (a family such as nvcc: letters and digits)");
		return KJIT_EINVAL;
	}
	if (g->family == NULL)
		return 0;
	ops = kj__name_ok(g->family) && strcmp(g->family, "test") != 0 ? kj__compiler_find(g->family) : NULL;
	if (ops == NULL || ops->backend != g->backend) {
		snprintf(err, errlen, "compiler '%.32s' does not build for %s (hip: hiprtc or hipcc; cuda: nvrtc or nvcc; "
			 "vulkan: shaderc)", kj__name_ok(g->family) ? g->family : "?", kjit_backend_name(g->backend));
		return KJIT_EBACKEND;
	}
	return 0;
}

static int dup_strs(const struct kj__msg *m, uint16_t tag, size_t max_count, size_t max_len, char ***out,
		    size_t *n)
{
	size_t pos = 0, count = 0;

	while (kj__msg_next(m, tag, &pos))
		count++;
	*out = NULL;
	*n = 0;
	if (count > max_count)
		return KJIT_ETOOBIG;
	if (count == 0)
		return 0;
	*out = calloc(count, sizeof **out);
	if (*out == NULL)
		return KJIT_ENOMEM;
	pos = 0;
	for (size_t i = 0; i < count; i++) {
		int r = kj__field_strdup(kj__msg_next(m, tag, &pos), max_len, &(*out)[i]);
		*n = i + 1;
		if (r < 0)
			return r;
	}
	return 0;
}

/* Headers come as HEADER_NAME then HEADER_DATA, pair by pair. */
static int parse_headers(struct get_req *g, const struct kj__msg *m, char *err, size_t errlen)
{
	size_t count = 0, total = 0;

	for (size_t i = 0; i < m->n; i++)
		count += m->f[i].tag == KJ_F_HEADER_NAME;
	if (count > KJ_HEADERS_MAX_COUNT) {
		snprintf(err, errlen, "%zu headers: more than the %d allowed", count, KJ_HEADERS_MAX_COUNT);
		return KJIT_ETOOBIG;
	}
	if (count == 0)
		return 0;
	g->hnames = calloc(count, sizeof *g->hnames);
	g->hdata = calloc(count, sizeof *g->hdata);
	g->hlen = calloc(count, sizeof *g->hlen);
	if (!g->hnames || !g->hdata || !g->hlen)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		if (m->f[i].tag != KJ_F_HEADER_NAME)
			continue;
		if (i + 1 >= m->n || m->f[i + 1].tag != KJ_F_HEADER_DATA) {
			snprintf(err, errlen, "header name without its data");
			return KJIT_EINVAL;
		}
		size_t k = g->n_headers++;
		if (kj__field_strdup(&m->f[i], KJ_NAME_MAX, &g->hnames[k]) < 0 || g->hnames[k][0] == '\0') {
			snprintf(err, errlen, "a header name is empty, too long or holds a NUL");
			return KJIT_EINVAL;
		}
		total += m->f[i + 1].len;
		if (total > KJ_HEADERS_MAX_TOTAL) {
			snprintf(err, errlen, "headers total over the %u-byte limit", KJ_HEADERS_MAX_TOTAL);
			return KJIT_ETOOBIG;
		}
		g->hlen[k] = m->f[i + 1].len;
		g->hdata[k] = malloc(g->hlen[k] + 1);
		if (g->hdata[k] == NULL)
			return KJIT_ENOMEM;
		memcpy(g->hdata[k], m->f[i + 1].p, g->hlen[k]);
		g->hdata[k][g->hlen[k]] = '\0';
	}
	return 0;
}

static int parse_get(struct get_req *g, const struct kj__msg *m, char *err, size_t errlen)
{
	uint32_t backend = 0;
	const struct kj__field *src;
	int r;

	if (kj__field_u32(kj__msg_get(m, KJ_F_BACKEND), &backend) < 0 || kjit_backend_name((int)backend) == NULL) {
		snprintf(err, errlen, "unknown or missing backend; use hip, cuda or vulkan");
		return KJIT_EBACKEND;
	}
	g->backend = (int)backend;
	if ((r = kj__field_strdup(kj__msg_get(m, KJ_F_TARGET), KJ_TARGET_MAX - 1, &g->target)) < 0 ||
	    (g->target && !kj__token_ok(g->target, KJ_TARGET_MAX))) {
		snprintf(err, errlen, "the target is malformed (too long, or holds '/', spaces or control characters)");
		return KJIT_ETARGET;
	}
	if ((r = kj__field_strdup(kj__msg_get(m, KJ_F_VERSION), KJ_VERSION_STR_MAX - 1, &g->version)) < 0 ||
	    (g->version && !kj__token_ok(g->version, KJ_VERSION_STR_MAX))) {
		snprintf(err, errlen, "the runtime version is malformed");
		return KJIT_EINVAL;
	}
	kj__field_strdup(kj__msg_get(m, KJ_F_TARGET_SOURCE), 64, &g->target_from);
	if ((r = parse_family(g, m, err, errlen)) < 0)
		return r;
	if (kj__field_strdup(kj__msg_get(m, KJ_F_KERNEL), KJ_NAME_MAX, &g->kernel) < 0 ||
	    (g->kernel && !kj__name_ok(g->kernel))) {
		snprintf(err, errlen, "the kernel name is malformed (letters, digits, '._+-' only)");
		return KJIT_EINVAL;
	}
	if (kj__field_strdup(kj__msg_get(m, KJ_F_SOURCE_NAME), KJ_NAME_MAX, &g->source_name) < 0 ||
	    (g->source_name && !kj__name_ok(g->source_name))) {
		snprintf(err, errlen, "the source name is malformed (a file name: letters, digits, '._+-' only)");
		return KJIT_EINVAL;
	}
	src = kj__msg_get(m, KJ_F_SOURCE);
	if ((src == NULL) == (g->kernel == NULL)) {
		snprintf(err, errlen, "a request names exactly one of a source or a bundled kernel");
		return KJIT_EINVAL;
	}
	if (src) {
		if (src->len == 0) {
			snprintf(err, errlen, "the source is empty");
			return KJIT_EINVAL;
		}
		if (src->len > KJ_SOURCE_MAX) {
			snprintf(err, errlen, "the source is %u bytes, over the %u-byte limit", src->len, KJ_SOURCE_MAX);
			return KJIT_ETOOBIG;
		}
		g->source = malloc(src->len + 1);
		if (g->source == NULL)
			return KJIT_ENOMEM;
		memcpy(g->source, src->p, src->len);
		g->source[src->len] = '\0';
		g->source_len = src->len;
	}
	r = dup_strs(m, KJ_F_ENTRY, KJ_ENTRIES_MAX_COUNT, KJ_NAME_MAX, &g->entries, &g->n_entries);
	if (r < 0) {
		snprintf(err, errlen, "entry points: too many, too long, or holding a NUL");
		return r;
	}
	for (size_t i = 0; i < g->n_entries; i++) {
		if (!kj__name_ok(g->entries[i])) {
			snprintf(err, errlen, "entry point name is malformed (letters, digits, '._+-' only)");
			return KJIT_EINVAL;
		}
	}
	r = dup_strs(m, KJ_F_OPTION, KJ_OPTIONS_MAX_COUNT, KJ_OPTION_MAX, &g->options, &g->n_options);
	if (r < 0) {
		snprintf(err, errlen, "options: too many, too long, or holding a NUL");
		return r;
	}
	return parse_headers(g, m, err, errlen);
}

int kj__get_check(const struct kj__msg *m, char *err, size_t errlen)
{
	struct get_req *g = calloc(1, sizeof *g);
	int r;

	if (g == NULL)
		return KJIT_ENOMEM;
	r = parse_get(g, m, err, errlen);
	g->c = NULL;
	get_req_free(g);
	return r;
}

/* Replaces the request's source by the bundled kernel's. */
static int load_kernel(struct get_req *g, char *err, size_t errlen)
{
	struct kj__daemon *d = g->d;
	const struct kj__kernel *k = kj__manifest_find(&d->manifest, g->kernel, g->backend);
	char *path = NULL;
	int r;

	if (k == NULL) {
		snprintf(err, errlen, "no bundled %s kernel named '%s'; `kjit warm --backend %s` lists what there is",
			 kjit_backend_name(g->backend), g->kernel, kjit_backend_name(g->backend));
		return KJIT_ENOKERNEL;
	}
	path = kj__asprintf("%s/%s", d->cfg.kernels_dir, k->file);
	if (path == NULL)
		return KJIT_ENOMEM;
	r = kj__read_file(path, KJ_SOURCE_MAX, &g->source, &g->source_len);
	g->kernel_path = path;
	if (r < 0) {
		snprintf(err, errlen, "bundled kernel '%s': cannot read %s: %s", g->kernel, k->file, strerror(-r));
		return KJIT_EIO;
	}
	const char *base = strrchr(k->file, '/');
	g->source_name = kj__strdup(base ? base + 1 : k->file);
	/* The manifest's entries and options come first; a request may add options. */
	if (g->n_entries == 0 && k->n_entries > 0) {
		g->entries = calloc(k->n_entries, sizeof *g->entries);
		if (g->entries == NULL)
			return KJIT_ENOMEM;
		for (size_t i = 0; i < k->n_entries; i++, g->n_entries++)
			if ((g->entries[i] = kj__strdup(k->entries[i])) == NULL)
				return KJIT_ENOMEM;
	}
	if (k->n_options > 0) {
		char **o = calloc(k->n_options + g->n_options, sizeof *o);
		if (o == NULL)
			return KJIT_ENOMEM;
		for (size_t i = 0; i < k->n_options; i++)
			o[i] = kj__strdup(k->options[i]);
		for (size_t i = 0; i < g->n_options; i++)
			o[k->n_options + i] = g->options[i];
		free(g->options);
		g->options = o;
		g->n_options += k->n_options;
		for (size_t i = 0; i < k->n_options; i++)
			if (o[i] == NULL)
				return KJIT_ENOMEM;
	}
	return g->source_name ? 0 : KJIT_ENOMEM;
}

/* The target when the request has none: configuration, then detection. */
static int default_target(struct kj__daemon *d, int backend, const char **out, const char **from)
{
	if (d->cfg.arch[backend]) {
		*out = d->cfg.arch[backend];
		*from = "kjitd configuration";
		return 0;
	}
	for (size_t i = 0; i < d->n_gpus; i++) {
		if (d->gpus[i].backend == backend) {
			*out = d->gpus[i].target;
			*from = "detected";
			return 0;
		}
	}
	return KJIT_ENOTARGET;
}

static const char *object_ext(int backend, const char *target)
{
	switch (backend) {
	case KJIT_BACKEND_HIP: return "hsaco";
	case KJIT_BACKEND_CUDA: return strncmp(target, "compute_", 8) == 0 ? "ptx" : "cubin";
	default: return "spv";
	}
}

static char *join_options(char **v, size_t n)
{
	struct kj__buf b = { 0 };

	for (size_t i = 0; i < n; i++)
		if ((i && kj__buf_append(&b, " ", 1) < 0) || kj__buf_append(&b, v[i], strlen(v[i])) < 0) {
			kj__buf_free(&b);
			return NULL;
		}
	if (kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

static int build_job(struct kj__flight *f, struct get_req *g, const struct kj__includes *inc)
{
	struct kj__buf *b = &f->job.frame;
	int r = kj__msg_begin(b, KJ_MSG_JOB, f->job.id);

	r = r ? r : kj__msg_put_str(b, KJ_F_TARGET, f->e.target);
	for (size_t i = 0; r == 0 && i < g->n_options; i++)
		r = kj__msg_put_str(b, KJ_F_OPTION, g->options[i]);
	for (size_t i = 0; r == 0 && i < g->n_entries; i++)
		r = kj__msg_put_str(b, KJ_F_ENTRY, g->entries[i]);
	r = r ? r : kj__msg_put_str(b, KJ_F_SOURCE_NAME, f->source_name);
	r = r ? r : kj__msg_put(b, KJ_F_SOURCE, g->source, g->source_len);
	for (size_t i = 0; r == 0 && i < inc->n; i++) {
		r = kj__msg_put_str(b, KJ_F_HEADER_NAME, inc->names[i]);
		r = r ? r : kj__msg_put(b, KJ_F_HEADER_DATA, inc->data[i], inc->len[i]);
	}
	return r ? r : kj__msg_end(b);
}

/* 1 if path holds exactly the n bytes at p (read again now). */
static int file_holds(const char *path, const uint8_t *p, size_t n)
{
	uint8_t *now = NULL;
	size_t len = 0;
	int same = kj__read_file(path, KJ_SOURCE_MAX + KJ_HEADERS_MAX_TOTAL, &now, &len) == 0 && len == n &&
		   memcmp(now, p, n) == 0;
	free(now);
	return same;
}

/* The deepest existing directory of incdir/name's path (incdir itself at
 * worst), stat'ed into st: its mtime changes when name, or a directory on
 * the way to it, is created.  malloc'd, or NULL (no memory, or no
 * directory at all). */
static char *missing_watch(const char *incdir, const char *name, struct stat *st)
{
	char *p = kj__asprintf("%s/%s", incdir, name);
	size_t root = strlen(incdir);

	while (p != NULL) {
		char *slash = strrchr(p, '/');
		if (slash == NULL || (size_t)(slash - p) < root) {
			free(p);
			return NULL;
		}
		*slash = '\0';
		if (stat(p, st) == 0 && S_ISDIR(st->st_mode))
			return p;
	}
	return NULL;
}

/* Remembers what g's bytes resolved to, with the files that went into the
 * key.  Each file is stat'ed, then read again and compared with the bytes
 * that were hashed, so the identity kept matches those bytes; a file that
 * changed meanwhile means nothing is remembered.  For an include name found
 * nowhere, the directory where it would appear is watched instead. */
static void memo_remember(struct get_req *g, const struct kj__includes *inc, const char *incdir,
			  const char *key, const char *target, const char *version)
{
	struct kj__memo_hit hit = { .backend = g->backend };
	const char *paths[2 * KJ_HEADERS_MAX_COUNT + 1];
	char *owned[2 * KJ_HEADERS_MAX_COUNT + 1];
	struct stat st[2 * KJ_HEADERS_MAX_COUNT + 1];
	size_t n = 0, n_owned = 0;
	int ok = g->raw != NULL;

	if (g->kernel_path && ok) {
		paths[n] = g->kernel_path;
		ok = stat(paths[n], &st[n]) == 0 && file_holds(paths[n], g->source, g->source_len);
		n++;
	}
	for (size_t i = 0; ok && i < inc->n && n < KJ_ARRAY_SIZE(paths); i++) {
		int from_request = 0;
		for (size_t j = 0; j < g->n_headers && !from_request; j++)
			from_request = strcmp(g->hnames[j], inc->names[i]) == 0;
		if (from_request)
			continue; /* its bytes are in the request */
		if ((owned[n_owned] = kj__asprintf("%s/%s", incdir, inc->names[i])) == NULL) {
			ok = 0;
			break;
		}
		paths[n] = owned[n_owned++];
		ok = stat(paths[n], &st[n]) == 0 && file_holds(paths[n], inc->data[i], inc->len[i]);
		n++;
	}
	for (size_t i = 0; ok && i < inc->n_missing && n < KJ_ARRAY_SIZE(paths); i++) {
		if ((owned[n_owned] = missing_watch(incdir, inc->missing[i], &st[n])) == NULL) {
			ok = 0;
			break;
		}
		paths[n++] = owned[n_owned++];
	}
	if (ok) {
		snprintf(hit.key, sizeof hit.key, "%s", key);
		snprintf(hit.target, sizeof hit.target, "%s", target);
		snprintf(hit.version, sizeof hit.version, "%s", version);
		kj__memo_put(g->d->memo, g->raw, g->raw_len, &hit, paths, st, n);
	}
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
}

/* 1 if g asks for C++ name expressions: their lowered names come back as
 * "kjit: lowered name: ..." lines of the log (compilers/compint.h), which
 * the index keeps and a hit must send too. */
static int wants_lowered(const struct get_req *g)
{
	for (size_t i = 0; i < g->n_options; i++)
		if (strncmp(g->options[i], "--name-expression=", 18) == 0)
			return 1;
	return 0;
}

/* The lowered-name lines of key's stored log (malloc'd), or NULL. */
static char *lowered_log(struct kj__daemon *d, const char *key)
{
	static const char prefix[] = "kjit: lowered name: ";
	struct kj__cache_entry e;
	struct kj__buf b = { 0 };

	if (kj__cache_get(d->cache, key, &e) < 0)
		return NULL;
	for (const char *p = e.log; p && *p;) {
		size_t n = strcspn(p, "\n");
		if (strncmp(p, prefix, sizeof prefix - 1) == 0 && kj__buf_append(&b, p, n) == 0)
			kj__buf_append(&b, "\n", 1);
		p += n + (p[n] == '\n');
	}
	kj__cache_entry_free(&e);
	if (b.len == 0 || kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

/* A miss for an AMD target with features set (gfx90a:xnack+) that describes
 * the process's mode (not an explicit request for that build) may be served
 * by an object built for a compatible target with fewer features set
 * (gfx90a:xnack+ is served by gfx90a): clang's isCompatibleTargetID, never
 * the reverse.  Tries each such target's key; 1 with key, target filled
 * when one is cached. */
static int compatible_object(struct kj__daemon *d, const struct kj__key_input *ki, char key[65],
			     char target[KJ_TARGET_MAX])
{
	struct kj__amd_target want, t;
	char err[128], name[KJ_TARGET_MAX], k[65];

	if (ki->backend != KJIT_BACKEND_HIP || kj__amd_target_parse(ki->target, &want, err, sizeof err) < 0)
		return 0;
	/* One feature dropped, then both: the most specific object first. */
	static const int drops[][2] = { { 0, 1 }, { 1, 0 }, { 1, 1 } };
	for (size_t i = 0; i < KJ_ARRAY_SIZE(drops); i++) {
		t = want;
		if (drops[i][0])
			t.xnack = KJ_FEAT_ANY;
		if (drops[i][1])
			t.sramecc = KJ_FEAT_ANY;
		if ((t.xnack == want.xnack && t.sramecc == want.sramecc) || !kj__amd_target_compatible(&t, &want) ||
		    kj__amd_target_format(&t, name, sizeof name) < 0)
			continue;
		struct kj__key_input alt = *ki;
		alt.target = name;
		if (kj__cache_key(&alt, k) == 0 && kj__cache_peek_exists(d->cache, k)) {
			memcpy(key, k, sizeof k);
			snprintf(target, KJ_TARGET_MAX, "%s", name);
			return 1;
		}
	}
	return 0;
}

static void get_resolved(void *arg, int code, const char *error)
{
	struct get_req *g = arg;
	struct kj__daemon *d = g->d;
	struct kj__pool *pool = g->pool;
	struct kj__includes inc = { 0 };
	struct kj__flight *f = NULL;
	char err[1024] = "", canon[KJ_TARGET_MAX], key[65];
	const char *target = g->target, *from = g->target_from ? g->target_from : "request";
	uint8_t *data = NULL;
	size_t len = 0;
	int r = code;

	if (r < 0) {
		snprintf(err, sizeof err, "%s", error ? error : kjit_strerror(r));
		goto fail;
	}
	if (target == NULL && default_target(d, g->backend, &target, &from) < 0) {
		static const char *const example[] = { "", "gfx90a", "sm_90", "vulkan1.2" };
		const char *var = kj__target_env_name(g->backend);
		snprintf(err, sizeof err, "no %s target: none requested, configured or detected (%s); set %s, e.g. %s=%s",
			 kjit_backend_name(g->backend),
			 d->detect_note[g->backend][0] ? d->detect_note[g->backend] : "no device found", var, var,
			 example[g->backend]);
		r = KJIT_ENOTARGET;
		goto fail;
	}
	char terr[256] = "";
	r = kj__target_canon(g->backend, target, canon, sizeof canon, terr, sizeof terr);
	if (r < 0) {
		snprintf(err, sizeof err, "target '%s' (from %s): %s", target, from, terr);
		goto fail;
	}
	const char *version = g->version ? g->version : kj__pool_runtime_version(pool);
	const char *dir = NULL;
	char *incdir = kj__asprintf("%s/include", d->cfg.kernels_dir);
	if (incdir == NULL) {
		r = KJIT_ENOMEM;
		goto fail;
	}
	dir = incdir;
	r = kj__includes_resolve(g->source_name, g->source, g->source_len, (const char *const *)g->hnames,
				 (const uint8_t *const *)g->hdata, g->hlen, g->n_headers, &dir, 1, &inc, err,
				 sizeof err);
	if (r < 0) {
		free(incdir);
		goto fail;
	}
	struct kj__key_input ki = {
		.backend = g->backend,
		.compiler = kj__pool_identity(pool),
		.target = canon,
		.version = version,
		.options = (const char *const *)g->options,
		.n_options = g->n_options,
		.entries = (const char *const *)g->entries,
		.n_entries = g->n_entries,
		.source = g->source,
		.source_len = g->source_len,
		.header_names = (const char *const *)inc.names,
		.header_data = (const uint8_t *const *)inc.data,
		.header_len = inc.len,
		.n_headers = inc.n,
		.missing = (const char *const *)inc.missing,
		.n_missing = inc.n_missing,
	};
	r = kj__cache_key(&ki, key);
	if (r == 0 && !wants_lowered(g)) /* a memo hit would not carry them */
		memo_remember(g, &inc, incdir, key, canon, version);
	free(incdir);
	if (r < 0)
		goto fail;
	struct kj__cache_entry e;
	r = kj__cache_lookup(d->cache, key, &data, &len, &e);
	if (r == 0) {
		d->stats[KJ_STAT_HITS]++;
		d->stats[KJ_STAT_SAVED_MS] += e.compile_ms;
		char *lowered = wants_lowered(g) ? lowered_log(d, key) : NULL;
		send_object(d, g->c, g->id, KJIT_STATUS_HIT, key, canon, version, data, len, lowered);
		free(lowered);
		record_latency(d, g->t0);
		free(data);
		goto out;
	}
	/* An explicit target asks for exactly that build; a target that came
	 * from the process's environment, kjitd's configuration or detection
	 * describes the mode the process runs in, which a compatible object
	 * (features left unspecified) serves. */
	char ckey[65], ctarget[KJ_TARGET_MAX];
	int explicit_target = g->target != NULL && g->target_from == NULL;
	if (!explicit_target && compatible_object(d, &ki, ckey, ctarget) &&
	    kj__cache_lookup(d->cache, ckey, &data, &len, &e) == 0) {
		d->stats[KJ_STAT_HITS]++;
		d->stats[KJ_STAT_SAVED_MS] += e.compile_ms;
		char *lowered = wants_lowered(g) ? lowered_log(d, ckey) : NULL;
		send_object(d, g->c, g->id, KJIT_STATUS_HIT, ckey, ctarget, version, data, len, lowered);
		free(lowered);
		record_latency(d, g->t0);
		free(data);
		goto out;
	}
	/* A compile of these exact bytes failed moments ago (negcache.c). */
	int ncode;
	const char *nline, *nlog;
	if (kj__negcache_get(d->negcache, key, &ncode, &nline, &nlog)) {
		count_error(d, ncode);
		send_compile_error(g->c, g->id, ncode, nline, nlog);
		goto out;
	}
	d->stats[KJ_STAT_MISSES]++;
	f = flight_find(d, key);
	if (f) {
		r = flight_add_waiter(f, g->c, g->id);
		if (r < 0)
			goto fail;
		f = NULL;
		goto out;
	}
	f = calloc(1, sizeof *f);
	if (f == NULL) {
		r = KJIT_ENOMEM;
		goto fail;
	}
	memcpy(f->key, key, sizeof key);
	f->d = d;
	f->t0 = g->t0;
	f->job.data = f;
	f->job.done = on_job_done;
	f->pool = pool;
	f->job.id = g->id;
	memcpy(f->e.key, key, sizeof key);
	f->e.backend = g->backend;
	snprintf(f->e.target, sizeof f->e.target, "%s", canon);
	snprintf(f->e.version, sizeof f->e.version, "%s", version);
	snprintf(f->e.ext, sizeof f->e.ext, "%s", object_ext(g->backend, canon));
	f->source_name = kj__strdup(g->kernel ? g->source_name : g->source_name ? g->source_name : "source");
	f->options = join_options(g->options, g->n_options);
	f->compiler = kj__strdup(kj__pool_identity(pool));
	f->e.source_name = f->source_name;
	f->e.options = f->options;
	f->e.compiler = f->compiler;
	if (!f->source_name || !f->options || !f->compiler || flight_add_waiter(f, g->c, g->id) < 0) {
		r = KJIT_ENOMEM;
		goto fail;
	}
	r = build_job(f, g, &inc);
	if (r == 0 && build_recipe(f, g) != 0)
		kj__buf_free(&f->recipe); /* replay will miss it; the compile goes on */
	if (r < 0) {
		snprintf(err, sizeof err, "the request is too large to hand to a compiler");
		goto fail;
	}
	r = flight_insert(d, f);
	if (r < 0)
		goto fail;
	kj__log(d, "compile %s: %s for %s (%s), uid %u pid %d", f->key, f->source_name, f->e.target,
		kj__pool_family(pool), (unsigned)kj__conn_uid(g->c), (int)kj__conn_pid(g->c));
	kj__pool_submit(pool, &f->job); /* may finish (and free f) at once */
	f = NULL;
	goto out;
fail:
	if (f)
		flight_free(f);
	f = NULL;
	count_error(d, r);
	kj__log(d, "refused a get from uid %u pid %d: %s", (unsigned)kj__conn_uid(g->c), (int)kj__conn_pid(g->c),
		err[0] ? err : kjit_strerror(r));
	kj__conn_error(g->c, g->id, r, "%s", err[0] ? err : kjit_strerror(r));
out:
	kj__includes_free(&inc);
	get_req_free(g);
}

static const char *family_for(struct kj__daemon *d, int backend)
{
	switch (backend) {
	case KJIT_BACKEND_HIP: return d->cfg.hip_compiler ? d->cfg.hip_compiler : "hiprtc";
	case KJIT_BACKEND_CUDA: return d->cfg.cuda_compiler ? d->cfg.cuda_compiler : "nvrtc";
	default: return "shaderc";
	}
}

/* The pool of g's compiler: the backend's configured family, or the one
 * the request chose (--compiler), each started on first use.  0 or a
 * negative code. */
static int pool_for(struct kj__daemon *d, struct get_req *g)
{
	const char *def = family_for(d, g->backend);
	int alt = g->family && strcmp(g->family, def) != 0;
	struct kj__pool **slot = alt ? &d->alt_pools[g->backend] : &d->pools[g->backend];
	int r = 0;

	if (*slot == NULL)
		r = kj__pool_new(d, alt ? g->family : def, slot);
	g->pool = *slot;
	return r;
}

/* The hit path: these exact bytes were resolved before, and the object is
 * in the cache.  1 if answered. */
static int answer_from_memo(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const uint8_t *body,
			    size_t len, uint64_t t0)
{
	struct kj__memo_hit mh;
	struct kj__cache_entry e;
	uint8_t *data = NULL;
	size_t n = 0;

	if (!kj__memo_find(d->memo, body, len, &mh))
		return 0;
	if (!send_hot_hit(d, c, id, mh.key, mh.target, mh.version)) {
		if (kj__cache_lookup(d->cache, mh.key, &data, &n, &e) < 0)
			return 0;
		d->stats[KJ_STAT_SAVED_MS] += e.compile_ms;
		send_object(d, c, id, KJIT_STATUS_HIT, mh.key, mh.target, mh.version, data, n, NULL);
		free(data);
	}
	d->stats[KJ_STAT_HITS]++;
	record_latency(d, t0);
	return 1;
}

void kj__handle_get(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const struct kj__msg *m,
		    const uint8_t *body, size_t len)
{
	uint64_t t0 = kj__now_us();
	struct get_req *g;
	char err[512] = "";
	int r;

	if (answer_from_memo(d, c, id, body, len, t0))
		return;
	g = calloc(1, sizeof *g);
	if (g == NULL) {
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		return;
	}
	kj__conn_ref(c);
	g->d = d;
	g->c = c;
	g->id = id;
	g->t0 = t0;
	if (len > 0 && (g->raw = malloc(len)) != NULL) {
		memcpy(g->raw, body, len);
		g->raw_len = len;
	}
	r = parse_get(g, m, err, sizeof err);
	if (r == 0 && g->kernel)
		r = load_kernel(g, err, sizeof err);
	if (r == 0)
		r = pool_for(d, g);
	if (r < 0) {
		count_error(d, r);
		kj__log(d, "refused a get from uid %u pid %d: %s", (unsigned)kj__conn_uid(c), (int)kj__conn_pid(c),
			err[0] ? err : kjit_strerror(r));
		kj__conn_error(c, id, r, "%s", err[0] ? err : kjit_strerror(r));
		get_req_free(g);
		return;
	}
	kj__pool_when_ready(g->pool, get_resolved, g);
}
