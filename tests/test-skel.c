/* test-skel.c: the compiler families' two skeletons on their own, each
 * driven by a fake family, so what they promise every family is checked
 * without a GPU toolkit: spawn-family.c's command line (the output flag,
 * the target, the options kept off, definitions and pre-includes after
 * them, -I, -o, `-x LANG`, the source under the user's name or the
 * fallback), the files it writes, its run's messages and its start; and
 * rtc.c's compile through a table of fake calls (log scrubbing, the
 * failure reasons, the object's check, name expressions and their lowered
 * names), its warm-up and its loading by symbol names.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compint.h"
#include "compiler.h"
#include "kjit.h"
#include "test.h"
#include "util.h"

/* ---- the spawned compilers' skeleton ------------------------------------ */

/* The fake compiler: `--version` names itself; otherwise a source holding
 * FAIL fails with a line naming its path, and any other gets its argv
 * ($0, then its arguments), one a line, as the object. */
static const char fakecc_script[] =
	"#!/bin/sh\n"
	"if [ \"$1\" = --version ]; then echo 'fakecc version 1.0'; exit 0; fi\n"
	"out=; prev=\n"
	"for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
	"for src in \"$@\"; do :; done\n"
	"if grep -q FAIL \"$src\"; then echo \"$PWD/$src: something odd\"; exit 3; fi\n"
	"printf '%s\\n' \"$0\" \"$@\" > \"$out\"\n";

static int fake_find(struct kj__spawn_state *st)
{
	const char *p = getenv("SKEL_FAKECC");
	return p && (size_t)snprintf(st->path, sizeof st->path, "%s", p) < sizeof st->path ? 0 : KJIT_EBACKEND;
}

static int fake_probe(struct kj__spawn_state *st, char *err, size_t errlen)
{
	char *t = NULL;
	int r = kj__spawn_query(st, "fakecc", "--version", &t);

	if (r == 0 && strncmp(t, "fakecc version ", 15) == 0) {
		snprintf(st->identity, sizeof st->identity, "fakecc %.*s", (int)strcspn(t + 15, "\n"), t + 15);
		snprintf(st->runtime, sizeof st->runtime, "1.0");
	} else {
		snprintf(err, errlen, "no version");
		r = KJIT_EBACKEND;
	}
	free(t);
	return r;
}

static const struct kj__opt_rule fake_rules[] = {
	{ KJ_OPT_MACRO, "-D", NULL },         { KJ_OPT_MACRO, "-U", NULL },
	{ KJ_OPT_TEXT, "--pre-include=", NULL }, { KJ_OPT_CHOICE, "-O", "0|1|2|3" },
	{ KJ_OPT_EXACT, "-x fake", NULL },   { KJ_OPT_EXACT, "--whole", NULL },
};

static int fake_check(void *state, const struct kj__compile_job *job, char *err, size_t errlen)
{
	(void)state;
	if (strcmp(job->target, "bad") == 0) {
		snprintf(err, errlen, "target 'bad' is not supported");
		return KJIT_ETARGET;
	}
	return kj__options_check("fakecc", fake_rules, KJ_ARRAY_SIZE(fake_rules), job, err, errlen);
}

static int fake_needs_lang(const struct kj__compile_job *job, const char *name)
{
	size_t l = strlen(name);
	(void)job;
	return !(l > 3 && strcmp(name + l - 3, ".fk") == 0);
}

static const char *fake_output_flag(const struct kj__compile_job *job)
{
	(void)job;
	return "--emit";
}

static int fake_passes(const char *opt)
{
	return strcmp(opt, "--whole") != 0;
}

static int fake_take(const char *dir, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	char path[PATH_MAX];
	(void)job;
	snprintf(path, sizeof path, "%s/fake-out", dir);
	return kj__read_file(path, 1 << 20, &out->data, &out->len) == 0 ? 0
									 : kj__out_error(out, KJIT_EINTERNAL, "no object");
}

static const struct kj__spawn_family fake_family = {
	.name = "fakecc",
	.not_found = "fakecc not found",
	.out_file = "fake-out",
	.fallback = "source.fk",
	.lang = "fake",
	.arch_opt = "--arch=",
	.find = fake_find,
	.probe = fake_probe,
	.check = fake_check,
	.needs_lang = fake_needs_lang,
	.output_flag = fake_output_flag,
	.passes = fake_passes,
	.take = fake_take,
};

/* A private directory holding the fake compiler and a job directory. */
static void fake_setup(char *root, size_t rootlen, char *jobdir, size_t joblen)
{
	char cc[PATH_MAX];
	snprintf(root, rootlen, "/tmp/kjit-test-skel-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	snprintf(cc, sizeof cc, "%s/fakecc", root);
	CHECK(kj__put_file(root, "fakecc", (const uint8_t *)fakecc_script, sizeof fakecc_script - 1) == 0);
	CHECK(chmod(cc, 0700) == 0);
	CHECK(setenv("SKEL_FAKECC", cc, 1) == 0);
	CHECK(setenv("TMPDIR", root, 1) == 0);
	snprintf(jobdir, joblen, "%s/job", root);
	CHECK(mkdir(jobdir, 0700) == 0);
}

static struct kj__compile_job fake_job(const char *dir, const char *name, const char *src)
{
	struct kj__compile_job j;
	memset(&j, 0, sizeof j);
	j.target = "t1";
	j.source_name = name;
	j.source = (const uint8_t *)src;
	j.source_len = strlen(src);
	j.dir = dir;
	return j;
}

/* Compiles j and checks that the object (the fake compiler's argv) is want. */
static void expect_argv(void *st, const struct kj__compile_job *j, const char *want)
{
	struct kj__compile_out o = { 0 };
	int r = kj__spawn_compile(&fake_family, st, j, &o);
	if (r != 0)
		fprintf(stderr, "error: %s\nlog: %s\n", o.error ? o.error : "", o.log ? o.log : "");
	CHECK_EQ_INT(r, 0);
	CHECK(o.data != NULL);
	CHECK_EQ_STR((const char *)o.data, want);
	kj__compile_out_free(&o);
}

static void test_spawn_command_line(void)
{
	char root[64], dir[96], want[2048], err[256] = "", id[128], rv[32];
	void *st = NULL;

	fake_setup(root, sizeof root, dir, sizeof dir);
	CHECK_EQ_INT(kj__spawn_init(&fake_family, sizeof(struct kj__spawn_state), &st, err, sizeof err), 0);
	CHECK_EQ_INT(kj__spawn_identity(st, id, sizeof id, rv, sizeof rv), 0);
	CHECK_EQ_STR(id, "fakecc 1.0");
	CHECK_EQ_STR(rv, "1.0");
	const char *cc = getenv("SKEL_FAKECC");

	/* the plain form: the source under its own name, options as given */
	const char *o1[] = { "-O2" };
	struct kj__compile_job j = fake_job(dir, "k.fk", "kernel\n");
	j.options = o1;
	j.n_options = 1;
	snprintf(want, sizeof want, "%s\n--emit\n--arch=t1\n-O2\n-I%s\n-o\n%s/fake-out\nk.fk\n", cc, dir, dir);
	expect_argv(st, &j, want);

	/* definitions to their header and pre-includes after it; the user's
	 * -x fake and what the family keeps off are not passed; a source of
	 * another name, at its place in the tree, gets -x fake */
	const char *o2[] = { "-DN=1", "--pre-include=p.h", "-x fake", "--whole", "-O1" };
	struct kj__header h[] = { { "p.h", (const uint8_t *)"#define P 1\n", 12 } };
	j = fake_job(dir, "src/k.cpp", "kernel\n");
	j.options = o2;
	j.n_options = 5;
	j.headers = h;
	j.n_headers = 1;
	snprintf(want, sizeof want,
		 "%s\n--emit\n--arch=t1\n-O1\n-include\n%s/kjit-defines.h\n-include\np.h\n-I%s\n-o\n%s/fake-out\n-x\nfake\n"
		 "src/k.cpp\n", cc, dir, dir, dir);
	expect_argv(st, &j, want);
	char path[PATH_MAX];
	uint8_t *data = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/src/k.cpp", dir);
	CHECK(kj__read_file(path, 4096, &data, &len) == 0 && len == 7 && memcmp(data, "kernel\n", 7) == 0);
	free(data);
	snprintf(path, sizeof path, "%s/kjit-defines.h", dir);
	CHECK(kj__read_file(path, 4096, &data, &len) == 0 && strstr((char *)data, "#define N 1") != NULL);
	free(data);
	CHECK(kj__rm_rf(dir) == 0 && mkdir(dir, 0700) == 0);

	/* a name kjit writes itself: the family's fallback, without -x */
	j = fake_job(dir, "fake-out", "kernel\n");
	snprintf(want, sizeof want, "%s\n--emit\n--arch=t1\n-I%s\n-o\n%s/fake-out\nsource.fk\n", cc, dir, dir);
	expect_argv(st, &j, want);
	kj__spawn_fini(st);
	CHECK(kj__rm_rf(root) == 0);
}

static void test_spawn_failures(void)
{
	char root[64], dir[96], err[256] = "";
	void *st = NULL;
	struct kj__compile_out o = { 0 };

	fake_setup(root, sizeof root, dir, sizeof dir);
	CHECK_EQ_INT(kj__spawn_init(&fake_family, sizeof(struct kj__spawn_state), &st, err, sizeof err), 0);
	/* the compiler fails: its log without the directory, the family's words */
	struct kj__compile_job j = fake_job(dir, "k.fk", "FAIL\n");
	CHECK_EQ_INT(kj__spawn_compile(&fake_family, st, &j, &o), KJIT_ECOMPILE);
	CHECK_EQ_STR(o.error, "fakecc failed (exit status 3)");
	CHECK_EQ_STR(o.log, "k.fk: something odd\n");
	CHECK(o.data == NULL);
	kj__compile_out_free(&o);
	/* the family's checks come first: nothing runs */
	j = fake_job(dir, "k.fk", "kernel\n");
	j.target = "bad";
	CHECK_EQ_INT(kj__spawn_compile(&fake_family, st, &j, &o), KJIT_ETARGET);
	CHECK_EQ_STR(o.error, "target 'bad' is not supported");
	kj__compile_out_free(&o);
	const char *bad[] = { "-fplugin=x.so" };
	j = fake_job(dir, "k.fk", "kernel\n");
	j.options = bad;
	j.n_options = 1;
	CHECK_EQ_INT(kj__spawn_compile(&fake_family, st, &j, &o), KJIT_EINVAL);
	CHECK(strstr(o.error, "'-fplugin=x.so' is not allowed for fakecc") != NULL);
	kj__compile_out_free(&o);
	/* an include climbing out of the job is refused before anything is written */
	j = fake_job(dir, "k.fk", "#include \"../../etc/passwd\"\n");
	CHECK_EQ_INT(kj__spawn_compile(&fake_family, st, &j, &o), KJIT_EINCLUDE);
	kj__compile_out_free(&o);
	kj__spawn_fini(st);
	/* no compiler: the family's words */
	CHECK(unsetenv("SKEL_FAKECC") == 0);
	st = NULL;
	CHECK_EQ_INT(kj__spawn_init(&fake_family, sizeof(struct kj__spawn_state), &st, err, sizeof err),
		     KJIT_EBACKEND);
	CHECK_EQ_STR(err, "fakecc not found");
	CHECK(st == NULL);
	CHECK(kj__rm_rf(root) == 0);
}

/* ---- the runtime compilers' skeleton ------------------------------------- */

/* A fake program: the source decides what each call does (CREATEFAIL,
 * BAD: a failed compile, WRONGELF: an object of another machine). */
struct fake_prog {
	const char *src;
	char log[128];
	int n_names;
};

static const char *fake_errstr(int e)
{
	return e == 5 ? "FAKE_ERROR_5" : e == 6 ? "FAKE_ERROR_6" : "FAKE_ERROR";
}

static int fake_create(void **p, const char *src, const char *name, int n, const char *const *hdrs,
		       const char *const *names)
{
	(void)name, (void)n, (void)hdrs, (void)names;
	if (strstr(src, "CREATEFAIL"))
		return 5;
	struct fake_prog *fp = calloc(1, sizeof *fp);
	if (fp == NULL)
		return 7;
	fp->src = src;
	*p = fp;
	return 0;
}

static int fake_compile(void *p, int n, const char *const *opts)
{
	struct fake_prog *fp = p;
	(void)n, (void)opts;
	if (strstr(fp->src, "BAD")) {
		snprintf(fp->log, sizeof fp->log, "/tmp/comgr-a1b2c3/input/CompileSource:1: error: bad thing\n");
		return 6;
	}
	snprintf(fp->log, sizeof fp->log, "fine\n");
	return 0;
}

static int fake_compile_fails(void *p, int n, const char *const *opts)
{
	(void)p, (void)n, (void)opts;
	return 6;
}

static int fake_log_size(void *p, size_t *n)
{
	*n = strlen(((struct fake_prog *)p)->log) + 1;
	return 0;
}

static int fake_log(void *p, char *out)
{
	memcpy(out, ((struct fake_prog *)p)->log, strlen(((struct fake_prog *)p)->log) + 1);
	return 0;
}

static int fake_code_size(void *p, size_t *n)
{
	(void)p;
	*n = 64;
	return 0;
}

/* A 64-byte ELF64 header of machine 224 (EM_AMDGPU), or 3 for WRONGELF. */
static int fake_code(void *p, char *out)
{
	memset(out, 0, 64);
	memcpy(out, "\177ELF\2\1", 6);
	out[18] = strstr(((struct fake_prog *)p)->src, "WRONGELF") ? 3 : (char)KJ_EM_AMDGPU;
	return 0;
}

static int fake_destroy(void **p)
{
	free(*p);
	*p = NULL;
	return 0;
}

static int fake_add_name(void *p, const char *expr)
{
	(void)expr;
	((struct fake_prog *)p)->n_names++;
	return 0;
}

static int fake_lowered(void *p, const char *expr, const char **low)
{
	(void)p;
	*low = strcmp(expr, "f<int>") == 0 ? "_Z1fIiEvv" : "_Z1fIfEvv";
	return 0;
}

static const struct kj__rtc_api fake_api = {
	.errstr = fake_errstr, .create = fake_create, .compile = fake_compile, .log_size = fake_log_size,
	.log = fake_log, .code_size = fake_code_size, .code = fake_code, .destroy = fake_destroy,
	.add_name = fake_add_name, .lowered = fake_lowered,
};

static const char *const no_libs[] = { "libkjit-test-no-such-library.so.9", NULL };

static const struct kj__rtc_family fake_rtc = {
	.name = "fakertc",
	.title = "FakeRTC",
	.libs = no_libs,
	.not_found = "FakeRTC not found: install it",
	.lacks = "FakeRTC lacks a call",
	.sym = { "getpid", "getppid", "fakeCreateProgram", "getuid", "geteuid", "getgid", "getegid", "sync",
		 "free", "kjit_test_no_add_name", "kjit_test_no_lowered" },
	.no_object = "FakeRTC returned no object",
	.bad_object = "FakeRTC returned a foreign object",
	.log_marker = "/comgr-",
	.log_blind = "CompileSource",
	.warm_file = "warm.fk",
};

static int run_src(const struct kj__rtc_api *api, const char *src, int n_exprs, const char *const *exprs,
		   unsigned machine, struct kj__compile_out *o)
{
	const char *opts[] = { "--gpu-architecture=t1" };
	const struct kj__rtc_prog p = { .name = "k.fk", .src = src, .n_opts = 1, .opts = opts, .n_exprs = n_exprs,
					.exprs = exprs, .machine = machine };
	memset(o, 0, sizeof *o);
	return kj__rtc_run(&fake_rtc, api, &p, o);
}

static void test_rtc_run(void)
{
	struct kj__compile_out o;
	const char *exprs[] = { "f<int>", "f<float>" };

	/* a compile with name expressions: the object, their lowered names, the log */
	CHECK_EQ_INT(run_src(&fake_api, "ok", 2, exprs, KJ_EM_AMDGPU, &o), 0);
	CHECK(o.data != NULL && o.len == 64 && kj__elf_is(o.data, o.len, KJ_EM_AMDGPU, NULL));
	CHECK_EQ_STR(o.lowered, "f<int>\t_Z1fIiEvv\nf<float>\t_Z1fIfEvv\n");
	CHECK_EQ_STR(o.log, "fine\n");
	kj__compile_out_free(&o);
	/* a failed compile: the log with the user's names, its first error the reason */
	CHECK_EQ_INT(run_src(&fake_api, "BAD", 0, NULL, KJ_EM_AMDGPU, &o), KJIT_ECOMPILE);
	CHECK_EQ_STR(o.log, "k.fk:1: error: bad thing\n");
	CHECK_EQ_STR(o.error, "k.fk:1: error: bad thing");
	CHECK(o.data == NULL && o.lowered == NULL);
	kj__compile_out_free(&o);
	/* a program that cannot be made: the call's name and the library's words */
	CHECK_EQ_INT(run_src(&fake_api, "CREATEFAIL", 0, NULL, KJ_EM_AMDGPU, &o), KJIT_EINTERNAL);
	CHECK_EQ_STR(o.error, "fakeCreateProgram: FAKE_ERROR_5");
	kj__compile_out_free(&o);
	/* an object of another machine is refused, with nothing handed back */
	CHECK_EQ_INT(run_src(&fake_api, "WRONGELF", 2, exprs, KJ_EM_AMDGPU, &o), KJIT_EINTERNAL);
	CHECK_EQ_STR(o.error, "FakeRTC returned a foreign object");
	CHECK(o.data == NULL);
	kj__compile_out_free(&o);
	/* machine 0 (PTX): not an ELF, taken as it is */
	CHECK_EQ_INT(run_src(&fake_api, "WRONGELF", 0, NULL, 0, &o), 0);
	CHECK(o.data != NULL && o.len == 64);
	kj__compile_out_free(&o);
	/* a library without name expressions refuses a job naming one */
	struct kj__rtc_api old = fake_api;
	old.add_name = NULL;
	old.lowered = NULL;
	CHECK_EQ_INT(run_src(&old, "ok", 1, exprs, KJ_EM_AMDGPU, &o), KJIT_EINVAL);
	CHECK_EQ_STR(o.error, "this FakeRTC cannot take name expressions");
	kj__compile_out_free(&o);
	CHECK_EQ_INT(run_src(&old, "ok", 0, NULL, KJ_EM_AMDGPU, &o), 0);
	kj__compile_out_free(&o);
}

static void test_rtc_warm_and_load(void)
{
	char err[256] = "";
	struct kj__rtc_api api, failing = fake_api;
	void *lib = NULL;

	CHECK_EQ_INT(kj__rtc_warm(&fake_rtc, &fake_api, "--gpu-architecture=t1", NULL, KJ_EM_AMDGPU, err, sizeof err), 0);
	failing.compile = fake_compile_fails;
	CHECK(kj__rtc_warm(&fake_rtc, &failing, "--gpu-architecture=t1", NULL, KJ_EM_AMDGPU, err, sizeof err) < 0);
	CHECK(strncmp(err, "FakeRTC cannot compile a trivial kernel (", 41) == 0);

	/* no library: the family's words */
	CHECK_EQ_INT(kj__rtc_load(&fake_rtc, &lib, &api, err, sizeof err), KJIT_EBACKEND);
	CHECK_EQ_STR(err, "FakeRTC not found: install it");
	CHECK(lib == NULL);
	/* a library lacking a call: the family's words and the call's name;
	 * the name-expression calls are optional */
	static const char *const libc[] = { "libkjit-test-no-such-library.so.9", "libc.so.6", NULL };
	struct kj__rtc_family f = fake_rtc;
	f.libs = libc;
	CHECK_EQ_INT(kj__rtc_load(&f, &lib, &api, err, sizeof err), KJIT_EBACKEND);
	CHECK_EQ_STR(err, "FakeRTC lacks a call: fakeCreateProgram");
	f.sym.create = "getpgrp";
	CHECK_EQ_INT(kj__rtc_load(&f, &lib, &api, err, sizeof err), 0);
	CHECK(lib != NULL && api.create != NULL && api.code != NULL);
	CHECK(api.add_name == NULL && api.lowered == NULL);
}

TEST_LIST(TEST(spawn_command_line) TEST(spawn_failures) TEST(rtc_run) TEST(rtc_warm_and_load))
