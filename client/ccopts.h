/* ccopts.h: compiler-style options for `kjit get` and libkjit's request:
 * -I/-D/-U/-O/-std= as nvcc, hipcc, NVRTC and glslc users write them, and
 * the headers found through -I.  Private to client/ (libkjit and the kjit
 * command); not part of the public interface.
 */
#ifndef KJ_CCOPTS_H
#define KJ_CCOPTS_H

#include <stddef.h>

#include "kjit.h"

/* Most repeated compiler-style options one command line may carry. */
#define KJ_CCOPTS_MAX 256

struct kj__ccopts {
	const char *dirs[KJ_CCOPTS_MAX];   /* -I DIR, --include-path=DIR: argv's strings */
	size_t n_dirs;
	char *opts[KJ_CCOPTS_MAX];         /* -DX, -UX, -O2, -std=c++17, ...: malloc'd */
	size_t n_opts;
	const char *target_env;            /* glslc's --target-env=vulkan1.2, or NULL */
	const char *stage;                 /* glslc's -fshader-stage=, or NULL */
	const char *entry_point;           /* glslc's -fentry-point=NAME (the request's entry), or NULL */
	const char *compiler;              /* --compiler FAMILY, or NULL */
	const char *exprs[KJ_CCOPTS_MAX];  /* --name-expression EXPR: argv's strings */
	size_t n_exprs;
	const char *arch;                  /* -arch=sm_90, --offload-arch=gfx90a ...: the target, or NULL */
	char arch_opt[96];                 /* that flag as typed, for messages ("-arch sm_90") */
	const char *pre[KJ_CCOPTS_MAX];    /* -include FILE, --pre-include[=]FILE: argv's strings */
	size_t n_pre;
};

/* Takes the compiler-style options out of argv[1..*argc) (argv[0] is the
 * command), leaving the others, in order, for getopt; *argc shrinks.  The
 * values of the get command's own options (--source FILE and so on) are
 * never mistaken for one.  0, or KJIT_EINVAL with a one-line reason in err
 * (a missing argument, too many).  cc is zeroed first; free it with
 * kj__ccopts_free in both cases. */
int kj__ccopts_take(struct kj__ccopts *cc, int *argc, char **argv, char *err, size_t errlen);

/* Checks cc against the backend and turns glslc's spellings into kjit's:
 * -fshader-stage= must name a compute stage, -fentry-point= must be a name
 * (the caller makes it the first entry), a target-like flag (cc->arch:
 * -arch=sm_90 ...) and --target-env= give the target (*target, if NULL;
 * else they must agree, the error saying to use --target), -O1..-O3
 * become glslc's -O for Vulkan.  0 or KJIT_EINVAL with a reason in err. */
int kj__ccopts_finish(struct kj__ccopts *cc, int backend, const char **target, char *err, size_t errlen);

void kj__ccopts_free(struct kj__ccopts *cc);

/* client/ccflags.c: handles argv[*i] if it is a flag users type by habit
 * (--use_fast_math, -lineinfo, -Xcompiler VALUE, -munsafe-fp-atomics,
 * glslc's -fubo-binding-base [comp] N ...: appended to cc->opts as the
 * daemon's whitelists spell them) or a target-like flag (-arch=sm_90,
 * --gpu-architecture=X, --offload-arch=X: cc->arch; one that names several
 * targets, or another than an earlier one, is refused with a line saying
 * to use --target).  1 taken (*i moved past its values), 0 not one, or
 * KJIT_EINVAL with a reason naming the whole flag in err, KJIT_ENOMEM. */
int kj__ccflags_take(struct kj__ccopts *cc, int argc, char **argv, int *i, char *err, size_t errlen);

/* The backend a command line implies when --backend is not given: the
 * target's (sm_/compute_: cuda, gfx: hip, vulkan: vulkan), else the
 * source's suffix (.cu: cuda, .hip: hip, .comp/.glsl/.hlsl: vulkan);
 * KJIT_BACKEND_NONE when neither says.  Either may be NULL. */
int kj__ccflags_backend(const char *source, const char *target);

/* The headers of req plus every header its source includes (recursively)
 * that is found in one of dirs[0..n) (-I, searched in order after req's own
 * headers), read by this process: the daemon never reads a client's files.
 * *out (malloc'd, *n_out entries, names and data malloc'd) is freed with
 * kj__headers_free.  Names that could leave a directory (absolute, "..")
 * are refused as the daemon refuses them.  0, or a negative code with a
 * reason in err. */
int kj__headers_from_dirs(const kjit_request *req, const char *const *dirs, size_t n, kjit_header **out,
			  size_t *n_out, char *err, size_t errlen);
void kj__headers_free(kjit_header *h, size_t n);

/* kj__headers_from_dirs for a source read from path (`kjit get --source`):
 * the source's own folder is searched first for quoted includes (as nvcc,
 * hipcc and glslc do; item 2 of issue 22), and an include that climbs out
 * of it ("../include/util.hpp") gives the source a place in the include
 * tree ("src/main.hip") so that ".." resolves as it does on disk: *place
 * (malloc'd) is the source name to send.  Every file read lies under the
 * source's folder or one of dirs; what leaves all of them is refused.  0,
 * or a negative code with a reason in err. */
int kj__headers_for_source(const kjit_request *req, const char *path, const char *const *dirs, size_t n,
			   kjit_header **out, size_t *n_out, char **place, char *err, size_t errlen);

#endif /* KJ_CCOPTS_H */
