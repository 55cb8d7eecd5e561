/* includes.h: the include scan's contract (common/include.c, the scan;
 * common/incfind.c, where a name leads).  Shared by kjitd (daemon/miss/get.c,
 * explain.c, through cache/cache.h) and libkjit (client/ccopts.c, for -I):
 * it needs only libc and common/util.c.
 */
#ifndef KJ_INCLUDES_H
#define KJ_INCLUDES_H

#include <stddef.h>
#include <stdint.h>

struct stat;
struct timespec;

/* Include resolution: the headers a source may include, found by scanning
 * every #include line of the source and, recursively, of what it includes
 * (a literal "#if 0" group is skipped; every other conditional counts as
 * possibly taken; a computed #include is expanded with every definition of
 * its macros the scan met, common/incmacro.c).  A quoted name is first looked for next to the including
 * header, then, as a bracketed one, among the request's headers and in each
 * allowed directory; names that are absolute, contain "..", or control
 * characters, or a computed #include, are rejected (KJIT_EINCLUDE, with
 * "SOURCE_NAME:LINE: #include ..." in err and no file content).  A name
 * found nowhere is left to the compiler (its own headers, the system's) and
 * listed in missing, for the key.  source_name (NULL: "source") names the
 * source in errors.  A request header whose name no safe #include could
 * use (absolute, "..") is KJIT_EINCLUDE too.  On success *out holds every resolved header, each
 * once, sorted by name, and the missing names, sorted; free with
 * kj__includes_free. */
struct kj__includes {
	size_t n;
	char **names;
	uint8_t **data;
	size_t *len;
	size_t n_missing;
	char **missing;
};
int kj__includes_resolve(const char *source_name, const uint8_t *source, size_t source_len,
			 const char *const *req_names, const uint8_t *const *req_data, const size_t *req_len,
			 size_t n_req, const char *const *allowed_dirs, size_t n_dirs,
			 struct kj__includes *out, char *err, size_t errlen);
void kj__includes_free(struct kj__includes *inc);

/* Where a client's source sits (kj__includes_resolve_tree).  Quoted
 * includes resolve against the including file's place in the tree (the
 * source's place is source_name, which may have folders: "src/main.hip"),
 * ".." taking one folder back; an include that climbs above the tree root,
 * or whose ".." names no file found, is refused.  anc is the folder the
 * tree root is on disk for those lookups; every file read must lie under
 * one of the allowed directories or src_dir. */
struct kj__include_tree {
	const char *anc;     /* the tree root's folder on disk (quoted includes), or NULL */
	const char *src_dir; /* the source's folder: a root files may be read under, or NULL */
	int climb;           /* out: most levels an include climbed above the tree root */
	/* The request's options, as the daemon's whitelists spell them: -D/-U
	 * (macros for computed includes, common/incmacro.c) and
	 * KJ_PRE_INCLUDE_OPT NAME (a request header included before the
	 * source).  Others are ignored.  NULL: none. */
	const char *const *options;
	size_t n_options;
	/* A budget, for a scan kjitd runs on its loop (daemon/miss/offhash.c):
	 * no header opened from disk, at most probes_max looks there (an
	 * allowed directory or the tree's folder tried for a name); 0: no
	 * budget.  Past it, the scan stops with KJIT_EBUSY and over set (out):
	 * its caller scans again without one (on a thread), so the budget never
	 * changes a result, only where it is computed. */
	unsigned probes_max;
	int over;
	/* Headers read from disk, kept by the caller (kjitd: daemon/miss/hdrkeep.c,
	 * issue 35), or NULL. */
	const struct kj__inc_keep *keep;
};

/* A scan's hooks for the texts of headers it reads from an allowed
 * directory (never the tree's folder nor a request's header).  The name
 * is looked up, its realpath taken and checked under the roots as always;
 * then:
 *  - kept (with a budget, NULL: none): 1 with *data (malloc'd, a NUL after
 *    *len bytes) the text kept from an earlier read of the file at real,
 *    proven by a stat to be what the file holds (*st, *read_at: that read's
 *    proof, kj__read_file_st), used instead of going over budget; else 0.
 *    The bytes, and so the includes and the key, are those a read gives.
 *  - seen (NULL: none): each such header once it joined the result, read
 *    now (kept 0: *st and *read_at of kj__read_file_st; read_at zero when
 *    the read overlapped a change) or taken from kept (kept 1).  name is
 *    its tree path, data its bytes in the result (valid while the result
 *    holds them); both only for the call.
 * Both run where the scan runs. */
struct kj__inc_keep {
	int (*kept)(void *arg, const char *real, uint8_t **data, size_t *len, struct stat *st,
		    struct timespec *read_at);
	void (*seen)(void *arg, const char *name, const char *real, const uint8_t *data, size_t len,
		     const struct stat *st, const struct timespec *read_at, int kept);
	void *arg;
};

/* A request's option naming a pre-included header (nvcc's and hipcc's
 * -include FILE, NVRTC's --pre-include=FILE, as `kjit get` takes them). */
#define KJ_PRE_INCLUDE_OPT "--pre-include="
/* kj__includes_resolve with tree (NULL: none, as kj__includes_resolve). */
int kj__includes_resolve_tree(const char *source_name, const uint8_t *source, size_t source_len,
			      const char *const *req_names, const uint8_t *const *req_data, const size_t *req_len,
			      size_t n_req, const char *const *allowed_dirs, size_t n_dirs,
			      struct kj__include_tree *tree, struct kj__includes *out, char *err, size_t errlen);

#endif /* KJ_INCLUDES_H */
