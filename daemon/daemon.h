/* daemon.h: kjitd's one context struct and the interfaces between its
 * parts: connections (conn.c: reading frames, replies, back-pressure), the
 * server (server.c: listening, accepting, dispatching to the handlers),
 * the GET request (request.c parses, get.c answers), single-flight
 * (miss.c: one compile per key), the worker pool (pool.c: compile
 * processes), the memo, the recent failures (negcache.c), the
 * bundled-kernel manifest and the administrative
 * commands.  Arrows point one way: server.c calls the handlers, handlers
 * call conn.c, and conn.c calls back only through the dispatch function
 * it was given.
 *
 * Everything runs on one libuv loop thread.  The loop never compiles and
 * never waits on a compiler: compiles happen in worker processes that talk
 * to the loop over socketpairs with the framing of common/proto.h.  All
 * mutable state lives in struct kj__daemon or is reachable from it.
 */
#ifndef KJ_DAEMON_H
#define KJ_DAEMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <uv.h>

#include "cache.h"
#include "detect.h"
#include "entrylist.h"
#include "kj_limits.h"
#include "frames.h"
#include "offwork.h"
#include "proto.h"

struct kj__daemon;
struct kj__toproom;
struct kj__missroom;
struct kj__conn;
struct kj__flight;
struct kj__remote;
struct kj__remote_lease;

/* kjitd's queues of work off the loop (d->work, offwork.h; their policies
 * are main.c's table):
 *  RESOLVE: GETs resolving (offhash.c), KJ_RESOLVE_RUNNING_MAX on the pool
 *    at once, the next the oldest of a uid with none running; at stop,
 *    those waiting and those not yet begun on the pool end with
 *    KJIT_ESHUTDOWN.
 *  PUBLISH: publishes (publish.c); no bound on count (publish.c bounds the
 *    bytes); never ended early: what was answered is cached.
 *  ADMIN: admin tasks (offloop.c), one at a time, in arrival order; at
 *    stop those waiting end with KJIT_ESHUTDOWN, the one running completes.
 *  CHECKPOINT: the index's WAL checkpoint (offloop.c), one at a time.
 * PUBLISH, ADMIN and CHECKPOINT use the cache's SQLite on their thread:
 * where it is not thread-safe (kj__cache_job_threaded), they run on the
 * loop, as they always could. */
enum { KJ_OFFQ_RESOLVE, KJ_OFFQ_PUBLISH, KJ_OFFQ_ADMIN, KJ_OFFQ_CHECKPOINT, KJ_OFFQ_COUNT };

/* Configuration, from the command line and the configuration file. */
#define KJ_OPT_ROWS_MAX 64
struct kj__config {
	char *socket_path;
	char *cache_dir;
	char *kernels_dir;
	char *sysfs_root;
	char *log_path;
	char *worker_user;          /* --worker-user: who a root daemon's workers run as */
	char *prestart;             /* --prestart / $KJITD_PRESTART: families whose first worker starts with kjitd */
	char *self_exe;             /* our own binary, re-executed for roles */
	char *arch[4];              /* per backend: --hip-arch, --cuda-arch, --vulkan-env */
	char *hip_compiler;         /* "hiprtc" (default) or "hipcc" */
	char *cuda_compiler;        /* "nvrtc" (default) or "nvcc" */
	uint64_t max_size;
	uint64_t max_size_per_uid;  /* --max-size-per-uid: a uid's share of the cache; 0: max_size / 4 */
	uint64_t hot_size;          /* verified objects kept in memory */
	uint64_t memo_size;         /* request bytes remembered with their key */
	unsigned failed_ttl_ms;     /* --failed-ttl: a failed compile is served this long */
	int failed_ttl_given;
	unsigned jobs;              /* workers per compiler family */
	unsigned compile_timeout_ms;
	unsigned job_idle_ms;       /* --job-idle-timeout: a job whose worker uses no CPU this long is killed (pool.c) */
	unsigned worker_share;      /* --worker-share: percent of cfg.jobs one uid holds while another waits */
	uint64_t worker_max_rss;    /* --worker-max-rss: a worker bigger than this after a job is replaced */
	int foreground;
	int system_mode;            /* socket 0660 with a group, no 0700 directory */
	char *socket_group;         /* --socket-group: the socket's group (mode 0660), or NULL */
	gid_t socket_gid;           /* its gid (resolved when parsed) */
	int ready_fd;               /* --ready-fd N: one status byte there (0: serving), with --foreground */
	int ready_fd_given;
	uid_t allow_uid[16];
	size_t n_allow_uid;
	gid_t allow_gid[16];
	size_t n_allow_gid;
	gid_t admin_gid[16];        /* --admin-gid: groups that may administer (access.c) */
	size_t n_admin_gid;
	/* Fleet tier (remote/remote.h, docs/remote.md); remote_url NULL: none. */
	char *remote_url;           /* --remote URL or $KJITD_REMOTE */
	char *remote_prefix;        /* --remote-prefix; NULL: KJ_REMOTE_PREFIX */
	int remote_mode;            /* --remote-mode: enum kj__remote_mode (rw 0, ro 1) */
	unsigned remote_timeout_ms; /* --remote-timeout MS; 0: KJ_REMOTE_TIMEOUT_MS */
	unsigned remote_lookup_ms;  /* --remote-lookup-timeout MS[+MS/MiB]; 0: KJ_REMOTE_LOOKUP_MS */
	unsigned remote_lookup_per_mib; /* its size term; 0: KJ_REMOTE_LOOKUP_MS_PER_MIB */
	char *remote_secret_file;   /* --remote-secret FILE or $KJITD_REMOTE_SECRET_FILE; NULL: none */
	uint8_t *remote_secret;     /* its bytes, read and checked at start; wiped at exit */
	size_t remote_secret_len;
	uint64_t remote_ttl_ms;     /* --remote-ttl; 0: no expiry */
	uint64_t remote_max_object; /* --remote-max-object; 0: KJ_REMOTE_OBJECT_MAX */
	int no_compile;             /* --no-compile: serve hits, refuse misses */
	int shared_hit_table;       /* --shared-hit-table: the fast path under --system too */
	int no_hit_table;           /* --no-shared-hit-table: no fast path at all */
	/* Limits per peer uid and in total (quota.c, docs/reliability.md). */
	unsigned conn_max_per_uid;  /* --max-conns-per-uid; 0: no cap */
	unsigned resolve_max_per_uid; /* --max-resolves-per-uid (offhash.c); 0: the default, UINT_MAX: no cap */
	uint64_t conn_idle_ms;      /* --conn-idle-timeout: a connection silent this long is closed; 0: never */
	uint64_t buf_max_total;     /* --max-request-bytes */
	uint64_t buf_max_per_uid;   /* --max-request-bytes-per-uid */
	uint64_t idle_timeout_ms;   /* --idle-timeout: exit after this long without clients or work; 0: never */
	int idle_timeout_set;       /* given on the command line */
	/* The configuration file and where each setting came from (config.c, log.c). */
	int log_level;              /* --log-level: LOG_ERR (3) to LOG_DEBUG (7); 0: LOG_INFO */
	char *config_path;          /* --config / $KJITD_CONFIG / the default that was read; NULL: none */
	char *origin[KJ_OPT_ROWS_MAX]; /* per option row: "command line", "FILE:LINE"; NULL: default */
	char *given[KJ_OPT_ROWS_MAX];  /* ... and the value given there (a repeated one's joined by ",") */
};

/* Frames from a libuv stream (client connections, worker pipes): the one
 * reader of common/frames.h; this hands libuv its room (framer.c). */
void kj__framer_alloc(struct kj__frames *f, size_t suggested, uv_buf_t *buf);

/* A compile job as the pool sees it. */
struct kj__job {
	struct kj__job *next;
	uid_t uid;                  /* who asked: queues are fair between uids */
	struct kj__buf frame;       /* the JOB frame, ready to send */
	uint32_t id;
	uint64_t queued_us;
	void (*done)(struct kj__job *job, int code, const struct kj__msg *result, const char *error);
	void *data;
};

struct kj__pool;
/* Creates the pool of one compiler family ("hiprtc", ...); workers start on
 * the first job.  0 or KJIT_ENOMEM. */
int kj__pool_new(struct kj__daemon *d, const char *family, struct kj__pool **out);
/* Queues job.  job->done is called exactly once, on the loop. */
void kj__pool_submit(struct kj__pool *p, struct kj__job *job);
/* Calls fn once the pool knows its compiler's identity (at once if known);
 * code < 0 when the compiler failed to load (reason in error). */
void kj__pool_when_ready(struct kj__pool *p, void (*fn)(void *arg, int code, const char *error), void *arg);
const char *kj__pool_identity(const struct kj__pool *p);
const char *kj__pool_runtime_version(const struct kj__pool *p);
const char *kj__pool_family(const struct kj__pool *p);
/* What the pool's last worker said of its walls (HELLO's TEXT), or "". */
const char *kj__pool_walls(const struct kj__pool *p);
/* Kills every worker; queued jobs fail with KJIT_ESHUTDOWN. */
void kj__pool_shutdown(struct kj__pool *p);
void kj__pool_free(struct kj__pool *p);
/* For stats: workers alive, busy, started, crashed, timed out. */
struct kj__pool_stats {
	unsigned alive, busy;
	uint64_t started, crashed, timeouts, queued;
};
void kj__pool_stats(const struct kj__pool *p, struct kj__pool_stats *s);
/* (get.c) Starts the first worker (its compiler loaded, HELLO awaited)
 * of each family in d->cfg.prestart, else $KJITD_PRESTART ("nvrtc,hiprtc"),
 * in the pool a request of that family would use, so a first request finds
 * it ready; a family kjitd does not know is said in the log and skipped,
 * one that cannot load fails as on a first request. */
void kj__pool_prestart(struct kj__daemon *d);
/* (missroom.c) The miss room seen from the other rooms (issue 33).
 * init (main.c's rooms_new): allocates d->miss; 0 or KJIT_ENOMEM.
 * open (main.c, once the loop exists): makes the memo, the recent failures
 * and the table of open flights, and loads the bundled-kernel manifest;
 * 0, KJIT_ENOMEM, or KJIT_EINVAL with the manifest's bad line in err.
 * close (main.c, after the loop's last run, before uv_loop_close): frees
 * the open flights and every pool.  free (main.c, at exit; d->miss or
 * any of its parts may be missing): the rest, and d->miss.  stop
 * (server.c): shuts every pool down (kj__pool_shutdown), at the server's
 * stop.  busy: 1 while a miss is open or a worker compiles (not idle, for
 * --idle-timeout).
 * pool (admin.c): 0 to 3 the pool of that backend, 4 to 7 the other
 * family a request chose for backend i - 4 (--compiler); NULL if none or
 * out of range.  remote: the fleet tier, NULL without --remote.
 * manifest: the bundled kernels (empty before open). */
int kj__miss_init(struct kj__daemon *d);
int kj__miss_open(struct kj__daemon *d, char *err, size_t errlen);
void kj__miss_close(struct kj__daemon *d);
void kj__miss_free(struct kj__daemon *d);
void kj__miss_stop(struct kj__daemon *d);
int kj__miss_busy(const struct kj__daemon *d);
struct kj__pool *kj__miss_pool(const struct kj__daemon *d, int i);
struct kj__remote *kj__miss_remote(const struct kj__daemon *d);
const struct kj__manifest *kj__miss_manifest(const struct kj__daemon *d);
/* uidq.c: the jobs waiting for a pool's workers, a FIFO queue per uid in a
 * ring served round-robin.  push: appends job to its uid's queue; 0 or
 * KJIT_ENOMEM.  pop: the oldest job of the first uid in the ring that
 * prefer takes (prefer NULL or none taken: of the first uid), whose queue
 * then goes to the end of the ring; NULL when none waits.  any: 1 if prefer
 * takes a uid with jobs waiting. */
struct kj__uidq_node;
struct kj__uidq {
	struct kj__uidq_node *ring; /* served from the first; a served queue goes last */
	size_t n;                   /* jobs waiting */
};
int kj__uidq_push(struct kj__uidq *q, struct kj__job *job);
struct kj__job *kj__uidq_pop(struct kj__uidq *q, int (*prefer)(void *arg, uid_t uid), void *arg);
int kj__uidq_any(struct kj__uidq *q, int (*prefer)(void *arg, uid_t uid), void *arg);

/* workwatch.c: a worker seen from /proc, with its descendants.  rss: their
 * resident bytes; tree_cpu: their CPU clock ticks (their reaped children's
 * too).  0, or -1 when pid cannot be read (gone). */
int kj__proc_rss(pid_t pid, uint64_t *bytes);
int kj__proc_tree_cpu(pid_t pid, uint64_t *ticks);

/* Bundled kernels (kernels_src/MANIFEST). */
struct kj__kernel {
	char *name;
	int backend;
	char *file;                  /* relative to the kernels dir */
	char **entries;
	size_t n_entries;
	char **options;
	size_t n_options;
	/* its source as last read (request.c), reused while a stat proves the
	 * file unchanged (kj__file_unchanged_since); NULL: none kept */
	uint8_t *text;               /* text_len bytes and a NUL */
	size_t text_len;
	struct stat text_st;         /* the read's fstat, and the clock before it */
	struct timespec text_read_at;
};
struct kj__manifest {
	struct kj__kernel *k;
	size_t n;
	size_t text_bytes;           /* the kernels' kept texts, at most KJ_KERNEL_TEXT_TOTAL */
};
/* Parses <dir>/MANIFEST.  A missing manifest is an empty one.  0, or
 * KJIT_EINVAL with the bad line in err. */
int kj__manifest_load(const char *dir, struct kj__manifest *m, char *err, size_t errlen);
const struct kj__kernel *kj__manifest_find(const struct kj__manifest *m, const char *name, int backend);
void kj__manifest_free(struct kj__manifest *m);

/* memo.c: what a request's exact bytes resolved to (docs in memo.c). */
struct kj__memo;
struct kj__memo_hit {
	int backend;
	char key[65];
	char target[KJ_TARGET_MAX];
	char version[KJ_VERSION_STR_MAX];
};
struct stat;
int kj__memo_new(struct kj__memo **out, size_t max_bytes);
void kj__memo_free(struct kj__memo *m);
/* 1 with *out filled when body was resolved before and no file it depends
 * on has changed since; else 0. */
int kj__memo_find(struct kj__memo *m, const uint8_t *body, size_t len, struct kj__memo_hit *out);
/* Remembers body's resolution and the files (with their identity as of
 * stats) it depended on.  0, or KJIT_ENOMEM (nothing remembered). */
int kj__memo_put(struct kj__memo *m, const uint8_t *body, size_t len, const struct kj__memo_hit *hit,
		 const char *const *paths, const struct stat *stats, size_t n_paths);
/* What a resolution's key was computed from, beyond the request's bytes:
 * the files read (a bundled kernel, headers of the kernels directory) and
 * the directories watched for names found nowhere, with their identity. */
struct kj__memo_files {
	uint64_t h;                  /* the request bytes' memo hash */
	int ok;                      /* all gathered: the memo may keep it */
	char **paths;
	struct stat *st;
	size_t n, cap;
};
/* A header of <kernels>/include a resolve read from disk or took from the
 * kept texts (offhash.c, hdrkeep.c), with the proof of its bytes: the
 * read's fstat after it and clock before it (kj__read_file_st; read_at
 * zero: the read overlapped a change, nothing proven). */
struct kj__hdr_read {
	char *name;                  /* its tree path: the includes' name */
	char *real;                  /* its real path, hdrkeep.c's key */
	const uint8_t *data;         /* its bytes: the resolve's includes' own */
	size_t len;
	struct stat st;
	struct timespec read_at;
	int kept;                    /* taken from the kept texts, not read */
};
struct kj__hdr_reads {
	struct kj__hdr_read *v;
	size_t n, cap;
};
/* Gathers into f (overwritten) the files the request bytes raw (decoded
 * into q) resolved through: each is stat'ed, then read again and compared
 * with the bytes that were hashed, so a file that changed meanwhile means
 * nothing will be remembered (a bundled kernel's source whose stat equals
 * q->kernel_st and whose ctime is a second before q->kernel_read_at, and a
 * header whose read in reads (NULL: none) is proven so, are proven by the
 * stat alone, not read again); for an include name found nowhere, the
 * directory where it would appear (under incdir) is watched instead.
 * Touches only its arguments and the file system: safe on any thread.  0,
 * or -1 (f->ok 0: not to be remembered).  Free f with _files_free. */
struct kj__get_req;
int kj__memo_gather(const uint8_t *raw, size_t raw_len, const struct kj__get_req *q, const struct kj__includes *inc,
		    const char *incdir, const struct kj__hdr_reads *reads, struct kj__memo_files *f);
/* Remembers, on the loop, that raw resolved to key/target/version with
 * the files f gathered; nothing when f is not ok or raw is NULL. */
void kj__memo_enter(struct kj__memo *m, const uint8_t *raw, size_t raw_len, const struct kj__memo_files *f,
		    int backend, const char *key, const char *target, const char *version);
/* Frees what f holds (f zeroed); NULL-safe fields. */
void kj__memo_files_free(struct kj__memo_files *f);

/* hdrkeep.c: the texts of headers read from <kernels>/include (docs in
 * hdrkeep.c), for a resolve on the loop; all on the loop.  new: 0 or
 * KJIT_ENOMEM.  free: NULL-safe.  find: 1 with *data a malloc'd copy (a NUL
 * after *len bytes) of the text kept for the real path real, at most
 * max_len bytes, and *st, *read_at the proof of its read, when a stat
 * proves the file unchanged since that read (kj__file_unchanged_since; an
 * entry not proven is dropped); else 0.  put: keeps len bytes read from
 * real with their proof (kj__read_file_st), replacing real's entry unless
 * the file's stat is the kept one's; nothing kept past KJ_HEADER_TEXT_MAX,
 * for an unproven read (read_at zero) or without memory; the least
 * recently used dropped to stay within KJ_HEADER_TEXT_TOTAL.  bytes: what
 * the kept entries cost. */
struct kj__hdrkeep;
int kj__hdrkeep_new(struct kj__hdrkeep **out);
void kj__hdrkeep_free(struct kj__hdrkeep *k);
int kj__hdrkeep_find(struct kj__hdrkeep *k, const char *real, size_t max_len, uint8_t **data, size_t *len,
		     struct stat *st, struct timespec *read_at);
void kj__hdrkeep_put(struct kj__hdrkeep *k, const char *real, const uint8_t *data, size_t len, const struct stat *st,
		     const struct timespec *read_at);
size_t kj__hdrkeep_bytes(const struct kj__hdrkeep *k);

/* negcache.c: failed compiles remembered for ttl_ms (docs in negcache.c).
 * ttl_ms 0 remembers nothing.  _get returns 1 with the code, error line and
 * log (NULL if none; borrowed until the next _put) of key's recent failure,
 * else 0. */
struct kj__negcache;
int kj__negcache_new(struct kj__negcache **out, unsigned ttl_ms);
void kj__negcache_free(struct kj__negcache *n);
void kj__negcache_put(struct kj__negcache *n, const char *key, int code, const char *line, const char *log);
int kj__negcache_get(struct kj__negcache *n, const char *key, int *code, const char **line, const char **log);

/* Counters since start; added to the persistent ones on flush. */
enum kj__stat {
	KJ_STAT_REQUESTS, KJ_STAT_HITS, KJ_STAT_MISSES, KJ_STAT_COMPILES, KJ_STAT_JOINED,
	KJ_STAT_ERR_COMPILE, KJ_STAT_ERR_TARGET, KJ_STAT_ERR_WORKER, KJ_STAT_ERR_TIMEOUT,
	KJ_STAT_ERR_INPUT, KJ_STAT_ERR_OTHER, KJ_STAT_BYTES_SERVED, KJ_STAT_COMPILE_MS,
	KJ_STAT_SAVED_MS, KJ_STAT_PUBLISH_ERRORS, KJ_STAT_CONNECTIONS, KJ_STAT_FAST_HITS,
	KJ_STAT_REMOTE_HITS,         /* requests answered from the fleet tier */
	KJ_STAT_REFUSED,             /* misses refused: --no-compile, or a fetch-only request */
	KJ_STAT_RESOLVED_INLINE,     /* memo misses resolved on the loop (small: offhash.c) */
	KJ_STAT_RESOLVED_POOL,       /* ... and on a pool thread */
	KJ_STAT_LEGACY_KEYS,         /* resolves that also computed a legacy key (an index with pre-schema-5 rows) */
	KJ_STAT_COUNT
};
extern const char *const kj__stat_names[KJ_STAT_COUNT];

#define KJ_LAT_BUCKETS 16 /* hit latency histogram: < 2^i microseconds */

struct kj__daemon {
	struct kj__config cfg;
	uv_loop_t *loop;
	struct kj__toproom *top;     /* daemon/daemon-int.h: main.c, log.c, config.c, detect-run.c's part */
	struct kj__netroom *net;     /* daemon/net/net-int.h: the net room's part */
	struct kj__cache *cache;
	struct kj__missroom *miss;   /* daemon/miss/missroom-int.h: the miss room's part */
	int stopping;
	int64_t started;
	uint64_t stats[KJ_STAT_COUNT];
	uint64_t lat_hist[KJ_LAT_BUCKETS];
	uint64_t last_active_us;     /* last accept, request or close: for --idle-timeout */
	/* offwork.c: the queues of work on libuv's thread pool (KJ_OFFQ_*:
	 * resolves, publishes, admin tasks, the index's checkpoint). */
	struct kj__offwork_set *work;
	struct kj__adminroom *admin;  /* daemon/admin/admin-int.h: the admin room's part */
};

/* quota.c: connections and request bytes per peer uid (docs in quota.c).
 * init: computes the connection cap from the descriptor limit (raising the
 * soft limit to the hard one) and sets malloc to return large blocks.
 * conn_add / charge: 0, or KJIT_EBUSY (KJIT_ENOMEM) with a one-line reason
 * for the client in err, nothing counted.  tick: on the flush timer; gives
 * the heap's freed pages back once a load has left them resident. */
void kj__quota_init(struct kj__daemon *d);
int kj__quota_privileged(const struct kj__daemon *d, uid_t uid);
int kj__quota_conn_add(struct kj__daemon *d, uid_t uid, char *err, size_t errlen);
void kj__quota_conn_del(struct kj__daemon *d, uid_t uid);
int kj__quota_charge(struct kj__daemon *d, uid_t uid, uint64_t n, char *err, size_t errlen);
void kj__quota_release(struct kj__daemon *d, uid_t uid, uint64_t n);
/* Would a charge of n to uid pass?  0, or KJIT_EBUSY / KJIT_ENOMEM with
 * the reason in err; nothing stays charged either way. */
int kj__quota_room(struct kj__daemon *d, uid_t uid, uint64_t n, char *err, size_t errlen);
/* Charges n to uid even past its budget (bytes already committed: the rest
 * of a reply frame partly written, a short "busy" reply); release as usual. */
void kj__quota_charge_over(struct kj__daemon *d, uid_t uid, uint64_t n);
/* Bytes uid holds now (requests and unread replies); 0 if none. */
uint64_t kj__quota_bytes(const struct kj__daemon *d, uid_t uid);
void kj__quota_tick(struct kj__daemon *d);

/* replybuf.c: one object's bytes shared by every queued reply of it (docs
 * in replybuf.c).  get: the live buffer of tag (a cache key) and len with
 * one more reference, else a new one holding a copy of data (tag NULL: a
 * private one); NULL when out of memory.  unref: drops a reference (NULL:
 * nothing); the last frees it.  charge: counts one more reply of uid
 * queued on b, charging uid for b's bytes on its first (force: even past
 * its budget); 0, or KJIT_EBUSY / KJIT_ENOMEM with the reason in err and
 * nothing counted.  discharge: one reply of uid less; its last releases
 * the charge. */
struct kj__replybuf;
struct kj__replybuf *kj__replybuf_get(struct kj__daemon *d, const char *tag, const uint8_t *data, size_t len);
void kj__replybuf_unref(struct kj__replybuf *b);
const uint8_t *kj__replybuf_data(const struct kj__replybuf *b);
size_t kj__replybuf_len(const struct kj__replybuf *b);
int kj__replybuf_charge(struct kj__replybuf *b, uid_t uid, int force, char *err, size_t errlen);
void kj__replybuf_discharge(struct kj__replybuf *b, uid_t uid);

/* log.c: kjitd's log (kjitd(8), LOG).  kj__log logs one
 * line, its control bytes escaped, at the priority of a leading SD_* marker
 * ("<4>", sd-daemon.h) or else one guessed from its first words (warning
 * for "cannot ...", "failed ...", else info), if --log-level lets it: to
 * the --log file or stderr with a timestamp, or to the journal (sd-journal,
 * or "<N>" lines on a stderr that is a journal stream) without one.
 * log_open: at start, creates --log 0600 (0640, group kjit, with --system)
 * whatever the umask; 0 or an exit status (said on stderr).  log_detached:
 * once a detached kjitd serves, moves its log and stderr off the terminal it
 * left (to the journal when there is one, else <socket folder>/kjitd.log).
 * log_reopen: SIGHUP's, opens --log's path anew (logrotate moved it);
 * 0 or a negative errno, logged. */
void kj__log(struct kj__daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kj__log_open(struct kj__daemon *d);
void kj__log_detached(struct kj__daemon *d);
int kj__log_reopen(struct kj__daemon *d);
/* The log's descriptor, inherited by the workers as their stderr (2 when
 * kjitd logs to its stderr or the journal). */
int kj__log_fd(const struct kj__daemon *d);

/* conn.c: client connections (docs in conn.c).  A connection stays
 * allocated while anyone holds a reference; once closed, sends to it are
 * dropped quietly. */
/* Called once per whole request frame read from c; body holds h->len
 * bytes, valid through the call.  The callee answers (now or later) with
 * exactly one reply, or closes c. */
typedef void kj__conn_dispatch_fn(struct kj__daemon *d, struct kj__conn *c, const struct kj__frame_hdr *h,
				  const uint8_t *body);
/* Accepts a client from server and reads its credentials; *out holds the
 * socket's reference, reading not yet started.  0, or a negative code (the
 * connection already closed, *out NULL). */
int kj__conn_accept(struct kj__daemon *d, uv_stream_t *server, kj__conn_dispatch_fn *dispatch,
		    struct kj__conn **out);
/* Counts c against its uid's and the total connection caps (quota.c): 0,
 * or KJIT_EBUSY with the reason for the client in err (not counted). */
int kj__conn_count(struct kj__conn *c, char *err, size_t errlen);
/* Is gid the peer's primary group or one of its supplementary groups
 * (SO_PEERGROUPS, as of connect)? */
int kj__conn_in_group(const struct kj__conn *c, gid_t gid);
/* Starts reading requests from an accepted connection. */
void kj__conn_start(struct kj__conn *c);
/* Closes c's socket (once; later calls do nothing) and drops the socket's
 * reference; requests in flight keep c allocated until they let go. */
void kj__conn_close(struct kj__conn *c);
/* Closes every client connection (shutdown). */
void kj__conn_close_all(struct kj__daemon *d);
/* Sends a finished reply frame to conn (consumes b). */
void kj__conn_send(struct kj__conn *c, struct kj__buf *b);
/* Sends a finished frame b (its length counting ext_len more bytes) followed
 * by the ext_len bytes at ext, without copying them unless the socket cannot
 * take them at once; then the rest is queued in a kj__replybuf shared by
 * every queued reply of the same tag (the cache key; NULL: not shared)
 * and charged to c's uid.  A reply the uid's budget cannot hold becomes a
 * "busy, retry" error (or, when part of it was written, c is closed).
 * Consumes b; ext need only live through the call. */
void kj__conn_send_ext(struct kj__conn *c, struct kj__buf *b, const uint8_t *ext, size_t ext_len, const char *tag);
/* Builds and sends an error reply: CODE, ERROR (one line). */
void kj__conn_error(struct kj__conn *c, uint32_t id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Sends a reply holding only CODE. */
void kj__conn_reply_code(struct kj__conn *c, uint32_t id, int code);
/* Sends a finished reply frame b with fds[0..n) attached by SCM_RIGHTS
 * (consumes b; the caller keeps and closes the fds).  Only when nothing
 * else is queued to c: 0, or a negative code (nothing sent; KJIT_EIO closes
 * c when the stream may be out of step). */
int kj__conn_send_fds(struct kj__conn *c, struct kj__buf *b, const int *fds, int n);
/* Gives c the hit counters it attached (harvested and freed at close). */
struct kj__hitctr;
void kj__conn_set_hitctr(struct kj__conn *c, struct kj__hitctr *ctr);
struct kj__hitctr *kj__conn_hitctr(const struct kj__conn *c);
/* Harvests the hit counters of every connection (the flush timer). */
void kj__conn_harvest_all(struct kj__daemon *d);
/* Is the connection still open (its peer may go away mid-compile)? */
int kj__conn_alive(const struct kj__conn *c);
void kj__conn_ref(struct kj__conn *c);
void kj__conn_unref(struct kj__conn *c);
/* A connection without a socket whose replies (frame bodies) go to sink;
 * the caller holds one reference and drops it with kj__conn_unref. */
struct kj__conn *kj__conn_internal(struct kj__daemon *d, void (*sink)(void *arg, const uint8_t *body, size_t len),
				   void *arg);
/* The peer's credentials (SO_PEERCRED at accept; ours for an internal one).
 * uid: the uid it is charged as and whose entries it sees, the owner of
 * its user namespace for a peer in a child one (access.c); peer_uid:
 * SO_PEERCRED's own, *nested (may be NULL) 1 for a peer in a child user
 * namespace. */
uid_t kj__conn_uid(const struct kj__conn *c);
uid_t kj__conn_peer_uid(const struct kj__conn *c, int *nested);
gid_t kj__conn_gid(const struct kj__conn *c);
pid_t kj__conn_pid(const struct kj__conn *c);

/* server.c: listens on the socket (or systemd's) and dispatches requests
 * to get.c and admin.c.  start: 0 or a negative code, logged.  stop:
 * closes the listener, the pools and every connection (idempotent). */
int kj__server_start(struct kj__daemon *d);
void kj__server_stop(struct kj__daemon *d);
/* The net room's part of d (d->net, daemon/net/net-int.h).  init:
 * allocates it, empty; 0 or KJIT_ENOMEM.  free: after the loop has
 * closed, with the uploads and hit tables it still holds (NULL: nothing). */
struct kj__netroom;
int kj__net_init(struct kj__daemon *d);
void kj__net_free(struct kj__daemon *d);
/* Does another kjitd answer on cfg.socket_path?  0 if not; KJIT_EBUSY with
 * one line in why naming it (pid, and its cache directory when /proc shows
 * it); KJIT_EINVAL for a path too long. */
int kj__server_probe(struct kj__daemon *d, char *why, size_t whylen);
/* The cache folder's socket record (KJ_SOCKET_RECORD, written once
 * kjitd serves, removed when it stops): KJIT_EBUSY with one line in why
 * when it names another socket on which a daemon answers (the cache's
 * holder, alive: no use waiting for its lock), else 0. */
int kj__server_recorded(struct kj__daemon *d, char *why, size_t whylen);
/* Once a second (the flush timer): returns memory after a load (quota.c),
 * stops the daemon when its socket file was removed or replaced, or when
 * --idle-timeout passed without a client or work. */
void kj__server_tick(struct kj__daemon *d);
/* kjitd is the subreaper of what its children start (a compiler's own
 * children, detection's helpers): reaps those that exited, never a worker
 * (a process handle of the loop: libuv reaps those).  With wait_ms > 0 (at
 * exit, once the loop is closed), reaps everything, waiting that long for
 * the last ones to exit. */
void kj__reap_orphans(struct kj__daemon *d, int wait_ms);

/* request.c: a GET request's fields, copied out of the frame and checked. */
struct kj__get_req {
	int backend;
	char *target, *version;      /* NULL: not in the request */
	char *target_from;           /* where the client's target came from; NULL: named explicitly */
	int no_compile;              /* KJ_F_NO_COMPILE: fetch only (`kjit warm --remote-only`) */
	int explain;                 /* KJ_F_EXPLAIN: say why a miss was not a hit (explain.c) */
	int want_log;                /* KJ_F_WANT_LOG: a hit carries the compile's log (dropin/) */
	char *kernel;                /* a bundled kernel's name, or NULL */
	char *family;                /* the compiler the request chose (COMPILER), or NULL */
	char *source_name;
	char *kernel_path;           /* the bundled kernel's source file (load_kernel) */
	struct stat kernel_st;       /* its fstat after the read, and the clock before it: */
	struct timespec kernel_read_at; /* kj__memo_gather's proof that it is unchanged since */
	char *module_entries;        /* a bundled kernel of hip or cuda: every entry its module's manifest
				      * lines name, "NAME\n" each (the fleet value lists them), or NULL */
	uint8_t *source;             /* NUL-terminated after source_len bytes */
	size_t source_len;
	char **entries;
	size_t n_entries;
	char **options;
	size_t n_options;
	char **hnames;               /* headers sent with the request */
	uint8_t **hdata;
	size_t *hlen;
	size_t n_headers;
};
/* Fills g (zeroed by the caller) from m.  0, or the code the client gets
 * with a one-line reason in err; g may be partly filled either way and is
 * released with kj__get_req_clear. */
int kj__get_req_parse(struct kj__get_req *g, const struct kj__msg *m, char *err, size_t errlen);
/* For a request naming a bundled kernel: reads its source from kernels_dir
 * and puts the manifest's entries (unless the request has some) and
 * options (before the request's) in.  The source is a copy of the text m
 * kept from an earlier read when a stat proves the file unchanged since
 * (the proof the memo takes for a key: kj__file_unchanged_since), else
 * read, and kept in m when small (KJ_KERNEL_TEXT_MAX, KJ_KERNEL_TEXT_TOTAL
 * in all) and its read proven whole.  0, KJIT_ENOKERNEL, KJIT_EIO or
 * KJIT_ENOMEM, reason in err. */
int kj__get_req_load_kernel(struct kj__get_req *g, struct kj__manifest *m, const char *kernels_dir, char *err,
			    size_t errlen);
/* Frees what g holds and zeroes it (NULL: nothing). */
void kj__get_req_clear(struct kj__get_req *g);
/* 1 if g names C++ expressions (--name-expression=) or asks for the log
 * with a hit (KJ_F_WANT_LOG): their lowered names and the log go with
 * every answer, so g is kept out of the memo and the hit table, which hold
 * neither. */
int kj__get_req_wants_lowered(const struct kj__get_req *g);
/* 1 if name is an absolute path into /proc or /dev (after repeated
 * slashes and "." components): refused as an include or a header name
 * (request.c, offhash.c), so a compiler never blocks reading one. */
int kj__proc_dev_path(const char *name);

/* Decodes and checks a GET body as kj__handle_get does, without serving it
 * (for fuzzing).  0 or the code the client would get, reason in err. */
int kj__get_check(const struct kj__msg *m, char *err, size_t errlen);

/* explain.c: `kjit get --explain`.  What differs between a request and
 * the nearest earlier entry of its source name that the caller may see.
 * begin (the loop): copies the candidates, the entries of source_name and
 * backend that uid requested (all: every entry; an administrator); NULL
 * without memory.  run (any one thread, while the loop goes on): the text
 * (malloc'd; sent with the object) for the request resolved to key (ki, its
 * key's components); linear in their sizes, bounded.  Never fails the
 * request: without memory (or x NULL), a text saying so (NULL only if even
 * that cannot be had).  free: x and what it holds (NULL: nothing). */
struct kj__explain;
struct kj__explain *kj__explain_begin(struct kj__daemon *d, int backend, const char *source_name, uid_t uid, int all);
char *kj__explain_run(struct kj__explain *x, const char *key, const struct kj__key_input *ki);
void kj__explain_free(struct kj__explain *x);

/* miss.c: the miss, one flight per key, as one state machine (docs in
 * miss.c; its helpers in miss-help.c).  A flight is opaque outside these
 * files (its struct is in their private miss-int.h).  The table of open
 * flights (miss-help.c): new: 0 or KJIT_ENOMEM; free: frees it and every
 * flight still in it (NULL: nothing); count: how many are open. */
struct kj__flight;
struct kj__flights;
int kj__flights_new(struct kj__flights **out);
void kj__flights_free(struct kj__flights *t);
size_t kj__flights_count(const struct kj__flights *t);

/* A miss as get.c resolved it, for kj__miss_open_or_join.  Pointers are
 * borrowed for the call, except want, which the flight takes. */
struct kj__miss {
	struct kj__conn *c;          /* the client, and its request id */
	uint32_t id;
	uint64_t t0;                 /* when the request came */
	struct kj__get_req *q;       /* the parsed request; a flight that opens takes it (zeroed here) */
	struct kj__pool *pool;       /* its compiler family's pool */
	const char *key, *target, *version; /* what it resolved to */
	struct kj__includes *inc;    /* its includes, resolved; taken (zeroed) with q */
	char *explain;               /* --explain's text (explain.c), or NULL; set NULL once the flight took it */
	const uint8_t *fp;           /* the GET body's fingerprint for the hit table; NULL: kept out of it */
	uint64_t hits_gen;           /* the hit table's generation when its resolve began (offhash.c) */
	char *want;                  /* entries to check (hip, cuda), "NAME\n" each, or NULL; set NULL once taken */
};
/* Joins the open flight for m->key, or opens one (its index entry and
 * replay recipe, the request and includes moved in, then the machine
 * started: the fleet tier when --remote, the compile or a refusal; it may
 * end before this returns), the waiter taking m's --explain text and
 * entries.  0 (the client will be answered) or a code with the reason in
 * err (nothing sent). */
int kj__miss_open_or_join(struct kj__daemon *d, struct kj__miss *m, char *err, size_t errlen);

/* reply.c: the replies to GET (get.c, miss.c).  What an object reply
 * says besides the object's bytes. */
struct kj__obj_reply {
	const char *key, *target, *version;
	const char *log;             /* the compile log; may be NULL */
	const char *lowered;         /* lowered names, "EXPR\tLOWERED\n" each
				      * (common/lowered.h); may be NULL */
	const char *explain;         /* --explain's text (explain.c); may be NULL */
};
/* Sends an object (hit, compiled, joined, remote hit): o's fields, then the
 * bytes, which go out without a copy when the socket takes them at once;
 * counts them served.  The one place an object reply is written; nothing
 * when c is gone. */
void kj__send_object(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int status,
		     const struct kj__obj_reply *o, const uint8_t *data, size_t len);
/* A failure: its code, one line, and the compiler's log (may be NULL). */
void kj__send_failure(struct kj__conn *c, uint32_t id, int code, const char *error, const char *log);
/* Counts a failed or refused GET under its code's counter. */
void kj__count_error(struct kj__daemon *d, int code);
/* Adds the time since t0 (a hit's) to the latency histogram. */
void kj__record_latency(struct kj__daemon *d, uint64_t t0);
/* The lowered names and the compile log the index keeps for key into *out
 * and *log (each malloc'd; NULL: the entry has none).  0, or a negative
 * code (no entry, the index unreadable, no memory): then a hit cannot carry
 * them. */
int kj__lowered_of(struct kj__daemon *d, const char *key, char **out, char **log);
/* Entry points (hip and cuda: not in the key; lists are common/entrylist.h's,
 * whose join and missing the daemon uses).  object_entries (reply.c):
 * key's list from the index into *list (malloc'd; NULL: not known), and
 * for a row that has none yet, from data's symbols, recorded in the index;
 * 0 or a negative code. */
int kj__object_entries(struct kj__daemon *d, const char *key, const uint8_t *data, size_t len, char **list);

/* miss.c: the fleet tier's handle (docs/remote.md).  start: creates
 * the miss room's remote when --remote is set (nothing otherwise): 0 or a code with the
 * reason in err.  stop: releases the leases of open flights and closes the
 * remote (idempotent). */
int kj__fleet_start(struct kj__daemon *d, char *err, size_t errlen);
void kj__fleet_stop(struct kj__daemon *d);

/* get.c: answers GET.  body/len are the raw request (valid through the
 * call): the memo is checked with them before anything is decoded; a body
 * that does not decode gets KJIT_EPROTO-style codes back (the caller
 * answers and closes the connection), nothing sent. */
int kj__handle_get(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const uint8_t *body, size_t len);

/* hits.c: the shared read-only hit table (docs/hitpath.md): created at
 * start unless off (--system without --shared-hit-table, or a kernel
 * without memfd seals: logged, no fast path), with inotify watches on the
 * kernels directory that invalidate it.  Every function accepts a daemon
 * without a table and then does nothing. */
struct kj__hits;
void kj__hits_start(struct kj__daemon *d);
/* Closes the watch handle (server stop); kj__hits_free after the loop. */
void kj__hits_stop(struct kj__daemon *d);
void kj__hits_free(struct kj__hits *h);
/* Publishes verified bytes for the GET body body/len (NULL: nothing), in
 * the table of uid, the peer they were just sent to (a daemon admitting
 * other uids keeps one table per uid; nothing if uid has none). */
void kj__hits_put(struct kj__daemon *d, uid_t uid, const uint8_t *body, size_t len, const char *key,
		  const char *target, const char *version, const uint8_t *data, size_t size);
/* The same by fingerprint, only while the generation is still gen. */
void kj__hits_put_fp(struct kj__daemon *d, uid_t uid, const uint8_t fp[32], uint64_t gen, const char *key,
		     const char *target, const char *version, const uint8_t *data, size_t size);
/* The generation every table is in: bumped by each invalidation (0: no
 * tables). */
uint64_t kj__hits_gen(const struct kj__daemon *d);
/* 1 if the daemon keeps shared hit tables at all (none with
 * --no-shared-hit-table, or before the server made them). */
int kj__hits_on(const struct kj__daemon *d);
/* Drops every entry of the object key (hex), in every table. */
void kj__hits_remove_key(struct kj__daemon *d, const char *key);
/* Invalidates every entry of every table (why is logged). */
void kj__hits_invalidate(struct kj__daemon *d, const char *why);
/* Answers ATTACH: the reader fd of the table of c's uid (made on its first
 * ATTACH, KJ_HITTAB_UIDS_MAX at most) and a new counters fd. */
void kj__hits_attach(struct kj__daemon *d, struct kj__conn *c, uint32_t id);
/* Adds what ctr (a connection of uid) counted since the last harvest to
 * the stats. */
void kj__hits_harvest(struct kj__daemon *d, uid_t uid, struct kj__hitctr *ctr);

/* access.c: the uid a peer is charged as (issue 29).  For the peer
 * process pid (SO_PEERCRED; sock its socket, for SO_PEERPIDFD) running as
 * uid: *owner = uid and *nested = 0 when it runs in kjitd's user namespace;
 * else the owner of the user namespace just below kjitd's that holds it,
 * *nested = 1.  0, or -1 with the reason in err: the namespace cannot be
 * told (the process is gone, its pid may be another's, or it is not below
 * kjitd's): such a peer is refused. */
int kj__userns_owner(int sock, pid_t pid, uid_t uid, uid_t *owner, int *nested, char *err, size_t errlen);
/* Would uid be in gid through its account's groups (getgrouplist)? */
int kj__uid_in_group(uid_t uid, gid_t gid);

/* access.c: roles (docs/protocol.md).  --admin-gid's value into cfg: 0,
 * or -1 when it is not a gid or there are 16 already. */
int kj__admin_gid_opt(struct kj__config *cfg, const char *arg);
/* 1 if c's peer is kjitd's owner, root, or in an --admin-gid group. */
int kj__peer_is_admin(const struct kj__daemon *d, const struct kj__conn *c);
/* For an administrative request what: 0 if c's peer may make it; else
 * answers request id with KJIT_EDENIED and a one-line reason, logs, and
 * returns 1. */
int kj__admin_refused(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *what);

/* admin.c */
void kj__handle_admin(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const struct kj__msg *m);
/* Adds counters not yet persisted to the cache's counters. */
void kj__stats_flush(struct kj__daemon *d);
/* (offloop.c) The admin room's part of d (d->admin, admin-int.h): init
 * allocates it, 0 or KJIT_ENOMEM; free, after the loop has closed. */
struct kj__adminroom;
int kj__admin_init(struct kj__daemon *d);
void kj__admin_free(struct kj__daemon *d);
/* The reply to admin request id: code r, its text and JSON (may be empty),
 * and err when r < 0.  An encoding failure answers KJIT_ENOMEM instead. */
void kj__admin_answer(struct kj__conn *c, uint32_t id, int r, struct kj__buf *text, struct kj__buf *json,
		      const char *err);

/* publish.c: the cache's part of a flight's publish (miss.c), its disk
 * work and digest on libuv's thread pool: e's object (data, len bytes: the
 * reply buffer of e->key holding them is shared, else one is made; the
 * hot set's copy is made on the thread), its recipe (a GET frame, or
 * NULL; taken: *recipe emptied, when the cache can) and its requesters
 * (uids) enter the cache; meanwhile the object is served from memory.
 * digest (NULL: none): the object's SHA-256 when a fleet value's check
 * vouches for it, spared from the thread's hash (kj__cache_pub_begin_lent).
 * 0, or a negative code (logged and counted as a publish error: not
 * cached). */
int kj__publish_start(struct kj__daemon *d, const struct kj__cache_entry *e, const uint8_t *data, size_t len,
		      struct kj__buf *recipe, const uint8_t *digest, const uid_t *uids, size_t n_uids);
/* Calls fn(arg) on the loop once the publishes in flight now have
 * finished (later ones are not waited for): at once if none is (or when
 * out of memory).  What was answered before an admin command is in the
 * index when it runs (replay's recipes, export's rows). */
void kj__publish_when_idle(struct kj__daemon *d, void (*fn)(void *arg), void *arg);
/* 1 while a publish is in flight. */
int kj__publish_pending(const struct kj__daemon *d);

/* offloop.c: admin tasks with their slow part on libuv's thread pool, one
 * at a time in arrival order.  A task's steps: begin on the loop (0, or an
 * error answered at once with err), run on a thread (touching only what
 * its task owns, and what its own contract allows), finish on the loop
 * (1: run again; 0 done with text and json filled; or an error with err).
 * free (may be NULL) releases arg, whatever happened.  task: queues one
 * and answers request id on c when it has finished (c NULL: no answer;
 * an error is logged).  0 or KJIT_ENOMEM (arg freed).  start: queues kind
 * (KJ_CACHE_JOB_*; cap for gc, 0 the configured one; target for clear,
 * NULL all) and answers request id on c when it has finished (c NULL: the
 * size cap's own gc, logged).  0 or KJIT_ENOMEM (nothing queued).  busy:
 * 1 while a job runs or waits. */
struct kj__offloop;
struct kj__offloop_ops {
	const char *name;
	int (*begin)(struct kj__daemon *d, void *arg, char *err, size_t errlen);
	void (*run)(void *arg);
	int (*finish)(struct kj__daemon *d, void *arg, struct kj__buf *text, struct kj__buf *json, char *err,
		      size_t errlen);
	void (*free)(void *arg);
};
int kj__offloop_task(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const struct kj__offloop_ops *ops,
		     void *arg);
int kj__offloop_start(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int kind, uint64_t cap,
		      const char *target);
int kj__offloop_busy(const struct kj__daemon *d);
/* Checkpoints the index's WAL on a thread when it has grown past
 * KJ_WAL_CHECKPOINT_PAGES and no checkpoint runs (the flush timer). */
void kj__offloop_checkpoint(struct kj__daemon *d);

/* entries.c: `ls [TARGET]` and `show KEY` for c's peer (every entry for an
 * administrator, else those it requested), into text and json.  0 or a
 * negative code (show: with the reason in err). */
int kj__admin_ls(struct kj__daemon *d, struct kj__conn *c, const char *arg, struct kj__buf *text,
		 struct kj__buf *json);
int kj__admin_show(struct kj__daemon *d, struct kj__conn *c, const char *arg, struct kj__buf *text,
		   struct kj__buf *json, char *err, size_t errlen);

/* bundle.c: export (entries of the given targets, or all) to path, and
 * import from path.  Import checks everything before it publishes
 * anything.  Export is an offloop.c task that answers request id on c
 * when done: 0 queued, or KJIT_ENOMEM.  Import: 0 or a negative code with
 * a one-line reason in err. */
int kj__bundle_export(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *path,
		      const char *const *targets, size_t n_targets);
int kj__bundle_import(struct kj__daemon *d, const char *path, uint64_t *imported, uint64_t *present, char *err,
		      size_t errlen);
/* The same as an offloop.c task answering request id on c when done: 0
 * queued, or KJIT_ENOMEM. */
int kj__bundle_import_task(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *path);
/* The same for a bundle the client streamed: fd (owned from here on,
 * closed when done), label for the log. */
int kj__bundle_import_fd_task(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int fd, const char *label);

/* upload.c: a bundle streamed by `kjit import` (docs/bundle.md, "Access"),
 * so kjitd never opens a user's path: ADMIN import-data OFFSET with the
 * bytes in KJ_F_DATA appends to the uid's one upload (offset 0 starts a new
 * one, an unnamed file in <cache>/tmp; any other offset must be its size
 * so far), at most --max-size in all; `ADMIN import -` then imports it.
 * chunk answers request id itself.  import: queues the import task of the
 * caller's upload (0, answered when done), or a negative code with err
 * set.  free: every upload at exit. */
void kj__upload_chunk(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *arg,
		      const struct kj__field *data);
int kj__upload_import(struct kj__daemon *d, struct kj__conn *c, uint32_t id, char *err, size_t errlen);
void kj__uploads_free(struct kj__daemon *d);

/* replay.c: records the recipe of a compiled request (called on publish)
 * and answers ADMIN replay [DAYS]. */
int kj__replay_days_parse(const char *arg, unsigned *days);
void kj__handle_replay(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *arg);

/* detect run in a child: `kjitd --detect` prints lines the daemon parses. */
int kj__detect_main(const char *sysfs_root);
int kj__detect_run(struct kj__daemon *d);
/* What detection found at start, for the other rooms (issue 33): the
 * number of GPUs, the i-th (i < n), and why a backend has none (its note,
 * else dflt when there is none). */
size_t kj__daemon_n_gpus(const struct kj__daemon *d);
const struct kj__gpu *kj__daemon_gpu(const struct kj__daemon *d, size_t i);
const char *kj__daemon_detect_note(const struct kj__daemon *d, int backend, const char *dflt);
/* (config.c) The server stops: closes main.c's loop handles (the flush timer,
 * SIGTERM's and SIGINT's; SIGHUP's closes with the loop).  Once. */
void kj__top_stop(struct kj__daemon *d);

/* options.c: the daemon's command line.  kj__options_parse fills cfg from
 * argv: -1 to go on, else an exit status (0 after --help, 2 after a usage
 * error, printed).  kj__options_defaults fills what was not given and reads
 * KJITD_REMOTE: 0, or KJIT_EINVAL (said on stderr) / KJIT_ENOMEM.
 * kj__options_free frees what both allocated.  kj__option_takes_value says
 * whether the option a takes the next argument as its value (role
 * selection skips values); kj__usage_error prints "kjitd: " fmt (with arg)
 * and the usage, and returns 2. */
int kj__options_parse(int argc, char **argv, struct kj__config *cfg);
int kj__options_defaults(struct kj__config *cfg);
void kj__options_free(struct kj__config *cfg);
int kj__option_takes_value(const char *a);
int kj__usage_error(const char *fmt, const char *arg);
/* The usage text (what --help prints) onto f; and the i-th option's long
 * name, with *shown 1 if the usage names it, or NULL past the last: for
 * tests/test-lists.c, which checks man/kjitd.8 against them. */
void kj__options_usage(FILE *f);
const char *kj__option_at(size_t i, int *shown);
/* 1 if the i-th option row takes a value.  kj__options_apply: one pass
 * of getopt over argv into cfg, noting each option's origin (NULL: none),
 * ignoring the rows skip[] marks, marking in seen[] the rows given; -1 to
 * go on, else an exit status (said on stderr). */
int kj__option_has_arg(size_t i);
int kj__options_apply(int argc, char **argv, struct kj__config *cfg, const char *origin, const unsigned char *skip,
		      unsigned char *seen);

/* config.c: the configuration file (kjitd(8), CONFIGURATION; docs/cli.md,
 * `kjit config`).  file_read: path (--config), else $KJITD_CONFIG, else
 * SYSCONFDIR/kjit/kjitd.conf with --system, $XDG_CONFIG_HOME/kjit/kjitd.conf
 * without (a default that does not exist is no error); each `name = value`
 * line applied as --name=value with origin "FILE:LINE", the rows in skip[]
 * (the command line's) ignored; -1 to go on, else an exit status (said on
 * stderr).  reload: SIGHUP's, reopens the log and rereads the file:
 * --log-level takes effect, any other change is logged as needing a
 * restart.  admin_config: ADMIN config's answer, every setting with its
 * value and origin. */
int kj__config_file_read(struct kj__config *cfg, const char *path, int system_mode, const unsigned char *skip);
void kj__config_reload(struct kj__daemon *d);
int kj__admin_config(struct kj__daemon *d, struct kj__buf *text, struct kj__buf *json);

#endif /* KJ_DAEMON_H */
