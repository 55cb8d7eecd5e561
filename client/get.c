/* get.c: kjit_get, the one call most programs make, and kjit_result_free.
 *
 * kjit_get checks the request first (everything the daemon would refuse
 * anyway, so that the error names the caller's mistake), resolves the
 * target and runtime version from this process's environment unless the
 * request gives them or sets no_env (kj__resolve_env: the process that will
 * load the object decides), encodes one GET, and decodes the reply into
 * a kjit_result that owns everything it points to.  Reply fields are taken
 * only through the checked kj__field_* helpers, each with its own cap.
 * A request whose exact bytes this handle was answered before is answered
 * from its memo (procmemo.c) without touching the socket; else a request
 * the daemon published in its shared hit table (docs/hitpath.md) is copied
 * out of the mapping; only then does the socket answer.  kjit_get_many
 * (getmany.c) goes the same way for each request of a batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccopts.h"
#include "client_int.h"
#include "getinto.h"
#include "hittab.h"
#include "lowered.h"
#include "procmemo.h"
#include "resolve.h"
#include "sha.h"
#include "util.h"

#define KEY_HEX_LEN 64

/* 1 if s is 1..max bytes without control characters. */
static int printable(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* 1 if the n strings of v are printable() within max, or kj__name_ok()
 * for max 0. */
static int strs_ok(const char *const *v, size_t n, size_t max)
{
	if (n > 0 && v == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] == NULL || !(max ? printable(v[i], max) : kj__name_ok(v[i])))
			return 0;
	return 1;
}

/* Checks req; on failure sets c->err and returns the code. */
static int request_check(kjit_client *c, const kjit_request *req)
{
	if (kjit_backend_name(req->backend) == NULL)
		return kj__client_fail(c, KJIT_EBACKEND, "unknown backend %d; use KJIT_BACKEND_HIP, "
				       "KJIT_BACKEND_CUDA or KJIT_BACKEND_VULKAN", req->backend);
	if ((req->source == NULL) == (req->kernel == NULL))
		return kj__client_fail(c, KJIT_EINVAL, "give exactly one of source and kernel");
	if (req->kernel && !kj__name_ok(req->kernel))
		return kj__client_fail(c, KJIT_EINVAL, "invalid kernel name; bundled kernel names "
				       "are [A-Za-z0-9._+-], at most %d bytes", KJ_NAME_MAX);
	if (req->source && req->source_size == 0)
		return kj__client_fail(c, KJIT_EINVAL, "the source is empty");
	if (req->source && req->source_size > KJ_SOURCE_MAX)
		return kj__client_fail(c, KJIT_ETOOBIG, "the source is %zu bytes, over the cap of %u",
				       req->source_size, KJ_SOURCE_MAX);
	if (req->source_name && !kj__path_ok(req->source_name))
		return kj__client_fail(c, KJIT_EINVAL, "invalid source name; a file name of "
				       "[A-Za-z0-9._+-] (its place in the include tree may add folders: "
				       "src/main.hip), at most %d bytes", KJ_NAME_MAX);
	if (req->compiler && !kj__name_ok(req->compiler))
		return kj__client_fail(c, KJIT_EINVAL, "invalid compiler name; a family such as nvcc or hipcc");
	if (req->target && !kj__token_ok(req->target, KJ_TARGET_MAX))
		return kj__client_fail(c, KJIT_EINVAL, "invalid target \"%s\"", req->target);
	if (req->runtime_version && !kj__token_ok(req->runtime_version, KJ_VERSION_STR_MAX))
		return kj__client_fail(c, KJIT_EINVAL, "invalid runtime version \"%s\"",
				       req->runtime_version);
	if (req->n_entries > KJ_ENTRIES_MAX_COUNT || !strs_ok(req->entries, req->n_entries, 0))
		return kj__client_fail(c, KJIT_EINVAL, "invalid entries: at most %d names of "
				       "[A-Za-z0-9._+-], %d bytes each", KJ_ENTRIES_MAX_COUNT, KJ_NAME_MAX);
	if (req->n_options > KJ_OPTIONS_MAX_COUNT || !strs_ok(req->options, req->n_options, KJ_OPTION_MAX))
		return kj__client_fail(c, KJIT_EINVAL, "invalid options: at most %d options of 1 to %d "
				       "printable bytes", KJ_OPTIONS_MAX_COUNT, KJ_OPTION_MAX);
	if (req->n_name_expressions > KJ_ENTRIES_MAX_COUNT ||
	    !strs_ok(req->name_expressions, req->n_name_expressions, KJ_NAME_MAX))
		return kj__client_fail(c, KJIT_EINVAL, "invalid name expressions: at most %d of 1 to %d "
				       "printable bytes", KJ_ENTRIES_MAX_COUNT, KJ_NAME_MAX);
	if (req->n_headers > KJ_HEADERS_MAX_COUNT || (req->n_headers && req->headers == NULL))
		return kj__client_fail(c, KJIT_EINVAL, "invalid headers: at most %d",
				       KJ_HEADERS_MAX_COUNT);
	size_t total = 0;
	for (size_t i = 0; i < req->n_headers; i++) {
		const kjit_header *h = &req->headers[i];
		if (h->name == NULL || !printable(h->name, KJ_NAME_MAX) || (h->size && h->data == NULL))
			return kj__client_fail(c, KJIT_EINVAL, "invalid header %zu: it needs a name of 1 "
					       "to %d printable bytes and its data", i, KJ_NAME_MAX);
		if (h->size > KJ_HEADERS_MAX_TOTAL - total)
			return kj__client_fail(c, KJIT_ETOOBIG, "the headers are over the cap of %u bytes "
					       "in all", KJ_HEADERS_MAX_TOTAL);
		total += h->size;
	}
	return 0;
}

struct resolved {
	char target[KJ_TARGET_MAX];
	char version[KJ_VERSION_STR_MAX];
	const char *target_from;
	const char *version_from;
};

/* Fills rv from req, then from the environment for what req leaves open. */
static int resolve(kjit_client *c, const kjit_request *req, struct resolved *rv)
{
	char err[KJ_CLIENT_ERR_MAX / 2];

	memset(rv, 0, sizeof *rv);
	err[0] = '\0';
	if (!req->no_env && (req->target == NULL || req->runtime_version == NULL)) {
		int r = kj__resolve_env(req->backend, NULL, rv->target, &rv->target_from, rv->version,
					&rv->version_from, err, sizeof err);
		/* A bad variable matters only when the request needs it. */
		if (r < 0 && req->target == NULL)
			return kj__client_fail(c, r, "%s", err[0] ? err : kjit_strerror(r));
		if (r < 0)
			memset(rv, 0, sizeof *rv);
	}
	if (req->target) {
		snprintf(rv->target, sizeof rv->target, "%s", req->target);
		rv->target_from = NULL;
	}
	if (req->runtime_version) {
		snprintf(rv->version, sizeof rv->version, "%s", req->runtime_version);
		rv->version_from = NULL;
	}
	return 0;
}

static int put_strs(struct kj__buf *b, uint16_t tag, const char *const *v, size_t n)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = kj__msg_put_str(b, tag, v[i]);
	return r;
}

static int encode(struct kj__buf *b, const kjit_request *req, const struct resolved *rv, unsigned flags)
{
	int r = kj__client_begin(b, KJ_MSG_GET);
	if (r == 0)
		r = kj__msg_put_u32(b, KJ_F_BACKEND, (uint32_t)req->backend);
	if (r == 0 && (flags & KJ_GET_NO_COMPILE))
		r = kj__msg_put_u32(b, KJ_F_NO_COMPILE, 1);
	if (r == 0 && req->explain)
		r = kj__msg_put_u32(b, KJ_F_EXPLAIN, 1);
	if (r == 0 && (flags & KJ_GET_WANT_LOG))
		r = kj__msg_put_u32(b, KJ_F_WANT_LOG, 1);
	if (r == 0 && req->compiler)
		r = kj__msg_put_str(b, KJ_F_COMPILER, req->compiler);
	if (r == 0 && rv->target[0])
		r = kj__msg_put_str(b, KJ_F_TARGET, rv->target);
	if (r == 0 && rv->target[0] && rv->target_from)
		r = kj__msg_put_str(b, KJ_F_TARGET_SOURCE, rv->target_from);
	if (r == 0 && rv->version[0])
		r = kj__msg_put_str(b, KJ_F_VERSION, rv->version);
	if (r == 0 && req->kernel)
		r = kj__msg_put_str(b, KJ_F_KERNEL, req->kernel);
	if (r == 0 && req->source)
		r = kj__msg_put(b, KJ_F_SOURCE, req->source, req->source_size);
	if (r == 0 && req->source && req->source_name)
		r = kj__msg_put_str(b, KJ_F_SOURCE_NAME, req->source_name);
	if (r == 0)
		r = put_strs(b, KJ_F_ENTRY, req->entries, req->n_entries);
	if (r == 0)
		r = put_strs(b, KJ_F_OPTION, req->options, req->n_options);
	for (size_t i = 0; r == 0 && i < req->n_name_expressions; i++) {
		char o[KJ_NAME_MAX + sizeof KJ_NAME_EXPR_OPT];
		snprintf(o, sizeof o, "%s%s", KJ_NAME_EXPR_OPT, req->name_expressions[i]);
		r = kj__msg_put_str(b, KJ_F_OPTION, o);
	}
	for (size_t i = 0; r == 0 && i < req->n_headers; i++) {
		r = kj__msg_put_str(b, KJ_F_HEADER_NAME, req->headers[i].name);
		if (r == 0)
			r = kj__msg_put(b, KJ_F_HEADER_DATA, req->headers[i].data, req->headers[i].size);
	}
	return r ? r : kj__msg_end(b);
}

static int key_ok(const char *k)
{
	if (k == NULL || strlen(k) != KEY_HEX_LEN)
		return 0;
	return strspn(k, "0123456789abcdef") == KEY_HEX_LEN;
}

/* Moves a successful reply into res, its object into res->data or, with
 * sink, into the sink's buffer (res->data NULL); *obj is where it went.
 * With take, the object is not copied (res->data and *obj NULL: the
 * caller hands it the reply's buffer).  0 or KJIT_EPROTO / KJIT_ENOMEM. */
static int decode_ok(const struct kj__msg *m, kjit_result *res, const struct kj__sink *sink, int take,
		     uint8_t **obj)
{
	const struct kj__field *data = kj__msg_get(m, KJ_F_DATA);
	uint32_t status;
	char *key = NULL;

	int r = kj__field_u32(kj__msg_get(m, KJ_F_STATUS), &status);
	if (r == 0 && (status < KJIT_STATUS_HIT || status > KJIT_STATUS_REMOTE))
		r = KJIT_EPROTO;
	if (r == 0 && (data == NULL || data->len == 0 || data->len > KJ_OBJECT_MAX))
		r = KJIT_EPROTO;
	if (r == 0)
		r = kj__field_strdup(kj__msg_get(m, KJ_F_KEY), KEY_HEX_LEN, &key);
	if (r == 0 && !key_ok(key))
		r = KJIT_EPROTO;
	if (r == 0)
		r = kj__field_strdup(kj__msg_get(m, KJ_F_TARGET), KJ_TARGET_MAX, &res->target);
	if (r == 0)
		r = kj__field_strdup(kj__msg_get(m, KJ_F_VERSION), KJ_VERSION_STR_MAX,
				     &res->runtime_version);
	if (r == 0)
		r = kj__field_strdup(kj__msg_get(m, KJ_F_LOG), KJ_LOG_WIRE_MAX, &res->log);
	uint8_t *to = NULL;
	if (r == 0 && !take && (to = sink ? sink->alloc(sink->ctx, data->len) : malloc(data->len)) == NULL)
		r = KJIT_ENOMEM;
	if (r == 0) {
		if (!take)
			memcpy(to, data->p, data->len);
		res->data = sink ? NULL : to;
		*obj = to;
		res->size = data->len;
		memcpy(res->key, key, KEY_HEX_LEN + 1);
		res->status = (int)status;
	}
	free(key);
	return r;
}

/* Fills res->lowered_names, parallel to req's name expressions, from the
 * reply's LOWERED field (common/lowered.h), or, from a daemon older than
 * that field, from the "kjit: lowered name:" lines of its log.  0,
 * KJIT_EPROTO (a malformed field) or KJIT_ENOMEM. */
static int take_lowered(const kjit_request *req, const struct kj__msg *m, kjit_result *res)
{
	const struct kj__field *f = kj__msg_get(m, KJ_F_LOWERED);
	char *list = NULL, *rest = NULL;
	int r;

	if (req->n_name_expressions == 0)
		return 0;
	r = f ? kj__field_strdup(f, KJ_FRAME_MAX, &list) : kj__lowered_split_log(res->log, &rest, &list);
	free(rest);
	if (r == 0 && (res->lowered_names = calloc(req->n_name_expressions, sizeof *res->lowered_names)) == NULL)
		r = KJIT_ENOMEM;
	if (r == 0)
		res->n_lowered_names = req->n_name_expressions;
	for (size_t i = 0; r == 0 && i < req->n_name_expressions; i++)
		if (kj__lowered_find(list, req->name_expressions[i], &res->lowered_names[i]) < 0)
			r = KJIT_ENOMEM;
	free(list);
	return r;
}

/* Checks, resolves and encodes req (with flags, KJ_GET_*) into b.  0, or a
 * code with c->err set. */
int kj__get_prepare(kjit_client *c, const kjit_request *req, unsigned flags, struct kj__buf *b)
{
	struct resolved rv;
	kjit_request with_dirs;
	kjit_header *found = NULL;
	size_t n_found = 0;
	int r = request_check(c, req);

	/* -I: the headers found in the include directories join the request's. */
	if (r == 0 && req->n_include_dirs) {
		char why[512];
		if (req->include_dirs == NULL || req->n_include_dirs > KJ_CCOPTS_MAX)
			r = kj__client_fail(c, KJIT_EINVAL, "invalid include_dirs: at most %d", KJ_CCOPTS_MAX);
		else if ((r = kj__headers_from_dirs(req, req->include_dirs, req->n_include_dirs, &found, &n_found,
						    why, sizeof why)) < 0)
			kj__client_fail(c, r, "%s", why[0] ? why : kjit_strerror(r));
		with_dirs = *req;
		with_dirs.headers = found;
		with_dirs.n_headers = n_found;
		req = &with_dirs;
		if (r == 0)
			r = request_check(c, req);
	}
	if (r == 0)
		r = resolve(c, req, &rv);
	if (r == 0 && (r = encode(b, req, &rv, flags)) < 0)
		kj__client_fail(c, r, "the request is over the message cap of %u bytes: %s",
				KJ_FRAME_MAX, kjit_strerror(r));
	kj__headers_free(found, n_found);
	return r;
}


void kj__get_local_key(kjit_client *c, const kjit_request *req, const struct kj__buf *b,
		       struct kj__local_key *lk)
{
	/* The table holds no lowered names: a request with name expressions
	 * is answered by the memo (which keeps them) or the socket. */
	lk->named = req->n_name_expressions > 0;
	lk->want_log = 0;
	lk->gen = c->hits ? kj__hittab_reader_gen(c->hits) : 0;
	lk->sink = NULL;
	lk->ok = (c->memo || c->hits) &&
		 kj__sha256(b->p + KJ_FRAME_HDR_SIZE, b->len - KJ_FRAME_HDR_SIZE, lk->fp) == 0;
}

/* Answers from the process memo, then the shared hit table: 1 with res
 * filled, else 0 (res zeroed; the socket answers). */
int kj__get_local_answer(kjit_client *c, const struct kj__local_key *lk, kjit_result *res)
{
	struct kj__hit hit;

	if (!lk->ok)
		return 0;
	if (!lk->want_log && kj__procmemo_get_into(c->memo, lk->fp, lk->gen, res, lk->sink) > 0) {
		if (c->ctr) /* counted as a hit kjitd did not see (no slot) */
			kj__hitctr_count(c->ctr, UINT32_MAX, res->size);
		return 1;
	}
	if (lk->named || c->hits == NULL || kj__hittab_lookup_into(c->hits, lk->fp, &hit, lk->sink) != 0)
		return 0; /* absent, raced a rewrite, malformed: the socket */
	res->target = kj__strdup(hit.target);
	res->runtime_version = kj__strdup(hit.version);
	if (res->target == NULL || res->runtime_version == NULL) {
		if (!lk->sink)
			free(hit.data);
		kjit_result_free(res);
		return 0;
	}
	res->status = KJIT_STATUS_HIT;
	res->data = hit.data;
	res->size = hit.size;
	kj__hex(hit.key, res->key);
	kj__hitctr_count(c->ctr, hit.slot, hit.size);
	if (!lk->want_log)
		kj__procmemo_put(c->memo, lk->fp, lk->gen, res); /* ENOMEM: just not remembered */
	if (lk->sink)
		res->data = NULL; /* the sink's buffer, not res's */
	return 1;
}

/* Fills res from a reply whose CODE was code.  0 or the failure. */
int kj__get_take_reply(kjit_client *c, const kjit_request *req, const struct kj__msg *m, int code,
		       const struct kj__local_key *lk, kjit_result *res, uint8_t **body)
{
	uint8_t *obj = NULL;
	int r = 0;
	/* A large object takes the reply's own buffer (below). */
	const struct kj__field *d = kj__msg_get(m, KJ_F_DATA);
	int take = code >= 0 && lk->sink == NULL && body && *body && d && d->len >= KJ_RESULT_TAKE_MIN;

	if (code < 0) {
		r = code;
		/* The compiler's log of a failed compile; a bad one is dropped. */
		if (kj__field_strdup(kj__msg_get(m, KJ_F_LOG), KJ_LOG_WIRE_MAX, &res->log) < 0)
			res->log = NULL;
	} else if ((r = decode_ok(m, res, lk->sink, take, &obj)) < 0 || (r = take_lowered(req, m, res)) < 0 ||
		   (req->explain && (r = kj__field_strdup(kj__msg_get(m, KJ_F_EXPLAIN), KJ_LOG_WIRE_MAX,
							  &res->explain)) < 0)) {
		kjit_result_free(res);
		kj__client_fail(c, r == KJIT_ENOMEM ? r : KJIT_EPROTO, "kjitd sent a malformed answer "
				"to a get (%s); client and daemon versions may differ: restart kjitd",
				kjit_strerror(r));
		r = r == KJIT_ENOMEM ? r : KJIT_EPROTO;
	} else if (take) {
		/* The object moved to the front of the reply's buffer, which
		 * becomes the result's: its pages are resident, where a fresh
		 * buffer's would fault in one by one (0.9 ms of a 1 MB remote hit
		 * here).  m's fields point into it: read above, not after.  The
		 * process memo does not keep it: a later get of it is a hit in the
		 * shared table, a copy of the same size either way. */
		memmove(*body, d->p, d->len);
		res->data = *body;
		*body = NULL;
	} else if (lk->ok && !lk->want_log) {
		kjit_result kept = *res;
		kept.data = obj; /* res->data, or the sink's buffer */
		/* The reply's frame itself kept, not a second copy of the object,
		 * when little else is in it (the object is its last field). */
		size_t before = body && *body && d ? (size_t)(d->p - *body) : SIZE_MAX;
		if (before <= KJ_MEMO_ADOPT_SLACK) {
			kept.data = (uint8_t *)d->p;
			kj__procmemo_adopt(c->memo, lk->fp, lk->gen, &kept, body, before + d->len);
		} else {
			kj__procmemo_put(c->memo, lk->fp, lk->gen, &kept); /* ENOMEM: just not remembered */
		}
	}
	return r;
}

void kj__get_set_error(kjit_client *c, int r, kjit_result *res)
{
	free(res->error);
	res->error = kj__strdup(c->err[0] ? c->err : kjit_strerror(r));
	res->sys_errno = (r == KJIT_ECONNECT || r == KJIT_EIO) ? c->sys_errno : 0;
}

/* kjit_get with flags (KJ_GET_*), the object into sink's buffer when sink
 * is not NULL. */
static int get_one(kjit_client *c, const kjit_request *req, unsigned flags, const struct kj__sink *sink,
		   kjit_result *res)
{
	struct kj__buf b = { 0 };
	struct kj__msg m = { 0 };
	struct kj__local_key lk = { 0 };
	uint8_t *body = NULL;
	int code = 0;

	if (res == NULL)
		return KJIT_EINVAL;
	memset(res, 0, sizeof *res);
	if (c == NULL || req == NULL)
		return KJIT_EINVAL;
	c->err[0] = '\0';
	int r = kj__get_prepare(c, req, flags, &b);
	if (r == 0) {
		kj__get_local_key(c, req, &b, &lk);
		lk.want_log = (flags & KJ_GET_WANT_LOG) != 0;
		lk.sink = sink;
		if (kj__get_local_answer(c, &lk, res)) {
			kj__buf_free(&b);
			return 0;
		}
		if (sink && sink->id) /* a table answer given up (out of memory) may have set it */
			sink->id[0] = sink->id[1] = 0;
		r = kj__client_call(c, &b, &body, &m, &code);
	}
	if (r == 0)
		r = kj__get_take_reply(c, req, &m, code, &lk, res, &body);
	if (r < 0)
		kj__get_set_error(c, r, res);
	kj__msg_free(&m);
	free(body);
	kj__buf_free(&b);
	return r;
}

int kjit_get(kjit_client *c, const kjit_request *req, kjit_result *res)
{
	return get_one(c, req, 0, NULL, res);
}

int kj__get_flags(kjit_client *c, const kjit_request *req, unsigned flags, kjit_result *res)
{
	return get_one(c, req, flags, NULL, res);
}

int kj__get_into(kjit_client *c, const kjit_request *req, kjit_result *res, kj__get_alloc_fn *alloc, void *ctx)
{
	return kj__get_into_kept(c, req, res, alloc, NULL, ctx, NULL);
}

int kj__get_into_kept(kjit_client *c, const kjit_request *req, kjit_result *res, kj__get_alloc_fn *alloc,
		      kj__get_have_fn *have, void *ctx, uint64_t id[2])
{
	struct kj__sink sink = { alloc, ctx, have, id };

	if (id)
		id[0] = id[1] = 0;
	if (alloc == NULL)
		return get_one(c, req, 0, NULL, res);
	return get_one(c, req, 0, &sink, res);
}

void kjit_result_free(kjit_result *res)
{
	if (res == NULL)
		return;
	for (size_t i = 0; i < res->n_lowered_names; i++)
		free(res->lowered_names[i]);
	free(res->lowered_names);
	free(res->data);
	free(res->target);
	free(res->runtime_version);
	free(res->log);
	free(res->error);
	free(res->explain);
	memset(res, 0, sizeof *res);
}
