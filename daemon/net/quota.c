/* quota.c: what each uid may hold of the daemon, so that no local user can
 * exhaust kjitd for the others (issue 16, items 2 and 3).
 *
 * Two resources are counted per peer uid and in total: connections
 * (descriptors) and bytes: request bytes (frames being read, requests
 * being resolved, compile jobs queued or running with their replay
 * recipe) and reply bytes queued for the uid's clients and not yet
 * written to their sockets (conn.c; an object shared by several queued
 * replies counts once per uid, replybuf.c).
 * Connections: a uid other than kjitd's own and root may hold at most
 * cfg.conn_max_per_uid; all together may hold cfg.conn_max_total, computed
 * at start from the descriptor limit less what workers, the cache and the
 * log need, and the last KJ_CONN_PRIV_RESERVE of those are kept for the
 * owner and root, so that they can always stop or inspect a flooded daemon.
 * Bytes: cfg.buf_max_per_uid per uid and cfg.buf_max_total in all; a charge
 * past either is refused, and the caller answers "busy, retry".  The table
 * of uids is a small array (a machine has few users with clients at once);
 * an entry goes away when it holds nothing.
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon.h"
#include "net-int.h"
#include "kj_types.h"
#include "util.h"

struct kj__quota_uid {
	uid_t uid;
	unsigned conns;
	uint64_t bytes;
};

/* The entry of uid, created if create; NULL if absent (or out of memory). */
static struct kj__quota_uid *find(struct kj__daemon *d, uid_t uid, int create)
{
	for (size_t i = 0; i < d->net->n_quota; i++)
		if (d->net->quota[i].uid == uid)
			return &d->net->quota[i];
	if (!create)
		return NULL;
	if (d->net->n_quota == d->net->cap_quota) {
		size_t cap = d->net->cap_quota ? d->net->cap_quota * 2 : 8;
		struct kj__quota_uid *q = realloc(d->net->quota, cap * sizeof *q);
		if (q == NULL)
			return NULL;
		d->net->quota = q;
		d->net->cap_quota = cap;
	}
	d->net->quota[d->net->n_quota] = (struct kj__quota_uid){ .uid = uid };
	return &d->net->quota[d->net->n_quota++];
}

static void maybe_drop(struct kj__daemon *d, struct kj__quota_uid *q)
{
	if (q->conns == 0 && q->bytes == 0) {
		*q = d->net->quota[--d->net->n_quota];
		if (d->net->n_quota == 0) {
			free(d->net->quota);
			d->net->quota = NULL;
			d->net->cap_quota = 0;
		}
	}
}

int kj__quota_privileged(const struct kj__daemon *d, uid_t uid)
{
	(void)d;
	return uid == 0 || uid == getuid();
}

void kj__quota_init(struct kj__daemon *d)
{
	struct rlimit rl;
	unsigned workers = 4 * d->cfg.jobs; /* four families at most */
	uint64_t budget = 1024;

	/* Descriptors are cheap: take the hard limit, so the cap below is set
	 * by what the administrator allows, not by the 1024 soft default. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rlim_t want = rl.rlim_max == RLIM_INFINITY ? KJ_NOFILE_WANT : rl.rlim_max;
			if (want > KJ_NOFILE_WANT)
				want = KJ_NOFILE_WANT;
			if (want > rl.rlim_cur) {
				rl.rlim_cur = want;
				if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
					getrlimit(RLIMIT_NOFILE, &rl);
			}
		}
		budget = rl.rlim_cur == RLIM_INFINITY ? KJ_NOFILE_WANT : (uint64_t)rl.rlim_cur;
	}
	/* Each worker holds a socketpair end; each may be mid-restart (two). */
	uint64_t reserve = KJ_FD_RESERVE + 2ull * workers;
	d->net->conn_max_total = budget > reserve + 2 * KJ_CONN_PRIV_RESERVE ? (unsigned)(budget - reserve)
									 : 2 * KJ_CONN_PRIV_RESERVE;
	/* Blocks of 4 MiB and more from mmap, returned to the system when
	 * freed: a flood of the largest requests must not leave the heap at
	 * its peak (glibc would otherwise raise the threshold to the largest
	 * block freed).  Smaller ones from the heap, whose free top is kept up
	 * to KJ_HEAP_KEEP per arena: a 1 MiB object or source takes pages already
	 * faulted in (from mmap, each of its buffers was faulted in and zeroed
	 * again per request: a third of a 1 MiB remote hit's time, issue 35);
	 * kj__quota_tick trims what a load left.  One arena for all threads:
	 * malloc_trim does not shrink another arena's top, so each pool
	 * thread's arena kept up to KJ_HEAP_KEEP after a load (a publish's
	 * copy of a 3 MB object: 3 to 12 MB over base after budget.sh's
	 * floods), which one arena's trim returns. */
	if (!KJ_UNDER_ASAN && /* (its allocator has no thresholds to set) */
	    (mallopt(M_MMAP_THRESHOLD, KJ_MMAP_THRESHOLD) != 1 || mallopt(M_TRIM_THRESHOLD, KJ_HEAP_KEEP) != 1 ||
	     mallopt(M_ARENA_MAX, KJ_MALLOC_ARENAS) != 1))
		kj__log(d, "cannot set malloc's thresholds and arenas; large buffers are faulted in per request");
}

int kj__quota_conn_add(struct kj__daemon *d, uid_t uid, char *err, size_t errlen)
{
	int priv = kj__quota_privileged(d, uid);
	unsigned cap = priv ? d->net->conn_max_total : d->net->conn_max_total - KJ_CONN_PRIV_RESERVE;
	struct kj__quota_uid *q = find(d, uid, 1);

	if (q == NULL) {
		snprintf(err, errlen, "kjitd is out of memory; retry later");
		return KJIT_ENOMEM;
	}
	if (d->net->n_conns >= cap) {
		snprintf(err, errlen, "kjitd is busy: %u connections open, its limit%s; retry later",
			 d->net->n_conns, priv ? "" : " for users other than its owner and root");
		maybe_drop(d, q);
		return KJIT_EBUSY;
	}
	if (!priv && d->cfg.conn_max_per_uid && q->conns >= d->cfg.conn_max_per_uid) {
		snprintf(err, errlen, "kjitd is busy: uid %u already has %u connections open, the limit per user "
			 "(--max-conns-per-uid); close some and retry", (unsigned)uid, q->conns);
		return KJIT_EBUSY;
	}
	q->conns++;
	d->net->n_conns++;
	return 0;
}

void kj__quota_conn_del(struct kj__daemon *d, uid_t uid)
{
	struct kj__quota_uid *q = find(d, uid, 0);

	if (q == NULL || q->conns == 0)
		return;
	q->conns--;
	d->net->n_conns--;
	maybe_drop(d, q);
}

int kj__quota_charge(struct kj__daemon *d, uid_t uid, uint64_t n, char *err, size_t errlen)
{
	struct kj__quota_uid *q = find(d, uid, 1);

	if (q == NULL) {
		snprintf(err, errlen, "kjitd is out of memory; retry later");
		return KJIT_ENOMEM;
	}
	if (d->net->bytes_total + n > d->cfg.buf_max_total) {
		snprintf(err, errlen, "kjitd is busy: %llu MiB of requests in flight and replies unread, its limit is %llu MiB; retry shortly",
			 (unsigned long long)(d->net->bytes_total >> 20), (unsigned long long)(d->cfg.buf_max_total >> 20));
		maybe_drop(d, q);
		return KJIT_EBUSY;
	}
	if (q->bytes + n > d->cfg.buf_max_per_uid) {
		snprintf(err, errlen, "kjitd is busy: uid %u has %llu MiB of requests in flight and replies unread, the limit per user is "
			 "%llu MiB; retry once some are answered", (unsigned)uid, (unsigned long long)(q->bytes >> 20),
			 (unsigned long long)(d->cfg.buf_max_per_uid >> 20));
		maybe_drop(d, q);
		return KJIT_EBUSY;
	}
	q->bytes += n;
	d->net->bytes_total += n;
	return 0;
}

int kj__quota_room(struct kj__daemon *d, uid_t uid, uint64_t n, char *err, size_t errlen)
{
	int r = kj__quota_charge(d, uid, n, err, errlen);

	if (r == 0)
		kj__quota_release(d, uid, n);
	return r;
}

void kj__quota_charge_over(struct kj__daemon *d, uid_t uid, uint64_t n)
{
	struct kj__quota_uid *q = find(d, uid, 1);

	if (q == NULL)
		return; /* out of memory for the entry: the bytes go uncounted */
	q->bytes += n;
	d->net->bytes_total += n;
}

uint64_t kj__quota_bytes(const struct kj__daemon *d, uid_t uid)
{
	for (size_t i = 0; i < d->net->n_quota; i++)
		if (d->net->quota[i].uid == uid)
			return d->net->quota[i].bytes;
	return 0;
}

void kj__quota_release(struct kj__daemon *d, uid_t uid, uint64_t n)
{
	struct kj__quota_uid *q = find(d, uid, 0);

	if (q == NULL || n == 0)
		return;
	if (n > q->bytes)
		n = q->bytes;
	q->bytes -= n;
	d->net->bytes_total -= n;
	maybe_drop(d, q);
}

/* The bytes of freed heap memory still resident: the process's anonymous
 * resident bytes (/proc/self/statm: resident less file-backed and shared)
 * less what malloc has handed out and not taken back.  What is not malloc's
 * (stacks, libraries' data) is in it too, a near constant.  -1 if it cannot
 * be read (out of descriptors: the next tick looks again). */
static int heap_idle(uint64_t *idle)
{
	unsigned long long size, resident, shared;
	char line[128];
	ssize_t n;
	int fd;

	if ((fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, line, sizeof line - 1);
	close(fd);
	if (n <= 0)
		return -1;
	line[n] = '\0';
	long page = sysconf(_SC_PAGESIZE);
	if (sscanf(line, "%llu %llu %llu", &size, &resident, &shared) != 3 || page <= 0 || shared > resident)
		return -1;
	uint64_t anon = (uint64_t)(resident - shared) * (uint64_t)page;
	struct mallinfo2 mi = mallinfo2();
	uint64_t live = (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
	*idle = anon > live ? anon - live : 0;
	return 0;
}

void kj__quota_tick(struct kj__daemon *d)
{
	uint64_t idle;

	/* What a load freed below a live block stays resident, whatever
	 * glibc's trim threshold (it returns only the top of the heap, and
	 * only on a free that reaches it), so once no load is running and
	 * KJ_TRIM_IDLE_BYTES more of such pages are resident than after the
	 * last trim (or the least since), malloc_trim gives them back
	 * (madvise).  The measure is the allocator's own, not the quota's
	 * charges: the memory of a miss (the worker's result, the cache's
	 * copies) and replies written at once are never charged, and a shared
	 * reply once per uid. */
	if (KJ_UNDER_ASAN || d->net->bytes_total > KJ_TRIM_QUIET_BYTES || heap_idle(&idle) < 0)
		return;
	if (idle < d->net->heap_idle_base)
		d->net->heap_idle_base = idle; /* a free gave pages back itself (a heap's top) */
	if (idle < d->net->heap_idle_base + KJ_TRIM_IDLE_BYTES)
		return;
	malloc_trim(0);
	/* what it could not give back (partial pages, the near constant) is
	 * the new base */
	if (heap_idle(&idle) == 0)
		d->net->heap_idle_base = idle;
}
