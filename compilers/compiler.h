/* compiler.h: the one small interface every compiler family implements.
 *
 * A compiler runs only inside a compile worker process (compilers/worker.c),
 * never inside kjitd: compilers are large libraries with global state and
 * bugs of their own (hiprtc 5.2 aborts on unknown targets).  Each family is a
 * const table of operations, chosen by name when the worker starts, as
 * Redis's ae.c chooses its backend.
 */
#ifndef KJ_COMPILER_H
#define KJ_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#include "jobmsg.h"

/* struct kj__compile_job (what a family compiles) and struct kj__header
 * are the JOB message's content: common/jobmsg.h, whose decoder fills
 * them in the worker and whose encoder sends them from kjitd. */

struct kj__compile_out {
	uint8_t *data;   /* malloc'd code object */
	size_t len;
	char *log;       /* malloc'd compiler log, or NULL */
	char *error;     /* malloc'd one-line reason on failure, or NULL */
	char *lowered;   /* malloc'd lowered names of the job's --name-expression=
			  * options, "EXPR\tLOWERED\n" each (common/lowered.h),
			  * or NULL; only with data (kj__lowered_add) */
};

struct kj__compiler_ops {
	const char *name;      /* the family's name (compiler.c lists them all) */
	int backend;           /* enum kjit_backend */
	/* Loads the compiler (dlopen and the like) far enough to know its
	 * identity.  0, or KJIT_EBACKEND with a reason in err. */
	int (*init)(void **state, char *err, size_t errlen);
	/* Or NULL: a first compile of a trivial program, so the first job does
	 * not pay for the compiler's lazy loading (hiprtc's comgr and device
	 * libraries, NVRTC's builtins).  Run by the worker after it has told
	 * kjitd the identity (IDENT) and before its inner walls close, so a
	 * fresh kjitd keys and serves hits while its compilers warm up.  0, or
	 * a negative code with a reason in err. */
	int (*warm)(void *state, char *err, size_t errlen);
	void (*fini)(void *state);
	/* The compiler's identity for the cache key, e.g. "hiprtc 9.0; comgr
	 * 2.4; device-libs 5.2.3", and the runtime version objects are built
	 * for, e.g. "5.2".  0 or a negative code. */
	int (*identity)(void *state, char *id, size_t idlen, char *runtime_version, size_t rvlen);
	/* 0 if the compiler can build for target, else KJIT_ETARGET with a
	 * reason naming the target.  Called before every compile. */
	int (*check_target)(void *state, const char *target, char *err, size_t errlen);
	/* Compiles job.  0 with out->data set (and out->lowered when the job
	 * names C++ expressions); KJIT_ECOMPILE with out->log; or another
	 * negative code with out->error.  Frees nothing of job. */
	int (*compile)(void *state, const struct kj__compile_job *job, struct kj__compile_out *out);
};

extern const struct kj__compiler_ops kj__compiler_hiprtc;
extern const struct kj__compiler_ops kj__compiler_hipcc;
extern const struct kj__compiler_ops kj__compiler_nvrtc;
extern const struct kj__compiler_ops kj__compiler_nvcc;
extern const struct kj__compiler_ops kj__compiler_shaderc;

/* The family named name ("hiprtc", ...), or NULL.  compiler.c's table of
 * families is the one place family names and their properties are written;
 * the functions below answer from it. */
const struct kj__compiler_ops *kj__compiler_find(const char *name);
/* The i-th family of the table (the test family included), or NULL past
 * the last: for listing them all. */
const struct kj__compiler_ops *kj__family_at(size_t i);
/* The name of backend's default family ("hiprtc", "nvrtc", "shaderc"), or
 * NULL for a backend without one. */
const char *kj__family_default(int backend);
/* The family named name if it builds for backend and may be chosen: by a
 * request (configured 0) or on kjitd's command line (configured 1, which
 * also allows the test family).  NULL otherwise. */
const struct kj__compiler_ops *kj__family_choose(const char *name, int backend, int configured);
/* The families a request may choose for backend, joined by sep (" or ":
 * "hiprtc or hipcc") into out (cut short if outlen is too small). */
void kj__family_choices(int backend, const char *sep, char *out, size_t outlen);
/* The vendor toolkit tree the family's worker reads ("/opt/rocm"), or NULL. */
const char *kj__family_toolkit(const char *name);
void kj__compile_out_free(struct kj__compile_out *out);

/* Entry of `kjitd --worker FAMILY`: applies the sandbox, loads the
 * compiler, sends IDENT (a family with a warm-up: before it) and HELLO on
 * fd, then answers JOB frames until fd closes.
 * Returns the process exit status. */
int kj__worker_main(const char *family, int fd);
/* The environment kjitd starts a worker with (a NULL-terminated array the
 * caller frees, each string and the array), worker_user its --worker-user,
 * tmpdir the worker's private directory; NULL when out of memory. */
char **kj__worker_env(const char *worker_user, const char *tmpdir);
/* The host trees a family's worker may read (compilers/walls.c), each
 * after a space, into out: what `kjit targets` shows.  0 or KJIT_ETOOBIG. */
int kj__worker_trees(const char *family, char *out, size_t outlen);

/* Checks that each of entries[0..n) is an entry point of obj (symbols.c:
 * an ELF's defined function symbols, PTX's .entry names, SPIR-V's
 * OpEntryPoint names).  0 (also when obj's symbols cannot be listed), or
 * KJIT_ECOMPILE with "no entry point 'X' in the object; it has: A, B" in
 * err. */
int kj__entries_check(const uint8_t *obj, size_t len, const char *const *entries, size_t n, char *err,
		      size_t errlen);
/* The entry points of obj, as kj__entries_check finds them, into *out
 * (malloc'd, a list of common/entrylist.h holding the names a request may
 * ask for, kj__name_ok; "" when it has none): what the index keeps beside the object (schema 5).
 * 0; 1 with *out NULL when its symbols cannot be listed (or their list is
 * over KJ_OBJ_ENTRIES_MAX: not judged); KJIT_ENOMEM. */
int kj__entries_list(const uint8_t *obj, size_t len, char **out);

#endif /* KJ_COMPILER_H */
