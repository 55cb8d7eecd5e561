/* sha.c: SHA-256 through OpenSSL's SHA256_* functions (see sha.h).
 *
 * Not through EVP: OpenSSL 3 builds its provider and algorithm tables the
 * first time a process fetches any algorithm, about 4 ms of a short
 * process's life on the 2-core VM (a `kjit get` hit as a process took
 * 8.6 ms, 4 of them there: bench/rounds.md, "Issue 35, round thirteen"),
 * and looks the digest up again in every EVP_Digest that names it.  The SHA256_* functions run the
 * same assembly (SHA instructions or AVX2, chosen when libcrypto loads)
 * with no set-up at all.  OpenSSL 3 marks them deprecated, not removed (as
 * 4.0 still ships them); the warning is silenced in this file alone.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "kj_types.h"
#include "sha.h"

struct kj__sha {
	SHA256_CTX ctx;
};

int kj__sha_init(void)
{
	return OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) == 1 ? 0 : KJIT_EINTERNAL;
}

int kj__sha_new(struct kj__sha **out)
{
	struct kj__sha *s = malloc(sizeof *s);

	if (s == NULL)
		return KJIT_ENOMEM;
	if (SHA256_Init(&s->ctx) != 1) {
		free(s);
		return KJIT_EINTERNAL;
	}
	*out = s;
	return 0;
}

int kj__sha_update(struct kj__sha *s, const void *p, size_t n)
{
	return SHA256_Update(&s->ctx, p, n) == 1 ? 0 : KJIT_EINTERNAL;
}

int kj__sha_final(struct kj__sha *s, uint8_t out[KJ_SHA256_LEN])
{
	return SHA256_Final(out, &s->ctx) == 1 ? 0 : KJIT_EINTERNAL;
}

void kj__sha_free(struct kj__sha *s)
{
	free(s);
}

int kj__sha256(const void *p, size_t n, uint8_t out[KJ_SHA256_LEN])
{
	SHA256_CTX ctx;

	return SHA256_Init(&ctx) == 1 && SHA256_Update(&ctx, p, n) == 1 && SHA256_Final(out, &ctx) == 1 ? 0 :
	       KJIT_EINTERNAL;
}

void kj__hex(const uint8_t d[KJ_SHA256_LEN], char hex[KJ_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < KJ_SHA256_LEN; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[KJ_SHA256_HEX_LEN] = '\0';
}

int kj__hex_ok(const char *s)
{
	size_t n = strlen(s);

	if (n != KJ_SHA256_HEX_LEN)
		return 0;
	return strspn(s, "0123456789abcdef") == n;
}
