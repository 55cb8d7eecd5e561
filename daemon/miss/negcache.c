/* negcache.c: failed compiles remembered for a few seconds, so that 100
 * processes starting with the same broken source cause one compile, not
 * 100 (the flight table joins only requests that overlap in time; these
 * come one after another, each after the last one's failure).
 *
 * An entry is the cache key of a request whose compile the compiler
 * rejected (KJIT_ECOMPILE: the source's fault, not a crashed or timed-out
 * worker), with the one-line error and the log the clients got.  It is
 * served until ttl_ms have passed since the failure; then the next request
 * compiles again (the user may have fixed the compiler's environment, not
 * the source).  The key covers every byte the compile read, so a changed
 * source or header is another key and compiles at once.  At most
 * KJ_NEGCACHE_MAX entries, the oldest replaced first.  Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

struct neg_ent {
	char key[65];
	int code;
	uint64_t until_us;   /* served while kj__now_us() < until_us; 0: empty */
	char *line;
	char *log;
};

struct kj__negcache {
	struct neg_ent e[KJ_NEGCACHE_MAX];
	size_t next;         /* slot the next failure takes */
	uint64_t ttl_us;
};

int kj__negcache_new(struct kj__negcache **out, unsigned ttl_ms)
{
	struct kj__negcache *n = calloc(1, sizeof *n);

	*out = NULL;
	if (n == NULL)
		return KJIT_ENOMEM;
	n->ttl_us = (uint64_t)ttl_ms * 1000u;
	*out = n;
	return 0;
}

static void ent_clear(struct neg_ent *e)
{
	free(e->line);
	free(e->log);
	memset(e, 0, sizeof *e);
}

void kj__negcache_free(struct kj__negcache *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < KJ_NEGCACHE_MAX; i++)
		ent_clear(&n->e[i]);
	free(n);
}

void kj__negcache_put(struct kj__negcache *n, const char *key, int code, const char *line, const char *log)
{
	if (n == NULL || n->ttl_us == 0 || key == NULL || strlen(key) != 64)
		return;
	struct neg_ent *e = NULL;
	for (size_t i = 0; i < KJ_NEGCACHE_MAX && e == NULL; i++)
		if (n->e[i].until_us && strcmp(n->e[i].key, key) == 0)
			e = &n->e[i];
	if (e == NULL) {
		e = &n->e[n->next];
		n->next = (n->next + 1) % KJ_NEGCACHE_MAX;
	}
	ent_clear(e);
	e->line = kj__strdup(line ? line : kjit_strerror(code));
	e->log = log ? kj__strdup(log) : NULL;
	if (e->line == NULL || (log && e->log == NULL)) {
		ent_clear(e); /* out of memory: not remembered, compiled again */
		return;
	}
	memcpy(e->key, key, 65);
	e->code = code;
	e->until_us = kj__now_us() + n->ttl_us;
}

int kj__negcache_get(struct kj__negcache *n, const char *key, int *code, const char **line, const char **log)
{
	if (n == NULL || n->ttl_us == 0 || key == NULL)
		return 0;
	uint64_t now = kj__now_us();
	for (size_t i = 0; i < KJ_NEGCACHE_MAX; i++) {
		struct neg_ent *e = &n->e[i];
		if (e->until_us == 0 || strcmp(e->key, key) != 0)
			continue;
		if (now >= e->until_us) {
			ent_clear(e);
			return 0;
		}
		*code = e->code;
		*line = e->line;
		*log = e->log;
		return 1;
	}
	return 0;
}
