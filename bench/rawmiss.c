/* rawmiss.c: a single miss through kjitd against the raw compiler's warm
 * in-process compile of the same source (issue 25's goal: <= 1.1x).
 *
 *   bench-rawmiss FILE.comp --target vulkan1.2 --salt S [-n N] [--opt OPT]...
 *   bench-rawmiss FILE.cu --family nvrtc|hiprtc --target sm_90|gfx90a --salt S
 *                 [-I DIR]... [--kernel NAME] [-n N] [--opt OPT]...
 *
 * nvrtc, hiprtc: the library loaded with dlopen as compilers/nvrtc.c and
 * hiprtc.c do, one program created, compiled (--gpu-architecture=TARGET,
 * -I DIR for each header folder, the -D options and a distinct -DSALT) and
 * its cubin / code object taken, 3 warm-up compiles first; the kjit side
 * asks for FILE (--source, backend cuda / hip), or for the kernels-dir
 * kernel NAME with --kernel (then the daemon reads FILE and its headers).
 *
 * The raw side: libshaderc in this process, one compiler initialized and
 * warmed up by 3 compiles, then N compiles of FILE (GLSL compute, entry
 * main, the target's Vulkan environment, the -D options and a distinct
 * -DSALT each, as the kjit side sends), as kjitd's shaderc worker does.  The kjit side:
 * after 3 warm-up misses (workers started), N kjit_get of the same source,
 * each with a salt never asked before, so each is a miss ("compiled", or
 * the program fails).  Each raw compile is followed by its miss (A/B
 * alternating).  Prints one line:
 *
 *   raw_p50_us kjit_miss_p50_us ratio raw_mean_us kjit_miss_mean_us
 */
#include <dlfcn.h>
#include <shaderc/shaderc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define WARM 3
#define N_MAX 1000

static void usage(void)
{
	fprintf(stderr, "usage: bench-rawmiss FILE.comp --target vulkan1.N --salt S [-n N] [--opt OPT]...\n"
			"       bench-rawmiss FILE.cu --family nvrtc|hiprtc --target T --salt S [-I DIR]... [--kernel NAME]\n"
			"                     [-n N] [--opt OPT]...\n");
	exit(2);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (p = malloc((size_t)n + 1)) == NULL || fread(p, 1, (size_t)n, f) != (size_t)n)
		bench_die("cannot read %s", path);
	fclose(f);
	*len = (size_t)n;
	return p;
}

/* NVRTC's or hiprtc's five calls (the same shapes; 0 is success). */
struct rtc {
	int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *);
	int (*compile)(void *, int, const char *const *);
	int (*size)(void *, size_t *);
	int (*code)(void *, char *);
	int (*destroy)(void **);
};

static void rtc_load(const char *family, struct rtc *r)
{
	static const char *const nv[] = { "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", NULL };
	static const char *const hip[] = { "libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so", NULL };
	int is_nv = strcmp(family, "nvrtc") == 0;
	const char *const *libs = is_nv ? nv : hip;
	const char *pre = is_nv ? "nvrtc" : "hiprtc";
	void *lib = NULL;
	char name[64];

	for (int i = 0; lib == NULL && libs[i]; i++)
		lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL)
		bench_die("%s: no library (%s)", family, libs[0]);
#define RTC_SYM(field, suffix)                                                        \
	snprintf(name, sizeof name, "%s%s", pre, suffix);                                 \
	if ((*(void **)&r->field = dlsym(lib, name)) == NULL)                             \
		bench_die("%s: no %s", family, name);
	RTC_SYM(create, "CreateProgram");
	RTC_SYM(compile, "CompileProgram");
	RTC_SYM(size, is_nv ? "GetCUBINSize" : "GetCodeSize");
	RTC_SYM(code, is_nv ? "GetCUBIN" : "GetCode");
	RTC_SYM(destroy, "DestroyProgram");
#undef RTC_SYM
}

static double raw_rtc(const struct rtc *r, const char *src, const char *name, const char *target, char **incs,
		      int n_incs, char **opts, int n_opts, unsigned long salt)
{
	const char *o[2 * BENCH_MAX_OPTS + 2];
	char arch[96], sv[48];
	int n = 0;
	void *p = NULL;
	size_t size = 0;

	snprintf(arch, sizeof arch, "--gpu-architecture=%s", target);
	snprintf(sv, sizeof sv, "-DSALT=%lu", salt);
	o[n++] = arch;
	for (int i = 0; i < n_incs; i++)
		o[n++] = incs[i];
	for (int i = 0; i < n_opts; i++)
		o[n++] = opts[i];
	o[n++] = sv;
	double t0 = bench_now_us();
	if (r->create(&p, src, name, 0, NULL, NULL) != 0)
		bench_die("raw create failed");
	if (r->compile(p, n, o) != 0)
		bench_die("raw compile failed (%s)", target);
	char *out = r->size(p, &size) == 0 && size > 0 ? malloc(size) : NULL;
	if (out == NULL || r->code(p, out) != 0)
		bench_die("raw compile: no code");
	r->destroy(&p);
	double us = bench_now_us() - t0;
	free(out);
	return us;
}

static double raw_one(shaderc_compiler_t sc, const char *src, size_t len, const char *path, int env, char **opts,
		      int n_opts, unsigned long salt)
{
	shaderc_compile_options_t o = shaderc_compile_options_initialize();
	char v[32];
	double t0 = bench_now_us();

	if (o == NULL)
		bench_die("shaderc options: out of memory");
	shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, (uint32_t)env);
	shaderc_compile_options_set_source_language(o, shaderc_source_language_glsl);
	for (int i = 0; i < n_opts; i++) {
		const char *s = opts[i] + 2, *eq = strchr(s, '=');
		size_t nl = eq ? (size_t)(eq - s) : strlen(s);
		shaderc_compile_options_add_macro_definition(o, s, nl, eq ? eq + 1 : NULL, eq ? strlen(eq + 1) : 0);
	}
	snprintf(v, sizeof v, "%lu", salt);
	shaderc_compile_options_add_macro_definition(o, "SALT", 4, v, strlen(v));
	shaderc_compilation_result_t r = shaderc_compile_into_spv(sc, src, len, shaderc_compute_shader, path, "main", o);
	double us = bench_now_us() - t0;
	if (r == NULL || shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success)
		bench_die("raw compile failed: %s", r ? shaderc_result_get_error_message(r) : "no result");
	shaderc_result_release(r);
	shaderc_compile_options_release(o);
	return us;
}

int main(int argc, char **argv)
{
	static double raw[N_MAX], miss[N_MAX];
	struct bench_req b;
	struct bench_stats sr, sm;
	char *opts[BENCH_MAX_OPTS];
	char *incs[BENCH_MAX_OPTS];
	const char *path = NULL, *target = NULL, *family = "shaderc", *kernel = NULL;
	unsigned long salt = 0;
	int n = 20, n_opts = 0, n_incs = 0;

	bench_req_init(&b);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (strcmp(argv[i], "--salt") == 0 && i + 1 < argc)
			salt = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--opt") == 0 && i + 1 < argc && n_opts < BENCH_MAX_OPTS - 1 &&
			 strncmp(argv[i + 1], "-D", 2) == 0) {
			opts[n_opts++] = argv[i + 1];
			if (bench_req_arg(&b, argc, argv, &i) != 1)
				usage();
		} else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
			target = argv[i + 1];
			if (bench_req_arg(&b, argc, argv, &i) != 1)
				usage();
		} else if (strcmp(argv[i], "--family") == 0 && i + 1 < argc) {
			family = argv[++i];
		} else if (strcmp(argv[i], "-I") == 0 && i + 1 < argc && n_incs < BENCH_MAX_OPTS) {
			char *inc = malloc(strlen(argv[i + 1]) + 3);
			if (inc == NULL)
				bench_die("out of memory");
			sprintf(inc, "-I%s", argv[++i]);
			incs[n_incs++] = inc;
		} else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
			kernel = argv[i + 1];
			if (bench_req_arg(&b, argc, argv, &i) != 1)
				usage();
		} else if (argv[i][0] != '-' && path == NULL)
			path = argv[i];
		else
			usage();
	}
	if (path == NULL || target == NULL || salt == 0 || n < 1 || n > N_MAX)
		usage();
	int rtc = strcmp(family, "shaderc") != 0;
	if (rtc && strcmp(family, "nvrtc") != 0 && strcmp(family, "hiprtc") != 0)
		usage();
	int minor = strncmp(target, "vulkan1.", 8) == 0 ? atoi(target + 8) : 2;
	int env = minor >= 3 ? shaderc_env_version_vulkan_1_3 : minor == 2 ? shaderc_env_version_vulkan_1_2
									   : shaderc_env_version_vulkan_1_1;
	char *srcargv[] = { "x", "--source", (char *)path, "--backend",
			    !rtc ? "vulkan" : strcmp(family, "nvrtc") == 0 ? "cuda" : "hip" };
	for (int i = 1; kernel == NULL && i < 5; i++)
		if (bench_req_arg(&b, 5, srcargv, &i) != 1)
			bench_die("bad request");
	if (kernel) {
		char *be[] = { "x", "--backend", srcargv[4] };
		int i = 1;
		if (bench_req_arg(&b, 3, be, &i) != 1)
			bench_die("bad request");
	}
	size_t len;
	char *src = slurp(path, &len);

	/* Warm-ups of both sides, then the raw compile and the miss of each
	 * sample back to back (A/B alternating: a change of the machine's load
	 * hits both sides of a pair alike). */
	struct rtc r = { 0 };
	shaderc_compiler_t sc = NULL;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	src[len] = '\0';
	if (rtc)
		rtc_load(family, &r);
	else if ((sc = shaderc_compiler_initialize()) == NULL)
		bench_die("shaderc_compiler_initialize failed");
	kjit_client *c = bench_open();
	size_t size;
	for (int i = 0; i < WARM + n; i++) {
		unsigned long rs = salt + (unsigned long)i;
		double us = rtc ? raw_rtc(&r, src, base, target, incs, n_incs, opts, n_opts, rs)
				: raw_one(sc, src, len, path, env, opts, n_opts, rs);
		if (bench_req_salt(&b, salt + 10000 + (unsigned long)i) < 0)
			bench_die("out of memory");
		double t0 = bench_now_us();
		int st = bench_get(c, &b, &size);
		double mus = bench_now_us() - t0;
		if (st != KJIT_STATUS_COMPILED)
			bench_die("request %d was not a miss (status %d): use a fresh --salt", i, st);
		if (i >= WARM) {
			raw[i - WARM] = us;
			miss[i - WARM] = mus;
		}
	}
	if (sc)
		shaderc_compiler_release(sc);
	kjit_close(c);
	bench_summarize(raw, (size_t)n, &sr);
	bench_summarize(miss, (size_t)n, &sm);
	printf("%.1f %.1f %.2f %.1f %.1f\n", sr.p50, sm.p50, sm.p50 / sr.p50, sr.mean, sm.mean);
	bench_req_free(&b);
	free(src);
	while (n_incs > 0)
		free(incs[--n_incs]);
	return 0;
}
