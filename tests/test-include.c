/* test-include.c: include resolution (common/include.c): what may be
 * included, what is refused, and that the scan is not fooled by comments
 * and strings, loops or deep nesting. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "includes.h"
#include "kj_limits.h"
#include "kjit.h"
#include "test.h"

#include "include-ref.c" /* ref_includes_resolve_tree: the scan as it was at 197e918 */

static char dir[256];   /* allowed include directory */
static char outside[256];

static void put(const char *base, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", base, name);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(text, f);
	CHECK(fclose(f) == 0);
}

static char root[64]; /* the mkdtemp directory of this test, removed by cleanup() */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Removes this test's temporary directory. */
static void cleanup(void)
{
	if (root[0])
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	root[0] = '\0';
}

static void setup(void)
{
	char tmpl[] = "/tmp/kjit-inc-XXXXXX";
	cleanup();
	CHECK(mkdtemp(tmpl) != NULL);
	snprintf(root, sizeof root, "%s", tmpl);
	snprintf(dir, sizeof dir, "%s/inc", tmpl);
	snprintf(outside, sizeof outside, "%s/outside", tmpl);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(mkdir(outside, 0755) == 0);
	put(outside, "secret.h", "SECRET CONTENTS\n");
}

struct req {
	const char *names[4];
	const uint8_t *data[4];
	size_t len[4];
	size_t n;
};

static void req_add(struct req *q, const char *name, const char *text)
{
	q->names[q->n] = name;
	q->data[q->n] = (const uint8_t *)text;
	q->len[q->n] = strlen(text);
	q->n++;
}

static int resolve(const char *src, const struct req *q, struct kj__includes *out, char *err, size_t errlen)
{
	const char *const dirs[] = { dir };
	static const struct req none;
	if (q == NULL)
		q = &none;
	return kj__includes_resolve(NULL, (const uint8_t *)src, strlen(src), q->names, q->data, q->len, q->n,
				    dirs, 1, out, err, errlen);
}

/* Expects src to be refused with an error that mentions what. */
static void refused(const char *src, const char *what)
{
	struct kj__includes out;
	char err[512];
	int r = resolve(src, NULL, &out, err, sizeof err);
	if (r != KJIT_EINCLUDE || strstr(err, what) == NULL || strstr(err, "SECRET") != NULL) {
		fprintf(stderr, "source %s: r=%d err=%s\n", src, r, err);
		CHECK(0);
	}
	CHECK(strchr(err, '\n') == NULL);
	CHECK_EQ_INT(out.n, 0);
}

static void test_refuses_escapes(void)
{
	char src[512];

	setup();
	refused("#include \"/etc/passwd\"\n", "/etc/passwd");
	refused("#include \"../../x\"\n", "../../x");
	refused("#include \"a/../../b\"\n", "a/../../b");
	refused("#include <../x>\n", "<../x>");
	refused("#include \"..\"\n", "\"..\"");
	refused("#include \"a\\tb\"\n", "#include");
	refused("#include \"a\x01z.h\"\n", "a?z.h");
	refused("#include MACRO\n", "MACRO");
	refused("#define H \"../../x\"\n#include H\n", "../../x"); /* a computed name is refused as a plain one */
	refused("#define H(x) <x>\n#include H(../y)\n", "../y");
	refused("#ifndef __CUDACC_RTC__\n#include \"/etc/passwd\"\n#endif\n", "/etc/passwd");
	refused("#include \"unterminated\n", "unterminated");
	memset(src, 0, sizeof src);
	strcpy(src, "#include \"");
	memset(src + 10, 'a', 300);
	strcat(src, ".h\"\n");
	refused(src, "too long");
	/* a symlink in the allowed directory that leaves it */
	char link[512], target[512];
	snprintf(link, sizeof link, "%s/leak.h", dir);
	snprintf(target, sizeof target, "%s/secret.h", outside);
	CHECK(symlink(target, link) == 0);
	refused("#include \"leak.h\"\n", "outside");
	/* a symlinked directory too */
	snprintf(link, sizeof link, "%s/sub", dir);
	CHECK(symlink(outside, link) == 0);
	refused("#include <sub/secret.h>\n", "outside");
	cleanup();
}

static void test_line_number_in_error(void)
{
	struct kj__includes out;
	char err[256];

	setup();
	CHECK_EQ_INT(resolve("int x;\n\n#include \"../nope.h\"\n", NULL, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "source:3:") != NULL);
	/* the user's file name, when the request gives one */
	const char *const dirs[] = { dir };
	const char *src = "\n#include </abs.h>\n";
	CHECK_EQ_INT(kj__includes_resolve("scale.cu", (const uint8_t *)src, strlen(src), NULL, NULL, NULL, 0,
					  dirs, 1, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strncmp(err, "scale.cu:2: ", 12) == 0);
	cleanup();
}

/* Names found nowhere go to the compiler and into out->missing (sorted,
 * once each): the compiler's headers, quoted system headers as hipify
 * writes them, and names under conditionals the compiler may not take. */
static void test_missing_names_listed(void)
{
	struct kj__includes out;
	char err[256];

	setup();
	put(dir, "a.h", "#include \"hip/hip_runtime.h\"\n");
	CHECK_EQ_INT(resolve("  #  include <hip/hip_runtime.h>\n#include<stdint.h>\n"
			     "#\tinclude <cuda_fp16.h>\n#include \"a.h\"\n"
			     "#ifndef __CUDACC_RTC__\n#include <iostream>\n#endif\n"
			     "#include <stdint.h>\n", NULL, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 1);
	CHECK_EQ_STR(out.names[0], "a.h");
	CHECK_EQ_INT(out.n_missing, 4);
	CHECK_EQ_STR(out.missing[0], "cuda_fp16.h");
	CHECK_EQ_STR(out.missing[1], "hip/hip_runtime.h");
	CHECK_EQ_STR(out.missing[2], "iostream");
	CHECK_EQ_STR(out.missing[3], "stdint.h");
	kj__includes_free(&out);
	/* a quoted include in sub/ was also looked for as sub/NAME */
	char sub[512];
	snprintf(sub, sizeof sub, "%s/sub", dir);
	CHECK(mkdir(sub, 0755) == 0);
	put(dir, "sub/c.h", "#include \"gone.h\"\n");
	CHECK_EQ_INT(resolve("#include \"sub/c.h\"\n", NULL, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n_missing, 2);
	CHECK_EQ_STR(out.missing[0], "gone.h");
	CHECK_EQ_STR(out.missing[1], "sub/gone.h");
	kj__includes_free(&out);
	cleanup();
}

/* A scan with a budget (kjitd's loop, daemon/miss/offhash.c) stops with
 * KJIT_EBUSY and over set, nothing opened, once a header is to be read
 * from disk or it has looked on disk probes_max times; under it, the
 * result is the same as without. */
static int resolve_budget(const char *src, const struct req *q, unsigned probes, struct kj__include_tree *t,
			  struct kj__includes *out, char *err, size_t errlen)
{
	const char *const dirs[] = { dir };
	*t = (struct kj__include_tree){ .probes_max = probes };
	return kj__includes_resolve_tree(NULL, (const uint8_t *)src, strlen(src), q->names, q->data, q->len, q->n,
					 dirs, 1, t, out, err, errlen);
}

static void test_loop_budget(void)
{
	struct kj__includes out;
	struct kj__include_tree t;
	struct req q = { 0 };
	char err[256];

	setup();
	put(dir, "a.h", "int a;\n");
	req_add(&q, "b.h", "#include <hip/hip_runtime.h>\n");
	/* a header on disk: not read under a budget */
	CHECK_EQ_INT(resolve_budget("#include \"b.h\"\n#include <a.h>\n", &q, 32, &t, &out, err, sizeof err), KJIT_EBUSY);
	CHECK_EQ_INT(t.over, 1);
	CHECK_EQ_INT(out.n, 0);
	/* the request's own headers and names found nowhere: as without one */
	CHECK_EQ_INT(resolve_budget("#include \"b.h\"\n#include <stdint.h>\n", &q, 32, &t, &out, err, sizeof err), 0);
	CHECK_EQ_INT(t.over, 0);
	CHECK_EQ_INT(out.n, 1);
	CHECK_EQ_STR(out.names[0], "b.h");
	CHECK_EQ_INT(out.n_missing, 2);
	CHECK_EQ_STR(out.missing[0], "hip/hip_runtime.h");
	CHECK_EQ_STR(out.missing[1], "stdint.h");
	kj__includes_free(&out);
	/* more names to look for on disk than the budget allows */
	CHECK_EQ_INT(resolve_budget("#include <x.h>\n#include <y.h>\n#include <z.h>\n", &q, 2, &t, &out, err, sizeof err),
		     KJIT_EBUSY);
	CHECK_EQ_INT(t.over, 1);
	/* the same without a budget: the header on disk is read */
	CHECK_EQ_INT(resolve_budget("#include <a.h>\n", &q, 0, &t, &out, err, sizeof err), 0);
	CHECK_EQ_INT(t.over, 0);
	CHECK_EQ_INT(out.n, 1);
	kj__includes_free(&out);
	cleanup();
}

/* A literal "#if 0" group is skipped (nested conditionals inside it too),
 * its #else branch is live; any other condition counts as possibly true. */
static void test_if_zero_skipped(void)
{
	struct kj__includes out;
	struct req q = { 0 };
	char err[256];

	setup();
	req_add(&q, "live.h", "int l;\n");
	req_add(&q, "dead.h", "int d;\n");
	const char *src = "#if 0\n#include \"dead.h\"\n#ifdef X\n#include \"/etc/passwd\"\n#endif\n"
			  "#include \"dead2.h\"\n#else\n#include \"live.h\"\n#endif\n"
			  "#if 0 // off\n#include \"dead3.h\"\n#endif\n"
			  "#if 00 + X\n#include \"maybe.h\"\n#endif\n";
	CHECK_EQ_INT(resolve(src, &q, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 1);
	CHECK_EQ_STR(out.names[0], "live.h");
	CHECK_EQ_INT(out.n_missing, 1);
	CHECK_EQ_STR(out.missing[0], "maybe.h");
	kj__includes_free(&out);
	cleanup();
}

static void test_nested_in_allowed_dir(void)
{
	struct kj__includes out;
	char err[256];

	setup();
	char sub[512];
	snprintf(sub, sizeof sub, "%s/sub", dir);
	CHECK(mkdir(sub, 0755) == 0);
	put(dir, "a.h", "#pragma once\n#include \"b.h\"\n#include <sub/c.h>\n");
	put(dir, "b.h", "int b;\n");
	put(dir, "sub/c.h", "#include \"d.h\"\n");  /* found next to c.h */
	put(dir, "sub/d.h", "int d;\n");
	CHECK_EQ_INT(resolve("#include \"a.h\"\n#include \"b.h\"\n", NULL, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 4);
	CHECK_EQ_STR(out.names[0], "a.h");
	CHECK_EQ_STR(out.names[1], "b.h");
	CHECK_EQ_STR(out.names[2], "sub/c.h");
	CHECK_EQ_STR(out.names[3], "sub/d.h");
	CHECK_EQ_INT(out.len[1], 7);
	CHECK(memcmp(out.data[1], "int b;\n", 7) == 0);
	kj__includes_free(&out);
	kj__includes_free(&out); /* twice is fine */
	cleanup();
}

static void test_request_header_shadows_dir(void)
{
	struct kj__includes out;
	struct req q = { 0 };
	char err[256];

	setup();
	put(dir, "a.h", "int from_dir;\n");
	put(dir, "b.h", "int b_from_dir;\n");
	req_add(&q, "a.h", "#include \"b.h\"\nint from_request;\n");
	CHECK_EQ_INT(resolve("#include \"a.h\"\n", &q, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 2);
	CHECK_EQ_STR(out.names[0], "a.h");
	CHECK(strstr((const char *)out.data[0], "from_request") != NULL);
	CHECK_EQ_STR(out.names[1], "b.h");
	kj__includes_free(&out);
	/* a request header no safe #include could name is refused, used or not */
	q.n = 0;
	req_add(&q, "/etc/passwd", "x");
	CHECK_EQ_INT(resolve("#include \"x.h\"\n", &q, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "absolute path") != NULL);
	/* a request header that includes something refused */
	q.n = 0;
	req_add(&q, "x.h", "\n#include \"../y.h\"\n");
	CHECK_EQ_INT(resolve("#include \"x.h\"\n", &q, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "x.h:2:") != NULL);
	cleanup();
}

static void test_comments_and_strings_do_not_fool(void)
{
	struct kj__includes out;
	struct req q = { 0 };
	char err[256];

	setup();
	req_add(&q, "real.h", "int r;\n");
	const char *src =
		"// #include \"x1.h\"\n"
		"/* #include \"x2.h\"\n"
		"   #include \"x3.h\" */\n"
		"const char *s = \"\\\"#include \\\"x4.h\\\"\";\n"
		"const char *t = \"a\\\n#include \\\"x5.h\\\"\";\n"   /* spliced string */
		"auto r = R\"xy(\n#include \"x6.h\"\n)xy\";\n"       /* raw string */
		"int n = 1'000; /* ' */\n"                             /* digit separator */
		"char c = '\"';\n"
		"int y; /* c */ #include \"x7.h\"\n"                   /* not at line start */
		"/* lead */ #include \"real.h\" // trailing\n"
		"#if 0\n#endif\n";
	CHECK_EQ_INT(resolve(src, &q, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 1);
	CHECK_EQ_STR(out.names[0], "real.h");
	CHECK_EQ_INT(out.n_missing, 0);
	kj__includes_free(&out);
	/* a directive continued onto the next line is still seen */
	CHECK_EQ_INT(resolve("#include \\\n\"../nope.h\"\n", &q, &out, err, sizeof err), KJIT_EINCLUDE);
	cleanup();
}

static void test_depth_limit(void)
{
	struct kj__includes out;
	char err[256], name[32], text[64];

	setup();
	/* h0 includes h1 ... includes hN */
	for (int i = 0; i <= KJ_INCLUDE_DEPTH_MAX + 1; i++) {
		snprintf(name, sizeof name, "h%d.h", i);
		snprintf(text, sizeof text, "#include \"h%d.h\"\n", i + 1);
		put(dir, name, i == KJ_INCLUDE_DEPTH_MAX + 1 ? "int end;\n" : text);
	}
	/* source -> h1 .. h33: 33 levels, one too many */
	CHECK_EQ_INT(resolve("#include \"h0.h\"\n", NULL, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "deep") != NULL);
	CHECK_EQ_INT(resolve("#include \"h1.h\"\n", NULL, &out, err, sizeof err), KJIT_EINCLUDE);
	/* source -> h2 .. h33: exactly the limit */
	CHECK_EQ_INT(resolve("#include \"h2.h\"\n", NULL, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, KJ_INCLUDE_DEPTH_MAX);
	kj__includes_free(&out);
	cleanup();
}

static void test_cycle_terminates(void)
{
	struct kj__includes out;
	char err[256];

	setup();
	put(dir, "a.h", "#include \"b.h\"\n#include \"a.h\"\n");
	put(dir, "b.h", "#include \"a.h\"\n");
	CHECK_EQ_INT(resolve("#include \"a.h\"\n#include \"a.h\"\n", NULL, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 2);
	kj__includes_free(&out);
	cleanup();
}

static void test_missing_dir_and_no_source(void)
{
	struct kj__includes out;
	char err[64];
	const char *const dirs[] = { "/nonexistent/kjit" };

	CHECK_EQ_INT(kj__includes_resolve(NULL, NULL, 0, NULL, NULL, NULL, 0, dirs, 1, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 0);
	kj__includes_free(&out);
	cleanup();
}

/* ".." is resolved against the including file's place in the tree: a
 * header stepping out of its folder and back in is found (and keyed under
 * its tree path); a source with a place ("src/m.cu") reaches
 * "../include/u.h"; what climbs above the tree is refused. */
static void test_dotdot_in_the_tree(void)
{
	struct kj__includes out;
	struct req q = { 0 };
	char err[256];

	setup();
	req_add(&q, "sub/a.h", "#include \"../b.h\"\n#include \"./c.h\"\n");
	req_add(&q, "b.h", "int b;\n");
	req_add(&q, "sub/c.h", "int c;\n");
	CHECK_EQ_INT(resolve("#include \"sub/a.h\"\n", &q, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 3);
	CHECK_EQ_STR(out.names[0], "b.h");
	CHECK_EQ_STR(out.names[1], "sub/a.h");
	CHECK_EQ_STR(out.names[2], "sub/c.h");
	kj__includes_free(&out);
	/* the source at src/m.cu */
	q.n = 0;
	req_add(&q, "include/u.h", "int u;\n");
	const char *src = "#include \"../include/u.h\"\n";
	const char *const dirs[] = { dir };
	CHECK_EQ_INT(kj__includes_resolve("src/m.cu", (const uint8_t *)src, strlen(src), q.names, q.data, q.len, q.n,
					  dirs, 1, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 1);
	CHECK_EQ_STR(out.names[0], "include/u.h");
	kj__includes_free(&out);
	/* from the root it climbs above the tree */
	CHECK_EQ_INT(kj__includes_resolve("m.cu", (const uint8_t *)src, strlen(src), q.names, q.data, q.len, q.n,
					  dirs, 1, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "m.cu:1: #include \"../include/u.h\": \"..\" leaves every include root") != NULL);
	/* a ".." that stays in the tree but names nothing there is refused too:
	 * only the including file's place gives it a meaning */
	q.n = 0;
	req_add(&q, "sub/a.h", "#include \"../nope.h\"\n");
	CHECK_EQ_INT(resolve("#include \"sub/a.h\"\n", &q, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "names no file inside the include roots") != NULL);
	/* a request header named with ".." is refused, used or not */
	q.n = 0;
	req_add(&q, "a/../b.h", "int b;\n");
	CHECK_EQ_INT(resolve("int x;\n", &q, &out, err, sizeof err), KJIT_EINCLUDE);
	cleanup();
}

/* The client's tree: the source's folder on disk is searched first for
 * quoted includes, and every read lies under a root. */
static void test_source_folder_first(void)
{
	struct kj__includes out;
	char err[256], src_dir[300];
	const char *const dirs[] = { dir };
	struct kj__include_tree tree = { 0 };

	setup();
	snprintf(src_dir, sizeof src_dir, "%s/src", root);
	CHECK(mkdir(src_dir, 0755) == 0);
	put(src_dir, "beside.h", "int beside;\n");
	put(dir, "beside.h", "int in_dir;\n");
	tree.anc = tree.src_dir = src_dir;
	const char *src = "#include \"beside.h\"\n#include \"../outside/secret.h\"\n";
	CHECK_EQ_INT(kj__includes_resolve_tree("m.cu", (const uint8_t *)src, 20, NULL, NULL, NULL, 0, dirs, 1, &tree,
					       &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 1);
	CHECK_EQ_INT((int)out.len[0], 12);
	CHECK(memcmp(out.data[0], "int beside;\n", 12) == 0);
	kj__includes_free(&out);
	/* "../outside/secret.h": from the root, a climb of 1 */
	CHECK_EQ_INT(kj__includes_resolve_tree("m.cu", (const uint8_t *)src, strlen(src), NULL, NULL, NULL, 0, dirs, 1,
					       &tree, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK_EQ_INT(tree.climb, 1);
	/* with the source at src/m.cu it lands in outside/, which is no root */
	tree.anc = root;
	CHECK_EQ_INT(kj__includes_resolve_tree("src/m.cu", (const uint8_t *)src, strlen(src), NULL, NULL, NULL, 0, dirs,
					       1, &tree, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "resolves outside the allowed include directories") != NULL);
	CHECK(strstr(err, "SECRET") == NULL);
	cleanup();
}

/* Issue 20, defence in depth: the other spellings of a directive the
 * preprocessor accepts are seen: the digraph "%:", comments and form feeds
 * between '#' and the name (a block comment may span lines), a comment
 * before the operand, and the names __has_include probes. */
static void test_other_spellings(void)
{
	refused("%:include \"/etc/passwd\"\n", "/etc/passwd");
	refused("%: include \"../../x\"\n", "../../x");
	refused("# /* c */ include \"/etc/passwd\"\n", "/etc/passwd");
	refused("#/* a\n b */include \"/etc/passwd\"\n", "/etc/passwd");
	refused("#\finclude \"/etc/passwd\"\n", "/etc/passwd");
	refused("#include /* c */ \"/etc/passwd\"\n", "/etc/passwd");
	refused("#\\\ninclude \"/etc/passwd\"\n", "/etc/passwd");
	refused("#if __has_include(\"/etc/passwd\")\n#endif\n", "/etc/passwd");
	refused("#if 1\n#elif __has_include_next( <../x.h> )\n#endif\n", "../x.h");

	struct kj__includes out;
	struct req q = { 0 };
	char err[256];

	setup();
	req_add(&q, "opt.h", "int opt;\n");
	CHECK_EQ_INT(resolve("#if __has_include(\"opt.h\") && defined(__has_include)\n#endif\n"
			     "#if 0\n#if __has_include(\"/etc/passwd\")\n#endif\n#endif\n", &q, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n, 1);
	CHECK_EQ_STR(out.names[0], "opt.h");
	kj__includes_free(&out);
	/* a probe of a name found nowhere is in the key, as an #include's is */
	CHECK_EQ_INT(resolve("#if __has_include(<absent.h>)\n#endif\n", &q, &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n_missing, 1);
	CHECK_EQ_STR(out.missing[0], "absent.h");
	kj__includes_free(&out);
	cleanup();
}

/* Resolves src (named "src/main.cu") with the options opts[n]. */
static int resolve_opts(const char *src, const struct req *q, const char *const *opts, size_t n,
			struct kj__includes *out, char *err, size_t errlen)
{
	const char *const dirs[] = { dir };
	struct kj__include_tree t = { .options = opts, .n_options = n };
	return kj__includes_resolve_tree("src/main.cu", (const uint8_t *)src, strlen(src), q->names, q->data,
					 q->len, q->n, dirs, 1, &t, out, err, errlen);
}

/* 1 if out lists name among its headers (found) or, missing, its missing. */
static int has(const struct kj__includes *out, const char *name, int found)
{
	for (size_t i = 0; i < (found ? out->n : out->n_missing); i++)
		if (strcmp(found ? out->names[i] : out->missing[i], name) == 0)
			return 1;
	return 0;
}

/* Issue 30: computed includes expanded with every definition the scan saw
 * (the source's, its headers', -D's, function-like ones too); each name
 * spelled is found and keyed, or keyed as missing. */
static void test_computed_includes(void)
{
	struct kj__includes out;
	struct req q = { 0 };
	char err[512];
	static const char *const opts[] = { "-DHDR=a.h", "-Dbuffer_ld1(buf,i)=buf[i]", "-DINC(x)=<inc/x.h>",
					    "-O3", "-DGONE=<gone.h>", "-UGONE" };

	setup();
	put(dir, "a.h", "#define LATER(x) <later/x>\n");
	put(dir, "b.h", "int b;\n");
	req_add(&q, "cfg.h", "#define PICK \"b.h\"\n");
	const char *src = "#define H(x) <cuda/std/x>\n#include H(cstdint)\n"   /* CUTLASS's style */
			  "#define STR2(x) #x\n#define STR(x) STR2(x)\n#include STR(HDR)\n" /* -D, through # */
			  "#include \"cfg.h\"\n#include PICK\n"                    /* defined in a header */
			  "#ifdef X\n#define ALT <alt1.h>\n#else\n#define ALT <alt2.h>\n#endif\n#include ALT\n"
			  "#include INC(zz)\n#include LATER(l.h)\n"                  /* -D(x); defined after */
			  "#define CAT(a, b) a##b\n#include STR(CAT(b, .h))\n"
			  "#define V(...) <v/__VA_ARGS__>\n#include V(x.h)\n"
			  "#if __has_include(H(array))\n#endif\n"
			  "#define SELF SELF\n#define REC(x) REC(x)\n";
	CHECK_EQ_INT(resolve_opts(src, &q, opts, KJ_ARRAY_SIZE(opts), &out, err, sizeof err), 0);
	CHECK(has(&out, "a.h", 1) && has(&out, "b.h", 1) && has(&out, "cfg.h", 1));
	CHECK(has(&out, "cuda/std/cstdint", 0) && has(&out, "cuda/std/array", 0) && has(&out, "alt1.h", 0) &&
	      has(&out, "alt2.h", 0) && has(&out, "inc/zz.h", 0) && has(&out, "later/l.h", 0) &&
	      has(&out, "v/x.h", 0));
	kj__includes_free(&out);
	/* -U drops the -D before it; a macro defined nowhere spells nothing */
	CHECK_EQ_INT(resolve_opts("#include GONE\n", &q, opts, KJ_ARRAY_SIZE(opts), &out, err, sizeof err),
		     KJIT_EINCLUDE);
	CHECK(strstr(err, "src/main.cu:1: #include GONE: computed #include") != NULL);
	/* self-reference ends (hide sets); so does a definition that recurses */
	CHECK_EQ_INT(resolve_opts("#define A B\n#define B A\n#include A\n", &q, NULL, 0, &out, err, sizeof err),
		     KJIT_EINCLUDE);
	CHECK(strstr(err, "spell no header name") != NULL);
	/* many definitions of many macros: bounded, said, not a hang */
	char big[4096] = "";
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			snprintf(big + strlen(big), sizeof big - strlen(big), "#define M%d <x%d_%d.h>\n", i, i, k);
	strcat(big, "#define ALL M0 M1 M2 M3 M4 M5 M6 M7\n#include ALL\n");
	CHECK_EQ_INT(resolve_opts(big, &q, NULL, 0, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "combine in more than") != NULL);
	/* a doubling bomb (A -> B B, B -> C C, ...) and deep nesting: bounded */
	big[0] = '\0';
	for (int i = 0; i < 30; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "#define D%d D%d D%d\n", i, i + 1, i + 1);
	strcat(big, "#include D0\n");
	CHECK_EQ_INT(resolve_opts(big, &q, NULL, 0, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "expand past") != NULL);
	strcpy(big, "#define F(x) x\n#include ");
	for (int i = 0; i < 100; i++)
		strcat(big, "F(");
	strcat(big, "<deep.h>");
	for (int i = 0; i < 100; i++)
		strcat(big, ")");
	strcat(big, "\n");
	CHECK_EQ_INT(resolve_opts(big, &q, NULL, 0, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "levels") != NULL);
	big[0] = '\0';
	for (int i = 0; i < 100; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "#define N%d(x) N%d(x)\n", i, i + 1);
	strcat(big, "#define N100(x) <x>\n#include N0(deep.h)\n");
	CHECK_EQ_INT(resolve_opts(big, &q, NULL, 0, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "more than 64 macros") != NULL);
	/* one definition met many times (a header of many variants) is one alternative */
	CHECK_EQ_INT(resolve_opts("#define R <r1.h>\n#define R <r1.h>\n#define R <r2.h>\n#include R\n", &q, NULL, 0,
				  &out, err, sizeof err), 0);
	CHECK_EQ_INT(out.n_missing, 2);
	kj__includes_free(&out);
	cleanup();
}

/* Issue 30: the lexer as the compilers have it: a backslash and blanks
 * before a newline splice for clang and gcc (not necessarily for others),
 * trigraphs under ISO modes only: the scan takes both readings. */
static void test_splices_and_trigraphs(void)
{
	struct kj__includes out;
	struct req q = { 0 };
	char err[512];

	setup();
	/* spliced: "// x \" swallows the next line; not spliced: it is an #include */
	CHECK_EQ_INT(resolve_opts("// note \\  \n#include \"s1.h\"\n#define Q \\ \t\n <s2.h>\n#include Q\n"
				  "?\?=include \"t1.h\"\n%:include \"t2.h\" ?\?/\n#include \"t3.h\"\n",
				  &q, NULL, 0, &out, err, sizeof err), 0);
	CHECK(has(&out, "s1.h", 0) && has(&out, "s2.h", 0) && has(&out, "t1.h", 0) && has(&out, "t2.h", 0) &&
	      has(&out, "t3.h", 0));
	CHECK(has(&out, "src/s1.h", 0)); /* the quoted name tried beside the source first */
	kj__includes_free(&out);
	cleanup();
}

/* Issue 30: --pre-include=NAME (-include FILE) reads a request header first,
 * followed and keyed like an #include; its macros count. */
static void test_pre_include(void)
{
	struct kj__includes out;
	struct req q = { 0 };
	char err[512];
	static const char *const opts[] = { KJ_PRE_INCLUDE_OPT "pre.h" };
	static const char *const bad[] = { KJ_PRE_INCLUDE_OPT "../pre.h" };

	setup();
	req_add(&q, "pre.h", "#include \"dep.h\"\n#define P <from_pre.h>\n");
	req_add(&q, "dep.h", "int dep;\n");
	CHECK_EQ_INT(resolve_opts("#include P\n", &q, opts, 1, &out, err, sizeof err), 0);
	CHECK(has(&out, "pre.h", 1) && has(&out, "dep.h", 1) && has(&out, "from_pre.h", 0));
	kj__includes_free(&out);
	CHECK_EQ_INT(resolve_opts("\n", &q, bad, 1, &out, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "pre-included") != NULL);
	cleanup();
}

/* Issue 25: the scan skips plain bytes eight at a time; it must find
 * exactly what the byte-by-byte scan (tests/include-ref.c) found, on every
 * input: names, bytes, missing names, code, message and climb. */
static const char *eq_dirs[2];
static unsigned long eq_runs, eq_clean, eq_found; /* inputs; of them scanned without error; with a header found */

static void same_as_ref(const char *what, const uint8_t *src, size_t len, const struct req *q, int use_tree)
{
	struct kj__include_tree ta = { .anc = root, .src_dir = root }, tb = ta;
	struct kj__includes a, b;
	char ea[512], eb[512];
	int ra = kj__includes_resolve_tree("src/main.cu", src, len, q->names, q->data, q->len, q->n, eq_dirs, 2,
					   use_tree ? &ta : NULL, &a, ea, sizeof ea);
	int rb = ref_includes_resolve_tree("src/main.cu", src, len, q->names, q->data, q->len, q->n, eq_dirs, 2,
					   use_tree ? &tb : NULL, &b, eb, sizeof eb);
	int ok = ra == rb && strcmp(ea, eb) == 0 && a.n == b.n && a.n_missing == b.n_missing && ta.climb == tb.climb;

	for (size_t i = 0; ok && i < a.n; i++)
		ok = strcmp(a.names[i], b.names[i]) == 0 && a.len[i] == b.len[i] &&
		     memcmp(a.data[i], b.data[i], a.len[i]) == 0;
	for (size_t i = 0; ok && i < a.n_missing; i++)
		ok = strcmp(a.missing[i], b.missing[i]) == 0;
	if (!ok) {
		FILE *f = fopen("/tmp/kjit-scan-differs.bin", "wb");
		if (f && fwrite(src, 1, len, f) == len && fclose(f) == 0)
			f = NULL;
		fprintf(stderr, "%s (%zu bytes, in /tmp/kjit-scan-differs.bin): fast %d \"%s\" %zu found %zu missing; "
			"ref %d \"%s\" %zu found %zu missing\n", what, len, ra, ea, a.n, a.n_missing, rb, eb, b.n,
			b.n_missing);
		CHECK(0);
	}
	eq_clean += ra == 0;
	eq_found += ra == 0 && a.n > 0;
	kj__includes_free(&a);
	kj__includes_free(&b);
	eq_runs++;
}

static uint64_t eq_rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	eq_rng ^= eq_rng << 13;
	eq_rng ^= eq_rng >> 7;
	eq_rng ^= eq_rng << 17;
	return eq_rng;
}

/* Each file of the corpus, whole and cut at a few places (cuts leave
 * comments, strings and lines unterminated). */
static int eq_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	static const struct req none;
	static uint8_t buf[1 << 21];
	FILE *f;
	size_t n;

	if (flag != FTW_F || !S_ISREG(st->st_mode) || st->st_size > (off_t)sizeof buf)
		return 0;
	CHECK((f = fopen(path, "rb")) != NULL);
	n = fread(buf, 1, sizeof buf, f);
	CHECK(!ferror(f) && fclose(f) == 0);
	same_as_ref(path, buf, n, &none, 0);
	same_as_ref(path, buf, n, &none, 1);
	for (int c = 0; n && c < 4; c++)
		same_as_ref(path, buf, (size_t)(rnd() % n), &none, c & 1);
	return 0;
}

/* A random mix of the bytes and tokens the scan treats specially. */
static size_t tricky(char *out, size_t cap)
{
	static const char *const tok[] = {
		"#", "#", "%:", "%", ":", "?\?=", "\n", "\n", "\r\n", "\\\n", "\\\r\n", "\\", " ", "\t", "\f", "\v",
		"//", "/*", "*/", "*", "/", "\"", "'", "<", ">", "(", ")", "include", "include_next", "import",
		"__has_include", "__has_include_next", "if", "if 0", "0", "1", "elif", "else", "endif", "ifdef",
		"ifndef", "define", "R\"x(", ")x\"", "R\"(", ")\"", "u8R\"", "LR\"", "u8", "L", "1'000", "'a'",
		"x", "_", "a.h", "b.h", "sub/c.h", "r.h", "kjit_prelude.h", "missing.h", "../a.h", "../../x.h",
		"./a.h", "/etc/passwd", "inc/a.h", "outside/secret.h", "\"a.h\"", "<b.h>", "\"r.h\"", "<sub/c.h>",
		"#include \"a.h\"\n", "#include <missing.h>\n", "#if 0\n", "#endif\n", "#if __has_include(",
		"\0", "\x7f", "\xff", "defined", ".", "..",
		/* issue 30: computed includes, definitions, blank splices, trigraphs */
		"#define M \"a.h\"\n", "#define M <sub/c.h>\n", "#include M\n", "#define F(x) <x>\n",
		"#include F(b.h)\n", "#define S(x) #x\n", "#include S(r.h)\n", "M", "F(", "\\ \n", "\\\t\n",
		"?\?/\n", "?\?=include \"a.h\"\n", "#if __has_include(M)\n",
	};
	size_t len = 0, ntok = rnd() % 300;

	for (size_t k = 0; k < ntok; k++) {
		const char *t = tok[rnd() % (sizeof tok / sizeof *tok)];
		size_t tl = t[0] ? strlen(t) : 1;
		if (len + tl > cap)
			break;
		memcpy(out + len, t, tl);
		len += tl;
	}
	return len;
}

static void test_same_as_reference_scan(void)
{
	static const char *const trees[] = { "kernels_src", "tests", "common", "daemon", "client",
					     "compilers", "cache", "include", "remote", "bench" };
	static char big[1 << 16], hdr[1 << 14];
	char path[512], kinc[512];
	struct req q = { 0 };

	setup();
	snprintf(kinc, sizeof kinc, "%s/kernels_src/include", KJIT_SRCDIR);
	eq_dirs[0] = dir;
	eq_dirs[1] = kinc;
	snprintf(path, sizeof path, "%s/sub", dir);
	CHECK(mkdir(path, 0755) == 0);
	put(dir, "a.h", "#include \"b.h\"\n#if __has_include(<sub/c.h>)\n#endif\n");
	put(dir, "b.h", "// b\n#include <a.h>\n%:include \"kjit_prelude.h\"\n");
	put(dir, "sub/c.h", "#include \"../a.h\"\n#include \"d.h\"\n/* \n#include \"e.h\" */\n");
	for (size_t t = 0; t < sizeof trees / sizeof *trees; t++) {
		snprintf(path, sizeof path, "%s/%s", KJIT_SRCDIR, trees[t]);
		CHECK(nftw(path, eq_file, 16, FTW_PHYS) == 0);
	}
	unsigned long files = eq_runs / 6;
	for (int k = 0; k < 40000; k++) {
		size_t len;
		if (k % 4 == 3) { /* random bytes, half of them from the special ones */
			len = rnd() % sizeof big;
			len = len > 4000 ? len % 4000 : len;
			for (size_t i = 0; i < len; i++)
				big[i] = (char)(k % 8 == 3 ? (int)(rnd() & 0xff) : "#%:/*\"'\\\n\r <>R(u8L_ \t0ix.h"[rnd() % 26]);
		} else {
			len = tricky(big, sizeof big);
		}
		q.n = 0;
		if (k % 3 == 0) { /* a request header, itself random, that the source may include */
			q.names[0] = k % 2 ? "r.h" : "a.h";
			q.data[0] = (const uint8_t *)hdr;
			q.len[0] = tricky(hdr, sizeof hdr);
			q.n = 1;
		}
		same_as_ref("random", (const uint8_t *)big, len, &q, k % 2);
	}
	fprintf(stderr, "# %lu inputs (%lu files of the tree, cut) gave the same results; %lu without error, "
		"%lu of them with headers found\n", eq_runs, files, eq_clean, eq_found);
	CHECK(files > 150 && eq_clean > eq_runs / 4 && eq_found > eq_runs / 20);
	cleanup();
}

TEST_LIST(TEST(computed_includes) TEST(splices_and_trigraphs) TEST(pre_include) TEST(same_as_reference_scan) TEST(other_spellings) TEST(dotdot_in_the_tree) TEST(source_folder_first) TEST(refuses_escapes) TEST(line_number_in_error) TEST(missing_names_listed) TEST(loop_budget) TEST(if_zero_skipped)
	  TEST(nested_in_allowed_dir) TEST(request_header_shadows_dir)
	  TEST(comments_and_strings_do_not_fool) TEST(depth_limit) TEST(cycle_terminates)
	  TEST(missing_dir_and_no_source))
