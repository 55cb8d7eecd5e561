/* test-compilers.c: the compiler families (hiprtc, hipcc, nvrtc, shaderc,
 * test) with real compiles, the shared helpers of compilers/compint.h, and
 * the worker protocol end to end over a socketpair.
 *
 * Expected AMDGPU e_flags come from LLVM's AMDGPUUsage, table "AMDGPU ELF
 * Header e_flags for Code Object V4 and After" and the processor table
 * (llvm/include/llvm/BinaryFormat/ELF.h carries the same values):
 *   EF_AMDGPU_MACH_AMDGCN_GFX90A = 0x03f, EF_AMDGPU_MACH_AMDGCN_GFX1030 = 0x036,
 *   EF_AMDGPU_FEATURE_XNACK_ANY_V4 = 0x100, _XNACK_OFF_V4 = 0x200, _XNACK_ON_V4 = 0x300,
 *   EF_AMDGPU_FEATURE_SRAMECC_ANY_V4 = 0x400, _SRAMECC_OFF_V4 = 0x800, _SRAMECC_ON_V4 = 0xc00;
 * a processor without the feature (gfx1030: neither) has 0 in that field.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compint.h"
#include "compiler.h"
#include "kjit.h"
#include "proto.h"
#include "testcomp.h"
#include "test.h"
#include "util.h"

#define EF_GFX90A 0x03f
#define EF_GFX1030 0x036
#define EF_XNACK_ANY 0x100
#define EF_XNACK_OFF 0x200
#define EF_SRAMECC_ANY 0x400
#define EF_SRAMECC_ON 0xc00
#define EF_MACH_MASK 0x0ff

static const char hip_src[] =
	"#include <hip/hip_runtime.h>\n"
	"extern \"C\" __global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n";
static const char hip_bad[] = "extern \"C\" __global__ void broken(float *x) { x[0] = ; }\n";
static const char cuda_src[] =
	"extern \"C\" __global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n";
static const char glsl_src[] =
	"#version 450\n"
	"#include \"common.glsl\"\n"
	"layout(local_size_x = 64) in;\n"
	"layout(std430, binding = 0) buffer B { float x[]; };\n"
	"void main() { x[gl_GlobalInvocationID.x] *= SCALE; }\n";
static const char hlsl_src[] =
	"RWStructuredBuffer<float> x : register(u0);\n"
	"[numthreads(64, 1, 1)]\n"
	"void csmain(uint3 id : SV_DispatchThreadID) { x[id.x] = x[id.x] * 2.0; }\n";

/* A job over static strings. */
static struct kj__compile_job job_of(const char *target, const char *name, const char *src)
{
	struct kj__compile_job j;
	memset(&j, 0, sizeof j);
	j.target = target;
	j.source_name = name;
	j.source = (const uint8_t *)src;
	j.source_len = strlen(src);
	return j;
}

static void *init_or_die(const struct kj__compiler_ops *ops)
{
	void *st = NULL;
	char err[512] = "";
	int r = ops->init(&st, err, sizeof err);
	if (r != 0)
		fprintf(stderr, "%s init: %s\n", ops->name, err);
	CHECK_EQ_INT(r, 0);
	return st;
}

static uint32_t amd_flags_of(const struct kj__compile_out *o)
{
	uint32_t fl = 0;
	CHECK(kj__elf_is(o->data, o->len, KJ_EM_AMDGPU, &fl));
	return fl;
}

/* Compiles hip_src for target with ops and returns e_flags. */
static uint32_t hip_flags(const struct kj__compiler_ops *ops, void *st, const char *target)
{
	struct kj__compile_job j = job_of(target, "scale.hip", hip_src);
	struct kj__compile_out o = { 0 };
	char err[512] = "";
	CHECK_EQ_INT(ops->check_target(st, target, err, sizeof err), 0);
	int r = ops->compile(st, &j, &o);
	if (r != 0)
		fprintf(stderr, "%s %s: %s\n%s\n", ops->name, target, o.error ? o.error : "",
			o.log ? o.log : "");
	CHECK_EQ_INT(r, 0);
	uint32_t fl = amd_flags_of(&o);
	kj__compile_out_free(&o);
	return fl;
}

static void test_find(void)
{
	CHECK(kj__compiler_find("hiprtc") == &kj__compiler_hiprtc);
	CHECK(kj__compiler_find("hipcc") == &kj__compiler_hipcc);
	CHECK(kj__compiler_find("nvrtc") == &kj__compiler_nvrtc);
	CHECK(kj__compiler_find("shaderc") == &kj__compiler_shaderc);
	CHECK(kj__compiler_find("test") == &kj__compiler_test);
	CHECK(kj__compiler_find("gcc") == NULL);
	CHECK(kj__compiler_find(NULL) == NULL);
	CHECK_EQ_INT(kj__compiler_hiprtc.backend, KJIT_BACKEND_HIP);
	CHECK_EQ_INT(kj__compiler_nvrtc.backend, KJIT_BACKEND_CUDA);
	CHECK_EQ_INT(kj__compiler_shaderc.backend, KJIT_BACKEND_VULKAN);
	kj__compile_out_free(NULL);
}

static void test_options_whitelist(void)
{
	size_t n;
	const struct kj__opt_rule *rules = kj__hip_option_rules(&n);
	struct kj__compile_job j = job_of("gfx90a", "a.hip", "");
	char err[256];
	const char *good[] = { "-DN=4", "-DFOO", "-UBAR", "-O3", "-ffast-math", "-std=c++17",
			       "-ffp-contract=fast", "-DS=\"a b\"" };
	j.options = good;
	j.n_options = KJ_ARRAY_SIZE(good);
	CHECK_EQ_INT(kj__options_check("hiprtc", rules, n, &j, err, sizeof err), 0);
	const char *bad[][1] = { { "-I/usr/include" }, { "-O4" }, { "-D1X" }, { "-UX=1" },
				 { "--gpu-architecture=gfx1100" }, { "-std=c++98" }, { "-DX=a\nb" },
				 { "-o/tmp/x" }, { "" } };
	for (size_t i = 0; i < KJ_ARRAY_SIZE(bad); i++) {
		j.options = bad[i];
		j.n_options = 1;
		err[0] = '\0';
		CHECK_EQ_INT(kj__options_check("hiprtc", rules, n, &j, err, sizeof err), KJIT_EINVAL);
		CHECK(strstr(err, i == 6 ? "-DX holds a newline" : "not allowed") != NULL);
		CHECK(strchr(err, '\n') == NULL);
	}
	j.options = bad[0];
	kj__options_check("hiprtc", rules, n, &j, err, sizeof err);
	CHECK(strstr(err, "-I/usr/include") != NULL);
}

static void test_include_check(void)
{
	struct kj__compile_job j = job_of("gfx90a", "a.hip", "#include \"/etc/passwd\"\n");
	struct kj__header h[2] = { { "ok.h", (const uint8_t *)"int x;\n", 7 },
				   { "sub/b.h", (const uint8_t *)"#  include <../secret>\n", 23 } };
	char err[256];
	CHECK_EQ_INT(kj__includes_check(&j, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "/etc/passwd") != NULL);
	j = job_of("gfx90a", "a.hip", "#include \"ok.h\"\n#include <hip/hip_runtime.h>\n");
	j.headers = h;
	j.n_headers = 1;
	CHECK_EQ_INT(kj__includes_check(&j, err, sizeof err), 0);
	j.n_headers = 2;
	CHECK_EQ_INT(kj__includes_check(&j, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "sub/b.h") != NULL);
	struct kj__header bad_names[] = { { "/abs.h", (const uint8_t *)"", 0 } };
	j.headers = bad_names;
	j.n_headers = 1;
	CHECK_EQ_INT(kj__includes_check(&j, err, sizeof err), KJIT_EINCLUDE);
	bad_names[0].name = "a/../b.h";
	CHECK_EQ_INT(kj__includes_check(&j, err, sizeof err), KJIT_EINCLUDE);
}

static void test_log_cap(void)
{
	size_t n = KJ_LOG_MAX + 1000;
	char *big = malloc(n);
	CHECK(big != NULL);
	memset(big, 'x', n);
	char *l = kj__log_dup(big, n);
	CHECK(l != NULL);
	CHECK(strlen(l) <= KJ_LOG_MAX);
	CHECK(strstr(l, "[log truncated:") != NULL);
	free(l);
	l = kj__log_dup("short", 5);
	CHECK_EQ_STR(l, "short");
	free(l);
	CHECK(kj__log_dup("", 0) == NULL);
	free(big);
}

/* Writes a bundle with a host entry and one device entry. */
static size_t make_bundle(uint8_t *p, const char *triple, const uint8_t *obj, size_t objlen)
{
	const char *host = "host-x86_64-unknown-linux";
	size_t off = 0, hdr = 24 + 8 + 2 * 24 + strlen(host) + strlen(triple);
	uint64_t v;
	memcpy(p, "__CLANG_OFFLOAD_BUNDLE__", 24);
	off = 24;
	v = 2;
	memcpy(p + off, &v, 8), off += 8;
	v = hdr, memcpy(p + off, &v, 8), off += 8;
	v = 0, memcpy(p + off, &v, 8), off += 8;
	v = strlen(host), memcpy(p + off, &v, 8), off += 8;
	memcpy(p + off, host, strlen(host)), off += strlen(host);
	v = hdr, memcpy(p + off, &v, 8), off += 8;
	v = objlen, memcpy(p + off, &v, 8), off += 8;
	v = strlen(triple), memcpy(p + off, &v, 8), off += 8;
	memcpy(p + off, triple, strlen(triple)), off += strlen(triple);
	memcpy(p + off, obj, objlen);
	return off + objlen;
}

static void test_bundle_parse(void)
{
	uint8_t buf[512], elf[64] = { 0x7f, 'E', 'L', 'F', 2, 1 };
	const uint8_t *obj = NULL;
	size_t objlen = 0;
	elf[18] = KJ_EM_AMDGPU;
	elf[48] = 0x3f;
	size_t n = make_bundle(buf, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", elf, sizeof elf);
	CHECK_EQ_INT(kj__bundle_find(buf, n, "gfx90a:xnack-", &obj, &objlen), 0);
	CHECK_EQ_INT(objlen, sizeof elf);
	CHECK(kj__elf_is(obj, objlen, KJ_EM_AMDGPU, NULL));
	CHECK_EQ_INT(kj__bundle_find(buf, n, "gfx90a", &obj, &objlen), KJIT_ENOENT);
	for (size_t cut = 0; cut < n - sizeof elf; cut++) /* every truncation is caught */
		CHECK(kj__bundle_find(buf, cut, "gfx90a:xnack-", &obj, &objlen) < 0);
	buf[0] = 'X';
	CHECK_EQ_INT(kj__bundle_find(buf, n, "gfx90a:xnack-", &obj, &objlen), KJIT_ECORRUPT);
	CHECK(!kj__elf_is(buf, n, KJ_EM_AMDGPU, NULL));
}

static void test_hiprtc_targets(void)
{
	const struct kj__compiler_ops *ops = &kj__compiler_hiprtc;
	void *st = init_or_die(ops);
	char id[256], rv[64];
	CHECK_EQ_INT(ops->identity(st, id, sizeof id, rv, sizeof rv), 0);
	CHECK(strncmp(id, "hiprtc ", 7) == 0 && strstr(id, "; comgr ") && strstr(id, "; device-libs "));
	CHECK(strchr(rv, '.') != NULL);
	CHECK_EQ_INT(hip_flags(ops, st, "gfx90a"), EF_GFX90A | EF_XNACK_ANY | EF_SRAMECC_ANY);
	CHECK_EQ_INT(hip_flags(ops, st, "gfx90a:xnack-"), EF_GFX90A | EF_XNACK_OFF | EF_SRAMECC_ANY);
	CHECK_EQ_INT(hip_flags(ops, st, "gfx90a:sramecc+:xnack-"), EF_GFX90A | EF_XNACK_OFF | EF_SRAMECC_ON);
	CHECK_EQ_INT(hip_flags(ops, st, "gfx1030"), EF_GFX1030);
	ops->fini(st);
}

static void test_hiprtc_rejects_targets(void)
{
	const struct kj__compiler_ops *ops = &kj__compiler_hiprtc;
	void *st = init_or_die(ops);
	const char *bad[] = { "gfx940", "gfx942", "gfx1100", "gfx1030:xnack-",
			      "amdgcn-amd-amdhsa--gfx90a", "banana", "", "gfx90a:xnack-:sramecc+",
			      "gfx90a:xnack+:xnack-" };
	for (size_t i = 0; i < KJ_ARRAY_SIZE(bad); i++) {
		char err[512] = "";
		struct kj__compile_job j = job_of(bad[i], "scale.hip", hip_src);
		struct kj__compile_out o = { 0 };
		CHECK_EQ_INT(ops->check_target(st, bad[i], err, sizeof err), KJIT_ETARGET);
		CHECK(err[0] != '\0');
		/* compile re-checks instead of handing hiprtc a target it aborts on */
		CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ETARGET);
		CHECK(o.error != NULL && o.data == NULL);
		kj__compile_out_free(&o);
	}
	ops->fini(st);
}

static void test_hiprtc_errors_headers_options(void)
{
	const struct kj__compiler_ops *ops = &kj__compiler_hiprtc;
	void *st = init_or_die(ops);
	struct kj__compile_job j = job_of("gfx90a", "broken.hip", hip_bad);
	struct kj__compile_out o = { 0 };
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ECOMPILE);
	CHECK(o.log != NULL && strstr(o.log, "error") != NULL);
	CHECK(o.error != NULL && o.data == NULL);
	kj__compile_out_free(&o);

	static const char inc_src[] = "#include \"sub/k.h\"\n"
				      "extern \"C\" __global__ void f(float *x) { x[0] = K; }\n";
	struct kj__header h[] = { { "sub/k.h", (const uint8_t *)"#include \"sub/v.h\"\n", 19 },
				  { "sub/v.h", (const uint8_t *)"#define K KV\n", 13 } };
	const char *opts[] = { "-DKV=3.0f", "-O3" };
	j = job_of("gfx90a", "inc.hip", inc_src);
	j.headers = h;
	j.n_headers = 2;
	j.options = opts;
	j.n_options = 2;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(kj__elf_is(o.data, o.len, KJ_EM_AMDGPU, NULL));
	kj__compile_out_free(&o);

	const char *badopt[] = { "-I/usr/include" };
	j.options = badopt;
	j.n_options = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_EINVAL);
	CHECK(o.error && strstr(o.error, "-I/usr/include"));
	kj__compile_out_free(&o);
	ops->fini(st);
}

static void test_hipcc(void)
{
	const struct kj__compiler_ops *ops = &kj__compiler_hipcc;
	void *st = init_or_die(ops);
	char id[256], rv[64], err[256];
	CHECK_EQ_INT(ops->identity(st, id, sizeof id, rv, sizeof rv), 0);
	CHECK(strncmp(id, "hipcc ", 6) == 0 && strstr(id, "device-libs "));
	CHECK_EQ_INT(hip_flags(ops, st, "gfx90a"), EF_GFX90A | EF_XNACK_ANY | EF_SRAMECC_ANY);
	CHECK_EQ_INT(ops->check_target(st, "gfx1100", err, sizeof err), KJIT_ETARGET);
	CHECK_EQ_INT(ops->check_target(st, "amdgcn-amd-amdhsa--gfx90a", err, sizeof err), KJIT_ETARGET);

	/* a header in a subdirectory, and an error in it reaches the log
	 * without the temporary directory's path */
	static const char src[] = "#include \"sub/k.h\"\n"
				  "extern \"C\" __global__ void f(float *x) { x[0] = K; }\n";
	struct kj__header h[] = { { "sub/k.h", (const uint8_t *)"#define K (1.0f +)\n", 19 } };
	struct kj__compile_job j = job_of("gfx90a", "inc.hip", src);
	struct kj__compile_out o = { 0 };
	j.headers = h;
	j.n_headers = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ECOMPILE);
	CHECK(o.log && strstr(o.log, "error") && strstr(o.log, "inc.hip"));
	CHECK(strstr(o.log, "kjit-hipcc-") == NULL);
	kj__compile_out_free(&o);
	ops->fini(st);
}

static void test_nvrtc(void)
{
	const struct kj__compiler_ops *ops = &kj__compiler_nvrtc;
	void *st = init_or_die(ops);
	char id[256], rv[64], err[512];
	struct kj__compile_out o = { 0 };
	struct kj__compile_job j = job_of("sm_90", "scale.cu", cuda_src);
	CHECK_EQ_INT(ops->identity(st, id, sizeof id, rv, sizeof rv), 0);
	CHECK(strncmp(id, "nvrtc ", 6) == 0 && strncmp(id + 6, rv, strlen(rv)) == 0);
	/* the toolkit's include tree is part of the identity */
	CHECK(strstr(id, "; headers ") != NULL && strstr(id, "; headers none") == NULL);

	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	kj__compile_out_free(&o);
	/* the toolkit's own headers are found (they were "no directories in search list") */
	static const char fp16_src[] = "#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n"
				       "#include <cuda/std/cstdint>\n"
				       "extern \"C\" __global__ void h(__half *x) { x[0] = __float2half(1.f); }\n";
	const char *o3[] = { "-O3", "-default-device" };
	j = job_of("sm_90", "fp16.cu", fp16_src);
	j.options = o3;
	j.n_options = 2;
	if (ops->compile(st, &j, &o) != 0)
		fprintf(stderr, "%s\n%s\n", o.error ? o.error : "", o.log ? o.log : "");
	CHECK(o.data != NULL);
	kj__compile_out_free(&o);
	j = job_of("sm_90", "scale.cu", cuda_src);
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(kj__elf_is(o.data, o.len, KJ_EM_CUDA, NULL));
	kj__compile_out_free(&o);

	const char *opts[] = { "--use_fast_math", "-DN=3" };
	j = job_of("compute_90", "scale.cu", cuda_src);
	j.options = opts;
	j.n_options = 2;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(o.len > 0 && o.data[o.len - 1] == '\0'); /* PTX keeps its NUL */
	CHECK(strstr((const char *)o.data, ".target sm_90") != NULL);
	kj__compile_out_free(&o);

	j = job_of("sm_90", "bad.cu", "extern \"C\" __global__ void f(float *x) { x[0] = ; }\n");
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ECOMPILE);
	CHECK(o.log && strstr(o.log, "error"));
	CHECK(o.lowered == NULL);
	kj__compile_out_free(&o);

	/* name expressions: their lowered names in out->lowered, not in the log */
	const char *exprs[] = { "--name-expression=scale<float, 4>", "--name-expression=scale<int, 1>" };
	j = job_of("sm_90", "t.cu", "template <typename T, int N> __global__ void scale(T *x, int n) { x[n] *= N; }\n");
	j.options = exprs;
	j.n_options = 2;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(o.lowered != NULL);
	if (o.lowered)
		CHECK_EQ_STR(o.lowered, "scale<float, 4>\t_Z5scaleIfLi4EEvPT_i\nscale<int, 1>\t_Z5scaleIiLi1EEvPT_i\n");
	CHECK(o.log == NULL || strstr(o.log, "lowered") == NULL);
	kj__compile_out_free(&o);

	CHECK_EQ_INT(ops->check_target(st, "sm_1", err, sizeof err), KJIT_ETARGET);
	CHECK(strstr(err, "sm_1") && strstr(err, "supported"));
	CHECK_EQ_INT(ops->check_target(st, "gfx90a", err, sizeof err), KJIT_ETARGET);
	const char *badopt[] = { "--include-path=/etc" };
	j = job_of("sm_90", "scale.cu", cuda_src);
	j.options = badopt;
	j.n_options = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_EINVAL);
	kj__compile_out_free(&o);
	ops->fini(st);
}

/* Writes the object to a temporary file and runs spirv-val on it. */
static int spirv_val(const struct kj__compile_out *o, const char *env)
{
	char path[] = "/tmp/kjit-test-spv-XXXXXX", cmd[256];
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, o->data, o->len) == (ssize_t)o->len);
	close(fd);
	snprintf(cmd, sizeof cmd, "spirv-val --target-env %s %s", env, path);
	int st = system(cmd);
	unlink(path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_shaderc(void)
{
	const struct kj__compiler_ops *ops = &kj__compiler_shaderc;
	void *st = init_or_die(ops);
	char id[256], rv[64], err[256];
	uint32_t magic;
	struct kj__compile_out o = { 0 };
	struct kj__header h[] = { { "common.glsl", (const uint8_t *)"#define SCALE FACTOR\n", 21 } };
	const char *opts[] = { "-DFACTOR=2.0" };
	struct kj__compile_job j = job_of("vulkan1.1", "scale.comp", glsl_src);
	CHECK_EQ_INT(ops->identity(st, id, sizeof id, rv, sizeof rv), 0);
	CHECK(strstr(id, "glslang ") && strstr(id, "SPIRV-Tools "));

	j.headers = h;
	j.n_headers = 1;
	j.options = opts;
	j.n_options = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	memcpy(&magic, o.data, 4);
	CHECK_EQ_INT(magic, KJ_SPIRV_MAGIC);
	CHECK_EQ_INT(spirv_val(&o, "vulkan1.1"), 0);
	kj__compile_out_free(&o);

	j.n_headers = 0; /* the include must not be found anywhere else */
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ECOMPILE);
	CHECK(o.log && strstr(o.log, "common.glsl"));
	kj__compile_out_free(&o);

	const char *entry[] = { "csmain" };
	j = job_of("vulkan1.2", "scale.hlsl", hlsl_src);
	j.entries = entry;
	j.n_entries = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0); /* vulkan1.2: SPIR-V 1.5 unless HLSL is 1.3 */
	memcpy(&magic, o.data, 4);
	CHECK_EQ_INT(magic, KJ_SPIRV_MAGIC);
	CHECK_EQ_INT(spirv_val(&o, "vulkan1.2"), 0);
	kj__compile_out_free(&o);

	j = job_of("vulkan1.1", "bad.comp", "#version 450\nvoid main() { undefined_thing = 1; }\n");
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ECOMPILE);
	CHECK(o.log && strstr(o.log, "error"));
	kj__compile_out_free(&o);

	CHECK_EQ_INT(ops->check_target(st, "vulkan1.0", err, sizeof err), 0); /* glslc's default */
	CHECK_EQ_INT(ops->check_target(st, "vulkan1.4", err, sizeof err), KJIT_ETARGET);
	CHECK_EQ_INT(ops->check_target(st, "sm_90", err, sizeof err), KJIT_ETARGET);
	ops->fini(st);
}

/* Forks a worker for family on one end of a socketpair; returns the other.
 * As kjitd does, the worker gets a private directory made for it (each test
 * runs in its own process, so the directory lives as long as the test). */
static int spawn_worker(const char *family, pid_t *pid)
{
	static char dir[] = "/tmp/kjit-test-worker-XXXXXX";
	int sv[2];
	CHECK(mkdtemp(dir) != NULL);
	CHECK(setenv("KJIT_WORKER_TMPDIR", dir, 1) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	fflush(NULL);
	*pid = fork();
	CHECK(*pid >= 0);
	if (*pid == 0) {
		close(sv[0]);
		_exit(kj__worker_main(family, sv[1]));
	}
	close(sv[1]);
	return sv[0];
}

/* Removes the directory spawn_worker made, once its worker is gone. */
static void worker_dir_remove(void)
{
	const char *dir = getenv("KJIT_WORKER_TMPDIR");
	char cmd[128];
	CHECK(dir != NULL && strncmp(dir, "/tmp/kjit-test-worker-", 22) == 0);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* Reads one frame into *m (body in *body); returns its header. */
static struct kj__frame_hdr read_msg(int fd, uint8_t **body, struct kj__msg *m)
{
	struct kj__frame_hdr h;
	CHECK_EQ_INT(kj__frame_read_fd(fd, 60000, &h, body), 0);
	CHECK_EQ_INT(kj__msg_decode(*body, h.len, m), 0);
	return h;
}

static int32_t code_of(const struct kj__msg *m)
{
	int32_t c = 1;
	CHECK_EQ_INT(kj__field_i32(kj__msg_get(m, KJ_F_CODE), &c), 0);
	return c;
}

/* A family with a warm-up sends IDENT (no CODE) before its HELLO, with
 * the identity the HELLO then repeats; one without sends HELLO alone. */
static void expect_hello(int fd, const char *family)
{
	const struct kj__compiler_ops *ops = kj__compiler_find(family);
	uint8_t *body = NULL;
	struct kj__msg m;
	char *s = NULL, *ident = NULL, *id = NULL;
	struct kj__frame_hdr h = read_msg(fd, &body, &m);
	CHECK(ops != NULL);
	if (ops->warm) {
		CHECK_EQ_INT(h.type, KJ_MSG_IDENT);
		CHECK(kj__msg_get(&m, KJ_F_CODE) == NULL);
		CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_COMPILER), 64, &s), 0);
		CHECK_EQ_STR(s, family);
		free(s);
		s = NULL;
		CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_COMPILER_VERSION), 255, &ident), 0);
		CHECK(kj__msg_get(&m, KJ_F_VERSION) != NULL);
		kj__msg_free(&m);
		free(body);
		body = NULL;
		h = read_msg(fd, &body, &m);
	}
	CHECK_EQ_INT(h.type, KJ_MSG_HELLO);
	CHECK_EQ_INT(code_of(&m), 0);
	CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_COMPILER), 64, &s), 0);
	CHECK_EQ_STR(s, family);
	free(s);
	CHECK_EQ_INT(kj__field_strdup(kj__msg_get(&m, KJ_F_COMPILER_VERSION), 255, &id), 0);
	if (ident)
		CHECK_EQ_STR(id, ident);
	free(id);
	free(ident);
	CHECK(kj__msg_get(&m, KJ_F_VERSION) != NULL);
	kj__msg_free(&m);
	free(body);
}

static void send_job(int fd, uint32_t id, const char *target, const char *src,
		     const char *hname, const char *hdata)
{
	struct kj__buf b = { 0 };
	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_JOB, id), 0);
	kj__msg_put_str(&b, KJ_F_TARGET, target);
	kj__msg_put_str(&b, KJ_F_OPTION, "-O3");
	kj__msg_put_str(&b, KJ_F_ENTRY, "scale");
	kj__msg_put_str(&b, KJ_F_SOURCE_NAME, "scale.hip");
	kj__msg_put_str(&b, KJ_F_SOURCE, src);
	if (hname) {
		kj__msg_put_str(&b, KJ_F_HEADER_NAME, hname);
		kj__msg_put_str(&b, KJ_F_HEADER_DATA, hdata);
	}
	CHECK_EQ_INT(kj__msg_end(&b), 0);
	CHECK_EQ_INT(kj__frame_write_fd(fd, &b), 0);
	kj__buf_free(&b);
}

static void test_worker_hiprtc(void)
{
	pid_t pid;
	int fd = spawn_worker("hiprtc", &pid), st = 0;
	uint8_t *body = NULL;
	struct kj__msg m;
	uint64_t us = 0;

	expect_hello(fd, "hiprtc");
	send_job(fd, 7, "gfx90a:xnack-", "#include \"k.h\"\n"
		 "extern \"C\" __global__ void scale(float *x) { x[0] *= K; }\n", "k.h", "#define K 2.0f\n");
	struct kj__frame_hdr h = read_msg(fd, &body, &m);
	CHECK_EQ_INT(h.type, KJ_MSG_RESULT);
	CHECK_EQ_INT(h.id, 7);
	CHECK_EQ_INT(code_of(&m), 0);
	const struct kj__field *d = kj__msg_get(&m, KJ_F_DATA);
	uint32_t fl = 0;
	CHECK(d && kj__elf_is(d->p, d->len, KJ_EM_AMDGPU, &fl));
	CHECK_EQ_INT(fl, EF_GFX90A | EF_XNACK_OFF | EF_SRAMECC_ANY);
	CHECK_EQ_INT(kj__field_u64(kj__msg_get(&m, KJ_F_COMPILE_US), &us), 0);
	CHECK(us > 0);
	kj__msg_free(&m);
	free(body);

	/* a target hiprtc 5.2 would abort on: refused, the worker lives on */
	send_job(fd, 8, "gfx1100", hip_src, NULL, NULL);
	h = read_msg(fd, &body, &m);
	CHECK_EQ_INT(h.id, 8);
	CHECK_EQ_INT(code_of(&m), KJIT_ETARGET);
	CHECK(kj__msg_get(&m, KJ_F_ERROR) != NULL && kj__msg_get(&m, KJ_F_DATA) == NULL);
	kj__msg_free(&m);
	free(body);

	send_job(fd, 9, "gfx90a", hip_bad, NULL, NULL);
	h = read_msg(fd, &body, &m);
	CHECK_EQ_INT(code_of(&m), KJIT_ECOMPILE);
	const struct kj__field *lg = kj__msg_get(&m, KJ_F_LOG);
	CHECK(lg && memmem(lg->p, lg->len, "error", 5) != NULL);
	kj__msg_free(&m);
	free(body);

	close(fd); /* end of file: the worker exits 0 */
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	worker_dir_remove();
}

static void test_worker_test_family(void)
{
	pid_t pid;
	int fd = spawn_worker("test", &pid), st = 0;
	uint8_t *body = NULL;
	struct kj__msg m;
	struct kj__frame_hdr h;

	expect_hello(fd, "test");
	send_job(fd, 1, "gfx90a", "echo me", NULL, NULL);
	h = read_msg(fd, &body, &m);
	CHECK_EQ_INT(code_of(&m), 0);
	const struct kj__field *d = kj__msg_get(&m, KJ_F_DATA);
	CHECK(d && d->len == 7 && memcmp(d->p, "echo me", 7) == 0);
	kj__msg_free(&m);
	free(body);

	uint64_t t0 = kj__now_us();
	send_job(fd, 2, "gfx90a", "#pragma kjit_test sleep 200\n", NULL, NULL);
	h = read_msg(fd, &body, &m);
	CHECK(kj__now_us() - t0 >= 200000);
	CHECK_EQ_INT(h.id, 2);
	CHECK_EQ_INT(code_of(&m), 0);
	kj__msg_free(&m);
	free(body);

	send_job(fd, 3, "gfx90a", "#pragma kjit_test error\n", NULL, NULL);
	h = read_msg(fd, &body, &m);
	CHECK_EQ_INT(code_of(&m), KJIT_ECOMPILE);
	kj__msg_free(&m);
	free(body);

	send_job(fd, 4, "gfx90a", "x\n#pragma kjit_test abort\n", NULL, NULL);
	CHECK_EQ_INT(kj__frame_read_fd(fd, 10000, &h, &body), KJIT_ECONNECT);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	close(fd);
	worker_dir_remove();
}

static void test_worker_spin_is_killable(void)
{
	pid_t pid;
	int fd = spawn_worker("test", &pid), st = 0;
	struct kj__frame_hdr h;
	uint8_t *body = NULL;

	expect_hello(fd, "test");
	send_job(fd, 1, "gfx90a", "#pragma kjit_test spin\n", NULL, NULL);
	CHECK_EQ_INT(kj__frame_read_fd(fd, 300, &h, &body), KJIT_ETIMEDOUT);
	kill(-pid, SIGKILL); /* the worker leads its own process group */
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(fd);
	worker_dir_remove();
}

static void test_worker_protocol_errors(void)
{
	pid_t pid;
	int fd = spawn_worker("test", &pid), st = 0;
	struct kj__buf b = { 0 };
	uint8_t *body = NULL;
	struct kj__msg m;

	expect_hello(fd, "test");
	/* a JOB without SOURCE gets an answer; the worker keeps serving */
	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_JOB, 5), 0);
	kj__msg_put_str(&b, KJ_F_TARGET, "gfx90a");
	kj__msg_put_str(&b, KJ_F_HEADER_NAME, "a.h"); /* and no HEADER_DATA */
	kj__msg_end(&b);
	CHECK_EQ_INT(kj__frame_write_fd(fd, &b), 0);
	struct kj__frame_hdr h = read_msg(fd, &body, &m);
	CHECK_EQ_INT(h.id, 5);
	CHECK_EQ_INT(code_of(&m), KJIT_EINVAL);
	kj__msg_free(&m);
	free(body);
	/* a frame of another type ends the worker with status 2 */
	CHECK_EQ_INT(kj__msg_begin(&b, KJ_MSG_PING, 6), 0);
	kj__msg_end(&b);
	CHECK_EQ_INT(kj__frame_write_fd(fd, &b), 0);
	kj__buf_free(&b);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	close(fd);
	worker_dir_remove();
}

static void test_worker_unknown_family(void)
{
	pid_t pid;
	int fd = spawn_worker("fortran", &pid), st = 0;
	uint8_t *body = NULL;
	struct kj__msg m;
	struct kj__frame_hdr h = read_msg(fd, &body, &m);
	CHECK_EQ_INT(h.type, KJ_MSG_HELLO);
	CHECK_EQ_INT(code_of(&m), KJIT_EBACKEND);
	CHECK(kj__msg_get(&m, KJ_F_ERROR) != NULL);
	kj__msg_free(&m);
	free(body);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	close(fd);
	worker_dir_remove();
}

/* --entry is checked against the object's own entry points: PTX .entry
 * names and SPIR-V OpEntryPoint names (ELF symbols: tests/e2e/realworld.sh
 * with real compilers). */
static void test_entries_check(void)
{
	static const char ptx[] = ".version 8.0\n.target sm_90\n.visible .entry scale(\n.param .u64 p)\n{ ret; }\n"
				  ".entry   other (\n)\n";
	const char *ok[] = { "scale", "other" }, *bad[] = { "scal" };
	char err[256];

	CHECK_EQ_INT(kj__entries_check((const uint8_t *)ptx, sizeof ptx, ok, 2, err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_check((const uint8_t *)ptx, sizeof ptx, bad, 1, err, sizeof err), KJIT_ECOMPILE);
	CHECK(strstr(err, "'scal'") != NULL && strstr(err, "it has: scale, other") != NULL);
	/* SPIR-V: header, then OpEntryPoint GLCompute %1 "main" */
	uint32_t spv[] = { KJ_SPIRV_MAGIC, 0x10000, 0, 2, 0, (5u << 16) | 15, 5, 1, 0, 0 };
	memcpy(&spv[8], "main", 4);
	const char *m[] = { "main" }, *mm[] = { "mian" };
	CHECK_EQ_INT(kj__entries_check((const uint8_t *)spv, sizeof spv, m, 1, err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_check((const uint8_t *)spv, sizeof spv, mm, 1, err, sizeof err), KJIT_ECOMPILE);
	CHECK(strstr(err, "it has: main") != NULL);
	/* a fatbin of one entry: uncompressed PTX is listed, a compressed ELF
	 * is not judged (neither is an ELF to read) */
	uint8_t fat[16 + 64 + sizeof ptx] = { 0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0 };
	fat[8] = 64 + sizeof ptx;
	fat[16] = 1;       /* PTX */
	fat[16 + 4] = 64;  /* header size */
	fat[16 + 8] = sizeof ptx;
	memcpy(fat + 16 + 64, ptx, sizeof ptx);
	CHECK(kj__fatbin_is(fat, sizeof fat));
	CHECK_EQ_INT(kj__entries_check(fat, sizeof fat, ok, 2, err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_check(fat, sizeof fat, bad, 1, err, sizeof err), KJIT_ECOMPILE);
	CHECK(strstr(err, "it has: scale, other") != NULL);
	fat[16] = 2;       /* ELF */
	fat[16 + 41] = 0x20; /* LZ4 */
	CHECK(kj__fatbin_is(fat, sizeof fat));
	CHECK_EQ_INT(kj__entries_check(fat, sizeof fat, bad, 1, err, sizeof err), 0);
	/* something unlistable is not judged */
	CHECK_EQ_INT(kj__entries_check((const uint8_t *)"\x01\x02", 2, mm, 1, err, sizeof err), 0);
	/* the list the index keeps (schema 5): the same names, "NAME\n" each;
	 * unlistable: 1 and NULL */
	char *list = NULL;
	CHECK_EQ_INT(kj__entries_list((const uint8_t *)ptx, sizeof ptx, &list), 0);
	CHECK(list && strcmp(list, "scale\nother\n") == 0);
	free(list);
	CHECK_EQ_INT(kj__entries_list((const uint8_t *)spv, sizeof spv, &list), 0);
	CHECK(list && strcmp(list, "main\n") == 0);
	free(list);
	CHECK_EQ_INT(kj__entries_list(fat, sizeof fat, &list), 1); /* the compressed one */
	CHECK(list == NULL);
	CHECK_EQ_INT(kj__entries_list((const uint8_t *)"\x01\x02", 2, &list), 1);
	CHECK(list == NULL);
}

/* nvcc: a full .cu file (host code, <stdint.h>) to cubin and PTX, the
 * mangled entry checked, the system headers in the identity. */
static void test_nvcc(void)
{
	const struct kj__compiler_ops *ops = kj__compiler_find("nvcc");
	void *st = init_or_die(ops);
	char id[256], rv[64];
	struct kj__compile_out o = { 0 };
	static const char src[] = "#include <stdint.h>\n#include <cstdio>\n"
				  "__global__ void k(float *x, uint32_t n) { if (threadIdx.x < n) x[threadIdx.x] = 1; }\n"
				  "int main() { k<<<1, 1>>>(nullptr, 0); printf(\"x\\n\"); return 0; }\n";
	const char *entry[] = { "_Z1kPfj" }, *wrong[] = { "k" };

	CHECK_EQ_INT(ops->identity(st, id, sizeof id, rv, sizeof rv), 0);
	CHECK(strncmp(id, "nvcc ", 5) == 0 && strstr(id, "; system headers ") != NULL);
	struct kj__compile_job j = job_of("sm_90", "full.cu", src);
	j.entries = entry;
	j.n_entries = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(kj__elf_is(o.data, o.len, KJ_EM_CUDA, NULL));
	char err[256];
	CHECK_EQ_INT(kj__entries_check(o.data, o.len, entry, 1, err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_check(o.data, o.len, wrong, 1, err, sizeof err), KJIT_ECOMPILE);
	CHECK(strstr(err, "_Z1kPfj") != NULL);
	kj__compile_out_free(&o);
	j = job_of("compute_90", "full.cu", src);
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(o.len > 0 && o.data[o.len - 1] == '\0' && strstr((const char *)o.data, ".entry") != NULL);
	kj__compile_out_free(&o);
	/* a broken source: the compiler's reason, no private path */
	j = job_of("sm_90", "bad.cu", "__global__ void f() { nope; }\n");
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ECOMPILE);
	CHECK(o.error && strstr(o.error, "bad.cu(1): error") != NULL);
	CHECK(o.log && strstr(o.log, "kjit-nvcc-") == NULL);
	kj__compile_out_free(&o);
	char terr[256];
	CHECK_EQ_INT(ops->check_target(st, "sm_1", terr, sizeof terr), KJIT_ETARGET);
	ops->fini(st);
}

/* nvcc --fatbin: SASS for sm_90 and PTX for compute_90 in one CUDA fat
 * binary, checked by its magic and layout; its entries are those of its
 * ELF.  A cubin, a cut fatbin and an entry running past the end are not
 * fatbins. */
static void test_nvcc_fatbin(void)
{
	const struct kj__compiler_ops *ops = kj__compiler_find("nvcc");
	void *st = init_or_die(ops);
	struct kj__compile_out o = { 0 }, c = { 0 };
	static const char src[] = "__global__ void k(float *x) { x[threadIdx.x] = 1; }\nint main() { return 0; }\n";
	const char *fat[] = { "--fatbin" }, *entry[] = { "_Z1kPf" }, *wrong[] = { "k" };
	char err[256];

	struct kj__compile_job j = job_of("sm_90", "fat.cu", src);
	j.options = fat;
	j.n_options = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(o.len > 16 && o.data[0] == 0x50 && o.data[1] == 0xed && o.data[2] == 0x55 && o.data[3] == 0xba);
	CHECK(kj__fatbin_is(o.data, o.len));
	CHECK(!kj__elf_is(o.data, o.len, KJ_EM_CUDA, NULL));
	CHECK(memmem(o.data, o.len, "\177ELF", 4) != NULL); /* the SASS */
	CHECK_EQ_INT(kj__entries_check(o.data, o.len, entry, 1, err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_check(o.data, o.len, wrong, 1, err, sizeof err), KJIT_ECOMPILE);
	CHECK(strstr(err, "it has: _Z1kPf") != NULL);
	CHECK(!kj__fatbin_is(o.data, o.len - 1));
	CHECK(!kj__fatbin_is(o.data, 16));
	o.data[16 + 8 + 4] = 1; /* the first entry's payload size, now past the end */
	CHECK(!kj__fatbin_is(o.data, o.len));
	kj__compile_out_free(&o);
	j = job_of("sm_90", "fat.cu", src);
	CHECK_EQ_INT(ops->compile(st, &j, &c), 0);
	CHECK(!kj__fatbin_is(c.data, c.len)); /* a cubin */
	kj__compile_out_free(&c);
	j = job_of("compute_90", "fat.cu", src);
	j.options = fat;
	j.n_options = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(kj__fatbin_is(o.data, o.len) && memmem(o.data, o.len, "\177ELF", 4) == NULL); /* PTX alone */
	CHECK_EQ_INT(kj__entries_check(o.data, o.len, entry, 1, err, sizeof err), 0); /* one entry, no ELF */
	kj__compile_out_free(&o);
	ops->fini(st);
	/* NVRTC makes no fatbin, and says who does */
	ops = kj__compiler_find("nvrtc");
	st = init_or_die(ops);
	j = job_of("sm_90", "fat.cu", cuda_src);
	j.options = fat;
	j.n_options = 1;
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_EINVAL);
	CHECK(o.error && strstr(o.error, "--compiler nvcc") != NULL);
	kj__compile_out_free(&o);
	ops->fini(st);
}

/* nvcc is found in the toolkit NVRTC comes from: bin/ beside its lib/. */
static void test_nvcc_beside_nvrtc(void)
{
	char tk[] = "/tmp/kjit-tk-XXXXXX", p[PATH_MAX], lib[PATH_MAX], want[PATH_MAX], got[PATH_MAX];

	CHECK(mkdtemp(tk) != NULL);
	snprintf(p, sizeof p, "%s/lib", tk);
	CHECK_EQ_INT(mkdir(p, 0700), 0);
	CHECK_EQ_INT(kj__nvcc_beside(p, got, sizeof got), KJIT_ENOENT); /* no bin/nvcc yet */
	snprintf(p, sizeof p, "%s/bin", tk);
	CHECK_EQ_INT(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/bin/nvcc", tk);
	int fd = open(p, O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0 && close(fd) == 0);
	snprintf(lib, sizeof lib, "%s/lib", tk);
	CHECK_EQ_INT(kj__nvcc_beside(lib, got, sizeof got), KJIT_ENOENT); /* not executable */
	CHECK_EQ_INT(chmod(p, 0700), 0);
	CHECK_EQ_INT(kj__nvcc_beside(lib, got, sizeof got), 0);
	CHECK(realpath(p, want) != NULL);
	CHECK_EQ_STR(got, want);
	unlink(p);
	snprintf(p, sizeof p, "%s/bin", tk);
	rmdir(p);
	rmdir(lib);
	rmdir(tk);
	/* the real toolkit: the library NVRTC is loaded from, and its nvcc */
	if (kj__nvrtc_lib_dir(lib, sizeof lib) == 0 && kj__nvcc_beside(lib, got, sizeof got) == 0) {
		struct stat a, b;
		CHECK((size_t)snprintf(p, sizeof p, "%s/../bin/nvcc", lib) < sizeof p);
		CHECK(stat(p, &a) == 0 && stat(got, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	} else {
		printf("# no NVRTC with an nvcc beside it: the real toolkit not checked\n");
	}
}

/* Compiler messages: the user's file names, no private paths, and a
 * one-line reason taken from the log. */
static void test_log_scrub_and_reason(void)
{
	const char *log = "In file included from /tmp/c/tmp/worker-X/comgr-9a944e/input/CompileSource:1:\n"
			  "/tmp/c/tmp/worker-X/comgr-9a944e/include/sub/x.h:1:9: error: use of 'nope'\n"
			  "2 errors generated when compiling for gfx90a.\n";
	char *c = kj__log_scrub(log, "/comgr-", "CompileSource", "k.hip");
	CHECK(c != NULL);
	CHECK_EQ_STR(c, "In file included from k.hip:1:\nsub/x.h:1:9: error: use of 'nope'\n"
			"2 errors generated when compiling for gfx90a.\n");
	free(c);
	char why[256];
	kj__log_reason("k.cu(3): warning: w\nk.cu(4): error: identifier \"q\" is undefined\r\n"
		       "1 error detected in the compilation of \"k.cu\".\n", "fallback", why, sizeof why);
	CHECK_EQ_STR(why, "k.cu(4): error: identifier \"q\" is undefined");
	kj__log_reason("1 error detected in the compilation of \"k.cu\".\n", "fallback", why, sizeof why);
	CHECK_EQ_STR(why, "fallback");
	kj__log_reason(NULL, "none", why, sizeof why);
	CHECK_EQ_STR(why, "none");
}

TEST_LIST(TEST(nvcc) TEST(nvcc_fatbin) TEST(nvcc_beside_nvrtc) TEST(log_scrub_and_reason) TEST(entries_check) TEST(find) TEST(options_whitelist) TEST(include_check) TEST(log_cap)
	  TEST(bundle_parse) TEST(hiprtc_targets) TEST(hiprtc_rejects_targets)
	  TEST(hiprtc_errors_headers_options) TEST(hipcc) TEST(nvrtc) TEST(shaderc)
	  TEST(worker_hiprtc) TEST(worker_test_family) TEST(worker_spin_is_killable)
	  TEST(worker_protocol_errors) TEST(worker_unknown_family))
