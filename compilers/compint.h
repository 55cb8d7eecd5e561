/* compint.h: helpers shared by the compiler families in compilers/ and
 * nothing else: option whitelists, log capping, header and include checks,
 * ELF and clang-offload-bundle inspection, and the AMD facts (comgr's ISA
 * list, the device-libs fingerprint) both hiprtc and hipcc need.  Not part of
 * any other module's interface. */
#ifndef KJ_COMPINT_H
#define KJ_COMPINT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "compiler.h"
#include "kj_limits.h"
#include "lowered.h"

/* ELF e_machine values of the objects we produce (elf.h: EM_AMDGPU, EM_CUDA). */
#define KJ_EM_AMDGPU 224
#define KJ_EM_CUDA 190
#define KJ_SPIRV_MAGIC 0x07230203u
#define KJ_FATBIN_MAGIC 0xba55ed50u /* a CUDA fat binary (nvcc --fatbin), little-endian at 0 */

/* One accepted option form of a family's whitelist. */
enum kj__opt_kind {
	KJ_OPT_EXACT,   /* the option equals text */
	KJ_OPT_MACRO,   /* text is "-D" or "-U": text then IDENT, "-D" also IDENT=VALUE and a
			   function-like IDENT(PARAMS)[=VALUE] ("-Dld(b,i)=b[i]") */
	KJ_OPT_CHOICE,  /* text is a prefix ("-std="), the rest one of arg ("c++14|c++17") */
	KJ_OPT_UINT,    /* text is a prefix, the rest 1..6 decimal digits */
	KJ_OPT_TEXT,    /* text is a prefix, the rest 1..KJ_NAME_MAX printable bytes */
	KJ_OPT_LIST,    /* text is a prefix ("-Xcompiler="), the rest a comma-separated list whose
			   items each match one of arg's '|'-separated patterns: a word, a
			   prefix then '#' (1..6 digits), or a prefix then '*' (a name of
			   [a-z0-9_+=.-], 2..KJ_WARN_NAME_MAX bytes, a lowercase letter first) */
	KJ_OPT_WARN,    /* text is a prefix ("-W"), the rest a warning name: a lowercase letter,
			   then [a-z0-9_+=-], at most KJ_WARN_NAME_MAX bytes; never a comma, so
			   never clang's -Wl, -Wa, -Wp, (linker, assembler, preprocessor) */
};

struct kj__opt_rule {
	int kind;          /* enum kj__opt_kind */
	const char *text;
	const char *arg;   /* KJ_OPT_CHOICE: '|'-separated values */
};

/* The values nvcc's -Xcompiler= may pass the host compiler (KJ_OPT_LIST
 * patterns), and those -Xptxas= (nvcc and NVRTC) may pass ptxas: each
 * checked against the real tools (docs/compilers.md). */
#define KJ_HOST_CC_VALUES "-fPIC|-fpic|-fPIE|-fpie|-Wall|-Wextra|-Werror|-W*|-w|-O0|-O1|-O2|-O3|-Os|-g|" \
	"-fno-strict-aliasing|-fvisibility=hidden|-fvisibility=default|-fvisibility-inlines-hidden|" \
	"-fno-exceptions|-fno-rtti|-ffunction-sections|-fdata-sections|-fno-omit-frame-pointer|-pthread|" \
	"-fopenmp|-fno-math-errno|-ffast-math|-march=native|-mavx|-mavx2|-mfma"
#define KJ_PTXAS_VALUES "-v|--verbose|-O0|-O1|-O2|-O3|--warn-on-spills|-warn-spills|" \
	"--warn-on-local-memory-usage|-warn-lmem-usage|--warn-on-double-precision-use|-warn-double-usage|" \
	"-dlcm=ca|-dlcm=cg|--def-load-cache=ca|--def-load-cache=cg|-dscm=cg|-dscm=cs|" \
	"--allow-expensive-optimizations=true|--allow-expensive-optimizations=false|--maxrregcount=#|" \
	"-maxrregcount=#|--fmad=true|--fmad=false|--suppress-stack-size-warning|-suppress-stack-size-warning|" \
	"--warning-as-error|-Werror|--disable-optimizer-constants|-disable-optimizer-consts"

/* 0 if every job option matches a rule of rules[n] (and the count and
 * lengths are within limits); else KJIT_EINVAL with "option 'X' is not
 * allowed for FAMILY" in err. */
int kj__options_check(const char *family, const struct kj__opt_rule *rules, size_t n,
		      const struct kj__compile_job *job, char *err, size_t errlen);
/* The same with a second table: an option may match a rule of either
 * (a family's own rules beside a shared list). */
int kj__options_check2(const char *family, const struct kj__opt_rule *rules, size_t n,
		       const struct kj__opt_rule *more, size_t n_more, const struct kj__compile_job *job, char *err,
		       size_t errlen);

/* Rejects (KJIT_EINCLUDE, reason in err) an #include in the source or any
 * header whose path is absolute, or holds ".." that does not land (resolved
 * against the including file's place in the job's tree, the source at
 * source_name, which may have folders) on a file of the job, and source or
 * header names that are not relative paths of safe components, and so a
 * pre-included name (--pre-include=NAME).  Defence in depth: the worker
 * never reads a file the job did not bring, except the toolkit's own. */
int kj__includes_check(const struct kj__compile_job *job, char *err, size_t errlen);

/* A malloc'd copy of log in which every path token holding marker
 * ("/comgr-": a compiler's private directory, .../comgr-XXXXXX/input/x.h)
 * loses everything up to the directory under it ("x.h"), and a file called
 * blind there ("CompileSource") is called name (the user's file name)
 * instead.  NULL for a NULL log or on ENOMEM. */
char *kj__log_scrub(const char *log, const char *marker, const char *blind, const char *name);

/* C++ name expressions (`--name-expression=scale<float>`, NVRTC's and
 * hiprtc's nvrtcAddNameExpression / hiprtcAddNameExpression): each lowered
 * name the compiler gives goes into out->lowered ("EXPR\tLOWERED\n",
 * common/lowered.h), apart from the log.  The worker sends it as the
 * RESULT's LOWERED field; kjitd stores it in the index's own column,
 * sends it with every answer for the key, hit or compile, and `kjit show`
 * lists it; libkjit turns it into kjit_result.lowered_names.  Families
 * that take no expressions (hipcc, nvcc, shaderc) refuse the option
 * (KJ_NAME_EXPR_OPT, common/lowered.h). */
/* Appends expr's lowered name to out->lowered.  0, KJIT_EINVAL (a tab or
 * newline in either), KJIT_ETOOBIG (past KJ_LOWERED_MAX) or KJIT_ENOMEM,
 * with out->error set. */
int kj__lowered_add(struct kj__compile_out *out, const char *expr, const char *lowered);

/* The reason a compile failed, for its one-line error: the first line of
 * log that reports an error (cut to 200 bytes), else fallback.  The caller
 * (kjitd) already says which compiler rejected which file for which
 * target, so neither is repeated here. */
void kj__log_reason(const char *log, const char *fallback, char *out, size_t outlen);

/* A malloc'd NUL-terminated copy of p[0..n), cut to at most KJ_LOG_MAX bytes
 * with a "[log truncated ...]" line appended when cut.  NULL for n == 0 or
 * on ENOMEM. */
char *kj__log_dup(const char *p, size_t n);
/* The same for a log of which only the first n of total bytes were kept. */
char *kj__log_dup_of(const char *p, size_t n, size_t total);

/* malloc'd NUL-terminated copy of n bytes; KJIT_EINVAL if they hold a NUL
 * (hiprtc and NVRTC take C strings), KJIT_ENOMEM. */
int kj__cstr_dup(const uint8_t *p, size_t n, char **out);

/* The tree path of the quoted name (n bytes, not NUL-terminated) included
 * from the file at tree path from: from's folder, then name's components,
 * "." dropped, ".." taking one folder back, into out.  0, or -1 when it
 * climbs above the tree root or does not fit in outlen. */
int kj__tree_join(const char *from, const char *name, size_t n, char *out, size_t outlen);

/* The runtime compilers' skeleton (rtc.c), shared by hiprtc and NVRTC. */
/* A job as the runtime compilers take it: NUL-terminated source and
 * headers, header names, and the options with "--gpu-architecture=TARGET"
 * first. */
struct kj__rtc_args {
	char *src;
	char **hdrs;
	const char **names;
	const char **opts;
	int n_headers, n_opts, n_extra;
	char arch[KJ_TARGET_MAX + 32];
};
/* The program's name when it is the one-line wrapper kj__rtc_args_build
 * makes for a source with a place in the tree (the source itself is a
 * header under that place: a program of the same name would include itself). */
#define KJ_RTC_WRAPPER_NAME "kjit-program.cu"
/* Room kj__rtc_args_build leaves for options the family adds itself. */
#define KJ_RTC_EXTRA_OPTS 4
/* Builds a from job.  0, or a negative code with out->error set (a NUL
 * inside the source or a header, or no memory).  Free with kj__rtc_args_free
 * in both cases. */
int kj__rtc_args_build(const struct kj__compile_job *job, struct kj__rtc_args *a, struct kj__compile_out *out);
void kj__rtc_args_free(struct kj__rtc_args *a);
/* Appends opt (not copied: it must outlive a) after the job's options.  0,
 * or KJIT_EINTERNAL with out->error past KJ_RTC_EXTRA_OPTS. */
int kj__rtc_args_push(struct kj__rtc_args *a, const char *opt, struct kj__compile_out *out);

/* The calls hiprtc and NVRTC both have, with the same shapes (a result is
 * an int, 0 for success; a program an opaque pointer).  code_size and code
 * give the object: hiprtc's code object, NVRTC's cubin (or its PTX, in a
 * copy of the table with those two swapped). */
struct kj__rtc_api {
	int (*version)(int *, int *);
	const char *(*errstr)(int);
	int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *);
	int (*compile)(void *, int, const char *const *);
	int (*log_size)(void *, size_t *);
	int (*log)(void *, char *);
	int (*code_size)(void *, size_t *);
	int (*code)(void *, char *);
	int (*destroy)(void **);
	int (*add_name)(void *, const char *);               /* may be NULL */
	int (*lowered)(void *, const char *, const char **);  /* may be NULL */
};
/* What differs between the runtime families: where the library is, what
 * its calls are named, and the words of their messages. */
struct kj__rtc_family {
	const char *name;            /* "hiprtc", "nvrtc" */
	const char *title;           /* as messages say it: "hiprtc", "NVRTC" */
	const char *const *libs;     /* the library names tried in order, NULL last */
	const char *not_found;       /* the error when none loads */
	const char *lacks;           /* the error when one lacks a call (its name follows) */
	struct {                     /* the symbol of each call of struct kj__rtc_api */
		const char *version, *errstr, *create, *compile, *log_size, *log, *code_size, *code, *destroy,
			*add_name, *lowered;
	} sym;
	const char *no_object;       /* the error when the object is missing or over KJ_OBJECT_MAX */
	const char *bad_object;      /* the error when it is not what was asked for */
	const char *log_marker;      /* the private directory its log names (kj__log_scrub), or NULL */
	const char *log_blind;       /* the name it gives the program there */
	const char *warm_file;       /* the warm-up program's name ("kjit_warmup.cu") */
};
/* One compile: the program, its headers, options and name expressions. */
struct kj__rtc_prog {
	const char *name, *src;
	int n_headers;
	const char *const *hdrs, *const *hdr_names;
	int n_opts;
	const char *const *opts;
	int n_exprs;
	const char *const *exprs;
	unsigned machine;            /* the ELF e_machine the object must have; 0: not an ELF (PTX) */
};
/* Opens the first of f's libraries that loads (kj__dlopen_compiler, so
 * never kjit's drop-in) into *lib and fills api from it.  0, or
 * KJIT_EBACKEND with f's words in err. */
int kj__rtc_load(const struct kj__rtc_family *f, void **lib, struct kj__rtc_api *api, char *err, size_t errlen);
/* Compiles p through api: the log (capped, f's private directory
 * scrubbed) into out->log, then the object into out->data and each name
 * expression's lowered name into out->lowered.  0; KJIT_ECOMPILE with the
 * log's first error as out->error; or another negative code with
 * out->error (KJIT_ENOMEM without). */
int kj__rtc_run(const struct kj__rtc_family *f, const struct kj__rtc_api *api, const struct kj__rtc_prog *p,
		struct kj__compile_out *out);
/* Compiles a trivial kernel with the option arch (and extra, unless NULL,
 * as every job of the family has it), so that the first job does not pay
 * for loading the compiler's own libraries.  0, or a negative code with
 * "TITLE cannot compile a trivial kernel (...)" in err. */
int kj__rtc_warm(const struct kj__rtc_family *f, const struct kj__rtc_api *api, const char *arch, const char *extra,
		 unsigned machine, char *err, size_t errlen);

/* Sets out->error to a malloc'd copy of msg (best effort) and returns code. */
int kj__out_error(struct kj__compile_out *out, int code, const char *msg);
/* A family's identity op over the strings its init made: identity into
 * id, runtime into rv.  0 or KJIT_ETOOBIG. */
int kj__identity_put(const char *identity, const char *runtime, char *id, size_t idlen, char *rv, size_t rvlen);

/* The walls a worker stands in (compilers/walls.c). */
enum { KJ_WALLS_LANDLOCK = 1, KJ_WALLS_NS_USER = 2, KJ_WALLS_NS_ROOT = 3 };
struct kj__walls {
	int level;  /* KJ_WALLS_* */
	int pid1;   /* the worker is init of its own PID namespace */
	size_t n;   /* host trees it may read, each bound read-only at its own path */
	char tree[KJ_WALL_TREES_MAX][256];
};
/* Lists the trees a family's worker reads (absolute paths; a tree beneath
 * a listed one is not listed again).  0 or KJIT_ETOOBIG. */
int kj__walls_trees(const char *family, struct kj__walls *w);
/* Puts the calling worker behind its walls (see walls.c): namespaces, a
 * root of only w's trees plus tmpdir at /tmp, /dev/{null,zero,urandom}
 * and its own /proc, an unprivileged uid.  Forks: only the walled child
 * returns (the parent relays its end and never returns; fd is closed
 * there, and tmpdir removed when owned).  On return tmpdir says where
 * the private directory is now.  0 with note saying what holds, or a
 * negative code with note saying why (a root worker never runs unwalled). */
int kj__walls_enter(const char *family, int fd, char *tmpdir, size_t tmplen, int owned, struct kj__walls *w,
		    char *note, size_t notelen);
/* Kills and reaps every process the worker's jobs left.  0, or
 * KJIT_EWORKER if some keep appearing (the worker should exit). */
int kj__walls_reap(const struct kj__walls *w);
/* Installs the worker's system-call filter (compilers/seccomp.c).  0 with
 * note set, or KJIT_EINTERNAL. */
int kj__seccomp_apply(int allow_ptrace, char *note, size_t notelen);

/* Applies the worker's Landlock walls (compilers/sandbox.c): read and
 * execute the trees of w (and /proc, /dev/null, /dev/zero, /dev/urandom),
 * write rw_dir only.  0 (note says what was applied, or that Landlock is
 * unavailable) or KJIT_EINTERNAL. */
int kj__sandbox_landlock(const struct kj__walls *w, const char *rw_dir, char *note, size_t notelen);

/* 1 if p[0..n) is a little-endian 64-bit ELF with e_machine machine; then
 * *flags (may be NULL) gets e_flags. */
int kj__elf_is(const uint8_t *p, size_t n, unsigned machine, uint32_t *flags);

/* 1 if p[0..n) is a whole CUDA fatbin (symbols.c): magic KJ_FATBIN_MAGIC,
 * version 1, every entry within its bounds, at least one PTX or ELF entry. */
int kj__fatbin_is(const uint8_t *p, size_t n);

/* Finds the entry whose triple is "hipv4-amdgcn-amd-amdhsa--TARGET" (or
 * "hip-amdgcn-amd-amdhsa-TARGET") in a clang offload bundle and points
 * *obj/ *objlen into p at it.  0, KJIT_ECORRUPT (malformed bundle) or
 * KJIT_ENOENT (no entry for target). */
int kj__bundle_find(const uint8_t *p, size_t n, const char *target, const uint8_t **obj,
		    size_t *objlen);

/* The identity of the tree under dir (treeid.c): 16 hex digits of SHA-256
 * over every entry's relative path, type, size and mtime (links by their
 * text), so any change of a file under it changes them.  A missing dir
 * gives the digest of nothing.  0 or a negative code. */
int kj__tree_id(const char *dir, char *out, size_t outlen);
/* The same over several trees, each line prefixed with its root. */
int kj__trees_id(const char *const *dirs, size_t n, char *out, size_t outlen);
/* The identity of the system include trees a full compiler (hipcc, nvcc)
 * reads read-only: /usr/include, /usr/local/include, /usr/lib/gcc, clang's
 * resource directories, ROCm's include directory, and extra (a toolkit's
 * include directory; may be NULL).  Computed once per worker start. */
int kj__system_headers_id(const char *extra, char *out, size_t outlen);

/* Full compilers as child processes (spawn.c). */
struct kj__proc_out {
	struct kj__buf log;  /* first KJ_LOG_MAX bytes of stdout+stderr */
	size_t total;        /* bytes the child wrote */
	int status;          /* waitpid status */
	int timed_out;
};
/* Runs argv (argv[0] an absolute path) in dir with a clean environment,
 * capturing stdout+stderr into po (free po->log with kj__buf_free).  0
 * when the child ran (look at po->status, po->timed_out), or a negative
 * code. */
int kj__run_capture(const char *const *argv, const char *dir, int timeout_ms, struct kj__proc_out *po);
/* Makes a fresh private directory ROOT/kjit-FAMILY-XXXXXX into dir.  0,
 * KJIT_EINVAL (too long) or KJIT_EIO. */
int kj__make_job_dir(const char *root, const char *family, char *dir, size_t dirlen);
/* The name of a job's directory under the worker's private one: the path
 * every job compiles at (/tmp/job inside the walls; worker.c). */
#define KJ_JOB_DIR_NAME "job"
/* The directory a job's files go to, into dir: job->dir (the worker's
 * fresh one at its fixed path) when set, else a fresh one made as
 * kj__make_job_dir does (*made set: remove it with kj__rm_job_dir).  0,
 * KJIT_EINVAL or KJIT_EIO. */
int kj__job_dir_open(const struct kj__compile_job *job, const char *root, const char *family, char *dir,
		     size_t dirlen, int *made);
/* Writes data to dir/name, creating the subdirectories name has (name was
 * checked: relative, no "..").  0, KJIT_EINVAL or KJIT_EIO. */
int kj__put_file(const char *dir, const char *name, const uint8_t *data, size_t len);
/* Removes a job's directory; a failure is said on stderr (kjitd's log). */
void kj__rm_job_dir(const char *dir);
/* The captured log with every "DIR/" removed, capped; NULL if empty. */
char *kj__clean_log(const struct kj__proc_out *po, const char *dir);

/* The skeleton of the families that run a full compiler (spawn-family.c:
 * hipcc, nvcc).  A family's state begins with this struct. */
struct kj__spawn_state {
	char path[PATH_MAX];        /* the compiler's executable */
	char tmp_root[PATH_MAX];    /* where job directories are made outside a worker */
	char identity[KJ_VERSION_STR_MAX * 2];
	char runtime[KJ_VERSION_STR_MAX];
};
/* What differs between the spawned families (the command line they share
 * is at the top of spawn-family.c). */
struct kj__spawn_family {
	const char *name;           /* "hipcc": messages, job directories, the shell check */
	const char *not_found;      /* the error when find finds no compiler */
	const char *out_file;       /* the object's name in the job's directory */
	const char *fallback;       /* the source's name when the user's cannot be written */
	const char *lang;           /* "hip": `-x hip` before a source that needs it */
	const char *arch_opt;       /* "--offload-arch=": the target follows */
	/* Sets st->path.  0 or a negative code. */
	int (*find)(struct kj__spawn_state *st);
	/* Fills st->identity and st->runtime (kj__spawn_query helps).  0 or a
	 * negative code with the reason in err. */
	int (*probe)(struct kj__spawn_state *st, char *err, size_t errlen);
	/* The job's target and options against the family's rules.  0, or a
	 * negative code with the reason in err. */
	int (*check)(void *state, const struct kj__compile_job *job, char *err, size_t errlen);
	/* 1 if the source, written under name, needs `-x LANG` before it. */
	int (*needs_lang)(const struct kj__compile_job *job, const char *name);
	/* The flag saying what the compiler writes ("--genco", "--cubin"). */
	const char *(*output_flag)(const struct kj__compile_job *job);
	/* 1 if a job option goes on the command line (NULL: all do); the
	 * skeleton itself keeps definitions, pre-includes and `-x LANG` off. */
	int (*passes)(const char *opt);
	/* Reads the object from dir/out_file into out.  0, or a negative code
	 * with out->error. */
	int (*take)(const char *dir, const struct kj__compile_job *job, struct kj__compile_out *out);
};
/* A family's init: allocates size bytes of state, finds the compiler,
 * sets the temporary root (TMPDIR, else /tmp) and probes.  0, or a
 * negative code with the reason in err. */
int kj__spawn_init(const struct kj__spawn_family *f, size_t size, void **state, char *err, size_t errlen);
void kj__spawn_fini(void *state);
/* The identity and runtime version probe found (compiler ops' identity). */
int kj__spawn_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen);
/* Runs `COMPILER ARG` in a fresh directory (named for family) and gives its
 * output in *text (malloc'd).  0, KJIT_EIO (no directory) or
 * KJIT_EBACKEND (it failed). */
int kj__spawn_query(const struct kj__spawn_state *st, const char *family, const char *arg, char **text);
/* Compiles job the way the top of spawn-family.c says.  0 with out->data,
 * KJIT_ECOMPILE with out->log, or another negative code with out->error. */
int kj__spawn_compile(const struct kj__spawn_family *f, void *state, const struct kj__compile_job *job,
		      struct kj__compile_out *out);

/* A request's pre-included header (nvcc's and hipcc's -include FILE,
 * NVRTC's --pre-include=FILE, as `kjit get` sends them: common/includes.h
 * KJ_PRE_INCLUDE_OPT): NAME of "--pre-include=NAME", or NULL.  Its bytes
 * are a header of the job; a family passes it on its own way (nvcc and
 * hipcc: "-include NAME" after the definitions' header, from the job's
 * directory; NVRTC and hiprtc: the option as it is). */
static inline const char *kj__opt_pre_include(const char *opt)
{
	return opt && strncmp(opt, "--pre-include=", 14) == 0 && opt[14] ? opt + 14 : NULL;
}

/* Shell-driven compilers (nvcc, hipcc): no option value reaches a shell
 * (defs.c).  The job's definitions go to this header in the job's
 * directory, included first; the name is refused as a job header's. */
#define KJ_DEFS_HEADER "kjit-defines.h"
/* 1 if opt is a definition or an undefinition ("-D...", "-U..."). */
int kj__opt_is_macro(const char *opt);
/* Appends to b the job's -D/-U options, in order, as "#define NAME VALUE"
 * ("1" without a value) and "#undef NAME" lines, each followed by an empty
 * line.  0, KJIT_EINVAL (err names the definition: a control byte or an
 * unclosed comment in its value) or KJIT_ENOMEM. */
int kj__defs_header(const struct kj__compile_job *job, struct kj__buf *b, char *err, size_t errlen);
/* Writes the job's definitions header into dir when it has definitions,
 * with its path in path (else path is ""), for `-include PATH`.  0,
 * KJIT_EINVAL (err says why: a header of that name, a bad value), KJIT_EIO
 * or KJIT_ENOMEM. */
int kj__defs_write(const char *dir, const struct kj__compile_job *job, char *path, size_t pathlen, char *err,
		   size_t errlen);
/* 0 if arg holds only bytes no shell interprets (letters, digits,
 * -_=+,./:); else KJIT_EINVAL with "WHAT 'ARG' holds 'C', which kjit never
 * passes to FAMILY ..." in err. */
int kj__shell_safe(const char *family, const char *what, const char *arg, char *err, size_t errlen);
/* kj__shell_safe over a NULL-terminated argv (argv[0] the compiler). */
int kj__argv_shell_safe(const char *family, const char *const *argv, char *err, size_t errlen);

/* The directory of the NVRTC library the nvrtc family loads (nvrtc.c: the
 * same names in the same order, opened here and closed again), symlinks
 * resolved ("/usr/local/cuda-13.0/lib").  0, KJIT_ENOENT (no NVRTC) or
 * KJIT_ETOOBIG. */
int kj__nvrtc_lib_dir(char *dir, size_t dirlen);
/* The nvcc of the toolkit whose library directory is libdir: the first
 * executable of libdir/../bin/nvcc, ../../bin/nvcc (Debian's
 * /usr/lib/x86_64-linux-gnu) and ../../../bin/nvcc (a toolkit's
 * targets/x86_64-linux/lib), resolved into out.  0 or KJIT_ENOENT. */
int kj__nvcc_beside(const char *libdir, char *out, size_t outlen);

/* The HIP option whitelist (hiprtc.c), shared by hipcc: same clang underneath. */
const struct kj__opt_rule *kj__hip_option_rules(size_t *n);
/* The CUDA option whitelist NVRTC and nvcc share (nvrtc.c); each adds its own. */
const struct kj__opt_rule *kj__cuda_option_rules(size_t *n);

/* AMD facts shared by hiprtc and hipcc (amd.c). */
/* The device-libs bitcode directory, or NULL if none of the known ones exists. */
const char *kj__amd_bitcode_dir(void);
/* "device-libs " and the first 16 hex digits of SHA-256 over the sorted
 * names, sizes and contents of the *.bc files of the bitcode directory, or
 * "device-libs none".  0 or a negative code. */
int kj__amd_devlibs_id(char *out, size_t outlen);
/* 0 if target is an AMD target ID (kj__amd_target_parse) in its canonical
 * form, the one both HIP families admit; else KJIT_ETARGET with a reason
 * naming target (and the canonical form, when that is all that differs)
 * in err. */
int kj__amd_target_ok(const char *target, char *err, size_t errlen);

/* dlopen(name, flags), refusing kjit's own drop-in libnvrtc/libhiprtc
 * (dropin/, found first when `kjit run` put its folder on the library
 * path kjitd inherited): a worker must load the real compiler, never a
 * library that would send the job back to kjitd.  NULL when not loaded. */
void *kj__dlopen_compiler(const char *name, int flags);

#endif /* KJ_COMPINT_H */
