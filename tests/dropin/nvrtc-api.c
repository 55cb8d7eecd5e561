/* nvrtc-api.c: a program written against NVRTC that calls every function of
 * its public C API (nvrtc.h of CUDA 13) and prints every answer: result
 * codes, sizes, an FNV-1a digest of every byte of PTX, CUBIN and LTO-IR,
 * logs and lowered names verbatim, error strings, version, architectures.
 *
 * tests/e2e/dropin.sh runs it against the real libnvrtc.so.13 and through
 * kjit's drop-in and compares the two outputs byte for byte: any
 * difference the drop-in makes shows up as a differing line.
 *
 * Built two ways: by default it loads the library as most programs do,
 * dlopen("libnvrtc.so.13") and dlsym; with -DKJ_LINKED it is linked
 * against libnvrtc.so.13 (the symbols bound by version, libnvrtc.so.13).
 * Usage: nvrtc-api [all|one|threads]   ("one": one served compile to PTX,
 * for the crowd test; "threads": 8 threads compiling 8 programs at once).  Exit status 0 when it ran to the end.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int res_t;
typedef struct prog *prog_t;

#define API(X)                                                                                   \
	X(const char *, nvrtcGetErrorString, (res_t))                                            \
	X(res_t, nvrtcVersion, (int *, int *))                                                   \
	X(res_t, nvrtcGetNumSupportedArchs, (int *))                                             \
	X(res_t, nvrtcGetSupportedArchs, (int *))                                                \
	X(res_t, nvrtcCreateProgram, (prog_t *, const char *, const char *, int, const char *const *, \
				      const char *const *))                                      \
	X(res_t, nvrtcDestroyProgram, (prog_t *))                                                \
	X(res_t, nvrtcCompileProgram, (prog_t, int, const char *const *))                        \
	X(res_t, nvrtcGetPTXSize, (prog_t, size_t *))                                            \
	X(res_t, nvrtcGetPTX, (prog_t, char *))                                                  \
	X(res_t, nvrtcGetCUBINSize, (prog_t, size_t *))                                          \
	X(res_t, nvrtcGetCUBIN, (prog_t, char *))                                                \
	X(res_t, nvrtcGetLTOIRSize, (prog_t, size_t *))                                          \
	X(res_t, nvrtcGetLTOIR, (prog_t, char *))                                                \
	X(res_t, nvrtcGetOptiXIRSize, (prog_t, size_t *))                                        \
	X(res_t, nvrtcGetOptiXIR, (prog_t, char *))                                              \
	X(res_t, nvrtcGetProgramLogSize, (prog_t, size_t *))                                     \
	X(res_t, nvrtcGetProgramLog, (prog_t, char *))                                           \
	X(res_t, nvrtcAddNameExpression, (prog_t, const char *))                                 \
	X(res_t, nvrtcGetLoweredName, (prog_t, const char *, const char **))                     \
	X(res_t, nvrtcGetPCHHeapSize, (size_t *))                                                \
	X(res_t, nvrtcSetPCHHeapSize, (size_t))                                                  \
	X(res_t, nvrtcGetPCHCreateStatus, (prog_t))                                              \
	X(res_t, nvrtcGetPCHHeapSizeRequired, (prog_t, size_t *))                                \
	X(res_t, nvrtcSetFlowCallback, (prog_t, int (*)(void *, void *), void *))

#ifdef KJ_LINKED
#define DECL(ret, name, args) ret name args;
API(DECL)
#endif

static struct api {
#define FIELD(ret, name, args) ret(*name) args;
	API(FIELD)
} A;

static int load(void)
{
#ifdef KJ_LINKED
#define BIND(ret, name, args) A.name = name;
	API(BIND)
#else
	void *h = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "nvrtc-api: %s\n", dlerror());
		return -1;
	}
#define SYM(ret, name, args)                                                   \
	if ((*(void **)&A.name = dlsym(h, #name)) == NULL) {                   \
		fprintf(stderr, "nvrtc-api: no %s in libnvrtc.so.13\n", #name); \
		return -1;                                                     \
	}
	API(SYM)
#endif
	return 0;
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

/* Prints one output (PTX, CUBIN, LTO-IR, OptiX IR) of p: codes, size, digest. */
static void blob(const char *what, prog_t p, res_t (*size)(prog_t, size_t *), res_t (*get)(prog_t, char *))
{
	size_t n = 0;
	res_t r = size(p, &n);

	printf("  %s: size rc=%d", what, r);
	if (r == 0) {
		char *b = malloc(n + 1);
		if (b == NULL)
			exit(1);
		r = get(p, b);
		printf(" size=%zu get rc=%d fnv=%016llx", n, r, (unsigned long long)fnv(b, n));
		free(b);
	}
	printf("\n");
}

static void show_log(prog_t p)
{
	size_t n = 0;
	res_t r = A.nvrtcGetProgramLogSize(p, &n);

	printf("  log: size rc=%d size=%zu", r, n);
	if (r == 0 && n > 0) {
		char *b = malloc(n);
		if (b == NULL)
			exit(1);
		r = A.nvrtcGetProgramLog(p, b);
		printf(" get rc=%d nul=%d\n---\n%s---", r, b[n - 1] == '\0', b);
		free(b);
	}
	printf("\n");
}

static void outputs(prog_t p)
{
	show_log(p);
	blob("ptx", p, A.nvrtcGetPTXSize, A.nvrtcGetPTX);
	blob("cubin", p, A.nvrtcGetCUBINSize, A.nvrtcGetCUBIN);
	blob("ltoir", p, A.nvrtcGetLTOIRSize, A.nvrtcGetLTOIR);
	blob("optixir", p, A.nvrtcGetOptiXIRSize, A.nvrtcGetOptiXIR);
	size_t need = 0;
	printf("  pch: status=%d", A.nvrtcGetPCHCreateStatus(p));
	res_t r = A.nvrtcGetPCHHeapSizeRequired(p, &need);
	printf(" required rc=%d %zu\n", r, need);
}

static const char hdr_util[] = "#pragma once\ntemplate <typename T> __device__ T twice(T x) { return x + x; }\n";
static const char src_a[] =
	"#include \"kjd_util.h\"\n"
	"template <typename T> __global__ void scale(T *x, int n) {\n"
	"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"  if (i < n) x[i] = twice(x[i]) * SCALE;\n"
	"}\n"
	"extern \"C\" __global__ void plain(float *x) { int unused_here; x[threadIdx.x] += 1.0f; }\n";

/* A program with a header, options and name expressions: what kjit serves. */
static void case_served(const char *arch, int with_names)
{
	const char *hs[] = { hdr_util }, *hn[] = { "kjd_util.h" };
	const char *opts[] = { arch, "-default-device", "--std=c++17", "-DSCALE=3", "--fmad=false" };
	const char *exprs[] = { "scale<float>", "scale<double>" };
	prog_t p = NULL;
	const char *low = NULL;

	printf("served %s names=%d\n", arch, with_names);
	printf("  create rc=%d\n", A.nvrtcCreateProgram(&p, src_a, "dropin_a.cu", 1, hs, hn));
	printf("  lowered before compile rc=%d\n", A.nvrtcGetLoweredName(p, "scale<float>", &low));
	for (int i = 0; with_names && i < 2; i++)
		printf("  add %s rc=%d\n", exprs[i], A.nvrtcAddNameExpression(p, exprs[i]));
	printf("  compile rc=%d\n", A.nvrtcCompileProgram(p, 5, opts));
	outputs(p);
	for (int i = 0; with_names && i < 2; i++) {
		low = NULL;
		res_t r = A.nvrtcGetLoweredName(p, exprs[i], &low);
		printf("  lowered %s rc=%d %s\n", exprs[i], r, r == 0 && low ? low : "(none)");
	}
	printf("  lowered unknown rc=%d\n", A.nvrtcGetLoweredName(p, "scale<int>", &low));
	printf("  add after compile rc=%d\n", A.nvrtcAddNameExpression(p, "scale<int>"));
	res_t dr = A.nvrtcDestroyProgram(&p);
	printf("  destroy rc=%d null=%d\n", dr, p == NULL);
}

/* A compile that fails: code and log text. */
static void case_failed(void)
{
	const char *opts[] = { "--gpu-architecture=compute_90" };
	prog_t p = NULL;

	printf("failed\n");
	printf("  create rc=%d\n", A.nvrtcCreateProgram(&p, "__global__ void k() { int x = ; }\n", "broken.cu", 0,
							  NULL, NULL));
	printf("  compile rc=%d\n", A.nvrtcCompileProgram(p, 1, opts));
	outputs(p);
	printf("  destroy rc=%d\n", A.nvrtcDestroyProgram(&p));
}

/* Options kjit leaves to the real library: LTO-IR, unknown options, -I. */
static void case_forwarded(const char *why, int n, const char *const *opts)
{
	prog_t p = NULL;

	printf("forwarded %s\n", why);
	printf("  create rc=%d\n", A.nvrtcCreateProgram(&p, "extern \"C\" __global__ void k(int *x) { *x = 7; }\n",
							  NULL, 0, NULL, NULL));
	printf("  compile rc=%d\n", A.nvrtcCompileProgram(p, n, opts));
	outputs(p);
	printf("  destroy rc=%d\n", A.nvrtcDestroyProgram(&p));
}

/* Headers named with '/', as jitify gives them ("cuda/std/..."): served
 * when every include names a header as given (a warning in one of them
 * shows its name in the log); an include by a tail of such a name, which
 * NVRTC does not find, and one spelled with "..", go to the real library. */
static void case_slash(const char *what, const char *src)
{
	static const char util[] = "#pragma once\n#include \"kjd/std/base.h\"\n"
				   "template <typename T> __device__ T thrice(T x) { int unused_in_header; return x + twice(x); }\n";
	const char *hs[] = { util, hdr_util }, *hn[] = { "kjd/std/util.h", "kjd/std/base.h" };
	const char *opts[] = { "--gpu-architecture=sm_90", "-DSCALE=2" };
	prog_t p = NULL;
	const char *low = NULL;

	printf("slash headers %s\n", what);
	printf("  create rc=%d\n", A.nvrtcCreateProgram(&p, src, "dropin_s.cu", 2, hs, hn));
	printf("  add rc=%d\n", A.nvrtcAddNameExpression(p, "triple<float>"));
	printf("  compile rc=%d\n", A.nvrtcCompileProgram(p, 2, opts));
	outputs(p);
	res_t r = A.nvrtcGetLoweredName(p, "triple<float>", &low);
	printf("  lowered rc=%d %s\n", r, r == 0 && low ? low : "(none)");
	printf("  destroy rc=%d\n", A.nvrtcDestroyProgram(&p));
}

/* -I DIR (CuPy passes its include folder): the source includes a header
 * of $KJD_INC_DIR, which dropin.sh fills (kjd_inc.h; kjd_warn.h, whose
 * warning names the path NVRTC found it under).  Served when nothing can
 * depend on where the file lay; a warning or line info go to the real
 * library. */
static void case_include_dir(const char *what, const char *hdr, const char *extra)
{
	const char *dir = getenv("KJD_INC_DIR");
	char src[256], inc[4096];
	const char *opts[] = { "--gpu-architecture=sm_90", inc, extra };
	prog_t p = NULL;

	if (dir == NULL)
		return;
	snprintf(inc, sizeof inc, "-I%s", dir);
	snprintf(src, sizeof src, "#include \"%s\"\nextern \"C\" __global__ void inc(float *x) { x[0] = from_inc(x[0]); }\n",
		 hdr);
	printf("include dir %s\n", what);
	printf("  create rc=%d\n", A.nvrtcCreateProgram(&p, src, "dropin_i.cu", 0, NULL, NULL));
	printf("  compile rc=%d\n", A.nvrtcCompileProgram(p, extra ? 3 : 2, opts));
	outputs(p);
	printf("  destroy rc=%d\n", A.nvrtcDestroyProgram(&p));
}

static int flow_cb(void *a, void *b)
{
	(void)a;
	(void)b;
	return 0;
}

/* Bad arguments, calls out of order, the library-wide calls. */
static void case_edges(void)
{
	prog_t p = NULL;
	size_t n = 0;
	int major = 0, minor = 0, na = 0, archs[256];

	printf("edges\n");
	res_t r = A.nvrtcVersion(&major, &minor);
	printf("  version rc=%d %d.%d\n", r, major, minor);
	printf("  version null rc=%d\n", A.nvrtcVersion(NULL, NULL));
	r = A.nvrtcGetNumSupportedArchs(&na);
	printf("  num archs rc=%d %d\n", r, na);
	if (na > 0 && na <= 256) {
		printf("  archs rc=%d", A.nvrtcGetSupportedArchs(archs));
		for (int i = 0; i < na; i++)
			printf(" %d", archs[i]);
		printf("\n");
	}
	for (int e = -1; e <= 19; e++)
		printf("  error %d: %s\n", e, A.nvrtcGetErrorString(e));
	printf("  create null rc=%d\n", A.nvrtcCreateProgram(NULL, "x", NULL, 0, NULL, NULL));
	printf("  create null src rc=%d\n", A.nvrtcCreateProgram(&p, NULL, NULL, 0, NULL, NULL));
	printf("  create neg headers rc=%d\n", A.nvrtcCreateProgram(&p, "x", NULL, -1, NULL, NULL));
	printf("  destroy null rc=%d\n", A.nvrtcDestroyProgram(NULL));
	printf("  compile null rc=%d\n", A.nvrtcCompileProgram(NULL, 0, NULL));
	printf("  ptx size null prog rc=%d\n", A.nvrtcGetPTXSize(NULL, &n));
	printf("  log size null prog rc=%d\n", A.nvrtcGetProgramLogSize(NULL, &n));
	printf("  add null prog rc=%d\n", A.nvrtcAddNameExpression(NULL, "x"));
	printf("  pch status null rc=%d\n", A.nvrtcGetPCHCreateStatus(NULL));
	printf("  create rc=%d\n", A.nvrtcCreateProgram(&p, "extern \"C\" __global__ void k() {}\n", "k.cu", 0,
							  NULL, NULL));
	printf("  before compile:\n");
	outputs(p);
	printf("  ptx size null ret rc=%d\n", A.nvrtcGetPTXSize(p, NULL));
	printf("  add null expr rc=%d\n", A.nvrtcAddNameExpression(p, NULL));
	printf("  lowered null rc=%d\n", A.nvrtcGetLoweredName(p, "k", NULL));
	printf("  flow callback rc=%d\n", A.nvrtcSetFlowCallback(p, flow_cb, NULL));
	printf("  compile default arch rc=%d\n", A.nvrtcCompileProgram(p, 0, NULL));
	outputs(p);
	printf("  compile again rc=%d\n", A.nvrtcCompileProgram(p, 0, NULL));
	printf("  destroy rc=%d\n", A.nvrtcDestroyProgram(&p));
	size_t heap = 0;
	r = A.nvrtcGetPCHHeapSize(&heap);
	printf("  pch heap get rc=%d %zu\n", r, heap);
	printf("  pch heap set rc=%d\n", A.nvrtcSetPCHHeapSize(heap));
	printf("  pch heap get null rc=%d\n", A.nvrtcGetPCHHeapSize(NULL));
}

/* One thread's program: its own source, a name expression, every output
 * summed up in one line. */
struct job {
	int i;
	char line[512];
};

static void *thread_compile(void *arg)
{
	struct job *j = arg;
	char src[256], expr[32];
	const char *opts[] = { j->i % 2 ? "--gpu-architecture=sm_90" : "--gpu-architecture=compute_80", "--std=c++17" };
	const char *low = "(none)";
	size_t ptx = 0, cubin = 0, log = 0;
	prog_t p = NULL;

	snprintf(src, sizeof src, "template <int N> __global__ void t(int *x) { x[threadIdx.x] += N * %d; }\n", j->i);
	snprintf(expr, sizeof expr, "t<%d>", j->i + 1);
	res_t c = A.nvrtcCreateProgram(&p, src, "threads.cu", 0, NULL, NULL);
	res_t a = A.nvrtcAddNameExpression(p, expr);
	res_t r = A.nvrtcCompileProgram(p, 2, opts);
	A.nvrtcGetPTXSize(p, &ptx);
	A.nvrtcGetCUBINSize(p, &cubin);
	A.nvrtcGetProgramLogSize(p, &log);
	char *buf = malloc(ptx + cubin + 1);
	uint64_t h = 0;
	if (buf && A.nvrtcGetPTX(p, buf) == 0 && A.nvrtcGetCUBIN(p, buf + ptx) == 0)
		h = fnv(buf, ptx + cubin);
	free(buf);
	A.nvrtcGetLoweredName(p, expr, &low);
	snprintf(j->line, sizeof j->line, "thread %d: create %d add %d compile %d ptx %zu cubin %zu log %zu fnv %016llx %s",
		 j->i, c, a, r, ptx, cubin, log, (unsigned long long)h, low);
	A.nvrtcDestroyProgram(&p);
	return NULL;
}

static int case_threads(void)
{
	struct job jobs[8];
	pthread_t th[8];

	for (int i = 0; i < 8; i++) {
		jobs[i].i = i;
		jobs[i].line[0] = '\0';
		if (pthread_create(&th[i], NULL, thread_compile, &jobs[i]) != 0)
			return 1;
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 8; i++)
		printf("%s\n", jobs[i].line);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (load() < 0)
		return 2;
	if (strcmp(mode, "threads") == 0)
		return case_threads();
	if (strcmp(mode, "one") == 0) { /* PTX only: one kjit request, one key */
		case_served("--gpu-architecture=compute_90", 1);
		return 0;
	}
	case_served("--gpu-architecture=sm_90", 1);
	case_served("-arch=compute_90", 1);
	case_served("--gpu-architecture=sm_80", 0);
	case_failed();
	const char *lto[] = { "--gpu-architecture=sm_90", "-dlto" };
	case_forwarded("lto", 2, lto);
	const char *bogus[] = { "--gpu-architecture=sm_90", "--no-such-option" };
	case_forwarded("unknown option", 2, bogus);
	const char *inc[] = { "-arch=sm_90", "-I", "/nonexistent/include" }; /* -IDIR: case_include_dir */
	case_forwarded("include path as two arguments", 3, inc);
	const char *badarch[] = { "--gpu-architecture=sm_1" };
	case_forwarded("bad arch", 1, badarch);
	case_slash("served", "#include \"kjd/std/util.h\"\n"
			     "template <typename T> __global__ void triple(T *x) { x[0] = thrice(x[0]) * SCALE; }\n");
	case_slash("by a tail (forwarded)", "#include \"std/util.h\"\n"
					    "template <typename T> __global__ void triple(T *x) { x[0] = thrice(x[0]); }\n");
	case_slash("with .. (forwarded)", "#include \"kjd/../kjd/std/util.h\"\n"
					  "template <typename T> __global__ void triple(T *x) { x[0] = thrice(x[0]); }\n");
	case_include_dir("served", "kjd_inc.h", NULL);
	case_include_dir("a warning in the header (forwarded)", "kjd_warn.h", NULL);
	case_include_dir("line info (forwarded)", "kjd_inc.h", "-lineinfo");
	case_edges();
	return 0;
}
