/* remote.c: the fleet tier's front (docs/remote.md): the table of backends
 * chosen by the --remote URL's scheme, the handle that pairs a backend with
 * its own handle, the lease the daemon holds (the backend's, wrapped so a
 * release finds its backend), and the fleet secret file.  Everything a
 * store does is the backend's (remote/redis/ today); the value format is
 * remote-value.c's.
 *
 * Invariants:
 *  - The table below is the one place a backend is named: a new store is a
 *    folder remote/NAME/ and one row here.
 *  - A URL whose scheme no backend takes is refused with the forms the
 *    backends accept, never echoing the URL (it may hold a password).
 *  - A lease handed to the daemon wraps exactly one backend lease; it goes
 *    back through kj__remote_publish or kj__remote_lease_release, which free
 *    the wrapper; a wrapper that cannot be allocated releases the backend's
 *    lease and answers UNAVAILABLE (the node compiles alone).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

/* The backends, by scheme. */
static const struct kj__remote_backend *const backends[] = {
	&kj__remote_redis,
};

struct kj__remote {
	const struct kj__remote_backend *be;
	void *h;
};

struct kj__remote_lease {
	const struct kj__remote_backend *be;
	void *l;
};

/* A lease request on its way through the backend. */
struct lease_req {
	const struct kj__remote_backend *be;
	kj__remote_lease_cb cb;
	void *arg;
};

/* A lookup on its way through the backend. */
struct lookup_req {
	kj__remote_lookup_cb cb;
	void *arg;
};

/* The backend whose scheme starts url ("scheme://"), or NULL. */
static const struct kj__remote_backend *backend_of(const char *url)
{
	const char *colon = url ? strstr(url, "://") : NULL;

	for (size_t i = 0; colon && i < sizeof backends / sizeof backends[0]; i++)
		for (const char *const *s = backends[i]->schemes; *s; s++)
			if (strlen(*s) == (size_t)(colon - url) && strncmp(url, *s, (size_t)(colon - url)) == 0)
				return backends[i];
	return NULL;
}

int kj__remote_url_check(const char *s, char *err, size_t errlen)
{
	const struct kj__remote_backend *be = backend_of(s);

	if (s == NULL || *s == '\0') {
		snprintf(err, errlen, "empty remote URL");
		return KJIT_EINVAL;
	}
	if (be == NULL) {
		size_t off = (size_t)snprintf(err, errlen, "expected");
		for (size_t i = 0; i < sizeof backends / sizeof backends[0] && off < errlen; i++)
			off += (size_t)snprintf(err + off, errlen - off, "%s %s", i ? "," : "", backends[i]->usage);
		return KJIT_EINVAL;
	}
	return be->check_url(s, err, errlen);
}

int kj__remote_new(uv_loop_t *loop, const struct kj__remote_options *opt, struct kj__remote **out, char *err,
		   size_t errlen)
{
	struct kj__remote *r;
	int rc;

	*out = NULL;
	if (opt == NULL || (rc = kj__remote_url_check(opt->url, err, errlen)) < 0)
		return opt == NULL ? KJIT_EINVAL : rc;
	if ((r = calloc(1, sizeof *r)) == NULL)
		return KJIT_ENOMEM;
	r->be = backend_of(opt->url);
	if ((rc = r->be->open(loop, opt, &r->h, err, errlen)) < 0) {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void kj__remote_close(struct kj__remote *r)
{
	if (r == NULL)
		return;
	r->be->close(r->h);
	free(r);
}

int kj__remote_is_up(const struct kj__remote *r)
{
	return r && r->be->is_up(r->h);
}

const char *kj__remote_describe(const struct kj__remote *r)
{
	return r ? r->be->describe(r->h) : "";
}

/* The backend's answer, taken apart for the daemon: one callback. */
static void on_lookup(void *arg, int code, const struct kj__remote_object *obj)
{
	struct lookup_req q = *(struct lookup_req *)arg;
	struct kj__remote_answer a;

	free(arg);
	if (obj == NULL) {
		q.cb(q.arg, code, NULL);
	} else if (kj__remote_answer_make(obj, &a) < 0) {
		q.cb(q.arg, KJIT_ENOMEM, NULL);
	} else {
		q.cb(q.arg, code, &a);
		kj__remote_answer_clear(&a);
	}
}

void kj__remote_lookup(struct kj__remote *r, const char *key, kj__remote_lookup_cb cb, void *arg)
{
	struct lookup_req *q = malloc(sizeof *q);

	if (q == NULL) {
		cb(arg, KJIT_ENOMEM, NULL);
		return;
	}
	*q = (struct lookup_req){ cb, arg };
	r->be->lookup(r->h, key, on_lookup, q);
}

int kj__remote_publish(struct kj__remote *r, const char *key, const struct kj__remote_object *v,
		       struct kj__remote_lease *lease)
{
	void *l = lease ? lease->l : NULL;

	free(lease);
	return r->be->publish(r->h, key, v, l);
}

static void on_lease(void *arg, int outcome, void *l, const struct kj__remote_object *obj)
{
	struct lease_req q = *(struct lease_req *)arg;
	struct kj__remote_lease *lease = NULL;
	struct kj__remote_answer a;

	free(arg);
	if (l && (lease = malloc(sizeof *lease)) == NULL) {
		q.be->lease_release(l);
		outcome = KJ_LEASE_UNAVAILABLE;
	} else if (l) {
		*lease = (struct kj__remote_lease){ q.be, l };
	}
	if (obj == NULL || outcome != KJ_LEASE_PUBLISHED) {
		q.cb(q.arg, outcome, lease, NULL);
	} else if (kj__remote_answer_make(obj, &a) < 0) {
		q.cb(q.arg, KJ_LEASE_UNAVAILABLE, lease, NULL); /* lease is NULL with PUBLISHED */
	} else {
		q.cb(q.arg, outcome, lease, &a);
		kj__remote_answer_clear(&a);
	}
}

void kj__remote_lease(struct kj__remote *r, const char *key, kj__remote_lease_cb cb, void *arg)
{
	struct lease_req *q = malloc(sizeof *q);

	if (q == NULL) {
		cb(arg, KJ_LEASE_UNAVAILABLE, NULL, NULL);
		return;
	}
	*q = (struct lease_req){ r->be, cb, arg };
	r->be->lease(r->h, key, on_lease, q);
}

void kj__remote_lease_release(struct kj__remote_lease *l)
{
	if (l == NULL)
		return;
	l->be->lease_release(l->l);
	free(l);
}

void kj__remote_note_forged(struct kj__remote *r)
{
	if (r)
		r->be->note_forged(r->h);
}

void kj__remote_stats(const struct kj__remote *r, struct kj__remote_stats *s)
{
	r->be->stats(r->h, s);
}

int kj__remote_secret_load(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	struct stat st;
	size_t n = 0;
	int fd = -1, r = KJIT_EINVAL;

	*out = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		goto out;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "%s is owned by uid %u, not by kjitd's uid %u or root", path, (unsigned)st.st_uid,
			 (unsigned)geteuid());
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s is open to its group or others (mode %04o); chmod 600 it", path,
			 (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if (st.st_size < KJ_REMOTE_SECRET_MIN || st.st_size > KJ_REMOTE_SECRET_MAX + 2) {
		snprintf(err, errlen, "%s holds %lld bytes; a fleet secret is %d to %d bytes (`head -c 32 /dev/urandom | "
			 "base64`)", path, (long long)st.st_size, KJ_REMOTE_SECRET_MIN, KJ_REMOTE_SECRET_MAX);
		goto out;
	}
	r = KJIT_ENOMEM;
	if ((buf = malloc((size_t)st.st_size)) == NULL)
		goto out;
	for (ssize_t got; n < (size_t)st.st_size; n += (size_t)got)
		if ((got = read(fd, buf + n, (size_t)st.st_size - n)) <= 0) {
			snprintf(err, errlen, "cannot read %s: %s", path, got == 0 ? "short read" : strerror(errno));
			r = KJIT_EINVAL;
			goto out;
		}
	/* a line written by echo: its newline is not part of the secret */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	r = KJIT_EINVAL;
	if (n < KJ_REMOTE_SECRET_MIN || n > KJ_REMOTE_SECRET_MAX) {
		snprintf(err, errlen, "%s holds %zu bytes; a fleet secret is %d to %d bytes", path, n, KJ_REMOTE_SECRET_MIN,
			 KJ_REMOTE_SECRET_MAX);
		goto out;
	}
	*out = buf;
	*len = n;
	buf = NULL;
	r = 0;
out:
	if (buf) {
		explicit_bzero(buf, (size_t)st.st_size);
		free(buf);
	}
	if (fd >= 0)
		close(fd);
	return r;
}

