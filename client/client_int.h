/* client_int.h: what the files of libkjit share and nothing else links to:
 * the client handle, the one request/reply exchange every call goes
 * through, and the connect-or-start logic of connect.c.
 *
 * Invariants of a kjit_client: fd is a connected stream socket or -1 (after
 * a transport failure, which leaves the stream out of step: the next call
 * connects again); next_id only grows; err always holds a NUL-terminated
 * line (possibly empty).  Nothing here is global: two clients in one
 * process share no state, and one client is used by one thread at a time.
 */
#ifndef KJ_CLIENT_INT_H
#define KJ_CLIENT_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "kjit.h"
#include "kj_limits.h"
#include "frames.h"
#include "proto.h"

/* The system-mode socket of the design (systemd's kjitd.socket), unless
 * $KJIT_SYSTEM_SOCKET names another (tests, other layouts).  A client never
 * starts a daemon for it: it says that the service is down. */
#define KJ_SYSTEM_SOCKET "/run/kjit/kjitd.sock"
/* Names, inside the socket's directory, of the lock that serialises racing
 * autostarts and of the log that the started daemon's stderr goes to. */
#define KJ_AUTOSTART_LOCK "autostart.lock"
#define KJ_AUTOSTART_LOG "kjitd.log"
/* Longest one-line message kept on a client (kjit_last_error). */
#define KJ_CLIENT_ERR_MAX 1024
/* A compiler log on the wire: the daemon cuts logs at KJ_LOG_MAX and adds a
 * short marker, so allow that much beyond. */
#define KJ_LOG_WIRE_MAX (KJ_LOG_MAX + 1024)
/* An ERROR field: one line; longer is a daemon bug but is not worth
 * failing the request over, so anything up to a log's size is accepted. */
#define KJ_ERROR_WIRE_MAX KJ_LOG_WIRE_MAX

struct kjit_client {
	int fd;                      /* connected socket, or -1 */
	uint32_t next_id;            /* id of the next request */
	unsigned used;               /* requests answered on this connection */
	int timeout_ms;              /* per reply part; > 0 */
	int no_autostart;            /* from kjit_open_options (or the env) */
	char *socket_path;           /* malloc'd: the one found (the per-user one until then) */
	int discover;                /* look in the discovery order on the next connect (discover.c) */
	int found;                   /* enum kj__found: how socket_path was found */
	char note[KJ_CLIENT_ERR_MAX]; /* why the system socket was passed over, or "" */
	int sys_errno;               /* errno behind the last ECONNECT/EIO */
	char err[KJ_CLIENT_ERR_MAX]; /* kjit_last_error() */
	struct kj__frames in;        /* replies (common/frames.c): at most one frame, read whole */
	struct kj__procmemo *memo;   /* answers by GET fingerprint (procmemo.c), or NULL: off */
	int fast_path;               /* attach to the shared hit table (KJIT_FAST_PATH != 0) */
	int attach_refused;          /* the daemon does not know ATTACH: do not ask again */
	struct kj__hittab_reader *hits; /* the daemon's hit table, mapped read-only, or NULL */
	uint32_t attaches;           /* tables mapped so far: each reader's id (kj__hittab_reader_set_id) */
	struct kj__hitctr *ctr;      /* this connection's fast-path hit counters, or NULL */
};

/* A reply is read with one recv of this much room first: most replies
 * (a hit of a kernel object) arrive whole in it. */
#define KJ_CLIENT_SCRATCH (64u << 10)

/* Sets c->err from a printf format (cut to one line).  Returns code, so
 * that `return kj__client_fail(c, KJIT_EPROTO, "...")` reads naturally. */
int kj__client_fail(kjit_client *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* How a client found its daemon (kjit_socket_path's words). */
enum kj__found { KJ_FOUND_GIVEN, KJ_FOUND_ENV, KJ_FOUND_USER, KJ_FOUND_SYSTEM, KJ_FOUND_RECORD, KJ_FOUND_STARTED };

/* Connects c->fd (connect.c): the first time for a client without a given
 * socket or KJIT_SOCKET, in the discovery order (discover.c); after that
 * to c->socket_path, starting a daemon there when allowed and none
 * answers.  Only a trusted daemon is kept (trust.c).  0, or KJIT_ECONNECT
 * / KJIT_ENOMEM with c->err and c->sys_errno set (EPERM: not trusted). */
int kj__client_connect(kjit_client *c);
/* Connects to c->socket_path or starts a daemon there (connect.c). */
int kj__client_connect_or_start(kjit_client *c);
/* The discovery order (discover.c): the per-user socket, the system
 * socket, the one the cache's daemon recorded, then autostart. */
int kj__client_discover(kjit_client *c);
/* Connects a new socket to path and keeps it only if trust.c trusts the
 * other end (connect.c).  0 with *fd_out; -errno of the connect (nothing
 * in c->err); or KJ_UNTRUSTED with c->err naming path and what is wrong. */
#define KJ_UNTRUSTED (-EPERM)
int kj__client_connect_trusted(kjit_client *c, const char *path, int *fd_out);
/* Sets c->err for a connect to path that failed with errno e (EACCES: the
 * socket's group and how to join it).  Returns KJIT_ECONNECT. */
int kj__client_connect_fail(kjit_client *c, const char *path, int e);
/* The system socket: $KJIT_SYSTEM_SOCKET, else KJ_SYSTEM_SOCKET. */
const char *kj__system_socket_path(void);
/* errno behind this thread's last failed kjit_open (EPERM: the daemon
 * found was not trusted), 0 after a success. */
int kj__last_open_errno(void);

/* trust.c: the checks before a byte is sent.  Each returns 0, or a
 * negative errno with why (one phrase) filled.
 * kj__trust_dir: dir is a folder owned by the caller (or, unless
 * mine_only, by root) that neither its group nor others may write;
 * -ENOENT when it does not exist.
 * kj__trust_peer: the listener of connected socket fd runs as the caller
 * or as root, or (dir, the socket's folder, not NULL) any uid when every
 * folder from / to dir is root's alone (the system socket's /run/kjit,
 * handed by systemd to kjitd's DynamicUser). */
int kj__trust_dir(const char *dir, int mine_only, char *why, size_t whylen);
int kj__trust_peer(int fd, const char *dir, char *why, size_t whylen);

/* Connects (kj__client_connect), then attaches to the daemon's shared hit
 * table unless the fast path is off (any failure there: no fast path,
 * nothing else changes).  0 or kj__client_connect's codes. */
int kj__client_open_conn(kjit_client *c);

/* Sends all of b on c->fd (see libkjit.c).  0, KJIT_ECONNECT,
 * KJIT_ETIMEDOUT or KJIT_EIO. */
int kj__client_send_all(kjit_client *c, const struct kj__buf *b);
/* Writes the id into a begun message. */
void kj__client_set_id(struct kj__buf *b, uint32_t id);
/* Closes the connection after a transport failure and sets c->err from r
 * and what was being done; returns the code for the caller. */
int kj__client_transport_fail(kjit_client *c, int r, const char *what);

/* One request/reply exchange.  req is a message begun with a placeholder id
 * (kj__client_begin) and ended; on 0 *body (malloc'd) and *m (pointing into
 * it) hold the reply, whose CODE field has been read into *code.  A
 * transport failure returns KJIT_ECONNECT / KJIT_ETIMEDOUT / KJIT_EPROTO /
 * KJIT_ENOMEM with c->err set, closes the connection, and leaves *body NULL.
 * A non-zero *code is the daemon's answer: c->err is set from its ERROR
 * field (or kjit_strerror). */
int kj__client_call(kjit_client *c, struct kj__buf *req, uint8_t **body, struct kj__msg *m,
		    int *code);

/* Starts a request of type in b (the id is filled by kj__client_call). */
int kj__client_begin(struct kj__buf *b, uint16_t type);
/* ADMIN cmd arg with len bytes of data (KJ_F_DATA): a chunk of a bundle
 * `kjit import` streams (daemon/net/upload.c).  0 or a negative code, the
 * daemon's message in kjit_last_error(c). */
int kj__admin_data(kjit_client *c, const char *cmd, const char *arg, const void *data, size_t len);
/* kjit_get with flags: KJ_GET_NO_COMPILE asks for a fetch only (local
 * cache, then the fleet tier): a miss is KJIT_ENOENT, never compiled
 * (`kjit warm --remote-only`). */
#define KJ_GET_NO_COMPILE 1u
/* KJ_GET_WANT_LOG: a hit carries the compile's log, as a compile does
 * (dropin/: NVRTC returns the log of every compile); never answered from
 * the process memo or the shared hit table, which keep no logs. */
#define KJ_GET_WANT_LOG 2u
int kj__get_flags(kjit_client *c, const kjit_request *req, unsigned flags, kjit_result *res);

/* Copies s into a new string with every control character turned into a
 * space, so that a daemon's line prints as one line.  NULL on ENOMEM. */
char *kj__one_line(const char *s);

/* ---- one GET, in steps (get.c), shared by kjit_get and kjit_get_many ---- */

/* What a request prepared in a buffer is looked up by without the socket:
 * its body's fingerprint (the frame header holds only the id) and the hit
 * table's generation (0: no table). */
struct kj__local_key {
	int ok;
	int named;      /* has name expressions: never from the table */
	int want_log;   /* KJ_GET_WANT_LOG: never from (or into) the process memo, which keeps no log;
			 * from the table, where kjitd puts such a request only when its entry has no log */
	uint8_t fp[32];
	uint64_t gen;
	/* kj__get_into's: the object goes into its buffer, not res->data
	 * (NULL: kjit_get's malloc'd res->data) */
	const struct kj__sink *sink;
};
/* Checks, resolves and encodes req into b.  0, or a code with c->err set. */
int kj__get_prepare(kjit_client *c, const kjit_request *req, unsigned flags, struct kj__buf *b);
/* Fills lk for req encoded in b (no sink). */
void kj__get_local_key(kjit_client *c, const kjit_request *req, const struct kj__buf *b,
		       struct kj__local_key *lk);
/* Answers from the process memo, then the shared hit table: 1 with res
 * filled, else 0 (res zeroed: ask the socket). */
int kj__get_local_answer(kjit_client *c, const struct kj__local_key *lk, kjit_result *res);
/* Fills res from a GET reply m whose CODE was code (c->err set for a
 * failure).  0 or the failure's code.  body: NULL, or the malloc'd frame
 * m was decoded from, which the process memo may take over (then *body is
 * NULL; the caller frees what is left). */
int kj__get_take_reply(kjit_client *c, const kjit_request *req, const struct kj__msg *m, int code,
		       const struct kj__local_key *lk, kjit_result *res, uint8_t **body);
/* kjit_get_many with flags (KJ_GET_*) on every request. */
int kj__get_many_flags(kjit_client *c, const kjit_request *reqs, size_t n, unsigned flags, kjit_result *results,
		       int *codes, kjit_get_many_fn *on_ready, void *arg);
/* Puts c->err (else the code's words) into res->error. */
void kj__get_set_error(kjit_client *c, int r, kjit_result *res);

#endif /* KJ_CLIENT_INT_H */
