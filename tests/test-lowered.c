/* test-lowered.c: the lowered names of C++ name expressions in their one
 * text form (common/lowered.h), and the old form as lines of a log: what
 * the index's migration, old bundles, old daemons' replies and the fleet
 * tier's values hold.
 */
#include <stdlib.h>
#include <string.h>

#include "kj_limits.h"
#include "kj_types.h"
#include "lowered.h"
#include "test.h"

static void test_append_and_find(void)
{
	char *list = NULL, *v = NULL;

	CHECK_EQ_INT(kj__lowered_append(&list, "scale<float, 4>", "_Z5scaleIfLi4EEvPT_S0_i"), 0);
	CHECK_EQ_INT(kj__lowered_append(&list, "f<a = b>", "_Z1fv"), 0);
	CHECK_EQ_STR(list, "scale<float, 4>\t_Z5scaleIfLi4EEvPT_S0_i\nf<a = b>\t_Z1fv\n");
	/* what would break the form is refused, the list unchanged */
	CHECK_EQ_INT(kj__lowered_append(&list, "a\tb", "_Z1a"), KJIT_EINVAL);
	CHECK_EQ_INT(kj__lowered_append(&list, "a", "_Z1a\n"), KJIT_EINVAL);
	CHECK_EQ_INT(kj__lowered_append(&list, "", "_Z1a"), KJIT_EINVAL);
	CHECK_EQ_STR(list, "scale<float, 4>\t_Z5scaleIfLi4EEvPT_S0_i\nf<a = b>\t_Z1fv\n");
	CHECK_EQ_INT(kj__lowered_find(list, "f<a = b>", &v), 1);
	CHECK_EQ_STR(v, "_Z1fv");
	free(v);
	CHECK_EQ_INT(kj__lowered_find(list, "scale<float, 4>", &v), 1);
	CHECK_EQ_STR(v, "_Z5scaleIfLi4EEvPT_S0_i");
	free(v);
	CHECK_EQ_INT(kj__lowered_find(list, "scale<float", &v), 0); /* a prefix is not a match */
	CHECK(v == NULL);
	CHECK_EQ_INT(kj__lowered_find(NULL, "f", &v), 0);
	free(list);
}

static void test_split_and_join_the_old_form(void)
{
	char *rest = NULL, *low = NULL;
	int oom = 0;

	CHECK_EQ_INT(kj__lowered_split_log("k.cu(3): warning: w\n"
					   "kjit: lowered name: scale<float, 4> = _Z5scaleIfLi4EEvPT_S0_i\n"
					   "note: kjit: lowered name: inside = a line\n"
					   "kjit: lowered name: f<a = b> = _Z1fv", &rest, &low), 0);
	CHECK_EQ_STR(rest, "k.cu(3): warning: w\nnote: kjit: lowered name: inside = a line\n");
	CHECK_EQ_STR(low, "scale<float, 4>\t_Z5scaleIfLi4EEvPT_S0_i\nf<a = b>\t_Z1fv\n");
	/* and back, as the fleet tier's value carries them */
	char *joined = kj__lowered_join_log(rest, low, &oom);
	CHECK(joined != NULL && !oom);
	CHECK_EQ_STR(joined, "k.cu(3): warning: w\nnote: kjit: lowered name: inside = a line\n"
			     "kjit: lowered name: scale<float, 4> = _Z5scaleIfLi4EEvPT_S0_i\n"
			     "kjit: lowered name: f<a = b> = _Z1fv\n");
	char *r2 = NULL, *l2 = NULL;
	CHECK_EQ_INT(kj__lowered_split_log(joined, &r2, &l2), 0);
	CHECK_EQ_STR(r2, rest);
	CHECK_EQ_STR(l2, low);
	free(joined);
	free(r2);
	free(l2);
	free(rest);
	free(low);
	/* nothing to split, nothing to join: NULLs */
	CHECK_EQ_INT(kj__lowered_split_log(NULL, &rest, &low), 0);
	CHECK(rest == NULL && low == NULL);
	CHECK_EQ_INT(kj__lowered_split_log("only a log", &rest, &low), 0);
	CHECK_EQ_STR(rest, "only a log");
	CHECK(low == NULL);
	free(rest);
	CHECK(kj__lowered_join_log(NULL, NULL, &oom) == NULL && !oom);
	joined = kj__lowered_join_log("no newline", "e\tn\n", &oom);
	CHECK_EQ_STR(joined, "no newline\nkjit: lowered name: e = n\n");
	free(joined);
}

/* The list is capped (KJ_LOWERED_MAX): a compile cannot make the daemon
 * hold, store and resend more; lists from outside (a worker, a bundle) are
 * checked for the form before they are kept. */
static void test_cap_and_form(void)
{
	char *list = NULL, *big = malloc(KJ_LOWERED_MAX);
	size_t n = 0;

	CHECK(big != NULL);
	memset(big, 'x', KJ_LOWERED_MAX - 1);
	big[KJ_LOWERED_MAX - 1] = '\0';
	CHECK_EQ_INT(kj__lowered_append(&list, "e", big), KJIT_ETOOBIG);
	CHECK(list == NULL);
	big[1000] = '\0';
	while (kj__lowered_append(&list, "e", big) == 0)
		n++;
	CHECK(n > 0 && strlen(list) <= KJ_LOWERED_MAX && strlen(list) + 1004 > KJ_LOWERED_MAX);
	CHECK_EQ_INT(kj__lowered_append(&list, "e", big), KJIT_ETOOBIG);
	CHECK(kj__lowered_ok(list));
	free(list);
	free(big);
	CHECK(kj__lowered_ok(NULL) && kj__lowered_ok(""));
	CHECK(kj__lowered_ok("scale<float, 4>\t_Z5scaleIfLi4EEvPT_S0_i\nf\t_Z1fv\n"));
	CHECK(!kj__lowered_ok("f\t_Z1fv"));           /* no newline */
	CHECK(!kj__lowered_ok("f_Z1fv\n"));           /* no tab */
	CHECK(!kj__lowered_ok("\t_Z1fv\n"));          /* no expression */
	CHECK(!kj__lowered_ok("f\t\n"));              /* no name */
	CHECK(!kj__lowered_ok("f\t_Z1\tfv\n"));       /* a second tab */
	CHECK(!kj__lowered_ok("f\t_Z1\033[2Jfv\n"));  /* a control character */
}

TEST_LIST(TEST(append_and_find) TEST(split_and_join_the_old_form) TEST(cap_and_form))
