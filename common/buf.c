/* buf.c: the growable byte buffer (see buf.h).  Capacity doubles from 256
 * bytes; a failed growth leaves the buffer as it was, so the caller can
 * still free it.  Every allocation goes through the buffer's own table
 * (b->alloc, alloc.h), so tests can fail any one of them.  No state. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "kj_types.h"

int kj__buf_reserve(struct kj__buf *b, size_t n)
{
	if (b->cap - b->len >= n)
		return 0;
	if (n > SIZE_MAX / 2 - b->len)
		return KJIT_ENOMEM;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	uint8_t *p = kj__alloc_or_libc(b->alloc)->realloc(b->p, cap);
	if (p == NULL)
		return KJIT_ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int kj__buf_append(struct kj__buf *b, const void *p, size_t n)
{
	int r = kj__buf_reserve(b, n);
	if (r < 0)
		return r;
	if (n > 0)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

void kj__buf_free(struct kj__buf *b)
{
	if (b == NULL)
		return;
	kj__alloc_or_libc(b->alloc)->free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int kj__json_str(struct kj__buf *b, const char *s)
{
	int r = kj__buf_append(b, "\"", 1);

	for (; r == 0 && s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			r = kj__buf_append(b, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof esc, "\\u%04x", c);
			r = kj__buf_append(b, esc, 6);
		} else {
			r = kj__buf_append(b, s, 1);
		}
	}
	return r ? r : kj__buf_append(b, "\"", 1);
}

int kj__buf_printf(struct kj__buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256];

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return KJIT_EINVAL;
	if ((size_t)n < sizeof small)
		return kj__buf_append(b, small, (size_t)n);
	int r = kj__buf_reserve(b, (size_t)n + 1);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *kj__words_join(const char *const *v, size_t n)
{
	struct kj__buf b = { 0 };

	for (size_t i = 0; i < n; i++)
		if ((i && kj__buf_append(&b, " ", 1) < 0) || kj__buf_append(&b, v[i], strlen(v[i])) < 0) {
			kj__buf_free(&b);
			return NULL;
		}
	if (kj__buf_append(&b, "", 1) < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}
