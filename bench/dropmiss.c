/* dropmiss.c: where a program's first NVRTC compile spends its time, the
 * same program run against the real libnvrtc.so.13 and through kjit's
 * drop-in (issue 31: a miss through the drop-in against the same first
 * call without kjit).  The program does what CuPy and PyTorch do: dlopen
 * "libnvrtc.so.13" by name, nvrtcVersion, then create, compile, the
 * object's size and bytes, the log size, destroy; each phase timed.  It
 * calls nothing of kjit's (the bench harness links libkjit in; nothing
 * here uses it), so which library answers is the library path's choice.
 *
 *   bench-dropmiss [-a ARCH] [-s SALT] [-S] [-f SOURCE] [-n N] [-g MS] [-j] [-c] [-P REAL,DROPIN [-R OPT]] [-- OPTIONS...]
 *
 * It compiles two new kernels: the first pays the library's first compile,
 * the second is a new kernel with everything loaded.  Each kernel's text
 * starts "// kjd salt SALT X" and "#define KJD_SALT N", N a hash of SALT and
 * X, and the default kernel adds KJD_SALT to its result: a new salt is new
 * code for kjit and for NVRTC's own cache (NVRTC 12.9+ caches bitcode to
 * PTX and PTX to cubin in the CUDA driver's compute cache, keyed by the
 * bitcode, which a comment does not change: issue 31's "NVRTC's own
 * cache").  -S keeps N at 0 (the salt a comment only: new to kjit, the same
 * code for NVRTC, as this bench did before); a -f SOURCE that does not use
 * KJD_SALT is salted by the comment alone.  One line:
 *   dropmiss load_ms= version_ms= create_ms= compile1_ms= get_ms= compile2_ms= total1_ms=
 *            compile2_cpu_ms= compile2_minflt= cache=C1/C2 lib=PATH
 * cache: NVRTC's cache for each compile, from its log when OPTIONS hold
 * --enable-cache-trace: H (a hit: "retrieved cached"), M (a miss: "Cache
 * miss"), X (no cache: it failed to load the driver or the cache), - (no
 * trace); a cubin compile has two steps (PTX, then cubin), so "MM", "HH".
 * (the second compile's CPU time and minor page faults in this process:
 * through the drop-in, the compile's are the worker's).
 * total1 is load + version + create + compile1 + get: a process's first
 * call.  bench/dropmiss.sh runs it both ways in fresh processes and prints
 * the medians.
 *
 * -n N (issue 31's worker question: why does kjitd's warm worker spend
 * 2.5-3x the CPU of a warm in-process compile on the H200 when both take
 * the same here?) then compiles N more new kernels in this process the way
 * the worker meets its jobs: -g MS idle before each (the worker waits for
 * requests), -j each in a fresh folder made the working directory and
 * TMPDIR (the worker's job-N).  A second line:
 *   dropmiss-later n= gap_ms= jobdir= ms=A,B,.. cpu_ms=A,B,.. cpus=C>C,.. cache=C,.. huge_kb=A/F
 * (each compile's wall and CPU time, the CPU it started>ended on; then
 * AnonHugePages/FilePmdMapped of /proc/self/smaps_rollup: memory and
 * NVRTC's code on huge pages).  -c first loads the CUDA driver and calls
 * cuInit (as PyTorch and CuPy have before their first compile, where a
 * fresh process's first compile took 18-37 ms on the H200 against ~200 ms
 * here without the driver): "dropmiss-cuda cuinit_ms= rc=".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int res_t;
typedef void *prog_t;

struct api {
	res_t (*version)(int *, int *);
	res_t (*create)(prog_t *, const char *, const char *, int, const char *const *, const char *const *);
	res_t (*compile)(prog_t, int, const char *const *);
	res_t (*size)(prog_t, size_t *);
	res_t (*get)(prog_t, char *);
	res_t (*log_size)(prog_t, size_t *);
	res_t (*log)(prog_t, char *);
	res_t (*destroy)(prog_t *);
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A kernel of the jiterator's kind: templates, a grid loop, no include. */
static const char default_src[] =
	"template <typename T> __device__ T kjd_op(T x, T y, T alpha)\n"
	"{ return -x * y + x - y + alpha + T(3); }\n"
	"template <typename T> __device__ T kjd_more(T x)\n"
	"{ T s = 0; for (int i = 0; i < 8; i++) s += x * (T)i / (T)(i + 1); return s; }\n"
	"extern \"C\" __global__ void kjd_kernel(float *out, const float *a, const float *b, float alpha, int n)\n"
	"{\n"
	"  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\n"
	"    out[i] = kjd_op<float>(a[i], b[i], alpha) + kjd_more<float>(a[i]) + (float)KJD_SALT;\n"
	"}\n";

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (s = calloc(1, (size_t)n + 1)) == NULL || fread(s, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "bench-dropmiss: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	return s;
}

/* The kernel's text: the salt comment, KJD_SALT (a 24-bit FNV-1a hash of
 * "SALT X", or 0 when code is 0), then fmt.  Returns a malloc'd string. */
static char *salted(const char *fmt, const char *salt, const char *x, int code)
{
	size_t tl = strlen(fmt) + strlen(salt) + strlen(x) + 64;
	char *text = malloc(tl), hs[256];
	uint32_t h = 2166136261u;

	if (text == NULL)
		exit(2);
	snprintf(hs, sizeof hs, "%s %s", salt, x);
	for (const char *c = hs; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	snprintf(text, tl, "// kjd salt %s %s\n#define KJD_SALT %uu\n%s", salt, x, code ? h & 0xffffffu : 0u, fmt);
	return text;
}

/* NVRTC's cache for one compile, from its --enable-cache-trace log (see
 * the top): up to two letters into c[3]. */
static void cache_state(const char *log, char *c)
{
	size_t k = 0;

	for (const char *p = log; p && *p && k < 2; p++) {
		if (strncmp(p, "retrieved cached", 16) == 0)
			c[k++] = 'H';
		else if (strncmp(p, "Cache miss", 10) == 0)
			c[k++] = 'M';
	}
	if (k == 0)
		c[k++] = strstr(log, "[nvrtc cache]") || strstr(log, "cache key") ? 'X' : '-';
	c[k] = '\0';
}

/* One program: create, compile, object size and bytes, log, destroy.
 * Adds the phases' times to t[0..2] (create, compile, get); NVRTC's cache
 * state into cache[3]. */
static int one(const struct api *A, const char *text, int n, const char *const *opts, double *t, char *cache)
{
	prog_t p = NULL;
	size_t len = 0, log_len = 0;
	double t0 = now_ms();
	char *obj, *log;

	if (A->create(&p, text, "kjd_kernel.cu", 0, NULL, NULL) != 0)
		return -1;
	double t1 = now_ms();
	res_t r = A->compile(p, n, opts);
	double t2 = now_ms();
	if (r != 0 || A->size(p, &len) != 0 || (obj = malloc(len ? len : 1)) == NULL || A->get(p, obj) != 0 ||
	    A->log_size(p, &log_len) != 0 || (log = calloc(1, log_len + 1)) == NULL || A->log(p, log) != 0) {
		fprintf(stderr, "bench-dropmiss: compile failed (%d)\n", r);
		return -1;
	}
	cache_state(log, cache);
	free(log);
	free(obj);
	A->destroy(&p);
	double t3 = now_ms();
	t[0] += t1 - t0;
	t[1] += t2 - t1;
	t[2] += t3 - t2;
	return 0;
}

static double cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* "A/F": AnonHugePages and FilePmdMapped (kB) of /proc/self/smaps_rollup. */
static void huge_kb(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long a = -1, fp = -1;

	while (f && fgets(line, sizeof line, f)) {
		sscanf(line, "AnonHugePages: %ld", &a);
		sscanf(line, "FilePmdMapped: %ld", &fp);
	}
	if (f)
		fclose(f);
	snprintf(out, len, "%ld/%ld", a, fp);
}

/* -n: n more new kernels, gap_ms idle before each, each in a fresh
 * working directory and TMPDIR under /tmp when jobdir; one line. */
static int later(const struct api *A, const char *fmt, const char *salt, int code, int n, int gap_ms, int jobdir,
		 int nopt, const char *const *opts)
{
	char base[] = "/tmp/kjd-later.XXXXXX", dir[64], x[32], st[3];

	if (jobdir && mkdtemp(base) == NULL)
		return -1;
	printf("dropmiss-later n=%d gap_ms=%d jobdir=%d", n, gap_ms, jobdir);
	char ms[4096] = "", cpu[4096] = "", cpus[4096] = "", cache[4096] = "";
	size_t lm = 0, lc = 0, lp = 0, lk = 0;
	for (int k = 0; k < n; k++) {
		double t[3] = { 0 };
		struct timespec gap = { gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L };
		if (gap_ms > 0)
			nanosleep(&gap, NULL);
		snprintf(dir, sizeof dir, "%s/job-%d", base, k);
		if (jobdir && (mkdir(dir, 0700) < 0 || chdir(dir) < 0 || setenv("TMPDIR", dir, 1) < 0))
			return -1;
		snprintf(x, sizeof x, "later %d", k);
		char *text = salted(fmt, salt, x, code);
		int c0 = sched_getcpu();
		double u0 = cpu_ms();
		if (one(A, text, nopt, opts, t, st) < 0)
			return -1;
		free(text);
		double u1 = cpu_ms();
		int c1 = sched_getcpu();
		if (jobdir && (chdir(base) < 0 || rmdir(dir) < 0))
			return -1;
		if (lm < sizeof ms)
			lm += (size_t)snprintf(ms + lm, sizeof ms - lm, "%s%.1f", k ? "," : "", t[1]);
		if (lc < sizeof cpu)
			lc += (size_t)snprintf(cpu + lc, sizeof cpu - lc, "%s%.1f", k ? "," : "", u1 - u0);
		if (lp < sizeof cpus)
			lp += (size_t)snprintf(cpus + lp, sizeof cpus - lp, "%s%d>%d", k ? "," : "", c0, c1);
		if (lk < sizeof cache)
			lk += (size_t)snprintf(cache + lk, sizeof cache - lk, "%s%s", k ? "," : "", st);
	}
	char hk[64];
	huge_kb(hk, sizeof hk);
	printf(" ms=%s cpu_ms=%s cpus=%s cache=%s huge_kb=%s\n", ms, cpu, cpus, cache, hk);
	if (jobdir)
		rmdir(base);
	return 0;
}

static int load(struct api *A, const char *lib, int ptx, char *path, size_t pathlen)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	Dl_info di;

	if (h == NULL) {
		fprintf(stderr, "bench-dropmiss: %s\n", dlerror());
		return -1;
	}
	*(void **)&A->version = dlsym(h, "nvrtcVersion");
	*(void **)&A->create = dlsym(h, "nvrtcCreateProgram");
	*(void **)&A->compile = dlsym(h, "nvrtcCompileProgram");
	*(void **)&A->size = dlsym(h, ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize");
	*(void **)&A->get = dlsym(h, ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
	*(void **)&A->log_size = dlsym(h, "nvrtcGetProgramLogSize");
	*(void **)&A->log = dlsym(h, "nvrtcGetProgramLog");
	*(void **)&A->destroy = dlsym(h, "nvrtcDestroyProgram");
	if (!A->version || !A->create || !A->compile || !A->size || !A->get || !A->log_size || !A->log || !A->destroy) {
		fprintf(stderr, "bench-dropmiss: a function is missing\n");
		return -1;
	}
	if (dladdr(*(void **)&A->create, &di) != 0 && di.dli_fname)
		snprintf(path, pathlen, "%s", di.dli_fname);
	return 0;
}

/* -P REAL,DROPIN: n new kernels compiled in turn by the real NVRTC and by
 * kjit's drop-in (both loaded by path into this process), each pair a few
 * tens of milliseconds apart, so both compiles of a pair meet the same
 * machine (on the H200's VM, and on a shared one, a process's CPU time per
 * compile takes one of two levels for seconds at a time, whoever compiles).
 * real_opt (-R) goes to the real NVRTC only (--no-cache: the worker's own
 * option, which the drop-in would forward).  One untimed compile each
 * first; then one line:
 *   dropmiss-pairs n= real_ms=A,B,.. kjit_ms=A,B,.. ratio_median=R ratio_min=R ratio_max=R */
static int pairs(const char *spec, const char *arch, const char *salt, const char *fmt, int n, int nopt,
		 const char **opts, const char *real_opt)
{
	char real[2048], *comma, x[32], path[4096], st[3];
	struct api A[2];
	int ptx = strncmp(arch, "compute_", 8) == 0, ro = nopt + (real_opt != NULL);
	double ms[2][256], ratio[256];

	snprintf(real, sizeof real, "%s", spec);
	if ((comma = strchr(real, ',')) == NULL || n < 1 || n > 256)
		return 2;
	*comma = '\0';
	if (load(&A[0], real, ptx, path, sizeof path) < 0 || load(&A[1], comma + 1, ptx, path, sizeof path) < 0)
		return 1;
	opts[nopt] = real_opt;
	for (int k = -1; k < n; k++)
		for (int w = 0; w < 2; w++) {
			double t[3] = { 0 };
			snprintf(x, sizeof x, "pair %d %s", k, w ? "kjit" : "real");
			char *text = salted(fmt, salt, x, 1);
			if (one(&A[w], text, w ? nopt : ro, opts, t, st) < 0)
				return 1;
			free(text);
			if (k >= 0)
				ms[w][k] = t[1];
		}
	printf("dropmiss-pairs n=%d", n);
	for (int w = 0; w < 2; w++)
		for (int k = 0; k < n; k++)
			printf("%s%.1f", k ? "," : w ? " kjit_ms=" : " real_ms=", ms[w][k]);
	for (int k = 0; k < n; k++) {
		double r = ms[1][k] / ms[0][k];
		int j = k;
		for (; j > 0 && ratio[j - 1] > r; j--)
			ratio[j] = ratio[j - 1];
		ratio[j] = r;
	}
	printf(" ratio_median=%.2f ratio_min=%.2f ratio_max=%.2f\n",
	       n % 2 ? ratio[n / 2] : (ratio[n / 2 - 1] + ratio[n / 2]) / 2, ratio[0], ratio[n - 1]);
	return 0;
}

/* -c: the CUDA driver loaded and initialised before NVRTC (cuinit_ms: both). */
static void cuda_first(void)
{
	double t0 = now_ms();
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	int (*init)(unsigned) = NULL;

	if (h != NULL)
		*(void **)&init = dlsym(h, "cuInit");
	int rc = init ? init(0) : -1;
	printf("dropmiss-cuda cuinit_ms=%.2f rc=%d\n", now_ms() - t0, rc);
}

int main(int argc, char **argv)
{
	const char *arch = "sm_90", *salt = "1", *fmt = default_src, *pair = NULL, *real_opt = NULL;
	const char *opts[64];
	int n = 0, i = 1, maj = 0, min = 0, n_later = 0, gap_ms = 0, jobdir = 0, cuda = 0, comment = 0;
	char archopt[64], path[4096] = "?", s1[3], s2[3];
	struct api A;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "-j") == 0 || strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "-S") == 0) {
			*(argv[i][1] == 'j' ? &jobdir : argv[i][1] == 'c' ? &cuda : &comment) = 1;
			continue;
		}
		if (i + 1 >= argc)
			goto usage;
		if (strcmp(argv[i], "-a") == 0)
			arch = argv[++i];
		else if (strcmp(argv[i], "-s") == 0)
			salt = argv[++i];
		else if (strcmp(argv[i], "-f") == 0)
			fmt = read_file(argv[++i]);
		else if (strcmp(argv[i], "-n") == 0)
			n_later = atoi(argv[++i]);
		else if (strcmp(argv[i], "-g") == 0)
			gap_ms = atoi(argv[++i]);
		else if (strcmp(argv[i], "-P") == 0)
			pair = argv[++i];
		else if (strcmp(argv[i], "-R") == 0)
			real_opt = argv[++i];
		else
			goto usage;
	}
	snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
	opts[n++] = archopt;
	for (i++; i < argc && n < 63; i++)
		opts[n++] = argv[i];
	char *t1 = salted(fmt, salt, "a", !comment), *t2 = salted(fmt, salt, "b", !comment);

	struct rusage ru0, ru1;
	if (cuda)
		cuda_first();
	double t0 = now_ms(), t[3] = { 0 }, c2[3] = { 0 };
	if (pair)
		return pairs(pair, arch, salt, fmt, n_later, n, opts, real_opt);
	if (load(&A, "libnvrtc.so.13", strncmp(arch, "compute_", 8) == 0, path, sizeof path) < 0)
		return 1;
	double tl0 = now_ms();
	if (A.version(&maj, &min) != 0)
		return 1;
	double tv = now_ms();
	if (one(&A, t1, n, opts, t, s1) < 0 || getrusage(RUSAGE_SELF, &ru0) < 0 || one(&A, t2, n, opts, c2, s2) < 0 ||
	    getrusage(RUSAGE_SELF, &ru1) < 0)
		return 1;
	printf("dropmiss load_ms=%.2f version_ms=%.2f create_ms=%.3f compile1_ms=%.2f get_ms=%.3f compile2_ms=%.2f "
	       "total1_ms=%.2f compile2_cpu_ms=%.1f compile2_minflt=%ld cache=%s/%s lib=%s\n",
	       tl0 - t0, tv - tl0, t[0], t[1], t[2], c2[1], (tl0 - t0) + (tv - tl0) + t[0] + t[1] + t[2],
	       (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e3 +
		       (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e3,
	       ru1.ru_minflt - ru0.ru_minflt, s1, s2, path);
	fflush(stdout);
	if (n_later > 0 && later(&A, fmt, salt, !comment, n_later, gap_ms, jobdir, n, opts) < 0) {
		fprintf(stderr, "bench-dropmiss: a later compile failed\n");
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: bench-dropmiss [-a ARCH] [-s SALT] [-S] [-f SOURCE] [-n N] [-g MS] [-j] [-c] [-P REAL,DROPIN [-R OPT]] [-- OPTIONS...]\n");
	return 2;
}
