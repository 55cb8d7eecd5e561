/* replay.c: `kjit warm --replay`: compile again, for the current compiler
 * and runtime version, every (recipe, target) whose object was used in the
 * last N days, so that the first job after a ROCm or driver upgrade starts
 * warm, as Fossilize replay does for Vulkan pipelines.
 *
 * A recipe is the GET frame a request would send, without its target and
 * version: the source and headers (or the bundled kernel's name), entry
 * points and options.  The miss makes it when a flight opens
 * (miss-help.c) and its publish stores it, content-addressed, with the object
 * (publish.c, cache/recipe.c).  Replay feeds each recipe,
 * with the target the object was built for, through the ordinary GET path
 * on an internal connection, and answers the admin client once every
 * request has been answered.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"
#include "sha.h"
#include "util.h"

#define REPLAY_DAYS_DEFAULT 7
#define REPLAY_DAYS_MAX 3650
#define REPLAY_MAX 100000 /* (recipe, target) pairs one replay handles */

struct item {
	char recipe[65];
	char target[KJ_TARGET_MAX];
};

struct replay {
	struct kj__daemon *d;
	struct kj__conn *admin;      /* the client waiting for the summary */
	uint32_t admin_id;
	struct kj__conn *self;       /* internal connection the GETs answer on */
	struct item *items;
	size_t n, cap;
	size_t answered;
	uint64_t compiled, cached, failed;
	struct kj__buf failures;     /* one line per failure */
	int64_t since;               /* recipes of objects used at or after (unix seconds) */
};

int kj__replay_days_parse(const char *arg, unsigned *days)
{
	char *end;

	*days = REPLAY_DAYS_DEFAULT;
	if (arg == NULL || *arg == '\0')
		return 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (*end != '\0' || v == 0 || v > REPLAY_DAYS_MAX)
		return KJIT_EINVAL;
	*days = (unsigned)v;
	return 0;
}

static int collect(const char *recipe, int backend, const char *target, void *arg)
{
	struct replay *rp = arg;

	(void)backend;
	if (rp->n == REPLAY_MAX)
		return 1;
	if (rp->n == rp->cap) {
		size_t cap = rp->cap ? rp->cap * 2 : 64;
		struct item *it = realloc(rp->items, cap * sizeof *it);
		if (it == NULL)
			return KJIT_ENOMEM;
		rp->items = it;
		rp->cap = cap;
	}
	snprintf(rp->items[rp->n].recipe, sizeof rp->items[rp->n].recipe, "%s", recipe);
	snprintf(rp->items[rp->n].target, sizeof rp->items[rp->n].target, "%s", target);
	rp->n++;
	return 0;
}

static void finish(struct replay *rp)
{
	struct kj__buf b = { 0 }, text = { 0 }, json = { 0 };
	int r;

	r = kj__buf_printf(&text, "replay: %zu recipes: %llu compiled, %llu already cached, %llu failed\n", rp->n,
			   (unsigned long long)rp->compiled, (unsigned long long)rp->cached,
			   (unsigned long long)rp->failed);
	if (rp->failures.len)
		r |= kj__buf_append(&text, rp->failures.p, rp->failures.len);
	r |= kj__buf_append(&text, "", 1);
	r |= kj__buf_printf(&json, "{\"recipes\":%zu,\"compiled\":%llu,\"cached\":%llu,\"failed\":%llu}", rp->n,
			    (unsigned long long)rp->compiled, (unsigned long long)rp->cached,
			    (unsigned long long)rp->failed);
	r |= kj__buf_append(&json, "", 1);
	if (r == 0 && kj__msg_begin(&b, KJ_MSG_REPLY, rp->admin_id) == 0 &&
	    kj__msg_put_i32(&b, KJ_F_CODE, rp->failed ? KJIT_ECOMPILE : 0) == 0 &&
	    kj__msg_put_str(&b, KJ_F_TEXT, (char *)text.p) == 0 && kj__msg_put_str(&b, KJ_F_JSON, (char *)json.p) == 0 &&
	    (rp->failed == 0 || kj__msg_put_str(&b, KJ_F_ERROR, "replay: some recipes failed to compile") == 0))
		kj__conn_send(rp->admin, &b);
	else
		kj__buf_free(&b);
	kj__log(rp->d, "replay: %zu recipes, %llu compiled, %llu cached, %llu failed", rp->n,
		(unsigned long long)rp->compiled, (unsigned long long)rp->cached, (unsigned long long)rp->failed);
	kj__buf_free(&text);
	kj__buf_free(&json);
	kj__buf_free(&rp->failures);
	kj__conn_unref(rp->admin);
	if (rp->self)
		kj__conn_unref(rp->self);
	free(rp->items);
	free(rp);
}

/* Each GET's reply arrives here (body of a REPLY frame). */
static void on_reply(void *arg, const uint8_t *body, size_t len)
{
	struct replay *rp = arg;
	struct kj__msg m;
	int32_t code = KJIT_EPROTO;
	uint32_t status = 0;

	if (kj__msg_decode(body, len, &m) == 0) {
		kj__field_i32(kj__msg_get(&m, KJ_F_CODE), &code);
		kj__field_u32(kj__msg_get(&m, KJ_F_STATUS), &status);
		if (code < 0) {
			char *err = NULL;
			kj__field_strdup(kj__msg_get(&m, KJ_F_ERROR), 1024, &err);
			kj__buf_printf(&rp->failures, "failed: %s\n", err ? err : kjit_strerror(code));
			free(err);
		}
		kj__msg_free(&m);
	}
	if (code < 0)
		rp->failed++;
	else if (status == KJIT_STATUS_HIT)
		rp->cached++;
	else
		rp->compiled++;
	if (++rp->answered == rp->n)
		finish(rp);
}

/* Sends one recipe, with its target, through the GET path. */
static void submit(struct replay *rp, size_t i)
{
	struct kj__daemon *d = rp->d;
	struct kj__buf b = { 0 };
	struct kj__frame_hdr h;
	uint8_t *frame = NULL;
	size_t len = 0;
	int r = kj__cache_recipe_load(d->cache, rp->items[i].recipe, &frame, &len);

	if (r == 0 && (len < KJ_FRAME_HDR_SIZE || kj__frame_hdr_decode(frame, &h) < 0 || h.type != KJ_MSG_GET ||
		       h.len != len - KJ_FRAME_HDR_SIZE))
		r = KJIT_ECORRUPT;
	if (r == 0)
		r = kj__buf_append(&b, frame, len);
	if (r == 0)
		r = kj__msg_put_str(&b, KJ_F_TARGET, rp->items[i].target);
	if (r == 0)
		r = kj__msg_end(&b);
	if (r == 0) /* answers, unless the body does not decode */
		r = kj__handle_get(d, rp->self, (uint32_t)i, b.p + KJ_FRAME_HDR_SIZE, b.len - KJ_FRAME_HDR_SIZE);
	if (r < 0) {
		struct kj__buf e = { 0 };
		if (kj__msg_begin(&e, KJ_MSG_REPLY, (uint32_t)i) == 0 && kj__msg_put_i32(&e, KJ_F_CODE, r) == 0 &&
		    kj__msg_put_str(&e, KJ_F_ERROR, "recipe unreadable; it was skipped") == 0)
			on_reply(rp, e.p + KJ_FRAME_HDR_SIZE, e.len - KJ_FRAME_HDR_SIZE);
		kj__buf_free(&e);
	}
	kj__buf_free(&b);
	free(frame);
}

static void replay_start(void *arg);

void kj__handle_replay(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *arg)
{
	struct replay *rp = calloc(1, sizeof *rp);
	unsigned days;

	if (rp == NULL) {
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		return;
	}
	if (kj__replay_days_parse(arg, &days) < 0) {
		kj__conn_error(c, id, KJIT_EINVAL, "replay: '%s' is not a number of days (1 to %d)", arg, REPLAY_DAYS_MAX);
		free(rp);
		return;
	}
	rp->d = d;
	rp->admin = c;
	rp->admin_id = id;
	rp->since = kj__wall_s() - (int64_t)days * 86400;
	kj__conn_ref(c);
	/* what was just compiled has its recipe once its publish is done */
	kj__publish_when_idle(d, replay_start, rp);
}

static void replay_start(void *arg)
{
	struct replay *rp = arg;
	struct kj__daemon *d = rp->d;
	struct kj__conn *c = rp->admin;
	uint32_t id = rp->admin_id;
	int r = kj__cache_recipes(d->cache, rp->since, collect, rp);
	if (r < 0) {
		kj__conn_error(c, id, r, "replay: cannot read the recipes from the index: %s", kjit_strerror(r));
		rp->n = 0;
		rp->failed = 0;
		kj__conn_unref(c);
		free(rp->items);
		free(rp);
		return;
	}
	if (rp->n == 0) {
		finish(rp);
		return;
	}
	rp->self = kj__conn_internal(d, on_reply, rp);
	if (rp->self == NULL) {
		kj__conn_error(c, id, KJIT_ENOMEM, "kjitd is out of memory; retry later");
		kj__conn_unref(c);
		free(rp->items);
		free(rp);
		return;
	}
	/* The last reply may come synchronously (a hit) and free rp. */
	size_t n = rp->n;
	kj__conn_ref(rp->self);
	struct kj__conn *self = rp->self;
	for (size_t i = 0; i < n; i++)
		submit(rp, i);
	kj__conn_unref(self);
}
