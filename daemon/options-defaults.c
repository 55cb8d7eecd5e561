/* options-defaults.c: what kjitd's command line (options.c) and its
 * configuration file (config.c) left unsaid, filled in, and the freeing of
 * what both allocated.
 *
 * The paths (socket, cache, kernels), sizes, limits and worker settings,
 * each from common/kj_limits.h; the fleet tier's URL from KJITD_REMOTE and
 * its secret from --remote-secret or KJITD_REMOTE_SECRET_FILE; the
 * workers' user, which must exist before a root daemon starts.  Values a
 * parser marked "none" (UINT_MAX, UINT64_MAX: an explicit 0) become 0
 * here.  It starts nothing and writes no file.
 */
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "kj_types.h"
#include "remote.h"
#include "util.h"

static char *default_kernels_dir(void)
{
	char *p = kj__asprintf("%s/kernels_src/MANIFEST", KJIT_SRCDIR);
	if (p && access(p, R_OK) == 0) {
		free(p);
		return kj__asprintf("%s/kernels_src", KJIT_SRCDIR);
	}
	free(p);
	return kj__asprintf("%s/share/kjit/kernels_src", KJIT_PREFIX);
}

/* The workers' count and limits not given (pool.c). */
static void worker_defaults(struct kj__config *cfg)
{
	if (cfg->jobs == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cfg->jobs = n > 0 ? (unsigned)n : 1;
	}
	if (cfg->compile_timeout_ms == 0)
		cfg->compile_timeout_ms = KJ_COMPILE_TIMEOUT_MS;
	if (cfg->job_idle_ms == 0)
		cfg->job_idle_ms = KJ_JOB_IDLE_TIMEOUT_MS;
	if (cfg->worker_share == 0)
		cfg->worker_share = KJ_WORKER_SHARE_PCT;
	if (cfg->worker_max_rss == 0)
		cfg->worker_max_rss = KJ_WORKER_MAX_RSS;
}

int kj__options_defaults(struct kj__config *cfg)
{
	if (cfg->socket_path == NULL)
		cfg->socket_path = kj__default_socket_path();
	if (cfg->cache_dir == NULL)
		cfg->cache_dir = kj__default_cache_dir();
	if (cfg->kernels_dir == NULL)
		cfg->kernels_dir = default_kernels_dir();
	if (cfg->sysfs_root == NULL && getenv("KJIT_SYSFS_ROOT"))
		cfg->sysfs_root = kj__strdup(getenv("KJIT_SYSFS_ROOT"));
	worker_defaults(cfg);
	if (cfg->max_size == 0)
		cfg->max_size = KJ_DEFAULT_MAX_SIZE;
	if (cfg->hot_size == 0)
		cfg->hot_size = KJ_HOT_BYTES_MAX;
	if (cfg->memo_size == 0)
		cfg->memo_size = KJ_MEMO_BYTES_MAX;
	if (!cfg->failed_ttl_given)
		cfg->failed_ttl_ms = KJ_FAILED_TTL_MS;
	if (cfg->conn_max_per_uid == 0)
		cfg->conn_max_per_uid = KJ_CONN_PER_UID_MAX;
	else if (cfg->conn_max_per_uid == UINT_MAX)
		cfg->conn_max_per_uid = 0;
	if (cfg->conn_idle_ms == 0)
		cfg->conn_idle_ms = KJ_CONN_IDLE_MS;
	else if (cfg->conn_idle_ms == UINT64_MAX)
		cfg->conn_idle_ms = 0;
	if (cfg->buf_max_total == 0)
		cfg->buf_max_total = KJ_REQ_BYTES_MAX;
	if (cfg->buf_max_per_uid == 0)
		cfg->buf_max_per_uid = KJ_REQ_BYTES_PER_UID_MAX;
	if (cfg->buf_max_per_uid > cfg->buf_max_total)
		cfg->buf_max_per_uid = cfg->buf_max_total;
	/* The daemon's own exit on idle is for a per-user daemon a client
	 * started (it passes --idle-timeout); systemd starts and stops the
	 * system one. */
	if (cfg->system_mode && cfg->idle_timeout_set && cfg->idle_timeout_ms) {
		fprintf(stderr, "kjitd: --idle-timeout is ignored with --system (systemd starts and stops it)\n");
		cfg->idle_timeout_ms = 0;
	}
	if (cfg->remote_url == NULL && getenv("KJITD_REMOTE") && *getenv("KJITD_REMOTE")) {
		char err[512];
		if (kj__remote_url_check(getenv("KJITD_REMOTE"), err, sizeof err) < 0) {
			fprintf(stderr, "kjitd: KJITD_REMOTE: %s\n", err);
			return KJIT_EINVAL;
		}
		if ((cfg->remote_url = kj__strdup(getenv("KJITD_REMOTE"))) == NULL)
			return KJIT_ENOMEM;
	}
	const char *sf = cfg->remote_secret_file ? cfg->remote_secret_file : getenv("KJITD_REMOTE_SECRET_FILE");
	if (sf && *sf) {
		char err[512];
		int rc = kj__remote_secret_load(sf, &cfg->remote_secret, &cfg->remote_secret_len, err, sizeof err);
		if (rc < 0) {
			fprintf(stderr, "kjitd: %s: %s\n", cfg->remote_secret_file ? "--remote-secret" : "KJITD_REMOTE_SECRET_FILE",
				rc == KJIT_ENOMEM ? "out of memory" : err);
			return rc;
		}
	}
	if (cfg->worker_user == NULL)
		cfg->worker_user = kj__strdup(KJ_WORKER_USER_DEFAULT);
	/* A root daemon's workers run as this user: it must exist first. */
	struct passwd *pw = cfg->worker_user && geteuid() == 0 ? getpwnam(cfg->worker_user) : NULL;
	if (cfg->worker_user && geteuid() == 0 && (pw == NULL || pw->pw_uid == 0)) {
		fprintf(stderr, "kjitd: running as root, compile workers need an unprivileged user '%s'%s: create it "
			"(useradd --system --no-create-home --shell /usr/sbin/nologin %s, as scripts/deps.sh and "
			"make install do) or name another with --worker-user\n", cfg->worker_user,
			pw ? " (it is uid 0)" : " (no such user)", cfg->worker_user);
		return KJIT_EINVAL;
	}
	cfg->self_exe = realpath("/proc/self/exe", NULL);
	return cfg->worker_user && cfg->socket_path && cfg->cache_dir && cfg->kernels_dir && cfg->self_exe ? 0 : KJIT_ENOMEM;
}

void kj__options_free(struct kj__config *cfg)
{
	free(cfg->socket_path);
	free(cfg->socket_group);
	free(cfg->cache_dir);
	free(cfg->kernels_dir);
	free(cfg->sysfs_root);
	free(cfg->log_path);
	free(cfg->worker_user);
	free(cfg->prestart);
	free(cfg->self_exe);
	free(cfg->hip_compiler);
	free(cfg->cuda_compiler);
	free(cfg->remote_url);
	free(cfg->remote_prefix);
	free(cfg->remote_secret_file);
	free(cfg->config_path);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(cfg->origin); i++) {
		free(cfg->origin[i]);
		free(cfg->given[i]);
	}
	if (cfg->remote_secret)
		explicit_bzero(cfg->remote_secret, cfg->remote_secret_len);
	free(cfg->remote_secret);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(cfg->arch); i++)
		free(cfg->arch[i]);
}
