/* fuzz-hittab.c: the reader of the shared hit table (common/hittab.c), the
 * one piece of libkjit that reads memory another process wrote.
 *
 * The input becomes a sealed memfd that the reader maps.  First byte 0:
 * the rest is the whole image, header included.  Otherwise the rest is
 * the slots and arena of a table of 16 slots, behind a valid header sized
 * to the input, so that the fuzzer spends its time on slots and records
 * (mkseeds writes such seeds from real tables).  Every fingerprint the
 * slots name is looked up.  Checked: open answers 0 or KJIT_EPROTO; a
 * lookup answers 0, KJIT_ENOENT, KJIT_ECORRUPT or KJIT_ETIMEDOUT (a slot
 * forever odd); a hit has 1..KJ_OBJECT_MAX bytes, no larger than the
 * image, a non-empty printable target and a NUL-terminated version; the
 * sanitizers catch any read outside the mapping.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "hittab.h"
#include "kjit.h"
#include "util.h"

#define HDR_SIZE 128
#define SLOTS 16
#define SLOT_SIZE 64
#define IMAGE_MAX (1u << 20)

static int image_fd(const uint8_t *p, size_t n)
{
	int fd = memfd_create("fuzz-hittab", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(n == 0 || kj__write_all(fd, p, n) == 0);
	FUZZ_ASSERT(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0);
	return fd;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kj__hittab_reader *r = NULL;
	uint8_t *img;
	size_t n;

	if (size < 1 || size > IMAGE_MAX)
		return 0;
	if (data[0] == 0) {
		n = size - 1;
		img = malloc(n ? n : 1);
		FUZZ_ASSERT(img != NULL);
		memcpy(img, data + 1, n);
	} else {
		n = HDR_SIZE + size - 1;
		img = calloc(1, n);
		FUZZ_ASSERT(img != NULL);
		memcpy(img + HDR_SIZE, data + 1, size - 1);
		uint64_t arena_off = HDR_SIZE + SLOTS * SLOT_SIZE;
		put64(img, KJ_HITTAB_MAGIC);
		put32(img + 8, KJ_HITTAB_VERSION);
		put32(img + 12, HDR_SIZE);
		put64(img + 16, n);
		put32(img + 24, SLOTS);
		put32(img + 28, SLOT_SIZE);
		put64(img + 32, HDR_SIZE);
		put64(img + 40, arena_off);
		put64(img + 48, n > arena_off ? (n - arena_off) & ~(uint64_t)63 : 0);
		put64(img + 64, data[0]); /* the generation */
	}
	int fd = image_fd(img, n);
	int rc = kj__hittab_reader_open(&r, fd);
	close(fd);
	FUZZ_ASSERT(rc == 0 || rc == KJIT_EPROTO);
	if (rc == 0) {
		uint32_t slots = kj__hittab_reader_slots(r);
		uint64_t slots_off;
		memcpy(&slots_off, img + 32, 8);
		for (uint32_t i = 0; i < slots && i < 64; i++) {
			uint8_t fp[KJ_SHA256_LEN];
			struct kj__hit hit;
			memcpy(fp, img + slots_off + (uint64_t)i * SLOT_SIZE + 32, sizeof fp);
			rc = kj__hittab_lookup(r, fp, &hit);
			FUZZ_ASSERT(rc == 0 || rc == KJIT_ENOENT || rc == KJIT_ECORRUPT || rc == KJIT_ETIMEDOUT);
			if (rc == 0) {
				FUZZ_ASSERT(hit.size >= 1 && hit.size <= KJ_OBJECT_MAX && hit.size <= n);
				FUZZ_ASSERT(hit.target[0] != '\0' && kj__token_ok(hit.target, KJ_TARGET_MAX));
				FUZZ_ASSERT(memchr(hit.version, '\0', sizeof hit.version) != NULL);
				FUZZ_ASSERT(hit.slot < slots);
				free(hit.data);
			} else {
				FUZZ_ASSERT(hit.data == NULL);
			}
		}
		kj__hittab_reader_close(r);
	}
	free(img);
	return 0;
}
