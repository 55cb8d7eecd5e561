/* pool.c: the compile workers of one compiler family.
 *
 * Each worker is `kjitd --worker FAMILY` (our own binary re-executed with a
 * role flag, as OpenBSD daemons do), connected by a socketpair on its fd 3,
 * fed one JOB at a time.  Workers start when jobs arrive, up to cfg.jobs.  A
 * job past its timeout gets its worker killed; a worker that dies with a job
 * fails that job alone, with a message saying how it died, and is replaced
 * on demand.  A family whose compiler cannot load (its HELLO carries an
 * error) fails its jobs with that reason instead of restarting forever.
 *
 * Queued jobs wait in one queue per uid, and an idle worker takes the next
 * job round-robin over the uids (then first come, first served within a
 * uid), so a user who queues hundreds of compiles delays another user's
 * compile by at most one job per worker, not by the whole flood.  On
 * shutdown every worker is killed and the loop runs until each one's exit
 * has been collected: no <defunct> child outlives kjitd.
 *
 * Issue 29: a uid holds at most cfg.worker_share percent of cfg.jobs
 * workers (at least one) while another uid waits: an idle worker takes a
 * job of a uid under its share first, and when every worker is busy and
 * one uid is over its share while another waits under it, one more worker
 * starts (at most cfg.jobs more), retired once its job is done while the
 * pool is over cfg.jobs.  A busy worker's timer ticks every
 * KJ_WORKER_TICK_MS: past cfg.compile_timeout_ms the job is killed, and so
 * it is when its worker's process tree used no CPU for cfg.job_idle_ms
 * (workwatch.c).  A worker whose resident size after a job is over
 * cfg.worker_max_rss is replaced.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "daemon.h"
#include "kj_types.h"
#include "util.h"

#define FAIL_STREAK_MAX 3 /* consecutive workers dying before HELLO: give up */

struct worker {
	uv_process_t proc;
	uv_pipe_t pipe;
	uv_timer_t timer;
	struct kj__pool *pool;
	struct worker *next;
	struct kj__frames in;
	struct kj__job *job;      /* the job being compiled, or NULL */
	int hello;                /* HELLO received */
	int ident;                /* IDENT received (a family with a warm-up) */
	int abandoned;            /* killed by us: its exit is expected */
	char tmpdir[256];         /* its private temporary directory, ours to remove */
	uint64_t job_us;          /* when its job began */
	uint64_t cpu, cpu_us;     /* its tree's CPU ticks, and when they last moved (workwatch.c) */
	int exited;
	unsigned handles_open;
};

struct ready_cb {
	struct ready_cb *next;
	void (*fn)(void *arg, int code, const char *error);
	void *arg;
};

struct kj__pool {
	struct kj__daemon *d;
	char *family;
	struct worker *workers;
	unsigned n_workers;
	struct kj__uidq q;            /* the jobs waiting (uidq.c) */
	struct ready_cb *ready_cbs;
	char identity[256];
	char runtime_version[KJ_VERSION_STR_MAX];
	int ready;                /* identity known (an IDENT or a HELLO) */
	int warmed;               /* a worker has said HELLO: it can compile */
	int failed;               /* KJIT_E* when the compiler cannot load */
	uint64_t failed_us;       /* when: a failed pool tries again after a while */
	char failure[512];
	char walls[768];          /* what the last worker's HELLO said of its walls */
	unsigned fail_streak;
	int shutting_down;
	struct kj__pool_stats st;
};

static void dispatch(struct kj__pool *p);

/* Workers lead their own process group (compilers/worker.c), so a kill
 * reaches whatever they started too (hipcc's clang). */
static void worker_kill(struct worker *w)
{
	if (w->proc.pid > 0)
		kill(-w->proc.pid, SIGKILL);
	uv_process_kill(&w->proc, SIGKILL);
}

static void run_ready_cbs(struct kj__pool *p, int code, const char *error)
{
	while (p->ready_cbs) {
		struct ready_cb *cb = p->ready_cbs;
		p->ready_cbs = cb->next;
		cb->fn(cb->arg, code, error);
		free(cb);
	}
}

/* How many workers uid's jobs hold; and the most workers one uid may
 * hold while another waits. */
static unsigned held_by(const struct kj__pool *p, uid_t uid)
{
	unsigned n = 0;

	for (const struct worker *w = p->workers; w; w = w->next)
		n += w->job && w->job->uid == uid;
	return n;
}

static unsigned share_of(const struct kj__pool *p)
{
	unsigned s = p->d->cfg.jobs * p->d->cfg.worker_share / 100;

	return s ? s : 1;
}

/* Is uid under its share of the workers (queue_pop's preference)? */
static int under_share(void *arg, uid_t uid)
{
	struct kj__pool *p = arg;

	return held_by(p, uid) < share_of(p);
}

/* Takes the next job fairly (uidq.c): the oldest of the first uid in the
 * ring under its share of the workers, else of the first uid.  NULL when
 * none is queued. */
static struct kj__job *queue_pop(struct kj__pool *p)
{
	return kj__uidq_pop(&p->q, under_share, p);
}

static void fail_queue(struct kj__pool *p, int code, const char *error)
{
	struct kj__job *job;

	while ((job = queue_pop(p)) != NULL)
		job->done(job, code, NULL, error);
}

static void worker_unlink(struct worker *w)
{
	struct kj__pool *p = w->pool;

	for (struct worker **pp = &p->workers; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			p->n_workers--;
			return;
		}
	}
}

static void on_worker_handle_closed(uv_handle_t *h)
{
	struct worker *w = h->data;

	if (--w->handles_open == 0) {
		int r = w->tmpdir[0] ? kj__rm_rf(w->tmpdir) : 0;
		if (r < 0)
			kj__log(w->pool->d, "cannot remove worker directory %s: %s", w->tmpdir, strerror(-r));
		kj__frames_free(&w->in);
		free(w);
	}
}

static void worker_close(struct worker *w)
{
	if (!uv_is_closing((uv_handle_t *)&w->pipe))
		uv_close((uv_handle_t *)&w->pipe, on_worker_handle_closed);
	if (!uv_is_closing((uv_handle_t *)&w->timer))
		uv_close((uv_handle_t *)&w->timer, on_worker_handle_closed);
	if (w->exited && !uv_is_closing((uv_handle_t *)&w->proc))
		uv_close((uv_handle_t *)&w->proc, on_worker_handle_closed);
}

/* The worker is gone or unusable: fail its job with why, drop it. */
static void worker_lost(struct worker *w, int code, const char *why)
{
	struct kj__pool *p = w->pool;
	struct kj__job *job = w->job;

	w->job = NULL;
	if (job)
		job->done(job, code, NULL, why);
	worker_unlink(w);
	if (!w->exited) {
		w->abandoned = 1;
		worker_kill(w);
	}
	worker_close(w);
	p->st.alive = p->n_workers;
	dispatch(p);
}

/* A busy worker's tick: the compile timeout, and the time without CPU
 * progress of its process tree. */
static void on_tick(uv_timer_t *t)
{
	struct worker *w = t->data;
	struct kj__pool *p = w->pool;
	uint64_t now = kj__now_us(), cpu;
	char why[320];

	if (w->job == NULL)
		return;
	if (now - w->job_us >= (uint64_t)p->d->cfg.compile_timeout_ms * 1000) {
		snprintf(why, sizeof why, "compile timed out after %u ms; its %s worker (pid %d) was killed and will be replaced",
			 p->d->cfg.compile_timeout_ms, p->family, w->proc.pid);
	} else if (kj__proc_tree_cpu(w->proc.pid, &cpu) < 0 || cpu != w->cpu) {
		w->cpu = cpu;
		w->cpu_us = now;
		return;
	} else if (now - w->cpu_us < (uint64_t)p->d->cfg.job_idle_ms * 1000) {
		return;
	} else {
		snprintf(why, sizeof why, "compile used no CPU for %u ms (blocked reading or waiting on something); its %s "
			 "worker (pid %d) was killed and will be replaced (--job-idle-timeout)",
			 p->d->cfg.job_idle_ms, p->family, w->proc.pid);
	}
	p->st.timeouts++;
	kj__log(p->d, "%s", why);
	worker_lost(w, KJIT_ETIMEDOUT, why);
}

/* After a job: a worker over cfg.worker_max_rss, or one more than
 * cfg.jobs, is retired (killed; a new one starts on demand).  1 if so. */
static int retire(struct worker *w)
{
	struct kj__pool *p = w->pool;
	uint64_t rss = 0;

	if (p->n_workers <= p->d->cfg.jobs &&
	    (kj__proc_rss(w->proc.pid, &rss) < 0 || rss <= p->d->cfg.worker_max_rss))
		return 0;
	if (rss)
		kj__log(p->d, "a %s worker (pid %d) kept %llu MiB after its job, over --worker-max-rss %llu MiB: replaced",
			p->family, w->proc.pid, (unsigned long long)(rss >> 20),
			(unsigned long long)(p->d->cfg.worker_max_rss >> 20));
	worker_lost(w, 0, NULL);
	return 1;
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int sig)
{
	struct worker *w = proc->data;
	struct kj__pool *p = w->pool;
	char why[256];

	w->exited = 1;
	if (w->abandoned || p->shutting_down || (sig == 0 && w->job == NULL && status == 0)) {
		if (!uv_is_closing((uv_handle_t *)&w->proc))
			uv_close((uv_handle_t *)&w->proc, on_worker_handle_closed);
		return;
	}
	if (sig)
		snprintf(why, sizeof why, "the %s compiler crashed (signal %d, %s)%s; its worker was replaced",
			 p->family, sig, strsignal(sig), w->job ? " while compiling this source" : "");
	else
		snprintf(why, sizeof why, "the %s worker exited with status %lld%s; it was replaced",
			 p->family, (long long)status, w->job ? " while compiling this source" : "");
	kj__log(p->d, "worker pid %d: %s", proc->pid, why);
	p->st.crashed++;
	if (!w->hello && ++p->fail_streak >= FAIL_STREAK_MAX && !p->warmed) {
		p->failed = KJIT_EBACKEND;
		p->failed_us = kj__now_us();
		snprintf(p->failure, sizeof p->failure, "the %s compiler cannot start: %s", p->family, why);
	}
	int in_list = 0;
	for (struct worker *x = p->workers; x; x = x->next)
		in_list |= x == w;
	if (in_list) {
		worker_lost(w, KJIT_EWORKER, why);
	} else if (!uv_is_closing((uv_handle_t *)&w->proc)) {
		uv_close((uv_handle_t *)&w->proc, on_worker_handle_closed);
	}
	if (p->failed) {
		run_ready_cbs(p, p->failed, p->failure);
		fail_queue(p, p->failed, p->failure);
	}
}

/* The compiler's identity, from a worker's IDENT or HELLO: the first makes
 * the pool ready (keys and hits go on); a later one that differs means the
 * compiler changed under kjitd. */
static void take_identity(struct kj__pool *p, const char *id, const char *ver)
{
	if (!p->ready) {
		snprintf(p->identity, sizeof p->identity, "%s", id);
		snprintf(p->runtime_version, sizeof p->runtime_version, "%s", ver && *ver ? ver : "unknown");
		p->ready = 1;
		kj__log(p->d, "%s ready: %s, runtime %s", p->family, p->identity, p->runtime_version);
		run_ready_cbs(p, 0, NULL);
	} else if (strcmp(p->identity, id) != 0) {
		kj__log(p->d, "%s worker reports a different compiler (%s, was %s): the compiler was upgraded under us; restart kjitd",
			p->family, id, p->identity);
		kj__hits_invalidate(p->d, "a compiler changed");
	}
}

/* The compiler cannot load (a HELLO's CODE, or no identity in a HELLO or
 * an IDENT): the pool fails with why (tried again after KJ_POOL_RETRY_MS),
 * its waiters and queue are told, the worker is dropped. */
static void fail_load(struct worker *w, int code, const char *why)
{
	struct kj__pool *p = w->pool;

	p->failed = code;
	p->failed_us = kj__now_us();
	snprintf(p->failure, sizeof p->failure, "%s", why);
	kj__log(p->d, "%s worker: %s", p->family, p->failure);
	run_ready_cbs(p, p->failed, p->failure);
	fail_queue(p, p->failed, p->failure);
	worker_lost(w, p->failed, p->failure);
}

/* IDENT: the identity before the worker's warm-up (its HELLO follows).
 * One without an identity fails the pool as such a HELLO does: replacing
 * the worker alone would start workers without end while requests wait
 * for an identity that never comes. */
static void handle_ident(struct worker *w, const struct kj__msg *m)
{
	char *id = NULL, *ver = NULL;

	w->ident = 1;
	kj__field_strdup(kj__msg_get(m, KJ_F_COMPILER_VERSION), 255, &id);
	kj__field_strdup(kj__msg_get(m, KJ_F_VERSION), KJ_VERSION_STR_MAX - 1, &ver);
	if (id == NULL)
		fail_load(w, KJIT_EBACKEND, "the compile worker sent an IDENT without a valid identity");
	else
		take_identity(w->pool, id, ver);
	free(id);
	free(ver);
}

static void handle_hello(struct worker *w, const struct kj__msg *m)
{
	struct kj__pool *p = w->pool;
	int32_t code = KJIT_EPROTO;
	char *id = NULL, *ver = NULL, *err = NULL;

	kj__field_i32(kj__msg_get(m, KJ_F_CODE), &code);
	kj__field_strdup(kj__msg_get(m, KJ_F_COMPILER_VERSION), 255, &id);
	kj__field_strdup(kj__msg_get(m, KJ_F_VERSION), KJ_VERSION_STR_MAX - 1, &ver);
	kj__field_strdup(kj__msg_get(m, KJ_F_ERROR), 400, &err);
	const struct kj__field *walls = kj__msg_get(m, KJ_F_TEXT);
	if (walls)
		snprintf(p->walls, sizeof p->walls, "%.*s", (int)(walls->len < 767 ? walls->len : 767),
			 (const char *)walls->p);
	w->hello = 1;
	if (code < 0 || id == NULL) {
		fail_load(w, code < 0 ? code : KJIT_EBACKEND, err ? err : "the compiler failed to load");
		goto out;
	}
	p->fail_streak = 0;
	p->warmed = 1;
	take_identity(p, id, ver);
	dispatch(p);
out:
	free(id);
	free(ver);
	free(err);
}

static void handle_frame(struct worker *w, const struct kj__frame_hdr *h, const uint8_t *body)
{
	struct kj__pool *p = w->pool;
	struct kj__msg m;
	int r = kj__msg_decode(body, h->len, &m);

	if (r < 0) {
		worker_lost(w, KJIT_EWORKER, "the compile worker sent a malformed reply; it was replaced");
		return;
	}
	if (h->type == KJ_MSG_IDENT && !w->hello && !w->ident) {
		handle_ident(w, &m);
	} else if (h->type == KJ_MSG_HELLO && !w->hello) {
		handle_hello(w, &m);
	} else if (h->type == KJ_MSG_RESULT && w->job && h->id == w->job->id) {
		struct kj__job *job = w->job;
		w->job = NULL;
		uv_timer_stop(&w->timer);
		p->st.busy--;
		job->done(job, 0, &m, NULL);
		if (!retire(w)) /* else worker_lost dispatched */
			dispatch(p);
	} else {
		worker_lost(w, KJIT_EWORKER, "the compile worker sent an unexpected message; it was replaced");
	}
	kj__msg_free(&m);
}

static void worker_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct worker *w = h->data;
	kj__framer_alloc(&w->in, suggested, buf);
}

static void worker_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct worker *w = s->data;
	struct kj__frame_hdr h;
	const uint8_t *body;
	int r;

	(void)buf;
	if (nread < 0) {
		/* EOF: the exit callback says how it died. */
		uv_read_stop(s);
		return;
	}
	kj__frames_wrote(&w->in, (size_t)nread);
	while ((r = kj__frames_next(&w->in, &h, &body)) != 0) {
		if (r < 0) {
			worker_lost(w, KJIT_EWORKER, "the compile worker broke the protocol; it was replaced");
			return;
		}
		int lost = 0;
		struct worker *x;
		handle_frame(w, &h, body);
		for (x = w->pool->workers; x && x != w; x = x->next)
			;
		lost = x == NULL;
		if (lost)
			return;
		kj__frames_consume(&w->in);
	}
}

/* A job on its way to a worker.  The frame is copied: the job (and its
 * flight) may be gone before libuv has written it, if the worker dies. */
struct job_write {
	uv_write_t req;
	uint8_t bytes[];
};

static void on_job_written(uv_write_t *req, int status)
{
	(void)status; /* a worker that cannot be written to dies: its exit says why */
	free(req);
}

static int send_job(struct worker *w, const struct kj__job *job)
{
	uv_buf_t ub = uv_buf_init((char *)job->frame.p, (unsigned)job->frame.len);

	/* Most jobs fit the socket buffer whole; large sources go through uv_write. */
	int n = uv_try_write((uv_stream_t *)&w->pipe, &ub, 1);
	if (n == (int)job->frame.len)
		return 0;
	if (n < 0 && n != UV_EAGAIN)
		return KJIT_EIO;
	size_t done = n > 0 ? (size_t)n : 0, rest = job->frame.len - done;
	struct job_write *jw = malloc(sizeof *jw + rest);
	if (jw == NULL)
		return KJIT_ENOMEM;
	memcpy(jw->bytes, job->frame.p + done, rest);
	ub = uv_buf_init((char *)jw->bytes, (unsigned)rest);
	if (uv_write(&jw->req, (uv_stream_t *)&w->pipe, &ub, 1, on_job_written) < 0) {
		free(jw);
		return KJIT_EIO;
	}
	return 0;
}

static int worker_spawn(struct kj__pool *p)
{
	struct kj__daemon *d = p->d;
	struct worker *w = calloc(1, sizeof *w);
	uv_process_options_t o = { 0 };
	uv_stdio_container_t stdio[4];
	char *args[] = { d->cfg.self_exe, "--worker", p->family, NULL };
	char **env = NULL;
	int r = KJIT_ENOMEM;

	if (w == NULL)
		return KJIT_ENOMEM;
	w->pool = p;
	if (uv_pipe_init(d->loop, &w->pipe, 0) < 0 || uv_timer_init(d->loop, &w->timer) < 0)
		goto fail_early;
	w->pipe.data = w->timer.data = w->proc.data = w;
	w->handles_open = 2;
	/* Under the cache, which only this daemon holds: a start-up after a
	 * crash removes what killed workers left there. */
	snprintf(w->tmpdir, sizeof w->tmpdir, "%s/tmp/worker-XXXXXX", d->cfg.cache_dir);
	if (mkdtemp(w->tmpdir) == NULL) {
		kj__log(d, "cannot create a worker directory %s: %s", w->tmpdir, strerror(errno));
		w->tmpdir[0] = '\0';
		r = KJIT_EIO;
		goto fail;
	}
	env = kj__worker_env(d->cfg.worker_user, w->tmpdir);
	if (env == NULL)
		goto fail;
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_IGNORE;
	stdio[2].flags = UV_INHERIT_FD; /* compilers' own complaints reach the daemon log */
	stdio[2].data.fd = kj__log_fd(d);
	stdio[3].flags = UV_CREATE_PIPE | UV_READABLE_PIPE | UV_WRITABLE_PIPE;
	stdio[3].data.stream = (uv_stream_t *)&w->pipe;
	o.file = d->cfg.self_exe;
	o.args = args;
	o.env = env;
	o.stdio = stdio;
	o.stdio_count = 4;
	o.exit_cb = on_exit_cb;
	r = uv_spawn(d->loop, &w->proc, &o);
	if (r < 0) {
		kj__log(d, "cannot start a %s worker (%s): %s", p->family, d->cfg.self_exe, uv_strerror(r));
		r = KJIT_EWORKER;
		goto fail;
	}
	w->handles_open = 3;
	if (uv_read_start((uv_stream_t *)&w->pipe, worker_alloc, worker_read) < 0) {
		worker_kill(w);
		w->next = p->workers;
		p->workers = w;
		p->n_workers++;
		worker_lost(w, KJIT_EWORKER, "cannot read from a new worker");
		r = KJIT_EWORKER;
		goto out;
	}
	w->next = p->workers;
	p->workers = w;
	p->n_workers++;
	p->st.started++;
	p->st.alive = p->n_workers;
	r = 0;
	goto out;
fail:
	worker_close(w);
	w = NULL;
	goto out;
fail_early:
	free(w);
out:
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
	return r;
}

static void dispatch(struct kj__pool *p)
{
	if (p->shutting_down)
		return;
	if (p->failed) {
		fail_queue(p, p->failed, p->failure);
		return;
	}
	/* Hand queued jobs to idle workers that said hello. */
	for (struct worker *w = p->workers; w && p->q.n; w = w->next) {
		if (!w->hello || w->job || w->exited)
			continue;
		struct kj__job *job = queue_pop(p);
		w->job = job;
		if (send_job(w, job) < 0) {
			worker_lost(w, KJIT_EWORKER, "could not hand the job to its worker; it was replaced");
			return;
		}
		p->st.busy++;
		w->job_us = w->cpu_us = kj__now_us();
		w->cpu = 0;
		uv_timer_start(&w->timer, on_tick, KJ_WORKER_TICK_MS, KJ_WORKER_TICK_MS);
	}
	/* Start more workers while jobs wait and there is room; one more past
	 * cfg.jobs for a uid waiting under its share while all are busy. */
	unsigned starting = 0;
	for (struct worker *w = p->workers; w; w = w->next)
		starting += !w->hello;
	size_t waiting = p->q.n;
	unsigned room = p->d->cfg.jobs + (starting == 0 && kj__uidq_any(&p->q, under_share, p) ? 1 : 0);
	while (waiting > starting && p->n_workers < room && p->n_workers < 2 * p->d->cfg.jobs) {
		if (worker_spawn(p) < 0) {
			if (p->n_workers == 0)
				fail_queue(p, KJIT_EWORKER, "cannot start a compile worker; see the kjitd log");
			return;
		}
		starting++;
	}
}

int kj__pool_new(struct kj__daemon *d, const char *family, struct kj__pool **out)
{
	struct kj__pool *p = calloc(1, sizeof *p);

	if (p == NULL || (p->family = kj__strdup(family)) == NULL) {
		free(p);
		return KJIT_ENOMEM;
	}
	p->d = d;
	*out = p;
	return 0;
}

/* A compiler that failed to start may start later (a package upgrade
 * replaced files under it): clear the failure once it is old enough. */
static void maybe_retry(struct kj__pool *p)
{
	if (p->failed && kj__now_us() - p->failed_us >= (uint64_t)KJ_POOL_RETRY_MS * 1000) {
		kj__log(p->d, "%s: trying the compiler again after: %s", p->family, p->failure);
		p->failed = 0;
		p->fail_streak = 0;
	}
}

void kj__pool_submit(struct kj__pool *p, struct kj__job *job)
{
	maybe_retry(p);
	if (p->shutting_down) {
		job->done(job, KJIT_ESHUTDOWN, NULL, "kjitd is shutting down");
		return;
	}
	if (p->failed) {
		job->done(job, p->failed, NULL, p->failure);
		return;
	}
	job->queued_us = kj__now_us();
	if (kj__uidq_push(&p->q, job) < 0) {
		job->done(job, KJIT_ENOMEM, NULL, "kjitd is out of memory; retry later");
		return;
	}
	p->st.queued++;
	dispatch(p);
}

void kj__pool_when_ready(struct kj__pool *p, void (*fn)(void *arg, int code, const char *error), void *arg)
{
	maybe_retry(p);
	if (p->ready || p->failed) {
		fn(arg, p->ready ? 0 : p->failed, p->ready ? NULL : p->failure);
		return;
	}
	struct ready_cb *cb = calloc(1, sizeof *cb);
	if (cb == NULL) {
		fn(arg, KJIT_ENOMEM, "out of memory");
		return;
	}
	cb->fn = fn;
	cb->arg = arg;
	cb->next = p->ready_cbs;
	p->ready_cbs = cb;
	/* A worker must exist to say hello. */
	if (p->n_workers == 0 && worker_spawn(p) < 0) {
		p->failed = KJIT_EWORKER;
		p->failed_us = kj__now_us();
		snprintf(p->failure, sizeof p->failure, "cannot start a %s worker; see the kjitd log", p->family);
		run_ready_cbs(p, p->failed, p->failure);
	}
}

const char *kj__pool_identity(const struct kj__pool *p) { return p->identity; }
const char *kj__pool_runtime_version(const struct kj__pool *p) { return p->runtime_version; }
const char *kj__pool_family(const struct kj__pool *p) { return p->family; }
const char *kj__pool_walls(const struct kj__pool *p) { return p->walls; }

void kj__pool_stats(const struct kj__pool *p, struct kj__pool_stats *s)
{
	*s = p->st;
	s->alive = p->n_workers;
}

void kj__pool_shutdown(struct kj__pool *p)
{
	p->shutting_down = 1;
	run_ready_cbs(p, KJIT_ESHUTDOWN, "kjitd is shutting down");
	fail_queue(p, KJIT_ESHUTDOWN, "kjitd is shutting down");
	while (p->workers) {
		struct worker *w = p->workers;
		struct kj__job *job = w->job;
		w->job = NULL;
		if (job)
			job->done(job, KJIT_ESHUTDOWN, NULL, "kjitd is shutting down");
		worker_unlink(w);
		if (!w->exited)
			worker_kill(w);
		worker_close(w);
	}
}

void kj__pool_free(struct kj__pool *p)
{
	if (p == NULL)
		return;
	free(p->family);
	free(p);
}
