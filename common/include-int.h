/* include-int.h: what common/include.c (the scan), common/incfind.c (the
 * lookups in the tree, on disk and among the request's headers),
 * common/incmacro.c (computed includes) and common/incsplice.c (the
 * lexer's phases 1 and 2) share.  Private to those files.
 */
#ifndef KJ_INCLUDE_INT_H
#define KJ_INCLUDE_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

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
	/* Macros (common/incmacro.c): every #define the scan met and every -D,
	 * kept to expand computed includes once the plain scan is done. */
	struct kj__inc_def *defs;
	size_t n_defs, defs_cap;
	struct kj__inc_pending *pending; /* computed includes, expanded at the end */
	size_t n_pending, pending_cap;
	char **kept;                 /* spliced texts defs and pending point into */
	size_t n_kept, kept_cap;
	const char *const *options;  /* the request's options (-D, -U, --pre-include=) */
	size_t n_options;
	size_t *order;               /* incmacro.c: defs indices by name, each distinct one once */
	size_t n_order, order_defs;  /* ... built when n_defs was order_defs */
	int record;                  /* #define lines are recorded (once a computed include is met) */
	int budget;                  /* the tree's budget applies: no header opened, probes_left looks */
	unsigned probes_left;
	int *over;                   /* the tree's: set when the budget ran out (KJIT_EBUSY) */
	int collect;                 /* a pass that only records #define lines */
	const struct kj__inc_keep *keep; /* the tree's (kept headers), or NULL */
};

/* A header found by a lookup in the allowed directories (rv->dirs, not
 * the tree's folder) and what came with it, for kj__inc_keep. */
struct kj__inc_proof {
	int from_dir;                /* a lookup in rv->dirs: the rest is set only then, and with rv->keep */
	int kept;                    /* from keep->kept, not read */
	struct stat st;              /* the read's proof (kj__read_file_st), or the kept text's */
	struct timespec read_at;
	char real[PATH_MAX];         /* its real path (set by every lookup) */
};

/* A macro definition: name, then the rest of its line (parameters and
 * body, up to the first newline outside a comment, or end). */
struct kj__inc_def {
	const char *name;
	size_t name_len;
	const char *rest;
	const char *end;             /* the text's end (the rest stops at a newline before it) */
	int opt;                     /* a -D option ("f(a,b)=body": '=' after the parameters) */
};

/* A computed include (#include MACRO, __has_include(MACRO)) waiting for
 * every definition to be known: the operand's text is op..op_end (a probe's
 * up to its closing parenthesis). */
struct kj__inc_pending {
	const char *where;
	size_t line;
	const char *op, *op_end;
	int depth;
};

/* What expansion hands back: each header name one expansion spells. */
typedef int (*kj__inc_name_fn)(struct resolver *rv, const struct kj__inc_pending *p, char open, const char *name,
			       void *ctx);
/* Records a #define (name at name, rest after it) or a -D/-U option into
 * rv->defs.  0 or KJIT_ENOMEM / KJIT_ETOOBIG. */
int kj__inc_define(struct resolver *rv, const char *name, size_t name_len, const char *rest, const char *end);
/* Records the request's -D/-U options (in order: a -U drops the -D's
 * before it) into rv->defs.  0 or a negative code. */
int kj__inc_define_options(struct resolver *rv);
/* Expands p's operand with every combination of the definitions in
 * rv->defs (each macro with several definitions tried with each), calling
 * fn for each distinct header name ("x.h" or <x.h>) an expansion spells.
 * 0; KJIT_EINCLUDE (err written) when none spells one or the expansion
 * branches past KJ_INC_EXPANSIONS_MAX; fn's negative code. */
int kj__inc_expand(struct resolver *rv, const struct kj__inc_pending *p, kj__inc_name_fn fn, void *ctx);
/* Lexer variants a file may need (common/incsplice.c, kj__inc_splice). */
enum { KJ_SPLICE_BLANKS = 1, KJ_SPLICE_TRIGRAPHS = 2 };
/* Translation phases 1 and 2 of src into a malloc'd, NUL-terminated copy
 * (*out, *outlen): trigraphs replaced (with KJ_SPLICE_TRIGRAPHS), then
 * backslash-newline removed (with KJ_SPLICE_BLANKS also a backslash, blanks,
 * newline, as clang and gcc take it).  *seen gets the variants src holds.
 * 0 or KJIT_ENOMEM. */
int kj__inc_splice(const uint8_t *src, size_t len, int flags, char **out, size_t *outlen, int *seen);
/* Sorts out's headers by name (their data and lengths with them).  0 or
 * KJIT_ENOMEM. */
int kj__inc_sort_out(struct kj__includes *out);
/* strcmp of two char * (qsort). */
int kj__inc_cmp_str(const void *a, const void *b);
/* The arguments of kj__includes_resolve_tree and the request's header
 * names (each one a safe #include could spell).  0, KJIT_EINVAL, or
 * KJIT_EINCLUDE with err written. */
int kj__inc_check_request(const uint8_t *source, size_t source_len, const char *const *req_names,
			  const uint8_t *const *req_data, const size_t *req_len, size_t n_req,
			  const char *const *allowed_dirs, size_t n_dirs, char *err, size_t errlen);
/* Indexes rv->defs by name (rv->order, each distinct definition once: two
 * of one name with the same line are one), unless already done for these
 * definitions.  0 or KJIT_ENOMEM. */
int kj__inc_defs_index(struct resolver *rv);
/* The range [*lo, *hi) of rv->order whose definitions name (s, n); 1 if
 * not empty. */
int kj__inc_defs_find(const struct resolver *rv, const char *s, size_t n, size_t *lo, size_t *hi);
/* Frees what the macro half holds (defs, pending, kept texts). */
void kj__inc_macros_free(struct resolver *rv);

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
 * roots (the directories and the source's folder), and takes the tree's
 * budget (over cleared).  0 or KJIT_ENOMEM. */
int kj__inc_open_roots(struct resolver *rv, const char *const *allowed_dirs, size_t n_dirs,
		       struct kj__include_tree *tree);

#endif /* KJ_INCLUDE_INT_H */
