/* test-lists.c: lists of one thing have one source (issue 25, "the house").
 *
 * Compiler families: compilers/compiler.c's table is the only place a
 * family's name, backend, default and toolkit tree are written; kjitd's
 * options, its request parser, its pool choice (daemon/miss/get.c family_for) and
 * the worker walls ask it.  These tests check what the table answers and
 * scan the C sources (comments left out) for a family's name spelled as a
 * string anywhere but its own files (compilers/hiprtc.c, dropin/nvrtc*.c,
 * ...): a second hand-written list of families fails here, naming the file.
 *
 * kjitd's options: daemon/options.c's table of rows is getopt's table, the
 * short options and the usage text at once; man/kjitd.8 is written by hand,
 * so it is checked here to describe every option the usage shows.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "daemon.h"
#include "kjit.h"
#include "test.h"

/* The C source dirs a family list could reappear in. */
static const char *const src_dirs[] = { "cache", "client", "common", "compilers", "daemon", "daemon/detect",
					"dropin", "remote" };

/* path's text, malloc'd, with C comments blanked (strings and character
 * constants kept) when c_code; NULL if unreadable. */
static char *text_of(const char *path, int c_code)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (s = malloc((size_t)n + 1)) != NULL) {
		if (fread(s, 1, (size_t)n, f) != (size_t)n) {
			free(s);
			s = NULL;
		} else {
			s[n] = '\0';
		}
	}
	fclose(f);
	for (char *p = c_code ? s : NULL, q = 0; p && *p; p++) {
		if (q) { /* inside "..." or '...' */
			if (*p == '\\' && p[1])
				p++;
			else if (*p == q)
				q = 0;
		} else if (*p == '"' || *p == '\'') {
			q = *p;
		} else if (p[0] == '/' && p[1] == '*') {
			char *e = strstr(p + 2, "*/");
			char *end = e ? e + 2 : p + strlen(p);
			memset(p, ' ', (size_t)(end - p));
			p = end - 1;
		} else if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				*p++ = ' ';
			p--;
		}
	}
	return s;
}

static char *code_of(const char *path)
{
	return text_of(path, 1);
}

static void test_family_table(void)
{
	char buf[64];
	size_t n = 0;

	CHECK_EQ_STR(kj__family_default(KJIT_BACKEND_HIP), "hiprtc");
	CHECK_EQ_STR(kj__family_default(KJIT_BACKEND_CUDA), "nvrtc");
	CHECK_EQ_STR(kj__family_default(KJIT_BACKEND_VULKAN), "shaderc");
	CHECK(kj__family_default(KJIT_BACKEND_NONE) == NULL);
	/* A request may choose a family of its backend, never the test one;
	 * kjitd's command line may name the test family for hip. */
	CHECK(kj__family_choose("hipcc", KJIT_BACKEND_HIP, 0) == &kj__compiler_hipcc);
	CHECK(kj__family_choose("nvcc", KJIT_BACKEND_CUDA, 0) == &kj__compiler_nvcc);
	CHECK(kj__family_choose("nvcc", KJIT_BACKEND_HIP, 1) == NULL);
	CHECK(kj__family_choose("test", KJIT_BACKEND_HIP, 0) == NULL);
	CHECK(kj__family_choose("test", KJIT_BACKEND_HIP, 1) != NULL);
	CHECK(kj__family_choose("test", KJIT_BACKEND_CUDA, 1) == NULL);
	CHECK(kj__family_choose("gcc", KJIT_BACKEND_HIP, 1) == NULL && kj__family_choose(NULL, 1, 1) == NULL);
	kj__family_choices(KJIT_BACKEND_HIP, " or ", buf, sizeof buf);
	CHECK_EQ_STR(buf, "hiprtc or hipcc");
	kj__family_choices(KJIT_BACKEND_CUDA, " or ", buf, sizeof buf);
	CHECK_EQ_STR(buf, "nvrtc or nvcc");
	kj__family_choices(KJIT_BACKEND_VULKAN, " or ", buf, 4); /* cut short, still a string */
	CHECK_EQ_STR(buf, "sha");
	CHECK_EQ_STR(kj__family_toolkit("hipcc"), "/opt/rocm");
	CHECK_EQ_STR(kj__family_toolkit("nvrtc"), "/usr/local/cuda");
	CHECK(kj__family_toolkit("shaderc") == NULL && kj__family_toolkit("test") == NULL);
	/* Each backend has exactly one default, each family a unique name. */
	for (int b = KJIT_BACKEND_HIP; b <= KJIT_BACKEND_VULKAN; b++) {
		int defaults = 0;
		for (size_t i = 0; kj__family_at(i); i++)
			defaults += kj__family_at(i)->backend == b && strcmp(kj__family_default(b), kj__family_at(i)->name) == 0;
		CHECK_EQ_INT(defaults, 1);
	}
	for (size_t i = 0; kj__family_at(i); i++, n++) {
		CHECK(kj__compiler_find(kj__family_at(i)->name) == kj__family_at(i));
		for (size_t j = i + 1; kj__family_at(j); j++)
			CHECK(strcmp(kj__family_at(i)->name, kj__family_at(j)->name) != 0);
	}
	CHECK_EQ_INT((int)n, 6);
}

/* 1 if the file named base (hiprtc.c, nvrtc-get.c) is the family's own. */
static int own_file(const char *family, const char *base)
{
	return strncmp(base, family, strlen(family)) == 0;
}

static void test_no_second_family_list(void)
{
	int scanned = 0, bad = 0;

	for (size_t d = 0; d < sizeof src_dirs / sizeof src_dirs[0]; d++) {
		char dir[512];
		snprintf(dir, sizeof dir, "%s/%s", KJIT_SRCDIR, src_dirs[d]);
		DIR *dp = opendir(dir);
		CHECK(dp != NULL);
		for (struct dirent *e; (e = readdir(dp)) != NULL;) {
			size_t l = strlen(e->d_name);
			if (l < 3 || (strcmp(e->d_name + l - 2, ".c") != 0 && strcmp(e->d_name + l - 2, ".h") != 0))
				continue;
			char path[1024];
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			char *code = code_of(path);
			CHECK(code != NULL);
			scanned++;
			for (size_t i = 0; kj__family_at(i); i++) {
				const struct kj__compiler_ops *ops = kj__family_at(i);
				char quoted[40];
				/* The test family is named only on command lines. */
				if (kj__family_choose(ops->name, ops->backend, 0) == NULL || own_file(ops->name, e->d_name))
					continue;
				snprintf(quoted, sizeof quoted, "\"%s\"", ops->name);
				if (strstr(code, quoted)) {
					fprintf(stderr, "%s/%s spells the family %s: ask compilers/compiler.c's table "
						"(kj__family_default, kj__family_choose, kj__family_toolkit)\n",
						src_dirs[d], e->d_name, quoted);
					bad++;
				}
			}
			free(code);
		}
		closedir(dp);
	}
	CHECK(scanned > 100);
	CHECK_EQ_INT(bad, 0);
}

/* The scan sees a family spelled in code, not in a comment. */
static void test_scan_sees_code_only(void)
{
	char path[] = "/tmp/kjit-test-lists-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char text[] = "/* \"nvcc\" */ // \"hipcc\"\nstatic const char *s = \"a \\\" \" \"nvrtc\";\n";
	CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
	close(fd);
	char *code = code_of(path);
	unlink(path);
	CHECK(code != NULL);
	CHECK(strstr(code, "\"nvcc\"") == NULL && strstr(code, "\"hipcc\"") == NULL);
	CHECK(strstr(code, "\"nvrtc\"") != NULL);
	free(code);
}

/* 1 if text names --name as a whole option (not a prefix of a longer one). */
static int names_option(const char *text, const char *dashes, const char *name, const char *sep)
{
	size_t dl = strlen(dashes);

	for (const char *p = strstr(text, dashes); p; p = strstr(p + 1, dashes)) {
		const char *q = p + dl, *n = name;
		/* man escapes each '-' of the name as "\-" */
		while (*n && (*n == '-' ? strncmp(q, sep, strlen(sep)) == 0 : *q == *n)) {
			q += *n == '-' ? strlen(sep) : 1;
			n++;
		}
		if (*n == '\0' && !(*q == '-' || *q == '\\' || (*q >= 'a' && *q <= 'z')))
			return 1;
	}
	return 0;
}

static void test_kjitd_options_documented(void)
{
	char *usage = NULL, path[512];
	size_t ulen = 0;
	FILE *f = open_memstream(&usage, &ulen);
	int shown = 0, n = 0, missing = 0;

	CHECK(f != NULL);
	kj__options_usage(f);
	CHECK(fclose(f) == 0);
	snprintf(path, sizeof path, "%s/man/kjitd.8", KJIT_SRCDIR);
	char *man = text_of(path, 0);
	CHECK(man != NULL);
	/* Only the OPTIONS section's paragraphs, not the synopsis. */
	char *opts = strstr(man, "\n.SH OPTIONS");
	CHECK(opts != NULL);
	for (const char *name; (name = kj__option_at((size_t)n, &shown)) != NULL; n++) {
		CHECK_EQ_INT(names_option(usage, "--", name, "-"), shown);
		if (shown && !names_option(opts, "\\-\\-", name, "\\-")) {
			fprintf(stderr, "man/kjitd.8's OPTIONS do not describe --%s\n", name);
			missing++;
		}
	}
	CHECK(n > 30);
	CHECK_EQ_INT(missing, 0);
	/* The usage names the families from compilers/compiler.c's table. */
	CHECK(strstr(usage, "[--hip-compiler hiprtc|hipcc]") && strstr(usage, "[--cuda-compiler nvrtc|nvcc]"));
	CHECK(kj__option_takes_value("--socket") && kj__option_takes_value("-fs") && !kj__option_takes_value("-f"));
	CHECK(!kj__option_takes_value("--socket=x") && !kj__option_takes_value("--no-compile"));
	free(man);
	free(usage);
}

TEST_LIST(TEST(family_table) TEST(no_second_family_list) TEST(scan_sees_code_only)
	  TEST(kjitd_options_documented))
