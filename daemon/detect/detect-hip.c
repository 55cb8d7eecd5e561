/* detect-hip.c: which AMD GPUs this machine has, and which ROCm is installed.
 *
 * Source of truth is the KFD topology the amdgpu driver publishes in sysfs,
 * read the way ROCm's own thunk (libhsakmt/src/topology.c) and runtime
 * (ROCR amd_gpu_agent.cpp) read it:
 *   <root>/class/kfd/kfd/topology/nodes/N/properties   "key value" lines:
 *     gfx_target_version  major*10000 + minor*100 + stepping (90010 = gfx90a);
 *                         0 on CPU nodes, which are skipped
 *     capability          bit 26, HSA_CAP_SRAM_EDCSUPPORTED (0x04000000,
 *                         include/uapi/linux/kfd_sysfs.h; bit 19 is the old
 *                         HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED): set means
 *                         sramecc+, clear sramecc- (ROCR's default rule), for
 *                         processors that support sramecc
 *     drm_render_minor    finds <root>/class/drm/renderD<minor>/device/
 *                         product_name, the board's marketing name, if any
 *   <root>/class/kfd/kfd/topology/nodes/N/name         the ASIC name, used as
 *                                                      the name otherwise
 *   <root>/module/amdgpu/parameters/noretry            system-wide XNACK
 *     default: 0 = retry on = xnack+, 1 = xnack-, -1 (auto; the kernel picks
 *     per ASIC and version) or absent = not reported, i.e. "any", which an
 *     xnack+ and an xnack- process can both load.  A process may switch its
 *     own mode with HSA_XNACK; that is the client's business
 *     (kj__hsa_xnack_apply).
 * Only when the real /sys has no KFD does rocminfo run (without
 * HSA_OVERRIDE_GFX_VERSION / HSA_XNACK in its environment, so that it
 * reports the hardware), killed after KJ_DETECT_TOOL_TIMEOUT_MS.
 *
 * The ROCm version is, first, <ROCM_PATH or /opt/rocm>/.info/version
 * ("6.2.0-66" -> "6.2"), else the version in the file name of the installed
 * HIP runtime (libamdhip64.so.5.2.21153 -> "5.2", Debian's packaging).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "detect.h"
#include "kj_types.h"
#include "targetid.h"
#include "util.h"

extern char **environ;

#define SRAM_EDCSUPPORTED 0x04000000u /* HSA_CAP_SRAM_EDCSUPPORTED, kfd_sysfs.h */
#define DIR_MAX 3072                   /* a sysfs root longer than this is not looked at */
#define NODES_MAX 1024                 /* KFD nodes we look at (CPUs + GPUs + XCP partitions) */

/* Reads a small sysfs file into out with trailing whitespace removed.
 * 0, or -1 when absent or empty. */
static int read_line_file(const char *path, char *out, size_t outlen)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int r = -1;

	if (kj__read_file(path, KJ_DETECT_SYSFS_FILE_MAX, &data, &len) != 0)
		goto out;
	char *s = (char *)data;
	s[strcspn(s, "\n")] = '\0';
	len = strlen(s);
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		s[--len] = '\0';
	if (len == 0)
		goto out;
	snprintf(out, outlen, "%s", s);
	r = 0;
out:
	free(data);
	return r;
}

struct node_props {
	int has_gfx;
	unsigned long long gfx_target_version;
	unsigned long long capability;
	long long drm_render_minor;
	unsigned long long simd_count;
};

/* Parses a KFD properties file.  0, or -1 when it cannot be read. */
static int read_props(const char *path, struct node_props *np)
{
	uint8_t *data = NULL;
	size_t len = 0;

	memset(np, 0, sizeof *np);
	np->drm_render_minor = -1;
	if (kj__read_file(path, KJ_DETECT_SYSFS_FILE_MAX, &data, &len) != 0)
		return -1;
	char *save = NULL;
	for (char *line = strtok_r((char *)data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[64];
		long long v;
		if (sscanf(line, "%63s %lld", key, &v) != 2)
			continue;
		if (strcmp(key, "gfx_target_version") == 0) {
			np->has_gfx = 1;
			np->gfx_target_version = (unsigned long long)v;
		} else if (strcmp(key, "capability") == 0) {
			np->capability = (unsigned long long)v;
		} else if (strcmp(key, "drm_render_minor") == 0) {
			np->drm_render_minor = v;
		} else if (strcmp(key, "simd_count") == 0) {
			np->simd_count = (unsigned long long)v;
		}
	}
	free(data);
	return 0;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

/* The system-wide XNACK default from amdgpu's noretry parameter. */
static int xnack_default(const char *root)
{
	char path[4096], v[32];

	snprintf(path, sizeof path, "%s/module/amdgpu/parameters/noretry", root);
	if (read_line_file(path, v, sizeof v) != 0)
		return KJ_FEAT_ANY;
	if (strcmp(v, "0") == 0)
		return KJ_FEAT_ON;
	if (strcmp(v, "1") == 0)
		return KJ_FEAT_OFF;
	return KJ_FEAT_ANY;
}

/* Fills g from one GPU node.  0, or -1 (with *why) when it is skipped. */
static int node_to_gpu(const char *root, const char *dir, unsigned id, const struct node_props *np,
		       int xnack, struct kj__gpu *g, char *why, size_t whylen)
{
	struct kj__amd_target t = { .xnack = KJ_FEAT_ANY, .sramecc = KJ_FEAT_ANY };
	unsigned long long v = np->gfx_target_version;
	char path[4096];
	int has_xnack = 0, has_sramecc = 0;

	if (kj__amd_processor_from_version((unsigned)(v / 10000), (unsigned)(v / 100 % 100),
					   (unsigned)(v % 100), t.processor, sizeof t.processor) != 0) {
		snprintf(why, whylen, "KFD node %u has gfx_target_version %llu, not a known AMD processor",
			 id, v);
		return -1;
	}
	kj__amd_processor_supports(t.processor, &has_xnack, &has_sramecc);
	if (has_sramecc)
		t.sramecc = (np->capability & SRAM_EDCSUPPORTED) ? KJ_FEAT_ON : KJ_FEAT_OFF;
	if (has_xnack)
		t.xnack = xnack;
	memset(g, 0, sizeof *g);
	g->backend = KJIT_BACKEND_HIP;
	if (kj__amd_target_format(&t, g->target, sizeof g->target) != 0) {
		snprintf(why, whylen, "KFD node %u: cannot format its target", id);
		return -1;
	}
	path[0] = '\0';
	if (np->drm_render_minor >= 0)
		snprintf(path, sizeof path, "%s/class/drm/renderD%lld/device/product_name", root,
			 np->drm_render_minor);
	if (path[0] == '\0' || read_line_file(path, g->name, sizeof g->name) != 0) {
		snprintf(path, sizeof path, "%s/%u/name", dir, id);
		if (read_line_file(path, g->name, sizeof g->name) != 0)
			g->name[0] = '\0';
	}
	return 0;
}

/* Reads the KFD topology under root.  Returns 0 with *n set, or -ENOENT
 * when there is no topology directory at all. */
static int hip_from_sysfs(const char *root, struct kj__gpu *gpus, size_t max, size_t *n,
			  char *note, size_t notelen)
{
	char dir[DIR_MAX], path[4096], why[256] = "";
	unsigned ids[NODES_MAX];
	size_t nid = 0, found = 0, skipped = 0;
	DIR *d;
	struct dirent *e;

	int dl = snprintf(dir, sizeof dir, "%s/class/kfd/kfd/topology/nodes", root);
	if (dl < 0 || (size_t)dl >= sizeof dir || (d = opendir(dir)) == NULL)
		return -ENOENT;
	while ((e = readdir(d)) != NULL && nid < NODES_MAX) {
		char *end;
		unsigned long id = strtoul(e->d_name, &end, 10);
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && *end == '\0')
			ids[nid++] = (unsigned)id;
	}
	closedir(d);
	qsort(ids, nid, sizeof ids[0], cmp_uint);

	int xnack = xnack_default(root);
	for (size_t i = 0; i < nid && found < max; i++) {
		struct node_props np;
		snprintf(path, sizeof path, "%s/%u/properties", dir, ids[i]);
		if (read_props(path, &np) != 0)
			continue;
		if (!np.has_gfx) {
			if (np.simd_count > 0) {
				snprintf(why, sizeof why, "KFD node %u reports no gfx_target_version "
					 "(kernel older than 5.11?)", ids[i]);
				skipped++;
			}
			continue;
		}
		if (np.gfx_target_version == 0)
			continue; /* a CPU node */
		if (node_to_gpu(root, dir, ids[i], &np, xnack, &gpus[found], why, sizeof why) != 0) {
			skipped++;
			continue;
		}
		found++;
	}
	*n = found;
	if (found == 0)
		kj__seterr(note, notelen, "no AMD GPU: the KFD topology in %s has no GPU node%s%s; set "
			 "KJIT_HIP_ARCH (e.g. gfx90a)", dir, skipped ? ": " : "", why);
	else if (skipped)
		kj__seterr(note, notelen, "%s", why);
	return 0;
}

/* Builds rocminfo's environment: ours less the variables that would make it
 * report something other than the hardware.  The array points into environ. */
static char **tool_env(void)
{
	size_t k = 0, m = 0;

	while (environ && environ[k])
		k++;
	char **env = calloc(k + 1, sizeof *env);
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < k; i++)
		if (strncmp(environ[i], "HSA_OVERRIDE_GFX_VERSION", 24) != 0 &&
		    strncmp(environ[i], "HSA_XNACK=", 10) != 0)
			env[m++] = environ[i];
	env[m] = NULL;
	return env;
}

/* Starts rocminfo (from PATH, else /opt/rocm/bin) with env, stdin and
 * stderr on /dev/null and stdout on a new pipe whose read end becomes *rfd.
 * 0 with *pid set; -ENOENT when not installed; another -errno otherwise. */
static int spawn_rocminfo(char **env, int *rfd, pid_t *pid)
{
	static const char *const paths[] = { "rocminfo", "/opt/rocm/bin/rocminfo" };
	posix_spawn_file_actions_t fa;
	int p[2] = { -1, -1 }, r, e;

	*pid = -1;
	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	if ((e = posix_spawn_file_actions_init(&fa)) != 0) {
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if ((e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
	    (e = posix_spawn_file_actions_adddup2(&fa, p[1], 1)) != 0 ||
	    (e = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)) != 0) {
		r = -e;
		goto out;
	}
	r = -ENOENT;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(paths) && *pid < 0; i++) {
		char *argv[] = { (char *)paths[i], NULL };
		e = posix_spawnp(pid, paths[i], &fa, NULL, argv, env);
		if (e != 0) {
			*pid = -1;
			r = -e;
		}
	}
	if (*pid >= 0)
		r = 0;
out:
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r == 0)
		*rfd = p[0];
	else
		close(p[0]);
	return r;
}

/* Reads the tool's output from fd until end of file, keeping at most
 * KJ_DETECT_TOOL_OUTPUT_MAX bytes in buf (*len of them; the rest is
 * drained), and kills pid when that takes past KJ_DETECT_TOOL_TIMEOUT_MS.
 * 0 at end of file, -ETIMEDOUT. */
static int read_tool_output(int fd, pid_t pid, char *buf, size_t *len)
{
	uint64_t deadline = kj__now_us() + (uint64_t)KJ_DETECT_TOOL_TIMEOUT_MS * 1000;

	for (;;) {
		uint64_t now = kj__now_us();
		if (now >= deadline) {
			kill(pid, SIGKILL);
			return -ETIMEDOUT;
		}
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int pr = poll(&pfd, 1, (int)((deadline - now) / 1000) + 1);
		if (pr <= 0)
			continue;
		char tmp[4096];
		ssize_t k = read(fd, tmp, sizeof tmp);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return 0;
		size_t take = (size_t)k < KJ_DETECT_TOOL_OUTPUT_MAX - *len ? (size_t)k
									   : KJ_DETECT_TOOL_OUTPUT_MAX - *len;
		memcpy(buf + *len, tmp, take);
		*len += take;
	}
}

/* Runs rocminfo, capturing at most KJ_DETECT_TOOL_OUTPUT_MAX bytes of its
 * standard output into *out (malloc'd, NUL-terminated).  0 when it ran and
 * exited 0; -ENOENT when not installed; another -errno otherwise. */
static int run_rocminfo(char **out)
{
	char **env = NULL, *buf = NULL;
	size_t len = 0;
	int fd = -1, r = -ENOMEM, st = 0;
	pid_t pid = -1;

	if ((env = tool_env()) == NULL || (buf = malloc(KJ_DETECT_TOOL_OUTPUT_MAX + 1)) == NULL)
		goto out;
	r = spawn_rocminfo(env, &fd, &pid);
	if (r != 0)
		goto out;
	r = read_tool_output(fd, pid, buf, &len);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (r == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		r = -EIO;
	if (r != 0)
		goto out;
	/* success */
	buf[len] = '\0';
	*out = buf;
	buf = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(env);
	return r;
}

/* The value after "Key:" on a rocminfo line, trimmed, or NULL. */
static const char *rocminfo_value(char *line, const char *key)
{
	char *s = line + strspn(line, " \t");
	size_t k = strlen(key);

	if (strncmp(s, key, k) != 0 || s[k] != ':')
		return NULL;
	s += k + 1;
	s += strspn(s, " \t");
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

struct agent {
	int gpu;
	char isa[KJ_TARGET_MAX];  /* from the first parseable ISA line */
	char name[KJ_TARGET_MAX]; /* from "Name: gfx..." */
	char marketing[128];
};

static void agent_emit(const struct agent *a, struct kj__gpu *gpus, size_t max, size_t *n)
{
	char canon[KJ_TARGET_MAX];
	const char *t = a->isa[0] ? a->isa : a->name;

	if (!a->gpu || t[0] == '\0' || *n >= max)
		return;
	if (kj__target_canon(KJIT_BACKEND_HIP, t, canon, sizeof canon, NULL, 0) != 0)
		return;
	struct kj__gpu *g = &gpus[(*n)++];
	memset(g, 0, sizeof *g);
	g->backend = KJIT_BACKEND_HIP;
	snprintf(g->target, sizeof g->target, "%s", canon);
	snprintf(g->name, sizeof g->name, "%s", a->marketing);
}

int kj__hip_parse_rocminfo(const char *text, struct kj__gpu *gpus, size_t max, size_t *n)
{
	struct agent a = { 0 };
	char line[1024];
	const char *p = text;
	int in_agent = 0;

	*n = 0;
	while (p && *p) {
		size_t len = strcspn(p, "\n");
		snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
		p += len + (p[len] == '\n');
		const char *v;
		if (strncmp(line + strspn(line, " \t"), "Agent ", 6) == 0) {
			if (in_agent)
				agent_emit(&a, gpus, max, n);
			memset(&a, 0, sizeof a);
			in_agent = 1;
		} else if (!in_agent) {
			continue;
		} else if ((v = rocminfo_value(line, "Device Type")) != NULL) {
			a.gpu = strcmp(v, "GPU") == 0;
		} else if ((v = rocminfo_value(line, "Marketing Name")) != NULL) {
			snprintf(a.marketing, sizeof a.marketing, "%s", v);
		} else if ((v = rocminfo_value(line, "Name")) != NULL) {
			const char *triple = strstr(v, "amdgcn-amd-amdhsa--");
			if (triple && a.isa[0] == '\0' &&
			    kj__target_canon(KJIT_BACKEND_HIP, triple + 19, a.isa, sizeof a.isa, NULL, 0) != 0)
				a.isa[0] = '\0';
			else if (!triple && strncmp(v, "gfx", 3) == 0 && a.name[0] == '\0')
				snprintf(a.name, sizeof a.name, "%s", v);
		}
	}
	if (in_agent)
		agent_emit(&a, gpus, max, n);
	return 0;
}

int kj__detect_hip(const char *sysfs_root, struct kj__gpu *gpus, size_t max, size_t *n,
		   char *note, size_t notelen)
{
	const char *root = sysfs_root ? sysfs_root : "/sys";
	char version[KJ_VERSION_STR_MAX] = "", *text = NULL;
	int r;

	*n = 0;
	if (note && notelen)
		note[0] = '\0';
	r = hip_from_sysfs(root, gpus, max, n, note, notelen);
	if (r == -ENOENT && sysfs_root == NULL) {
		int rr = run_rocminfo(&text);
		if (rr == 0)
			kj__hip_parse_rocminfo(text, gpus, max, n);
		if (*n == 0)
			kj__seterr(note, notelen, "no AMD GPU: %s/class/kfd absent (amdgpu's KFD not loaded) and "
				 "rocminfo %s; set KJIT_HIP_ARCH (e.g. gfx90a)", root,
				 rr == -ENOENT ? "not installed" : rr == 0 ? "lists no GPU agent"
				 : rr == -ETIMEDOUT ? "timed out" : "failed");
	} else if (r == -ENOENT) {
		kj__seterr(note, notelen, "no AMD GPU: %s/class/kfd absent (amdgpu's KFD not loaded); set "
			 "KJIT_HIP_ARCH (e.g. gfx90a)", root);
	}
	free(text);
	kj__detect_runtime_version(KJIT_BACKEND_HIP, version, sizeof version);
	for (size_t i = 0; i < *n; i++)
		snprintf(gpus[i].version, sizeof gpus[i].version, "%s", version);
	return 0;
}

/* Copies the leading "N.N" of s into out.  0, or -1 if s does not start so. */
static int major_minor(const char *s, char *out, size_t outlen)
{
	size_t a = strspn(s, "0123456789");
	if (a == 0 || a > 4 || s[a] != '.')
		return -1;
	size_t b = strspn(s + a + 1, "0123456789");
	if (b == 0 || b > 4)
		return -1;
	if (a + 1 + b >= outlen)
		return -1;
	snprintf(out, outlen, "%.*s", (int)(a + 1 + b), s);
	return 0;
}

/* Compares dotted decimal versions; a longer one with the same prefix is
 * the greater ("5.2.1" > "5.2"). */
static int version_cmp(const char *x, const char *y)
{
	for (;;) {
		char *ex, *ey;
		unsigned long a = strtoul(x, &ex, 10), b = strtoul(y, &ey, 10);
		if (a != b)
			return a < b ? -1 : 1;
		if (*ex != '.' || *ey != '.')
			return (*ex == '.') - (*ey == '.');
		x = ex + 1;
		y = ey + 1;
	}
}

int kj__hip_runtime_version(char *out, size_t outlen)
{
	static const char *const libdirs[] = {
		"/opt/rocm/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
		"/usr/lib64", "/usr/lib", "/usr/local/lib",
	};
	static const char prefix[] = "libamdhip64.so.";
	const char *rocm_path = getenv("ROCM_PATH");
	char path[4096], line[KJ_VERSION_STR_MAX], best[256] = "";

	out[0] = '\0';
	for (int i = 0; i < 2; i++) {
		const char *base = i == 0 ? rocm_path : "/opt/rocm";
		if (base == NULL || base[0] == '\0')
			continue;
		snprintf(path, sizeof path, "%s/.info/version", base);
		if (read_line_file(path, line, sizeof line) == 0 && major_minor(line, out, outlen) == 0)
			return 0;
	}
	for (int i = -1; i < (int)KJ_ARRAY_SIZE(libdirs) && best[0] == '\0'; i++) {
		const char *dir = i < 0 ? NULL : libdirs[i];
		if (i < 0) {
			if (rocm_path == NULL || rocm_path[0] == '\0')
				continue;
			snprintf(path, sizeof path, "%s/lib", rocm_path);
			dir = path;
		}
		DIR *d = opendir(dir);
		if (d == NULL)
			continue;
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			const char *v = e->d_name + sizeof prefix - 1;
			if (strncmp(e->d_name, prefix, sizeof prefix - 1) != 0 ||
			    strspn(v, "0123456789.") != strlen(v) || strchr(v, '.') == NULL)
				continue;
			if (best[0] == '\0' || version_cmp(v, best) > 0)
				snprintf(best, sizeof best, "%s", v);
		}
		closedir(d);
	}
	if (best[0] && major_minor(best, out, outlen) != 0)
		out[0] = '\0';
	return 0;
}
