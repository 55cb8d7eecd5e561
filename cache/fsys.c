/* fsys.c: the real system calls behind struct kj__fsys.
 *
 * cache/ never calls open, read, write, fsync, close, rename, unlink, mkdir,
 * fstat, stat or lstat itself: it goes through a kj__fsys table, this one unless the
 * caller passed another.  Tests pass a table that fails the n-th call
 * (ENOSPC, EIO, EMFILE, short writes), the way SQLite's os_unix.c routes
 * every system call through aSyscall[].  The wrappers here add nothing but
 * a retry on EINTR where a retry is safe; they keep errno as the kernel set
 * it.  No state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"

static int fs_open(const char *path, int flags, mode_t mode)
{
	int fd;

	do
		fd = open(path, flags, mode);
	while (fd < 0 && errno == EINTR);
	return fd;
}

static ssize_t fs_read(int fd, void *p, size_t n)
{
	ssize_t k;

	do
		k = read(fd, p, n);
	while (k < 0 && errno == EINTR);
	return k;
}

static ssize_t fs_write(int fd, const void *p, size_t n)
{
	ssize_t k;

	do
		k = write(fd, p, n);
	while (k < 0 && errno == EINTR);
	return k;
}

static int fs_fsync(int fd)
{
	int r;

	do
		r = fsync(fd);
	while (r < 0 && errno == EINTR);
	return r;
}

/* close is not retried: on Linux the descriptor is gone even on EINTR. */
static int fs_close(int fd)
{
	return close(fd);
}

static int fs_fstat(int fd, struct stat *st)
{
	return fstat(fd, st);
}

static int fs_stat(const char *path, struct stat *st)
{
	return stat(path, st);
}

static int fs_lstat(const char *path, struct stat *st)
{
	return lstat(path, st);
}

const struct kj__fsys kj__fsys_default = {
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.fsync = fs_fsync,
	.close = fs_close,
	.rename = rename,
	.unlink = unlink,
	.mkdir = mkdir,
	.fstat = fs_fstat,
	.stat = fs_stat,
	.lstat = fs_lstat,
};
