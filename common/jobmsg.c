/* jobmsg.c: JOB and RESULT, the messages between kjitd and a compile
 * worker: each one's encoder and decoder side by side, so the two ends
 * cannot drift (jobmsg.h has the contract, docs/protocol.md the fields).
 *
 * Invariants: an encoder writes a whole, ended frame or returns an error
 * (the buffer's contents are then unspecified); a decoder trusts nothing
 * of its message: a single-valued field present twice, a string holding a
 * NUL, an integer of the wrong width and a field over its cap
 * (common/kj_limits.h) are each refused with one line saying which, and a
 * failed decode leaves nothing allocated.  Unknown fields are ignored, as
 * everywhere in the protocol.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobmsg.h"
#include "kj_types.h"
#include "lowered.h"
#include "util.h"

/* ---- JOB ---- */

int kj__job_encode(struct kj__buf *b, uint32_t id, const struct kj__compile_job *job)
{
	if (job->target == NULL || job->source == NULL)
		return KJIT_EINVAL;
	int r = kj__msg_begin(b, KJ_MSG_JOB, id);

	r = r ? r : kj__msg_put_str(b, KJ_F_TARGET, job->target);
	for (size_t i = 0; r == 0 && i < job->n_options; i++)
		r = kj__msg_put_str(b, KJ_F_OPTION, job->options[i]);
	for (size_t i = 0; r == 0 && i < job->n_entries; i++)
		r = kj__msg_put_str(b, KJ_F_ENTRY, job->entries[i]);
	if (r == 0 && job->source_name)
		r = kj__msg_put_str(b, KJ_F_SOURCE_NAME, job->source_name);
	r = r ? r : kj__msg_put(b, KJ_F_SOURCE, job->source, job->source_len);
	for (size_t i = 0; r == 0 && i < job->n_headers; i++) {
		r = kj__msg_put_str(b, KJ_F_HEADER_NAME, job->headers[i].name);
		r = r ? r : kj__msg_put(b, KJ_F_HEADER_DATA, job->headers[i].data, job->headers[i].len);
	}
	return r ? r : kj__msg_end(b);
}

/* The one field with tag in m into *out (NULL when absent).  0, or
 * KJIT_EINVAL with err set when it is there twice. */
static int single(const struct kj__msg *m, uint16_t tag, const char *what, const struct kj__field **out, char *err,
		  size_t errlen)
{
	size_t pos = 0;

	*out = kj__msg_next(m, tag, &pos);
	if (*out && kj__msg_next(m, tag, &pos)) {
		snprintf(err, errlen, "the message has two %s fields", what);
		return KJIT_EINVAL;
	}
	return 0;
}

/* Copies every field with tag (each at most max bytes, at most cap of
 * them) into a new array.  0, KJIT_EINVAL, KJIT_ETOOBIG or KJIT_ENOMEM. */
static int take_strs(const struct kj__msg *m, uint16_t tag, size_t max, size_t cap, char ***out, size_t *n)
{
	size_t count = 0, pos = 0;

	*n = 0;
	for (size_t i = 0; i < m->n; i++)
		count += m->f[i].tag == tag;
	if (count > cap)
		return KJIT_ETOOBIG;
	if ((*out = calloc(count + 1, sizeof **out)) == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const struct kj__field *f = kj__msg_next(m, tag, &pos);
		if (f->len > max)
			return KJIT_ETOOBIG;
		int r = kj__field_strdup(f, max, &(*out)[i]);
		if (r < 0)
			return r == KJIT_EPROTO ? KJIT_EINVAL : r;
		(*n)++;
	}
	return 0;
}

/* Walks HEADER_NAME / HEADER_DATA pairs in order. */
static int take_headers(const struct kj__msg *m, struct kj__job_msg *jm, char *err, size_t errlen)
{
	size_t count = 0, total = 0;

	for (size_t i = 0; i < m->n; i++)
		count += m->f[i].tag == KJ_F_HEADER_NAME;
	if (count > KJ_HEADERS_MAX_COUNT) {
		snprintf(err, errlen, "%zu headers is more than the %d allowed", count, KJ_HEADERS_MAX_COUNT);
		return KJIT_ETOOBIG;
	}
	if ((jm->headers = calloc(count + 1, sizeof *jm->headers)) == NULL)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		if (m->f[i].tag == KJ_F_HEADER_DATA) {
			snprintf(err, errlen, "HEADER_DATA without a HEADER_NAME before it");
			return KJIT_EPROTO;
		}
		if (m->f[i].tag != KJ_F_HEADER_NAME)
			continue;
		if (i + 1 >= m->n || m->f[i + 1].tag != KJ_F_HEADER_DATA) {
			snprintf(err, errlen, "HEADER_NAME without its HEADER_DATA");
			return KJIT_EPROTO;
		}
		struct kj__header *h = &jm->headers[jm->job.n_headers];
		char *name = NULL;
		int r = kj__field_strdup(&m->f[i], KJ_NAME_MAX, &name);
		if (r < 0) {
			snprintf(err, errlen, "a header name is malformed or too long");
			return r == KJIT_ENOMEM ? r : KJIT_EINVAL;
		}
		h->name = name;
		h->data = m->f[i + 1].p;
		h->len = m->f[i + 1].len;
		jm->job.n_headers++;
		total += h->len;
		if (total > KJ_HEADERS_MAX_TOTAL) {
			snprintf(err, errlen, "the headers add up to more than %u bytes", KJ_HEADERS_MAX_TOTAL);
			return KJIT_ETOOBIG;
		}
		i++;
	}
	return 0;
}

/* The single-valued fields: TARGET, SOURCE_NAME, SOURCE. */
static int take_singles(const struct kj__msg *m, struct kj__job_msg *jm, char *err, size_t errlen)
{
	const struct kj__field *t, *n, *s;
	int r;

	if ((r = single(m, KJ_F_TARGET, "TARGET", &t, err, errlen)) < 0 ||
	    (r = single(m, KJ_F_SOURCE_NAME, "SOURCE_NAME", &n, err, errlen)) < 0 ||
	    (r = single(m, KJ_F_SOURCE, "SOURCE", &s, err, errlen)) < 0)
		return r;
	if ((r = kj__field_strdup(t, KJ_TARGET_MAX, &jm->target)) < 0 || jm->target == NULL ||
	    !kj__token_ok(jm->target, KJ_TARGET_MAX)) {
		snprintf(err, errlen, "the job has no valid TARGET");
		return r == KJIT_ENOMEM ? r : KJIT_EINVAL;
	}
	if ((r = kj__field_strdup(n, KJ_NAME_MAX, &jm->source_name)) < 0) {
		snprintf(err, errlen, "the job's SOURCE_NAME is malformed or too long");
		return r == KJIT_ENOMEM ? r : KJIT_EINVAL;
	}
	if (jm->source_name == NULL && (jm->source_name = kj__strdup("source")) == NULL)
		return KJIT_ENOMEM;
	if (s == NULL) {
		snprintf(err, errlen, "the job has no SOURCE");
		return KJIT_EINVAL;
	}
	if (s->len > KJ_SOURCE_MAX) {
		snprintf(err, errlen, "the source is larger than %u bytes", KJ_SOURCE_MAX);
		return KJIT_ETOOBIG;
	}
	jm->job.source = s->p;
	jm->job.source_len = s->len;
	return 0;
}

static int job_decode(const struct kj__msg *m, struct kj__job_msg *jm, char *err, size_t errlen)
{
	int r;

	if ((r = take_singles(m, jm, err, errlen)) < 0)
		return r;
	if ((r = take_strs(m, KJ_F_OPTION, KJ_OPTION_MAX, KJ_OPTIONS_MAX_COUNT, &jm->options,
			   &jm->job.n_options)) < 0) {
		snprintf(err, errlen, "the job's options are malformed, too long or too many");
		return r;
	}
	if ((r = take_strs(m, KJ_F_ENTRY, KJ_NAME_MAX, KJ_ENTRIES_MAX_COUNT, &jm->entries, &jm->job.n_entries)) < 0) {
		snprintf(err, errlen, "the job's entries are malformed, too long or too many");
		return r;
	}
	if ((r = take_headers(m, jm, err, errlen)) < 0)
		return r;
	jm->job.target = jm->target;
	jm->job.source_name = jm->source_name;
	jm->job.options = (const char *const *)jm->options;
	jm->job.entries = (const char *const *)jm->entries;
	jm->job.headers = jm->headers;
	return 0;
}

int kj__job_decode(const struct kj__msg *m, struct kj__job_msg *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int r = job_decode(m, out, err, errlen);

	if (r < 0) {
		if (r == KJIT_ENOMEM)
			snprintf(err, errlen, "out of memory decoding the job");
		kj__job_msg_clear(out);
	}
	return r;
}

void kj__job_msg_clear(struct kj__job_msg *jm)
{
	if (jm == NULL)
		return;
	free(jm->target);
	free(jm->source_name);
	for (size_t i = 0; jm->options && jm->options[i]; i++)
		free(jm->options[i]);
	for (size_t i = 0; jm->entries && jm->entries[i]; i++)
		free(jm->entries[i]);
	for (size_t i = 0; jm->headers && i < jm->job.n_headers; i++)
		free((char *)jm->headers[i].name);
	free(jm->options);
	free(jm->entries);
	free(jm->headers);
	memset(jm, 0, sizeof *jm);
}

/* ---- RESULT ---- */

int kj__result_encode(struct kj__buf *b, uint32_t id, const struct kj__result *res)
{
	if (res->code > 0)
		return KJIT_EINVAL;
	int r = kj__msg_begin(b, KJ_MSG_RESULT, id);

	r = r ? r : kj__msg_put_i32(b, KJ_F_CODE, res->code);
	if (r == 0 && res->code == 0)
		r = kj__msg_put(b, KJ_F_DATA, res->data, res->len);
	if (r == 0 && res->log)
		r = kj__msg_put_str(b, KJ_F_LOG, res->log);
	if (r == 0 && res->code == 0 && res->lowered)
		r = kj__msg_put_str(b, KJ_F_LOWERED, res->lowered);
	if (r == 0 && res->error)
		r = kj__msg_put_str(b, KJ_F_ERROR, res->error);
	r = r ? r : kj__msg_put_u64(b, KJ_F_COMPILE_US, res->compile_us);
	return r ? r : kj__msg_end(b);
}

/* A string field of the RESULT (absent: NULL).  0, KJIT_ENOMEM, or
 * KJIT_EWORKER with err naming it. */
static int result_str(const struct kj__msg *m, uint16_t tag, const char *what, size_t max, char **out, char *err,
		      size_t errlen)
{
	const struct kj__field *f;
	int r = single(m, tag, what, &f, err, errlen);

	if (r == 0 && (r = kj__field_strdup(f, max, out)) < 0 && r != KJIT_ENOMEM)
		snprintf(err, errlen, "the worker's %s holds a NUL or is over %zu bytes", what, max);
	return r == 0 || r == KJIT_ENOMEM ? r : KJIT_EWORKER;
}

static int result_decode(const struct kj__msg *m, struct kj__result *res, char *err, size_t errlen)
{
	const struct kj__field *code, *data, *us;
	int r;

	if ((r = single(m, KJ_F_CODE, "CODE", &code, err, errlen)) < 0 ||
	    (r = single(m, KJ_F_DATA, "DATA", &data, err, errlen)) < 0 ||
	    (r = single(m, KJ_F_COMPILE_US, "COMPILE_US", &us, err, errlen)) < 0)
		return KJIT_EWORKER;
	if (kj__field_i32(code, &res->code) < 0 || res->code > 0) {
		snprintf(err, errlen, "the worker's RESULT has no valid CODE");
		return KJIT_EWORKER;
	}
	if (us && kj__field_u64(us, &res->compile_us) < 0) {
		snprintf(err, errlen, "the worker's COMPILE_US is not 8 bytes");
		return KJIT_EWORKER;
	}
	if ((r = result_str(m, KJ_F_LOG, "LOG", KJ_RESULT_LOG_MAX, &res->log, err, errlen)) < 0 ||
	    (r = result_str(m, KJ_F_ERROR, "ERROR", KJ_RESULT_ERROR_MAX, &res->error, err, errlen)) < 0 ||
	    (r = result_str(m, KJ_F_LOWERED, "LOWERED", KJ_LOWERED_MAX, &res->lowered, err, errlen)) < 0)
		return r;
	if (res->code < 0)
		return 0; /* a failure carries no object */
	if (data && data->len > KJ_OBJECT_MAX) {
		snprintf(err, errlen, "the compiled object is over the size limit");
		return KJIT_ETOOBIG;
	}
	if (data == NULL || data->len == 0) {
		snprintf(err, errlen, "the compiler returned no object");
		return KJIT_EWORKER;
	}
	if (!kj__lowered_ok(res->lowered)) { /* cached and sent with every hit */
		snprintf(err, errlen, "the worker's lowered names are malformed or over the size cap");
		return KJIT_EWORKER;
	}
	res->data = data->p;
	res->len = data->len;
	return 0;
}

int kj__result_decode(const struct kj__msg *m, struct kj__result *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int r = result_decode(m, out, err, errlen);

	if (r < 0) {
		if (r == KJIT_ENOMEM)
			snprintf(err, errlen, "out of memory decoding the worker's RESULT");
		kj__result_clear(out);
	}
	return r;
}

void kj__result_clear(struct kj__result *r)
{
	if (r == NULL)
		return;
	free(r->log);
	free(r->lowered);
	free(r->error);
	memset(r, 0, sizeof *r);
}
