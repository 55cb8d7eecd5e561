/* cmd-run.c: `kjit run [--no-preload] [--quiet] [--] CMD [ARGS]`: runs CMD
 * with kjit's drop-in libnvrtc.so.13 and libhiprtc.so.6 (dropin/,
 * docs/dropin.md) first on its library path, so a program that loads NVRTC
 * or hiprtc by name gets kjit's; and the lines `kjit stats` prints about
 * the drop-in's counters (client/dropstat.c).
 *
 * What it sets, and why: LD_LIBRARY_PATH gets DIR/nvrtc and DIR/hiprtc
 * first (programs that dlopen "libnvrtc.so.13", "libhiprtc.so.6" or link
 * them); LD_PRELOAD gets DIR/nvrtc/libnvrtc.so.13 (programs that load the
 * NVRTC of their own wheel by absolute path first, as PyTorch does: the
 * drop-in, already loaded under the soname libnvrtc.so.13, then answers
 * every later load by that name; --no-preload leaves LD_PRELOAD alone).
 * Before that it makes sure kjitd runs (starting a per-user one as any
 * client does), with the environment it was given, so the daemon and its
 * workers never start with the drop-in on their library path; a kjitd it
 * starts gets KJITD_PRESTART=nvrtc,hiprtc, so their compilers load while
 * CMD starts up, not at its first compile.
 * DIR: $KJIT_DROPIN_DIR, else beside this kjit (build tree: BUILD/dropin;
 * installed: PREFIX/lib/kjit).  One line on stderr says which; --quiet
 * drops it.  The exit status is CMD's; 127 when it cannot be run.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-int.h"
#include "dropstat.h"
#include "util.h"

/* Does DIR/nvrtc/libnvrtc.so.13 exist?  Fills dir with DIR's real path. */
static int dropin_at(const char *cand, char *dir, size_t len)
{
	char p[PATH_MAX + 32], real[PATH_MAX];

	if (realpath(cand, real) == NULL || (size_t)snprintf(p, sizeof p, "%s/nvrtc/libnvrtc.so.13", real) >= sizeof p ||
	    access(p, R_OK) != 0)
		return 0;
	return (size_t)snprintf(dir, len, "%s", real) < len;
}

static int find_dropin(char *dir, size_t len)
{
	const char *env = getenv("KJIT_DROPIN_DIR");
	char exe[PATH_MAX], cand[PATH_MAX + 32];
	ssize_t n;

	if (env && *env)
		return dropin_at(env, dir, len);
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		return 0;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash == NULL)
		return 0;
	*slash = '\0';
	snprintf(cand, sizeof cand, "%s/dropin", exe);
	if (dropin_at(cand, dir, len))
		return 1;
	snprintf(cand, sizeof cand, "%s/../lib/kjit", exe);
	return dropin_at(cand, dir, len);
}

/* name=first:old (or first alone); 0 or -1 (no memory). */
static int prepend(const char *name, const char *first)
{
	const char *old = getenv(name);
	char *v = old && *old ? kj__asprintf("%s:%s", first, old) : kj__strdup(first);
	int r = v ? setenv(name, v, 1) : -1;

	free(v);
	return r;
}

/* A kjitd this starts loads the drop-ins' compilers at once (--prestart:
 * KJITD_PRESTART, unless the user set it), while the command starts up. */
static void ensure_daemon(int quiet)
{
	kjit_client *c = NULL;
	int set = getenv("KJITD_PRESTART") == NULL && setenv("KJITD_PRESTART", "nvrtc,hiprtc", 0) == 0;
	int r = kjit_open(&c, NULL);

	if (set)
		unsetenv("KJITD_PRESTART");
	if (r == 0) {
		kjit_close(c);
		return;
	}
	if (!quiet)
		fprintf(stderr, "kjit run: kjitd unreachable (%s): compiles go to the real libraries\n",
			kjit_last_error(NULL));
}

int kj__cmd_run(const struct cmd *cmd, int argc, char **argv)
{
	int preload = 1, quiet = 0, i = 1;
	char dir[PATH_MAX], libs[2 * PATH_MAX + 32], pre[PATH_MAX + 32];

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "--no-preload") == 0)
			preload = 0;
		else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0)
			quiet = 1;
		else
			return kj__cli_usage_error(cmd, "unknown option", argv[i]);
	}
	if (i >= argc)
		return kj__cli_usage_error(cmd, "no command given", NULL);
	if (!find_dropin(dir, sizeof dir))
		return kj__cli_fail(EX_FAIL, "run: kjit's drop-in libraries are not installed beside this kjit "
				    "(nvrtc/libnvrtc.so.13 under dropin/ or ../lib/kjit/); set KJIT_DROPIN_DIR");
	ensure_daemon(quiet);
	snprintf(libs, sizeof libs, "%s/nvrtc:%s/hiprtc", dir, dir);
	snprintf(pre, sizeof pre, "%s/nvrtc/libnvrtc.so.13", dir);
	if (prepend("LD_LIBRARY_PATH", libs) < 0 || (preload && prepend("LD_PRELOAD", pre) < 0))
		return kj__cli_fail(EX_FAIL, "run: out of memory");
	if (!quiet)
		fprintf(stderr, "kjit run: libnvrtc.so.13 and libhiprtc.so.6 from %s first on LD_LIBRARY_PATH%s\n", dir,
			preload ? "; libnvrtc.so.13 preloaded" : "");
	fflush(stdout);
	execvp(argv[i], &argv[i]);
	int e = errno;
	kj__cli_fail(e == ENOENT ? 127 : 126, "run: cannot run %s: %s", argv[i], strerror(e));
	return e == ENOENT ? 127 : 126;
}

void kj__cli_dropin_stats(FILE *f)
{
	uint64_t n[KJ_DS_COUNT], fwd = 0;
	char path[PATH_MAX];

	if (kj__dropstat_path(path, sizeof path) < 0 || kj__dropstat_read(n) < 0)
		return;
	for (int i = 1; i < KJ_DS_COUNT; i++)
		fwd += n[i];
	fprintf(f, "dropin_served    %llu\ndropin_forwarded %llu", (unsigned long long)n[KJ_DS_SERVED],
		(unsigned long long)fwd);
	for (int i = 1, first = 1; i < KJ_DS_COUNT; i++)
		if (n[i]) {
			fprintf(f, "%s%s %llu", first ? " (" : ", ", kj__dropstat_name(i), (unsigned long long)n[i]);
			first = 0;
		}
	fprintf(f, "%s   (this user's programs through kjit's libnvrtc/libhiprtc; %s)\n", fwd ? ")" : "", path);
}
