/* proto.h: the one message framing of kjit, used on the client socket and on
 * the worker pipes alike (docs/protocol.md describes it for other languages).
 *
 * A frame is a 12-byte header {u32 body length, u16 type, u8 version,
 * u8 flags, u32 request id}, little-endian, then the body: a sequence of
 * fields {u16 tag, u32 length, bytes}.  Lengths are checked against
 * KJ_FRAME_MAX before anything is read or copied; strings are not
 * NUL-terminated on the wire and may not contain NUL.
 *
 * Everything here that allocates does so through a struct kj__alloc
 * (alloc.h): the buffer's own for building, the message's for decoding,
 * a parameter for the *_with calls; NULL means the C library's.  Tests
 * fail the n-th allocation of each (tests/test-proto.c).
 */
#ifndef KJ_PROTO_H
#define KJ_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "kj_limits.h"

enum kj__msg_type {
	/* client -> daemon */
	KJ_MSG_PING = 1,
	KJ_MSG_GET = 2,
	KJ_MSG_ADMIN = 3,   /* CMD, ARG: stats, targets, ls, show, gc, verify, clear */
	KJ_MSG_STOP = 4,
	KJ_MSG_ATTACH = 5,  /* none; reply CODE, SLOTS + two fds (hit table, counters) by SCM_RIGHTS */
	/* daemon -> client */
	KJ_MSG_REPLY = 0x80, /* CODE, then what the request asked for */
	/* worker <-> daemon */
	KJ_MSG_HELLO = 0x40, /* worker: CODE, COMPILER, COMPILER_VERSION, VERSION, ERROR */
	/* worker, before HELLO when it has a warm-up to run: COMPILER,
	 * COMPILER_VERSION, VERSION (the identity, so kjitd keys requests and
	 * serves hits meanwhile; jobs still wait for the HELLO) */
	KJ_MSG_IDENT = 0x43,
	/* JOB and RESULT are encoded and decoded only by common/jobmsg.c */
	KJ_MSG_JOB = 0x41,   /* daemon: TARGET, OPTION*, ENTRY*, SOURCE_NAME, SOURCE, (HEADER_NAME HEADER_DATA)* */
	KJ_MSG_RESULT = 0x42 /* worker: CODE, DATA, LOG, LOWERED, ERROR, COMPILE_US */
};

enum kj__field_tag {
	KJ_F_BACKEND = 1,          /* u32 enum kjit_backend */
	KJ_F_TARGET = 2,           /* str */
	KJ_F_VERSION = 3,          /* str: runtime version */
	KJ_F_KERNEL = 4,           /* str: bundled kernel name */
	KJ_F_SOURCE = 5,           /* bytes */
	KJ_F_SOURCE_NAME = 6,      /* str */
	KJ_F_ENTRY = 7,            /* str, repeated */
	KJ_F_OPTION = 8,           /* str, repeated, in order */
	KJ_F_HEADER_NAME = 9,      /* str, repeated; the next field is its HEADER_DATA */
	KJ_F_HEADER_DATA = 10,     /* bytes */
	KJ_F_CODE = 11,            /* i32: 0 or a KJIT_E* code */
	KJ_F_STATUS = 12,          /* u32 enum kjit_status */
	KJ_F_DATA = 13,            /* bytes: the code object */
	KJ_F_KEY = 14,             /* str: hex SHA-256 */
	KJ_F_LOG = 15,             /* str: compiler log */
	KJ_F_ERROR = 16,           /* str: one line */
	KJ_F_CMD = 17,             /* str */
	KJ_F_ARG = 18,             /* str */
	KJ_F_TEXT = 19,            /* str: human-readable answer */
	KJ_F_JSON = 20,            /* str: one JSON object */
	KJ_F_COMPILER = 21,        /* str: compiler family, e.g. "hiprtc" (HELLO; in GET: the request's choice) */
	KJ_F_COMPILER_VERSION = 22,/* str: e.g. "hiprtc 9.0; comgr 2.4; device-libs 5.2.3" */
	KJ_F_COMPILE_US = 23,      /* u64: microseconds spent compiling */
	KJ_F_TARGET_SOURCE = 24,   /* str: where the client's target came from (env var name) */
	KJ_F_NO_COMPILE = 25,      /* u32 1: fetch only (local, remote), never compile a miss */
	KJ_F_SLOTS = 26,           /* u32: the hit table's slot count (ATTACH reply) */
	KJ_F_LOWERED = 27,         /* str: lowered names, "EXPR\tLOWERED\n" each (common/lowered.h) */
	KJ_F_EXPLAIN = 28,         /* GET u32 1: explain a miss; REPLY str: why it was not a hit (daemon/miss/explain.c) */
	KJ_F_WANT_LOG = 29,        /* u32 1: a hit carries its compile's log too (the drop-in libraries, docs/dropin.md) */
};

struct kj__frame_hdr {
	uint32_t len;
	uint16_t type;
	uint8_t version;
	uint8_t flags;
	uint32_t id;
};

/* Starts a message of type with request id into b (which it resets). */
int kj__msg_begin(struct kj__buf *b, uint16_t type, uint32_t id);
/* Appends one field.  0, KJIT_ENOMEM or KJIT_ETOOBIG (frame over the cap). */
int kj__msg_put(struct kj__buf *b, uint16_t tag, const void *p, size_t n);
int kj__msg_put_str(struct kj__buf *b, uint16_t tag, const char *s);
int kj__msg_put_u32(struct kj__buf *b, uint16_t tag, uint32_t v);
int kj__msg_put_i32(struct kj__buf *b, uint16_t tag, int32_t v);
int kj__msg_put_u64(struct kj__buf *b, uint16_t tag, uint64_t v);
/* Writes the body length into the header.  0 or KJIT_ETOOBIG. */
int kj__msg_end(struct kj__buf *b);
/* For a last field whose n bytes are sent from elsewhere (no copy): appends
 * only the field's header; then kj__msg_end_ext counts those n bytes in the
 * frame's length.  0, KJIT_ENOMEM or KJIT_ETOOBIG. */
int kj__msg_put_ext(struct kj__buf *b, uint16_t tag, size_t n);
int kj__msg_end_ext(struct kj__buf *b, size_t n);

/* Decodes a 12-byte frame header.  Returns 0, KJIT_EPROTO (wrong version:
 * h is still filled so the caller can answer), or KJIT_ETOOBIG. */
int kj__frame_hdr_decode(const uint8_t *p, struct kj__frame_hdr *h);

struct kj__field {
	uint16_t tag;
	uint32_t len;
	const uint8_t *p; /* points into the body the message was decoded from */
};

struct kj__msg {
	size_t n;
	struct kj__field *f; /* from alloc; the field bytes are not copied */
	const struct kj__alloc *alloc; /* what f came from; NULL: the C library */
};

/* Splits a frame body into fields, checking every length.  On success m
 * owns an array (free with kj__msg_free) that points into body, which must
 * outlive m.  KJIT_EPROTO for a malformed body, KJIT_ETOOBIG for too many
 * fields, KJIT_ENOMEM.  m need not be initialized; on any return it is a
 * valid message (empty on failure) that kj__msg_free accepts.
 * kj__msg_decode_with allocates through a (NULL: the C library's). */
int kj__msg_decode(const uint8_t *body, size_t len, struct kj__msg *m);
int kj__msg_decode_with(const uint8_t *body, size_t len, const struct kj__alloc *a, struct kj__msg *m);
void kj__msg_free(struct kj__msg *m);

/* The first field with tag at or after index *pos (0 to start), or NULL;
 * *pos is left just past it, so repeated calls walk repeated fields. */
const struct kj__field *kj__msg_next(const struct kj__msg *m, uint16_t tag, size_t *pos);
/* The first field with tag, or NULL. */
const struct kj__field *kj__msg_get(const struct kj__msg *m, uint16_t tag);

/* Copies a string field into a new NUL-terminated string.  KJIT_EPROTO if it
 * holds a NUL or is longer than max; KJIT_ENOMEM.  f NULL: *out = NULL, 0.
 * The string is the caller's to free(3); with kj__field_strdup_with, to
 * free through a (NULL: the C library's). */
int kj__field_strdup(const struct kj__field *f, size_t max, char **out);
int kj__field_strdup_with(const struct kj__field *f, size_t max, const struct kj__alloc *a, char **out);
/* Reads a u32 / i32 / u64 field (exact length).  KJIT_EPROTO otherwise. */
int kj__field_u32(const struct kj__field *f, uint32_t *v);
int kj__field_i32(const struct kj__field *f, int32_t *v);
int kj__field_u64(const struct kj__field *f, uint64_t *v);

/* Blocking I/O on a stream fd (client, worker).  Writes all of b.  Reads one
 * whole frame through the one frame reader (frames.h), never a byte past
 * it, waiting at most timeout_ms (<0: forever) for each part; *body
 * is malloc'd (NULL when empty).  Return 0, KJIT_EIO (errno kept),
 * KJIT_ECONNECT (peer closed), KJIT_ETIMEDOUT, KJIT_EPROTO, KJIT_ETOOBIG,
 * KJIT_ENOMEM.  kj__frame_read_fd_with allocates *body through a (NULL: the
 * C library's), and the caller frees it through a. */
int kj__frame_write_fd(int fd, const struct kj__buf *b);
int kj__frame_read_fd(int fd, int timeout_ms, struct kj__frame_hdr *h, uint8_t **body);
int kj__frame_read_fd_with(int fd, int timeout_ms, const struct kj__alloc *a, struct kj__frame_hdr *h,
			   uint8_t **body);

#endif /* KJ_PROTO_H */
