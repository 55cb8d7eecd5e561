/* hiprtc-api.c: a program written against hiprtc that calls every function
 * of the installed hiprtc.h (ROCm 5.2: 11 functions) and prints every
 * answer: codes, sizes, an FNV-1a digest of the code object, the log, the
 * lowered names, error strings, version.
 *
 * It loads the library by name as ROCm 6 programs load hiprtc:
 * dlopen("libhiprtc.so.6"), or the name given as argv[1] (the real hiprtc
 * of Debian 12 is inside libamdhip64.so.5).  tests/e2e/dropin.sh runs it
 * against the real hiprtc and through kjit's libhiprtc.so.6 and compares
 * the outputs byte for byte.  Exit status 0 when it ran to the end.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int res_t;
typedef struct prog *prog_t;

static struct {
	const char *(*errstr)(res_t);
	res_t (*version)(int *, int *);
	res_t (*add_name)(prog_t, const char *);
	res_t (*compile)(prog_t, int, const char **);
	res_t (*create)(prog_t *, const char *, const char *, int, const char **, const char **);
	res_t (*destroy)(prog_t *);
	res_t (*lowered)(prog_t, const char *, const char **);
	res_t (*log)(prog_t, char *);
	res_t (*log_size)(prog_t, size_t *);
	res_t (*code)(prog_t, char *);
	res_t (*code_size)(prog_t, size_t *);
} A;

static int load(const char *name)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	int missing = 0;

	if (h == NULL) {
		fprintf(stderr, "hiprtc-api: %s\n", dlerror());
		return -1;
	}
#define SYM(f, s) missing |= (*(void **)&A.f = dlsym(h, s)) == NULL
	SYM(errstr, "hiprtcGetErrorString");
	SYM(version, "hiprtcVersion");
	SYM(add_name, "hiprtcAddNameExpression");
	SYM(compile, "hiprtcCompileProgram");
	SYM(create, "hiprtcCreateProgram");
	SYM(destroy, "hiprtcDestroyProgram");
	SYM(lowered, "hiprtcGetLoweredName");
	SYM(log, "hiprtcGetProgramLog");
	SYM(log_size, "hiprtcGetProgramLogSize");
	SYM(code, "hiprtcGetCode");
	SYM(code_size, "hiprtcGetCodeSize");
#undef SYM
	if (missing)
		fprintf(stderr, "hiprtc-api: %s lacks a hiprtc function\n", name);
	return missing ? -1 : 0;
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static void outputs(prog_t p)
{
	size_t n = 0;
	res_t r = A.log_size(p, &n);

	printf("  log size rc=%d size=%zu", r, n);
	if (r == 0 && n > 0) {
		char *b = calloc(1, n + 1);
		if (b == NULL)
			exit(1);
		r = A.log(p, b);
		printf(" get rc=%d\n---\n%s---", r, b);
		free(b);
	}
	n = 0;
	r = A.code_size(p, &n);
	printf("\n  code size rc=%d size=%zu", r, n);
	if (r == 0 && n > 0) {
		char *b = malloc(n);
		if (b == NULL)
			exit(1);
		r = A.code(p, b);
		/* a code object's digest: the ELF is deterministic for a source */
		printf(" get rc=%d fnv=%016llx", r, (unsigned long long)fnv(b, n));
		free(b);
	}
	printf("\n");
}

static void compile_case(const char *what, const char *src, int n, const char **opts, int names)
{
	static const char hdr[] = "#pragma once\ntemplate <typename T> __device__ T twice(T x) { return x + x; }\n";
	const char *hs[] = { hdr }, *hn[] = { "kjd_util.h" };
	prog_t p = NULL;
	const char *low = NULL;

	printf("%s\n", what);
	printf("  create rc=%d\n", A.create(&p, src, "dropin_h.cpp", 1, hs, hn));
	if (names)
		printf("  add rc=%d\n", A.add_name(p, "scale<float>"));
	printf("  compile rc=%d\n", A.compile(p, n, opts));
	outputs(p);
	if (names) {
		res_t r = A.lowered(p, "scale<float>", &low);
		printf("  lowered rc=%d %s\n", r, r == 0 && low ? low : "(none)");
	}
	res_t r = A.destroy(&p);
	printf("  destroy rc=%d\n", r);
}

int main(int argc, char **argv)
{
	static const char good[] = "#include \"kjd_util.h\"\n"
				   "template <typename T> __global__ void scale(T *x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n";
	const char *opts[] = { "--offload-arch=gfx90a", "-DKJD=1" };
	int major = -1, minor = -1;

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (load(argc > 1 ? argv[1] : "libhiprtc.so.6") < 0)
		return 2;
	res_t r = A.version(&major, &minor);
	printf("version rc=%d %d.%d\n", r, major, minor);
	for (int e = -1; e <= 12; e++)
		printf("error %d: %s\n", e, A.errstr(e));
	compile_case("good", good, 2, opts, 1);
	compile_case("broken", "__global__ void k() { int x = ; }\n", 2, opts, 0);
	printf("create null rc=%d\n", A.create(NULL, "x", NULL, 0, NULL, NULL));
	return 0;
}
