/* kj_limits.h: every size cap, timeout and default of kjit, each with why.
 * Nothing on a code path uses a bare number for these; change them here. */
#ifndef KJ_LIMITS_H
#define KJ_LIMITS_H

/* Wire protocol. */
#define KJ_PROTO_VERSION 1                 /* bumped on any incompatible change */
#define KJ_FRAME_HDR_SIZE 12               /* u32 len, u16 type, u8 version, u8 flags, u32 id */
#define KJ_FRAME_MAX (64u << 20)           /* largest body: an object plus its log fits */
#define KJ_FIELD_MAX_COUNT 4096            /* fields in one message: entries+options+headers */
#define KJ_SOURCE_MAX (4u << 20)           /* a kernel source larger than this is a mistake */
#define KJ_HEADERS_MAX_TOTAL (16u << 20)   /* all headers of one request together */
#define KJ_OBJECT_MAX (48u << 20)          /* largest code object we store or serve */
#define KJ_LOG_MAX (256u << 10)            /* compiler logs are cut (marked) past this */
#define KJ_NAME_MAX 255                    /* source, kernel, entry and header names */
#define KJ_TARGET_MAX 128                  /* a target ID like gfx90a:sramecc+:xnack- */
#define KJ_VERSION_STR_MAX 64              /* a runtime or compiler version string */
#define KJ_OPTION_MAX 1024                 /* one compiler option */
#define KJ_OPTIONS_MAX_COUNT 256
#define KJ_ENTRIES_MAX_COUNT 256
#define KJ_HEADERS_MAX_COUNT 512
#define KJ_INCLUDE_DEPTH_MAX 32            /* nested #include levels we follow */
#define KJ_TREE_FILES_MAX (1u << 18)       /* entries of a system include tree we fingerprint */

/* Daemon. */
#define KJ_COMPILE_TIMEOUT_MS 60000        /* a compile past this kills its worker */
#define KJ_CLIENT_IDLE_TIMEOUT_MS 30000    /* a connection silent this long mid-frame is closed */
#define KJ_CLIENT_OUTBUF_MAX (128u << 20)  /* unsent reply bytes per client before it is dropped */
#define KJ_DEFAULT_MAX_SIZE (5ull << 30)   /* --max-size default: 5 GiB */
#define KJ_INDEX_FLUSH_MS 1000             /* hit counters reach sqlite this often */
#define KJ_POOL_RETRY_MS 10000             /* a compiler that failed to start is tried again after this */
#define KJ_WORKER_AS_MAX (16ull << 30)     /* RLIMIT_AS of a worker (ROCm maps a lot) */
#define KJ_WORKER_FSIZE_MAX (1ull << 30)   /* RLIMIT_FSIZE of a worker */
#define KJ_HOT_BYTES_MAX (256u << 20)      /* verified objects kept in memory */
#define KJ_MEMO_BYTES_MAX (64u << 20)      /* request bodies remembered with their cache key */
#define KJ_NEGCACHE_MAX 64                 /* failed compiles remembered (daemon/negcache.c) */
#define KJ_FAILED_TTL_MS 5000              /* --failed-ttl default: a startup storm, not an edit cycle */

/* Client. */
#define KJ_DEFAULT_TIMEOUT_MS 600000       /* a reply: covers a queue of long compiles */
#define KJ_AUTOSTART_WAIT_MS 10000         /* how long a client waits for a daemon it started */

#endif /* KJ_LIMITS_H */
