/* symbols.c: the entry points an object really has, so that `--entry NAME`
 * is checked instead of trusted (a misspelt name used to "compile" and add a
 * cache entry that could never be launched).
 *
 * Four formats: an ELF (AMDGPU code object or CUDA cubin): the defined
 * global or weak STT_FUNC symbols of its .symtab; PTX text: the names after
 * ".entry"; SPIR-V: the names of its OpEntryPoint instructions; a CUDA
 * fatbin (nvcc --fatbin): those of its first uncompressed ELF entry, else
 * of its first uncompressed PTX entry.  Every read is bounds-checked
 * against the object's length: the object comes from a compiler, not from
 * us.  An object whose symbols cannot be listed (an ELF without .symtab, a
 * fatbin whose entries are all compressed) is not judged.  No state outside
 * the call.
 *
 * The fatbin layout (as CUDA's fatbinary tool writes it; little-endian): a
 * 16-byte header {u32 magic 0xBA55ED50, u16 version 1, u16 header size,
 * u64 size of what follows}, then entries, each a header {u16 kind (1 PTX,
 * 2 ELF), u16 version, u32 header size, u64 payload size, u32 compressed
 * size (0: not compressed), ..., u64 flags at 40 (0x2000 LZ4, 0x8000 zstd
 * compression)} and its payload.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "compint.h"
#include "entrylist.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

typedef int (*sym_fn)(const char *name, size_t len, void *arg);

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* Calls fn for each defined function symbol of a 64-bit little-endian ELF.
 * 1 if it has a symbol table, 0 if not, or fn's non-zero answer. */
static int elf_symbols(const uint8_t *p, size_t n, sym_fn fn, void *arg)
{
	uint64_t shoff = rd64(p + 40);
	uint16_t shentsize = rd16(p + 58), shnum = rd16(p + 60);
	int seen = 0;

	if (shentsize < 64 || shoff > n || (uint64_t)shnum * shentsize > n - shoff)
		return 0;
	for (uint16_t i = 0; i < shnum; i++) {
		const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
		if (rd32(sh + 4) != 2) /* SHT_SYMTAB */
			continue;
		uint64_t off = rd64(sh + 24), size = rd64(sh + 32), entsize = rd64(sh + 56);
		uint32_t link = rd32(sh + 40);
		if (link >= shnum || entsize < 24 || off > n || size > n - off)
			continue;
		const uint8_t *str = p + shoff + (uint64_t)link * shentsize;
		uint64_t soff = rd64(str + 24), ssize = rd64(str + 32);
		if (soff > n || ssize > n - soff)
			continue;
		seen = 1;
		for (uint64_t k = 0; k + entsize <= size; k += entsize) {
			const uint8_t *s = p + off + k;
			uint32_t name = rd32(s);
			uint8_t type = s[4] & 0xf, bind = s[4] >> 4;
			if (type != 2 || (bind != 1 && bind != 2) || rd16(s + 6) == 0 || name >= ssize)
				continue;
			const char *nm = (const char *)p + soff + name;
			const void *nul = memchr(nm, '\0', ssize - name);
			if (nul == NULL)
				continue;
			int r = fn(nm, (size_t)((const char *)nul - nm), arg);
			if (r)
				return r;
		}
	}
	return seen;
}

/* The same for PTX text: ".entry NAME(". */
static int ptx_symbols(const uint8_t *p, size_t n, sym_fn fn, void *arg)
{
	const char *s = (const char *)p, *end = s + n, *q = s;

	while ((q = memmem(q, (size_t)(end - q), ".entry", 6)) != NULL) {
		q += 6;
		if (q >= end || (*q != ' ' && *q != '\t'))
			continue;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		const char *b = q;
		while (q < end && *q != '(' && *q != ' ' && *q != '\t' && *q != '\n' && *q != '\0')
			q++;
		int r = q > b ? fn(b, (size_t)(q - b), arg) : 0;
		if (r)
			return r;
	}
	return 1;
}

/* The same for SPIR-V: OpEntryPoint (opcode 15) ExecutionModel, id, name. */
static int spirv_symbols(const uint8_t *p, size_t n, sym_fn fn, void *arg)
{
	for (size_t off = 20; off + 4 <= n;) {
		uint32_t w = rd32(p + off);
		size_t wc = w >> 16;
		if (wc == 0 || wc * 4 > n - off)
			break;
		if ((w & 0xffff) == 15 && wc > 3) {
			const char *nm = (const char *)p + off + 12;
			const void *nul = memchr(nm, '\0', (wc - 3) * 4);
			if (nul) {
				int r = fn(nm, (size_t)((const char *)nul - nm), arg);
				if (r)
					return r;
			}
		}
		off += wc * 4;
	}
	return 1;
}

#define FATBIN_HDR 16
#define FATBIN_ENTRY_HDR 48        /* the fields read below: up to the flags */
#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define FATBIN_COMPRESSED 0xa000u  /* LZ4 (0x2000) or zstd (0x8000) */

/* One entry of a fatbin. */
struct fat_entry {
	unsigned kind;
	int compressed;
	const uint8_t *payload;
	size_t len;
};

/* Walks a fatbin: calls fn for each entry until it returns non-zero.  The
 * number of entries (or fn's answer), or -1 if p[0..n) is not a whole,
 * well-formed fatbin. */
static int fatbin_walk(const uint8_t *p, size_t n, int (*fn)(const struct fat_entry *e, void *arg), void *arg)
{
	if (n < FATBIN_HDR || rd32(p) != KJ_FATBIN_MAGIC || rd16(p + 4) != 1 || rd16(p + 6) < FATBIN_HDR)
		return -1;
	uint64_t off = rd16(p + 6), size = rd64(p + 8);
	if (off > n || size > n - off)
		return -1;
	uint64_t end = off + size;
	int count = 0;
	while (off < end) {
		const uint8_t *h = p + off;
		if (end - off < FATBIN_ENTRY_HDR)
			return -1;
		uint64_t hs = rd32(h + 4), len = rd64(h + 8);
		if (hs < FATBIN_ENTRY_HDR || hs > end - off || len > end - off - hs || count == INT_MAX - 1)
			return -1;
		struct fat_entry e = { rd16(h), rd32(h + 16) != 0 || (rd64(h + 40) & FATBIN_COMPRESSED) != 0,
				       h + hs, (size_t)len };
		count++;
		int r = fn ? fn(&e, arg) : 0;
		if (r)
			return r;
		off += hs + len;
	}
	return count;
}

static int count_code(const struct fat_entry *e, void *arg)
{
	*(int *)arg += e->kind == FATBIN_KIND_PTX || e->kind == FATBIN_KIND_ELF;
	return 0;
}

int kj__fatbin_is(const uint8_t *p, size_t n)
{
	int code = 0;

	return p != NULL && fatbin_walk(p, n, count_code, &code) > 0 && code > 0;
}

/* The first uncompressed entry of the kind wanted. */
struct fat_pick {
	unsigned kind;
	const uint8_t *p;
	size_t n;
};

static int pick(const struct fat_entry *e, void *arg)
{
	struct fat_pick *k = arg;

	if (e->kind != k->kind || e->compressed)
		return 0;
	if (e->kind == FATBIN_KIND_ELF && (e->len < 64 || memcmp(e->payload, "\177ELF", 4) != 0))
		return 0;
	k->p = e->payload;
	k->n = e->len;
	return 1;
}

static int ptx_symbols(const uint8_t *p, size_t n, sym_fn fn, void *arg);

static int fatbin_symbols(const uint8_t *p, size_t n, sym_fn fn, void *arg)
{
	struct fat_pick k = { FATBIN_KIND_ELF, NULL, 0 };

	/* fatbin_walk's answer is also its count of entries: k.p says if one
	 * was picked (a one-entry fatbin answers 1 either way) */
	if (fatbin_walk(p, n, pick, &k) > 0 && k.p != NULL)
		return elf_symbols(k.p, k.n, fn, arg);
	k.kind = FATBIN_KIND_PTX;
	if (fatbin_walk(p, n, pick, &k) > 0 && k.p != NULL)
		return ptx_symbols(k.p, k.n, fn, arg);
	return 0;
}

static int for_each_entry(const uint8_t *p, size_t n, sym_fn fn, void *arg)
{
	if (kj__fatbin_is(p, n))
		return fatbin_symbols(p, n, fn, arg);
	if (n >= 64 && memcmp(p, "\177ELF", 4) == 0 && p[4] == 2 && p[5] == 1)
		return elf_symbols(p, n, fn, arg);
	if (n >= 20 && n % 4 == 0 && rd32(p) == KJ_SPIRV_MAGIC)
		return spirv_symbols(p, n, fn, arg);
	if (n > 0 && memchr(p, '\0', n) == p + n - 1 && memmem(p, n, ".version", 8) != NULL)
		return ptx_symbols(p, n, fn, arg);
	return 0;
}

struct find {
	const char *want;
	struct kj__buf *list;
};

static int match(const char *name, size_t len, void *arg)
{
	struct find *f = arg;

	if (f->list) {
		if (f->list->len < 400)
			kj__buf_printf(f->list, "%s%.*s", f->list->len ? ", " : "", (int)len, name);
		return 0;
	}
	return strlen(f->want) == len && memcmp(f->want, name, len) == 0 ? 2 : 0;
}

int kj__entries_check(const uint8_t *obj, size_t len, const char *const *entries, size_t n, char *err,
		      size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		struct find f = { entries[i], NULL };
		int r = for_each_entry(obj, len, match, &f);
		if (r == 0)
			return 0; /* symbols not listable: not judged */
		if (r == 2)
			continue;
		struct kj__buf list = { 0 };
		f.list = &list;
		for_each_entry(obj, len, match, &f);
		snprintf(err, errlen, "no entry point '%s' in the object; it has: %.*s%s", entries[i],
			 list.len ? (int)list.len : 4, list.len ? (const char *)list.p : "none",
			 list.len >= 400 ? ", ..." : "");
		kj__buf_free(&list);
		return KJIT_ECOMPILE;
	}
	return 0;
}

/* Appends each requestable name (kj__name_ok), "NAME\n"; 2 past the cap. */
struct collect {
	struct kj__buf *b;
	int nomem;
};

static int collect(const char *name, size_t len, void *arg)
{
	struct collect *k = arg;
	char nm[KJ_NAME_MAX + 1];

	if (len == 0 || len > KJ_NAME_MAX)
		return 0;
	memcpy(nm, name, len);
	nm[len] = '\0';
	if (!kj__name_ok(nm))
		return 0;
	if (k->b->len + len + 1 > KJ_OBJ_ENTRIES_MAX)
		return 2;
	if (kj__entries_add(k->b, nm, len) < 0) {
		k->nomem = 1;
		return 2;
	}
	return 0;
}

int kj__entries_list(const uint8_t *obj, size_t len, char **out)
{
	struct kj__buf b = { 0 };
	struct collect k = { &b, 0 };
	int r = obj ? for_each_entry(obj, len, collect, &k) : 0;

	*out = NULL;
	if (r == 1 && kj__buf_append(&b, "", 1) == 0) {
		*out = (char *)b.p;
		return 0;
	}
	kj__buf_free(&b);
	return k.nomem || r == 1 ? KJIT_ENOMEM : 1;
}
