/* outfile.c: output files as cp and compilers write them (outfile.h).
 *
 * Invariants: a regular file is never seen half written (the temporary
 * beside it is renamed over it only once whole and fsync'd, and removed on
 * any failure); what the path names through symlinks is what gets written,
 * the links themselves stay; a device or FIFO is opened where it is and
 * never unlinked, renamed over or truncated; no state outside the struct
 * the caller holds.  A path through /proc's magic links (/dev/stdout into a
 * pipe) is judged by what open reaches (stat), not by readlink's text.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "util.h"

#define SYMLINK_HOPS_MAX 40 /* as the kernel's MAXSYMLINKS */

static void release(struct kj__outfile *o)
{
	free(o->final);
	free(o->tmp);
	o->final = o->tmp = NULL;
	o->fd = -1;
}

/* What path names once its symlinks are followed (the file may not exist:
 * a dangling link names the file to create).  *st filled when it exists
 * (*exists 1).  0 or -errno. */
static int resolve(const char *path, char **out, struct stat *st, int *exists)
{
	char *cur = kj__strdup(path);

	*exists = 0;
	for (int hop = 0; cur != NULL; hop++) {
		if (lstat(cur, st) < 0) {
			if (errno != ENOENT) {
				int e = errno;
				free(cur);
				return -e;
			}
			*out = cur;
			return 0;
		}
		if (!S_ISLNK(st->st_mode)) {
			*exists = 1;
			*out = cur;
			return 0;
		}
		if (hop == SYMLINK_HOPS_MAX) {
			free(cur);
			return -ELOOP;
		}
		char link[PATH_MAX];
		ssize_t n = readlink(cur, link, sizeof link - 1);
		if (n < 0) {
			int e = errno;
			free(cur);
			return -e;
		}
		link[n] = '\0';
		char *next;
		const char *slash = strrchr(cur, '/');
		if (link[0] == '/' || slash == NULL)
			next = kj__strdup(link);
		else
			next = kj__asprintf("%.*s/%s", (int)(slash - cur), cur, link);
		free(cur);
		cur = next;
	}
	return -ENOMEM;
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : S_ISBLK(m) ? "a block device" :
	       S_ISCHR(m) ? "a character device" : S_ISFIFO(m) ? "a FIFO" : "not a regular file";
}

static int open_in_place(struct kj__outfile *o, const char *path, const char *final, const struct stat *st,
			 unsigned flags, char *err, size_t errlen)
{
	struct stat now;

	if (flags & KJ_OUT_REGULAR_ONLY) {
		snprintf(err, errlen, "%s is %s; kjitd writes only regular files: give a file name", path,
			 kind_of(st->st_mode));
		return -EINVAL;
	}
	o->fd = open(final, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s; check the path", path, strerror(e));
		return -e;
	}
	if (fstat(o->fd, &now) < 0 || (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
		close(o->fd);
		o->fd = -1;
		snprintf(err, errlen, "%s changed while it was opened; retry", path);
		return -EAGAIN;
	}
	o->in_place = 1;
	return 0;
}

/* Standard output's own descriptor when path names it and it is a socket
 * (`kjit get -o /dev/stdout` under a program that gave it a socketpair):
 * /proc/self/fd/1 cannot be opened there (ENXIO), so it is written through a
 * duplicate, as the shell's >&1 would.  0, or -errno; -ENOENT when path is
 * not standard output. */
static int open_stdout_socket(struct kj__outfile *o, const struct stat *st, unsigned flags)
{
	struct stat out;

	if ((flags & KJ_OUT_REGULAR_ONLY) || fstat(STDOUT_FILENO, &out) < 0 ||
	    out.st_dev != st->st_dev || out.st_ino != st->st_ino)
		return -ENOENT;
	o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (o->fd < 0)
		return -errno;
	o->in_place = 1;
	return 0;
}

int kj__outfile_open(struct kj__outfile *o, const char *path, unsigned flags, char *err, size_t errlen)
{
	struct stat st;
	char *final = NULL;
	int exists, r;

	memset(o, 0, sizeof *o);
	o->fd = -1;
	if (path == NULL || *path == '\0') {
		snprintf(err, errlen, "no output file named");
		return -EINVAL;
	}
	/* What open itself would reach first: /dev/stdout -> /proc/self/fd/1 ->
	 * "pipe:[N]" is a link readlink cannot follow but open can, so a
	 * device, FIFO or pipe there is written through the path as cp does. */
	if (stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
		return open_in_place(o, path, path, &st, flags, err, errlen);
	if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && open_stdout_socket(o, &st, flags) == 0)
		return 0;
	if ((r = resolve(path, &final, &st, &exists)) < 0) {
		snprintf(err, errlen, "cannot write %s: %s; check the path", path, strerror(-r));
		return r;
	}
	if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		r = open_in_place(o, path, final, &st, flags, err, errlen);
		free(final);
		return r;
	}
	if (exists && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is %s; give a file name (or - for standard output)", path,
			 kind_of(st.st_mode));
		free(final);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	o->final = final;
	o->tmp = kj__asprintf("%s.tmp.XXXXXX", final);
	if (o->tmp == NULL) {
		release(o);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create a file beside %s: %s; check the directory", final, strerror(-r));
		release(o);
		return r;
	}
	/* The replacement keeps the mode (and, for root, the owner) of the
	 * file it replaces; a new file gets 0666 less the umask. */
	mode_t mask = umask(0);
	umask(mask);
	mode_t mode = exists ? st.st_mode & 0777 : 0666 & ~mask;
	if (exists && geteuid() == 0 && fchown(o->fd, st.st_uid, st.st_gid) < 0) {
		/* best effort: the file is still written, owned by root */
	}
	if (fchmod(o->fd, mode) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot set the mode of %s: %s", o->tmp, strerror(-r));
		kj__outfile_abort(o);
		return r;
	}
	return 0;
}

int kj__outfile_commit(struct kj__outfile *o, char *err, size_t errlen)
{
	int r = 0;

	if (o->in_place) {
		if (close(o->fd) < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "writing failed: %s", strerror(-r));
		}
		release(o);
		return r;
	}
	if (fsync(o->fd) < 0)
		r = -errno;
	if (close(o->fd) < 0 && r == 0)
		r = -errno;
	o->fd = -1;
	if (r == 0 && rename(o->tmp, o->final) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(err, errlen, "cannot write %s: %s; check free space", o->final, strerror(-r));
		unlink(o->tmp);
	}
	release(o);
	return r;
}

void kj__outfile_abort(struct kj__outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (!o->in_place && o->tmp)
		unlink(o->tmp);
	release(o);
}

int kj__outfile_write(const char *path, const void *p, size_t n, unsigned flags, char *err, size_t errlen)
{
	struct kj__outfile o;
	int r = kj__outfile_open(&o, path, flags, err, errlen);

	if (r < 0)
		return r;
	if ((r = kj__write_all(o.fd, p, n)) < 0) {
		snprintf(err, errlen, "writing %s failed: %s; check free space", path, strerror(-r));
		kj__outfile_abort(&o);
		return r;
	}
	return kj__outfile_commit(&o, err, errlen);
}
