/* conn-int.h: struct kj__conn and what conn.c (reading) and conn-out.c
 * (replies) share; private to those two files. */
#ifndef KJ_CONN_INT_H
#define KJ_CONN_INT_H

#include "daemon.h"

struct kj__conn {
	uv_pipe_t h;
	uv_timer_t idle;
	struct kj__daemon *d;
	struct kj__conn *prev, *next;
	struct kj__frames in;        /* common/frames.c: a refused frame's body is skipped there */
	size_t out_pending;          /* bytes queued in uv_write, not yet written */
	unsigned inflight;           /* requests read but not yet answered */
	size_t inflight_bytes;       /* their frame bytes, counted since inflight was last 0 */
	int processing;              /* inside process_frames */
	unsigned refs;
	unsigned handles_open;
	int closing;
	int counted;                 /* counted against its uid (quota.c) */
	uint64_t charged;            /* bytes of the frame being read, charged to uid */
	struct held {                /* the charge of each request in flight, by id */
		uint32_t id;
		uint64_t len;
	} held[KJ_CLIENT_INFLIGHT_MAX];
	unsigned n_held;
	int refusing;                /* sending the reply of a frame never held: it releases no charge */
	uid_t uid;                   /* charged: the peer's, or its user namespace's owner (access.c) */
	uid_t peer_uid;              /* SO_PEERCRED's (roles: access.c) */
	int nested;                  /* the peer runs in a user namespace below kjitd's */
	gid_t gid;
	pid_t pid;
	kj__conn_dispatch_fn *dispatch; /* the server's: called for each whole frame */
	/* An internal connection (replay) has no socket: replies go to sink. */
	void (*sink)(void *arg, const uint8_t *body, size_t len);
	void *sink_arg;
	struct kj__hitctr *ctr;      /* fast-path hit counters (ATTACH), harvested at close */
	int sndbuf_base;             /* the socket's send buffer before any raise; 0: not read yet (conn-out.c) */
	uint64_t sndbuf_charged;     /* what a raise let the kernel hold beyond it, charged to uid until set back */
};

struct write_req {
	uv_write_t req;
	struct kj__conn *c;
	struct kj__buf b;            /* the frame's own bytes still to write (may be none) */
	struct kj__replybuf *obj;    /* then the object from obj_off, or NULL */
	size_t obj_off;
	size_t len;                  /* bytes queued: b's and obj's rest */
};

/* Sets a raised send buffer back and gives its charge back (close). */
void kj__conn_sndbuf_release(struct kj__conn *c);

/* A reply in b answers one request: one fewer in flight, and that
 * request's charge (by the reply's id) goes back to its uid. */
void kj__conn_answered(struct kj__conn *c, const struct kj__buf *b);
/* Reads the next requests once nothing is owed to the client (no reply
 * unsent, not saturated); within process_frames its loop goes on. */
void kj__conn_resume(struct kj__conn *c);
/* (Re)arms the connection's one timer for what it waits on now. */
void kj__conn_arm_timer(struct kj__conn *c);

#endif /* KJ_CONN_INT_H */
