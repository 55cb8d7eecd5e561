/* dropin.h: what the files of dropin/ share: the program record both
 * drop-in libraries keep, the compile through kjitd, and the real library
 * found by full path.  Nothing outside dropin/ includes it.
 */
#ifndef KJ_DROPIN_H
#define KJ_DROPIN_H

#include <stddef.h>

#include "kjit.h"

/* The public functions of the libraries stand in for; the version
 * scripts (nvrtc.map, hiprtc.map) give them their symbol versions. */
#define KJ_DP_EXPORT __attribute__((visibility("default")))

/* A program as the drop-in keeps it: what CreateProgram was given, the
 * name expressions, and either kjit's answer or the real library's
 * program once the compile was forwarded. */
struct kj__dp_prog {
	unsigned magic;          /* KJ_DP_MAGIC while alive: a stale handle is refused */
	char *src;
	char *name;              /* as given; NULL kept */
	int n_headers;
	char **hdr_data;         /* [n_headers] */
	char **hdr_names;        /* [n_headers] */
	char **exprs;            /* name expressions, in the order added */
	int n_exprs;
	int n_exprs_compiled;    /* hiprtc: how many of them its served compile had */
	int state;               /* KJ_DP_NEW, KJ_DP_OK, KJ_DP_FAILED */
	void *real;              /* the real library's program, once forwarded */
	void *flow_cb;           /* a flow callback given before the compile (forces forwarding) */
	void *flow_arg;
	kjit_result res;         /* kjit's answer: the object, log, lowered names */
	int res_is_ptx;          /* res.data is PTX (compute_ target), else CUBIN / code object */
	kjit_result ptx;         /* PTX of an sm_ compile, fetched on the first ask */
	int ptx_state;           /* 0 not asked, 1 fetched, -1 unavailable */
	char *target;            /* the target of the served compile */
	char **opts;             /* its options as given, for the PTX fetch or a late forward */
	int n_opts;
	kjit_header *inc;        /* NVRTC -I: p's headers, then those read from the folders (sent instead) */
	size_t n_inc;
};

#define KJ_DP_MAGIC 0x6b6a6470u
enum { KJ_DP_NEW = 0, KJ_DP_OK = 1, KJ_DP_FAILED = 2 };

/* Copies the source, name and headers into a new record.  0 or
 * KJIT_ENOMEM / KJIT_EINVAL (a NULL header). */
int kj__dp_prog_new(struct kj__dp_prog **out, const char *src, const char *name, int n,
		    const char *const *hdrs, const char *const *names);
/* Frees p (NULL: nothing); the caller destroyed p->real first. */
void kj__dp_prog_free(struct kj__dp_prog *p);
/* p when it is a live record, else NULL. */
struct kj__dp_prog *kj__dp_prog_check(void *p);
/* Adds a name expression.  0 or KJIT_ENOMEM. */
int kj__dp_prog_add_expr(struct kj__dp_prog *p, const char *expr);
/* Forgets a previous served answer (a program compiled again). */
void kj__dp_prog_reset(struct kj__dp_prog *p);

/* One compile through kjitd: backend, compiler family, target and the
 * options without the architecture.  Fills res.  Returns 0, KJIT_ECOMPILE
 * (res->log is the compiler's log), or another negative code with *why set
 * to the enum kj__dropstat_why the caller forwards for. */
int kj__dp_fetch(const struct kj__dp_prog *p, int backend, const char *compiler, const char *target,
		 const char *const *opts, int n_opts, kjit_result *res, int *why);

/* The folder of include option opts[*i] ("-IDIR", "--include-path=DIR";
 * for "-I DIR" and "--include-path DIR": DIR, and *i moves onto it), or
 * NULL when opts[*i] gives none.  hip: hiprtc (clang), -I only. */
const char *kj__dp_inc_dir(int hip, int n, const char *const *opts, int *i);
/* Include folders (dropin/inc.c): reads the headers p's text reaches
 * through the folders of opts (libkjit's include scan, in this process)
 * into p->inc, with p's own headers first, and checks that every #include
 * lands on the same file in the real library (NVRTC, or hiprtc when hip)
 * and in kjit's worker.  KJ_DS_SERVED (also when opts has no folder: p->inc
 * stays NULL), or the reason to forward (KJ_DS_PATH: the output could
 * depend on where a file lies) with *bad saying why. */
int kj__dp_read_includes(struct kj__dp_prog *p, int hip, int n, const char *const *opts, const char **bad);

/* Milliseconds on the monotonic clock (the debug line's phases). */
double kj__dp_ms(void);

/* Counts one compile (enum kj__dropstat_why) in the per-user stats file;
 * KJIT_DROPIN_DEBUG=1 also says it on stderr. */
void kj__dp_count(const char *lib, int why, const char *detail);

/* The real library, opened once per process by full path: env names the
 * variable that may give the path, paths the places tried after it (and
 * after another copy of the same soname the process already loaded).
 * Returns its handle or NULL (why in err).  Never returns a drop-in. */
void *kj__dp_real_open(const char *env, const char *soname, const char *const *paths, size_t n_paths,
		       char *err, size_t errlen);

#endif /* KJ_DROPIN_H */
