/* rawmiss.c: a single miss through kjitd against the raw compiler's warm
 * in-process compile of the same source (issue 25's goal: <= 1.1x).
 *
 *   bench-rawmiss FILE.comp --target vulkan1.2 --salt S [-n N] [--opt OPT]...
 *
 * The raw side: libshaderc in this process, one compiler initialized and
 * warmed up by 3 compiles, then N compiles of FILE (GLSL compute, entry
 * main, the target's Vulkan environment, the -D options and a distinct
 * -DSALT each, as the kjit side sends), as kjitd's shaderc worker does.  The kjit side:
 * after 3 warm-up misses (workers started), N kjit_get of the same source,
 * each with a salt never asked before, so each is a miss ("compiled", or
 * the program fails).  Prints one line:
 *
 *   raw_p50_us kjit_miss_p50_us ratio raw_mean_us kjit_miss_mean_us
 */
#include <shaderc/shaderc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define WARM 3
#define N_MAX 1000

static void usage(void)
{
	fprintf(stderr, "usage: bench-rawmiss FILE.comp --target vulkan1.N --salt S [-n N] [--opt OPT]...\n");
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
	const char *path = NULL, *target = NULL;
	unsigned long salt = 0;
	int n = 20, n_opts = 0;

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
		} else if (argv[i][0] != '-' && path == NULL)
			path = argv[i];
		else
			usage();
	}
	if (path == NULL || target == NULL || salt == 0 || n < 1 || n > N_MAX)
		usage();
	int minor = strncmp(target, "vulkan1.", 8) == 0 ? atoi(target + 8) : 2;
	int env = minor >= 3 ? shaderc_env_version_vulkan_1_3 : minor == 2 ? shaderc_env_version_vulkan_1_2
									   : shaderc_env_version_vulkan_1_1;
	char *srcargv[] = { "x", "--source", (char *)path, "--backend", "vulkan" };
	for (int i = 1; i < 5; i++)
		if (bench_req_arg(&b, 5, srcargv, &i) != 1)
			bench_die("bad request");
	size_t len;
	char *src = slurp(path, &len);

	shaderc_compiler_t sc = shaderc_compiler_initialize();
	if (sc == NULL)
		bench_die("shaderc_compiler_initialize failed");
	for (int i = 0; i < WARM; i++)
		raw_one(sc, src, len, path, env, opts, n_opts, salt + (unsigned long)i);
	for (int i = 0; i < n; i++)
		raw[i] = raw_one(sc, src, len, path, env, opts, n_opts, salt + WARM + (unsigned long)i);
	shaderc_compiler_release(sc);

	kjit_client *c = bench_open();
	size_t size;
	for (int i = 0; i < WARM + n; i++) {
		if (bench_req_salt(&b, salt + 10000 + (unsigned long)i) < 0)
			bench_die("out of memory");
		double t0 = bench_now_us();
		int st = bench_get(c, &b, &size);
		double us = bench_now_us() - t0;
		if (st != KJIT_STATUS_COMPILED)
			bench_die("request %d was not a miss (status %d): use a fresh --salt", i, st);
		if (i >= WARM)
			miss[i - WARM] = us;
	}
	kjit_close(c);
	bench_summarize(raw, (size_t)n, &sr);
	bench_summarize(miss, (size_t)n, &sm);
	printf("%.1f %.1f %.2f %.1f %.1f\n", sr.p50, sm.p50, sm.p50 / sr.p50, sr.mean, sm.mean);
	bench_req_free(&b);
	free(src);
	return 0;
}
