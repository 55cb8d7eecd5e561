/* redis-url.c: the --remote URL, parsed into a struct kj__redis_url, and
 * the description of it that logs and `kjit ping` show.
 *
 * Invariants:
 *  - Accepted: redis://[[user:]password@]host[:port][/db] (host may be a
 *    [v6addr]) and unix://[[user:]password@]/path[?db=N].  rediss:// is
 *    refused with a line saying why (Debian 12's hiredis 0.14 has no TLS).
 *  - The userinfo ends at the last '@' before the first '/': a '/' or '@'
 *    in a password is percent-encoded, and a socket path may hold '@'.
 *    User and password are percent-decoded; a bad escape or %00 is refused.
 *  - No error message and no description repeats the URL or any part of
 *    its userinfo: it may hold a password.
 *  - On success u owns its strings; on failure u holds nothing (freed and
 *    zeroed), so the caller frees only after a success.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_limits.h"
#include "kj_types.h"
#include "redis-int.h"
#include "util.h"

/* Percent-decodes [s, s+n) into a new string; NULL on a bad escape or
 * no memory. */
static char *pct_decode(const char *s, size_t n)
{
	char *o = malloc(n + 1), *w = o;

	for (size_t i = 0; o && i < n; i++) {
		unsigned v;
		if (s[i] != '%') {
			*w++ = s[i];
			continue;
		}
		if (n - i < 3 || !isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2]) ||
		    sscanf(s + i + 1, "%2x", &v) != 1 || v == 0) {
			free(o);
			return NULL;
		}
		*w++ = (char)v;
		i += 2;
	}
	if (o)
		*w = '\0';
	return o;
}

static int parse_num(const char *s, size_t n, long max, int *out)
{
	long v = 0;
	if (n == 0 || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = (int)v;
	return 0;
}

/* The scheme: sets *is_unix and *rest (what follows "//"). */
static int url_scheme(const char *s, int *is_unix, const char **rest, char *err, size_t errlen)
{
	if (s == NULL || *s == '\0')
		return kj__remote_seterr(err, errlen, "empty remote URL");
	if (strlen(s) > KJ_REMOTE_URL_MAX)
		return kj__remote_seterr(err, errlen, "remote URL too long");
	if (strncmp(s, "rediss://", 9) == 0)
		return kj__remote_seterr(err, errlen, "TLS is not supported: Debian 12's hiredis 0.14 has no TLS "
					 "(use a Unix socket, a private network, or a stunnel/spiped tunnel)");
	*is_unix = strncmp(s, "unix://", 7) == 0;
	if (!*is_unix && strncmp(s, "redis://", 8) != 0)
		return kj__remote_seterr(err, errlen,
					 "expected redis://[[user:]password@]host[:port][/db] or unix:///path");
	*rest = s + (*is_unix ? 7 : 8);
	return 0;
}

/* [user:]password@ at *p, if any (an empty user is none:
 * redis://:pw@host); moves *p past it. */
static int url_userinfo(const char **p, struct kj__redis_url *u, char *err, size_t errlen)
{
	const char *s = *p, *slash = strchr(s, '/'), *at = NULL;
	const char *limit = slash ? slash : s + strlen(s);

	for (const char *q = s; q < limit; q++)
		if (*q == '@')
			at = q;
	if (at == NULL)
		return 0;
	size_t n = (size_t)(at - s);
	const char *colon = memchr(s, ':', n);
	if (colon) {
		size_t un = (size_t)(colon - s);
		if (un && (u->user = pct_decode(s, un)) == NULL)
			return kj__remote_seterr(err, errlen, "bad percent-escape in user or password");
		n -= un + 1;
		s = colon + 1;
	}
	if ((u->password = pct_decode(s, n)) == NULL)
		return kj__remote_seterr(err, errlen, "bad percent-escape in user or password");
	*p = at + 1;
	return 0;
}

/* /path[?db=N] */
static int url_unix(const char *p, struct kj__redis_url *u, char *err, size_t errlen)
{
	const char *q = strchr(p, '?');
	size_t n = q ? (size_t)(q - p) : strlen(p);

	if (n < 2 || p[0] != '/')
		return kj__remote_seterr(err, errlen, "expected an absolute socket path: unix:///path/redis.sock");
	if ((u->path = kj__strndup(p, n)) == NULL)
		return KJIT_ENOMEM;
	if (q && (strncmp(q, "?db=", 4) != 0 || parse_num(q + 4, strlen(q + 4), 1 << 20, &u->db) < 0))
		return kj__remote_seterr(err, errlen, "expected ?db=N after the socket path");
	return 0;
}

/* Splits [p, hend) into the host (*h, *hn: without the brackets of an
 * [IPv6 address]) and where the port begins (*portp, NULL: none). */
static int url_hostport(const char *p, const char *hend, const char **h, size_t *hn, const char **portp, char *err,
			size_t errlen)
{
	*h = p;
	*hn = 0;
	*portp = NULL;
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(hend - p));
		if (rb == NULL)
			return kj__remote_seterr(err, errlen, "unterminated [IPv6 address]");
		*h = p + 1;
		*hn = (size_t)(rb - *h);
		if (rb + 1 < hend) {
			if (rb[1] != ':')
				return kj__remote_seterr(err, errlen, "expected :port after ]");
			*portp = rb + 2;
		}
		return 0;
	}
	const char *colon = memchr(p, ':', (size_t)(hend - p));
	*hn = (size_t)((colon ? colon : hend) - p);
	*portp = colon ? colon + 1 : NULL;
	return 0;
}

/* host[:port][/db] */
static int url_tcp(const char *p, struct kj__redis_url *u, char *err, size_t errlen)
{
	const char *slash = strchr(p, '/');
	const char *hend = slash ? slash : p + strlen(p), *h, *portp;
	size_t hn = 0;
	int r;

	if ((r = url_hostport(p, hend, &h, &hn, &portp, err, errlen)) < 0)
		return r;
	if (hn == 0)
		return kj__remote_seterr(err, errlen, "no host");
	if (portp && (parse_num(portp, (size_t)(hend - portp), 65535, &u->port) < 0 || u->port == 0))
		return kj__remote_seterr(err, errlen, "port must be a number from 1 to 65535");
	if (slash && slash[1] != '\0' && parse_num(slash + 1, strlen(slash + 1), 1 << 20, &u->db) < 0)
		return kj__remote_seterr(err, errlen, "database must be a number after the /");
	for (size_t i = 0; i < hn; i++)
		if (h[i] == '@' || h[i] == '/' || h[i] == '?' || (unsigned char)h[i] <= ' ')
			return kj__remote_seterr(err, errlen, "bad character in host");
	if ((u->host = kj__strndup(h, hn)) == NULL)
		return KJIT_ENOMEM;
	return 0;
}

int kj__redis_url_parse(const char *s, struct kj__redis_url *u, char *err, size_t errlen)
{
	const char *p = NULL;
	int is_unix = 0, r;

	memset(u, 0, sizeof *u);
	u->port = 6379;
	if ((r = url_scheme(s, &is_unix, &p, err, errlen)) < 0)
		return r;
	if ((r = url_userinfo(&p, u, err, errlen)) == 0)
		r = is_unix ? url_unix(p, u, err, errlen) : url_tcp(p, u, err, errlen);
	if (r < 0)
		kj__redis_url_free(u);
	return r;
}

void kj__redis_url_free(struct kj__redis_url *u)
{
	if (u == NULL)
		return;
	free(u->host);
	free(u->path);
	free(u->user);
	free(u->password);
	memset(u, 0, sizeof *u);
}

char *kj__redis_url_describe(const struct kj__redis_url *u)
{
	if (u->path)
		return kj__asprintf("unix://%s?db=%d", u->path, u->db);
	return kj__asprintf(strchr(u->host, ':') ? "redis://[%s]:%d/%d" : "redis://%s:%d/%d", u->host, u->port, u->db);
}
