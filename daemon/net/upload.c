/* upload.c: bundles streamed by `kjit import`, so kjitd never opens a
 * user's path.
 *
 * The system kjitd runs sandboxed (ProtectHome=, PrivateTmp=, its own
 * DynamicUser): a path in a user's home or /tmp is not the file the user
 * meant, or not there at all.  So the client reads the bundle (a file, or
 * stdin for `import -`) and sends it in chunks (ADMIN import-data OFFSET,
 * the bytes in KJ_F_DATA); each is appended to the uid's upload, an unnamed
 * file (O_TMPFILE) in <cache>/tmp that disappears with its last descriptor;
 * `ADMIN import -` hands that descriptor to the import task (bundle.c),
 * which checks the bundle as it checks a file.  One upload per uid: offset
 * 0 starts afresh (dropping an unfinished one); any other offset must equal
 * the bytes received so far.  The whole is bounded by --max-size (a bundle
 * larger than the cache cannot be imported anyway).  Only administrators
 * may upload (admin.c checks, as for import).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "net-int.h"
#include "kj_types.h"
#include "proto.h"
#include "util.h"

struct kj__upload {
	uid_t uid;
	int fd;
	uint64_t bytes;
};

static struct kj__upload *find(struct kj__daemon *d, uid_t uid)
{
	for (size_t i = 0; i < d->net->n_uploads; i++)
		if (d->net->uploads[i].uid == uid)
			return &d->net->uploads[i];
	return NULL;
}

static void drop(struct kj__daemon *d, struct kj__upload *u)
{
	if (u->fd >= 0)
		close(u->fd);
	*u = d->net->uploads[--d->net->n_uploads];
}

/* A new upload for uid (an old one dropped); NULL with *err set. */
static struct kj__upload *start(struct kj__daemon *d, uid_t uid, char *err, size_t errlen, int *code)
{
	struct kj__upload *u = find(d, uid), *grown;
	char *tmp;

	if (u)
		drop(d, u);
	if ((grown = realloc(d->net->uploads, (d->net->n_uploads + 1) * sizeof *grown)) == NULL ||
	    (tmp = kj__asprintf("%s/tmp", d->cfg.cache_dir)) == NULL) {
		if (grown)
			d->net->uploads = grown;
		*code = KJIT_ENOMEM;
		snprintf(err, errlen, "kjitd is out of memory; retry later");
		return NULL;
	}
	d->net->uploads = grown;
	int fd = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		*code = KJIT_EIO;
		snprintf(err, errlen, "cannot make room for the bundle in %s: %s", tmp, strerror(errno));
		free(tmp);
		return NULL;
	}
	free(tmp);
	u = &d->net->uploads[d->net->n_uploads++];
	*u = (struct kj__upload){ uid, fd, 0 };
	return u;
}

void kj__upload_chunk(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *arg,
		      const struct kj__field *data)
{
	uid_t uid = kj__conn_uid(c);
	char err[512] = "";
	char *end = NULL;
	int code = KJIT_EINVAL;
	errno = 0;
	unsigned long long off = arg ? strtoull(arg, &end, 10) : 0;
	struct kj__upload *u;

	if (arg == NULL || errno || end == arg || *end != '\0' || data == NULL) {
		snprintf(err, sizeof err, "import-data needs OFFSET and the bytes");
		goto fail;
	}
	if (off == 0) {
		if ((u = start(d, uid, err, sizeof err, &code)) == NULL)
			goto fail;
	} else if ((u = find(d, uid)) == NULL || u->bytes != off) {
		snprintf(err, sizeof err, "import-data at offset %llu, but %llu bytes were received: start again", off,
			 u ? (unsigned long long)u->bytes : 0ull);
		if (u)
			drop(d, u);
		goto fail;
	}
	if (u->bytes + data->len > d->cfg.max_size) {
		snprintf(err, sizeof err, "the bundle is larger than the cache (--max-size %llu bytes)",
			 (unsigned long long)d->cfg.max_size);
		drop(d, u);
		goto fail;
	}
	if (kj__write_all(u->fd, data->p, data->len) < 0) {
		code = KJIT_EIO;
		snprintf(err, sizeof err, "cannot store the bundle: %s", strerror(errno));
		drop(d, u);
		goto fail;
	}
	u->bytes += data->len;
	struct kj__buf text = { 0 }, json = { 0 };
	kj__buf_printf(&json, "{\"received\":%llu}", (unsigned long long)u->bytes);
	kj__admin_answer(c, id, 0, &text, &json, NULL);
	kj__buf_free(&text);
	kj__buf_free(&json);
	return;
fail:
	kj__log(d, "refused a bundle upload from uid %u: %s", (unsigned)uid, err);
	kj__conn_error(c, id, code, "%s", err);
}

int kj__upload_import(struct kj__daemon *d, struct kj__conn *c, uint32_t id, char *err, size_t errlen)
{
	struct kj__upload *u = find(d, kj__conn_uid(c));
	char label[64];

	if (u == NULL) {
		snprintf(err, errlen, "import -: no bundle was sent first (ADMIN import-data)");
		return KJIT_EINVAL;
	}
	int fd = u->fd;
	u->fd = -1;
	drop(d, u);
	snprintf(label, sizeof label, "a bundle streamed by uid %u", (unsigned)kj__conn_uid(c));
	return kj__bundle_import_fd_task(d, c, id, fd, label);
}

void kj__uploads_free(struct kj__daemon *d)
{
	while (d->net->n_uploads > 0)
		drop(d, &d->net->uploads[0]);
	free(d->net->uploads);
	d->net->uploads = NULL;
}
