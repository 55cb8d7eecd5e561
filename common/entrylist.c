/* entrylist.c: the entry-point list of entrylist.h: joining names into
 * one, walking it, and the check that a request's names are an object's,
 * with the one-line error naming what the object has.
 */
#include <stdio.h>
#include <string.h>

#include "entrylist.h"
#include "kj_types.h"

char *kj__entries_join(char *const *v, size_t n)
{
	struct kj__buf b = { 0 };

	if (n == 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (kj__entries_add(&b, v[i], strlen(v[i])) < 0) {
			kj__buf_free(&b);
			return NULL;
		}
	if (kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

int kj__entries_add(struct kj__buf *b, const char *p, size_t len)
{
	return kj__buf_append(b, p, len) < 0 || kj__buf_append(b, "\n", 1) < 0 ? -1 : 0;
}

const char *kj__entries_next(const char **p, size_t *len)
{
	const char *name = *p;

	if (name == NULL || *name == '\0')
		return NULL;
	*len = strcspn(name, "\n");
	*p = name + *len + (name[*len] == '\n');
	return name;
}

int kj__entries_has(const char *list, const char *name, size_t len)
{
	size_t l;

	for (const char *q = list, *p; (p = kj__entries_next(&q, &l)) != NULL;)
		if (l == len && memcmp(p, name, len) == 0)
			return 1;
	return 0;
}

int kj__entries_missing(const char *list, const char *want, const char *what, char *err, size_t errlen)
{
	size_t l, k;

	if (list == NULL || want == NULL)
		return 0;
	for (const char *q = want, *p; (p = kj__entries_next(&q, &l)) != NULL;) {
		if (l == 0 || kj__entries_has(list, p, l))
			continue;
		struct kj__buf has = { 0 };
		for (const char *r = list, *e; has.len < 400 && (e = kj__entries_next(&r, &k)) != NULL;)
			kj__buf_printf(&has, "%s%.*s", has.len ? ", " : "", (int)k, e);
		size_t total = strlen(list);
		snprintf(err, errlen, "no entry point '%.*s' in %s; it has: %.*s%s", (int)l, p, what,
			 has.len ? (int)has.len : 4, has.len ? (const char *)has.p : "none",
			 has.len < total && has.len >= 400 ? ", ..." : "");
		kj__buf_free(&has);
		return KJIT_ECOMPILE;
	}
	return 0;
}
