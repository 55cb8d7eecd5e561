/* kjit.h: the public C interface of libkjit, the client of the kjitd kernel cache.
 *
 * A process asks kjitd for a compiled GPU code object (HSACO, cubin, PTX or
 * SPIR-V) by source or by the name of a bundled kernel, and loads it itself
 * with its own driver (hipModuleLoadData, cuModuleLoadData,
 * vkCreateShaderModule).  libkjit connects to the per-user daemon (starting
 * one when none answers) or to $KJIT_SOCKET, and never writes the cache.
 *
 * Conventions: every call returns 0 or a negative KJIT_E* code, which
 * kjit_strerror() turns into words.  Handles are opaque, created and
 * destroyed in pairs; destroy(NULL) does nothing.  A kjit_client is not
 * thread-safe: use one per thread, or lock around it.
 */
#ifndef KJIT_H
#define KJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KJIT_VERSION_MAJOR 0
#define KJIT_VERSION_MINOR 1

/* The values every layer of kjit shares.  The same text, between the same
 * two KJIT_TYPES_DEFINED lines, is kjit's internal common/kj_types.h; the
 * build fails if the two differ. */
#ifndef KJIT_TYPES_DEFINED
#define KJIT_TYPES_DEFINED
#ifndef KJIT_EXPORT
#if defined(__GNUC__)
#define KJIT_EXPORT __attribute__((visibility("default")))
#else
#define KJIT_EXPORT
#endif
#endif

/* Error codes: all negative.  Each has its words and its name in common/err.c
 * (a test fails when one is missing there). */
enum kjit_error {
	KJIT_OK = 0,
	KJIT_ENOMEM = -1,       /* out of memory */
	KJIT_EINVAL = -2,       /* bad argument or malformed request */
	KJIT_EIO = -3,          /* I/O error (errno kept in kjit_result.sys_errno) */
	KJIT_ECONNECT = -4,     /* daemon unreachable */
	KJIT_EPROTO = -5,       /* protocol violation or version mismatch */
	KJIT_ECOMPILE = -6,     /* the compiler rejected the source (log attached) */
	KJIT_ENOTARGET = -7,    /* no target given, configured or detected */
	KJIT_ETARGET = -8,      /* target unknown or unsupported by the compiler */
	KJIT_EBACKEND = -9,     /* backend unknown, or its compiler not installed */
	KJIT_ENOKERNEL = -10,   /* no bundled kernel of that name */
	KJIT_EWORKER = -11,     /* the compile worker crashed or was killed */
	KJIT_ETIMEDOUT = -12,   /* compile or I/O timed out */
	KJIT_ETOOBIG = -13,     /* source, object or message over its size cap */
	KJIT_EINCLUDE = -14,    /* an #include outside the allowed directories */
	KJIT_ENOENT = -15,      /* no such cache entry */
	KJIT_ECORRUPT = -16,    /* an object or bundle failed its digest check */
	KJIT_EBUSY = -17,       /* kjitd is busy (retry), or another serves this cache */
	KJIT_EDENIED = -18,     /* the daemon refused this user */
	KJIT_EINTERNAL = -19,   /* a bug: please report */
	KJIT_ESHUTDOWN = -20,   /* the daemon is shutting down */
};
#define KJIT_ERROR_MIN (-20)

/* Returns a static one-line description of code (never NULL). */
KJIT_EXPORT const char *kjit_strerror(int code);
/* The code's name, "KJIT_ECOMPILE" etc. ("KJIT_OK" for 0), or NULL when code
 * is not one of them: what bindings show, so they need no table of their own. */
KJIT_EXPORT const char *kjit_error_name(int code);

enum kjit_backend {
	KJIT_BACKEND_NONE = 0,
	KJIT_BACKEND_HIP = 1,
	KJIT_BACKEND_CUDA = 2,
	KJIT_BACKEND_VULKAN = 3,
};

/* "hip", "cuda", "vulkan"; NULL for anything else. */
KJIT_EXPORT const char *kjit_backend_name(int backend);
/* The backend named name, or KJIT_BACKEND_NONE. */
KJIT_EXPORT int kjit_backend_from_name(const char *name);

/* How a get was answered. */
enum kjit_status {
	KJIT_STATUS_NONE = 0,
	KJIT_STATUS_HIT = 1,      /* served from the cache */
	KJIT_STATUS_COMPILED = 2, /* compiled for this request */
	KJIT_STATUS_JOINED = 3,   /* waited on a compile another request started */
	KJIT_STATUS_REMOTE = 4,   /* served from the fleet tier (kjitd --remote), now cached locally */
};
/* "hit", "compiled", "joined", "remote hit" */
KJIT_EXPORT const char *kjit_status_name(int status);
#endif /* KJIT_TYPES_DEFINED */

typedef struct kjit_client kjit_client;

/* Options for kjit_open; a zeroed struct (or NULL) means the defaults. */
typedef struct kjit_open_options {
	const char *socket_path; /* NULL: $KJIT_SOCKET, else the per-user path */
	int no_autostart;        /* 1: never start a daemon ($KJIT_NO_AUTOSTART=1 too) */
	int timeout_ms;          /* per wait on the socket; 0: 10 minutes */
} kjit_open_options;

/* Connects to kjitd, starting a per-user daemon when none answers and
 * autostart is allowed (at most one starts when many clients race), and
 * maps kjitd's shared read-only hit table when it offers one (hits then
 * cost a memory copy, no round trip; $KJIT_FAST_PATH=0: never).  Repeated
 * gets of the same request on one handle are answered from its own memo
 * ($KJIT_PROCESS_MEMO=0: never).
 * On success *out owns the connection; free it with kjit_close().  On
 * failure kjit_last_error(NULL) says why (kept per thread, like errno). */
KJIT_EXPORT int kjit_open(kjit_client **out, const kjit_open_options *opt);
KJIT_EXPORT void kjit_close(kjit_client *c);

/* The socket c talks to (valid while c is open), and how it was found:
 * *how (when how is not NULL) is "given" (kjit_open_options.socket_path),
 * "KJIT_SOCKET", "per-user", "system", "recorded by the cache's kjitd" or
 * "started"; *note (when note is not NULL) is why the system socket was
 * passed over (not in its group), or "".  A client talks only to a daemon
 * whose socket folder and listener are the caller's or root's
 * (docs/protocol.md, "Whom a client talks to").  NULL for NULL. */
KJIT_EXPORT const char *kjit_socket_path(const kjit_client *c, const char **how, const char **note);

/* A header the source may #include by this exact name. */
typedef struct kjit_header {
	const char *name;
	const void *data;
	size_t size;
} kjit_header;

/* What to compile.  Either source (+ source_size) or kernel is set. */
typedef struct kjit_request {
	int backend;                 /* enum kjit_backend */
	const char *target;          /* NULL: resolved (env, then daemon) */
	const char *runtime_version; /* NULL: resolved (env, then daemon) */
	const char *kernel;          /* name of a bundled kernel, or NULL */
	const void *source;          /* source text, or NULL with kernel */
	size_t source_size;
	const char *source_name;     /* for logs and `kjit ls`; may be NULL */
	const char *const *entries;  /* entry points (kernel names); may be NULL */
	size_t n_entries;
	const char *const *options;  /* compiler options */
	size_t n_options;
	const kjit_header *headers;  /* headers the source may include */
	size_t n_headers;
	int no_env;                  /* 1: ignore the environment's overrides */
	/* Directories (-I) searched, in order after headers, for what the
	 * source includes; what is found is read by this process and sent
	 * with the request as headers.  May be NULL. */
	const char *const *include_dirs;
	size_t n_include_dirs;
	/* The compiler family, where kjitd has it: "hiprtc" or "hipcc" for hip,
	 * "nvrtc" or "nvcc" for cuda.  NULL: kjitd's choice. */
	const char *compiler;
	/* C++ names to instantiate and look up, as NVRTC's and hiprtc's
	 * AddNameExpression take them ("scale<float>"); their lowered
	 * (mangled) names come back in kjit_result.lowered_names.  Sent as
	 * the options "--name-expression=EXPR", so they are in the key. */
	const char *const *name_expressions;
	size_t n_name_expressions;
	/* 1: a result that is not a hit carries, in kjit_result.explain, which
	 * earlier entry of the same source name is nearest and which part of
	 * the key differs (`kjit get --explain`).  Added last: the struct only
	 * grows. */
	int explain;
} kjit_request;

/* The answer to a get.  Everything in it is owned by it: release it with
 * kjit_result_free(), which also accepts a zeroed or freed result. */
typedef struct kjit_result {
	int status;              /* enum kjit_status, on success */
	uint8_t *data;           /* the code object */
	size_t size;
	char key[65];            /* hex SHA-256 cache key */
	char *target;            /* the canonical target it was built for */
	char *runtime_version;   /* the runtime version it was built for */
	char *log;               /* the compiler's log (may be NULL) */
	char *error;             /* one line saying what failed, on failure */
	int sys_errno;           /* errno behind KJIT_EIO / KJIT_ECONNECT */
	char **lowered_names;    /* [i]: the lowered name of name_expressions[i] (NULL if none) */
	size_t n_lowered_names;
	/* With kjit_request.explain, for a result that is not a hit: lines
	 * saying the nearest earlier entry of the source name and what differs
	 * (compiler identity, target, runtime version, options, source, a
	 * header by name, entry points); NULL for a hit or from an older
	 * kjitd.  Only written when the request asked.  Added last. */
	char *explain;
} kjit_result;

/* Fetches the object for req.  Returns 0 with res filled, or a negative
 * code with res->error (and for KJIT_ECOMPILE res->log) set.  The caller
 * frees res with kjit_result_free() in both cases. */
KJIT_EXPORT int kjit_get(kjit_client *c, const kjit_request *req, kjit_result *res);
KJIT_EXPORT void kjit_result_free(kjit_result *res);

/* Called by kjit_get_many once per request, as soon as its result is
 * ready: i is the request's index, code its outcome (0 or a KJIT_E* code)
 * and res is results[i], which stays the caller's (do not free it here). */
typedef void kjit_get_many_fn(void *arg, size_t i, int code, const kjit_result *res);

/* Fetches the objects of reqs[0..n) in one round trip.  Requests that the
 * process memo or the shared hit table answer are ready at once; all the
 * others are sent together (at most 256 unanswered at a time), the daemon
 * compiles the misses among them in parallel, and each reply is taken as it
 * arrives, in whatever order the daemon finishes them.  results[i] (and
 * codes[i] when codes is not NULL) receive request i's outcome exactly as
 * kjit_get would give it; on_ready, when not NULL, is called once per
 * request as soon as its result is ready.  Returns 0 when every request
 * succeeded, else the code of the first failed request in index order
 * (KJIT_EINVAL with nothing filled for bad arguments).  The caller frees
 * every results[i] with kjit_result_free, failure or not. */
KJIT_EXPORT int kjit_get_many(kjit_client *c, const kjit_request *reqs, size_t n, kjit_result *results,
			      int *codes, kjit_get_many_fn *on_ready, void *arg);

/* Round trip to the daemon.  Returns 0 when it answered. */
KJIT_EXPORT int kjit_ping(kjit_client *c);

/* Asks the daemon to exit once in-flight requests are answered. */
KJIT_EXPORT int kjit_stop(kjit_client *c);

/* Administrative queries.  *text (human) and/or *json (one JSON object) are
 * malloc'd strings the caller frees, on failure too (verify reports what it
 * dropped with KJIT_ECORRUPT); either pointer may be NULL when not wanted.
 * cmd is one of "stats", "targets", "kernels", "ls", "show", "gc", "verify",
 * "clear", "replay", "export", "import", "remote" (docs/cli.md lists each ARG). */
KJIT_EXPORT int kjit_admin(kjit_client *c, const char *cmd, const char *arg,
	       char **text, char **json);

/* The last error's one-line description on c, or "" (never NULL).  With
 * c NULL: why this thread's last kjit_open failed. */
KJIT_EXPORT const char *kjit_last_error(const kjit_client *c);

/* The kjit command (docs/cli.md): argv[0] is the program's name, argv[1]
 * the subcommand; it writes to stdout and stderr as `kjit` does and returns
 * its exit status (0 success, 1 the request failed, 2 usage error, 3 kjitd
 * unreachable), flushing stdout first.  The kjit binary is a main calling
 * it, and `python3 -m kjit` calls it through ctypes, so both take the same
 * options and refuse the same mistakes.  It uses getopt and stdio, so call
 * it from one thread at a time; `kjit run` replaces the calling process. */
KJIT_EXPORT int kjit_cli_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* KJIT_H */
