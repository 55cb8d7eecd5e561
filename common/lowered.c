/* lowered.c: the lowered names of C++ name expressions, in the one text
 * form kjit carries them in, and the old form in a log (lowered.h).  No
 * state; every allocation checked; inputs are C strings.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "lowered.h"
#include "util.h"

#define LEGACY_SEP " = "

static int plain(const char *s)
{
	return s && *s && strpbrk(s, "\t\n") == NULL;
}

int kj__lowered_append(char **list, const char *expr, const char *lowered)
{
	if (!plain(expr) || !plain(lowered))
		return KJIT_EINVAL;
	size_t have = *list ? strlen(*list) : 0, el = strlen(expr), ll = strlen(lowered);
	if (el > KJ_LOWERED_MAX || ll > KJ_LOWERED_MAX || have + el + ll + 2 > KJ_LOWERED_MAX)
		return KJIT_ETOOBIG;
	char *n = kj__asprintf("%s%s\t%s\n", *list ? *list : "", expr, lowered);
	if (n == NULL)
		return KJIT_ENOMEM;
	free(*list);
	*list = n;
	return 0;
}

int kj__lowered_ok(const char *list)
{
	size_t total = 0;

	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, "\n"), t = strcspn(p, "\t");
		if (p[n] != '\n' || t == 0 || t + 1 >= n || (total += n + 1) > KJ_LOWERED_MAX)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (i != t && ((unsigned char)p[i] < 0x20 || p[i] == 0x7f))
				return 0;
		p += n + 1;
	}
	return 1;
}

int kj__lowered_find(const char *list, const char *expr, char **out)
{
	size_t el = strlen(expr);

	*out = NULL;
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, "\n");
		if (n > el && p[el] == '\t' && memcmp(p, expr, el) == 0) {
			*out = kj__strndup(p + el + 1, n - el - 1);
			return *out ? 1 : KJIT_ENOMEM;
		}
		p += n + (p[n] == '\n');
	}
	return 0;
}

/* The buffer's text as a malloc'd string, or NULL when empty; -1 on ENOMEM. */
static int take_text(struct kj__buf *b, char **out)
{
	*out = NULL;
	if (b->len == 0)
		return 0;
	if (kj__buf_append(b, "", 1) < 0)
		return -1;
	*out = (char *)b->p;
	b->p = NULL;
	b->len = b->cap = 0;
	return 0;
}

int kj__lowered_split_log(const char *log, char **rest, char **lowered)
{
	static const char prefix[] = KJ_LOWERED_LEGACY_PREFIX;
	struct kj__buf r = { 0 }, l = { 0 };
	int bad = 0;

	*rest = *lowered = NULL;
	for (const char *p = log; p && *p && !bad;) {
		size_t n = strcspn(p, "\n"), k = n + (p[n] == '\n');
		const char *sep = NULL;
		if (n > sizeof prefix - 1 && memcmp(p, prefix, sizeof prefix - 1) == 0)
			for (const char *q = p; (q = memmem(q, (size_t)(p + n - q), LEGACY_SEP, 3)) != NULL; q++)
				sep = q; /* the last " = ": an expression may hold one, a mangled name not */
		if (sep) {
			const char *e = p + sizeof prefix - 1;
			bad |= kj__buf_append(&l, e, (size_t)(sep - e)) < 0 || kj__buf_append(&l, "\t", 1) < 0 ||
			       kj__buf_append(&l, sep + 3, (size_t)(p + n - sep - 3)) < 0 ||
			       kj__buf_append(&l, "\n", 1) < 0;
		} else {
			bad |= kj__buf_append(&r, p, k) < 0;
		}
		p += k;
	}
	if (bad || take_text(&r, rest) < 0 || take_text(&l, lowered) < 0) {
		kj__buf_free(&r);
		kj__buf_free(&l);
		free(*rest);
		*rest = NULL;
		return KJIT_ENOMEM;
	}
	return 0;
}

char *kj__lowered_join_log(const char *log, const char *list, int *oom)
{
	struct kj__buf b = { 0 };
	char *out = NULL;
	int bad = log && *log && kj__buf_append(&b, log, strlen(log)) < 0;

	if (!bad && b.len && b.p[b.len - 1] != '\n' && list && *list)
		bad = kj__buf_append(&b, "\n", 1) < 0;
	for (const char *p = list; p && *p && !bad;) {
		size_t n = strcspn(p, "\n"), t = strcspn(p, "\t");
		if (t < n)
			bad = kj__buf_printf(&b, "%s%.*s%s%.*s\n", KJ_LOWERED_LEGACY_PREFIX, (int)t, p, LEGACY_SEP,
					     (int)(n - t - 1), p + t + 1) < 0;
		p += n + (p[n] == '\n');
	}
	if (bad || take_text(&b, &out) < 0) {
		kj__buf_free(&b);
		*oom = 1;
		return NULL;
	}
	return out;
}
