/* remote-meta.c: what a fleet value says it was compiled for, on the tier's
 * side (docs/remote.md): the metadata text a publish stores, whether a
 * verified value may answer a request (its metadata names the request's
 * backend, target and runtime version; its entry list covers the entry
 * points asked), and its log and lowered names taken apart; and the answer
 * the daemon gets for a verified value (kj__remote_answer_make: the
 * metadata read into a struct kj__remote_meta, the entry list made an
 * entrylist.h list, the texts apart), so it judges a value without reading
 * the layout (KJO1, KJO2: remote-value.c) or calling back here.
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
#include "backend.h"
#include "buf.h"
#include "entrylist.h"
#include "lowered.h"
#include "remote.h"
#include "util.h"

char *kj__remote_meta_text(const struct kj__remote_meta *m)
{
	return kj__asprintf("backend=%d\ntarget=%s\nversion=%s\next=%s\ncompiler=%s\n", m->backend, m->target,
			    m->version, m->ext ? m->ext : "", m->compiler ? m->compiler : "");
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

/* Reads "NAME=VALUE\n" at *p (before end) into a NUL-ended copy at *w:
 * the value, or NULL when the line is not NAME's. */
static const char *meta_line(const char **p, const char *end, const char *name, char **w)
{
	size_t nl = strlen(name);
	const char *eol = memchr(*p, '\n', (size_t)(end - *p));

	if (eol == NULL || (size_t)(eol - *p) <= nl || memcmp(*p, name, nl) != 0 || (*p)[nl] != '=')
		return NULL;
	char *v = *w;
	memcpy(v, *p + nl + 1, (size_t)(eol - *p) - nl - 1);
	v[eol - *p - nl - 1] = '\0';
	*w = v + (eol - *p - nl);
	*p = eol + 1;
	return v;
}

/* The metadata's first three lines (kj__remote_meta_text's order) into
 * a->meta, the text copied into buf: 1, or 0 when they are not those lines
 * (a backend written other than as kj__remote_meta_text writes it too: the
 * request's own text would not have matched it). */
static int meta_read(const struct kj__remote_object *o, struct kj__remote_answer *a, char *buf)
{
	const char *p = o->meta, *end = o->meta + o->meta_len, *be;
	char *w = buf, canon[16];

	if (o->meta == NULL || (be = meta_line(&p, end, "backend", &w)) == NULL ||
	    (a->meta.target = meta_line(&p, end, "target", &w)) == NULL ||
	    (a->meta.version = meta_line(&p, end, "version", &w)) == NULL)
		return 0;
	char *stop;
	long v = strtol(be, &stop, 10);
	if (*be == '\0' || *stop != '\0' || v < 0 || v > 1000)
		return 0;
	snprintf(canon, sizeof canon, "%ld", v);
	if (strcmp(canon, be) != 0)
		return 0;
	a->meta.backend = (int)v;
	return 1;
}

int kj__remote_answer_make(const struct kj__remote_object *o, struct kj__remote_answer *a)
{
	char *log = NULL, *lowered = NULL;

	*a = (struct kj__remote_answer){ .obj = o };
	if (o->format == 2) {
		struct kj__buf ents = { 0 };
		char *buf = malloc(o->meta_len + 1);
		int short_of = buf == NULL;
		for (const char *p = o->entries, *end = o->entries + o->entries_len; !short_of && p && p < end;) {
			size_t l = strnlen(p, (size_t)(end - p));
			short_of = l && kj__entries_add(&ents, p, l) < 0;
			p += l + 1;
		}
		if (short_of || kj__buf_append(&ents, "", 1) < 0) {
			free(buf);
			kj__buf_free(&ents);
			return KJIT_ENOMEM;
		}
		a->judged = 1;
		a->meta_ok = meta_read(o, a, buf);
		a->meta_buf = buf;
		a->entries = (const char *)ents.p;
	}
	a->texts_ok = kj__remote_texts(o, &log, &lowered) == 0;
	if (!a->texts_ok) {
		free(log);
		free(lowered);
		log = lowered = NULL;
	}
	a->log = log;
	a->lowered = lowered;
	return 0;
}

void kj__remote_answer_clear(struct kj__remote_answer *a)
{
	free((char *)a->log);
	free((char *)a->lowered);
	free((char *)a->entries);
	free(a->meta_buf);
	*a = (struct kj__remote_answer){ 0 };
}
