/* hits.c: kjitd's side of the shared read-only hit table (docs/hitpath.md).
 *
 * At start the daemon creates the table (common/hittab.c), unless
 * --no-shared-hit-table was given or the kernel cannot seal a memfd: then
 * it logs one line and every hit goes through the socket, where each
 * request is checked against its peer.  A table never crosses users (every
 * mapper can read every object in it): a daemon whose socket admits other
 * uids (--system, --allow-gid, --allow-uid of a uid other than its own and
 * root) keeps one table per uid, made at the uid's first ATTACH, handed
 * only to that uid's connections and filled only with what that uid was
 * answered; KJ_HITTAB_UIDS_MAX of them at most, never evicted (a client
 * may keep an evicted table mapped, and its memory with it), later uids
 * going through the socket.
 * get.c publishes an object here only after it was verified (a hot-set hit,
 * a digest-checked read, a fresh compile).  What the request bytes mean can
 * change without the bytes changing: a bundled kernel's source or a header
 * under the kernels directory (inotify on that directory tree, any event),
 * a compiler upgrade (pool.c), objects dropped by clear, gc or verify
 * (admin.c): each bumps the table's generation, which invalidates every
 * entry at once; clients then ask the socket until the daemon has answered
 * again.  A client attaches with ATTACH and receives the table's read-only
 * descriptor and its own counters memfd; the counters are harvested on the
 * flush timer and at close, so fast-path hits show in `kjit stats`.
 *
 * The cache's object directories are watched too: an object file modified,
 * deleted or moved away behind kjitd's back (a disk error, a stray `dd`)
 * loses its table entries at once, so its next hit goes through the socket,
 * where the hot set's stat check sees the change and the digest check the
 * damage, as without the fast path.  (Renames into place are kjitd's own
 * publishes and are not watched.)
 *
 * An inotify event is read on the loop's next iteration: a client that
 * reads between an edit and that moment may get the object built from the
 * previous file, as a request that reached the daemon a moment earlier
 * would.  A key is resolved on a pool thread (offhash.c), so every put
 * carries the generation taken on the loop before its resolve began and is
 * refused if the generation moved since: a file edited while a thread read
 * it, or while the compile ran, never enters the table.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "net-int.h"
#include "hittab.h"
#include "kj_types.h"
#include "sha.h"
#include "util.h"

/* Subdirectory depth watched under the kernels directory. */
#define WATCH_DEPTH_MAX 8
#define WATCH_MASK (IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
		    IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

#define CACHE_MASK (IN_MODIFY | IN_DELETE | IN_MOVED_FROM)
#define CACHE_WATCHES_MAX 4096 /* object directories (one per target and version) */

/* One table and the uid it serves (UID_ANY: the per-user daemon's one). */
struct uid_tab {
	uid_t uid;
	struct kj__hittab *tab;
};
#define UID_ANY ((uid_t)-1)

struct kj__hits {
	struct uid_tab tabs[KJ_HITTAB_UIDS_MAX];
	size_t n_tabs;
	int per_uid;                 /* other uids are admitted: one table per uid */
	int full_logged;             /* "every per-uid table is taken" said once */
	uint64_t epoch;              /* bumped by each invalidation: a put stamped before is refused */
	int ino_fd;
	int cache_root_wd;
	int *cache_wd;               /* watches of the cache's object directories */
	size_t n_cache_wd;
	uv_poll_t poll;
	int poll_open;
};

/* Watches dir and its subdirectories.  0 or -1 (errno set). */
static int watch_tree(int fd, const char *dir, int depth)
{
	DIR *dp;
	struct dirent *de;
	int r = 0;

	if (inotify_add_watch(fd, dir, WATCH_MASK | IN_ONLYDIR) < 0)
		return -1;
	if (depth >= WATCH_DEPTH_MAX || (dp = opendir(dir)) == NULL)
		return 0;
	while (r == 0 && (de = readdir(dp)) != NULL) {
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		char *sub = kj__asprintf("%s/%s", dir, de->d_name);
		if (sub == NULL) {
			errno = ENOMEM;
			r = -1;
		} else if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
			r = watch_tree(fd, sub, depth + 1);
		}
		free(sub);
	}
	closedir(dp);
	return r;
}

/* Watches one object directory of the cache (not its tmp/). */
static int watch_cache_dir(struct kj__daemon *d, const char *name)
{
	struct kj__hits *h = d->net->hits;
	int wd, r = 0;

	if (name[0] == '.' || strcmp(name, "tmp") == 0 || h->n_cache_wd >= CACHE_WATCHES_MAX)
		return 0;
	char *p = kj__asprintf("%s/%s", d->cfg.cache_dir, name);
	if (p == NULL)
		return -1;
	wd = inotify_add_watch(h->ino_fd, p, CACHE_MASK | IN_ONLYDIR);
	if (wd < 0)
		r = -1;
	else
		h->cache_wd[h->n_cache_wd++] = wd;
	free(p);
	return r;
}

/* Watches the cache directory for new object directories, and each one. */
static int watch_cache(struct kj__daemon *d)
{
	struct kj__hits *h = d->net->hits;
	DIR *dp;
	struct dirent *de;
	int r = 0;

	h->cache_root_wd = inotify_add_watch(h->ino_fd, d->cfg.cache_dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
	if (h->cache_root_wd < 0 || (dp = opendir(d->cfg.cache_dir)) == NULL)
		return -1;
	while (r == 0 && (de = readdir(dp)) != NULL) {
		struct stat st;
		char *p = kj__asprintf("%s/%s", d->cfg.cache_dir, de->d_name);
		if (p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			r = watch_cache_dir(d, de->d_name);
		free(p);
	}
	closedir(dp);
	return r;
}

static int is_cache_wd(const struct kj__hits *h, int wd)
{
	for (size_t i = 0; i < h->n_cache_wd; i++)
		if (h->cache_wd[i] == wd)
			return 1;
	return 0;
}

/* An object file <64 hex>.<ext> changed under us: drop its entries. */
static void object_changed(struct kj__daemon *d, const char *name)
{
	const char *dot = strchr(name, '.');
	char hex[65];

	if (dot == NULL || dot - name != 64 || strchr(dot + 1, '.') != NULL)
		return;
	memcpy(hex, name, 64);
	hex[64] = '\0';
	kj__hits_remove_key(d, hex);
}

/* Reads every pending inotify event: one under the kernels directory
 * invalidates the table, a changed object file drops its entries. */
static void drain_events(struct kj__daemon *d)
{
	struct kj__hits *h = d->net->hits;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int any = 0, overflow = 0;

	for (;;) {
		ssize_t n = read(h->ino_fd, buf, sizeof buf);
		if (n <= 0)
			break;
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;
			q += sizeof *ev + ev->len;
			if (ev->wd == h->cache_root_wd) {
				if ((ev->mask & IN_ISDIR) && ev->len && watch_cache_dir(d, ev->name) < 0)
					kj__log(d, "cannot watch the new object directory %s: %s", ev->name, strerror(errno));
				continue;
			}
			if (ev->wd >= 0 && is_cache_wd(h, ev->wd)) {
				if (ev->len && (ev->mask & CACHE_MASK))
					object_changed(d, ev->name);
				continue;
			}
			any = 1;
			overflow |= (ev->mask & IN_Q_OVERFLOW) != 0;
			/* A new subdirectory: watch it too (a failure is logged below
			 * as a missed watch; invalidation still happened). */
			if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && (ev->mask & IN_ISDIR))
				overflow = 1;
		}
	}
	if (overflow && watch_tree(h->ino_fd, d->cfg.kernels_dir, 0) < 0)
		kj__log(d, "cannot watch %s again (%s): the fast path may serve stale objects; restart kjitd",
			d->cfg.kernels_dir, strerror(errno));
	if (any)
		kj__hits_invalidate(d, "a file under the kernels directory changed");
}

static void on_inotify(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	drain_events(p->data);
}

static void hits_off(struct kj__daemon *d, const char *why)
{
	kj__log(d, "shared hit table off: %s; hits go through the socket", why);
}

/* 1 if the socket admits a uid other than the daemon's own (and root,
 * which may read everything anyway): one table would cross users. */
static int others_admitted(const struct kj__daemon *d)
{
	uid_t me = geteuid();

	if (d->cfg.system_mode || d->cfg.n_allow_gid > 0)
		return 1;
	for (size_t i = 0; i < d->cfg.n_allow_uid; i++)
		if (d->cfg.allow_uid[i] != me && d->cfg.allow_uid[i] != 0)
			return 1;
	return 0;
}

/* The table of uid (per-user daemon: its one), made if create and there
 * is room; NULL if none.  *r: why none was made (a code), if create. */
static struct kj__hittab *table_of(struct kj__hits *h, uid_t uid, int create, int *r)
{
	size_t i;

	if (!h->per_uid)
		return h->n_tabs ? h->tabs[0].tab : NULL;
	for (i = 0; i < h->n_tabs; i++)
		if (h->tabs[i].uid == uid)
			return h->tabs[i].tab;
	if (!create)
		return NULL;
	if (h->n_tabs >= KJ_HITTAB_UIDS_MAX) {
		*r = KJIT_EBUSY;
		return NULL;
	}
	*r = kj__hittab_create(&h->tabs[i].tab, KJ_HITTAB_UID_BYTES, KJ_HITTAB_UID_SLOTS);
	if (*r < 0)
		return NULL;
	h->tabs[i].uid = uid;
	h->n_tabs++;
	return h->tabs[i].tab;
}

void kj__hits_start(struct kj__daemon *d)
{
	struct kj__hits *h;
	int r;

	if (d->cfg.no_hit_table) {
		hits_off(d, "--no-shared-hit-table");
		return;
	}
	if ((h = calloc(1, sizeof *h)) == NULL) {
		hits_off(d, "out of memory");
		return;
	}
	h->ino_fd = -1;
	h->cache_root_wd = -1;
	h->epoch = 1;
	/* Other uids admitted: one table per uid, made at its first ATTACH and
	 * filled only with what that uid was answered (--shared-hit-table, a
	 * single table for every user, is not offered any more). */
	h->per_uid = others_admitted(d);
	if ((h->cache_wd = calloc(CACHE_WATCHES_MAX, sizeof *h->cache_wd)) == NULL) {
		hits_off(d, "out of memory");
		goto fail;
	}
	r = kj__hittab_create(&h->tabs[0].tab, h->per_uid ? KJ_HITTAB_UID_BYTES : KJ_HITTAB_BYTES_MAX,
			      h->per_uid ? KJ_HITTAB_UID_SLOTS : KJ_HITTAB_SLOTS_DEFAULT);
	if (r < 0) {
		hits_off(d, r == KJIT_EIO ? "this kernel cannot seal a memfd (Linux 5.1 or later needed)"
					  : kjit_strerror(r));
		goto fail;
	}
	h->tabs[0].uid = h->per_uid ? geteuid() : UID_ANY; /* the daemon's own uid's: it can seal */
	h->n_tabs = 1;
	h->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (h->ino_fd < 0 || watch_tree(h->ino_fd, d->cfg.kernels_dir, 0) < 0) {
		char why[512];
		snprintf(why, sizeof why, "cannot watch %s for changes (%s)", d->cfg.kernels_dir, strerror(errno));
		hits_off(d, why);
		goto fail;
	}
	if (uv_poll_init(d->loop, &h->poll, h->ino_fd) < 0) {
		hits_off(d, "cannot poll the inotify descriptor");
		goto fail;
	}
	h->poll.data = d;
	h->poll_open = 1;
	d->net->hits = h;
	if (watch_cache(d) < 0)
		kj__log(d, "cannot watch the cache's object directories (%s): a file damaged on disk is noticed "
			   "at its next socket hit only", strerror(errno));
	if (uv_poll_start(&h->poll, UV_READABLE, on_inotify) < 0) {
		hits_off(d, "cannot poll the inotify descriptor");
		kj__hits_stop(d);
		return;
	}
	if (h->per_uid)
		kj__log(d, "shared hit table on, one per uid (other users are admitted): %u uids at most, %u slots and "
			   "%u MiB each at most", (unsigned)KJ_HITTAB_UIDS_MAX, (unsigned)KJ_HITTAB_UID_SLOTS,
			(unsigned)(KJ_HITTAB_UID_BYTES >> 20));
	else
		kj__log(d, "shared hit table on: %u slots, %u MiB at most", kj__hittab_slots(h->tabs[0].tab),
			(unsigned)(KJ_HITTAB_BYTES_MAX >> 20));
	return;
fail:
	kj__hits_free(h);
}

static void on_poll_closed(uv_handle_t *ph)
{
	struct kj__hits *h = ph->data;

	h->poll_open = 0;
}

void kj__hits_stop(struct kj__daemon *d)
{
	struct kj__hits *h = d->net->hits;

	if (h == NULL || !h->poll_open || uv_is_closing((uv_handle_t *)&h->poll))
		return;
	/* From here on nothing watches the kernels: no new puts either. */
	h->epoch++;
	for (size_t i = 0; i < h->n_tabs; i++)
		kj__hittab_invalidate(h->tabs[i].tab);
	h->poll.data = h;
	uv_close((uv_handle_t *)&h->poll, on_poll_closed);
}

void kj__hits_free(struct kj__hits *h)
{
	if (h == NULL)
		return;
	if (h->ino_fd >= 0)
		close(h->ino_fd);
	for (size_t i = 0; i < h->n_tabs; i++)
		kj__hittab_free(h->tabs[i].tab);
	free(h->cache_wd);
	free(h);
}

/* 64 lowercase hex digits into 32 bytes: 0, or -1. */
static int unhex(const char *s, uint8_t out[KJ_SHA256_LEN])
{
	if (strlen(s) != 2 * KJ_SHA256_LEN || strspn(s, "0123456789abcdef") != 2 * KJ_SHA256_LEN)
		return -1;
	for (size_t i = 0; i < KJ_SHA256_LEN; i++) {
		int hi = s[2 * i] <= '9' ? s[2 * i] - '0' : s[2 * i] - 'a' + 10;
		int lo = s[2 * i + 1] <= '9' ? s[2 * i + 1] - '0' : s[2 * i + 1] - 'a' + 10;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static int usable(const struct kj__daemon *d)
{
	return d->net->hits && d->net->hits->poll_open && !uv_is_closing((const uv_handle_t *)&d->net->hits->poll);
}

int kj__hits_on(const struct kj__daemon *d)
{
	return d->net->hits != NULL;
}

uint64_t kj__hits_gen(const struct kj__daemon *d)
{
	return d->net->hits ? d->net->hits->epoch : 0;
}

void kj__hits_put_fp(struct kj__daemon *d, uid_t uid, const uint8_t fp[32], uint64_t gen, const char *key,
		     const char *target, const char *version, const uint8_t *data, size_t size)
{
	uint8_t bkey[KJ_SHA256_LEN];
	struct kj__hittab *t;

	if (!usable(d) || kj__hits_gen(d) != gen || (t = table_of(d->net->hits, uid, 0, NULL)) == NULL ||
	    unhex(key, bkey) < 0)
		return;
	/* KJIT_ETOOBIG (a large object) and KJIT_EINVAL: the socket serves it. */
	kj__hittab_put(t, fp, bkey, target, version, data, size);
}

void kj__hits_put(struct kj__daemon *d, uid_t uid, const uint8_t *body, size_t len, const char *key,
		  const char *target, const char *version, const uint8_t *data, size_t size)
{
	uint8_t fp[KJ_SHA256_LEN];

	if (body == NULL || !usable(d) || table_of(d->net->hits, uid, 0, NULL) == NULL || kj__sha256(body, len, fp) < 0)
		return;
	kj__hits_put_fp(d, uid, fp, kj__hits_gen(d), key, target, version, data, size);
}

void kj__hits_remove_key(struct kj__daemon *d, const char *key)
{
	uint8_t bkey[KJ_SHA256_LEN];

	if (d->net->hits == NULL || unhex(key, bkey) < 0)
		return;
	for (size_t i = 0; i < d->net->hits->n_tabs; i++)
		kj__hittab_remove_key(d->net->hits->tabs[i].tab, bkey);
}

void kj__hits_invalidate(struct kj__daemon *d, const char *why)
{
	struct kj__hits *h = d->net->hits;

	if (h == NULL)
		return;
	h->epoch++;
	for (size_t i = 0; i < h->n_tabs; i++)
		kj__hittab_invalidate(h->tabs[i].tab);
	kj__log(d, "hit table invalidated: %s", why);
}

/* ATTACH from a uid that gets no table of its own (r: KJIT_EBUSY, every
 * one is taken; else why it could not be made): its hits go through the
 * socket.  Said once in the log. */
static void no_table(struct kj__daemon *d, struct kj__conn *c, uint32_t id, int r)
{
	if (!d->net->hits->full_logged) {
		d->net->hits->full_logged = 1;
		if (r == KJIT_EBUSY)
			kj__log(d, "every per-uid hit table is taken (%u uids); the hits of uid %u and any later one go "
				   "through the socket", (unsigned)KJ_HITTAB_UIDS_MAX, (unsigned)kj__conn_uid(c));
		else
			kj__log(d, "cannot make a hit table for uid %u (%s); its hits go through the socket",
				(unsigned)kj__conn_uid(c), kjit_strerror(r));
	}
	kj__conn_error(c, id, KJIT_ENOENT, r == KJIT_EBUSY ? "every per-uid hit table of this kjitd is taken"
							   : "this kjitd has no hit table for you");
}

void kj__hits_attach(struct kj__daemon *d, struct kj__conn *c, uint32_t id)
{
	struct kj__buf b = { 0 };
	struct kj__hitctr *ctr = NULL;
	struct kj__hittab *t;
	int fds[2] = { -1, -1 }, r = 0;

	if (!usable(d)) {
		kj__conn_error(c, id, KJIT_ENOENT, "this kjitd shares no hit table");
		return;
	}
	if (kj__conn_hitctr(c)) {
		kj__conn_error(c, id, KJIT_EINVAL, "this connection is attached already");
		return;
	}
	/* A change made before this client connected is seen before it looks
	 * anything up, whatever order the loop noticed the two in. */
	drain_events(d);
	if ((t = table_of(d->net->hits, kj__conn_uid(c), 1, &r)) == NULL) {
		no_table(d, c, id, r);
		return;
	}
	r = kj__hittab_reader_fd(t, &fds[0]);
	if (r == 0)
		r = kj__hitctr_create(&ctr, kj__hittab_slots(t), &fds[1]);
	if (r == 0 && (kj__msg_begin(&b, KJ_MSG_REPLY, id) < 0 || kj__msg_put_i32(&b, KJ_F_CODE, 0) < 0 ||
		       kj__msg_put_u32(&b, KJ_F_SLOTS, kj__hittab_slots(t)) < 0))
		r = KJIT_ENOMEM;
	if (r < 0) {
		kj__buf_free(&b);
		kj__conn_error(c, id, r, "cannot share the hit table: %s", kjit_strerror(r));
		goto out;
	}
	r = kj__conn_send_fds(c, &b, fds, 2);
	if (r == 0) {
		kj__conn_set_hitctr(c, ctr);
		ctr = NULL;
	} else if (r != KJIT_EIO) {
		kj__conn_error(c, id, r, "cannot send the hit table: %s", kjit_strerror(r));
	}
out:
	kj__hitctr_free(ctr);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

struct harvest_arg {
	struct kj__daemon *d;
	struct kj__hittab *tab;
};

/* Refreshes the object of a slot hit n times: last use (for gc) and its
 * saved compile time. */
static void harvest_slot(void *arg, uint32_t slot, uint32_t n)
{
	struct harvest_arg *a = arg;
	struct kj__daemon *d = a->d;
	uint8_t key[KJ_SHA256_LEN];
	char hex[65];
	const uint8_t *p;
	size_t len;
	uint32_t saved = 0;

	if (a->tab == NULL || !kj__hittab_slot_key(a->tab, slot, key))
		return;
	kj__hex(key, hex);
	if (kj__cache_peek(d->cache, hex, &p, &len, &saved) == 0)
		d->stats[KJ_STAT_SAVED_MS] += (uint64_t)saved * n;
}

void kj__hits_harvest(struct kj__daemon *d, uid_t uid, struct kj__hitctr *ctr)
{
	struct harvest_arg a = { d, d->net->hits ? table_of(d->net->hits, uid, 0, NULL) : NULL };
	uint64_t hits = 0, bytes = 0;

	if (ctr == NULL)
		return;
	kj__hitctr_harvest(ctr, &hits, &bytes, harvest_slot, &a);
	d->stats[KJ_STAT_REQUESTS] += hits;
	d->stats[KJ_STAT_HITS] += hits;
	d->stats[KJ_STAT_FAST_HITS] += hits;
	d->stats[KJ_STAT_BYTES_SERVED] += bytes;
}
