/* sha.h: SHA-256 through OpenSSL's EVP interface, one-shot and streaming. */
#ifndef KJ_SHA_H
#define KJ_SHA_H

#include <stddef.h>
#include <stdint.h>

#define KJ_SHA256_LEN 32
#define KJ_SHA256_HEX_LEN 64

struct kj__sha;  /* streaming context (opaque; wraps EVP_MD_CTX) */
struct kj__sha_alg;

int kj__sha_new(struct kj__sha **out);
/* kj__sha_new through a, SHA-256 fetched once (kj__sha_alg_new; NULL: as
 * kj__sha_new, looked up again).  0, or KJIT_ENOMEM. */
int kj__sha_new_with(const struct kj__sha_alg *a, struct kj__sha **out);
int kj__sha_update(struct kj__sha *s, const void *p, size_t n);
/* Finishes into out[32]; the context is then spent (free it). */
int kj__sha_final(struct kj__sha *s, uint8_t out[KJ_SHA256_LEN]);
void kj__sha_free(struct kj__sha *s);

/* Loads OpenSSL's configuration and algorithms on the calling thread.  A
 * process that hashes on threads it does not join before exit (kjitd's
 * libuv pool) calls it first on its main thread: OpenSSL's one-time set-up
 * then never runs, and leaves its state, on a pool thread.  0 or
 * KJIT_EINTERNAL. */
int kj__sha_init(void);

/* One shot.  0 or KJIT_EINTERNAL. */
int kj__sha256(const void *p, size_t n, uint8_t out[KJ_SHA256_LEN]);

/* SHA-256 fetched once from OpenSSL's providers (opaque; wraps EVP_MD).
 * OpenSSL 3 looks the algorithm up again in every EVP_Digest given
 * EVP_sha256() (a lock, a hash table, an allocation: ~0.4-0.7 us here,
 * against ~1.2 us for the digest of a 300-byte request), so a caller that
 * hashes on its hot path (libkjit's fast hit) keeps one.  A handle may be
 * used by several threads at once. */
/* 0, with *out set; KJIT_EINTERNAL when OpenSSL has no SHA-256 provider
 * (the caller may go on with kj__sha256, out NULL). */
int kj__sha_alg_new(struct kj__sha_alg **out);
void kj__sha_alg_free(struct kj__sha_alg *a);
/* One shot through a (NULL: as kj__sha256).  0 or KJIT_EINTERNAL. */
int kj__sha256_with(const struct kj__sha_alg *a, const void *p, size_t n, uint8_t out[KJ_SHA256_LEN]);
/* Writes 64 lowercase hex digits and a NUL into hex[65]. */
void kj__hex(const uint8_t d[KJ_SHA256_LEN], char hex[KJ_SHA256_HEX_LEN + 1]);
/* 1 if s is exactly 64 lowercase hex digits. */
int kj__hex_ok(const char *s);

#endif /* KJ_SHA_H */
