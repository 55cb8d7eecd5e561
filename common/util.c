/* util.c: helpers shared by every kjit program (see util.h).  No state. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

char *kj__strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

char *kj__strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *kj__asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

int kj__write_all(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;

	while (n > 0) {
		ssize_t k = write(fd, q, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		q += k;
		n -= (size_t)k;
	}
	return 0;
}

int kj__read_all(int fd, void *p, size_t n)
{
	uint8_t *q = p;

	while (n > 0) {
		ssize_t k = read(fd, q, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EPIPE;
		q += k;
		n -= (size_t)k;
	}
	return 0;
}

int kj__stat_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* How long before a read a file's last change (its ctime) must be for a stat
 * to prove the file still holds what was read: a change during or after the
 * read has a ctime at most a tick before it; one second is far more. */
#define KJ_FILE_SETTLED_NS 1000000000LL

int kj__file_unchanged_since(const char *path, const struct stat *seen, const struct timespec *before,
			     struct stat *st)
{
	if (stat(path, st) != 0 || !kj__stat_same(st, seen))
		return 0;
	long long c = (long long)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
	long long b = (long long)before->tv_sec * 1000000000LL + before->tv_nsec;
	return c < b - KJ_FILE_SETTLED_NS;
}

/* kj__read_file, and with seen and before set kj__read_file_st's extras
 * (the clock before the open, the fstat after the read): the plain read
 * pays for neither. */
static int read_file(const char *path, size_t max, uint8_t **data, size_t *len, struct stat *seen,
		     struct timespec *before)
{
	struct stat st;
	uint8_t *p = NULL;
	int r, fd;

	if (before && clock_gettime(CLOCK_REALTIME, before) < 0)
		return -errno;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		r = -EFBIG;
		goto out;
	}
	p = malloc((size_t)st.st_size + 1);
	if (p == NULL) {
		r = -ENOMEM;
		goto out;
	}
	r = kj__read_all(fd, p, (size_t)st.st_size);
	if (r < 0)
		goto out;
	if (seen && fstat(fd, seen) < 0) { /* after the read: a write during it shows in its ctime */
		r = -errno;
		goto out;
	}
	/* Changed during the read by the file's own stamps (a file system whose
	 * clock is not ours, e.g. NFS's server, may stamp a ctime that looks
	 * settled by our clock): no proof of the bytes read, *before zeroed. */
	if (seen && before && !kj__stat_same(&st, seen))
		memset(before, 0, sizeof *before);
	p[st.st_size] = '\0';
	*data = p;
	*len = (size_t)st.st_size;
	p = NULL;
	r = 0;
out:
	free(p);
	close(fd);
	return r;
}

int kj__read_file(const char *path, size_t max, uint8_t **data, size_t *len)
{
	return read_file(path, max, data, len, NULL, NULL);
}

int kj__read_file_st(const char *path, size_t max, uint8_t **data, size_t *len, struct stat *seen,
		     struct timespec *before)
{
	return read_file(path, max, data, len, seen, before);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

int kj__rm_rf(const char *path)
{
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int kj__mkdir_p(const char *path, mode_t mode)
{
	char *p = kj__strdup(path);
	int r = 0;

	if (p == NULL)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return r;
}

uint64_t kj__now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t kj__wall_s(void)
{
	return (int64_t)time(NULL);
}

static const char *nonempty_env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

char *kj__default_socket_path(void)
{
	const char *v = nonempty_env("KJIT_SOCKET");
	if (v)
		return kj__strdup(v);
	v = nonempty_env("XDG_RUNTIME_DIR");
	if (v)
		return kj__asprintf("%s/kjit/kjitd.sock", v);
	return kj__asprintf("/tmp/kjit-%u/kjitd.sock", (unsigned)getuid());
}

char *kj__default_cache_dir(void)
{
	const char *v = nonempty_env("KJIT_CACHE_DIR");
	if (v)
		return kj__strdup(v);
	v = nonempty_env("XDG_CACHE_HOME");
	if (v)
		return kj__asprintf("%s/kjit", v);
	v = nonempty_env("HOME");
	if (v)
		return kj__asprintf("%s/.cache/kjit", v);
	return kj__asprintf("/tmp/kjit-cache-%u", (unsigned)getuid());
}

int kj__name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > KJ_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!isalnum(c) && c != '.' && c != '_' && c != '+' && c != '-')
			return 0;
	}
	return 1;
}

int kj__path_ok(const char *s)
{
	char comp[KJ_NAME_MAX + 1];
	size_t n = strlen(s);

	if (n == 0 || n > KJ_NAME_MAX)
		return 0;
	for (const char *p = s;;) {
		size_t l = strcspn(p, "/");
		if (l == 0)
			return 0;
		memcpy(comp, p, l);
		comp[l] = '\0';
		if (!kj__name_ok(comp))
			return 0;
		p += l;
		if (*p == '\0')
			return 1;
		p++;
	}
}

int kj__token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '/' || c == '\\')
			return 0;
	}
	return 1;
}

int kj__parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t mul = 1;

	if (s == NULL || !isdigit((unsigned char)*s))
		return KJIT_EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0)
		return KJIT_EINVAL;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'k': mul = 1ull << 10; end++; break;
	case 'm': mul = 1ull << 20; end++; break;
	case 'g': mul = 1ull << 30; end++; break;
	case 't': mul = 1ull << 40; end++; break;
	default: return KJIT_EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end != '\0' || (v != 0 && mul > UINT64_MAX / v))
		return KJIT_EINVAL;
	*out = (uint64_t)v * mul;
	return 0;
}

void kj__vseterr(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err == NULL || errlen == 0)
		return;
	vsnprintf(err, errlen, fmt, ap);
}

void kj__seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kj__vseterr(err, errlen, fmt, ap);
	va_end(ap);
}
