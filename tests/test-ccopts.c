/* test-ccopts.c: compiler-style options of `kjit get` (client/ccopts.c):
 * which arguments are taken and how they are spelled for the daemon, that
 * the get command's own options and their values pass through, glslc's
 * spellings, and the headers -I finds (and refuses). */
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccopts.h"
#include "kjit.h"
#include "test.h"
#include "util.h"

static int take(struct kj__ccopts *cc, char **argv, int *argc, char *err)
{
	for (*argc = 0; argv[*argc]; (*argc)++)
		;
	return kj__ccopts_take(cc, argc, argv, err, 256);
}

static void test_takes_compiler_options(void)
{
	struct kj__ccopts cc;
	char err[256];
	int argc;
	char *argv[] = { "get", "--source", "-Dnot.cu", "-I", "inc", "-Iinc2", "--include-path=inc3", "-DA=1",
			 "-D", "B", "-UC", "-O3", "-std=c++17", "--opt", "-DKEPT", "--backend", "cuda",
			 "-default-device", "-o", "-Ox", "--json", "--compiler", "nvcc", "--fatbin", NULL };

	CHECK_EQ_INT(take(&cc, argv, &argc, err), 0);
	CHECK_EQ_INT(cc.n_dirs, 3);
	CHECK_EQ_STR(cc.dirs[0], "inc");
	CHECK_EQ_STR(cc.dirs[1], "inc2");
	CHECK_EQ_STR(cc.dirs[2], "inc3");
	CHECK_EQ_INT(cc.n_opts, 7);
	CHECK_EQ_STR(cc.opts[0], "-DA=1");
	CHECK_EQ_STR(cc.opts[1], "-DB");
	CHECK_EQ_STR(cc.opts[2], "-UC");
	CHECK_EQ_STR(cc.opts[3], "-O3");
	CHECK_EQ_STR(cc.opts[4], "-std=c++17");
	CHECK_EQ_STR(cc.opts[5], "-default-device");
	CHECK_EQ_STR(cc.opts[6], "--fatbin");
	CHECK_EQ_STR(cc.compiler, "nvcc");
	/* what is left, in order: the values of valued options untouched */
	const char *left[] = { "get", "--source", "-Dnot.cu", "--opt", "-DKEPT", "--backend", "cuda", "-o", "-Ox",
			       "--json" };
	CHECK_EQ_INT(argc, 10);
	for (int i = 0; i < argc; i++)
		CHECK_EQ_STR(argv[i], left[i]);
	CHECK(argv[argc] == NULL);
	const char *target = NULL;
	CHECK_EQ_INT(kj__ccopts_finish(&cc, KJIT_BACKEND_CUDA, &target, err, sizeof err), 0);
	CHECK(target == NULL);
	kj__ccopts_free(&cc);
	kj__ccopts_free(&cc); /* twice is fine */
}

static void test_missing_argument_and_after_dashdash(void)
{
	struct kj__ccopts cc;
	char err[256];
	int argc;
	char *a1[] = { "get", "-I", NULL };
	CHECK_EQ_INT(take(&cc, a1, &argc, err), KJIT_EINVAL);
	CHECK(strstr(err, "-I") != NULL);
	kj__ccopts_free(&cc);
	char *a3[] = { "get", "--compiler", NULL };
	CHECK_EQ_INT(take(&cc, a3, &argc, err), KJIT_EINVAL);
	kj__ccopts_free(&cc);
	char *a5[] = { "get", "--name-expression", "scale<float, 4>", "--name-expression=f<-1>", NULL };
	CHECK_EQ_INT(take(&cc, a5, &argc, err), 0);
	CHECK_EQ_INT(cc.n_exprs, 2);
	CHECK_EQ_STR(cc.exprs[0], "scale<float, 4>");
	CHECK_EQ_STR(cc.exprs[1], "f<-1>");
	CHECK_EQ_INT(argc, 1);
	kj__ccopts_free(&cc);
	char *a4[] = { "get", "--compiler=hipcc", NULL };
	CHECK_EQ_INT(take(&cc, a4, &argc, err), 0);
	CHECK_EQ_STR(cc.compiler, "hipcc");
	CHECK_EQ_INT(argc, 1);
	kj__ccopts_free(&cc);
	char *a2[] = { "get", "--", "-DX", NULL };
	CHECK_EQ_INT(take(&cc, a2, &argc, err), 0);
	CHECK_EQ_INT(cc.n_opts, 0);
	CHECK_EQ_INT(argc, 3);
	kj__ccopts_free(&cc);
}

static void test_glslc_spellings(void)
{
	struct kj__ccopts cc;
	char err[256];
	int argc;
	const char *target = NULL;
	char *a1[] = { "get", "-fshader-stage=compute", "--target-env=vulkan1.2", "-std=450", "-O2", NULL };

	CHECK_EQ_INT(take(&cc, a1, &argc, err), 0);
	CHECK_EQ_INT(argc, 1);
	CHECK_EQ_INT(kj__ccopts_finish(&cc, KJIT_BACKEND_VULKAN, &target, err, sizeof err), 0);
	CHECK_EQ_STR(target, "vulkan1.2");
	CHECK_EQ_STR(cc.opts[0], "-std=450");
	CHECK_EQ_STR(cc.opts[1], "-O"); /* glslc has one level */
	/* a disagreeing --target, another stage, another backend */
	target = "vulkan1.3";
	CHECK_EQ_INT(kj__ccopts_finish(&cc, KJIT_BACKEND_VULKAN, &target, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "disagree") != NULL);
	target = NULL;
	CHECK_EQ_INT(kj__ccopts_finish(&cc, KJIT_BACKEND_HIP, &target, err, sizeof err), KJIT_EINVAL);
	kj__ccopts_free(&cc);
	char *a2[] = { "get", "-fshader-stage=vertex", NULL };
	CHECK_EQ_INT(take(&cc, a2, &argc, err), 0);
	CHECK_EQ_INT(kj__ccopts_finish(&cc, KJIT_BACKEND_VULKAN, &target, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "compute") != NULL);
	kj__ccopts_free(&cc);
}

/* client/ccflags.c: the flags of build files, taken whole and spelled as
 * the daemon's whitelists spell them. */
static void test_habit_flags(void)
{
	struct kj__ccopts cc;
	char err[256];
	int argc;
	char *a1[] = { "get", "--use_fast_math", "-lineinfo", "--extended-lambda", "-expt-relaxed-constexpr",
		       "-Xcompiler", "-fPIC,-Wall", "-Xptxas=-v", "--diag-suppress", "177", "-restrict",
		       "-munsafe-fp-atomics", "-fPIC", "--gpu-max-threads-per-block=256", "--target-spv=spv1.3",
		       "-fubo-binding-base", "5", "-fssbo-binding-base", "comp", "2", "-ftz=true", "--source", "x.cu",
		       NULL };
	const char *want[] = { "--use_fast_math", "-lineinfo", "--extended-lambda", "-expt-relaxed-constexpr",
			       "-Xcompiler=-fPIC,-Wall", "-Xptxas=-v", "--diag-suppress=177", "-restrict",
			       "-munsafe-fp-atomics", "-fPIC", "--gpu-max-threads-per-block=256", "--target-spv=spv1.3",
			       "-fubo-binding-base 5", "-fssbo-binding-base 2", "-ftz=true" };

	CHECK_EQ_INT(take(&cc, a1, &argc, err), 0);
	CHECK_EQ_INT(cc.n_opts, KJ_ARRAY_SIZE(want));
	for (size_t i = 0; i < cc.n_opts && i < KJ_ARRAY_SIZE(want); i++)
		CHECK_EQ_STR(cc.opts[i], want[i]);
	CHECK_EQ_INT(argc, 3); /* get --source x.cu */
	kj__ccopts_free(&cc);
	/* refusals name the whole flag */
	char *a2[] = { "get", "-fubo-binding-base", "vert", "5", NULL };
	CHECK_EQ_INT(take(&cc, a2, &argc, err), KJIT_EINVAL);
	CHECK(strstr(err, "-fubo-binding-base vert") != NULL);
	kj__ccopts_free(&cc);
	char *a3[] = { "get", "-Xcompiler", NULL };
	CHECK_EQ_INT(take(&cc, a3, &argc, err), KJIT_EINVAL);
	CHECK(strstr(err, "-Xcompiler") != NULL);
	kj__ccopts_free(&cc);
}

static void test_target_flags(void)
{
	struct kj__ccopts cc;
	char err[256];
	int argc;
	const char *target = NULL;
	char *a1[] = { "get", "-arch=sm_90", "--gpu-architecture", "sm_90", NULL };

	CHECK_EQ_INT(take(&cc, a1, &argc, err), 0);
	CHECK_EQ_INT(argc, 1);
	CHECK_EQ_INT(kj__ccopts_finish(&cc, KJIT_BACKEND_CUDA, &target, err, sizeof err), 0);
	CHECK_EQ_STR(target, "sm_90");
	target = "sm_80";
	CHECK_EQ_INT(kj__ccopts_finish(&cc, KJIT_BACKEND_CUDA, &target, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "-arch") && strstr(err, "--target"));
	kj__ccopts_free(&cc);
	char *a2[] = { "get", "--offload-arch=gfx90a", "--offload-arch=gfx1100", NULL };
	CHECK_EQ_INT(take(&cc, a2, &argc, err), KJIT_EINVAL);
	CHECK(strstr(err, "--offload-arch") && strstr(err, "--target"));
	kj__ccopts_free(&cc);
	static char *several[][4] = { { "get", "-arch=native", NULL }, { "get", "-arch=sm_80,sm_90", NULL },
				      { "get", "-gencode", "arch=compute_90,code=sm_90", NULL },
				      { "get", "-arch", NULL } };
	for (size_t i = 0; i < KJ_ARRAY_SIZE(several); i++) {
		CHECK_EQ_INT(take(&cc, several[i], &argc, err), KJIT_EINVAL);
		CHECK(strstr(err, i == 3 ? "missing argument to -arch" : "--target") != NULL);
		kj__ccopts_free(&cc);
	}
	/* --backend from the target, then the suffix */
	CHECK_EQ_INT(kj__ccflags_backend("k.cu", "gfx90a"), KJIT_BACKEND_HIP);
	CHECK_EQ_INT(kj__ccflags_backend("k.hip", "sm_90"), KJIT_BACKEND_CUDA);
	CHECK_EQ_INT(kj__ccflags_backend(NULL, "vulkan1.2"), KJIT_BACKEND_VULKAN);
	CHECK_EQ_INT(kj__ccflags_backend("k.cpp", NULL), KJIT_BACKEND_NONE);
	CHECK_EQ_INT(kj__ccflags_backend("k.cu", NULL), KJIT_BACKEND_CUDA);
	CHECK_EQ_INT(kj__ccflags_backend("dir/k.hip", NULL), KJIT_BACKEND_HIP);
	CHECK_EQ_INT(kj__ccflags_backend("s.comp", NULL), KJIT_BACKEND_VULKAN);
	CHECK_EQ_INT(kj__ccflags_backend("s.hlsl", NULL), KJIT_BACKEND_VULKAN);
	CHECK_EQ_INT(kj__ccflags_backend("k.txt", NULL), KJIT_BACKEND_NONE);
	CHECK_EQ_INT(kj__ccflags_backend(NULL, NULL), KJIT_BACKEND_NONE);
}

static char root[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void put(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", root, name);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(text, f);
	CHECK(fclose(f) == 0);
}

/* -I: found headers join the request's (which win), recursively; names
 * found nowhere are left to the compiler; escapes are refused. */
/* Issue 30: nvcc's and hipcc's -include FILE, NVRTC's --pre-include[=]FILE,
 * taken as typed (the get command reads and sends each file). */
static void test_pre_include_spellings(void)
{
	struct kj__ccopts cc;
	char err[256];
	int argc;
	char *argv[] = { "get", "-include", "a.h", "--pre-include=b.h", "--pre-include", "c.h", "-include=d.h",
			 "--source", "-include", "--backend", "cuda", NULL };
	char *bad[] = { "get", "-include", NULL };

	CHECK_EQ_INT(take(&cc, argv, &argc, err), 0);
	CHECK_EQ_INT(cc.n_pre, 4);
	CHECK_EQ_STR(cc.pre[0], "a.h");
	CHECK_EQ_STR(cc.pre[1], "b.h");
	CHECK_EQ_STR(cc.pre[2], "c.h");
	CHECK_EQ_STR(cc.pre[3], "d.h");
	CHECK_EQ_INT(argc, 5); /* --source's value "-include" is a value, not the option */
	CHECK_EQ_STR(argv[2], "-include");
	kj__ccopts_free(&cc);
	CHECK_EQ_INT(take(&cc, bad, &argc, err), KJIT_EINVAL);
	CHECK(strstr(err, "missing argument to -include") != NULL);
	kj__ccopts_free(&cc);
}

static void test_headers_from_dirs(void)
{
	char tmpl[] = "/tmp/kjit-ccopts-XXXXXX", a[128], b[128], err[256];
	kjit_header *h = NULL, given = { "mine.h", "int m;\n", 7 };
	size_t n = 0;

	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(root, sizeof root, "%s", tmpl);
	snprintf(a, sizeof a, "%s/a", root);
	snprintf(b, sizeof b, "%s/b", root);
	CHECK(mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0);
	put("a/x.h", "#include \"y.h\"\n#include <cuda_fp16.h>\n");
	put("b/y.h", "int y;\n");
	put("b/x.h", "int shadowed;\n");
	put("a/mine.h", "int not_sent;\n");
	const char *src = "#include \"x.h\"\n#include \"mine.h\"\n";
	const char *dirs[] = { a, b };
	kjit_request req = { .backend = KJIT_BACKEND_CUDA, .source = src, .source_size = strlen(src),
			     .source_name = "k.cu", .headers = &given, .n_headers = 1 };
	CHECK_EQ_INT(kj__headers_from_dirs(&req, dirs, 2, &h, &n, err, sizeof err), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_STR(h[0].name, "mine.h");
	CHECK(memcmp(h[0].data, "int m;\n", 7) == 0);
	CHECK_EQ_STR(h[1].name, "x.h");
	CHECK(strstr((const char *)h[1].data, "y.h") != NULL); /* a/ before b/ */
	CHECK_EQ_STR(h[2].name, "y.h");
	kj__headers_free(h, n);
	/* escapes are refused with the user's file name */
	const char *bad = "\n#include \"../b/y.h\"\n";
	req.source = bad;
	req.source_size = strlen(bad);
	CHECK_EQ_INT(kj__headers_from_dirs(&req, dirs, 2, &h, &n, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "k.cu:2:") != NULL);
	CHECK(h == NULL && n == 0);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TEST_LIST(TEST(pre_include_spellings) TEST(takes_compiler_options) TEST(missing_argument_and_after_dashdash) TEST(glslc_spellings)
	  TEST(habit_flags) TEST(target_flags) TEST(headers_from_dirs))
