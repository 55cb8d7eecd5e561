/* worker.c: the compile worker process (`kjitd --worker FAMILY`): one
 * compiler family, fed one job at a time over fd (a pipe or socketpair to
 * kjitd), in the framing of common/proto.h.
 *
 * Order of events: sandbox (no core files, file size and address space
 * capped, no_new_privs, SIGKILL on parent death, every fd but 0, 1, 2 and fd
 * closed, own process group so kjitd can kill(-pid) the worker with any
 * hipcc children), then the walls (compilers/walls.c: namespaces, a root of
 * the family's trees, an unprivileged uid; the process that goes on is PID 1
 * of its own PID namespace), then the compiler's init, then, for a family
 * with a warm-up, IDENT {COMPILER, COMPILER_VERSION, VERSION} and the
 * warm-up (a failed one is the HELLO's CODE), then Landlock and seccomp,
 * then HELLO {CODE, COMPILER, COMPILER_VERSION, VERSION, ERROR, TEXT: what
 * the walls are}, then JOB -> RESULT with the JOB's frame id (both encoded
 * and decoded by common/jobmsg.c), until fd reaches end of file
 * (exit 0).  A frame that is not a JOB, or a malformed frame, ends the
 * worker (exit 2): kjitd is the only peer and never sends one.  A JOB whose
 * fields are bad gets a RESULT with KJIT_EINVAL / KJIT_ETOOBIG and the
 * worker keeps serving.  Before each job RLIMIT_CPU is set to the CPU time
 * used so far plus the compile timeout plus a margin, so a compiler that
 * spins dies of SIGXCPU even if kjitd's own timer were late.  Each job runs
 * in a fresh directory of the worker's directory at a fixed path, /tmp/job
 * inside the walls (TMPDIR and the working directory point at it; the
 * families that write files compile there: job->dir), so the same request
 * gives the same bytes on any node and in any run; after it, every process
 * it started is killed and reaped and the directory emptied, before its
 * RESULT is sent.
 *
 * The worker never opens the socket or the cache; it only compiles.
 */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "proto.h"
#include "util.h"

#define WORKER_CPU_MARGIN_S 5 /* RLIMIT_CPU slack past the compile timeout */
#define WORKER_EXIT_PROTO 2   /* exit status: the peer broke the protocol */

/* Closes every descriptor above 2 except keep. */
static void close_fds(int keep)
{
#ifdef SYS_close_range
	int ok = 1;
	if (keep > 3)
		ok = syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0;
	if (ok && syscall(SYS_close_range, (unsigned)(keep < 3 ? 3 : keep + 1), ~0u, 0u) == 0)
		return;
#endif
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL) {
		for (int fd = 3; fd < 65536; fd++)
			if (fd != keep)
				close(fd);
		return;
	}
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd > 2 && fd != keep && fd != self)
			close(fd);
	}
	closedir(d);
}

/* Sets the soft limit of res to v (never above the hard one); with hard,
 * the hard limit too, so the compiler cannot raise it back. */
static int set_limit(int res, rlim_t v, int hard)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) < 0)
		return -errno;
	if (rl.rlim_max != RLIM_INFINITY && v > rl.rlim_max)
		v = rl.rlim_max;
	rl.rlim_cur = v;
	if (hard)
		rl.rlim_max = v;
	return setrlimit(res, &rl) < 0 ? -errno : 0;
}

/* Drops what a worker does not need before it touches a job.  Returns 0,
 * or -errno with what failed in err. */
static int sandbox(int fd, char *err, size_t errlen)
{
	const char *what = NULL;
	int r = 0;

	if ((r = set_limit(RLIMIT_CORE, 0, 1)) < 0)
		what = "RLIMIT_CORE";
	else if ((r = set_limit(RLIMIT_FSIZE, KJ_WORKER_FSIZE_MAX, 1)) < 0)
		what = "RLIMIT_FSIZE";
	else if (!KJ_UNDER_ASAN && (r = set_limit(RLIMIT_AS, KJ_WORKER_AS_MAX, 1)) < 0)
		what = "RLIMIT_AS"; /* (ASan reserves terabytes of shadow address space) */
	else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		what = "prctl", r = -errno;
	else if (setpgid(0, 0) < 0)
		what = "setpgid", r = -errno;
	if (what) {
		snprintf(err, errlen, "worker sandbox: %s: %s", what, strerror(-r));
		return r;
	}
	close_fds(fd);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The worker's private temporary directory, the only place it may write:
 * KJIT_WORKER_TMPDIR, which kjitd creates before the spawn and removes
 * after the worker is gone (a walled-in worker cannot remove it itself).
 * A worker started by hand gets one from mkdtemp; *owned says so. */
static int make_tmpdir(char *dir, size_t size, int *owned, char *err, size_t errlen)
{
	const char *given = getenv("KJIT_WORKER_TMPDIR");
	const char *base = getenv("TMPDIR");

	*owned = 0;
	if (given && given[0] == '/') {
		snprintf(dir, size, "%s", given);
	} else {
		snprintf(dir, size, "%s/kjit-worker-XXXXXX", base && base[0] == '/' ? base : "/tmp");
		if (mkdtemp(dir) == NULL) {
			snprintf(err, errlen, "worker temporary directory %s: %s", dir, strerror(errno));
			return KJIT_EIO;
		}
		*owned = 1;
	}
	if (setenv("TMPDIR", dir, 1) < 0) {
		snprintf(err, errlen, "setenv TMPDIR: %s", strerror(errno));
		return KJIT_EIO;
	}
	return 0;
}

/* RLIMIT_CPU soft = CPU used so far + the compile timeout + a margin. */
static void arm_cpu_limit(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return;
	rlim_t used = (rlim_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1);
	set_limit(RLIMIT_CPU, used + KJ_COMPILE_TIMEOUT_MS / 1000 + WORKER_CPU_MARGIN_S, 0);
}

/* Sends a HELLO (type KJ_MSG_HELLO, with its CODE) or an IDENT. */
static int send_hello_type(int fd, int type, const char *family, int code, const char *id, const char *rv,
			   const char *error, const char *text)
{
	struct kj__buf b = { 0 };
	int r = kj__msg_begin(&b, type, 0);

	if (r == 0 && type == KJ_MSG_HELLO)
		r = kj__msg_put_i32(&b, KJ_F_CODE, code);
	if (r == 0)
		r = kj__msg_put_str(&b, KJ_F_COMPILER, family);
	if (r == 0 && id && *id)
		r = kj__msg_put_str(&b, KJ_F_COMPILER_VERSION, id);
	if (r == 0 && rv && *rv)
		r = kj__msg_put_str(&b, KJ_F_VERSION, rv);
	if (r == 0 && error && *error)
		r = kj__msg_put_str(&b, KJ_F_ERROR, error);
	if (r == 0 && text && *text)
		r = kj__msg_put_str(&b, KJ_F_TEXT, text);
	if (r == 0)
		r = kj__msg_end(&b);
	if (r == 0)
		r = kj__frame_write_fd(fd, &b);
	kj__buf_free(&b);
	return r;
}

static int send_hello_text(int fd, const char *family, int code, const char *id, const char *rv,
			   const char *error, const char *text)
{
	return send_hello_type(fd, KJ_MSG_HELLO, family, code, id, rv, error, text);
}

static int send_hello(int fd, const char *family, int code, const char *id, const char *rv, const char *error)
{
	return send_hello_text(fd, family, code, id, rv, error, NULL);
}

/* Sends the RESULT of job id (common/jobmsg.c encodes it). */
static int send_result(int fd, uint32_t id, int code, const struct kj__compile_out *out, uint64_t us)
{
	struct kj__buf b = { 0 };
	struct kj__result res = { code, out->data, out->len, out->log, out->lowered, out->error, us };
	int r = kj__result_encode(&b, id, &res);

	if (r == 0)
		r = kj__frame_write_fd(fd, &b);
	kj__buf_free(&b);
	return r;
}

/* Runs one decoded job through ops; fills out and returns the code. */
static int run_job(const struct kj__compiler_ops *ops, void *state, const struct kj__compile_job *job,
		   struct kj__compile_out *out)
{
	char err[512] = "";
	int r = ops->check_target(state, job->target, err, sizeof err);

	if (r < 0)
		return kj__out_error(out, r, err[0] ? err : "target not supported");
	arm_cpu_limit();
	r = ops->compile(state, job, out);
	if (r == 0 && (out->data == NULL || out->len > KJ_OBJECT_MAX)) {
		free(out->data);
		out->data = NULL;
		r = kj__out_error(out, out->len > KJ_OBJECT_MAX ? KJIT_ETOOBIG : KJIT_EINTERNAL,
				  "the compiler returned no object or one over the size cap");
	}
	if (r == 0 && job->n_entries && (r = kj__entries_check(out->data, out->len, job->entries, job->n_entries,
								err, sizeof err)) < 0) {
		free(out->data);
		out->data = NULL;
		out->len = 0;
		kj__out_error(out, r, err);
	}
	if (r < 0 && out->error == NULL) {
		snprintf(err, sizeof err, "%s: %s (%s)", job->source_name, kjit_strerror(r), ops->name);
		kj__out_error(out, r, err);
	}
	if (out->log && strlen(out->log) >= KJ_LOG_MAX) { /* a family forgot to cap it */
		char *l = kj__log_dup(out->log, strlen(out->log));
		free(out->log);
		out->log = l;
	}
	return r;
}

/* nftw's callback for wipe_dir: removes one thing a job left.  FTW_MOUNT
 * never enters another filesystem, so the walls' read-only trees mounted
 * under the worker's /tmp (a library folder of kjitd's under /tmp) are
 * neither walked nor reported, and a folder still holding one stays. */
static int wipe_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	if (ftw->level == 0 || remove(path) == 0 || errno == ENOENT)
		return 0;
	if (flag == FTW_DP && (errno == ENOTEMPTY || errno == EEXIST || errno == EBUSY))
		return 0;
	fprintf(stderr, "kjit worker: cannot remove %s: %s\n", path, strerror(errno));
	return 0;
}

/* Empties the worker's directory: what a job left is gone before the next
 * (within the directory's own filesystem only). */
static void wipe_dir(const char *dir)
{
	if (nftw(dir, wipe_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		fprintf(stderr, "kjit worker: cannot empty %s: %s\n", dir, strerror(errno));
}

/* The job's directory, TMPDIR and the working directory pointing at it:
 * always KJ_JOB_DIR_NAME under the worker's private directory (/tmp/job
 * inside the walls), made fresh (the last job's was emptied away by
 * job_dir_leave), so the same request compiles at the same path on every
 * node and in every run: nvcc hashes the path into the names of kernels
 * of anonymous-namespace types, and no job's counter or random name may
 * reach an object or a log.  0 or KJIT_EIO. */
static int job_dir_enter(const char *tmpdir, char *dir, size_t dirlen)
{
	if ((size_t)snprintf(dir, dirlen, "%s/%s", tmpdir, KJ_JOB_DIR_NAME) >= dirlen)
		return KJIT_EIO;
	/* Never a directory a job left: if emptying it failed, it goes now, or
	 * this job does not run. */
	if (mkdir(dir, 0700) < 0 && (errno != EEXIST || kj__rm_rf(dir) < 0 || mkdir(dir, 0700) < 0))
		return KJIT_EIO;
	if (setenv("TMPDIR", dir, 1) < 0 || chdir(dir) < 0)
		return KJIT_EIO;
	return 0;
}

/* After a job: every process it started is killed, its files are gone.
 * 0, or KJIT_EWORKER when leftovers cannot be stopped (the worker exits). */
static int job_dir_leave(const struct kj__walls *walls, const char *tmpdir)
{
	int r = kj__walls_reap(walls);

	if (chdir(tmpdir) < 0 || setenv("TMPDIR", tmpdir, 1) < 0)
		r = KJIT_EIO;
	wipe_dir(tmpdir);
	return r;
}

/* kjitd's side of the worker's environment (read here and in walls.c):
 * nothing but what compilers need, and the private directory it may write (docs/design.md lists it with the
 * reasons).  Set here: KJIT_WORKER_TMPDIR (that directory; the worker
 * points TMPDIR at it), a fixed PATH, LANG=C, HOME=/nonexistent,
 * KJIT_WORKER_USER (--worker-user: whom a root worker becomes).  Kept from
 * kjitd's own environment when set: LD_LIBRARY_PATH (compiler libraries
 * outside the system trees; the sandbox lets the worker read those
 * folders), TMPDIR (the base for a directory of its own should
 * KJIT_WORKER_TMPDIR be relative, with a relative --cache-dir), the
 * sanitizer options (a sanitized build's workers obey the same settings),
 * KJIT_WORKER_NO_NAMESPACES (tests: an unprivileged daemon's workers
 * take the Landlock-only path of a kernel without user namespaces),
 * KJIT_TEST_WARM (tests: the test family's warm-up, compilers/testcomp.c), and
 * GLIBC_TUNABLES (the admin's malloc settings, e.g. glibc.malloc.hugetlb=1:
 * issue 31 measures the nvrtc worker's compile with its heap on huge
 * pages; glibc reads it at the worker's exec, nothing else does). */
char **kj__worker_env(const char *worker_user, const char *tmpdir)
{
	static const char *const keep[] = { "LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
					    "TMPDIR", "KJIT_WORKER_NO_NAMESPACES", "GLIBC_TUNABLES",
					    "KJIT_TEST_WARM" };
	char **env = calloc(KJ_ARRAY_SIZE(keep) + 6, sizeof *env);
	size_t n = 0;

	if (env == NULL)
		return NULL;
	env[n++] = kj__asprintf("KJIT_WORKER_TMPDIR=%s", tmpdir);
	env[n++] = kj__strdup("PATH=/usr/local/bin:/usr/bin:/bin");
	env[n++] = kj__strdup("LANG=C");
	env[n++] = kj__strdup("HOME=/nonexistent");
	env[n++] = kj__asprintf("KJIT_WORKER_USER=%s", worker_user);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(keep); i++) {
		const char *v = getenv(keep[i]);
		if (v)
			env[n++] = kj__asprintf("%s=%s", keep[i], v);
	}
	for (size_t i = 0; i < n; i++) {
		if (env[i] == NULL) {
			for (size_t j = 0; j < n; j++)
				free(env[j]);
			free(env);
			return NULL;
		}
	}
	return env;
}

/* Serves jobs until fd closes.  Returns the exit status. */
static int serve(const struct kj__compiler_ops *ops, void *state, int fd, const struct kj__walls *walls,
		 const char *tmpdir)
{
	for (;;) {
		char dir[PATH_MAX];
		struct kj__frame_hdr h;
		uint8_t *body = NULL;
		struct kj__msg m = { 0 };
		struct kj__job_msg js;
		struct kj__compile_out out = { 0 };
		char err[512] = "";
		int r = kj__frame_read_fd(fd, -1, &h, &body);

		if (r == KJIT_ECONNECT)
			return 0;
		if (r < 0 || h.type != KJ_MSG_JOB || kj__msg_decode(body, h.len, &m) < 0) {
			free(body);
			return WORKER_EXIT_PROTO;
		}
		uint64_t t0 = kj__now_us();
		r = kj__job_decode(&m, &js, err, sizeof err);
		if (r < 0)
			kj__out_error(&out, r, err[0] ? err : kjit_strerror(r));
		else if ((r = job_dir_enter(tmpdir, dir, sizeof dir)) < 0)
			kj__out_error(&out, r, "cannot make the job's directory");
		else {
			js.job.dir = dir;
			r = run_job(ops, state, &js.job, &out);
		}
		int left = job_dir_leave(walls, tmpdir);
		uint64_t us = kj__now_us() - t0;
		int w = send_result(fd, h.id, r, &out, us);
		if (w == KJIT_ETOOBIG) { /* object + log over the frame cap: drop the log */
			free(out.log);
			out.log = NULL;
			w = send_result(fd, h.id, r, &out, us);
		}
		kj__compile_out_free(&out);
		kj__job_msg_clear(&js);
		kj__msg_free(&m);
		free(body);
		if (w < 0)
			return w == KJIT_ECONNECT || errno == EPIPE ? 0 : 1;
		if (left < 0) {
			fprintf(stderr, "kjit worker: a job's processes would not die; the worker ends\n");
			return 1;
		}
	}
}

static int worker_run(const struct kj__compiler_ops *ops, const char *family, int fd, const char *tmpdir,
		      const struct kj__walls *walls, char *note, size_t notelen);

int kj__worker_main(const char *family, int fd)
{
	const struct kj__compiler_ops *ops = kj__compiler_find(family);
	char err[512] = "";
	int r;

	char tmpdir[256] = "", note[512] = "";
	int owned = 0;
	struct kj__walls walls;

	if (sandbox(fd, err, sizeof err) < 0 || make_tmpdir(tmpdir, sizeof tmpdir, &owned, err, sizeof err) < 0) {
		send_hello(fd, family ? family : "", KJIT_EINTERNAL, NULL, NULL, err);
		return 1;
	}
	/* Only the walled child returns; the parent outside relays its end. */
	if ((r = kj__walls_enter(family, fd, tmpdir, sizeof tmpdir, owned, &walls, note, sizeof note)) < 0) {
		fprintf(stderr, "kjit worker %s: %s\n", family ? family : "", note);
		send_hello(fd, family ? family : "", r, NULL, NULL, note);
		return 1;
	}
	if (walls.level != KJ_WALLS_LANDLOCK)
		owned = 0; /* the relay outside removes it */
	if (KJ_UNDER_ASAN)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); /* LeakSanitizer ptraces its own threads */
	r = worker_run(ops, family, fd, tmpdir, &walls, note, sizeof note);
	/* Inside the walls only the directory's contents can go. */
	int rr = owned ? kj__rm_rf(tmpdir) : 0;
	if (rr < 0 && rr != -EACCES)
		fprintf(stderr, "kjit worker: cannot clean %s: %s\n", tmpdir, strerror(-rr));
	return r;
}

/* The worker once walled: compiler, IDENT and warm-up, Landlock, seccomp,
 * HELLO, jobs.  note holds what kj__walls_enter built; the HELLO's TEXT
 * carries it with the trees the worker reads, for `kjit targets`. */
static int worker_run(const struct kj__compiler_ops *ops, const char *family, int fd, const char *tmpdir,
		      const struct kj__walls *walls, char *note, size_t notelen)
{
	void *state = NULL;
	char err[512] = "", id[KJ_VERSION_STR_MAX * 2] = "", rv[KJ_VERSION_STR_MAX] = "";
	char ll[256] = "", sc[128] = "";
	int r;

	if (ops == NULL) {
		snprintf(err, sizeof err, "unknown compiler family '%.64s'", family ? family : "");
		send_hello(fd, family ? family : "", KJIT_EBACKEND, NULL, NULL, err);
		return 1;
	}
	if ((r = ops->init(&state, err, sizeof err)) < 0 ||
	    (r = ops->identity(state, id, sizeof id, rv, sizeof rv)) < 0) {
		if (!err[0])
			snprintf(err, sizeof err, "%s: %s", ops->name, kjit_strerror(r));
		send_hello(fd, ops->name, r, NULL, NULL, err);
		if (state)
			ops->fini(state);
		return 1;
	}
	/* The identity is known: kjitd may key requests and serve hits while
	 * the compiler warms up (a fresh node's warm-up from the fleet tier
	 * waited a compile's start-up for nothing).  Then the warm-up. */
	if (ops->warm) {
		if (send_hello_type(fd, KJ_MSG_IDENT, ops->name, 0, id, rv, NULL, NULL) < 0) {
			ops->fini(state);
			return 1;
		}
		if ((r = ops->warm(state, err, sizeof err)) < 0) {
			if (!err[0])
				snprintf(err, sizeof err, "%s: warm-up: %s", ops->name, kjit_strerror(r));
			send_hello(fd, ops->name, r, NULL, NULL, err);
			ops->fini(state);
			return 1;
		}
	}
	/* The compiler is loaded: the inner walls before it sees a source. */
	if ((r = kj__sandbox_landlock(walls, tmpdir, ll, sizeof ll)) < 0 ||
	    (r = kj__seccomp_apply(KJ_UNDER_ASAN, sc, sizeof sc)) < 0) {
		send_hello(fd, ops->name, r, NULL, NULL, sc[0] ? sc : ll);
		ops->fini(state);
		return 1;
	}
	struct kj__buf text = { 0 };
	int br = kj__buf_printf(&text, "%s; %s; %s; reads", note, ll, sc);
	for (size_t i = 0; br == 0 && i < walls->n; i++)
		br = kj__buf_printf(&text, " %s", walls->tree[i]);
	if (br == 0)
		br = kj__buf_append(&text, "", 1);
	(void)notelen;
	fprintf(stderr, "kjit worker %s (pid %d): %s\n", ops->name, (int)getpid(), br == 0 ? (char *)text.p : note);
	r = send_hello_text(fd, ops->name, 0, id, rv, NULL, br == 0 ? (char *)text.p : NULL);
	kj__buf_free(&text);
	if (r < 0) {
		ops->fini(state);
		return 1;
	}
	r = serve(ops, state, fd, walls, tmpdir);
	ops->fini(state);
	return r;
}
