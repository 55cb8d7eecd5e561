/* treeid.c: the identity of a directory tree a compiler reads beside the
 * job's headers (NVRTC's toolkit include directory, hipcc's and nvcc's
 * system include trees), for the compiler identity and so the cache key.
 *
 * The identity is the first 16 hex digits of SHA-256 over the sorted lines
 * "root, relative path, type, size, mtime (ns)" of every entry under the
 * trees
 * (symbolic links by their target text, never followed), computed once when
 * a worker starts: an upgrade of the toolkit or of a system package that
 * touches any header changes it, and with it every key.  Bounded by
 * KJ_TREE_FILES_MAX entries and KJ_INCLUDE_DEPTH_MAX levels.  No state
 * outside the call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compint.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "sha.h"
#include "util.h"

struct walk {
	char **lines;
	size_t n, cap;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_line(struct walk *w, char *line)
{
	if (line == NULL)
		return KJIT_ENOMEM;
	if (w->n >= KJ_TREE_FILES_MAX) {
		free(line);
		return KJIT_ETOOBIG;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		char **l = realloc(w->lines, cap * sizeof *l);
		if (l == NULL) {
			free(line);
			return KJIT_ENOMEM;
		}
		w->lines = l;
		w->cap = cap;
	}
	w->lines[w->n++] = line;
	return 0;
}

/* Adds a line for each entry of root/rel (rel "" for root), recursively. */
static int walk_dir(struct walk *w, const char *root, const char *rel, int depth)
{
	char path[PATH_MAX], sub[PATH_MAX], link[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int r = 0;

	if (depth > KJ_INCLUDE_DEPTH_MAX)
		return KJIT_ETOOBIG;
	if ((size_t)snprintf(path, sizeof path, "%s/%s", root, rel) >= sizeof path)
		return KJIT_ETOOBIG;
	DIR *d = opendir(path);
	if (d == NULL)
		return errno == ENOENT || errno == EACCES ? 0 : KJIT_EIO;
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >= sizeof sub) {
			r = KJIT_ETOOBIG;
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* vanished meanwhile */
		if (S_ISLNK(st.st_mode)) {
			ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
			link[k > 0 ? k : 0] = '\0';
			r = add_line(w, kj__asprintf("%s\tl\t%s", sub, link));
		} else if (S_ISDIR(st.st_mode)) {
			r = add_line(w, kj__asprintf("%s\td", sub));
			if (r == 0)
				r = walk_dir(w, root, sub, depth + 1);
		} else {
			r = add_line(w, kj__asprintf("%s\tf\t%lld\t%lld.%09ld", sub, (long long)st.st_size,
						     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec));
		}
	}
	closedir(d);
	return r;
}

int kj__trees_id(const char *const *dirs, size_t n, char *out, size_t outlen)
{
	struct walk w = { 0 };
	struct kj__sha *s = NULL;
	uint8_t d[KJ_SHA256_LEN];
	char hex[KJ_SHA256_HEX_LEN + 1];
	int r = 0;

	if ((n && dirs == NULL) || out == NULL)
		return KJIT_EINVAL;
	for (size_t i = 0; r == 0 && i < n; i++) {
		size_t first = w.n;
		r = walk_dir(&w, dirs[i], "", 0);
		for (size_t k = first; r == 0 && k < w.n; k++) { /* the root is part of each line */
			char *l = kj__asprintf("%s\t%s", dirs[i], w.lines[k]);
			if (l == NULL)
				r = KJIT_ENOMEM;
			else
				free(w.lines[k]), w.lines[k] = l;
		}
	}
	if (r < 0 || (r = kj__sha_new(&s)) < 0)
		goto out;
	qsort(w.lines, w.n, sizeof *w.lines, cmp_line);
	for (size_t i = 0; r == 0 && i < w.n; i++)
		r = kj__sha_update(s, w.lines[i], strlen(w.lines[i]) + 1);
	if (r == 0)
		r = kj__sha_final(s, d);
	if (r < 0)
		goto out;
	kj__hex(d, hex);
	r = (size_t)snprintf(out, outlen, "%.16s", hex) >= outlen ? KJIT_ETOOBIG : 0;
out:
	kj__sha_free(s);
	for (size_t i = 0; i < w.n; i++)
		free(w.lines[i]);
	free(w.lines);
	return r;
}

int kj__tree_id(const char *dir, char *out, size_t outlen)
{
	return kj__trees_id(&dir, dir ? 1 : 0, out, outlen);
}

/* Where a full compiler (hipcc, nvcc) finds the C and C++ library's and its
 * own headers on Debian and ROCm installs; patterns for glob(3). */
static const char *const system_roots[] = {
	"/usr/include", "/usr/local/include", "/usr/lib/gcc", "/usr/lib/llvm-*/lib/clang",
	"/opt/rocm/include", "/opt/rocm/llvm/lib/clang",
};

int kj__system_headers_id(const char *extra, char *out, size_t outlen)
{
	const char *dirs[64];
	size_t n = 0;
	glob_t g[KJ_ARRAY_SIZE(system_roots)];
	int r;

	memset(g, 0, sizeof g);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(system_roots); i++) {
		if (glob(system_roots[i], 0, NULL, &g[i]) != 0)
			continue; /* none there */
		for (size_t k = 0; k < g[i].gl_pathc && n < KJ_ARRAY_SIZE(dirs) - 1; k++)
			dirs[n++] = g[i].gl_pathv[k];
	}
	if (extra)
		dirs[n++] = extra;
	r = kj__trees_id(dirs, n, out, outlen);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(system_roots); i++)
		globfree(&g[i]);
	return r;
}
