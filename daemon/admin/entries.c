/* entries.c: `kjit ls` and `kjit show`, what the cache holds as its
 * reader may see it: an administrator every entry, a user only those it
 * requested (access.c's rule; another user's entry is "no entry").  Each
 * answer is a human text and one JSON object, built here together so both
 * say the same.  No state of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"
#include "sha.h"
#include "util.h"

struct ls_ctx {
	struct kj__buf *text, *json;
	int first;
	int r;
};

static int ls_one(const struct kj__cache_entry *e, void *arg)
{
	struct ls_ctx *x = arg;

	x->r |= kj__buf_printf(x->text, "%s %-6s %-24s %-8s %8llu %s\n", e->key, kjit_backend_name(e->backend),
			       e->target, e->version, (unsigned long long)e->size, e->source_name ? e->source_name : "");
	x->r |= kj__buf_printf(x->json, "%s{\"key\":\"%s\",\"backend\":\"%s\",\"target\":", x->first ? "" : ",",
			       e->key, kjit_backend_name(e->backend));
	x->r |= kj__json_str(x->json, e->target);
	x->r |= kj__buf_printf(x->json, ",\"version\":");
	x->r |= kj__json_str(x->json, e->version);
	x->r |= kj__buf_printf(x->json, ",\"ext\":\"%s\",\"size\":%llu,\"hits\":%llu,\"last_used\":%lld,\"source_name\":",
			       e->ext, (unsigned long long)e->size, (unsigned long long)e->hits, (long long)e->last_used);
	x->r |= kj__json_str(x->json, e->source_name ? e->source_name : "");
	x->r |= kj__buf_printf(x->json, "}");
	x->first = 0;
	return x->r ? KJIT_ENOMEM : 0;
}

int kj__admin_ls(struct kj__daemon *d, struct kj__conn *c, const char *arg, struct kj__buf *text,
		 struct kj__buf *json)
{
	struct ls_ctx x = { text, json, 1, 0 };
	const char *target = arg && *arg ? arg : NULL;
	int all = kj__peer_is_admin(d, c), r;

	kj__cache_flush(d->cache);
	x.r |= kj__buf_printf(json, "{\"entries\":[");
	if (all)
		r = kj__cache_foreach(d->cache, target, ls_one, &x);
	else
		r = kj__cache_foreach_of(d->cache, target, kj__conn_uid(c), ls_one, &x);
	x.r |= kj__buf_printf(json, "],\"all\":%s}", all ? "true" : "false");
	return r < 0 ? r : x.r ? KJIT_ENOMEM : 0;
}

/* What an entry's object is, in words, from its extension and target:
 * "fatbin: CUDA fatbin: SASS for sm_90, PTX for compute_90". */
static void object_words(const struct kj__cache_entry *e, char *out, size_t outlen)
{
	static const char *const words[][2] = {
		{ "hsaco", "AMDGPU code object (ELF)" }, { "cubin", "CUDA ELF (SASS)" }, { "ptx", "PTX" },
		{ "spv", "SPIR-V" },
	};
	int sass = strncmp(e->target, "sm_", 3) == 0;
	const char *cc = sass ? e->target + 3 : strncmp(e->target, "compute_", 8) == 0 ? e->target + 8 : e->target;

	snprintf(out, outlen, "%s", e->ext);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(words); i++)
		if (strcmp(e->ext, words[i][0]) == 0)
			snprintf(out, outlen, "%s: %s", e->ext, words[i][1]);
	if (strcmp(e->ext, "fatbin") == 0)
		snprintf(out, outlen, "fatbin: CUDA fatbin: %s%s%sPTX for compute_%s", sass ? "SASS for " : "",
			 sass ? e->target : "", sass ? ", " : "", cc);
}

/* One field of `kjit show`: a text line "LABEL      VALUE" and a JSON
 * member (the first opens the object). */
static int show_str(struct kj__buf *text, struct kj__buf *json, const char *label, const char *name, const char *v)
{
	int r = label ? kj__buf_printf(text, "%-10s %s\n", label, v ? v : "") : 0;
	r |= kj__buf_printf(json, "%s\"%s\":", json->len ? "," : "{", name);
	return r | kj__json_str(json, v ? v : "");
}

static int show_num(struct kj__buf *text, struct kj__buf *json, const char *label, const char *name, long long v)
{
	int r = kj__buf_printf(text, "%-10s %lld\n", label, v);
	return r | kj__buf_printf(json, ",\"%s\":%lld", name, v);
}

/* The lowered names of C++ name expressions ("EXPR\tLOWERED\n" lines,
 * common/lowered.h): a line "lowered    EXPR = LOWERED" each, and the JSON
 * member "lowered":{"EXPR":"LOWERED",...}. */
static int show_lowered(struct kj__buf *text, struct kj__buf *json, const char *list)
{
	int r = kj__buf_printf(json, ",\"lowered\":{");

	for (const char *p = list; p && *p && r == 0;) {
		size_t n = strcspn(p, "\n"), t = strcspn(p, "\t");
		char *expr = kj__strndup(p, t < n ? t : n), *name = t < n ? kj__strndup(p + t + 1, n - t - 1) : NULL;
		r = expr == NULL || (t < n && name == NULL) ? KJIT_ENOMEM : 0;
		r |= r ? 0 : kj__buf_printf(text, "%-10s %s = %s\n", "lowered", expr, name ? name : "");
		r |= r ? 0 : kj__buf_printf(json, "%s", p == list ? "" : ",") | kj__json_str(json, expr) |
			     kj__buf_printf(json, ":") | kj__json_str(json, name ? name : "");
		free(expr);
		free(name);
		p += n + (p[n] == '\n');
	}
	return r | kj__buf_printf(json, "}");
}

/* The fields of one entry, in `kjit show`'s order. */
static int show_entry(const struct kj__cache_entry *e, struct kj__buf *text, struct kj__buf *json)
{
	char what[KJ_TARGET_MAX * 4];
	int r;

	object_words(e, what, sizeof what);
	r = show_str(text, json, "key", "key", e->key);
	r |= show_str(text, json, "backend", "backend", kjit_backend_name(e->backend));
	r |= show_str(text, json, "target", "target", e->target);
	r |= show_str(text, json, "version", "version", e->version);
	r |= show_str(text, json, "object", "object", what);
	r |= show_str(text, json, NULL, "ext", e->ext);
	r |= show_num(text, json, "size", "size", (long long)e->size);
	r |= show_str(text, json, "sha256", "sha256", e->sha256);
	r |= show_num(text, json, "created", "created", e->created);
	r |= show_num(text, json, "last used", "last_used", e->last_used);
	r |= show_num(text, json, "hits", "hits", (long long)e->hits);
	r |= show_num(text, json, "compile ms", "compile_ms", (long long)e->compile_ms);
	r |= show_str(text, json, "source", "source_name", e->source_name);
	r |= show_str(text, json, "options", "options", e->options);
	r |= show_str(text, json, "compiler", "compiler", e->compiler);
	r |= show_lowered(text, json, e->lowered);
	r |= kj__buf_printf(text, "log:\n%s\n", e->log ? e->log : "");
	r |= show_str(text, json, NULL, "log", e->log);
	return r | kj__buf_printf(json, "}");
}

/* A key prefix's matches among the entries the caller may see. */
struct prefix_ctx {
	const char *prefix;
	size_t len;
	unsigned n;
	char key[65];
};

static int prefix_one(const struct kj__cache_entry *e, void *arg)
{
	struct prefix_ctx *x = arg;

	if (strncmp(e->key, x->prefix, x->len) == 0 && x->n++ == 0)
		snprintf(x->key, sizeof x->key, "%s", e->key);
	return 0;
}

/* A unique prefix (6 to 63 hex digits, as --explain prints 16) made a
 * whole key in full[], looked up among the entries the caller may see
 * only: another user's entries neither match nor make it ambiguous.  0 or
 * a negative code with err set. */
static int resolve_prefix(struct kj__daemon *d, struct kj__conn *c, const char *arg, char full[65], char *err,
			  size_t errlen)
{
	size_t n = strlen(arg);
	struct prefix_ctx x = { arg, n, 0, "" };
	int r;

	if (n < 6 || n > 63 || strspn(arg, "0123456789abcdef") != n) {
		snprintf(err, errlen, "'%s' is not a cache key (64 hex digits, or a unique prefix of 6 or more; "
			 "`kjit ls` lists them)", arg);
		return KJIT_EINVAL;
	}
	if (kj__peer_is_admin(d, c))
		r = kj__cache_foreach(d->cache, NULL, prefix_one, &x);
	else
		r = kj__cache_foreach_of(d->cache, NULL, kj__conn_uid(c), prefix_one, &x);
	if (r < 0)
		return r;
	if (x.n != 1) {
		snprintf(err, errlen, x.n ? "key prefix %s matches %u entries; give more digits" : "no cache entry %s*",
			 arg, x.n);
		return x.n ? KJIT_EINVAL : KJIT_ENOENT;
	}
	memcpy(full, x.key, 65);
	return 0;
}

int kj__admin_show(struct kj__daemon *d, struct kj__conn *c, const char *arg, struct kj__buf *text,
		   struct kj__buf *json, char *err, size_t errlen)
{
	struct kj__cache_entry e;
	char full[65];
	int r;

	kj__cache_flush(d->cache);
	if (arg && !kj__hex_ok(arg)) {
		if ((r = resolve_prefix(d, c, arg, full, err, errlen)) < 0)
			return r;
		arg = full;
	} else if (arg == NULL) {
		snprintf(err, errlen, "show needs a cache key (64 hex digits, or a unique prefix; `kjit ls` lists them)");
		return KJIT_EINVAL;
	}
	/* a user's view holds only its own entries: another's is "no entry" */
	if (!kj__peer_is_admin(d, c) && !kj__cache_requested_by(d->cache, arg, kj__conn_uid(c)))
		r = KJIT_ENOENT;
	else
		r = kj__cache_get(d->cache, arg, &e);
	if (r < 0) {
		snprintf(err, errlen, "no cache entry %s", arg);
		return r;
	}
	r = show_entry(&e, text, json);
	kj__cache_entry_free(&e);
	return r ? KJIT_ENOMEM : 0;
}
