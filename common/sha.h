/* sha.h: SHA-256 through OpenSSL (its SHA256_* functions, not EVP: sha.c
 * says why), one-shot and streaming.  Safe on any thread; no set-up. */
#ifndef KJ_SHA_H
#define KJ_SHA_H

#include <stddef.h>
#include <stdint.h>

#define KJ_SHA256_LEN 32
#define KJ_SHA256_HEX_LEN 64

struct kj__sha; /* streaming context (opaque; wraps SHA256_CTX) */

/* 0 with *out a new context, KJIT_ENOMEM or KJIT_EINTERNAL. */
int kj__sha_new(struct kj__sha **out);
int kj__sha_update(struct kj__sha *s, const void *p, size_t n);
/* Finishes into out[32]; the context is then spent (free it). */
int kj__sha_final(struct kj__sha *s, uint8_t out[KJ_SHA256_LEN]);
void kj__sha_free(struct kj__sha *s);

/* Loads OpenSSL's configuration and algorithms on the calling thread, for
 * the EVP users of a process that also runs threads it does not join
 * before exit (kjitd: remote/'s HMAC and GCM, its libuv pool): OpenSSL's
 * one-time set-up then never runs, and leaves its state, on a pool thread.
 * The functions here need none of it.  0 or KJIT_EINTERNAL. */
int kj__sha_init(void);

/* One shot.  0 or KJIT_EINTERNAL. */
int kj__sha256(const void *p, size_t n, uint8_t out[KJ_SHA256_LEN]);

/* Writes 64 lowercase hex digits and a NUL into hex[65]. */
void kj__hex(const uint8_t d[KJ_SHA256_LEN], char hex[KJ_SHA256_HEX_LEN + 1]);
/* 1 if s is exactly 64 lowercase hex digits. */
int kj__hex_ok(const char *s);

#endif /* KJ_SHA_H */
