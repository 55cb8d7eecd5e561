/* options.c: kjitd's command line.
 *
 * Parses the daemon's argv into struct kj__config (the long-option table,
 * the fleet tier's and the limits' options) and owns the usage text, so
 * every usage error, including main.c's role-flag errors, prints the same
 * lines; config.c reads a configuration file's lines through the same
 * table (kj__options_apply, kj__option_at).  The defaults of what was not
 * given, KJITD_REMOTE and the freeing are options-defaults.c's.  It
 * starts nothing and touches no file: main.c does, with the result.
 *
 * Invariant: each option is written once, as a row of opt_rows; getopt's
 * table, the short options, the usage text and kj__option_takes_value are
 * made from the rows (tests/test-lists.c checks man/kjitd.8 against them).
 */
#include <errno.h>
#include <grp.h>
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
#include "daemon.h"
#include "kj_types.h"
#include "remote.h"
#include "targetid.h"
#include "util.h"

extern char **environ;

enum {
	OPT_HIP_ARCH = 256, OPT_PRESTART, OPT_CUDA_ARCH, OPT_VULKAN_ENV, OPT_HIP_COMPILER, OPT_TIMEOUT, OPT_KERNELS,
	OPT_LOG, OPT_SYSTEM, OPT_ALLOW_UID, OPT_ALLOW_GID, OPT_SYSFS, OPT_HOT, OPT_MEMO,
	OPT_REMOTE, OPT_REMOTE_PREFIX, OPT_REMOTE_TTL, OPT_REMOTE_MODE, OPT_REMOTE_TIMEOUT, OPT_REMOTE_MAX, OPT_NO_COMPILE,
	OPT_REMOTE_LOOKUP, OPT_REMOTE_SECRET,
	OPT_SHARED_HITS, OPT_NO_SHARED_HITS,
	OPT_FAILED_TTL, OPT_CUDA_COMPILER,
	OPT_IDLE_TIMEOUT, OPT_CONNS_PER_UID, OPT_CONN_IDLE, OPT_REQ_BYTES, OPT_REQ_BYTES_UID,
	OPT_ADMIN_GID, OPT_MAX_SIZE_UID, OPT_WORKER_USER, OPT_RESOLVES_PER_UID,
	OPT_SOCKET_GROUP, OPT_READY_FD,
	OPT_CONFIG, OPT_LOG_LEVEL, OPT_VERSION,
	OPT_JOB_IDLE, OPT_WORKER_SHARE, OPT_WORKER_RSS,
};

/* kjitd's options, one row each: getopt's table, the short options, the
 * usage text and kj__option_takes_value all come from here, and
 * tests/test-lists.c checks that man/kjitd.8 documents every row the usage
 * shows.  usage is the row's words in the usage text ("" when the row
 * before names it too; NULL for options not shown: tests' --sysfs-root,
 * --help); a %s in it stands for the backend's compiler families
 * (compilers/compiler.c). */
static const struct opt_row {
	const char *name;
	int has_arg;
	int val;           /* its short letter, or an OPT_* */
	const char *usage;
} opt_rows[] = {
	{ "socket", required_argument, 's', "[--socket PATH]" },
	{ "cache-dir", required_argument, 'c', "[--cache-dir DIR]" },
	{ "max-size", required_argument, 'm', "[--max-size SIZE]" },
	{ "jobs", required_argument, 'j', "[--jobs N]" },
	{ "foreground", no_argument, 'f', "[--foreground]" },
	{ "hip-arch", required_argument, OPT_HIP_ARCH, "[--hip-arch T]" },
	{ "cuda-arch", required_argument, OPT_CUDA_ARCH, "[--cuda-arch T]" },
	{ "vulkan-env", required_argument, OPT_VULKAN_ENV, "[--vulkan-env T]" },
	{ "hip-compiler", required_argument, OPT_HIP_COMPILER, "[--hip-compiler %s]" },
	{ "cuda-compiler", required_argument, OPT_CUDA_COMPILER, "[--cuda-compiler %s]" },
	{ "compile-timeout", required_argument, OPT_TIMEOUT, "[--compile-timeout SECONDS]" },
	{ "kernels-dir", required_argument, OPT_KERNELS, "[--kernels-dir DIR]" },
	{ "log", required_argument, OPT_LOG, "[--log FILE]" },
	{ "log-level", required_argument, OPT_LOG_LEVEL, "[--log-level error|warning|notice|info|debug]" },
	{ "config", required_argument, OPT_CONFIG, "[--config FILE]" },
	{ "system", no_argument, OPT_SYSTEM, "[--system]" },
	{ "allow-uid", required_argument, OPT_ALLOW_UID, "[--allow-uid UID]..." },
	{ "allow-gid", required_argument, OPT_ALLOW_GID, "[--allow-gid GID]..." },
	{ "admin-gid", required_argument, OPT_ADMIN_GID, "[--admin-gid GID]..." },
	{ "hot-size", required_argument, OPT_HOT, "[--hot-size SIZE]" },
	{ "memo-size", required_argument, OPT_MEMO, "[--memo-size SIZE]" },
	{ "failed-ttl", required_argument, OPT_FAILED_TTL, "[--failed-ttl SECONDS]" },
	{ "remote", required_argument, OPT_REMOTE, "[--remote URL]" },
	{ "remote-prefix", required_argument, OPT_REMOTE_PREFIX, "[--remote-prefix P]" },
	{ "remote-ttl", required_argument, OPT_REMOTE_TTL, "[--remote-ttl DURATION]" },
	{ "remote-mode", required_argument, OPT_REMOTE_MODE, "[--remote-mode ro|rw]" },
	{ "remote-timeout", required_argument, OPT_REMOTE_TIMEOUT, "[--remote-timeout MS]" },
	{ "remote-lookup-timeout", required_argument, OPT_REMOTE_LOOKUP, "[--remote-lookup-timeout MS[+MS]]" },
	{ "remote-secret", required_argument, OPT_REMOTE_SECRET, "[--remote-secret FILE]" },
	{ "remote-max-object", required_argument, OPT_REMOTE_MAX, "[--remote-max-object SIZE]" },
	{ "no-compile", no_argument, OPT_NO_COMPILE, "[--no-compile]" },
	{ "shared-hit-table", no_argument, OPT_SHARED_HITS, "[--shared-hit-table | --no-shared-hit-table]" },
	{ "no-shared-hit-table", no_argument, OPT_NO_SHARED_HITS, "" },
	{ "idle-timeout", required_argument, OPT_IDLE_TIMEOUT, "[--idle-timeout SECONDS]" },
	{ "max-conns-per-uid", required_argument, OPT_CONNS_PER_UID, "[--max-conns-per-uid N]" },
	{ "conn-idle-timeout", required_argument, OPT_CONN_IDLE, "[--conn-idle-timeout SECONDS]" },
	{ "max-resolves-per-uid", required_argument, OPT_RESOLVES_PER_UID, "[--max-resolves-per-uid N]" },
	{ "max-request-bytes", required_argument, OPT_REQ_BYTES, "[--max-request-bytes SIZE]" },
	{ "max-request-bytes-per-uid", required_argument, OPT_REQ_BYTES_UID, "[--max-request-bytes-per-uid SIZE]" },
	{ "max-size-per-uid", required_argument, OPT_MAX_SIZE_UID, "[--max-size-per-uid SIZE]" },
	{ "worker-user", required_argument, OPT_WORKER_USER, "[--worker-user NAME]" },
	{ "socket-group", required_argument, OPT_SOCKET_GROUP, "[--socket-group GROUP]" },
	/* The readiness pipe of a client's autostart (client/connect.c). */
	{ "ready-fd", required_argument, OPT_READY_FD, NULL },
	{ "prestart", required_argument, OPT_PRESTART, "[--prestart FAMILY,...]" },
	{ "version", no_argument, OPT_VERSION, "[--version]" },
	{ "job-idle-timeout", required_argument, OPT_JOB_IDLE, "[--job-idle-timeout SECONDS]" },
	{ "worker-share", required_argument, OPT_WORKER_SHARE, "[--worker-share PERCENT]" },
	{ "worker-max-rss", required_argument, OPT_WORKER_RSS, "[--worker-max-rss SIZE]" },
	{ "sysfs-root", required_argument, OPT_SYSFS, NULL },
	{ "help", no_argument, 'h', NULL },
};

#define N_OPTS KJ_ARRAY_SIZE(opt_rows)
_Static_assert(KJ_ARRAY_SIZE(opt_rows) <= KJ_OPT_ROWS_MAX, "struct kj__config's origin[] is too small");

/* The usage text, wrapped at 100 columns, onto f. */
static void print_usage(FILE *f)
{
	char frag[160], fams[64];
	int col = fprintf(f, "usage: kjitd");

	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt_row *o = &opt_rows[i];
		if (o->usage == NULL || o->usage[0] == '\0')
			continue;
		if (strstr(o->usage, "%s")) {
			kj__family_choices(o->val == OPT_HIP_COMPILER ? KJIT_BACKEND_HIP : KJIT_BACKEND_CUDA, "|", fams,
					   sizeof fams);
			snprintf(frag, sizeof frag, o->usage, fams);
		} else {
			snprintf(frag, sizeof frag, "%s", o->usage);
		}
		if (col + 1 + (int)strlen(frag) > 100)
			col = fprintf(f, "\n            ") - 1;
		col += fprintf(f, " %s", frag);
	}
	fputc('\n', f);
}

void kj__options_usage(FILE *f)
{
	print_usage(f);
}

const char *kj__option_at(size_t i, int *shown)
{
	if (i >= N_OPTS)
		return NULL;
	*shown = opt_rows[i].usage != NULL;
	return opt_rows[i].name;
}

int kj__option_has_arg(size_t i)
{
	return i < N_OPTS && opt_rows[i].has_arg == required_argument;
}

int kj__usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "kjitd: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	print_usage(stderr);
	return 2;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

static int set_arch(struct kj__config *cfg, int backend, const char *s)
{
	char canon[KJ_TARGET_MAX], err[256];

	if (kj__target_canon(backend, s, canon, sizeof canon, err, sizeof err) < 0) {
		fprintf(stderr, "kjitd: --%s %s: %s\n",
			backend == KJIT_BACKEND_HIP ? "hip-arch" : backend == KJIT_BACKEND_CUDA ? "cuda-arch" : "vulkan-env",
			s, err);
		return 2;
	}
	free(cfg->arch[backend]);
	cfg->arch[backend] = kj__strdup(canon);
	return 0;
}

/* "0" (none), "90" (seconds) or a number with s, m, h or d: milliseconds. */
static int parse_duration_ms(const char *s, uint64_t *out)
{
	static const struct { char unit; uint64_t ms; } units[] = {
		{ 's', 1000 }, { 'm', 60000 }, { 'h', 3600000 }, { 'd', 86400000 },
	};
	char *end;
	uint64_t mul = 1000;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-' || v > 3650ull * 86400)
		return -1;
	if (*end != '\0') {
		mul = 0;
		for (size_t i = 0; i < KJ_ARRAY_SIZE(units); i++)
			if (end[0] == units[i].unit && end[1] == '\0')
				mul = units[i].ms;
		if (mul == 0)
			return -1;
	}
	*out = (uint64_t)v * mul;
	return 0;
}

/* --remote-lookup-timeout MS or MS+MS: a GET's deadline, and what each MiB
 * of its reply adds once its length is read.  0 or an exit status. */
static int parse_lookup_timeout(const char *arg, struct kj__config *cfg)
{
	char base[32];
	const char *plus = strchr(arg, '+');
	unsigned long v, per = 0;

	snprintf(base, sizeof base, "%.*s", plus ? (int)(plus - arg) : (int)strlen(arg), arg);
	if (strlen(arg) >= sizeof base || parse_uint(base, 60000, &v) < 0 || v == 0 ||
	    (plus && (parse_uint(plus + 1, 60000, &per) < 0 || per == 0)))
		return kj__usage_error("--remote-lookup-timeout '%s': expected milliseconds, 1 to 60000, optionally "
				       "+ milliseconds per MiB (5+1)", arg);
	cfg->remote_lookup_ms = (unsigned)v;
	if (plus)
		cfg->remote_lookup_per_mib = (unsigned)per;
	return 0;
}

/* The fleet tier's options (remote/remote.h); -1 when c is not one of
 * them, else 0 or an exit status. */
static int parse_remote_opt(int c, const char *arg, struct kj__config *cfg)
{
	char err[512];
	unsigned long v;
	uint64_t size;

	switch (c) {
	case OPT_REMOTE:
		if (kj__remote_url_check(arg, err, sizeof err) < 0) {
			fprintf(stderr, "kjitd: --remote: %s\n", err);
			return 2;
		}
		free(cfg->remote_url);
		cfg->remote_url = kj__strdup(arg);
		return 0;
	case OPT_REMOTE_PREFIX:
		if (*arg == '\0' || strlen(arg) > KJ_NAME_MAX || strpbrk(arg, " \t\r\n"))
			return kj__usage_error("--remote-prefix '%s': expected a short name without spaces, like kjit:v1:", arg);
		free(cfg->remote_prefix);
		cfg->remote_prefix = kj__strdup(arg);
		return 0;
	case OPT_REMOTE_TTL:
		if (parse_duration_ms(arg, &cfg->remote_ttl_ms) < 0)
			return kj__usage_error("--remote-ttl '%s': expected a duration like 3600, 90m, 12h or 30d (0: none)", arg);
		return 0;
	case OPT_REMOTE_MODE:
		if (strcmp(arg, "ro") != 0 && strcmp(arg, "rw") != 0)
			return kj__usage_error("--remote-mode '%s': expected ro or rw", arg);
		cfg->remote_mode = arg[1] == 'o' ? KJ_REMOTE_RO : KJ_REMOTE_RW;
		return 0;
	case OPT_REMOTE_TIMEOUT:
		if (parse_uint(arg, 60000, &v) < 0 || v == 0)
			return kj__usage_error("--remote-timeout '%s': expected milliseconds, 1 to 60000", arg);
		cfg->remote_timeout_ms = (unsigned)v;
		return 0;
	case OPT_REMOTE_LOOKUP:
		return parse_lookup_timeout(arg, cfg);
	case OPT_REMOTE_SECRET:
		free(cfg->remote_secret_file);
		cfg->remote_secret_file = kj__strdup(arg);
		return 0;
	case OPT_REMOTE_MAX:
		if (kj__parse_size(arg, &size) < 0 || size == 0)
			return kj__usage_error("--remote-max-object '%s': expected a size like 64M", arg);
		cfg->remote_max_object = size;
		return 0;
	case OPT_SHARED_HITS:
		cfg->shared_hit_table = 1;
		cfg->no_hit_table = 0;
		return 0;
	case OPT_NO_SHARED_HITS:
		cfg->no_hit_table = 1;
		cfg->shared_hit_table = 0;
		return 0;
	case OPT_NO_COMPILE:
		cfg->no_compile = 1;
		return 0;
	}
	return -1;
}

/* The limits' options (daemon/net/quota.c, docs/reliability.md); -1 when c is
 * not one of them, else 0 or an exit status. */
static int parse_limit_opt(int c, const char *arg, struct kj__config *cfg)
{
	unsigned long v;
	uint64_t size;

	switch (c) {
	case OPT_IDLE_TIMEOUT:
	case OPT_CONN_IDLE:
		if (parse_uint(arg, 30ul * 86400, &v) < 0)
			return kj__usage_error("--idle-timeout/--conn-idle-timeout '%s': expected seconds (0: never)", arg);
		if (c == OPT_IDLE_TIMEOUT) {
			cfg->idle_timeout_ms = (uint64_t)v * 1000;
			cfg->idle_timeout_set = 1;
		} else {
			cfg->conn_idle_ms = v ? (uint64_t)v * 1000 : UINT64_MAX; /* UINT64_MAX: never, set below */
		}
		return 0;
	case OPT_CONNS_PER_UID:
		if (parse_uint(arg, 1000000, &v) < 0)
			return kj__usage_error("--max-conns-per-uid '%s': expected a number (0: no cap)", arg);
		cfg->conn_max_per_uid = v ? (unsigned)v : UINT_MAX;
		return 0;
	case OPT_RESOLVES_PER_UID: /* GETs resolving at once per uid (offhash.c) */
		if (parse_uint(arg, 1000000, &v) < 0)
			return kj__usage_error("--max-resolves-per-uid '%s': expected a number (0: no cap)", arg);
		cfg->resolve_max_per_uid = v ? (unsigned)v : UINT_MAX;
		return 0;
	case OPT_REQ_BYTES:
	case OPT_REQ_BYTES_UID:
		if (kj__parse_size(arg, &size) < 0 || size < (1u << 20))
			return kj__usage_error("--max-request-bytes[-per-uid] '%s': expected a size of 1M or more, like 512M", arg);
		*(c == OPT_REQ_BYTES ? &cfg->buf_max_total : &cfg->buf_max_per_uid) = size;
		return 0;
	case OPT_JOB_IDLE: /* a job without CPU progress (pool.c) */
		if (parse_uint(arg, 86400, &v) < 0 || v == 0)
			return kj__usage_error("--job-idle-timeout '%s': expected seconds, 1 to 86400", arg);
		cfg->job_idle_ms = (unsigned)v * 1000;
		return 0;
	case OPT_WORKER_SHARE: /* of a family's workers, one uid's while another waits (pool.c) */
		if (parse_uint(arg, 100, &v) < 0 || v == 0)
			return kj__usage_error("--worker-share '%s': expected a percentage, 1 to 100", arg);
		cfg->worker_share = (unsigned)v;
		return 0;
	case OPT_WORKER_RSS:
		if (kj__parse_size(arg, &size) < 0 || size < (1u << 20))
			return kj__usage_error("--worker-max-rss '%s': expected a size of 1M or more, like 512M", arg);
		cfg->worker_max_rss = size;
		return 0;
	case OPT_MAX_SIZE_UID: /* a uid's share of the cache (cache/share.c); default --max-size / 4 */
		if (kj__parse_size(arg, &size) < 0 || size == 0)
			return kj__usage_error("--max-size-per-uid '%s': expected a size like 1G", arg);
		cfg->max_size_per_uid = size;
		return 0;
	}
	return -1;
}

/* --hip-compiler / --cuda-compiler: a family of that backend, by the
 * compilers' own table (compilers/compiler.c).  0 or exit status 2. */
static int set_family(char **slot, int backend, const char *opt, const char *arg)
{
	char choices[64], msg[256];

	if (kj__family_choose(arg, backend, 1) == NULL) {
		kj__family_choices(backend, " or ", choices, sizeof choices);
		snprintf(msg, sizeof msg, "%s '%.100s': expected %s", opt, arg, choices);
		return kj__usage_error("%s", msg);
	}
	free(*slot);
	*slot = kj__strdup(arg);
	return 0;
}

/* The compilers' options: targets, which compiler, how long a compile
 * may take and how long its failure is remembered; -1 when c is not one of
 * them, else 0 or an exit status. */
static int parse_compile_opt(int c, const char *arg, struct kj__config *cfg)
{
	unsigned long v;

	switch (c) {
	case OPT_HIP_ARCH:
		return set_arch(cfg, KJIT_BACKEND_HIP, arg);
	case OPT_CUDA_ARCH:
		return set_arch(cfg, KJIT_BACKEND_CUDA, arg);
	case OPT_VULKAN_ENV:
		return set_arch(cfg, KJIT_BACKEND_VULKAN, arg);
	case OPT_HIP_COMPILER:
		return set_family(&cfg->hip_compiler, KJIT_BACKEND_HIP, "--hip-compiler", arg);
	case OPT_CUDA_COMPILER:
		return set_family(&cfg->cuda_compiler, KJIT_BACKEND_CUDA, "--cuda-compiler", arg);
	case OPT_TIMEOUT:
		if (parse_uint(arg, 86400, &v) < 0 || v == 0)
			return kj__usage_error("--compile-timeout '%s': expected seconds, 1 to 86400", arg);
		cfg->compile_timeout_ms = (unsigned)v * 1000;
		return 0;
	case OPT_FAILED_TTL:
		if (parse_uint(arg, 3600, &v) < 0)
			return kj__usage_error("--failed-ttl '%s': expected seconds, 0 to 3600", arg);
		cfg->failed_ttl_ms = (unsigned)v * 1000u;
		cfg->failed_ttl_given = 1;
		return 0;
	}
	return -1;
}

/* --socket-group GROUP: a group name or number into cfg.  0, or a usage
 * error's exit status. */
static int socket_group_opt(const char *arg, struct kj__config *cfg)
{
	struct group *g = getgrnam(arg);
	unsigned long v;

	if (g != NULL)
		cfg->socket_gid = g->gr_gid;
	else if (parse_uint(arg, UINT_MAX - 1, &v) == 0)
		cfg->socket_gid = (gid_t)v;
	else
		return kj__usage_error("--socket-group '%s': no such group (create it with groupadd --system)", arg);
	free(cfg->socket_group);
	cfg->socket_group = kj__strdup(arg);
	return cfg->socket_group ? 0 : kj__usage_error("%s", "out of memory");
}

/* Who may connect and administer (daemon/net/access.c); -1 when c is not one
 * of them, else 0 or an exit status. */
static int parse_access_opt(int c, const char *arg, struct kj__config *cfg)
{
	unsigned long v;

	switch (c) {
	case OPT_SYSTEM:
		cfg->system_mode = 1;
		return 0;
	case OPT_ALLOW_UID:
		if (parse_uint(arg, UINT_MAX, &v) < 0 || cfg->n_allow_uid == KJ_ARRAY_SIZE(cfg->allow_uid))
			return kj__usage_error("--allow-uid '%s': expected a numeric uid (16 at most)", arg);
		cfg->allow_uid[cfg->n_allow_uid++] = (uid_t)v;
		return 0;
	case OPT_ALLOW_GID:
		if (parse_uint(arg, UINT_MAX, &v) < 0 || cfg->n_allow_gid == KJ_ARRAY_SIZE(cfg->allow_gid))
			return kj__usage_error("--allow-gid '%s': expected a numeric gid (16 at most)", arg);
		cfg->allow_gid[cfg->n_allow_gid++] = (gid_t)v;
		return 0;
	case OPT_ADMIN_GID:
		if (kj__admin_gid_opt(cfg, arg) < 0)
			return kj__usage_error("--admin-gid '%s': expected a numeric gid (16 at most)", arg);
		return 0;
	case OPT_SOCKET_GROUP:
		return socket_group_opt(arg, cfg);
	case OPT_READY_FD:
		if (parse_uint(arg, INT_MAX, &v) < 0)
			return kj__usage_error("--ready-fd '%s': expected a descriptor number", arg);
		cfg->ready_fd = (int)v;
		cfg->ready_fd_given = 1;
		return 0;
	}
	return -1;
}

/* Where the value of the row whose getopt value is c came from: origin
 * ("command line", "FILE:LINE") and the text given, appended to a
 * repeated option's; for `kjit config` (config.c).  0 or KJIT_ENOMEM. */
static int note_origin(struct kj__config *cfg, int c, const char *origin, const char *arg)
{
	for (size_t i = 0; i < N_OPTS; i++) {
		if (opt_rows[i].val != c)
			continue;
		char *v = cfg->given[i] && arg ? kj__asprintf("%s,%s", cfg->given[i], arg) : kj__strdup(arg ? arg : "yes");
		char *o = kj__strdup(origin);
		if (v == NULL || o == NULL) {
			free(v);
			free(o);
			return KJIT_ENOMEM;
		}
		free(cfg->given[i]);
		free(cfg->origin[i]);
		cfg->given[i] = v;
		cfg->origin[i] = o;
		return 0;
	}
	return 0;
}

/* --log-level NAME: syslog's priorities by name (log.c). */
static int parse_log_level(const char *arg, struct kj__config *cfg)
{
	static const char *const names[] = { "error", "warning", "notice", "info", "debug" };

	for (size_t i = 0; i < KJ_ARRAY_SIZE(names); i++)
		if (strcmp(arg, names[i]) == 0) {
			cfg->log_level = (int)i + 3; /* LOG_ERR is 3 ... LOG_DEBUG 7 */
			return 0;
		}
	return kj__usage_error("--log-level '%s': expected error, warning, notice, info or debug", arg);
}

/* getopt_long's tables from the rows: lo[N_OPTS + 1], shorts[2 * N_OPTS + 2]. */
static void getopt_tables(struct option *lo, char *shorts)
{
	size_t k = 0;

	memset(lo, 0, (N_OPTS + 1) * sizeof *lo);
	for (size_t i = 0; i < N_OPTS; i++) {
		lo[i] = (struct option){ opt_rows[i].name, opt_rows[i].has_arg, NULL, opt_rows[i].val };
		if (opt_rows[i].val < 256) {
			shorts[k++] = (char)opt_rows[i].val;
			if (opt_rows[i].has_arg == required_argument)
				shorts[k++] = ':';
		}
	}
	shorts[k] = '\0';
}

int kj__options_apply(int argc, char **argv, struct kj__config *cfg, const char *origin, const unsigned char *skip,
		      unsigned char *seen)
{
	struct option lo[N_OPTS + 1];
	char shorts[2 * N_OPTS + 2];
	unsigned long v;
	uint64_t size;
	int c, rc, idx;

	getopt_tables(lo, shorts);
	optind = 0; /* glibc: start afresh (the command line, then the configuration file's lines) */
	while ((idx = -1, c = getopt_long(argc, argv, shorts, lo, &idx)) != -1) {
		size_t row = 0;
		while (row < N_OPTS && opt_rows[row].val != c)
			row++;
		if (row < N_OPTS && skip && skip[row])
			continue; /* the command line gives it: the file's value is ignored */
		if (row < N_OPTS && seen)
			seen[row] = 1;
		if (row < N_OPTS && origin && note_origin(cfg, c, origin, optarg) < 0)
			return 1;
		if ((rc = parse_remote_opt(c, optarg, cfg)) >= 0 || (rc = parse_limit_opt(c, optarg, cfg)) >= 0 ||
		    (rc = parse_compile_opt(c, optarg, cfg)) >= 0 || (rc = parse_access_opt(c, optarg, cfg)) >= 0) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case 's': free(cfg->socket_path); cfg->socket_path = kj__strdup(optarg); break;
		case 'c': free(cfg->cache_dir); cfg->cache_dir = kj__strdup(optarg); break;
		case 'm':
			if (kj__parse_size(optarg, &size) < 0 || size == 0)
				return kj__usage_error("--max-size '%s': expected a size like 512M or 5G", optarg);
			cfg->max_size = size;
			break;
		case 'j':
			if (parse_uint(optarg, 256, &v) < 0 || v == 0)
				return kj__usage_error("--jobs '%s': expected a number from 1 to 256", optarg);
			cfg->jobs = (unsigned)v;
			break;
		case 'f': cfg->foreground = 1; break;
		case OPT_KERNELS: free(cfg->kernels_dir); cfg->kernels_dir = kj__strdup(optarg); break;
		case OPT_LOG: free(cfg->log_path); cfg->log_path = kj__strdup(optarg); break;
		case OPT_SYSFS: free(cfg->sysfs_root); cfg->sysfs_root = kj__strdup(optarg); break;
		case OPT_WORKER_USER: free(cfg->worker_user); cfg->worker_user = kj__strdup(optarg); break;
		case OPT_PRESTART: free(cfg->prestart); cfg->prestart = kj__strdup(optarg); break;
		case OPT_HOT:
		case OPT_MEMO:
			if (kj__parse_size(optarg, &size) < 0 || size == 0)
				return kj__usage_error("--hot-size/--memo-size '%s': expected a size like 64M", optarg);
			*(c == OPT_HOT ? &cfg->hot_size : &cfg->memo_size) = size;
			break;
		case OPT_LOG_LEVEL:
			if ((rc = parse_log_level(optarg, cfg)) != 0)
				return rc;
			break;
		case OPT_CONFIG: free(cfg->config_path); cfg->config_path = kj__strdup(optarg); break;
		case OPT_VERSION: printf("kjitd %s\n", KJ_PACKAGE_VERSION); return 0;
		case 'h': print_usage(stdout); return 0;
		default:
			fprintf(stderr, "kjitd: unknown option %s\n", optind > 0 && optind <= argc ? argv[optind - 1] : "");
			print_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		return kj__usage_error("unexpected argument '%s'", argv[optind]);
	if (cfg->ready_fd_given && !cfg->foreground)
		return kj__usage_error("%s", "--ready-fd needs --foreground (a detaching kjitd tells its parent instead)");
	return -1;
}

/* The command line, then the configuration file (config.c) for what the
 * command line leaves unsaid, then the command line again for its values:
 * the command line wins, and a repeated option is the command line's alone. */
int kj__options_parse(int argc, char **argv, struct kj__config *cfg)
{
	unsigned char seen[N_OPTS] = { 0 };
	struct kj__config cl = { 0 };
	int rc = kj__options_apply(argc, argv, &cl, NULL, NULL, seen);

	if (rc < 0)
		rc = kj__config_file_read(cfg, cl.config_path, cl.system_mode, seen);
	kj__options_free(&cl);
	return rc >= 0 ? rc : kj__options_apply(argc, argv, cfg, "command line", NULL, NULL);
}

/* Does argv[i] (an option) take the next argument as its value? */
int kj__option_takes_value(const char *a)
{
	size_t l = strlen(a);

	if (strchr(a, '=') != NULL && a[1] == '-')
		return 0;
	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt_row *o = &opt_rows[i];
		/* short options, possibly bundled ("-fs PATH"): by the last letter */
		if (a[1] != '-' ? l > 1 && o->val == (unsigned char)a[l - 1] : strcmp(a + 2, o->name) == 0)
			return o->has_arg == required_argument;
	}
	return 0;
}
