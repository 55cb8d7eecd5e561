/* bundle-int.h: what bundle.c (import) and bundle-export.c (export)
 * share: the bundle format's constants and tags (docs/bundle.md) and its
 * little-endian integers.  Private to those two files.
 */
#ifndef KJ_BUNDLE_INT_H
#define KJ_BUNDLE_INT_H

#include <stdint.h>

#define BUNDLE_MAGIC "KJITBNDL"
#define BUNDLE_VERSION 1
#define BUNDLE_HDR_SIZE 24           /* magic, version, count, manifest length */
#define BUNDLE_RECORD_MAX (1u << 20) /* one entry's metadata, its log included */
#define BUNDLE_ENTRIES_MAX 10000000u
/* The least a valid record takes: its length, the headers of its twelve
 * fields, two 64-digit hex strings and three u64s.  Bounds the entry count
 * by the manifest's length before anything is allocated for it. */
#define BUNDLE_RECORD_MIN (4 + 12 * 6 + 2 * 64 + 3 * 8)

enum bundle_tag {
	B_KEY = 1, B_BACKEND, B_TARGET, B_VERSION, B_EXT, B_SIZE, B_SHA256, B_SOURCE_NAME,
	B_OPTIONS, B_COMPILER, B_COMPILE_MS, B_LOG,
	B_LOWERED, /* optional: a bundle of older kjit has its lowered names in B_LOG */
};

static inline void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static inline void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static inline uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static inline uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

#endif /* KJ_BUNDLE_INT_H */
