/* hiprtc-api.c: a program written against hiprtc that calls every function
 * of the installed hiprtc.h (ROCm 5.2: 11 functions) and prints every
 * answer: codes, sizes, an FNV-1a digest of the code object, the log, the
 * lowered names, error strings, version.  It walks hiprtc 5.2's program
 * states (docs/dropin.md): the answers before a compile, name expressions
 * added after one, a program compiled twice (options and logs accumulate),
 * NULL arguments hiprtc checks, failures, warnings, options kjit serves and
 * options it forwards.
 *
 * It loads the library by name as ROCm 6 programs load hiprtc:
 * dlopen("libhiprtc.so.6"), or the name given as argv[1] (the real hiprtc
 * of Debian 12 is inside libamdhip64.so.5); argv[2] "one" runs one served
 * compile only (the 16-process check); "inc" compiles with -I folders it
 * writes into the current folder (tests/e2e/dropin-inc.sh).  tests/e2e/dropin.sh runs it
 * against the real hiprtc and through kjit's libhiprtc.so.6 and compares
 * the outputs byte for byte.  Exit status 0 when it ran to the end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* The log: hiprtc 5.2's size counts no NUL and GetProgramLog writes
 * exactly that many bytes (the byte after them is checked untouched). */
static void outputs(prog_t p)
{
	size_t n = 77;
	res_t r = A.log_size(p, &n);

	printf("  log size rc=%d size=%zu", r, n);
	if (r == 0) {
		char *b = malloc(n + 2);
		if (b == NULL)
			exit(1);
		memset(b, '#', n + 2);
		r = A.log(p, b);
		printf(" get rc=%d after=%c\n---\n%.*s---", r, b[n], (int)n, b);
		free(b);
	}
	n = 77;
	r = A.code_size(p, &n);
	printf("\n  code size rc=%d size=%zu", r, n);
	if (r == 0) {
		char *b = malloc(n + 1);
		if (b == NULL)
			exit(1);
		memset(b, '#', n + 1);
		r = A.code(p, b);
		/* a code object's digest: the ELF is deterministic for a source */
		printf(" get rc=%d fnv=%016llx after=%c", r, (unsigned long long)fnv(b, n), b[n]);
		free(b);
	}
	printf("\n");
}

static void lowered(prog_t p, const char *expr)
{
	const char *low = NULL;
	res_t r = A.lowered(p, expr, &low);

	printf("  lowered %s rc=%d %s\n", expr, r, r == 0 && low ? low : "(none)");
}

static const char hdr[] = "#pragma once\ntemplate <typename T> __device__ T twice(T x) { return x + x; }\n";
static const char good[] = "#include \"kjd_util.h\"\n"
			   "template <typename T> __global__ void scale(T *x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n";

static prog_t create(const char *src, const char *hname)
{
	const char *hs[] = { hdr }, *hn[] = { hname };
	prog_t p = NULL;

	printf("  create rc=%d\n", A.create(&p, src, "dropin_h.cpp", 1, hs, hn));
	return p;
}

/* One program: create, names, compile with opts, every answer, destroy.
 * again: compile it a second time with the same options. */
/* Names, compile, outputs (again: a second compile), destroy. */
static void run_case(prog_t p, int n, const char **opts, const char *const *names, int again)
{
	for (int i = 0; names && names[i]; i++)
		printf("  add %s rc=%d\n", names[i], A.add_name(p, names[i]));
	printf("  compile rc=%d\n", A.compile(p, n, opts));
	outputs(p);
	for (int i = 0; names && names[i]; i++)
		lowered(p, names[i]);
	if (again) {
		printf("  compile again rc=%d\n", A.compile(p, n, opts));
		outputs(p);
		for (int i = 0; names && names[i]; i++)
			lowered(p, names[i]);
	}
	printf("  destroy rc=%d\n", A.destroy(&p));
}

static void compile_case(const char *what, const char *src, int n, const char **opts, const char *const *names,
			 int again)
{
	printf("%s\n", what);
	run_case(create(src, "kjd_util.h"), n, opts, names, again);
}

/* Writes text to path (folders made first); -1 on failure. */
static int put(const char *path, const char *text)
{
	char dir[256];
	const char *slash = strrchr(path, '/');
	FILE *f;

	snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -1;
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* "inc": -I folders (in the current folder, which it fills): two folders
 * in both spellings, served; a header using __FILE__, forwarded. */
static int inc_cases(void)
{
	static const char src[] = "#include \"kjd_vec.h\"\n#include <kjd_base.h>\n"
				  "template <typename T> __global__ void scale(T *x) { x[0] = kjd_twice(x[0]) * KJD_BASE; }\n";
	static const char where[] = "#include \"kjd_where.h\"\n__global__ void k(const char **o) { *o = kjd_where(); }\n";
	const char *o1[] = { "--offload-arch=gfx90a", "-Ihinc1", "-I", "hinc2", "-std=c++17" };
	const char *o2[] = { "--offload-arch=gfx90a", "-Ihinc1" };
	const char *names[] = { "scale<float>", NULL };
	prog_t p = NULL;

	if (put("hinc1/kjd_vec.h", "#pragma once\n#include \"kjd_base.h\"\n"
		"template <typename T> __device__ T kjd_twice(T x) { return x + x; }\n") < 0 ||
	    put("hinc2/kjd_base.h", "#pragma once\n#define KJD_BASE 3\n") < 0 ||
	    put("hinc1/kjd_where.h", "__device__ const char *kjd_where() { return __FILE__; }\n") < 0) {
		perror("hiprtc-api: inc");
		return 1;
	}
	printf("-I, two folders (served)\n  create rc=%d\n", A.create(&p, src, "inc.cpp", 0, NULL, NULL));
	run_case(p, 5, o1, names, 0);
	printf("-I, a header using __FILE__ (forwarded)\n  create rc=%d\n", A.create(&p, where, "inc.cpp", 0, NULL, NULL));
	run_case(p, 2, o2, NULL, 0);
	return 0;
}

/* A served program's states call by call, and the arguments hiprtc checks. */
static void states(void)
{
	const char *opts[] = { "--offload-arch=gfx90a", "-DKJD=1" }, *low = NULL;
	prog_t p, q = NULL;

	printf("states\n");
	p = create(good, "kjd_util.h");
	outputs(p);
	lowered(p, "scale<float>");
	printf("  add NULL rc=%d add empty rc=%d\n", A.add_name(p, NULL), A.add_name(p, ""));
	printf("  add rc=%d\n", A.add_name(p, "scale<float>"));
	printf("  add rc=%d\n", A.add_name(p, "scale<int>"));
	lowered(p, "scale<float>");
	printf("  compile rc=%d\n", A.compile(p, 2, opts));
	outputs(p);
	lowered(p, "scale<float>");
	lowered(p, "scale<int>");
	lowered(p, "scale<double>");
	printf("  lowered NULL expr rc=%d NULL out rc=%d\n", A.lowered(p, NULL, &low),
	       A.lowered(p, "scale<float>", NULL));
	printf("  NULL sizes rc=%d %d, NULL buffers rc=%d %d\n", A.log_size(p, NULL), A.code_size(p, NULL),
	       A.log(p, NULL), A.code(p, NULL));
	printf("  add after rc=%d\n", A.add_name(p, "scale<double>"));
	lowered(p, "scale<double>");
	printf("  compile again rc=%d\n", A.compile(p, 2, opts));
	outputs(p);
	lowered(p, "scale<float>");
	lowered(p, "scale<double>");
	printf("  destroy rc=%d same handle=%d\n", A.destroy(&p), p != NULL);
	printf("  destroy NULL rc=%d, of NULL rc=%d\n", A.destroy(NULL), A.destroy(&q));
	printf("  create NULL prog rc=%d, n -1 rc=%d, no arrays rc=%d, empty source rc=%d\n",
	       A.create(NULL, good, "a.cpp", 0, NULL, NULL), A.create(&q, good, "a.cpp", -1, NULL, NULL),
	       A.create(&q, good, "a.cpp", 1, NULL, NULL), A.create(&q, "", "a.cpp", 0, NULL, NULL));
}

int main(int argc, char **argv)
{
	static const char broken[] = "__global__ void k() { int x = ; }\n";
	static const char warn[] = "__global__ void k(int *x) { int y; *x = 1; }\n";
	static const char slash[] = "#include \"sub/kjd_util.h\"\n__global__ void k(float *x) { x[0] = twice(x[0]); }\n";
	const char *names[] = { "scale<float>", NULL }, *two[] = { "scale<float>", "scale<int>", NULL };
	const char *dup[] = { "scale<float>", "scale<float>", NULL };
	const char *o1[] = { "--offload-arch=gfx90a", "-DKJD=1" };
	const char *o2[] = { "-DKJD=2", "--gpu-architecture=gfx90a", "-O3", "-std=c++17" };
	const char *o3[] = { "--offload-arch=gfx90a:xnack-", "-ffast-math" };
	const char *o4[] = { "--offload-arch=gfx908", "-Wall" };
	const char *o5[] = { "-DKJD=1" };
	const char *o6[] = { "--offload-arch=gfx90a", "-fno-such-option" };
	const char *o7[] = { "--offload-arch=gfx90a", "--offload-arch=gfx908" };
	int major = -1, minor = -1;

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (load(argc > 1 ? argv[1] : "libhiprtc.so.6") < 0)
		return 2;
	if (argc > 2 && strcmp(argv[2], "one") == 0) {
		compile_case("one", good, 2, o1, two, 0);
		return 0;
	}
	if (argc > 2 && strcmp(argv[2], "inc") == 0)
		return inc_cases();
	res_t r = A.version(&major, &minor);
	printf("version rc=%d %d.%d\n", r, major, minor);
	for (int e = -1; e <= 12; e++) {
		const char *s = A.errstr(e);
		printf("error %d: %s\n", e, s ? s : "(NULL)");
	}
	states();
	compile_case("good", good, 2, o1, names, 0);
	compile_case("good, two names, other options", good, 4, o2, two, 0);
	compile_case("good, no names, compiled twice", good, 2, o3, NULL, 1);
	compile_case("warnings (forwarded: the log)", warn, 2, o4, NULL, 0);
	compile_case("no architecture (forwarded)", good, 1, o5, names, 1);
	compile_case("unknown option (forwarded)", good, 2, o6, NULL, 0);
	compile_case("two architectures (forwarded)", good, 2, o7, NULL, 0);
	compile_case("a name given twice (forwarded)", good, 2, o1, dup, 0);
	compile_case("broken (forwarded)", broken, 2, o1, NULL, 1);
	printf("names kjit cannot carry (served: hiprtc ignores the name)\n");
	for (int i = 0; i < 2; i++) {
		const char *hs[] = { hdr }, *hn[] = { "kjd_util.h" };
		prog_t q = NULL;
		printf("  create rc=%d\n", A.create(&q, good, i ? NULL : "my kernel.cpp", 1, hs, hn));
		printf("  add rc=%d\n", A.add_name(q, "scale<float>"));
		printf("  compile rc=%d\n", A.compile(q, 2, o1));
		outputs(q);
		lowered(q, "scale<float>");
		printf("  destroy rc=%d\n", A.destroy(&q));
	}
	printf("header named with /\n");
	prog_t p = create(slash, "sub/kjd_util.h");
	printf("  compile rc=%d\n", A.compile(p, 2, o1));
	outputs(p);
	printf("  destroy rc=%d\n", A.destroy(&p));
	return 0;
}
