/* objcheck.c: is an object what a compile for its target gives?  The
 * drop-in libnvrtc/libhiprtc ask before handing kjitd's answer to a
 * program (docs/dropin.md, "What the drop-ins check"): a daemon's bytes
 * that are not what the real library would return go to the real library
 * instead, never to a driver.
 *
 * What passes:
 *  - cuda compute_XX: PTX text: NUL-terminated, no other NUL, printable
 *    ASCII (tab, newline, carriage return allowed), `//` comment lines and
 *    blank lines and then `.version`, and a `.target sm_XX` line for the
 *    asked XX (with its a/f suffix);
 *  - cuda sm_XX: a CUBIN: a 64-bit little-endian ELF, EM_CUDA (190), whose
 *    section headers lie inside it, for sm XX (e_flags bits 8-15 from ELF
 *    ABI version 8, CUDA 13 on; bits 0-7 before);
 *  - hip gfxNNN: an AMDGPU code object: a 64-bit little-endian ELF,
 *    EM_AMDGPU (224), whose section headers lie inside it, and whose
 *    EF_AMDGPU_MACH (e_flags bits 0-7) is the asked gfx's where the table
 *    below knows it (an unknown gfx: any AMDGPU machine).
 * Nothing here keeps state.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objcheck.h"

#define ELF_EM_CUDA 190
#define ELF_EM_AMDGPU 224
#define ELF64_EHDR_SIZE 64

/* EF_AMDGPU_MACH_AMDGCN_* of LLVM's BinaryFormat/ELF.h. */
static const struct gfx_mach {
	const char *gfx;
	unsigned mach;
} gfx_machs[] = {
	{ "gfx600", 0x20 }, { "gfx601", 0x21 }, { "gfx700", 0x22 }, { "gfx701", 0x23 }, { "gfx702", 0x24 },
	{ "gfx703", 0x25 }, { "gfx704", 0x26 }, { "gfx801", 0x28 }, { "gfx802", 0x29 }, { "gfx803", 0x2a },
	{ "gfx810", 0x2b }, { "gfx900", 0x2c }, { "gfx902", 0x2d }, { "gfx904", 0x2e }, { "gfx906", 0x2f },
	{ "gfx908", 0x30 }, { "gfx909", 0x31 }, { "gfx90c", 0x32 }, { "gfx1010", 0x33 }, { "gfx1011", 0x34 },
	{ "gfx1012", 0x35 }, { "gfx1030", 0x36 }, { "gfx1031", 0x37 }, { "gfx1032", 0x38 }, { "gfx1033", 0x39 },
	{ "gfx602", 0x3a }, { "gfx705", 0x3b }, { "gfx805", 0x3c }, { "gfx1035", 0x3d }, { "gfx1034", 0x3e },
	{ "gfx90a", 0x3f }, { "gfx940", 0x40 }, { "gfx1100", 0x41 }, { "gfx1013", 0x42 }, { "gfx1150", 0x43 },
	{ "gfx1103", 0x44 }, { "gfx1036", 0x45 }, { "gfx1101", 0x46 }, { "gfx1102", 0x47 }, { "gfx1200", 0x48 },
	{ "gfx1151", 0x4a }, { "gfx941", 0x4b }, { "gfx942", 0x4c }, { "gfx1201", 0x4e }, { "gfx950", 0x4f },
};

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A 64-bit little-endian ELF of machine em whose section headers lie
 * inside it: 0 with *flags, *abiver; else -1 with why. */
static int elf_ok(const uint8_t *p, size_t n, unsigned em, uint32_t *flags, unsigned *abiver, char *why, size_t wl)
{
	if (n < ELF64_EHDR_SIZE || memcmp(p, "\177ELF", 4) != 0) {
		snprintf(why, wl, "not an ELF file (%zu bytes)", n);
		return -1;
	}
	if (p[4] != 2 || p[5] != 1) {
		snprintf(why, wl, "not a 64-bit little-endian ELF");
		return -1;
	}
	unsigned m = (unsigned)le(p + 18, 2);
	if (m != em) {
		snprintf(why, wl, "an ELF for machine %u, not %u", m, em);
		return -1;
	}
	uint64_t shoff = le(p + 40, 8), shentsize = le(p + 58, 2), shnum = le(p + 60, 2);
	if (shoff > n || shnum * shentsize > n - shoff) {
		snprintf(why, wl, "an ELF whose section headers lie outside its %zu bytes", n);
		return -1;
	}
	*flags = (uint32_t)le(p + 48, 4);
	*abiver = p[8];
	return 0;
}

/* The XX of "sm_XX..." / "compute_XX..." after the prefix (digits only),
 * or -1. */
static int arch_number(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	return end != s && v > 0 && v < 256 ? (int)v : -1;
}

static int check_cubin(const uint8_t *p, size_t n, const char *target, char *why, size_t wl)
{
	uint32_t flags;
	unsigned abiver;
	int want = arch_number(target + 3);

	if (elf_ok(p, n, ELF_EM_CUDA, &flags, &abiver, why, wl) < 0)
		return -1;
	int sm = (int)(abiver >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
	if (want < 0 || sm != want) {
		snprintf(why, wl, "a CUBIN for sm_%d, not %s", sm, target);
		return -1;
	}
	return 0;
}

static int check_hsaco(const uint8_t *p, size_t n, const char *target, char *why, size_t wl)
{
	uint32_t flags;
	unsigned abiver;
	size_t tl = strcspn(target, ":");

	if (elf_ok(p, n, ELF_EM_AMDGPU, &flags, &abiver, why, wl) < 0)
		return -1;
	for (size_t i = 0; i < sizeof gfx_machs / sizeof gfx_machs[0]; i++) {
		if (strlen(gfx_machs[i].gfx) != tl || strncmp(gfx_machs[i].gfx, target, tl) != 0)
			continue;
		if ((flags & 0xff) != gfx_machs[i].mach) {
			snprintf(why, wl, "an AMDGPU code object for machine 0x%02x, not %.*s (0x%02x)", flags & 0xff,
				 (int)tl, target, gfx_machs[i].mach);
			return -1;
		}
		return 0;
	}
	return 0; /* a gfx newer than the table: any AMDGPU machine */
}

/* The start of the line after p (or the end). */
static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');
	return nl ? nl + 1 : p + strlen(p);
}

static int check_ptx(const uint8_t *p, size_t n, const char *target, char *why, size_t wl)
{
	char want[64];

	if (n == 0 || p[n - 1] != '\0') {
		snprintf(why, wl, "PTX that is not NUL-terminated (%zu bytes)", n);
		return -1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] > 0x7e) {
			snprintf(why, wl, "PTX with byte 0x%02x at offset %zu (not text)", p[i], i);
			return -1;
		}
	}
	const char *s = (const char *)p;
	while (*s == '\n' || *s == '\r' || strncmp(s, "//", 2) == 0)
		s = next_line(s);
	if (strncmp(s, ".version", 8) != 0) {
		snprintf(why, wl, "PTX that does not begin with .version");
		return -1;
	}
	snprintf(want, sizeof want, "sm_%s", target + 8);
	for (; *s; s = next_line(s)) {
		if (strncmp(s, ".target ", 8) != 0)
			continue;
		size_t k = strcspn(s + 8, " ,\r\n");
		if (k == strlen(want) && strncmp(s + 8, want, k) == 0)
			return 0;
		snprintf(why, wl, "PTX for .target %.*s, not %s", (int)(k < 32 ? k : 32), s + 8, want);
		return -1;
	}
	snprintf(why, wl, "PTX without a .target line");
	return -1;
}

int kj__object_check(int backend, const char *target, const void *data, size_t size, char *why, size_t whylen)
{
	const uint8_t *p = data;

	why[0] = '\0';
	if (target == NULL || (data == NULL && size > 0)) {
		snprintf(why, whylen, "no target or no data");
		return -1;
	}
	if (backend == KJIT_BACKEND_CUDA && strncmp(target, "compute_", 8) == 0)
		return check_ptx(p, size, target, why, whylen);
	if (backend == KJIT_BACKEND_CUDA && strncmp(target, "sm_", 3) == 0)
		return check_cubin(p, size, target, why, whylen);
	if (backend == KJIT_BACKEND_HIP && strncmp(target, "gfx", 3) == 0)
		return check_hsaco(p, size, target, why, whylen);
	snprintf(why, whylen, "no check for target %s of backend %d", target, backend);
	return -1;
}
