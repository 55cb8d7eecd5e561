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
#define KJ_KERNEL_TEXT_MAX (256u << 10)    /* a bundled kernel's source up to this is kept in memory after a read (daemon/miss/request.c) */
#define KJ_KERNEL_TEXT_TOTAL (16u << 20)   /* ... and all of them kept together at most this */
#define KJ_HEADER_TEXT_MAX (32u << 10)    /* a header of <kernels>/include up to this is kept in memory after a read (daemon/miss/hdrkeep.c): half a loop resolve's KJ_RESOLVE_INLINE_BYTES, which its source shares; a larger one would seldom fit */
#define KJ_HEADER_TEXT_TOTAL (4u << 20)   /* ... and all of them kept together (texts, paths, entries) at most this, the least recently used dropped; the bundled ones are 29 KB */
#define KJ_HEADERS_MAX_TOTAL (16u << 20)   /* all headers of one request together */
#define KJ_OBJECT_MAX (48u << 20)          /* largest code object we store or serve */
#define KJ_PUBLISH_PENDING_MAX (256ull << 20) /* object bytes whose publish may wait on a thread (daemon/miss/publish.c); past it, on the loop */
#define KJ_LOG_MAX (256u << 10)            /* compiler logs are cut (marked) past this */
#define KJ_LOWERED_MAX (512u << 10)        /* lowered names of one compile (common/lowered.h): 256 expressions of 1 KiB and their mangled names; past it the compile fails */
#define KJ_NAME_MAX 255                    /* source, kernel, entry and header names */
#define KJ_TARGET_MAX 128                  /* a target ID like gfx90a:sramecc+:xnack- */
#define KJ_VERSION_STR_MAX 64              /* a runtime or compiler version string */
#define KJ_OPTION_MAX 1024                 /* one compiler option */
#define KJ_WARN_NAME_MAX 64                /* a -W option's name (-Wno-deprecated-declarations is 27): clang's longest are under 50 */
#define KJ_OPTIONS_MAX_COUNT 256
#define KJ_ENTRIES_MAX_COUNT 256
#define KJ_OBJ_ENTRIES_MAX (1u << 20)      /* an object's entry list kept in the index (schema 5): 4096 names of 255 bytes; a longer list is not kept and the object's entries are not judged */
#define KJ_HEADERS_MAX_COUNT 512
#define KJ_RESULT_LOG_MAX (KJ_LOG_MAX + 64) /* a RESULT's LOG (common/jobmsg.c): a log cut at KJ_LOG_MAX may end with its short truncation mark */
#define KJ_RESULT_ERROR_MAX 1024           /* a RESULT's ERROR: one line of the worker's */
#define KJ_FRAMES_KEEP_MAX (256u << 10)    /* a frame reader's buffer larger than this is freed once empty (common/frames.c): a large frame's memory goes back */
#define KJ_INCLUDE_DEPTH_MAX 32            /* nested #include levels we follow */
#define KJ_EXPLAIN_CANDIDATES_MAX 32       /* earlier entries of one source name --explain compares (most recent first): each costs a recipe read and an include scan */
#define KJ_EXPLAIN_WORDS_MAX 8192          /* option words a side --explain compares per entry (hash sets, issue 29): past it the text says it stopped */
#define KJ_INCLUDE_CLIMB_MAX 8             /* folders a source's includes may climb out of its own ("../../include/x.h": 2); real projects climb 1 or 2 */
#define KJ_INC_EXPANSIONS_MAX 64          /* header names one computed #include may spell (a macro with several definitions: each tried) */
#define KJ_INC_EXPAND_STEPS_MAX 20000      /* macro replacements one computed #include may take (bounds recursion and branching) */
#define KJ_INC_EXPAND_DEPTH_MAX 64         /* nested macro expansions (each a few KB of stack, on libuv's pool threads) */
#define KJ_INC_TOKENS_MAX 4096             /* tokens one expansion may grow to (A -> B B, B -> C C ... doubles) */
#define KJ_INC_DEFS_MAX 200000             /* #define lines and -D options one scan keeps for computed includes */
#define KJ_TREE_FILES_MAX (1u << 18)       /* entries of a system include tree we fingerprint */

/* Daemon. */
#define KJ_COMPILE_TIMEOUT_MS 60000        /* a compile past this kills its worker */
#define KJ_JOB_IDLE_TIMEOUT_MS 30000       /* --job-idle-timeout: a compile whose worker's tree used no CPU this long is killed */
#define KJ_WORKER_TICK_MS 250              /* a busy worker's timer: the timeouts above are checked this often */
#define KJ_WORKER_SHARE_PCT 50             /* --worker-share: of a family's workers, one uid holds this much while another waits */
#define KJ_WORKER_MAX_RSS (512ull << 20)   /* --worker-max-rss: a worker bigger than this after a job is replaced */
#define KJ_CLIENT_IDLE_TIMEOUT_MS 30000    /* a connection silent this long mid-frame is closed */
#define KJ_CLIENT_INFLIGHT_MAX 256         /* unanswered requests per connection (a kjit_get_many window); each holds a parsed request */
#define KJ_REPLY_SNDBUF_MAX (8u << 20)   /* a reply up to this large may raise its socket's send buffer to leave in one write, charged to its uid (daemon/net/conn-out.c) */
#define KJ_REPLY_SNDBUF_SLACK (128u << 10) /* room beyond the reply's bytes in such a buffer: the kernel counts its own overhead per 32 KiB */
#define KJ_REPLY_UNCHECKED_MAX (64u << 10) /* a reply this small is written without first checking that its uid's budget could hold it queued; past it only by this much per connection (daemon/net/conn-out.c) */
#define KJ_CLIENT_INFLIGHT_BYTES_MAX (2u << 20) /* request bytes read past the first unanswered one: bounds what a pipelining client makes kjitd hold */
#define KJ_DEFAULT_MAX_SIZE (5ull << 30)   /* --max-size default: 5 GiB */
#define KJ_CACHE_SHARE_DIV 4               /* --max-size-per-uid default: a quarter of --max-size; gc evicts from uids over it first (cache/share.c) */
#define KJ_INDEX_FLUSH_MS 1000             /* hit counters reach sqlite this often */
#define KJ_POOL_RETRY_MS 10000             /* a compiler that failed to start is tried again after this */
#define KJ_WORKER_AS_MAX (16ull << 30)     /* RLIMIT_AS of a worker (ROCm maps a lot) */
#define KJ_WORKER_FSIZE_MAX (1ull << 30)   /* RLIMIT_FSIZE of a worker */
#define KJ_WORKER_TMPFS_MAX (2ull << 30)   /* a namespaced worker's /tmp (tmpfs: counts as its memory) */
#define KJ_WALL_TREES_MAX 24               /* host trees bound into a worker's root (compilers/walls.c) */
#define KJ_REAP_ROUNDS_MAX 50              /* /proc scans for a job's leftovers before the worker gives up */
#define KJ_WORKER_USER_DEFAULT "kjit-worker" /* the unprivileged user a root kjitd's workers run as */
#define KJ_HOT_BYTES_MAX (256u << 20)      /* verified objects kept in memory */
#define KJ_MEMO_BYTES_MAX (64u << 20)      /* request bodies remembered with their cache key */
#define KJ_NEGCACHE_MAX 64                 /* failed compiles remembered (daemon/miss/negcache.c) */
#define KJ_FAILED_TTL_MS 5000              /* --failed-ttl default: a startup storm, not an edit cycle */
#define KJ_MAINT_DELETE_BATCH 256          /* index rows a maintenance thread deletes per transaction: the loop's own writes wait at most one batch */
#define KJ_IMPORT_ENTER_MAX 4096          /* imported entries the loop enters in its table per turn (a few ms) */
#define KJ_WAL_CHECKPOINT_PAGES 1000      /* the index's WAL is checkpointed (on a thread) past this many pages: SQLite's own default */
#define KJ_MAINT_BUSY_MS 5000              /* a maintenance thread's index connection waits this long for the loop's write to end */

/* What one local user may hold of the daemon (daemon/net/quota.c, docs/reliability.md). */
#define KJ_CONN_PER_UID_MAX 256            /* connections per uid (not owner/root): a build with a client per core fits */
#define KJ_CONN_PRIV_RESERVE 64            /* descriptors only the owner and root may use: stop/stats on a flooded daemon */
#define KJ_FD_RESERVE 64                   /* descriptors kept for the cache, index, log, detection and the fleet tier */
#define KJ_NOFILE_WANT 65536               /* the soft RLIMIT_NOFILE kjitd raises itself to (capped by the hard one) */
#define KJ_CONN_IDLE_MS 300000             /* a connection with nothing in flight silent this long is closed (clients reconnect) */
#define KJ_REQ_BYTES_MAX (512ull << 20)    /* request bytes in flight and queued, all uids: bounds RSS under a flood */
#define KJ_REQ_BYTES_PER_UID_MAX (160ull << 20) /* per uid: the largest request (4 MiB source + 16 MiB headers) held 4x over, twice */
#define KJ_RESOLVE_RUNNING_MAX 8           /* GETs resolving (include scan, key hash, memo's file checks) on libuv's pool at once, all uids; more wait in kjitd's queue: publishes and admin tasks share the pool's 4 threads and queue behind at most these (daemon/miss/offhash.c) */
#define KJ_RESOLVE_INLINE_BYTES (64u << 10) /* a GET whose bytes to hash (body, source, headers) are at most this is resolved on kjitd's loop, not a pool thread: the hop costs more (daemon/miss/offhash.c, issue 35) */
#define KJ_RESOLVE_INLINE_PROBES 32        /* ... as long as its include scan looks a name up on disk at most this many times and finds none there (a header to read from disk: on a thread) */
#define KJ_RESOLVE_PER_UID_MAX 4096        /* GETs one uid may have resolving or waiting to (--max-resolves-per-uid); past it "kjitd is busy ... retry": 16 connections each with a full kjit_get_many window (256) fit, the byte quota bounds their bytes, this their count */
#define KJ_REQ_COPIES 2                    /* a queued compile holds its request twice (job frame and replay recipe) */
#define KJ_MMAP_THRESHOLD (4u << 20)       /* blocks this large come from mmap and go back to the system when freed (smaller ones from the heap: a 1 MiB object's buffers are not faulted in again per request) */
#define KJ_HEAP_KEEP (4u << 20)            /* free heap top kept per malloc arena for the next requests' buffers (M_TRIM_THRESHOLD): a 1 MiB object's few buffers; past a load, malloc_trim (KJ_TRIM_IDLE_BYTES) */
#define KJ_MALLOC_ARENAS 1                 /* malloc arenas kjitd's threads share (M_ARENA_MAX): a pool thread's own arena keeps its top (up to KJ_HEAP_KEEP) where malloc_trim cannot reach it */
#define KJ_TRIM_IDLE_BYTES (8ull << 20)    /* once this much more of the heap's free pages is resident than after the last malloc_trim (a load passed), the flush timer trims again (daemon/net/quota.c) */
#define KJ_TRIM_QUIET_BYTES (8ull << 20)   /* ... but not while more than this of requests and unread replies is held (the load still running) */
#define KJ_IDLE_TIMEOUT_AUTOSTART_S 600    /* --idle-timeout an autostarted per-user kjitd gets (sccache's default) */
#define KJ_REAP_WAIT_MS 2000               /* at exit, how long kjitd waits for killed descendants to die */
#define KJ_PROBE_FDS 64                    /* descriptors of another kjitd searched for its index (opened early) */
#define KJ_CACHE_LOCK_WAIT_MS 3000         /* a new kjitd waits this long for an exiting one to release the cache */

/* Shared read-only hit table (common/hittab.c, docs/hitpath.md). */
#define KJ_HITTAB_BYTES_MAX (256u << 20)   /* hard cap of the memfd: as much as the hot set */
#define KJ_HITTAB_BYTES_MIN (64u << 10)    /* smaller cannot hold its header, slots and one object */
#define KJ_HITTAB_SLOTS_MAX (1u << 20)     /* slots of 64 bytes: 64 MiB of index at most */
#define KJ_HITTAB_SLOTS_DEFAULT 16384      /* 1 MiB of index; the bundled kernels use a few hundred */
#define KJ_HITTAB_PROBE 8                  /* slots a fingerprint may live in (linear probing window) */
#define KJ_HITTAB_RETRIES 4                /* reads racing a rewrite before the client asks the socket */
#define KJ_HITTAB_RECORD_SHARE 4           /* one object takes at most 1/4 of the arena */
#define KJ_HITTAB_UIDS_MAX 16              /* per-uid tables of a daemon admitting other uids (daemon/net/hits.c) */
#define KJ_HITTAB_UID_BYTES (32u << 20)    /* each: 16 x 32 MiB = 512 MiB of memfd at most, all uids */
#define KJ_HITTAB_UID_SLOTS 4096           /* each: 256 KiB of index */

/* Fleet tier (remote/remote.c, docs/remote.md). */
#define KJ_REMOTE_PREFIX "kjit:v2:"        /* --remote-prefix default: v2 = KJO2 values; KJO1 nodes use kjit:v1: */
#define KJ_REMOTE_TIMEOUT_MS 200           /* connect, handshake, lease ops: slower counts as down (--remote-timeout) */
#define KJ_REMOTE_LOOKUP_MS 5              /* a GET's deadline before its size is known (--remote-lookup-timeout): a LAN Redis answers in < 1 ms */
#define KJ_REMOTE_LOOKUP_MS_PER_MIB 1      /* added per MiB of the reply once its bulk length is read: 1 GB/s, a slow LAN */
#define KJ_REMOTE_SECRET_MIN 16            /* --remote-secret: fewer bytes is a guessable key */
#define KJ_REMOTE_SECRET_MAX 4096          /* --remote-secret: more is a mistake (the wrong file) */
#define KJ_REMOTE_META_MAX 1024            /* a KJO2 value's metadata (backend, target, version, compiler) */
#define KJ_REMOTE_ENTRIES_MAX (KJ_ENTRIES_MAX_COUNT * (KJ_NAME_MAX + 1)) /* a KJO2 value's entry-point list */
#define KJ_REMOTE_LOG_MAX (2 * KJ_LOG_MAX) /* a remote value's log: a cut log plus old nodes' lowered-name lines */
#define KJ_REMOTE_OBJECT_MAX (64ull << 20) /* --remote-max-object: bigger objects stay local */
#define KJ_REMOTE_PUBLISH_QUEUE_BYTES (256u << 20) /* unacknowledged publishes kept in memory */
#define KJ_REMOTE_SLOW_LINK_BPS (10u << 20) /* a publish may take timeout + size at this rate */
#define KJ_REMOTE_LEASE_MS 10000           /* lease life; the owner renews every third of it */
#define KJ_REMOTE_LEASE_POLL_MS 500        /* waiters poll this often when pub/sub is silent */
#define KJ_REMOTE_LEASE_WAIT_MS (KJ_COMPILE_TIMEOUT_MS + KJ_REMOTE_LEASE_MS) /* a live owner's longest compile */
#define KJ_REMOTE_RETRY_MIN_MS 100         /* first reconnect delay, doubled up to the max */
#define KJ_REMOTE_RETRY_MAX_MS 5000        /* reconnects never wait longer than this */
#define KJ_REMOTE_TICK_MS 50               /* the watchdog's period while work is pending */
#define KJ_REMOTE_READS_PER_TURN 256     /* hiredis reads (16 KiB each) of one Redis reply per turn of the loop (4 MiB), then other clients get their turn */
#define KJ_REMOTE_READER_KEEP (4u << 20)  /* a fleet connection keeps a read buffer this large between replies (no new pages per value) */
#define KJ_REMOTE_READ_SLACK (64u << 10)  /* unparsed bytes a fleet connection may hold beyond its largest reply; more is dropped */
#define KJ_REMOTE_SUB_BUF_MAX (32u << 20) /* ... on the subscription: Redis's own pub/sub output limit, so a writer gains no cheaper way to drop it */
#define KJ_REMOTE_URL_MAX 1024             /* a --remote URL */

/* Client. */
#define KJ_DEFAULT_TIMEOUT_MS 600000       /* a reply: covers a queue of long compiles */
#define KJ_AUTOSTART_WAIT_MS 10000         /* how long a client waits for a daemon it started */
#define KJ_PROCESS_MEMO_BYTES (32u << 20)  /* objects a client handle remembers (KJIT_PROCESS_MEMO=0: none) */
#define KJ_PROCESS_MEMO_SHARE 4            /* one object takes at most 1/4 of the process memo */
#define KJ_MEMO_ADOPT_SLACK 4096           /* a reply frame kept whole by the process memo when at most this precedes its object */
#define KJ_RESULT_TAKE_MIN (128u << 10)   /* an object from this size takes its reply's buffer as the result's (no copy into fresh pages) and is not kept by the process memo (client/get.c) */

/* Drop-in libnvrtc / libhiprtc (dropin/, docs/dropin.md). */
#define KJ_DROPIN_RETRY_MS 1000            /* after kjitd was unreachable, compiles go straight to the real library this long */
#define KJ_DROPIN_CLIENTS 8                /* idle connections a process keeps for its compiling threads */
#define KJ_DROPIN_STAT_SLOTS 16            /* counters in the per-user drop-in stats file (client/dropstat.c) */

#endif /* KJ_LIMITS_H */
