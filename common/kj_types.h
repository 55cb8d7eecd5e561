/* kj_types.h: the values every layer of kjit shares with the public API:
 * the KJIT_E* error codes (what every internal int return carries), the
 * backend and status enums, and the four functions that name them.
 * cache/, compilers/ and daemon/ include this, not the client's public
 * header include/kjit.h.
 *
 * The block between the KJIT_TYPES_DEFINED lines is the same text in
 * include/kjit.h (the installed header must stand alone); the Makefile's
 * rule for $(BUILD)/include/kjit.h compares the two and fails the build if
 * they differ, so the public values are the internal ones by construction.
 */
#ifndef KJ_TYPES_H
#define KJ_TYPES_H

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

#endif /* KJ_TYPES_H */
