/* bundle-export.c: `kjit export`, the writing half of bundle.c's format
 * (bundle-int.h, docs/bundle.md), as one task of offloop.c: its run, on a
 * thread, scans the index through a connection of its own
 * (kj__cache_scan), reads and checks each object against its digest
 * (a corrupt one is skipped and counted) and writes the bundle (header,
 * manifest, objects read and checked again, trailer digest, fsync) as cp
 * would write a file; kjitd's loop only answers.  Refused, like import,
 * to peers other than kjitd's own user and root (admin.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle-int.h"
#include "daemon.h"
#include "outfile.h"
#include "kj_types.h"
#include "sha.h"
#include "util.h"

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

/* An export as one task of offloop.c: its run, on a thread, scans the
 * index through a connection of its own (kj__cache_scan), reads and
 * checks each object and writes the bundle; the loop only answers. */
struct export_task {
	const char *cache_dir;       /* the daemon's, unchanged while it runs */
	struct kj__cache *cache;
	char *path;
	char **targets;
	size_t n_targets;
	struct kj__cache_entry *ents; /* what the manifest holds: fixed fields only */
	size_t n, cap;
	struct kj__buf manifest;
	struct kj__buf rec;
	uint64_t exported, skipped;
	int r;
	char err[512];
};

/* Reads an entry's object and checks it against the index's digest. */
static int read_verified(const char *cache_dir, const struct kj__cache_entry *e, uint8_t **data, size_t *len)
{
	uint8_t dg[KJ_SHA256_LEN];
	char hex[65];
	char *path = kj__asprintf("%s/%s-%s/%s.%s", cache_dir, e->target, e->version, e->key, e->ext);
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

/* Pass 1, for each row of the index: an entry of a wanted target whose
 * object is there and holds its digest goes into the manifest (its
 * record) and into t->ents (its fixed fields); the others are counted in
 * t->skipped.  0 or KJIT_ENOMEM. */
static int collect(const struct kj__cache_entry *e, void *arg)
{
	struct export_task *t = arg;
	int want = t->n_targets == 0, r;
	uint8_t *data = NULL, rl[4];
	size_t len;

	for (size_t i = 0; i < t->n_targets && !want; i++)
		want = strcmp(t->targets[i], e->target) == 0;
	if (!want)
		return 0;
	if (read_verified(t->cache_dir, e, &data, &len) < 0) {
		t->skipped++; /* missing or corrupt: `kjit verify` drops it */
		return 0;
	}
	free(data);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct kj__cache_entry *p = realloc(t->ents, cap * sizeof *p);
		if (p == NULL)
			return KJIT_ENOMEM;
		t->ents = p;
		t->cap = cap;
	}
	t->rec.len = 0;
	if ((r = record_of(e, &t->rec)) < 0)
		return r;
	put32(rl, (uint32_t)t->rec.len);
	if (kj__buf_append(&t->manifest, rl, 4) < 0 || kj__buf_append(&t->manifest, t->rec.p, t->rec.len) < 0)
		return KJIT_ENOMEM;
	struct kj__cache_entry *slim = &t->ents[t->n++];
	*slim = *e;
	slim->source_name = slim->options = slim->compiler = slim->log = slim->lowered = NULL;
	return 0;
}

/* Writes the bundle of ents[0..n) with its manifest to fd: header,
 * manifest, the objects (pass 2: each read and checked again as it is
 * copied), the trailer, fsync.  0, or a negative code with err set. */
static int write_bundle(const char *cache_dir, int fd, const char *path, const struct kj__buf *manifest,
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
		r = read_verified(cache_dir, &ents[i], &data, &len);
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

static void export_run(void *arg)
{
	struct export_task *t = arg;
	struct kj__outfile o = { .fd = -1 };
	int r;

	if ((r = kj__cache_scan(t->cache, collect, t)) < 0)
		goto out;
	/* As cp would: a regular file replaced whole, a symlink followed; no
	 * device or FIFO (common/outfile.h). */
	if (kj__outfile_open(&o, t->path, KJ_OUT_REGULAR_ONLY, t->err, sizeof t->err) < 0) {
		r = KJIT_EIO;
		goto out;
	}
	if ((r = write_bundle(t->cache_dir, o.fd, t->path, &t->manifest, t->ents, t->n, t->err, sizeof t->err)) < 0)
		goto out;
	if (kj__outfile_commit(&o, t->err, sizeof t->err) < 0) {
		r = KJIT_EIO;
		goto out;
	}
	t->exported = t->n;
	r = 0;
out:
	if (o.fd >= 0)
		kj__outfile_abort(&o);
	t->r = r;
}

static int export_begin(struct kj__daemon *d, void *arg, char *err, size_t errlen)
{
	kj__cache_flush(d->cache); /* the index's order of use as the loop knows it */
	return 0;
}

static int export_finish(struct kj__daemon *d, void *arg, struct kj__buf *text, struct kj__buf *json, char *err,
			 size_t errlen)
{
	struct export_task *t = arg;
	int r;

	if (t->skipped)
		kj__log(d, "export: skipped %llu object(s) missing or corrupt (`kjit verify` drops them)",
			(unsigned long long)t->skipped);
	if (t->r < 0) {
		snprintf(err, errlen, "%s", t->err);
		return t->r;
	}
	kj__log(d, "exported %llu entries to %s", (unsigned long long)t->exported, t->path);
	r = kj__buf_printf(text, "export: %llu entries written to %s%s\n", (unsigned long long)t->exported, t->path,
			   t->skipped ? " (some corrupt objects skipped; run `kjit verify`)" : "");
	r |= kj__buf_printf(json, "{\"exported\":%llu,\"skipped\":%llu,\"file\":", (unsigned long long)t->exported,
			    (unsigned long long)t->skipped);
	r |= kj__json_str(json, t->path);
	r |= kj__buf_printf(json, "}");
	return r ? KJIT_ENOMEM : 0;
}

static void export_free(void *arg)
{
	struct export_task *t = arg;

	for (size_t i = 0; i < t->n_targets; i++)
		free(t->targets[i]);
	free(t->targets);
	free(t->path);
	free(t->ents);
	kj__buf_free(&t->manifest);
	kj__buf_free(&t->rec);
	free(t);
}

static const struct kj__offloop_ops export_ops = { "export", export_begin, export_run, export_finish, export_free };

int kj__bundle_export(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *path,
		      const char *const *targets, size_t n_targets)
{
	struct export_task *t = calloc(1, sizeof *t);

	if (t == NULL)
		return KJIT_ENOMEM;
	t->cache_dir = d->cfg.cache_dir;
	t->cache = d->cache;
	if ((t->path = strdup(path)) == NULL || (n_targets && (t->targets = calloc(n_targets, sizeof *t->targets)) == NULL))
		goto nomem;
	for (size_t i = 0; i < n_targets; i++, t->n_targets++)
		if ((t->targets[i] = strdup(targets[i])) == NULL)
			goto nomem;
	return kj__offloop_task(d, c, id, &export_ops, t);
nomem:
	export_free(t);
	return KJIT_ENOMEM;
}
