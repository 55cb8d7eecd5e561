/* framer.c: frames from the byte stream of a libuv handle (a client
 * connection, a worker's socketpair), through the one frame reader of
 * common/frames.c.  libuv reads straight into the reader's room
 * (kj__framer_alloc), so a frame is copied once at most, when a partial
 * frame is moved to the front; the caller adds what libuv read with
 * kj__frames_wrote and takes whole frames with kj__frames_next. */
#include "daemon.h"
#include "kj_types.h"

#define FRAMER_MIN_READ (64u << 10) /* libuv asks for 64 KiB; give at least that */

void kj__framer_alloc(struct kj__frames *f, size_t suggested, uv_buf_t *buf)
{
	size_t want = suggested < FRAMER_MIN_READ ? FRAMER_MIN_READ : suggested, n;
	uint8_t *p;

	if (kj__frames_space(f, want, &p, &n) < 0) {
		*buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
		return;
	}
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	*buf = uv_buf_init((char *)p, (unsigned)n);
}
