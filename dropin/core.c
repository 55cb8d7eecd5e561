/* core.c: what both drop-in libraries share: the program record, the
 * connections to kjitd, one compile through kjitd, and the counters.
 *
 * The NVRTC and hiprtc APIs have no context handle, so the connections are
 * process state: a small free list of kjit_client handles behind one mutex
 * (a kjit_client is not thread-safe; a compiling thread takes one, or opens
 * one when none is free, and gives it back).  After a fork the child drops
 * its parent's list.  When kjitd cannot be reached, compiles go to the real
 * library for KJ_DROPIN_RETRY_MS before the next attempt, so a program
 * without a daemon pays one failed connect per second, not per compile.
 * Invariants: the list is touched only under the mutex; a handle is used by
 * one thread at a time; nothing here ever changes what a compile answers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ccopts.h"
#include "client_int.h"
#include "dropin.h"
#include "dropstat.h"
#include "objcheck.h"
#include "util.h"
#include "kj_limits.h"

static struct {
	pthread_mutex_t mu;
	kjit_client *idle[KJ_DROPIN_CLIENTS];
	int n_idle;
	pid_t pid;
	long long down_until_ms; /* monotonic: no connect attempt before this */
	int down_why;            /* why then: KJ_DS_UNREACHABLE or KJ_DS_UNTRUSTED */
} conns = { .mu = PTHREAD_MUTEX_INITIALIZER };

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double kj__dp_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *dup_or_null(const char *s, int *bad)
{
	char *d = s ? strdup(s) : NULL;
	if (s && d == NULL)
		*bad = 1;
	return d;
}

int kj__dp_prog_new(struct kj__dp_prog **out, const char *src, const char *name, int n,
		    const char *const *hdrs, const char *const *names)
{
	struct kj__dp_prog *p = calloc(1, sizeof *p);
	int bad = 0;

	*out = NULL;
	if (p == NULL)
		return KJIT_ENOMEM;
	p->magic = KJ_DP_MAGIC;
	p->src = dup_or_null(src, &bad);
	p->name = dup_or_null(name, &bad);
	if (n > 0) {
		p->hdr_data = calloc((size_t)n, sizeof *p->hdr_data);
		p->hdr_names = calloc((size_t)n, sizeof *p->hdr_names);
		bad |= p->hdr_data == NULL || p->hdr_names == NULL;
		for (int i = 0; !bad && i < n; i++, p->n_headers++) {
			p->hdr_data[i] = dup_or_null(hdrs ? hdrs[i] : NULL, &bad);
			p->hdr_names[i] = dup_or_null(names ? names[i] : NULL, &bad);
		}
	}
	if (bad) {
		kj__dp_prog_free(p);
		return KJIT_ENOMEM;
	}
	*out = p;
	return 0;
}

void kj__dp_prog_reset(struct kj__dp_prog *p)
{
	kjit_result_free(&p->res);
	kjit_result_free(&p->ptx);
	memset(&p->res, 0, sizeof p->res);
	memset(&p->ptx, 0, sizeof p->ptx);
	for (int i = 0; i < p->n_opts; i++)
		free(p->opts[i]);
	free(p->opts);
	free(p->target);
	p->opts = NULL;
	p->n_opts = 0;
	p->target = NULL;
	kj__headers_free(p->inc, p->n_inc);
	p->inc = NULL;
	p->n_inc = 0;
	p->ptx_state = 0;
	p->res_is_ptx = 0;
	p->state = KJ_DP_NEW;
}

void kj__dp_prog_free(struct kj__dp_prog *p)
{
	if (p == NULL)
		return;
	kj__dp_prog_reset(p);
	for (int i = 0; i < p->n_headers; i++) {
		free(p->hdr_data[i]);
		free(p->hdr_names[i]);
	}
	for (int i = 0; i < p->n_exprs; i++)
		free(p->exprs[i]);
	free(p->hdr_data);
	free(p->hdr_names);
	free(p->exprs);
	free(p->src);
	free(p->name);
	p->magic = 0;
	free(p);
}

struct kj__dp_prog *kj__dp_prog_check(void *v)
{
	struct kj__dp_prog *p = v;
	return p && p->magic == KJ_DP_MAGIC ? p : NULL;
}

int kj__dp_prog_add_expr(struct kj__dp_prog *p, const char *expr)
{
	char **e = realloc(p->exprs, sizeof *e * (size_t)(p->n_exprs + 1));
	if (e == NULL)
		return KJIT_ENOMEM;
	p->exprs = e;
	if ((e[p->n_exprs] = strdup(expr)) == NULL)
		return KJIT_ENOMEM;
	p->n_exprs++;
	return 0;
}

/* A connection to kjitd: an idle one, or a new one.  NULL with *why set
 * when kjitd cannot be reached (or was not, moments ago). */
static kjit_client *client_take(int *why)
{
	kjit_client *c = NULL;

	pthread_mutex_lock(&conns.mu);
	if (conns.pid != getpid()) {
		for (int i = 0; i < conns.n_idle; i++)
			kjit_close(conns.idle[i]);
		conns.n_idle = 0;
		conns.down_until_ms = 0;
		conns.pid = getpid();
	}
	if (conns.n_idle > 0)
		c = conns.idle[--conns.n_idle];
	int down = c == NULL && now_ms() < conns.down_until_ms;
	pthread_mutex_unlock(&conns.mu);
	if (c || down) {
		*why = c ? KJ_DS_UNREACHABLE : conns.down_why;
		return c;
	}
	if (kjit_open(&c, NULL) < 0) {
		/* EPERM: a daemon libkjit does not trust (client/trust.c) */
		*why = kj__last_open_errno() == EPERM ? KJ_DS_UNTRUSTED : KJ_DS_UNREACHABLE;
		pthread_mutex_lock(&conns.mu);
		conns.down_until_ms = now_ms() + KJ_DROPIN_RETRY_MS;
		conns.down_why = *why;
		pthread_mutex_unlock(&conns.mu);
		return NULL;
	}
	return c;
}

static void client_give(kjit_client *c, int broken)
{
	pthread_mutex_lock(&conns.mu);
	if (!broken && conns.pid == getpid() && conns.n_idle < KJ_DROPIN_CLIENTS) {
		conns.idle[conns.n_idle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&conns.mu);
	kjit_close(c);
}

/* Checks kjitd's answer before a program gets it (client/objcheck.c):
 * 0, or KJIT_ECORRUPT with res holding only the error and *why
 * KJ_DS_BAD_OUTPUT, so the caller forwards to the real library. */
static int checked(int backend, const char *target, kjit_result *res, int *why)
{
	char bad[160];

	if (kj__object_check(backend, target, res->data, res->size, bad, sizeof bad) == 0)
		return 0;
	kjit_result_free(res);
	memset(res, 0, sizeof *res);
	res->error = kj__asprintf("kjitd's answer for %s is %s", target, bad);
	*why = KJ_DS_BAD_OUTPUT;
	return KJIT_ECORRUPT;
}

int kj__dp_fetch(const struct kj__dp_prog *p, int backend, const char *compiler, const char *target,
		 const char *const *opts, int n_opts, kjit_result *res, int *why)
{
	kjit_header *h = NULL;
	kjit_request rq;
	int r;

	memset(res, 0, sizeof *res);
	if (p->inc == NULL && p->n_headers > 0 && (h = calloc((size_t)p->n_headers, sizeof *h)) == NULL) {
		*why = KJ_DS_REFUSED;
		return KJIT_ENOMEM;
	}
	for (int i = 0; h && i < p->n_headers; i++)
		h[i] = (kjit_header){ p->hdr_names[i], p->hdr_data[i], strlen(p->hdr_data[i]) };
	memset(&rq, 0, sizeof rq);
	rq.backend = backend;
	rq.compiler = compiler;
	rq.target = target;
	rq.source = p->src;
	rq.source_size = strlen(p->src);
	rq.source_name = p->name ? p->name : "default_program";
	rq.options = opts;
	rq.n_options = (size_t)n_opts;
	rq.headers = p->inc ? p->inc : h;
	rq.n_headers = p->inc ? p->n_inc : (size_t)p->n_headers;
	rq.no_env = 1;
	rq.name_expressions = (const char *const *)p->exprs;
	rq.n_name_expressions = (size_t)p->n_exprs;
	kjit_client *c = client_take(why);
	if (c == NULL) {
		free(h);
		return KJIT_ECONNECT;
	}
	r = kj__get_flags(c, &rq, KJ_GET_WANT_LOG, res);
	client_give(c, r == KJIT_ECONNECT || r == KJIT_EPROTO || r == KJIT_EIO || r == KJIT_ETIMEDOUT);
	free(h);
	*why = r == KJIT_ECONNECT ? KJ_DS_UNREACHABLE : r == 0 ? KJ_DS_SERVED : KJ_DS_REFUSED;
	return r == 0 ? checked(backend, target, res, why) : r;
}

void kj__dp_count(const char *lib, int why, const char *detail)
{
	const char *dbg = getenv("KJIT_DROPIN_DEBUG");

	kj__dropstat_add(why);
	while (detail && *detail == ' ')
		detail++;
	if (dbg && strcmp(dbg, "1") == 0)
		fprintf(stderr, "kjit %s: %s%s %s\n", lib, why == KJ_DS_SERVED ? "" : "forwarded to the real library: ",
			kj__dropstat_name(why), detail ? detail : "");
}
