/* key.c: the cache key, SHA-256 of a canonical encoding of a request.
 *
 * The encoding is an on-disk compatibility contract (docs/cache.md): the
 * same inputs must give the same key in every kjit release that reads the
 * same cache, so change it only together with KEY_VERSION_TAG.  It is:
 *
 *   "kjit-key-v1"                 11 ASCII bytes, no length, no NUL
 *   then fields, each {u8 tag, u64 little-endian length, bytes}:
 *   1 backend name ("hip", "cuda", "vulkan")
 *   2 compiler identity and version
 *   3 canonical target
 *   4 runtime version
 *   5 option, once per option, in the caller's order
 *   6 entry point, sorted by strcmp, duplicates dropped: only for the
 *     vulkan backend (shaderc's entry point changes the SPIR-V); hip and
 *     cuda (NVRTC, nvcc, hiprtc, hipcc) build the same object whatever
 *     entries are asked, which every answer checks against the object's
 *     list instead (daemon/net/reply.c), so their keys have no tag 6: the key
 *     an entry-less request always had.  kj__cache_key_legacy keeps tag 6
 *     for every backend: the key such requests had before (docs/cache.md,
 *     "Entry points and old caches").
 *   7 source bytes
 *   8 header name, 9 header bytes: a pair per header, sorted by name
 *  10 include name looked for and found nowhere, in the caller's (sorted)
 *     order; absent when there are none, so older keys are unchanged
 *
 * Every field is length-prefixed and tagged, so no two different inputs
 * encode to the same bytes.  The hash is SHA-256 (common/sha.h).  Nothing
 * here allocates except the sorted index arrays and the hash's context;
 * nothing is kept between calls.
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "sha.h"

#define KEY_VERSION_TAG "kjit-key-v1"

enum key_tag {
	TAG_BACKEND = 1,
	TAG_COMPILER = 2,
	TAG_TARGET = 3,
	TAG_VERSION = 4,
	TAG_OPTION = 5,
	TAG_ENTRY = 6,
	TAG_SOURCE = 7,
	TAG_HEADER_NAME = 8,
	TAG_HEADER_DATA = 9,
	TAG_MISSING = 10,
};

static int put_field(struct kj__sha *s, uint8_t tag, const void *p, size_t n)
{
	uint8_t hdr[9];
	uint64_t len = n;

	hdr[0] = tag;
	for (int i = 0; i < 8; i++)
		hdr[1 + i] = (uint8_t)(len >> (8 * i));
	int r = kj__sha_update(s, hdr, sizeof hdr);
	if (r == 0 && n > 0)
		r = kj__sha_update(s, p, n);
	return r;
}

static int put_str(struct kj__sha *s, uint8_t tag, const char *str)
{
	return put_field(s, tag, str, strlen(str));
}

/* qsort over an array of indices into a string array. */
struct sort_ctx {
	const char *const *strs;
};

static int cmp_idx(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *ctx = arg;
	return strcmp(ctx->strs[*(const size_t *)a], ctx->strs[*(const size_t *)b]);
}

/* Indices 0..n-1 ordered by strs[i]; malloc'd (NULL when n == 0). */
static int sorted_index(const char *const *strs, size_t n, size_t **out)
{
	struct sort_ctx ctx = { strs };
	size_t *ix;

	*out = NULL;
	if (n == 0)
		return 0;
	ix = malloc(n * sizeof *ix);
	if (ix == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	qsort_r(ix, n, sizeof *ix, cmp_idx, &ctx);
	*out = ix;
	return 0;
}

static int check_input(const struct kj__key_input *in)
{
	if (kjit_backend_name(in->backend) == NULL || in->compiler == NULL ||
	    in->target == NULL || in->version == NULL)
		return KJIT_EINVAL;
	if ((in->n_options && in->options == NULL) || (in->n_entries && in->entries == NULL) ||
	    (in->source_len && in->source == NULL))
		return KJIT_EINVAL;
	if (in->n_headers && (in->header_names == NULL || in->header_data == NULL ||
			      in->header_len == NULL))
		return KJIT_EINVAL;
	for (size_t i = 0; i < in->n_options; i++)
		if (in->options[i] == NULL)
			return KJIT_EINVAL;
	for (size_t i = 0; i < in->n_entries; i++)
		if (in->entries[i] == NULL)
			return KJIT_EINVAL;
	for (size_t i = 0; i < in->n_headers; i++)
		if (in->header_names[i] == NULL || (in->header_len[i] && in->header_data[i] == NULL))
			return KJIT_EINVAL;
	if (in->n_missing && in->missing == NULL)
		return KJIT_EINVAL;
	for (size_t i = 0; i < in->n_missing; i++)
		if (in->missing[i] == NULL)
			return KJIT_EINVAL;
	return 0;
}

int kj__cache_key_entries_in(int backend)
{
	return backend == KJIT_BACKEND_VULKAN;
}

/* The key of in; entries encoded (tag 6) only when with_entries. */
static int key_of(const struct kj__key_input *in, int with_entries, char hex[65])
{
	struct kj__sha *s = NULL;
	size_t *ent = NULL, *hdr = NULL;
	uint8_t d[KJ_SHA256_LEN];
	int r;

	r = check_input(in);
	if (r < 0)
		return r;
	if ((r = sorted_index(in->entries, in->n_entries, &ent)) < 0 ||
	    (r = sorted_index(in->header_names, in->n_headers, &hdr)) < 0 ||
	    (r = kj__sha_new(&s)) < 0)
		goto out;
	/* Two headers of one name would make the key depend on which one the
	 * compiler picks: refuse them. */
	for (size_t i = 1; i < in->n_headers; i++) {
		if (strcmp(in->header_names[hdr[i - 1]], in->header_names[hdr[i]]) == 0) {
			r = KJIT_EINVAL;
			goto out;
		}
	}
	r = kj__sha_update(s, KEY_VERSION_TAG, strlen(KEY_VERSION_TAG));
	if (r == 0)
		r = put_str(s, TAG_BACKEND, kjit_backend_name(in->backend));
	if (r == 0)
		r = put_str(s, TAG_COMPILER, in->compiler);
	if (r == 0)
		r = put_str(s, TAG_TARGET, in->target);
	if (r == 0)
		r = put_str(s, TAG_VERSION, in->version);
	for (size_t i = 0; r == 0 && i < in->n_options; i++)
		r = put_str(s, TAG_OPTION, in->options[i]);
	for (size_t i = 0; r == 0 && with_entries && i < in->n_entries; i++) {
		const char *e = in->entries[ent[i]];
		if (i > 0 && strcmp(in->entries[ent[i - 1]], e) == 0)
			continue;
		r = put_str(s, TAG_ENTRY, e);
	}
	if (r == 0)
		r = put_field(s, TAG_SOURCE, in->source, in->source_len);
	for (size_t i = 0; r == 0 && i < in->n_headers; i++) {
		size_t h = hdr[i];
		r = put_str(s, TAG_HEADER_NAME, in->header_names[h]);
		if (r == 0)
			r = put_field(s, TAG_HEADER_DATA, in->header_data[h], in->header_len[h]);
	}
	for (size_t i = 0; r == 0 && i < in->n_missing; i++)
		r = put_str(s, TAG_MISSING, in->missing[i]);
	if (r == 0)
		r = kj__sha_final(s, d);
	if (r < 0)
		goto out;
	kj__hex(d, hex);
	r = 0;
out:
	kj__sha_free(s);
	free(ent);
	free(hdr);
	return r;
}

int kj__cache_key(const struct kj__key_input *in, char hex[65])
{
	return key_of(in, kj__cache_key_entries_in(in->backend), hex);
}

int kj__cache_key_legacy(const struct kj__key_input *in, char hex[65])
{
	return key_of(in, 1, hex);
}
