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

#include <stddef.h>
#include <stdint.h>

#include "kjit.h"
#include "kj_limits.h"
#include "proto.h"

/* The system-mode socket of the design (systemd's kjitd.socket).  A client
 * never starts a daemon for it: it says that the service is down. */
#define KJ_SYSTEM_SOCKET "/run/kjit/kjitd.sock"
/* Interval between connect attempts while a started kjitd comes up. */
#define KJ_AUTOSTART_POLL_MS 10
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
	char *socket_path;           /* malloc'd */
	int sys_errno;               /* errno behind the last ECONNECT/EIO */
	char err[KJ_CLIENT_ERR_MAX]; /* kjit_last_error() */
	uint8_t *scratch;            /* KJ_CLIENT_SCRATCH bytes: a reply's first read */
	struct kj__procmemo *memo;   /* answers by GET fingerprint (procmemo.c), or NULL: off */
};

/* A reply is read with one recv into this much scratch first: most replies
 * (a hit of a kernel object) arrive whole in it. */
#define KJ_CLIENT_SCRATCH (64u << 10)

/* Sets c->err from a printf format (cut to one line).  Returns code, so
 * that `return kj__client_fail(c, KJIT_EPROTO, "...")` reads naturally. */
int kj__client_fail(kjit_client *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Connects c->fd to c->socket_path, starting a daemon when allowed and
 * none answers (connect.c).  0, or KJIT_ECONNECT / KJIT_ENOMEM with c->err
 * and c->sys_errno set. */
int kj__client_connect(kjit_client *c);

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
/* kjit_get with flags: KJ_GET_NO_COMPILE asks for a fetch only (local
 * cache, then the fleet tier): a miss is KJIT_ENOENT, never compiled
 * (`kjit warm --remote-only`). */
#define KJ_GET_NO_COMPILE 1u
int kj__get_flags(kjit_client *c, const kjit_request *req, unsigned flags, kjit_result *res);

/* Copies s into a new string with every control character turned into a
 * space, so that a daemon's line prints as one line.  NULL on ENOMEM. */
char *kj__one_line(const char *s);

#endif /* KJ_CLIENT_INT_H */
