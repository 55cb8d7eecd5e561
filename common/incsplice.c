/* incsplice.c: the include scan's lexer, translation phases 1 and 2
 * (kj__inc_splice: trigraphs, line splices), with the variants of issue 30
 * (common/include.c scans what it returns; include-int.h declares it).
 * Pure: no state, no file system.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "include-int.h"
#include "kj_types.h"

/* The lexer's variants (issue 30): clang and gcc also splice a backslash
 * followed by blanks before the newline (with a warning), NVRTC's and
 * glslang's lexers may not; trigraphs ("??=" for '#') are replaced under
 * ISO modes (-std=c++14, not gnu++14) and not otherwise.  The scan takes
 * the union: a file holding either is scanned once per variant. */
/* Trigraph ??c's replacement, or 0. */
static char trigraph(uint8_t c)
{
	static const char from[] = "=/'()!<>-", to[] = "#\\^[]|{}~";
	const char *f = c ? strchr(from, c) : NULL;
	return f ? to[f - from] : 0;
}

/* The length of a splice at src[i] (a backslash): backslash-newline (or
 * CRLF), or with KJ_SPLICE_BLANKS blanks between them; 0 if none.  *blanks is
 * set when blanks would make one. */
static size_t splice_len(const uint8_t *src, size_t i, size_t len, int flags, int *blanks)
{
	size_t j = i + 1;

	while (j < len && (src[j] == ' ' || src[j] == '\t' || src[j] == '\f' || src[j] == '\v'))
		j++;
	size_t nl = j < len && src[j] == '\n' ? 1 : j + 1 < len && src[j] == '\r' && src[j + 1] == '\n' ? 2 : 0;
	if (nl == 0)
		return 0;
	if (j > i + 1) {
		*blanks = 1;
		if (!(flags & KJ_SPLICE_BLANKS))
			return 0;
	}
	return j + nl - i;
}

/* Translation phases 1 and 2 into a malloc'd, NUL-terminated copy:
 * trigraphs replaced (with KJ_SPLICE_TRIGRAPHS), then backslash-newline pairs
 * removed.  *seen gets the variants this file has (KJ_SPLICE_BLANKS: a
 * backslash and blanks before a newline; KJ_SPLICE_TRIGRAPHS: a trigraph).
 * Line numbers in errors count the spliced text. */
int kj__inc_splice(const uint8_t *src, size_t len, int flags, char **out, size_t *outlen, int *seen)
{
	char *p = malloc(len + 1);
	uint8_t *tri = NULL;
	size_t i = 0, k = 0;
	int blanks = 0;

	if (p == NULL)
		return KJIT_ENOMEM;
	*seen = 0;
	/* memchr is vectorised (memmem of "??" is not: it doubled the scan) */
	for (const uint8_t *q = src, *e = src + len; len >= 3 && q + 2 < e && (q = memchr(q, '?', (size_t)(e - q - 2))); q++)
		if (q[1] == '?' && trigraph(q[2])) {
			*seen |= KJ_SPLICE_TRIGRAPHS;
			break;
		}
	if ((flags & KJ_SPLICE_TRIGRAPHS) && (*seen & KJ_SPLICE_TRIGRAPHS)) {
		size_t w = 0;
		if ((tri = malloc(len + 1)) == NULL) {
			free(p);
			return KJIT_ENOMEM;
		}
		for (size_t r = 0; r < len; r++) {
			char t = r + 2 < len && src[r] == '?' && src[r + 1] == '?' ? trigraph(src[r + 2]) : 0;
			tri[w++] = t ? (uint8_t)t : src[r];
			r += t ? 2 : 0;
		}
		src = tri;
		len = w;
	}
	while (i < len) { /* copy up to the next backslash in one go */
		const uint8_t *b = memchr(src + i, '\\', len - i);
		size_t e = b ? (size_t)(b - src) : len;
		memcpy(p + k, src + i, e - i);
		k += e - i;
		i = e;
		if (i >= len)
			break;
		size_t sl = splice_len(src, i, len, flags, &blanks);
		if (sl)
			i += sl;
		else
			p[k++] = (char)src[i++];
	}
	p[k] = '\0';
	free(tri);
	*seen |= blanks ? KJ_SPLICE_BLANKS : 0;
	*out = p;
	*outlen = k;
	return 0;
}
