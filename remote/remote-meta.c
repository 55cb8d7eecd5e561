/* remote-meta.c: what a fleet value says it was compiled for, on the tier's
 * side (docs/remote.md): the metadata text a publish stores, whether a
 * verified value may answer a request (its metadata names the request's
 * backend, target and runtime version; its entry list covers the entry
 * points asked), and its log and lowered names taken apart.  The daemon
 * hands in a struct kj__remote_meta and gets yes, no-and-why, or texts; it
 * never reads the layout (KJO1, KJO2: remote-value.c).
 *
 * Invariants:
 *  - The metadata starts "backend=N\ntarget=T\nversion=V\n": that prefix
 *    is what must match; ext= and compiler= follow, informative only.
 *  - A KJO1 value (read only by a node without a fleet secret) carries no
 *    metadata and no entry list: not judged here (the object's symbols
 *    still are, by the daemon); its lowered names are lines of its log
 *    ("kjit: lowered name: EXPR = LOWERED", common/lowered.h).
 *  - The reason written to err quotes at most 200 bytes of a value's
 *    metadata as stored: the caller makes it printable before logging.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_types.h"
#include "lowered.h"
#include "remote.h"
#include "util.h"

char *kj__remote_meta_text(const struct kj__remote_meta *m)
{
	return kj__asprintf("backend=%d\ntarget=%s\nversion=%s\next=%s\ncompiler=%s\n", m->backend, m->target,
			    m->version, m->ext ? m->ext : "", m->compiler ? m->compiler : "");
}

int kj__remote_fits(const struct kj__remote_object *o, const struct kj__remote_meta *m, const char *const *want,
		    size_t n, char *err, size_t errlen)
{
	if (o->format != 2)
		return 1;
	if (m) {
		char *must = kj__asprintf("backend=%d\ntarget=%s\nversion=%s\n", m->backend, m->target, m->version);
		int same = must && o->meta_len >= strlen(must) && memcmp(o->meta, must, strlen(must)) == 0;
		free(must);
		if (must == NULL) {
			snprintf(err, errlen, "the request's metadata cannot be built (%s)", kjit_strerror(KJIT_ENOMEM));
			return 0;
		}
		if (!same) {
			snprintf(err, errlen, "its metadata names another backend, target or version: %.*s",
				 (int)(o->meta_len > 200 ? 200 : o->meta_len), o->meta ? o->meta : "");
			return 0;
		}
	}
	if (!kj__remote_entries_cover(o, want, n)) {
		snprintf(err, errlen, "its entry list does not cover the request's");
		return 0;
	}
	return 1;
}

int kj__remote_texts(const struct kj__remote_object *o, char **log, char **lowered)
{
	char *all = o->log_len ? kj__strndup(o->log, o->log_len) : NULL;

	*log = *lowered = NULL;
	if (o->log_len && all == NULL)
		return KJIT_ENOMEM;
	if (o->format == 2) { /* the names have a field of their own */
		*log = all;
		*lowered = o->lowered_len ? kj__strndup(o->lowered, o->lowered_len) : NULL;
		return o->lowered_len && *lowered == NULL ? KJIT_ENOMEM : 0;
	}
	if (kj__lowered_split_log(all, log, lowered) == 0) {
		free(all);
		return 0;
	}
	*log = all; /* the whole log: libkjit reads the names there */
	return KJIT_ENOMEM;
}
