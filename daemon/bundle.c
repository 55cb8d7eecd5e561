/* bundle.c: `kjit export` and `kjit import`: one self-describing file that
 * carries cache entries to machines that have no compiler.
 *
 * Format, version 1 (docs/bundle.md), all integers little-endian:
 *     "KJITBNDL"  u32 format version  u32 entry count  u64 manifest length
 *     manifest: per entry, u32 record length + a record of fields
 *               {u16 tag, u32 length, bytes} (the framing of proto.h)
 *     the objects, concatenated in manifest order
 *     SHA-256 of every byte before it (32 bytes)
 * Import checks the trailer, the format, every record and every object's
 * digest before it publishes anything, so a damaged or truncated bundle
 * leaves the cache untouched.  Both read and write files by path, so they
 * are refused to peers other than the daemon's own user (or root): a
 * system kjitd must not write or probe files for other users.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "outfile.h"
#include "kj_types.h"
#include "lowered.h"
#include "sha.h"
#include "util.h"

#define BUNDLE_MAGIC "KJITBNDL"
#define BUNDLE_VERSION 1
#define BUNDLE_HDR_SIZE 24           /* magic, version, count, manifest length */
#define BUNDLE_RECORD_MAX (1u << 20) /* one entry's metadata, its log included */
#define BUNDLE_ENTRIES_MAX 10000000u
/* The least a valid record takes: its length, the headers of its twelve
 * fields, two 64-digit hex strings and three u64s.  Bounds the entry count
 * by the manifest's length before anything is allocated for it. */
#define BUNDLE_RECORD_MIN (4 + 12 * 6 + 2 * 64 + 3 * 8)

enum bundle_tag {
	B_KEY = 1, B_BACKEND, B_TARGET, B_VERSION, B_EXT, B_SIZE, B_SHA256, B_SOURCE_NAME,
	B_OPTIONS, B_COMPILER, B_COMPILE_MS, B_LOG,
	B_LOWERED, /* optional: a bundle of older kjit has its lowered names in B_LOG */
};

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

static int put_field(struct kj__buf *b, uint16_t tag, const void *p, size_t n)
{
	uint8_t h[6] = { (uint8_t)tag, (uint8_t)(tag >> 8) };
	put32(h + 2, (uint32_t)n);
	int r = kj__buf_append(b, h, sizeof h);
	return r ? r : kj__buf_append(b, p, n);
}

static int put_str(struct kj__buf *b, uint16_t tag, const char *s)
{
	return put_field(b, tag, s ? s : "", s ? strlen(s) : 0);
}

static int put_u64(struct kj__buf *b, uint16_t tag, uint64_t v)
{
	uint8_t p[8];
	put64(p, v);
	return put_field(b, tag, p, sizeof p);
}

/* ---- export ---- */

struct key_list {
	char (*keys)[65];
	size_t n, cap;
	const char *const *targets;
	size_t n_targets;
};

static int collect(const struct kj__cache_entry *e, void *arg)
{
	struct key_list *l = arg;
	int want = l->n_targets == 0;

	for (size_t i = 0; i < l->n_targets && !want; i++)
		want = strcmp(l->targets[i], e->target) == 0;
	if (!want)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char (*k)[65] = realloc(l->keys, cap * sizeof *k);
		if (k == NULL)
			return KJIT_ENOMEM;
		l->keys = k;
		l->cap = cap;
	}
	memcpy(l->keys[l->n++], e->key, 65);
	return 0;
}

/* Reads an entry's object and checks it against the index's digest. */
static int read_verified(struct kj__daemon *d, const struct kj__cache_entry *e, uint8_t **data, size_t *len)
{
	uint8_t dg[KJ_SHA256_LEN];
	char hex[65];
	char *path = kj__asprintf("%s/%s-%s/%s.%s", d->cfg.cache_dir, e->target, e->version, e->key, e->ext);
	int r;

	if (path == NULL)
		return KJIT_ENOMEM;
	r = kj__read_file(path, KJ_OBJECT_MAX, data, len);
	free(path);
	if (r < 0)
		return KJIT_EIO;
	if (kj__sha256(*data, *len, dg) < 0) {
		free(*data);
		return KJIT_EINTERNAL;
	}
	kj__hex(dg, hex);
	if (*len != e->size || strcmp(hex, e->sha256) != 0) {
		free(*data);
		*data = NULL;
		return KJIT_ECORRUPT;
	}
	return 0;
}

static int record_of(const struct kj__cache_entry *e, struct kj__buf *rec)
{
	int r = put_str(rec, B_KEY, e->key);
	r |= put_u64(rec, B_BACKEND, (uint64_t)e->backend);
	r |= put_str(rec, B_TARGET, e->target);
	r |= put_str(rec, B_VERSION, e->version);
	r |= put_str(rec, B_EXT, e->ext);
	r |= put_u64(rec, B_SIZE, e->size);
	r |= put_str(rec, B_SHA256, e->sha256);
	r |= put_str(rec, B_SOURCE_NAME, e->source_name);
	r |= put_str(rec, B_OPTIONS, e->options);
	r |= put_str(rec, B_COMPILER, e->compiler);
	r |= put_u64(rec, B_COMPILE_MS, e->compile_ms);
	r |= put_str(rec, B_LOG, e->log);
	r |= put_str(rec, B_LOWERED, e->lowered);
	return r ? KJIT_ENOMEM : 0;
}

/* Writes n bytes to fd and into the running digest. */
static int emit(int fd, struct kj__sha *sha, const void *p, size_t n)
{
	if (kj__sha_update(sha, p, n) < 0)
		return KJIT_EINTERNAL;
	int r = kj__write_all(fd, p, n);
	if (r < 0) {
		errno = -r;
		return KJIT_EIO;
	}
	return 0;
}

/* The message of a failed write of the bundle at path; KJIT_EIO. */
static int write_failed(const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
	return KJIT_EIO;
}

/* Pass 1: the metadata of each listed entry whose object is there and
 * holds its digest, appended to manifest as records; the others are
 * logged and counted in *skipped.  Fills ents[0..*n_ok) (each freed with
 * kj__cache_entry_free by the caller).  0 or KJIT_ENOMEM. */
static int build_manifest(struct kj__daemon *d, const struct key_list *l, struct kj__cache_entry *ents,
			  size_t *n_ok, struct kj__buf *manifest, uint64_t *skipped)
{
	struct kj__buf rec = { 0 };
	uint8_t *data = NULL, rl[4];
	size_t len;
	int r = 0;

	for (size_t i = 0; i < l->n; i++) {
		struct kj__cache_entry *e = &ents[*n_ok];
		if (kj__cache_get(d->cache, l->keys[i], e) < 0)
			continue;
		if (read_verified(d, e, &data, &len) < 0) {
			kj__log(d, "export: skipping %s: object missing or corrupt (`kjit verify` drops it)", l->keys[i]);
			kj__cache_entry_free(e);
			(*skipped)++;
			continue;
		}
		free(data);
		data = NULL;
		rec.len = 0;
		if ((r = record_of(e, &rec)) == 0) {
			put32(rl, (uint32_t)rec.len);
			if (kj__buf_append(manifest, rl, 4) < 0 || kj__buf_append(manifest, rec.p, rec.len) < 0)
				r = KJIT_ENOMEM;
		}
		if (r < 0) {
			kj__cache_entry_free(e);
			break;
		}
		(*n_ok)++;
	}
	kj__buf_free(&rec);
	return r;
}

/* Writes the bundle of ents[0..n) with its manifest to fd: header,
 * manifest, the objects (pass 2: each read and checked again as it is
 * copied), the trailer, fsync.  0, or a negative code with err set. */
static int write_bundle(struct kj__daemon *d, int fd, const char *path, const struct kj__buf *manifest,
			const struct kj__cache_entry *ents, size_t n, char *err, size_t errlen)
{
	uint8_t hdr[BUNDLE_HDR_SIZE], dg[KJ_SHA256_LEN], *data = NULL;
	struct kj__sha *sha = NULL;
	size_t len;
	int r;

	if (kj__sha_new(&sha) < 0)
		return KJIT_ENOMEM;
	memcpy(hdr, BUNDLE_MAGIC, 8);
	put32(hdr + 8, BUNDLE_VERSION);
	put32(hdr + 12, (uint32_t)n);
	put64(hdr + 16, manifest->len);
	if ((r = emit(fd, sha, hdr, sizeof hdr)) < 0 || (r = emit(fd, sha, manifest->p, manifest->len)) < 0)
		goto io_fail;
	for (size_t i = 0; i < n; i++) {
		r = read_verified(d, &ents[i], &data, &len);
		if (r < 0) {
			snprintf(err, errlen, "object %s changed during the export; run it again", ents[i].key);
			goto out;
		}
		r = emit(fd, sha, data, len);
		free(data);
		data = NULL;
		if (r < 0)
			goto io_fail;
	}
	if (kj__sha_final(sha, dg) < 0 || kj__write_all(fd, dg, sizeof dg) < 0 || fsync(fd) < 0)
		goto io_fail;
	r = 0;
	goto out;
io_fail:
	r = write_failed(path, err, errlen);
out:
	kj__sha_free(sha);
	return r;
}

int kj__bundle_export(struct kj__daemon *d, const char *path, const char *const *targets, size_t n_targets,
		      uint64_t *exported, uint64_t *skipped, char *err, size_t errlen)
{
	struct key_list l = { .targets = targets, .n_targets = n_targets };
	struct kj__buf manifest = { 0 };
	struct kj__cache_entry *ents = NULL;
	struct kj__outfile o = { .fd = -1 };
	size_t n_ok = 0;
	int r;

	*exported = *skipped = 0;
	kj__cache_flush(d->cache);
	r = kj__cache_foreach(d->cache, NULL, collect, &l);
	if (r < 0)
		goto out;
	ents = calloc(l.n ? l.n : 1, sizeof *ents);
	if (ents == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	if ((r = build_manifest(d, &l, ents, &n_ok, &manifest, skipped)) < 0)
		goto out;
	/* As cp would: a regular file replaced whole, a symlink followed; the
	 * loop must not block, so no device or FIFO (common/outfile.h). */
	if (kj__outfile_open(&o, path, KJ_OUT_REGULAR_ONLY, err, errlen) < 0) {
		r = KJIT_EIO;
		goto out;
	}
	if ((r = write_bundle(d, o.fd, path, &manifest, ents, n_ok, err, errlen)) < 0)
		goto out;
	if (kj__outfile_commit(&o, err, errlen) < 0) {
		r = KJIT_EIO;
		goto out;
	}
	*exported = n_ok;
	r = 0;
out:
	if (o.fd >= 0)
		kj__outfile_abort(&o);
	for (size_t i = 0; ents && i < n_ok; i++)
		kj__cache_entry_free(&ents[i]);
	free(ents);
	free(l.keys);
	kj__buf_free(&manifest);
	return r;
}

/* ---- import ---- */

struct bentry {
	struct kj__cache_entry e;
	char *strs[5];       /* source_name, options, compiler, log, lowered: owned */
	uint64_t offset;     /* of the object in the file */
};

static int field_str(const struct kj__msg *m, uint16_t tag, size_t max, char **out)
{
	const struct kj__field *f = kj__msg_get(m, tag);
	return f ? kj__field_strdup(f, max, out) : KJIT_EPROTO;
}

static int fixed_str(const struct kj__msg *m, uint16_t tag, char *dst, size_t size)
{
	char *s = NULL;
	int r = field_str(m, tag, size - 1, &s);
	if (r == 0)
		snprintf(dst, size, "%s", s);
	free(s);
	return r;
}

/* be's lowered names: the record's own field, else (a bundle of older
 * kjit) the lowered-name lines of its log, taken out of it. */
static int lowered_of_record(const struct kj__msg *m, struct bentry *be)
{
	char *rest = NULL;

	if (kj__msg_get(m, B_LOWERED))
		return field_str(m, B_LOWERED, KJ_LOWERED_MAX, &be->strs[4]);
	if (kj__lowered_split_log(be->strs[3], &rest, &be->strs[4]) < 0)
		return KJIT_ENOMEM;
	free(be->strs[3]);
	be->strs[3] = rest;
	return 0;
}

/* Checks and decodes one manifest record into be. */
static int parse_record(const uint8_t *p, size_t n, struct bentry *be, char *err, size_t errlen)
{
	struct kj__msg m;
	uint64_t backend = 0;
	int r = kj__msg_decode(p, n, &m);

	if (r < 0) {
		snprintf(err, errlen, "a manifest record is malformed");
		return KJIT_ECORRUPT;
	}
	r = fixed_str(&m, B_KEY, be->e.key, sizeof be->e.key);
	r = r ? r : fixed_str(&m, B_TARGET, be->e.target, sizeof be->e.target);
	r = r ? r : fixed_str(&m, B_VERSION, be->e.version, sizeof be->e.version);
	r = r ? r : fixed_str(&m, B_EXT, be->e.ext, sizeof be->e.ext);
	r = r ? r : fixed_str(&m, B_SHA256, be->e.sha256, sizeof be->e.sha256);
	r = r ? r : kj__field_u64(kj__msg_get(&m, B_BACKEND), &backend);
	r = r ? r : kj__field_u64(kj__msg_get(&m, B_SIZE), &be->e.size);
	r = r ? r : kj__field_u64(kj__msg_get(&m, B_COMPILE_MS), &be->e.compile_ms);
	r = r ? r : field_str(&m, B_SOURCE_NAME, KJ_NAME_MAX, &be->strs[0]);
	r = r ? r : field_str(&m, B_OPTIONS, 1u << 20, &be->strs[1]);
	r = r ? r : field_str(&m, B_COMPILER, 4096, &be->strs[2]);
	r = r ? r : field_str(&m, B_LOG, KJ_LOG_MAX + 64, &be->strs[3]);
	r = r ? r : lowered_of_record(&m, be);
	kj__msg_free(&m);
	if (r < 0 || !kj__hex_ok(be->e.key) || !kj__hex_ok(be->e.sha256) || !kjit_backend_name((int)backend) ||
	    !kj__lowered_ok(be->strs[4]) ||
	    !kj__token_ok(be->e.target, KJ_TARGET_MAX) || !kj__token_ok(be->e.version, KJ_VERSION_STR_MAX) ||
	    be->e.size == 0 || be->e.size > KJ_OBJECT_MAX) {
		snprintf(err, errlen, "a manifest record has a missing or invalid field");
		return KJIT_ECORRUPT;
	}
	be->e.backend = (int)backend;
	be->e.source_name = be->strs[0];
	be->e.options = be->strs[1];
	be->e.compiler = be->strs[2];
	be->e.log = be->strs[3];
	be->e.lowered = be->strs[4] && *be->strs[4] ? be->strs[4] : NULL;
	return 0;
}

static int pread_all(int fd, void *p, size_t n, uint64_t off)
{
	uint8_t *q = p;
	while (n > 0) {
		ssize_t k = pread(fd, q, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return KJIT_EIO;
		q += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* Reads the object of be and checks its digest. */
static int load_object(int fd, const struct bentry *be, uint8_t **data)
{
	uint8_t dg[KJ_SHA256_LEN];
	char hex[65];

	*data = malloc(be->e.size);
	if (*data == NULL)
		return KJIT_ENOMEM;
	if (pread_all(fd, *data, be->e.size, be->offset) < 0 || kj__sha256(*data, be->e.size, dg) < 0)
		goto bad;
	kj__hex(dg, hex);
	if (strcmp(hex, be->e.sha256) == 0)
		return 0;
bad:
	free(*data);
	*data = NULL;
	return KJIT_ECORRUPT;
}

static void bentries_free(struct bentry *be, uint32_t count)
{
	for (uint32_t i = 0; be && i < count; i++)
		for (int k = 0; k < 5; k++)
			free(be[i].strs[k]);
	free(be);
}

/* Checks that fd (path, opened or not) starts as a bundle this kjitd
 * reads: a regular file, long enough, the magic, the format version.  0
 * with hdr and *size filled; KJIT_EIO or KJIT_ECORRUPT with err set. */
static int check_header(int fd, const char *path, uint8_t hdr[BUNDLE_HDR_SIZE], uint64_t *size, char *err,
			size_t errlen)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot read %s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
		return KJIT_EIO;
	}
	*size = (uint64_t)st.st_size;
	if (*size < BUNDLE_HDR_SIZE + KJ_SHA256_LEN || pread_all(fd, hdr, BUNDLE_HDR_SIZE, 0) < 0 ||
	    memcmp(hdr, BUNDLE_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s is not a kjit bundle (made by `kjit export`)", path);
		return KJIT_ECORRUPT;
	}
	if (get32(hdr + 8) != BUNDLE_VERSION) {
		snprintf(err, errlen, "bundle format version %u is not supported (this kjitd reads %d)", get32(hdr + 8),
			 BUNDLE_VERSION);
		return KJIT_ECORRUPT;
	}
	return 0;
}

/* The trailer first: the SHA-256 of every byte before it, so a truncated
 * or altered file stops here.  0, or KJIT_ECORRUPT, KJIT_EIO or
 * KJIT_ENOMEM (err set for the first two). */
static int check_trailer(int fd, const char *path, uint64_t size, char *err, size_t errlen)
{
	uint8_t want[KJ_SHA256_LEN], got[KJ_SHA256_LEN], *buf = malloc(1u << 20);
	struct kj__sha *sha = NULL;
	int r = KJIT_ECORRUPT;

	if (buf == NULL || kj__sha_new(&sha) < 0) {
		r = KJIT_ENOMEM;
		goto out;
	}
	for (uint64_t off = 0; off < size - KJ_SHA256_LEN;) {
		size_t n = size - KJ_SHA256_LEN - off < (1u << 20) ? (size_t)(size - KJ_SHA256_LEN - off) : (1u << 20);
		if (pread_all(fd, buf, n, off) < 0 || kj__sha_update(sha, buf, n) < 0) {
			snprintf(err, errlen, "reading %s failed", path);
			r = KJIT_EIO;
			goto out;
		}
		off += n;
	}
	if (kj__sha_final(sha, got) < 0 || pread_all(fd, want, sizeof want, size - KJ_SHA256_LEN) < 0 ||
	    memcmp(want, got, sizeof got) != 0) {
		snprintf(err, errlen, "%s is damaged or truncated (checksum mismatch); nothing was imported", path);
		goto out;
	}
	r = 0;
out:
	free(buf);
	kj__sha_free(sha);
	return r;
}

/* Parses the manifest's records into be[0..count) and places each object:
 * the records must fill the manifest exactly and the objects the rest of
 * the file up to the trailer.  0, or KJIT_ECORRUPT with err set. */
static int parse_manifest(const uint8_t *manifest, uint64_t mlen, uint64_t size, const char *path, struct bentry *be,
			  uint32_t count, char *err, size_t errlen)
{
	uint64_t off = BUNDLE_HDR_SIZE + mlen;
	size_t pos = 0;
	int r;

	for (uint32_t i = 0; i < count; i++) {
		if (mlen - pos < 4 || get32(manifest + pos) > mlen - pos - 4 || get32(manifest + pos) > BUNDLE_RECORD_MAX) {
			snprintf(err, errlen, "manifest record %u overruns the manifest; nothing was imported", i);
			return KJIT_ECORRUPT;
		}
		uint32_t rl = get32(manifest + pos);
		if ((r = parse_record(manifest + pos + 4, rl, &be[i], err, errlen)) < 0)
			return r;
		pos += 4 + rl;
		be[i].offset = off;
		if (be[i].e.size > size - KJ_SHA256_LEN - off) {
			snprintf(err, errlen, "object %u runs past the end of the bundle; nothing was imported", i);
			return KJIT_ECORRUPT;
		}
		off += be[i].e.size;
	}
	if (pos != mlen || off != size - KJ_SHA256_LEN) {
		snprintf(err, errlen, "%s has bytes the manifest does not account for; nothing was imported", path);
		return KJIT_ECORRUPT;
	}
	return 0;
}

/* Reads and parses the manifest that hdr announces, bounding its length
 * and entry count by the file before allocating anything for them.  0
 * with *out (free with bentries_free) and *count; KJIT_ECORRUPT (err
 * set), KJIT_EIO or KJIT_ENOMEM. */
static int read_manifest(int fd, const char *path, const uint8_t hdr[BUNDLE_HDR_SIZE], uint64_t size,
			 struct bentry **out, uint32_t *count, char *err, size_t errlen)
{
	uint32_t n = get32(hdr + 12);
	uint64_t mlen = get64(hdr + 16);
	uint8_t *manifest = NULL;
	struct bentry *be = NULL;
	int r;

	if (n > BUNDLE_ENTRIES_MAX || mlen > size - BUNDLE_HDR_SIZE - KJ_SHA256_LEN ||
	    mlen > (uint64_t)n * (4 + BUNDLE_RECORD_MAX) || (uint64_t)n * BUNDLE_RECORD_MIN > mlen) {
		snprintf(err, errlen, "%s has an impossible manifest; nothing was imported", path);
		return KJIT_ECORRUPT;
	}
	manifest = malloc(mlen ? mlen : 1);
	be = calloc(n ? n : 1, sizeof *be);
	if (manifest == NULL || be == NULL)
		r = KJIT_ENOMEM;
	else if (pread_all(fd, manifest, mlen, BUNDLE_HDR_SIZE) < 0)
		r = KJIT_EIO;
	else
		r = parse_manifest(manifest, mlen, size, path, be, n, err, errlen);
	free(manifest);
	if (r < 0) {
		bentries_free(be, n);
		return r;
	}
	*out = be;
	*count = n;
	return 0;
}

/* Every object's digest, before the first publish. */
static int check_objects(int fd, const struct bentry *be, uint32_t count, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < count; i++) {
		uint8_t *data;
		int r = load_object(fd, &be[i], &data);
		free(data);
		if (r < 0) {
			snprintf(err, errlen, "object %s fails its digest; nothing was imported", be[i].e.key);
			return r;
		}
	}
	return 0;
}

/* Publishes each entry the cache does not have yet (counted in
 * *imported; the others in *present).  0, or the first failure with err
 * set. */
static int publish_all(struct kj__daemon *d, int fd, struct bentry *be, uint32_t count, uint64_t *imported,
		       uint64_t *present, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < count; i++) {
		struct kj__cache_entry cur;
		uint8_t *data;
		int r;
		if (kj__cache_get(d->cache, be[i].e.key, &cur) == 0) {
			kj__cache_entry_free(&cur);
			(*present)++;
			continue;
		}
		r = load_object(fd, &be[i], &data);
		if (r == 0)
			r = kj__cache_publish(d->cache, &be[i].e, data, be[i].e.size);
		free(data);
		if (r < 0) {
			snprintf(err, errlen, "importing %s failed after %llu entries: %s", be[i].e.key,
				 (unsigned long long)*imported, kjit_strerror(r));
			return r;
		}
		(*imported)++;
	}
	return 0;
}

int kj__bundle_import(struct kj__daemon *d, const char *path, uint64_t *imported, uint64_t *present, char *err,
		      size_t errlen)
{
	uint8_t hdr[BUNDLE_HDR_SIZE];
	struct bentry *be = NULL;
	uint32_t count = 0;
	uint64_t size = 0;
	int fd, r;

	*imported = *present = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if ((r = check_header(fd, path, hdr, &size, err, errlen)) < 0 ||
	    (r = check_trailer(fd, path, size, err, errlen)) < 0 ||
	    (r = read_manifest(fd, path, hdr, size, &be, &count, err, errlen)) < 0 ||
	    (r = check_objects(fd, be, count, err, errlen)) < 0)
		goto out;
	r = publish_all(d, fd, be, count, imported, present, err, errlen);
out:
	bentries_free(be, count);
	if (fd >= 0)
		close(fd);
	return r;
}
