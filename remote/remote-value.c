/* remote-value.c: the bytes of one value in the fleet's Redis, and their
 * authentication (docs/remote.md, "Keys and values" and "Trust").
 *
 * Two layouts.  KJO1 (read only, by nodes without a secret):
 *   "KJO1" | u64 size | u32 log | u32 recipe | sha256[32] | object | log | recipe
 * KJO2 (what every node writes):
 *   "KJO2" | u32 flags | u64 size | u32 meta | u32 entries | u32 lowered
 *   | u32 log | u32 recipe | u32 mac | sha256[32]
 *   | meta | entries | lowered | object | log | recipe | mac
 * little-endian; mac is, without a secret, 0 bytes (a node before round
 * seven of issue 35) or 32: the checksum trailer "KJC1" | IV(12, zeros) |
 * tag(16) of AES-256-GMAC under a public key (CK_KEY's 32 ASCII bytes)
 * over the same input as the MAC below: a check against corruption
 * that costs ~0.15 ms a MiB where the object's SHA-256 costs 2.6 on a CPU
 * without SHA extensions; older nodes without a secret do not check a mac
 * and hash the object as before (docs/remote.md, "The unsigned value's
 * checksum"); or, with a secret, over
 * u32 len(redis key) | redis key | every byte of the value before the mac
 * (its header included, so no length or field can change without breaking
 * it), under the fleet secret: flags 1 (what nodes write since issue 35):
 * 28 bytes, IV(12) | tag(16) of AES-256-GMAC (GCM with that input as its
 * additional data and no text), a random IV per value, the AES key
 * HMAC-SHA256(secret, u32 0 | GMAC_LABEL) (kj__remote_hmac with an empty
 * key name); flags 0 (before): 32 bytes of
 * HMAC-SHA256(secret, ...).  GMAC because the HMAC is a SHA-256 pass over
 * the whole value: 2.8 ms per MiB on a CPU without SHA extensions, where
 * GMAC (AES-NI, carry-less multiply) costs ~0.3 (docs/remote.md).  Both are
 * read; a node before issue 35 counts a flags-1 value as corrupt and
 * compiles (its HMAC value then overwrites it: recompiles during a rolling
 * upgrade, never a wrong answer).
 *
 * Invariants:
 *  - Every length is checked against its cap (kj_limits.h) and against the
 *    value's size before anything is read through it; a value whose parts
 *    do not add up exactly, whose object does not hash to its digest, or
 *    whose meta, entries or lowered names are not NUL-free text is
 *    KJIT_ECORRUPT.
 *  - With a secret, only a KJO2 value with a mac that verifies for its key
 *    (compared in constant time) is accepted; KJO1, no mac or a wrong one
 *    is KJIT_EDENIED (forged): nothing of it reaches a caller.  The mac is
 *    checked right after the framing, before the object is hashed, so a
 *    planted value (up to ~130 MiB) costs a secret node no SHA-256 of it:
 *    a KJO1 or unsigned one nothing past its header.  Without a
 *    secret both layouts are read and the mac, if any, is not checked;
 *    a checksum trailer that matches stands for the object's hash, any
 *    other value (no trailer, or one that does not match) is hashed.
 *  - A value whose mac verified is not hashed at all: its digest is
 *    under the mac, so it is what a holder of the secret wrote (who could
 *    as well have signed any object), and the object cannot have changed
 *    since; the SHA-256 would cost as much again as the HMAC (0.6 ms a
 *    MiB).  Without a secret the object is hashed and checked.
 *  - Decoding never copies: the object's fields point into the value.
 *  - OpenSSL 3 looks an algorithm named by EVP_aes_256_gcm() or "HMAC" up
 *    in its providers at every use (a lock, a hash table, an allocation):
 *    a backend fetches both once (kj__remote_algs_new, in its handle) and
 *    passes them to the _with calls; without them (NULL, the plain calls)
 *    each use looks them up, for the same bytes.  The handle also keys
 *    the GMAC's contexts once (the public checksum's; the secret's, with
 *    kj__remote_algs_key): a value then sets only its IV.
 */
#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "remote.h"
#include "sha.h"

#define V1_HDR (4 + 8 + 4 + 4 + KJ_SHA256_LEN)
#define V2_HDR (4 + 4 + 8 + 6 * 4 + KJ_SHA256_LEN)
#define MAC_LEN KJ_SHA256_LEN /* HMAC-SHA256, flags 0 */
#define F_GMAC 1u              /* flags: the mac is AES-256-GMAC */
#define GMAC_IV 12
#define GMAC_TAG 16
#define GMAC_LEN (GMAC_IV + GMAC_TAG)
#define GMAC_LABEL "kjit fleet value GMAC key v1"
#define CK_MAGIC "KJC1"                         /* an unsigned value's checksum trailer */
#define CK_KEY "kjit public value checksum key 1" /* its GMAC's 32-byte key: public, so no authentication */
_Static_assert(sizeof CK_KEY - 1 == 32, "CK_KEY is an AES-256 key");

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* ck and sk: AES-256-GCM contexts keyed once (the key schedule, OpenSSL's
 * context and provider set-up: ~6 us of a cold 16 KiB remote hit's ~27 us
 * decode on the 2-core VM, issue 35 round thirteen; with a secret also the
 * HMAC that derives the key); a use sets only the IV, so the handle is
 * one thread's at a time (remote.h): the Redis backend's, on kjitd's loop. */
struct kj__remote_algs {
	EVP_MAC *hmac;
	EVP_CIPHER *gcm;             /* AES-256-GCM */
	EVP_CIPHER_CTX *ck;          /* keyed with CK_KEY */
	EVP_CIPHER_CTX *sk;          /* keyed with secret's GMAC key (kj__remote_algs_key), or NULL */
	uint8_t *secret;             /* sk's secret, to match a caller's */
	size_t secret_len;
};

static EVP_CIPHER_CTX *keyed(const EVP_CIPHER *gcm, const uint8_t key[32])
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

	if (ctx && (EVP_EncryptInit_ex(ctx, gcm, NULL, NULL, NULL) != 1 ||
		    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, GMAC_IV, NULL) != 1 ||
		    EVP_EncryptInit_ex(ctx, NULL, NULL, key, NULL) != 1)) {
		EVP_CIPHER_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

int kj__remote_algs_new(struct kj__remote_algs **out)
{
	struct kj__remote_algs *a = calloc(1, sizeof *a);

	*out = NULL;
	if (a == NULL)
		return KJIT_ENOMEM;
	a->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	a->gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
	if (a->hmac == NULL || a->gcm == NULL || (a->ck = keyed(a->gcm, (const uint8_t *)CK_KEY)) == NULL) {
		kj__remote_algs_free(a);
		return KJIT_EINTERNAL;
	}
	*out = a;
	return 0;
}

int kj__remote_algs_key(struct kj__remote_algs *a, const uint8_t *secret, size_t secret_len)
{
	uint8_t key[KJ_SHA256_LEN];
	int r;

	if (a->sk || secret == NULL || secret_len == 0)
		return KJIT_EINVAL;
	if ((a->secret = malloc(secret_len)) == NULL)
		return KJIT_ENOMEM;
	memcpy(a->secret, secret, secret_len);
	a->secret_len = secret_len;
	r = kj__remote_hmac_with(a, secret, secret_len, "", (const uint8_t *)GMAC_LABEL, strlen(GMAC_LABEL), key);
	if (r == 0 && (a->sk = keyed(a->gcm, key)) == NULL)
		r = KJIT_EINTERNAL;
	OPENSSL_cleanse(key, sizeof key);
	return r;
}

void kj__remote_algs_free(struct kj__remote_algs *a)
{
	if (a == NULL)
		return;
	EVP_MAC_free(a->hmac);
	EVP_CIPHER_free(a->gcm);
	EVP_CIPHER_CTX_free(a->ck);
	EVP_CIPHER_CTX_free(a->sk);
	if (a->secret)
		OPENSSL_cleanse(a->secret, a->secret_len);
	free(a->secret);
	free(a);
}

int kj__remote_hmac(const uint8_t *secret, size_t secret_len, const char *rkey, const uint8_t *v, size_t n,
		    uint8_t out[KJ_SHA256_LEN])
{
	return kj__remote_hmac_with(NULL, secret, secret_len, rkey, v, n, out);
}

int kj__remote_hmac_with(const struct kj__remote_algs *a, const uint8_t *secret, size_t secret_len, const char *rkey,
			 const uint8_t *v, size_t n, uint8_t out[KJ_SHA256_LEN])
{
	EVP_MAC *fetched = a ? NULL : EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC *mac = a ? a->hmac : fetched;
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	OSSL_PARAM params[2] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
				 OSSL_PARAM_construct_end() };
	uint8_t klen[4];
	size_t outl = 0;
	int r = KJIT_EINTERNAL;

	put_le(klen, strlen(rkey), 4);
	if (ctx && EVP_MAC_init(ctx, secret, secret_len, params) == 1 && EVP_MAC_update(ctx, klen, 4) == 1 &&
	    EVP_MAC_update(ctx, (const uint8_t *)rkey, strlen(rkey)) == 1 && EVP_MAC_update(ctx, v, n) == 1 &&
	    EVP_MAC_final(ctx, out, &outl, KJ_SHA256_LEN) == 1 && outl == KJ_SHA256_LEN)
		r = 0;
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(fetched);
	return r;
}

/* AES-256-GMAC with iv over u32 len(rkey) | rkey | v[0..n) through ctx,
 * keyed (its IV set here): the tag into tag.  0 or KJIT_EINTERNAL. */
static int gmac_run(EVP_CIPHER_CTX *ctx, const char *rkey, const uint8_t *v, size_t n, const uint8_t iv[GMAC_IV],
		    uint8_t tag[GMAC_TAG])
{
	uint8_t klen[4];
	int outl = 0;

	put_le(klen, strlen(rkey), 4);
	return EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv) == 1 && EVP_EncryptUpdate(ctx, NULL, &outl, klen, 4) == 1 &&
			       EVP_EncryptUpdate(ctx, NULL, &outl, (const uint8_t *)rkey, (int)strlen(rkey)) == 1 &&
			       n <= INT_MAX && EVP_EncryptUpdate(ctx, NULL, &outl, v, (int)n) == 1 &&
			       EVP_EncryptFinal_ex(ctx, NULL, &outl) == 1 &&
			       EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, GMAC_TAG, tag) == 1
		       ? 0
		       : KJIT_EINTERNAL;
}

/* gmac_run through a context keyed here with key. */
static int gmac_key(const struct kj__remote_algs *a, const uint8_t key[32], const char *rkey, const uint8_t *v,
		    size_t n, const uint8_t iv[GMAC_IV], uint8_t tag[GMAC_TAG])
{
	EVP_CIPHER_CTX *ctx = keyed(a ? a->gcm : EVP_aes_256_gcm(), key);
	int r = ctx ? gmac_run(ctx, rkey, v, n, iv, tag) : KJIT_EINTERNAL;

	EVP_CIPHER_CTX_free(ctx);
	return r;
}

/* The public checksum's GMAC (CK_KEY). */
static int gmac_ck(const struct kj__remote_algs *a, const char *rkey, const uint8_t *v, size_t n,
		   const uint8_t iv[GMAC_IV], uint8_t tag[GMAC_TAG])
{
	if (a != NULL) /* keyed at algs_new */
		return gmac_run(a->ck, rkey, v, n, iv, tag);
	return gmac_key(NULL, (const uint8_t *)CK_KEY, rkey, v, n, iv, tag);
}

/* The GMAC under the key derived from secret (GMAC_LABEL): a's keyed
 * context when it was keyed with this secret, else derived here. */
static int gmac(const struct kj__remote_algs *a, const uint8_t *secret, size_t secret_len, const char *rkey,
		const uint8_t *v, size_t n, const uint8_t iv[GMAC_IV], uint8_t tag[GMAC_TAG])
{
	uint8_t key[KJ_SHA256_LEN];
	int r;

	if (a && a->sk && a->secret_len == secret_len && CRYPTO_memcmp(a->secret, secret, secret_len) == 0)
		return gmac_run(a->sk, rkey, v, n, iv, tag);
	r = kj__remote_hmac_with(a, secret, secret_len, "", (const uint8_t *)GMAC_LABEL, strlen(GMAC_LABEL), key);
	if (r == 0)
		r = gmac_key(a, key, rkey, v, n, iv, tag);
	OPENSSL_cleanse(key, sizeof key);
	return r;
}

size_t kj__remote_value_size(const struct kj__remote_object *o, int signed_)
{
	return V2_HDR + o->meta_len + o->entries_len + o->lowered_len + o->size + o->log_len + o->recipe_len +
	       (signed_ ? GMAC_LEN : MAC_LEN);
}

static int part_ok(const char *p, size_t n, size_t cap)
{
	return n <= cap && (n == 0 || p != NULL);
}

int kj__remote_value_encode(const char *rkey, const struct kj__remote_object *o, const uint8_t *secret,
			    size_t secret_len, struct kj__buf *b)
{
	return kj__remote_value_encode_with(NULL, rkey, o, secret, secret_len, b);
}

int kj__remote_value_encode_with(const struct kj__remote_algs *a, const char *rkey, const struct kj__remote_object *o,
				 const uint8_t *secret, size_t secret_len, struct kj__buf *b)
{
	uint8_t hdr[V2_HDR], dg[KJ_SHA256_LEN], mac[GMAC_LEN];
	size_t start = b->len;
	int r;

	if (!part_ok(o->meta, o->meta_len, KJ_REMOTE_META_MAX) ||
	    !part_ok(o->entries, o->entries_len, KJ_REMOTE_ENTRIES_MAX) ||
	    !part_ok(o->lowered, o->lowered_len, KJ_LOWERED_MAX) || !part_ok(o->log, o->log_len, KJ_REMOTE_LOG_MAX) ||
	    !part_ok((const char *)o->recipe, o->recipe_len, KJ_FRAME_MAX) ||
	    !part_ok((const char *)o->data, o->size, KJ_REMOTE_OBJECT_MAX) || !kj__hex_ok(o->digest))
		return KJIT_EINVAL;
	for (int i = 0; i < KJ_SHA256_LEN; i++) {
		unsigned hi = (unsigned)(o->digest[2 * i] <= '9' ? o->digest[2 * i] - '0' : o->digest[2 * i] - 'a' + 10);
		unsigned lo = (unsigned)(o->digest[2 * i + 1] <= '9' ? o->digest[2 * i + 1] - '0'
								      : o->digest[2 * i + 1] - 'a' + 10);
		dg[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(hdr, "KJO2", 4);
	put_le(hdr + 4, secret ? F_GMAC : 0, 4);
	put_le(hdr + 8, o->size, 8);
	put_le(hdr + 16, o->meta_len, 4);
	put_le(hdr + 20, o->entries_len, 4);
	put_le(hdr + 24, o->lowered_len, 4);
	put_le(hdr + 28, o->log_len, 4);
	put_le(hdr + 32, o->recipe_len, 4);
	put_le(hdr + 36, secret ? GMAC_LEN : MAC_LEN, 4);
	memcpy(hdr + 40, dg, KJ_SHA256_LEN);
	if (kj__buf_append(b, hdr, sizeof hdr) < 0 || kj__buf_append(b, o->meta, o->meta_len) < 0 ||
	    kj__buf_append(b, o->entries, o->entries_len) < 0 || kj__buf_append(b, o->lowered, o->lowered_len) < 0 ||
	    kj__buf_append(b, o->data, o->size) < 0 || kj__buf_append(b, o->log, o->log_len) < 0 ||
	    kj__buf_append(b, o->recipe, o->recipe_len) < 0)
		return KJIT_ENOMEM;
	if (secret == NULL) { /* the checksum trailer: "KJC1" | IV (zeros) | tag under the public key */
		uint8_t ck[MAC_LEN] = CK_MAGIC;
		if ((r = gmac_ck(a, rkey, b->p + start, b->len - start, ck + 4, ck + 4 + GMAC_IV)) < 0)
			return r;
		return kj__buf_append(b, ck, MAC_LEN) < 0 ? KJIT_ENOMEM : 0;
	}
	if (RAND_bytes(mac, GMAC_IV) != 1)
		return KJIT_EINTERNAL;
	if ((r = gmac(a, secret, secret_len, rkey, b->p + start, b->len - start, mac, mac + GMAC_IV)) < 0)
		return r;
	return kj__buf_append(b, mac, GMAC_LEN) < 0 ? KJIT_ENOMEM : 0;
}

/* 1 if p[0..n) has no NUL (meta, lowered names) or, with list, is NUL-
 * terminated names back to back (entries). */
static int text_ok(const uint8_t *p, size_t n, int list)
{
	if (!list)
		return memchr(p, '\0', n) == NULL;
	return n == 0 || (p[n - 1] == '\0' && p[0] != '\0' && memmem(p, n, "\0\0", 2) == NULL);
}

static int decode_v1(const uint8_t *v, size_t n, struct kj__remote_object *o)
{
	if (n < V1_HDR)
		return KJIT_ECORRUPT;
	uint64_t size = get_le(v + 4, 8), log_len = get_le(v + 12, 4), rec_len = get_le(v + 16, 4);
	if (size > n || log_len > n || rec_len > n || V1_HDR + size + log_len + rec_len != n)
		return KJIT_ECORRUPT;
	o->format = 1;
	o->data = v + V1_HDR;
	o->size = (size_t)size;
	o->log = (const char *)v + V1_HDR + size;
	o->log_len = (size_t)log_len;
	o->recipe = v + V1_HDR + size + log_len;
	o->recipe_len = (size_t)rec_len;
	memcpy(o->raw_digest, v + 20, KJ_SHA256_LEN);
	return 0;
}

/* flags and mac length: flags 0 with no mac or an HMAC (32), F_GMAC with
 * a GMAC (28); anything else is corrupt. */
static int mac_ok(uint64_t flags, uint64_t mac)
{
	return flags == 0 ? mac == 0 || mac == MAC_LEN : flags == F_GMAC && mac == GMAC_LEN;
}

static int decode_v2(const uint8_t *v, size_t n, struct kj__remote_object *o, size_t *mac_len)
{
	if (n < V2_HDR)
		return KJIT_ECORRUPT;
	uint64_t size = get_le(v + 8, 8), meta = get_le(v + 16, 4), ents = get_le(v + 20, 4), low = get_le(v + 24, 4),
		 log = get_le(v + 28, 4), rec = get_le(v + 32, 4), mac = get_le(v + 36, 4);
	if (size > KJ_REMOTE_OBJECT_MAX || meta > KJ_REMOTE_META_MAX || ents > KJ_REMOTE_ENTRIES_MAX ||
	    low > KJ_LOWERED_MAX || log > KJ_REMOTE_LOG_MAX || rec > KJ_FRAME_MAX || !mac_ok(get_le(v + 4, 4), mac) ||
	    V2_HDR + meta + ents + low + size + log + rec + mac != n)
		return KJIT_ECORRUPT;
	const uint8_t *p = v + V2_HDR;
	o->format = 2;
	o->meta = (const char *)p;
	o->meta_len = (size_t)meta;
	o->entries = (const char *)(p += meta);
	o->entries_len = (size_t)ents;
	o->lowered = (const char *)(p += ents);
	o->lowered_len = (size_t)low;
	o->data = (p += low);
	o->size = (size_t)size;
	o->log = (const char *)(p += size);
	o->log_len = (size_t)log;
	o->recipe = (p += log);
	o->recipe_len = (size_t)rec;
	memcpy(o->raw_digest, v + 40, KJ_SHA256_LEN);
	*mac_len = (size_t)mac;
	if (!text_ok((const uint8_t *)o->meta, o->meta_len, 0) || !text_ok((const uint8_t *)o->entries, o->entries_len, 1) ||
	    !text_ok((const uint8_t *)o->lowered, o->lowered_len, 0))
		return KJIT_ECORRUPT;
	return 0;
}

/* Without a secret: 1 if v[0..n) ends in a checksum trailer (mac_len 32
 * starting with CK_MAGIC) whose tag matches, 0 if not (no trailer: an
 * older node's value; a trailer that does not match: corrupt, or an HMAC
 * that happens to start with the magic; the object is hashed either way),
 * KJIT_EINTERNAL. */
static int checksum_ok(const struct kj__remote_algs *a, const char *rkey, const uint8_t *v, size_t n, size_t mac_len)
{
	uint8_t tag[GMAC_TAG];
	const uint8_t *t = v + n - MAC_LEN;

	if (mac_len != MAC_LEN || memcmp(t, CK_MAGIC, 4) != 0)
		return 0;
	if (gmac_ck(a, rkey, v, n - MAC_LEN, t + 4, tag) < 0)
		return KJIT_EINTERNAL;
	return memcmp(tag, t + 4 + GMAC_IV, GMAC_TAG) == 0;
}

int kj__remote_value_decode(const char *rkey, const uint8_t *v, size_t n, const uint8_t *secret, size_t secret_len,
			    struct kj__remote_object *o)
{
	return kj__remote_value_decode_with(NULL, rkey, v, n, secret, secret_len, o);
}

int kj__remote_value_decode_with(const struct kj__remote_algs *a, const char *rkey, const uint8_t *v, size_t n,
				 const uint8_t *secret, size_t secret_len, struct kj__remote_object *o)
{
	uint8_t dg[KJ_SHA256_LEN], mac[MAC_LEN];
	size_t mac_len = 0;
	int ok;
	int r = KJIT_ECORRUPT;

	memset(o, 0, sizeof *o);
	if (n >= 4 && memcmp(v, "KJO1", 4) == 0)
		r = decode_v1(v, n, o);
	else if (n >= 4 && memcmp(v, "KJO2", 4) == 0)
		r = decode_v2(v, n, o, &mac_len);
	if (r < 0)
		return r;
	if (secret != NULL) { /* first: a forged value costs no hashing of its object */
		if (o->format != 2 || mac_len == 0 || (mac_len == MAC_LEN && memcmp(v + n - MAC_LEN, CK_MAGIC, 4) == 0))
			return KJIT_EDENIED; /* unsigned: no mac, or the checksum trailer (an HMAC starting so: 2^-32) */
		if (mac_len == GMAC_LEN) { /* flags F_GMAC (decode_v2) */
			r = gmac(a, secret, secret_len, rkey, v, n - GMAC_LEN, v + n - GMAC_LEN, mac);
			ok = r == 0 && CRYPTO_memcmp(mac, v + n - GMAC_TAG, GMAC_TAG) == 0;
		} else { /* an HMAC value, written before issue 35 */
			r = kj__remote_hmac_with(a, secret, secret_len, rkey, v, n - MAC_LEN, mac);
			ok = r == 0 && CRYPTO_memcmp(mac, v + n - MAC_LEN, MAC_LEN) == 0;
		}
		if (r < 0)
			return r;
		if (!ok)
			return KJIT_EDENIED;
	}
	if (secret != NULL) { /* the digest is under the mac: the signer's word, not hashed again */
		kj__hex(o->raw_digest, o->digest);
		o->authenticated = 1;
		return 0;
	}
	if ((r = checksum_ok(a, rkey, v, n, mac_len)) != 0) { /* the trailer matched: not hashed */
		if (r < 0)
			return r;
		kj__hex(o->raw_digest, o->digest);
		o->checksummed = 1;
		return 0;
	}
	if (kj__sha256(o->data, o->size, dg) < 0)
		return KJIT_EINTERNAL;
	if (memcmp(dg, o->raw_digest, KJ_SHA256_LEN) != 0)
		return KJIT_ECORRUPT;
	kj__hex(dg, o->digest);
	return 0;
}
