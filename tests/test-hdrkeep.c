/* test-hdrkeep.c: the texts of <kernels>/include's headers kept by kjitd
 * (daemon/miss/hdrkeep.c, issue 35, round fourteen) and the include scan's
 * hooks that use them (common/incfind.c, kj__inc_keep).  A header read
 * once, its change settled a second before the read, is kept; a scan with
 * kjitd's loop budget (daemon/miss/offhash.c) then takes the kept text
 * instead of going over budget (on main it stops with KJIT_EBUSY: the
 * request goes to a thread), giving the includes and the key a fresh read
 * gives.  A header changed on disk is not proven: over budget again, and
 * its read gives the new bytes, a new key.  A link that now leads outside
 * the root to the very same file is refused, as a fresh read refuses it
 * (the realpath still runs).  The store stays within its bounds. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "daemon.h"
#include "includes.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "test.h"
#include "util.h"

static char root[64], inc[96];

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

/* root holds inc/ (the allowed directory) with sub/a.h including b.h. */
static void setup(void)
{
	char p[160];
	snprintf(root, sizeof root, "/tmp/kjit-test-hdrkeep.XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	snprintf(inc, sizeof inc, "%s/inc", root);
	CHECK(mkdir(inc, 0755) == 0);
	snprintf(p, sizeof p, "%s/sub", inc);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof p, "%s/sub/a.h", inc);
	put(p, "#include <b.h>\nint a;\n");
	snprintf(p, sizeof p, "%s/b.h", inc);
	put(p, "int b = 1;\n");
}

/* The hooks as offhash.c sets them: kept from the store; seen records
 * how many were kept and, for a read, keeps it (done's put, here at once). */
struct keeper {
	struct kj__hdrkeep *k;
	int n_kept, n_read;
};

static int kept(void *arg, const char *real, uint8_t **data, size_t *len, struct stat *st, struct timespec *at)
{
	return kj__hdrkeep_find(((struct keeper *)arg)->k, real, data, len, st, at);
}

static void seen(void *arg, const char *name, const char *real, const uint8_t *data, size_t len,
		 const struct stat *st, const struct timespec *at, int was_kept)
{
	struct keeper *kp = arg;
	if (was_kept) {
		kp->n_kept++;
		return;
	}
	kp->n_read++;
	kj__hdrkeep_put(kp->k, real, data, len, st, at);
}

/* Scans "#include <sub/a.h>" in inc with kp's hooks; budget: kjitd's loop's. */
static int scan(struct keeper *kp, int budget, struct kj__includes *out, int *over, char *err, size_t errlen)
{
	static const char src[] = "#include <sub/a.h>\n";
	const char *const dirs[] = { inc };
	struct kj__inc_keep keep = { budget ? kept : NULL, seen, kp };
	struct kj__include_tree t = { .probes_max = budget ? KJ_RESOLVE_INLINE_PROBES : 0, .keep = &keep };
	int r = kj__includes_resolve_tree("k.hip", (const uint8_t *)src, strlen(src), NULL, NULL, NULL, 0, dirs, 1,
					  &t, out, err, errlen);
	*over = t.over;
	return r;
}

static void key_of(const struct kj__includes *in, char key[65])
{
	static const char src[] = "#include <sub/a.h>\n";
	struct kj__key_input ki = {
		.backend = KJIT_BACKEND_HIP, .compiler = "test", .target = "gfx90a", .version = "1",
		.source = (const uint8_t *)src, .source_len = strlen(src),
		.header_names = (const char *const *)in->names, .header_data = (const uint8_t *const *)in->data,
		.header_len = in->len, .n_headers = in->n,
		.missing = (const char *const *)in->missing, .n_missing = in->n_missing,
	};
	CHECK_EQ_INT(kj__cache_key(&ki, key), 0);
}

static int same_includes(const struct kj__includes *a, const struct kj__includes *b)
{
	if (a->n != b->n || a->n_missing != b->n_missing)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->names[i], b->names[i]) != 0 || a->len[i] != b->len[i] ||
		    memcmp(a->data[i], b->data[i], a->len[i]) != 0)
			return 0;
	for (size_t i = 0; i < a->n_missing; i++)
		if (strcmp(a->missing[i], b->missing[i]) != 0)
			return 0;
	return 1;
}

/* Read once (no budget), then: with the budget, both headers from the kept
 * texts, the same includes and key as the read. */
static void test_kept_header_used_under_budget(void)
{
	struct keeper kp = { 0 };
	struct kj__includes fresh, loop;
	char err[256], k1[65], k2[65];
	int over;

	setup();
	CHECK_EQ_INT(kj__hdrkeep_new(&kp.k), 0);
	CHECK_EQ_INT(scan(&kp, 1, &loop, &over, err, sizeof err), KJIT_EBUSY); /* nothing kept yet */
	CHECK_EQ_INT(over, 1);
	sleep(2); /* the headers' ctime now settled well before the read */
	CHECK_EQ_INT(scan(&kp, 0, &fresh, &over, err, sizeof err), 0);
	CHECK_EQ_INT(kp.n_read, 2);
	CHECK_EQ_INT(scan(&kp, 1, &loop, &over, err, sizeof err), 0);
	CHECK_EQ_INT(over, 0);
	CHECK_EQ_INT(kp.n_kept, 2);
	CHECK_EQ_INT(kp.n_read, 2); /* nothing opened under the budget */
	CHECK(same_includes(&fresh, &loop));
	key_of(&fresh, k1);
	key_of(&loop, k2);
	CHECK_EQ_STR(k1, k2);
	kj__includes_free(&fresh);
	kj__includes_free(&loop);
	kj__hdrkeep_free(kp.k);
	CHECK(kj__rm_rf(root) == 0);
}

/* b.h edited after it was kept, same size and mtime put back (only the
 * ctime moved): not proven, so over budget; read again, the new bytes, a
 * new key; that read too recent to prove, the next scan on the loop is
 * still over budget. */
static void test_changed_header_read_again(void)
{
	struct keeper kp = { 0 };
	struct kj__includes before, after;
	char err[256], p[160], k1[65], k2[65];
	struct stat st;
	int over;

	setup();
	CHECK_EQ_INT(kj__hdrkeep_new(&kp.k), 0);
	sleep(2);
	CHECK_EQ_INT(scan(&kp, 0, &before, &over, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/b.h", inc);
	CHECK(stat(p, &st) == 0);
	put(p, "int b = 2;\n");
	struct timespec ts[2] = { st.st_atim, st.st_mtim };
	CHECK(utimensat(AT_FDCWD, p, ts, 0) == 0);
	CHECK_EQ_INT(scan(&kp, 1, &after, &over, err, sizeof err), KJIT_EBUSY);
	CHECK_EQ_INT(over, 1);
	CHECK_EQ_INT(kp.n_kept, 1); /* sub/a.h was, b.h not */
	CHECK_EQ_INT(scan(&kp, 0, &after, &over, err, sizeof err), 0);
	CHECK(!same_includes(&before, &after));
	key_of(&before, k1);
	key_of(&after, k2);
	CHECK(strcmp(k1, k2) != 0);
	kj__includes_free(&after);
	CHECK_EQ_INT(scan(&kp, 1, &after, &over, err, sizeof err), KJIT_EBUSY);
	kj__includes_free(&before);
	kj__hdrkeep_free(kp.k);
	CHECK(kj__rm_rf(root) == 0);
}

/* inc/sub replaced by a link to a folder outside the root that holds a
 * hard link to the same a.h (made before the read: its ctime is settled,
 * and moving a folder leaves the file's alone).  A stat of inc/sub/a.h
 * proves the kept text's file; the realpath the scan still takes leads
 * outside, refused as a fresh read refuses it. */
static void test_link_outside_refused(void)
{
	struct keeper kp = { 0 };
	struct kj__includes out;
	char err[256], p[160], q[160];
	int over;

	setup();
	CHECK_EQ_INT(kj__hdrkeep_new(&kp.k), 0);
	snprintf(p, sizeof p, "%s/out", root);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof p, "%s/sub/a.h", inc);
	snprintf(q, sizeof q, "%s/out/a.h", root);
	CHECK(link(p, q) == 0);
	sleep(2);
	CHECK_EQ_INT(scan(&kp, 0, &out, &over, err, sizeof err), 0);
	kj__includes_free(&out);
	snprintf(p, sizeof p, "%s/sub", inc);
	snprintf(q, sizeof q, "%s/sub.old", inc);
	CHECK(rename(p, q) == 0);
	snprintf(q, sizeof q, "%s/out", root);
	CHECK(symlink(q, p) == 0);
	CHECK_EQ_INT(scan(&kp, 1, &out, &over, err, sizeof err), KJIT_EINCLUDE);
	CHECK(strstr(err, "resolves outside the allowed include directories") != NULL);
	CHECK_EQ_INT(kp.n_kept, 0);
	CHECK_EQ_INT(scan(&kp, 0, &out, &over, err, sizeof err), KJIT_EINCLUDE);
	kj__hdrkeep_free(kp.k);
	CHECK(kj__rm_rf(root) == 0);
}

/* At most KJ_HEADER_TEXT_MAX a text and KJ_HEADER_TEXT_TOTAL in all; a
 * path read again replaces its entry (counted once); an unproven read
 * (read_at zero) drops it. */
static void test_bound_holds(void)
{
	struct kj__hdrkeep *k;
	struct stat st = { 0 };
	struct timespec at = { 1000, 0 }, none = { 0, 0 };
	uint8_t *big = calloc(1, KJ_HEADER_TEXT_MAX + 1);
	char path[64];
	size_t before;

	CHECK(big != NULL);
	CHECK_EQ_INT(kj__hdrkeep_new(&k), 0);
	kj__hdrkeep_put(k, "/k/include/big.h", big, KJ_HEADER_TEXT_MAX + 1, &st, &at);
	CHECK_EQ_INT(kj__hdrkeep_bytes(k), 0);
	kj__hdrkeep_put(k, "/k/include/a.h", big, 100, &st, &at);
	before = kj__hdrkeep_bytes(k);
	CHECK(before > 100);
	kj__hdrkeep_put(k, "/k/include/a.h", big, 100, &st, &at);
	CHECK_EQ_INT(kj__hdrkeep_bytes(k), before);
	kj__hdrkeep_put(k, "/k/include/a.h", big, 100, &st, &none);
	CHECK_EQ_INT(kj__hdrkeep_bytes(k), 0);
	for (int i = 0; i < 2 * (int)(KJ_HEADER_TEXT_TOTAL / KJ_HEADER_TEXT_MAX); i++) {
		snprintf(path, sizeof path, "/k/include/h%d.h", i);
		kj__hdrkeep_put(k, path, big, KJ_HEADER_TEXT_MAX, &st, &at);
		CHECK(kj__hdrkeep_bytes(k) <= KJ_HEADER_TEXT_TOTAL);
	}
	CHECK(kj__hdrkeep_bytes(k) > KJ_HEADER_TEXT_TOTAL - 2 * KJ_HEADER_TEXT_MAX);
	kj__hdrkeep_free(k);
	kj__hdrkeep_free(NULL);
	free(big);
}

TEST_LIST(TEST(kept_header_used_under_budget) TEST(changed_header_read_again) TEST(link_outside_refused)
	  TEST(bound_holds))
