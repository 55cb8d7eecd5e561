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
 * leaves the cache untouched.  Export runs on a thread of offloop.c (it
 * reads the index through a connection of its own and the object files,
 * and writes the bundle: bundle-export.c); kjitd's loop only answers.
 * Each imported object's entry points are read from its own symbols
 * (compilers/symbols.c) for the index's entries column (schema 5), so
 * requests for its entries are checked as for a compiled one.
 * Both read and write files by path, so they are refused to peers other
 * than the daemon's own user (or root): a system kjitd must not write or
 * probe files for other users.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle-int.h"
#include "compiler.h"
#include "daemon.h"
#include "kj_types.h"
#include "lowered.h"
#include "sha.h"
#include "util.h"

/* ---- import ---- */

struct bentry {
	struct kj__cache_entry e;
	char *strs[6];       /* source_name, options, compiler, log, lowered, entries: owned */
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
		for (int k = 0; k < 6; k++)
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

/* An import as one task of offloop.c: its run, on a thread, checks the
 * whole bundle, then places each entry the index lacks through a bulk
 * publish (cache/bulk.c); its finish, on the loop, enters them in the
 * table.  kj__bundle_import is the same two steps in a row. */
struct import_task {
	struct kj__cache *cache;
	char *path;
	int fd;              /* a bundle the client streamed (upload.c), or -1: open path */
	struct kj__cache_bulk *bulk;
	uint64_t placed, present, imported;
	int r;
	int entering;        /* the checks and the placing are done: runs are empty */
	char err[512];
};

/* Places each entry the index does not have yet (counted in t->placed;
 * the others in t->present).  0, or the first failure with t->err set. */
static int place_all(struct import_task *t, int fd, struct bentry *be, uint32_t count)
{
	int r;

	if ((r = kj__cache_bulk_new(t->cache, &t->bulk)) < 0) {
		snprintf(t->err, sizeof t->err, "importing: cannot open the index: %s", kjit_strerror(r));
		return r;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint8_t *data;
		if (kj__cache_bulk_has(t->bulk, be[i].e.key)) {
			t->present++;
			continue;
		}
		r = load_object(fd, &be[i], &data);
		/* its entry points, from its own symbols (the bundle's word is not
		 * taken): what requests are checked against (reply.c) */
		if (r == 0 && kj__entries_list(data, be[i].e.size, &be[i].strs[5]) == 0)
			be[i].e.entries = be[i].strs[5];
		if (r == 0)
			r = kj__cache_bulk_add(t->bulk, &be[i].e, data, be[i].e.size);
		free(data);
		if (r < 0)
			break;
		t->placed++;
	}
	int e = kj__cache_bulk_end(t->bulk);
	if (r >= 0 && e < 0)
		r = e;
	if (r < 0)
		snprintf(t->err, sizeof t->err, "importing failed after %llu entries: %s", (unsigned long long)t->placed,
			 kjit_strerror(r));
	return r < 0 ? r : 0;
}

static void import_run(void *arg)
{
	struct import_task *t = arg;
	uint8_t hdr[BUNDLE_HDR_SIZE];
	struct bentry *be = NULL;
	uint32_t count = 0;
	uint64_t size = 0;
	int fd, r;

	if (t->entering)
		return;
	fd = t->fd >= 0 ? t->fd : open(t->path, O_RDONLY | O_CLOEXEC);
	if ((r = check_header(fd, t->path, hdr, &size, t->err, sizeof t->err)) < 0 ||
	    (r = check_trailer(fd, t->path, size, t->err, sizeof t->err)) < 0 ||
	    (r = read_manifest(fd, t->path, hdr, size, &be, &count, t->err, sizeof t->err)) < 0 ||
	    (r = check_objects(fd, be, count, t->err, sizeof t->err)) < 0)
		goto out;
	r = place_all(t, fd, be, count);
out:
	bentries_free(be, count);
	if (fd >= 0 && fd != t->fd)
		close(fd);
	t->r = r;
}

/* The loop's step: what was placed enters the table, at most
 * KJ_IMPORT_ENTER_MAX entries per step (1: more steps to come). */
static int import_enter(struct kj__daemon *d, struct import_task *t)
{
	int r = 0;

	if (t->bulk && (r = kj__cache_bulk_finish(d->cache, t->bulk, KJ_IMPORT_ENTER_MAX, &t->imported)) == 1)
		return 1;
	if (t->r < 0)
		return t->r;
	if (r < 0)
		snprintf(t->err, sizeof t->err, "importing: %s", kjit_strerror(r));
	return r;
}

static int import_finish(struct kj__daemon *d, void *arg, struct kj__buf *text, struct kj__buf *json, char *err,
			 size_t errlen)
{
	struct import_task *t = arg;
	int r = import_enter(d, t);

	if (r == 1) {
		t->entering = 1; /* the next run does nothing: a turn of the loop between two slices */
		return 1;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s", t->err);
		return r;
	}
	kj__log(d, "imported %llu entries from %s (%llu already present)", (unsigned long long)t->imported, t->path,
		(unsigned long long)t->present);
	r = kj__buf_printf(text, "import: %llu entries added, %llu already cached\n", (unsigned long long)t->imported,
			   (unsigned long long)t->present);
	r |= kj__buf_printf(json, "{\"imported\":%llu,\"present\":%llu}", (unsigned long long)t->imported,
			    (unsigned long long)t->present);
	return r ? KJIT_ENOMEM : 0;
}

static void import_free(void *arg)
{
	struct import_task *t = arg;

	kj__cache_bulk_free(t->bulk);
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	free(t);
}

static const struct kj__offloop_ops import_ops = { "import", NULL, import_run, import_finish, import_free };

static struct import_task *import_new(struct kj__daemon *d, const char *path)
{
	struct import_task *t = calloc(1, sizeof *t);

	if (t == NULL || (t->path = strdup(path)) == NULL) {
		free(t);
		return NULL;
	}
	t->cache = d->cache;
	t->fd = -1;
	return t;
}

int kj__bundle_import_task(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *path)
{
	struct import_task *t = import_new(d, path);

	return t ? kj__offloop_task(d, c, id, &import_ops, t) : KJIT_ENOMEM;
}

int kj__bundle_import_fd_task(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int fd, const char *label)
{
	struct import_task *t = import_new(d, label);

	if (t == NULL) {
		close(fd);
		return KJIT_ENOMEM;
	}
	t->fd = fd;
	return kj__offloop_task(d, c, id, &import_ops, t);
}

int kj__bundle_import(struct kj__daemon *d, const char *path, uint64_t *imported, uint64_t *present, char *err,
		      size_t errlen)
{
	struct import_task *t = import_new(d, path);
	int r;

	*imported = *present = 0;
	if (t == NULL)
		return KJIT_ENOMEM;
	import_run(t);
	while ((r = import_enter(d, t)) == 1)
		;
	if (r < 0)
		snprintf(err, errlen, "%s", t->err);
	*imported = t->imported;
	*present = t->present;
	import_free(t);
	return r;
}
