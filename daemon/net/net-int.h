/* net-int.h: the net room's part of kjitd's context (issue 33): struct
 * kj__netroom, d->net, allocated by kj__net_init (server.c).  What the
 * listener, the connections, the per-uid limits, the reply buffers, the
 * uploads and the shared hit tables keep between calls.  Private to
 * daemon/net/ (and the room's unit test, tests/test-quota.c); the rest of
 * kjitd asks through daemon.h's functions (kj__hits_on, kj__quota_*...);
 * tests/e2e/layering.sh keeps it so. */
#ifndef KJ_NET_INT_H
#define KJ_NET_INT_H

#include "daemon.h"

struct kj__netroom {
	uv_pipe_t listener;          /* server.c */
	int listener_from_systemd;   /* socket passed by systemd: its file is not ours */
	dev_t sock_dev;              /* the socket file we bound, to notice it removed or replaced */
	ino_t sock_ino;
	int sock_lost;               /* it was: do not unlink whatever is at the path now */
	uint64_t refused_conns;      /* connections refused since the last log line about it */
	uint64_t refused_log_us;
	struct kj__conn *conns;      /* conn.c: all live connections */
	struct kj__hits *hits;       /* the shared hit table and its watches (hits.c), or NULL */
	struct kj__upload *uploads;  /* upload.c: bundles being streamed, one per uid */
	size_t n_uploads;
	/* quota.c: what each uid holds (connections, request bytes). */
	struct kj__quota_uid *quota;
	size_t n_quota, cap_quota;
	unsigned n_conns, conn_max_total;
	uint64_t bytes_total;
	uint64_t heap_idle_base;     /* quota.c: free heap bytes resident after the last malloc_trim */
	struct kj__replybuf *replybufs; /* replybuf.c: objects queued for replies, shared */
};

#endif /* KJ_NET_INT_H */
