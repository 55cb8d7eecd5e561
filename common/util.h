/* util.h: small helpers shared by kjitd, libkjit and the tools: checked
 * allocation, whole-file and whole-buffer I/O, the default paths of the
 * design (socket, cache directory), and the name checks every input that
 * becomes part of a path goes through. */
#ifndef KJ_UTIL_H
#define KJ_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#define KJ_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* 1 in an AddressSanitizer build (gcc or clang): its allocator ignores
 * mallopt and its leak check ptraces the process at exit. */
#if defined(__SANITIZE_ADDRESS__)
#define KJ_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KJ_UNDER_ASAN 1
#endif
#endif
#ifndef KJ_UNDER_ASAN
#define KJ_UNDER_ASAN 0
#endif

/* strdup/strndup/asprintf that return NULL only on ENOMEM. */
char *kj__strdup(const char *s);
char *kj__strndup(const char *s, size_t n);
char *kj__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The one error-setting helper: formats into err (errlen bytes, always
 * terminated, truncated if need be); nothing when err is NULL or errlen
 * 0.  The v form takes a va_list. */
void kj__seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kj__vseterr(char *err, size_t errlen, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* Writes n bytes to fd, retrying on EINTR and short writes.  0 or -errno. */
int kj__write_all(int fd, const void *p, size_t n);
/* Reads exactly n bytes.  0, -errno, or -EPIPE at end of file. */
int kj__read_all(int fd, void *p, size_t n);
/* Reads a whole file of at most max bytes into a malloc'd buffer with a NUL
 * appended (not counted in *len).  0, -errno, or -EFBIG past max. */
int kj__read_file(const char *path, size_t max, uint8_t **data, size_t *len);
/* kj__read_file that also says what was read: the descriptor's fstat taken
 * after the read into *seen, and the wall clock just before the open into
 * *before, or zero when the fstats before and after the read differ (a file
 * whose ctime is well before *before, and whose stat still equals *seen,
 * holds the bytes read: kj__memo_gather).  Same returns. */
int kj__read_file_st(const char *path, size_t max, uint8_t **data, size_t *len, struct stat *seen,
		     struct timespec *before);
/* 1 if a and b name the same file with the same size, mtime and ctime (the
 * memo's proof that a file is unchanged), else 0. */
int kj__stat_same(const struct stat *a, const struct stat *b);
/* 1 if path still holds what was read from it by kj__read_file_st (its
 * seen and before), proven by a stat alone (no re-read): same file
 * (device, inode), same size, mtime and ctime, and its last change (ctime:
 * every write, truncate, utimes and rename sets it, and no call sets it
 * back) settled well before the read began (KJ_FILE_SETTLED_NS: the
 * kernel stamps ctime from a clock that may lag by a tick).  The stat is
 * copied into *st.  Else 0 (changed, gone, or changed too near the read
 * to tell).  Not seen: a write through a shared mapping of a page already
 * dirty (it leaves the ctime alone), an NFS client's stale attributes; the
 * callers trust it only for files their owner changes by write or rename
 * (a bundled kernel, <kernels>/include, the memo's). */
int kj__file_unchanged_since(const char *path, const struct stat *seen, const struct timespec *before,
			     struct stat *st);
/* rm -rf: removes path and everything below it, not following links.  0
 * (also when path does not exist) or -errno of the first failure. */
int kj__rm_rf(const char *path);
/* mkdir -p with mode for the directories it creates.  0 or -errno. */
int kj__mkdir_p(const char *path, mode_t mode);

/* Monotonic clock in microseconds; wall clock in seconds. */
uint64_t kj__now_us(void);
int64_t kj__wall_s(void);

/* The file, in a cache folder, where the per-user kjitd serving that cache
 * records its socket's path (daemon/net/server.c writes it, client/discover.c
 * reads it): a client of the same user under another runtime folder (su,
 * cron, Slurm) finds that daemon instead of starting a second one. */
#define KJ_SOCKET_RECORD "socket-path"
/* Default paths of the design, honouring KJIT_SOCKET / KJIT_CACHE_DIR,
 * XDG_RUNTIME_DIR / XDG_CACHE_HOME / HOME.  malloc'd, or NULL on ENOMEM. */
char *kj__default_socket_path(void);
char *kj__default_cache_dir(void);

/* 1 if s is a safe single path component / name: 1..KJ_NAME_MAX bytes of
 * [A-Za-z0-9._+-], not "." or "..", no '/', NUL or control characters. */
int kj__name_ok(const char *s);
/* 1 if s is a safe relative path of such names ("src/main.hip"): at most
 * KJ_NAME_MAX bytes, '/'-separated kj__name_ok components, no empty
 * component, no leading or trailing '/'. */
int kj__path_ok(const char *s);
/* 1 if s is printable ASCII without '/' and shorter than max (targets,
 * versions: they become directory names). */
int kj__token_ok(const char *s, size_t max);

/* Parses "5G", "512M", "100k", "12345" (binary units).  0 or KJIT_EINVAL. */
int kj__parse_size(const char *s, uint64_t *out);

#endif /* KJ_UTIL_H */
