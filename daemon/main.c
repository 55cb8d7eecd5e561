/* main.c: kjitd's entry: roles, start-up and shutdown (options.c parses the command line).
 *
 * One binary, three roles, chosen from the roles[] table before any option
 * is parsed (as OpenBSD's privilege-separated daemons do), so a child
 * never runs a line of the daemon's start-up: the daemon itself (no role
 * flag); `--worker FAMILY`, a compile worker the pool re-executes
 * (compilers/worker.c); `--detect`, a short-lived child that probes the
 * GPUs so no driver library is ever loaded into the daemon (its only
 * option is --sysfs-root).  Without --foreground the daemon forks and the
 * parent exits once the child is ready (socket bound) or has failed, with
 * its status, so `kjitd && kjit ...` never races.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"
#include "daemon-int.h" /* and daemon.h */
#include "kj_types.h"
#include "remote.h"
#include "targetid.h"
#include "sha.h"
#include "util.h"


static void on_signal(uv_signal_t *s, int signum)
{
	struct kj__daemon *d = s->data;
	kj__log(d, "signal %d", signum);
	kj__server_stop(d);
}

/* SIGHUP: the log reopened, the configuration reread (config.c); kjitd serves on. */
static void on_sighup(uv_signal_t *s, int signum)
{
	(void)signum;
	kj__config_reload(s->data);
}

static void on_flush(uv_timer_t *t)
{
	kj__conn_harvest_all(t->data);
	kj__stats_flush(t->data);
	kj__server_tick(t->data);
}

/* Tells the waiting parent (and systemd) that we serve. */
static void notify_ready(struct kj__daemon *d, int status)
{
	if (d->top->ready_fd >= 0) {
		unsigned char b = (unsigned char)status;
		if (write(d->top->ready_fd, &b, 1) != 1)
			kj__log(d, "could not report readiness: %s", strerror(errno));
		close(d->top->ready_fd);
		d->top->ready_fd = -1;
	}
	if (status == 0)
		sd_notify(0, "READY=1");
}

/* Forks; the parent waits for the child's readiness byte and exits with it. */
static int detach(struct kj__daemon *d)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0) {
		fprintf(stderr, "kjitd: pipe: %s\n", strerror(errno));
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "kjitd: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid > 0) {
		unsigned char b = 1;
		close(fds[1]);
		ssize_t n;
		while ((n = read(fds[0], &b, 1)) < 0 && errno == EINTR)
			;
		_exit(n == 1 ? b : 1);
	}
	close(fds[0]);
	d->top->ready_fd = fds[1];
	if (setsid() < 0)
		return 1;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		close(null);
	}
	return -1;
}

/* <cache>/tmp holds the workers' private directories; we hold the cache's
 * lock, so whatever is there was left by a daemon that died. */
static int reset_tmp(struct kj__daemon *d)
{
	char *tmp = kj__asprintf("%s/tmp", d->cfg.cache_dir);
	int r = 0;

	if (tmp == NULL)
		return KJIT_ENOMEM;
	if ((r = kj__rm_rf(tmp)) < 0)
		kj__log(d, "cannot clear %s: %s", tmp, strerror(-r));
	r = 0;
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
		fprintf(d->top->log, "kjitd: cannot create %s: %s\n", tmp, strerror(errno));
		r = KJIT_EIO;
	}
	free(tmp);
	return r;
}

/* Makes the cache ours: no other daemon on our socket, and the cache's
 * lock taken (waiting a while for a holder on its way out).  0, or an exit
 * status: 4 when another daemon has the socket or the cache, else 1. */
static int claim_cache(struct kj__daemon *d)
{
	char err[512] = "";
	/* Per-user: 0700/0600, no one else reads the sources; system: the
	 * group reads (systemd's CacheDirectoryMode=0750), only kjitd writes. */
	struct kj__cache_options co = { .max_size = d->cfg.max_size, .log = d->top->log, .hot_max = d->cfg.hot_size,
					.max_size_per_uid = d->cfg.max_size_per_uid,
					.dir_mode = d->cfg.system_mode ? 0750 : 0700,
					.file_mode = d->cfg.system_mode ? 0640 : 0600,
					.pub_errors = &d->stats[KJ_STAT_PUBLISH_ERRORS] };
	int r;

	/* A daemon on our socket is named first, with its cache: "already
	 * serves this cache" would be wrong when it serves another. */
	if (getenv("LISTEN_FDS") == NULL && kj__server_probe(d, err, sizeof err) < 0) {
		fprintf(d->top->log, "kjitd: %s\n", err);
		return 4;
	}
	/* The holder of the cache may be a daemon on its way out (its socket
	 * was removed, and the client that found none started us): wait. */
	uint64_t until = kj__now_us() + (uint64_t)KJ_CACHE_LOCK_WAIT_MS * 1000;
	while ((r = kj__cache_open(&d->cache, d->cfg.cache_dir, &co)) == KJIT_EBUSY && kj__now_us() < until) {
		/* ...unless it is alive on the socket it recorded: say so now. */
		if (kj__server_recorded(d, err, sizeof err) < 0) {
			fprintf(d->top->log, "kjitd: %s\n", err);
			return 4;
		}
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (r == KJIT_EBUSY) {
		fprintf(d->top->log, "kjitd: another kjitd already serves %s (on another socket than %s); stop it, or pass "
			"another --cache-dir\n", d->cfg.cache_dir, d->cfg.socket_path);
		return 4;
	}
	if (r < 0) {
		if (r != KJIT_EDENIED) /* a refusal was said in one line already */
			fprintf(d->top->log, "kjitd: cannot open the cache %s: %s\n", d->cfg.cache_dir, kjit_strerror(r));
		return 1;
	}
	if (kj__cache_job_threaded())
		kj__cache_wal_offload(d->cache); /* checkpoints on a thread (offloop.c), not on the loop */
	return 0;
}

/* SIGTERM and SIGINT stop the loop; the index is flushed every
 * KJ_INDEX_FLUSH_MS; a peer that goes away is an error on its write, not
 * a signal. */
static void start_loop_handles(struct kj__daemon *d)
{
	uv_signal_init(d->loop, &d->top->sigterm);
	uv_signal_init(d->loop, &d->top->sigint);
	d->top->sigterm.data = d->top->sigint.data = d;
	uv_signal_start(&d->top->sigterm, on_signal, SIGTERM);
	uv_signal_start(&d->top->sigint, on_signal, SIGINT);
	uv_signal_init(d->loop, &d->top->sighup);
	d->top->sighup.data = d;
	uv_signal_start(&d->top->sighup, on_sighup, SIGHUP);
	uv_unref((uv_handle_t *)&d->top->sighup); /* it keeps no loop alive; closed when the loop ends */
	uv_timer_init(d->loop, &d->top->flush_timer);
	d->top->flush_timer.data = d;
	uv_timer_start(&d->top->flush_timer, on_flush, KJ_INDEX_FLUSH_MS, KJ_INDEX_FLUSH_MS);
	signal(SIGPIPE, SIG_IGN);
}

/* kjitd's queues of work off the loop (daemon.h's KJ_OFFQ_* says what
 * each holds): their bounds and their stop.  The ones using the cache's
 * SQLite run on the loop where it is not thread-safe.  NULL: out of
 * memory. */
static struct kj__offwork_set *work_new(uv_loop_t *loop)
{
	int sqlite_on_loop = !kj__cache_job_threaded();
	const struct kj__offwork_policy policies[KJ_OFFQ_COUNT] = {
		[KJ_OFFQ_RESOLVE] = { .run_max = KJ_RESOLVE_RUNNING_MAX, .fair = 1, .end_at_stop = 1 },
		[KJ_OFFQ_PUBLISH] = { .on_loop = sqlite_on_loop },
		[KJ_OFFQ_ADMIN] = { .run_max = 1, .on_loop = sqlite_on_loop, .end_at_stop = 1 },
		[KJ_OFFQ_CHECKPOINT] = { .run_max = 1, .on_loop = sqlite_on_loop },
	};

	return kj__offwork_new(loop, policies, KJ_OFFQ_COUNT);
}

static int serve(struct kj__daemon *d)
{
	char err[512] = "";
	int r;

	d->loop = uv_default_loop();
	if ((d->work = work_new(d->loop)) == NULL) {
		fprintf(d->top->log, "kjitd: out of memory\n");
		return 1;
	}
	d->started = kj__wall_s();
	d->last_active_us = kj__now_us();
	kj__quota_init(d);
	if (kj__sha_init() < 0) { /* before any pool thread hashes (offhash.c, publish.c) */
		fprintf(d->top->log, "kjitd: OpenSSL cannot be initialised\n");
		return 1;
	}
	/* What our children leave behind (a compiler's children, rocminfo's
	 * shell) comes to us, not to an init that may never reap it. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		kj__log(d, "cannot become a subreaper (%s): orphans of compilers go to init", strerror(errno));
	/* Nothing of the same uid may ptrace kjitd or read its memory through
	 * /proc (docs/reliability.md, "What a compile can touch").  Not in a
	 * sanitizer build: LeakSanitizer ptraces kjitd's threads at exit. */
#if !KJ_UNDER_ASAN
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		kj__log(d, "cannot make kjitd undumpable: %s", strerror(errno));
#endif
	if ((r = claim_cache(d)) != 0)
		return r;
	if (reset_tmp(d) < 0)
		return 1;
	r = kj__miss_open(d, err, sizeof err);
	if (r < 0) {
		if (r == KJIT_ENOMEM)
			fprintf(d->top->log, "kjitd: out of memory\n");
		else
			fprintf(d->top->log, "kjitd: bundled kernel manifest: %s\n", err);
		return 1;
	}
	kj__detect_run(d);
	r = kj__fleet_start(d, err, sizeof err);
	if (r < 0) {
		fprintf(d->top->log, "kjitd: --remote: %s\n", err);
		return 2;
	}
	kj__hits_start(d);
	r = kj__server_start(d);
	if (r < 0) {
		fprintf(d->top->log, "kjitd: cannot serve on %s: %s\n", d->cfg.socket_path, kjit_strerror(r));
		kj__hits_stop(d);
		kj__fleet_stop(d);
		return r == KJIT_EBUSY ? 4 : 1;
	}
	start_loop_handles(d);
	kj__pool_prestart(d);
	kj__log(d, "serving %s on %s (%zu bundled kernels, %u workers per compiler, max size %llu)",
		d->cfg.cache_dir, d->cfg.socket_path, kj__miss_manifest(d)->n, d->cfg.jobs,
		(unsigned long long)d->cfg.max_size);
	notify_ready(d, 0);
	if (!d->cfg.foreground && getenv("NOTIFY_SOCKET") == NULL)
		kj__log_detached(d); /* never again the terminal it left */
	uv_run(d->loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&d->top->sighup, NULL);
	kj__stats_flush(d);
	return 0;
}

/* The rooms' own parts of d (issue 33): each room allocates its struct;
 * 0 or KJIT_ENOMEM (what was allocated stays for rooms_free).  The work
 * room's needs the loop: serve makes it. */
static int rooms_new(struct kj__daemon *d)
{
	if ((d->top = calloc(1, sizeof *d->top)) == NULL)
		return KJIT_ENOMEM;
	if (kj__net_init(d) < 0 || kj__admin_init(d) < 0 || kj__miss_init(d) < 0)
		return KJIT_ENOMEM;
	return 0;
}

/* After the loop has closed: every room's struct (any may be NULL) but
 * the top's, freed last. */
static void rooms_free(struct kj__daemon *d)
{
	kj__net_free(d);
	kj__offwork_free(d->work);
	d->work = NULL;
	kj__admin_free(d);
	kj__miss_free(d);
}

/* The daemon role: serve until stopped. */
static int daemon_main(int argc, char **argv, const char *arg)
{
	struct kj__daemon d;
	int rc;

	(void)arg;
	memset(&d, 0, sizeof d);
	if (rooms_new(&d) < 0) {
		fprintf(stderr, "kjitd: out of memory\n");
		rc = 1;
		goto out;
	}
	d.top->ready_fd = -1;
	d.top->argc = argc;
	d.top->argv = argv;
	rc = kj__options_parse(argc, argv, &d.cfg);
	if (rc >= 0)
		goto out;
	if (d.cfg.ready_fd_given) { /* a client's autostart waits there (client/connect.c) */
		if (fcntl(d.cfg.ready_fd, F_SETFD, FD_CLOEXEC) < 0) {
			fprintf(stderr, "kjitd: --ready-fd %d: %s\n", d.cfg.ready_fd, strerror(errno));
			rc = 2;
			goto out;
		}
		d.top->ready_fd = d.cfg.ready_fd;
	}
	if ((rc = kj__options_defaults(&d.cfg)) < 0) {
		if (rc == KJIT_ENOMEM)
			fprintf(stderr, "kjitd: out of memory\n");
		rc = rc == KJIT_EINVAL ? 2 : 1;   /* a bad $KJITD_REMOTE said why */
		goto out;
	}
	if ((rc = kj__log_open(&d)) != 0)
		goto out;
	if (!d.cfg.foreground && getenv("NOTIFY_SOCKET") == NULL && (rc = detach(&d)) >= 0)
		goto out;
	rc = serve(&d);
	if (rc != 0)
		notify_ready(&d, rc);
out:
	if (d.loop) {
		uv_run(d.loop, UV_RUN_NOWAIT);
		kj__miss_close(&d);
		if (uv_loop_close(d.loop) != 0)
			kj__log(&d, "exiting with handles still open");
	}
	/* Every worker was collected by the loop; collect what is left. */
	if (d.loop)
		kj__reap_orphans(&d, KJ_REAP_WAIT_MS);
	rooms_free(&d);
	kj__cache_close(d.cache);
	if (d.top && d.top->log && d.top->log != stderr)
		fclose(d.top->log);
	free(d.top); /* last: kj__log writes through it until here */
	kj__options_free(&d.cfg);
	return rc;
}

/* ---- roles ---- */

/* `--worker FAMILY`: compile jobs read from fd 3 (the pool's socketpair). */
static int worker_main(int argc, char **argv, const char *family)
{
	(void)argc;
	(void)argv;
	return kj__worker_main(family, 3);
}

/* `--detect [--sysfs-root DIR]`: prints what it finds on stdout. */
static int detect_main(int argc, char **argv, const char *arg)
{
	const char *sysfs_root = NULL;

	(void)arg;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--sysfs-root") == 0 && i + 1 < argc)
			sysfs_root = argv[++i];
		else if (strncmp(argv[i], "--sysfs-root=", 13) == 0)
			sysfs_root = argv[i] + 13;
	}
	/* Driver libraries may leave allocations behind at unload; this
	 * child's only output is stdout, so skip exit handlers. */
	_exit(kj__detect_main(sysfs_root));
}

static const struct role {
	const char *flag;            /* NULL: the role without a flag */
	int has_arg;
	int (*run)(int argc, char **argv, const char *arg); /* returns the exit status */
} roles[] = {
	{ NULL, 0, daemon_main },
	{ "--worker", 1, worker_main },
	{ "--detect", 0, detect_main },
};


/* Finds the role flag in argv (only kjitd itself passes one): *role and
 * *arg set; -1 to go on, else an exit status (usage error). */
static int pick_role(int argc, char **argv, const struct role **role, const char **arg)
{
	*role = &roles[0];
	*arg = NULL;
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (argv[i][0] != '-')
			continue;
		for (size_t k = 1; k < KJ_ARRAY_SIZE(roles); k++) {
			size_t n = strlen(roles[k].flag);
			if (strncmp(argv[i], roles[k].flag, n) != 0 || (argv[i][n] != '\0' && argv[i][n] != '='))
				continue;
			if (*role != &roles[0])
				return kj__usage_error("%s: only one role flag (--worker, --detect) at a time", argv[i]);
			*role = &roles[k];
			if (!roles[k].has_arg && argv[i][n] == '=')
				return kj__usage_error("%s takes no value", roles[k].flag);
			if (roles[k].has_arg && argv[i][n] == '=')
				*arg = argv[i] + n + 1;
			else if (roles[k].has_arg && i + 1 < argc)
				*arg = argv[++i];
			else if (roles[k].has_arg)
				return kj__usage_error("%s: a value is required", roles[k].flag);
			goto next;
		}
		if (kj__option_takes_value(argv[i]))
			i++;
next:;
	}
	return -1;
}

int main(int argc, char **argv)
{
	const struct role *role;
	const char *arg;
	int rc = pick_role(argc, argv, &role, &arg);

	return rc >= 0 ? rc : role->run(argc, argv, arg);
}
