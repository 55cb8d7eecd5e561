/* test-entrylist.c: the entry-point list (common/entrylist.h, issue 33):
 * joining names, walking a list (a last name without its newline, empty
 * lines), membership by length (a prefix is not a member), the check a hit
 * runs (every name asked is the object's, else one line naming what it
 * has, cut near 400 bytes), and compilers' list of an object's symbols in
 * the same form (kj__entries_list through compilers/compiler.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "entrylist.h"
#include "kj_types.h"
#include "test.h"

static void test_join_and_walk(void)
{
	char *v[] = { (char *)"scale", (char *)"add_f32", (char *)"k" };
	char *list = kj__entries_join(v, 3);
	const char *names[4];
	size_t lens[4], n = 0, len;

	CHECK_EQ_STR(list, "scale\nadd_f32\nk\n");
	CHECK(kj__entries_join(v, 0) == NULL);
	for (const char *q = list, *p; (p = kj__entries_next(&q, &len)) != NULL && n < 4; n++) {
		names[n] = p;
		lens[n] = len;
	}
	CHECK_EQ_INT(n, 3);
	CHECK(lens[0] == 5 && memcmp(names[0], "scale", 5) == 0);
	CHECK(lens[2] == 1 && names[2][0] == 'k');
	free(list);
	/* no final newline, an empty line, NULL */
	n = 0;
	for (const char *q = "a\n\nbc", *p; (p = kj__entries_next(&q, &len)) != NULL; n++)
		lens[n] = len;
	CHECK_EQ_INT(n, 3);
	CHECK(lens[0] == 1 && lens[1] == 0 && lens[2] == 2);
	const char *none = NULL;
	CHECK(kj__entries_next(&none, &len) == NULL);
}

static void test_has_is_exact(void)
{
	const char *list = "scale\nadd_f32\n";

	CHECK_EQ_INT(kj__entries_has(list, "scale", 5), 1);
	CHECK_EQ_INT(kj__entries_has(list, "add_f32", 7), 1);
	CHECK_EQ_INT(kj__entries_has(list, "add", 3), 0);     /* a prefix */
	CHECK_EQ_INT(kj__entries_has(list, "scale2", 6), 0);  /* longer */
	CHECK_EQ_INT(kj__entries_has(NULL, "scale", 5), 0);
	CHECK_EQ_INT(kj__entries_has("", "", 0), 0);
}

static void test_missing_names_what_it_has(void)
{
	char err[600];

	CHECK_EQ_INT(kj__entries_missing("a\nb\n", "b\na\n", "the object", err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_missing(NULL, "x\n", "the object", err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_missing("a\n", NULL, "the object", err, sizeof err), 0);
	CHECK_EQ_INT(kj__entries_missing("a\nb\n", "a\nzz\n", "the cached object", err, sizeof err), KJIT_ECOMPILE);
	CHECK_EQ_STR(err, "no entry point 'zz' in the cached object; it has: a, b");
	CHECK_EQ_INT(kj__entries_missing("", "zz\n", "the object", err, sizeof err), KJIT_ECOMPILE);
	CHECK_EQ_STR(err, "no entry point 'zz' in the object; it has: none");
	/* a long list is cut, and says so */
	char big[4000] = "";
	for (int i = 0; i < 200; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "kernel_%03d\n", i);
	CHECK_EQ_INT(kj__entries_missing(big, "nope\n", "the object", err, sizeof err), KJIT_ECOMPILE);
	CHECK(strlen(err) < 500);
	CHECK(strstr(err, "kernel_000, kernel_001") != NULL);
	CHECK(strcmp(err + strlen(err) - 5, ", ...") == 0);
}

/* A SPIR-V module with one OpEntryPoint named "main": compilers' list of
 * its entries is this module's type. */
static void test_object_list_is_the_same_type(void)
{
	static const uint32_t spv[] = {
		0x07230203, 0x00010000, 0, 8, 0,
		(5u << 16) | 15, 5 /* GLCompute */, 4, 0x6e69616d /* "main" */, 0,
	};
	char *list = NULL;

	CHECK_EQ_INT(kj__entries_list((const uint8_t *)spv, sizeof spv, &list), 0);
	CHECK_EQ_STR(list, "main\n");
	CHECK_EQ_INT(kj__entries_has(list, "main", 4), 1);
	free(list);
}

TEST_LIST(TEST(join_and_walk) TEST(has_is_exact) TEST(missing_names_what_it_has) TEST(object_list_is_the_same_type))
