/* fuzz-get.c: the daemon's GET request decoder.
 *
 * The input is a frame body.  It is split into fields with kj__msg_decode,
 * then checked by kj__get_check, which runs the same kj__get_req_parse
 * (daemon/miss/request.c) as kj__handle_get does before it resolves a target
 * or touches the cache.  Linked from the archive of the real modules, so
 * it pulls in request.c and what that calls (manifest.c, common/), not the
 * server; nothing is stubbed.  Contracts checked: the code is 0 or one of
 * the codes a client may get, a failure always says why in one printable
 * line, and a success means the body has a backend and exactly one of a
 * source or a kernel.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "daemon.h"
#include "fuzz.h"
#include "kjit.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kj__msg m;
	char err[512];

	if (kj__msg_decode(data, size, &m) < 0)
		return 0;
	memset(err, 0, sizeof err);
	int r = kj__get_check(&m, err, sizeof err);
	switch (r) {
	case 0:
		FUZZ_ASSERT(kj__msg_get(&m, KJ_F_BACKEND) != NULL);
		FUZZ_ASSERT((kj__msg_get(&m, KJ_F_SOURCE) != NULL) != (kj__msg_get(&m, KJ_F_KERNEL) != NULL));
		break;
	case KJIT_EBACKEND:
	case KJIT_ETARGET:
	case KJIT_EINVAL:
	case KJIT_ETOOBIG:
	case KJIT_EPROTO:
		/* One line of printable text that says what was wrong. */
		FUZZ_ASSERT(err[0] != '\0' || r == KJIT_EPROTO || r == KJIT_ETOOBIG);
		FUZZ_ASSERT(memchr(err, '\0', sizeof err) != NULL);
		for (const char *p = err; *p; p++)
			FUZZ_ASSERT(*p == '\t' || isprint((unsigned char)*p));
		break;
	default:
		FUZZ_ASSERT(r == KJIT_ENOMEM);
	}
	kj__msg_free(&m);
	return 0;
}
