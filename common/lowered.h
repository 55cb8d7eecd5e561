/* lowered.h: the lowered (mangled) names of C++ name expressions
 * (`--name-expression 'scale<float>'`, NVRTC's and hiprtc's
 * AddNameExpression / GetLoweredName), as every part of kjit carries them:
 * one line "EXPR\tLOWERED\n" per expression, in the order the compiler gave
 * them.  Neither an expression (a request option: printable, no tab or
 * newline) nor a lowered name (a mangled symbol) can hold a tab or a
 * newline, so the text needs no escaping.  It travels as its own field
 * (KJ_F_LOWERED: a worker's RESULT, a GET's REPLY), in its own index column
 * (cache/index.c) and bundle field.
 *
 * kjit before schema 3 of the index kept them as lines "kjit: lowered
 * name: EXPR = LOWERED" of the compile log; kj__lowered_split_log turns
 * such a log back into the two, for the index's migration, old bundles and
 * old daemons' replies; kj__lowered_join_log writes that form for the
 * fleet tier, whose value (format 1) has no other place.  No state.
 */
#ifndef KJ_LOWERED_H
#define KJ_LOWERED_H

#define KJ_LOWERED_LEGACY_PREFIX "kjit: lowered name: "

/* How a name expression travels in a request, a job and the key: the
 * option "--name-expression=EXPR" (`kjit get` sends it; the runtime
 * compiler families hand EXPR to AddNameExpression; the others refuse
 * it). */
#define KJ_NAME_EXPR_OPT "--name-expression="

/* Appends the line of expr to *list (malloc'd; *list may be NULL).  0,
 * KJIT_EINVAL (a tab or newline in expr or lowered, or an empty one),
 * KJIT_ETOOBIG (the list would pass KJ_LOWERED_MAX bytes) or KJIT_ENOMEM;
 * *list is unchanged on error. */
int kj__lowered_append(char **list, const char *expr, const char *lowered);

/* 1 if list (may be NULL) is in the one form: at most KJ_LOWERED_MAX
 * bytes, lines "EXPR\tLOWERED\n" with both non-empty and no other control
 * character; else 0.  For lists that come from outside the daemon (a
 * worker's RESULT, a bundle). */
int kj__lowered_ok(const char *list);

/* The lowered name of expr in list into *out (malloc'd).  1 found, 0 not
 * (*out NULL), KJIT_ENOMEM. */
int kj__lowered_find(const char *list, const char *expr, char **out);

/* Splits a log with lowered-name lines (the old form) into *rest (the
 * other lines) and *lowered (their list), each malloc'd, or NULL when
 * empty.  0 or KJIT_ENOMEM (both NULL). */
int kj__lowered_split_log(const char *log, char **rest, char **lowered);

/* A malloc'd copy of log (may be NULL) followed by the old form of every
 * line of list (may be NULL); NULL when both are empty, or on ENOMEM (*oom
 * set). */
char *kj__lowered_join_log(const char *log, const char *list, int *oom);

#endif /* KJ_LOWERED_H */
