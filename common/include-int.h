/* include-int.h: what common/include.c (the scan) and common/incfind.c (the
 * lookups in the tree, on disk and among the request's headers) share.
 * Private to those two files.
 */
#ifndef KJ_INCLUDE_INT_H
#define KJ_INCLUDE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "includes.h"

struct resolver {
	const char *const *req_names;
	const uint8_t *const *req_data;
	const size_t *req_len;
	size_t n_req;
	char **dirs;                 /* realpath of each allowed directory (NULL: missing) */
	size_t n_dirs;
	char *anc;                   /* realpath of the folder the tree root is on disk for
					quoted includes (the client's source folder, or its
					ancestor), or NULL */
	char **roots;                /* realpaths a file read must lie under: dirs and the
					source's folder (NULL entries skipped) */
	size_t n_roots;
	int climb;                   /* most levels an include climbed above the tree root */
	struct kj__includes *out;
	size_t cap;
	size_t missing_cap;
	size_t total;                /* bytes of every resolved header */
	char *err;
	size_t errlen;
};

/* Writes "where:line: #include <name>: why" into err, with anything not
 * printable in name shown as '?'.  Returns code. */
int kj__inc_fail(struct resolver *rv, int code, const char *where, size_t line, char open,
		 const char *name, size_t n, const char *fmt, ...) __attribute__((format(printf, 8, 9)));
/* Refuses names no safe #include spells (empty, too long, control bytes,
 * backslash, absolute).  NULL if fine, else why not. */
const char *kj__inc_name_problem(const char *name, size_t n);
/* 1 if name has a "." or ".." component. */
int kj__inc_has_dots(const char *name);
/* The tree path of name included from the file at tree path where: the
 * folder of where, then name's components, "." dropped and ".." taking one
 * back, into out.  0; 1 when it climbs above the tree root (*climb: by how
 * many levels) or names the root itself; -1 when out is too small. */
int kj__inc_tree_join(const char *where, const char *name, char *out, size_t outlen, int *climb);
/* Looks a tree path up: the request's headers, then (use_anc) the tree
 * root's folder on disk, then the allowed directories; errors name the
 * include as shown (its spelling).  2 resolved before
 * (*idx set), 1 found now (added, *idx set), 0 not found, or a negative
 * code with err written. */
int kj__inc_lookup(struct resolver *rv, const char *name, size_t *idx, const char *where, size_t line,
		   char open, int use_anc, const char *shown);
/* Records a name looked for and not found, once (the key covers it). */
int kj__inc_add_missing(struct resolver *rv, const char *name);
/* Fills rv's realpaths: the directories, the tree's folder on disk and the
 * roots (the directories and the source's folder).  0 or KJIT_ENOMEM. */
int kj__inc_open_roots(struct resolver *rv, const char *const *allowed_dirs, size_t n_dirs,
		       const struct kj__include_tree *tree);

#endif /* KJ_INCLUDE_INT_H */
