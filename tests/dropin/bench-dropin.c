/* bench-dropin.c: what a repeated compile costs through kjit's drop-in
 * NVRTC, against a kjit_get hit of the same request (issue 23's goal: at
 * most 2x a hit plus the API's own copying).
 *
 * Both loops ask kjitd (on $KJIT_SOCKET) for the same cached cubin N times:
 * (a) kjit_get on one handle (libkjit, linked); (b) the NVRTC sequence a
 * program runs, nvrtcCreateProgram, nvrtcCompileProgram, nvrtcGetCUBINSize,
 * nvrtcGetCUBIN, nvrtcDestroyProgram, through libnvrtc.so.13 loaded by name
 * (kjit's when its folder is first on LD_LIBRARY_PATH).  Prints the median
 * and p90 of each in microseconds and their ratio.
 * Usage: bench-dropin [N]   (default 2000)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kjit.h"

typedef int (*create_fn)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*size_fn)(void *, size_t *);
typedef int (*get_fn)(void *, char *);
typedef int (*destroy_fn)(void **);

static const char src[] = "extern \"C\" __global__ void kjd_bench(float *x, float a) {\n"
			  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  x[i] = x[i] * a + 1.0f;\n}\n";

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	double *ta = calloc((size_t)n, sizeof *ta), *tb = calloc((size_t)n, sizeof *tb);
	const char *opts[] = { "--gpu-architecture=sm_90", "-default-device" };
	kjit_client *c = NULL;
	void *h = dlopen("libnvrtc.so.13", RTLD_NOW);
	size_t bytes = 0;

	if (n < 10 || ta == NULL || tb == NULL || h == NULL || kjit_open(&c, NULL) < 0) {
		fprintf(stderr, "bench-dropin: cannot start (%s)\n", h ? kjit_last_error(NULL) : dlerror());
		return 1;
	}
	create_fn create = (create_fn)dlsym(h, "nvrtcCreateProgram");
	compile_fn compile = (compile_fn)dlsym(h, "nvrtcCompileProgram");
	size_fn cubin_size = (size_fn)dlsym(h, "nvrtcGetCUBINSize");
	get_fn cubin = (get_fn)dlsym(h, "nvrtcGetCUBIN");
	destroy_fn destroy = (destroy_fn)dlsym(h, "nvrtcDestroyProgram");
	kjit_request rq;
	memset(&rq, 0, sizeof rq);
	rq.backend = KJIT_BACKEND_CUDA;
	rq.compiler = "nvrtc";
	rq.target = "sm_90";
	rq.source = src;
	rq.source_size = strlen(src);
	rq.source_name = "default_program";
	rq.options = opts + 1;
	rq.n_options = 1;
	rq.no_env = 1;
	for (int i = -10; i < n; i++) { /* the first ten warm both paths up */
		kjit_result res;
		double t0 = now_us();
		if (kjit_get(c, &rq, &res) < 0) {
			fprintf(stderr, "bench-dropin: kjit_get: %s\n", res.error ? res.error : "failed");
			return 1;
		}
		double t1 = now_us();
		kjit_result_free(&res);
		void *p = NULL;
		if (create(&p, src, NULL, 0, NULL, NULL) != 0 || compile(p, 2, opts) != 0 || cubin_size(p, &bytes) != 0) {
			fprintf(stderr, "bench-dropin: the NVRTC calls failed\n");
			return 1;
		}
		char *buf = malloc(bytes);
		if (buf == NULL || cubin(p, buf) != 0)
			return 1;
		destroy(&p);
		double t2 = now_us();
		free(buf);
		if (i >= 0) {
			ta[i] = t1 - t0;
			tb[i] = t2 - t1;
		}
	}
	qsort(ta, (size_t)n, sizeof *ta, cmp);
	qsort(tb, (size_t)n, sizeof *tb, cmp);
	printf("cubin %zu bytes, %d repeats\n", bytes, n);
	printf("kjit_get hit            median %.1f us  p90 %.1f us\n", ta[n / 2], ta[n * 9 / 10]);
	printf("drop-in NVRTC compile   median %.1f us  p90 %.1f us  (%.2fx the hit)\n", tb[n / 2], tb[n * 9 / 10],
	       tb[n / 2] / ta[n / 2]);
	kjit_close(c);
	free(ta);
	free(tb);
	return 0;
}
