/* treeid.c: the identity of a directory tree a compiler reads beside the
 * job's headers (NVRTC's toolkit include directory, hipcc's and nvcc's
 * system include trees), for the compiler identity and so the cache key.
 *
 * The identity is the first 16 hex digits of SHA-256 over the sorted lines
 * "relative path, type, size, mtime (ns)" of every entry under the tree
 * (symbolic links by their target text, never followed), computed once when
 * a worker starts: an upgrade of the toolkit or of a system package that
 * touches any header changes it, and with it every key.  Bounded by
 * KJ_TREE_FILES_MAX entries and KJ_INCLUDE_DEPTH_MAX levels.  No state
 * outside the call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compint.h"
#include "kjit.h"
#include "kj_limits.h"
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

int kj__tree_id(const char *dir, char *out, size_t outlen)
{
	struct walk w = { 0 };
	struct kj__sha *s = NULL;
	uint8_t d[KJ_SHA256_LEN];
	char hex[KJ_SHA256_HEX_LEN + 1];
	int r;

	if (dir == NULL || out == NULL)
		return KJIT_EINVAL;
	if ((r = walk_dir(&w, dir, "", 0)) < 0 || (r = kj__sha_new(&s)) < 0)
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
