/* entrylist.h: the entry-point list, one type for every module that holds
 * the kernel names of an object or a request (issue 33).
 *
 * The type: a NUL-terminated string of names, each followed by "\n"
 * ("scale\nadd_f32\n"), malloc'd; "" is an empty list, NULL a list not known
 * (an object whose symbols could not be read).  A name is one line: it
 * holds no "\n" and no NUL (the request parser refuses others, and
 * compilers/symbols.c keeps only names that pass kj__name_ok).  It is kept
 * in this form in the index (cache/, schema 5), in a bundle (daemon/admin/bundle.c)
 * and in a remote value (remote/), so no conversion sits between them.
 *
 * The functions below are the only place that splits or builds one; the
 * object's own list is read from its symbols by kj__entries_list
 * (compilers/compiler.h).
 */
#ifndef KJ_ENTRYLIST_H
#define KJ_ENTRYLIST_H

#include <stddef.h>

#include "buf.h"

/* v[0..n) as a list (malloc'd); NULL when n is 0 or out of memory. */
char *kj__entries_join(char *const *v, size_t n);

/* Appends the name p[0..len) and its "\n" to b (no NUL: finish with
 * kj__buf_append(b, "", 1)).  0, or -1 out of memory. */
int kj__entries_add(struct kj__buf *b, const char *p, size_t len);

/* Walks a list: the name at *p (its length into *len) and *p moved past
 * it; NULL at the end (or for a NULL list).  A last name without its "\n"
 * is still a name.
 *
 *   for (const char *q = list, *name; (name = kj__entries_next(&q, &n)) != NULL;) ... */
const char *kj__entries_next(const char **p, size_t *len);

/* 1 if name[0..len) is one of list's names, else 0 (also for a NULL list). */
int kj__entries_has(const char *list, const char *name, size_t len);

/* 0 if every name of want is one of list's (or either is NULL: nothing
 * asked, or the object's names not known), else KJIT_ECOMPILE with "no entry
 * point 'X' in WHAT; it has: A, B" in err (the names cut near 400 bytes). */
int kj__entries_missing(const char *list, const char *want, const char *what, char *err, size_t errlen);

#endif /* KJ_ENTRYLIST_H */
