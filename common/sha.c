/* sha.c: SHA-256 through OpenSSL's EVP interface (see sha.h). */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "kj_types.h"
#include "sha.h"

struct kj__sha {
	EVP_MD_CTX *ctx;
};

int kj__sha_init(void)
{
	return OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) == 1 ? 0 : KJIT_EINTERNAL;
}

int kj__sha_new(struct kj__sha **out)
{
	return kj__sha_new_with(NULL, out);
}

int kj__sha_new_with(const struct kj__sha_alg *a, struct kj__sha **out)
{
	struct kj__sha *s = calloc(1, sizeof *s);

	if (s == NULL)
		return KJIT_ENOMEM;
	s->ctx = EVP_MD_CTX_new();
	if (s->ctx == NULL || EVP_DigestInit_ex(s->ctx, a ? (const EVP_MD *)a : EVP_sha256(), NULL) != 1) {
		kj__sha_free(s);
		return KJIT_ENOMEM;
	}
	*out = s;
	return 0;
}

int kj__sha_update(struct kj__sha *s, const void *p, size_t n)
{
	return EVP_DigestUpdate(s->ctx, p, n) == 1 ? 0 : KJIT_EINTERNAL;
}

int kj__sha_final(struct kj__sha *s, uint8_t out[KJ_SHA256_LEN])
{
	unsigned int n = 0;
	return EVP_DigestFinal_ex(s->ctx, out, &n) == 1 && n == KJ_SHA256_LEN ? 0 : KJIT_EINTERNAL;
}

void kj__sha_free(struct kj__sha *s)
{
	if (s == NULL)
		return;
	EVP_MD_CTX_free(s->ctx);
	free(s);
}

int kj__sha256(const void *p, size_t n, uint8_t out[KJ_SHA256_LEN])
{
	unsigned int len = 0;
	return EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 && len == KJ_SHA256_LEN ? 0 : KJIT_EINTERNAL;
}

/* The handle is the EVP_MD itself: the struct is never defined. */
int kj__sha_alg_new(struct kj__sha_alg **out)
{
	EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);

	*out = (struct kj__sha_alg *)md;
	return md ? 0 : KJIT_EINTERNAL;
}

void kj__sha_alg_free(struct kj__sha_alg *a)
{
	EVP_MD_free((EVP_MD *)a);
}

int kj__sha256_with(const struct kj__sha_alg *a, const void *p, size_t n, uint8_t out[KJ_SHA256_LEN])
{
	unsigned int len = 0;

	if (a == NULL)
		return kj__sha256(p, n, out);
	return EVP_Digest(p, n, out, &len, (const EVP_MD *)a, NULL) == 1 && len == KJ_SHA256_LEN ? 0 :
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
