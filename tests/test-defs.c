/* test-defs.c: compilers/defs.c, what keeps option values away from the
 * shells of nvcc and hipcc: the definitions header (text, order, refusals),
 * the shell-safe check, and real nvcc and hipcc compiles in which every
 * shell metacharacter of a -D value reaches the preprocessor as data (a
 * command substitution that would create a marker file creates none, and
 * the definitions still mean what they mean on a command line).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "compint.h"
#include "compiler.h"
#include "kjit.h"
#include "test.h"
#include "util.h"

static struct kj__compile_job job_opts(const char *target, const char *name, const char *src, const char *const *opts,
				       size_t n)
{
	struct kj__compile_job j;
	memset(&j, 0, sizeof j);
	j.target = target;
	j.source_name = name;
	j.source = (const uint8_t *)src;
	j.source_len = strlen(src);
	j.options = opts;
	j.n_options = n;
	return j;
}

/* The header for opts, NUL-terminated (malloc'd), or NULL with err set. */
static char *header_of(const char *const *opts, size_t n, char *err, size_t errlen)
{
	struct kj__compile_job j = job_opts("sm_90", "a.cu", "", opts, n);
	struct kj__buf b = { 0 };
	if (kj__defs_header(&j, &b, err, errlen) < 0 || kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

static void test_header_text(void)
{
	const char *opts[] = { "-DA", "-O3", "-DB=2", "-UA", "-DC=$(id)`x`;|&&\"'\\", "-DE=", "-DF=a\\" };
	char err[256] = "";
	char *h = header_of(opts, 7, err, sizeof err);
	CHECK(h != NULL);
	CHECK_EQ_STR(h, "#define A 1\n\n#define B 2\n\n#undef A\n\n#define C $(id)`x`;|&&\"'\\/**/\n\n"
			"#define E \n\n#define F a\\/**/\n\n");
	free(h);
	const char *none[] = { "-O3", "--fatbin" };
	h = header_of(none, 2, err, sizeof err);
	CHECK(h != NULL && h[0] == '\0');
	free(h);
}

static void test_header_refusals(void)
{
	char err[256] = "";
	const char *nl[] = { "-DX=1\n#include \"/etc/shadow\"" };
	CHECK(header_of(nl, 1, err, sizeof err) == NULL);
	CHECK(strstr(err, "-DX") && strstr(err, "newline"));
	const char *cm[] = { "-DX=1 /* open", "-DY=*/ 2" };
	CHECK(header_of(cm, 2, err, sizeof err) == NULL);
	CHECK(strstr(err, "-DX") && strstr(err, "comment"));
	/* closed comments, comments inside literals and line comments are fine */
	const char *okc[] = { "-DX=1 /* c */ + 2", "-DS=\"/*\"", "-DT='/'", "-DL=1 // c /*" };
	char *h = header_of(okc, 4, err, sizeof err);
	CHECK(h != NULL);
	free(h);
	/* and the shared option check names a newline in a value clearly */
	const struct kj__opt_rule rules[] = { { KJ_OPT_MACRO, "-D", NULL } };
	struct kj__compile_job j = job_opts("sm_90", "a.cu", "", nl, 1);
	CHECK_EQ_INT(kj__options_check("nvcc", rules, 1, &j, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "value of -DX holds a newline") != NULL);
}

/* 0 if opt passes rules[n], else KJIT_EINVAL. */
static int one_opt(const struct kj__opt_rule *rules, size_t n, const char *opt)
{
	const char *o[] = { opt };
	struct kj__compile_job j = job_opts("sm_90", "a.cu", "", o, 1);
	char err[256];
	return kj__options_check2("nvcc", rules, n, NULL, 0, &j, err, sizeof err);
}

static void test_function_like_macros(void)
{
	const struct kj__opt_rule rules[] = { { KJ_OPT_MACRO, "-D", NULL }, { KJ_OPT_MACRO, "-U", NULL } };
	static const char *const good[] = { "-Dbuffer_ld1(buf,i)=buf[i]", "-DF()=1", "-DV(a, ...)=a", "-DG(x)",
					    "-DH(...)=__VA_ARGS__", "-DA=1", "-UA" };
	static const char *const bad[] = { "-D(x)=1", "-DF(1)=x", "-DF(a,)=x", "-DF(a b)=x", "-UF(x)", "-DF(a=1",
					   "-DF(a))=1", "-DF (a)=1", "-D1F(a)=a" };
	for (size_t i = 0; i < KJ_ARRAY_SIZE(good); i++)
		CHECK_EQ_INT(one_opt(rules, 2, good[i]), 0);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(bad); i++)
		CHECK_EQ_INT(one_opt(rules, 2, bad[i]), KJIT_EINVAL);
	/* nvcc and hipcc get it as a directive (their own -D splits at commas) */
	char err[256] = "";
	const char *fn[] = { "-Dbuffer_ld1(buf,i)=buf[i]", "-DG(x)" };
	char *h = header_of(fn, 2, err, sizeof err);
	CHECK(h != NULL);
	CHECK_EQ_STR(h, "#define buffer_ld1(buf,i) buf[i]\n\n#define G(x) 1\n\n");
	free(h);
}

static void test_value_lists(void)
{
	const struct kj__opt_rule rules[] = { { KJ_OPT_LIST, "-Xcompiler=", KJ_HOST_CC_VALUES },
					      { KJ_OPT_LIST, "-Xptxas=", KJ_PTXAS_VALUES },
					      { KJ_OPT_LIST, "--diag-suppress=", "#|*" } };
	static const char *const good[] = { "-Xcompiler=-fPIC", "-Xcompiler=-Wall,-Wno-unused-function,-O2",
					    "-Xptxas=-v", "-Xptxas=-O3,--warn-on-spills,--maxrregcount=64",
					    "--diag-suppress=177,550", "--diag-suppress=set_but_not_used" };
	/* what could read or write a file, or run a program, never passes */
	static const char *const bad[] = { "-Xcompiler=-Wl,-rpath=/x", "-Xcompiler=-fplugin=x", "-Xcompiler=",
					   "-Xcompiler=-fPIC,", "-Xcompiler=-Wp,-MD,/tmp/x", "-Xcompiler=-Wa",
					   "-Xcompiler=-B/tmp", "-Xcompiler=-include,/etc/passwd", "-Xcompiler=-o,/x",
					   "-Xptxas=--gpu-name=sm_80", "-Xptxas=-o,/tmp/x", "--diag-suppress=17a",
					   "--diag-suppress=1234567", "--diag-suppress=", "-Xcompiler=-W/x" };
	for (size_t i = 0; i < KJ_ARRAY_SIZE(good); i++)
		CHECK_EQ_INT(one_opt(rules, 3, good[i]), 0);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(bad); i++)
		CHECK_EQ_INT(one_opt(rules, 3, bad[i]), KJIT_EINVAL);
}

static void test_shell_safe(void)
{
	char err[512];
	CHECK_EQ_INT(kj__shell_safe("nvcc", "option", "-arch=sm_90", err, sizeof err), 0);
	CHECK_EQ_INT(kj__shell_safe("hipcc", "option", "--offload-arch=gfx90a:sramecc+:xnack-", err, sizeof err), 0);
	CHECK_EQ_INT(kj__shell_safe("nvcc", "argument", "/tmp/kjit-nvcc-Ab_1/x.cu", err, sizeof err), 0);
	static const char *const bad[] = { "a b", "a$b", "a`b", "a;b", "a|b", "a&b", "a\"b", "a'b", "a\\b", "a\nb",
					   "a(b", "a>b", "a<b", "a*b", "a?b", "a~b", "a{b", "a#b", "a!b" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_EQ_INT(kj__shell_safe("nvcc", "option", bad[i], err, sizeof err), KJIT_EINVAL);
		char want[8];
		if (bad[i][1] == '\n')
			snprintf(want, sizeof want, "\\x0a");
		else
			snprintf(want, sizeof want, "'%c'", bad[i][1]);
		CHECK(strstr(err, want) != NULL && strstr(err, "nvcc") != NULL);
		CHECK(strchr(err, '\n') == NULL);
	}
	const char *argv[] = { "/usr/bin/nvcc", "-O3", "x y", NULL };
	CHECK_EQ_INT(kj__argv_shell_safe("nvcc", argv, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "'x y'") && strstr(err, "' '"));
}

static void test_reserved_header_name(void)
{
	char dir[] = "/tmp/kjit-test-defs-XXXXXX", path[PATH_MAX], err[256];
	CHECK(mkdtemp(dir) != NULL);
	const char *opts[] = { "-DX=1" };
	struct kj__header h[] = { { KJ_DEFS_HEADER, (const uint8_t *)"#define X 2\n", 12 } };
	struct kj__compile_job j = job_opts("sm_90", "a.cu", "", opts, 1);
	j.headers = h;
	j.n_headers = 1;
	CHECK_EQ_INT(kj__defs_write(dir, &j, path, sizeof path, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, KJ_DEFS_HEADER) != NULL && path[0] == '\0');
	j.n_headers = 0;
	CHECK_EQ_INT(kj__defs_write(dir, &j, path, sizeof path, err, sizeof err), 0);
	CHECK(strstr(path, dir) == path && access(path, R_OK) == 0);
	CHECK_EQ_INT(unlink(path), 0);
	j.n_options = 0; /* no definitions: no header */
	CHECK_EQ_INT(kj__defs_write(dir, &j, path, sizeof path, err, sizeof err), 0);
	CHECK(path[0] == '\0');
	CHECK_EQ_INT(rmdir(dir), 0);
}

/* The values a shell would run, each of which would create MARK. */
#define MARK "/tmp/kjit-test-defs-pwned"
static const char *const injections[] = {
	"-DX=$(touch " MARK ")1", "-DX=`touch " MARK "`1", "-DX=1;touch " MARK, "-DX=1|touch " MARK,
	"-DX=1&&touch " MARK, "-DX=1\"; touch " MARK "; echo \"", "-DX=1'; touch " MARK "; echo '",
	"-DX=1\\", "-DX=1 $(touch " MARK ") \\",
};

/* Compiles src with each injected value (each fails or compiles, never
 * runs anything), then with X=3 Y=(X*7) Z=5 -UZ, which must compile. */
static void injections_through(const char *family, const char *target, const char *name, const char *src)
{
	const struct kj__compiler_ops *ops = kj__compiler_find(family);
	void *st = NULL;
	char err[512] = "";
	CHECK(ops != NULL);
	if (ops->init(&st, err, sizeof err) != 0)
		fprintf(stderr, "%s init: %s\n", family, err);
	CHECK(st != NULL);
	unlink(MARK);
	for (size_t i = 0; i < sizeof injections / sizeof injections[0]; i++) {
		const char *opts[] = { injections[i], "-DY=1" };
		struct kj__compile_job j = job_opts(target, name, src, opts, 2);
		struct kj__compile_out o = { 0 };
		int r = ops->compile(st, &j, &o);
		CHECK(r == 0 || r == KJIT_ECOMPILE);
		CHECK(o.log == NULL || strstr(o.log, "uid=") == NULL);
		CHECK(access(MARK, F_OK) != 0);
		kj__compile_out_free(&o);
	}
	const char *good[] = { "-DX=3", "-DY=(X*7)", "-DZ=5", "-UZ" };
	struct kj__compile_job j = job_opts(target, name, src, good, 4);
	struct kj__compile_out o = { 0 };
	CHECK_EQ_INT(ops->compile(st, &j, &o), 0);
	CHECK(o.len > 0);
	kj__compile_out_free(&o);
	/* Z stays undefined after -UZ: its use is a compile error only if defined */
	const char *zdef[] = { "-DX=3", "-DY=1", "-DZ=nope_undefined_name" };
	j = job_opts(target, name, src, zdef, 3);
	CHECK_EQ_INT(ops->compile(st, &j, &o), KJIT_ECOMPILE);
	kj__compile_out_free(&o);
	ops->fini(st);
}

static const char cuda_src[] = "__global__ void k(int *p) { p[0] = X; p[1] = Y;\n#ifdef Z\n p[2] = Z;\n#endif\n}\n";

static void test_nvcc_injections(void)
{
	injections_through("nvcc", "sm_90", "inj.cu", cuda_src);
}

static void test_hipcc_injections(void)
{
	injections_through("hipcc", "gfx90a", "inj.hip", cuda_src);
}

TEST_LIST(TEST(header_text) TEST(header_refusals) TEST(function_like_macros) TEST(value_lists) TEST(shell_safe)
		  TEST(reserved_header_name)
		  TEST(nvcc_injections) TEST(hipcc_injections))
