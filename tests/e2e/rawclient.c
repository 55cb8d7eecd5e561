/* rawclient.c: a client that speaks kjit's framing by hand, for the
 * bad-input matrix (tests/e2e/badinput.sh) and the crash trials
 * (tests/e2e/crash.sh).  It can send what libkjit never would: frames over
 * the cap, unknown types and versions, half frames, names holding NUL or
 * control characters, and requests it never reads the answers of.
 *
 * Built by the e2e scripts into their temporary directory:
 *   cc -D_GNU_SOURCE -Iinclude -Iclient -Icommon tests/e2e/rawclient.c build/libkjit.a -lcrypto -ldl -pthread
 * (libkjit.a carries common/proto.c, whose kj__msg_* build the frames).
 *
 * Every command prints one line saying what came back, e.g.
 *   reply code=-5 error=unknown message type 99; closing the connection | closed
 * and exits 0 when the exchange happened (the shell script judges the line),
 * 1 when something local failed (connect, bad arguments).
 *
 *   rawclient SOCK hdr LEN TYPE VERSION [BODYBYTES]   one header, BODYBYTES of body
 *   rawclient SOCK get FIELD=VALUE...    one GET; FIELD: backend target version kernel
 *                                        name entry option src srcfile srcfill hname hdata
 *                                        (VALUE takes C escapes: \0 \n \t \xNN \\)
 *   rawclient SOCK idle SECS             connect, say nothing for SECS, then PING
 *   rawclient SOCK half WAITSECS         half a frame, then wait for the daemon's word
 *   rawclient SOCK trunc                 a header promising 100 bytes, then close
 *   rawclient SOCK noread N SRCFILE HOLD N GETs of SRCFILE (hip gfx90a), never read; hold HOLD s
 *   rawclient SOCK good STOPFILE SRCFILE hits of SRCFILE until STOPFILE exists; counts
 *   rawclient SOCK fetch DIR             for each name on stdin: GET DIR/name (test family,
 *                                        target gfx90a, backend hip); must be a hit whose
 *                                        bytes equal the source; prints mismatches
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "kjit.h"
#include "proto.h"

static const char *sock_path;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dial(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(sock_path) >= sizeof sa.sun_path) {
		perror("socket");
		exit(1);
	}
	strcpy(sa.sun_path, sock_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "rawclient: connect %s: %s\n", sock_path, strerror(errno));
		exit(1);
	}
	return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t w = send(fd, q, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		q += w;
		n -= (size_t)w;
	}
	return 0;
}

/* 1 if the peer has closed (EOF or reset) within timeout_ms, 0 if still open. */
static int peer_closed(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN);
}

/* Reads one reply and prints it on one line (without newline).  Returns the
 * reply's CODE, or 1 for "no reply". */
static int print_reply(int fd, int timeout_ms, const uint8_t *expect, size_t expect_len)
{
	struct kj__frame_hdr h;
	struct kj__msg m = { 0 };
	uint8_t *body = NULL;
	int32_t code = 1;
	uint32_t status = 0;
	char *err = NULL;
	int r = kj__frame_read_fd(fd, timeout_ms, &h, &body);

	if (r < 0) {
		printf("noreply (%s)", r == KJIT_ECONNECT ? "closed" : kjit_strerror(r));
		return 1;
	}
	if (kj__msg_decode(body, h.len, &m) < 0 || kj__field_i32(kj__msg_get(&m, KJ_F_CODE), &code) < 0) {
		printf("badreply type=%u len=%u", h.type, h.len);
		free(body);
		kj__msg_free(&m);
		return 1;
	}
	kj__field_u32(kj__msg_get(&m, KJ_F_STATUS), &status);
	kj__field_strdup(kj__msg_get(&m, KJ_F_ERROR), 1 << 20, &err);
	const struct kj__field *data = kj__msg_get(&m, KJ_F_DATA);
	printf("reply type=0x%x code=%d", h.type, code);
	if (status)
		printf(" status=%u", status);
	if (data) {
		printf(" size=%u", data->len);
		if (expect)
			printf(" bytes=%s", data->len == expect_len && memcmp(data->p, expect, expect_len) == 0 ? "same" : "DIFFERENT");
	}
	if (err)
		printf(" error=%s", err);
	free(err);
	kj__msg_free(&m);
	free(body);
	return code;
}

/* C escapes in s decoded into out; returns the length. */
static size_t unescape(const char *s, char *out)
{
	size_t n = 0;
	while (*s) {
		if (*s != '\\') {
			out[n++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case '0': out[n++] = '\0'; s++; break;
		case 'n': out[n++] = '\n'; s++; break;
		case 't': out[n++] = '\t'; s++; break;
		case 'x': {
			unsigned v = 0;
			sscanf(s + 1, "%2x", &v);
			out[n++] = (char)v;
			s += 3;
			break;
		}
		case '\0': out[n++] = '\\'; break;
		default: out[n++] = *s++; break;
		}
	}
	return n;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *p;

	if (f == NULL || fstat(fileno(f), &st) < 0) {
		fprintf(stderr, "rawclient: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	p = malloc((size_t)st.st_size + 1);
	if (p == NULL || fread(p, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		exit(1);
	fclose(f);
	*len = (size_t)st.st_size;
	return p;
}

static const struct { const char *name; uint16_t tag; } field_names[] = {
	{ "target", KJ_F_TARGET }, { "version", KJ_F_VERSION }, { "kernel", KJ_F_KERNEL },
	{ "name", KJ_F_SOURCE_NAME }, { "entry", KJ_F_ENTRY }, { "option", KJ_F_OPTION },
	{ "src", KJ_F_SOURCE }, { "hname", KJ_F_HEADER_NAME }, { "hdata", KJ_F_HEADER_DATA },
};

static int cmd_get(int argc, char **argv)
{
	struct kj__buf b = { 0 };
	uint8_t *src = NULL;
	size_t src_len = 0;
	int have_backend = 0;

	kj__msg_begin(&b, KJ_MSG_GET, 7);
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq == NULL)
			return fprintf(stderr, "rawclient: get: FIELD=VALUE expected, not %s\n", argv[i]), 1;
		*eq = '\0';
		const char *k = argv[i], *v = eq + 1;
		if (strcmp(k, "backend") == 0) {
			kj__msg_put_u32(&b, KJ_F_BACKEND, (uint32_t)atoi(v));
			have_backend = 1;
			continue;
		}
		if (strcmp(k, "srcfile") == 0) {
			src = read_file(v, &src_len);
			kj__msg_put(&b, KJ_F_SOURCE, src, src_len);
			continue;
		}
		if (strcmp(k, "srcfill") == 0) { /* a source of N bytes: a test echo */
			src_len = strtoul(v, NULL, 10);
			src = malloc(src_len + 1);
			memset(src, 'x', src_len);
			for (size_t j = 63; j < src_len; j += 64)
				src[j] = '\n';
			kj__msg_put(&b, KJ_F_SOURCE, src, src_len);
			continue;
		}
		size_t j;
		for (j = 0; j < sizeof field_names / sizeof field_names[0]; j++)
			if (strcmp(field_names[j].name, k) == 0)
				break;
		if (j == sizeof field_names / sizeof field_names[0])
			return fprintf(stderr, "rawclient: get: unknown field %s\n", k), 1;
		char *val = malloc(strlen(v) + 1);
		size_t n = unescape(v, val);
		kj__msg_put(&b, field_names[j].tag, val, n);
		if (field_names[j].tag == KJ_F_SOURCE) {
			free(src);
			src = (uint8_t *)val;
			src_len = n;
		} else {
			free(val);
		}
	}
	if (!have_backend)
		kj__msg_put_u32(&b, KJ_F_BACKEND, KJIT_BACKEND_HIP);
	if (kj__msg_end(&b) < 0)
		return fprintf(stderr, "rawclient: get: the request is over the frame cap\n"), 1;
	int fd = dial();
	if (send_all(fd, b.p, b.len) < 0) {
		printf("send failed: %s\n", strerror(errno));
		return 0;
	}
	print_reply(fd, 30000, src, src_len);
	printf("\n");
	kj__buf_free(&b);
	free(src);
	close(fd);
	return 0;
}

static void put_hdr(uint8_t *h, uint32_t len, uint16_t type, uint8_t ver, uint32_t id)
{
	h[0] = (uint8_t)len; h[1] = (uint8_t)(len >> 8); h[2] = (uint8_t)(len >> 16); h[3] = (uint8_t)(len >> 24);
	h[4] = (uint8_t)type; h[5] = (uint8_t)(type >> 8);
	h[6] = ver;
	h[7] = 0;
	h[8] = (uint8_t)id; h[9] = (uint8_t)(id >> 8); h[10] = (uint8_t)(id >> 16); h[11] = (uint8_t)(id >> 24);
}

static int cmd_hdr(uint32_t len, uint16_t type, uint8_t ver, size_t body)
{
	uint8_t h[KJ_FRAME_HDR_SIZE];
	int fd = dial();

	put_hdr(h, len, type, ver, 9);
	send_all(fd, h, sizeof h);
	if (body) {
		uint8_t *z = calloc(1, body);
		send_all(fd, z, body); /* may fail once the daemon closed: fine */
		free(z);
	}
	print_reply(fd, 10000, NULL, 0);
	printf(" | %s\n", peer_closed(fd, 2000) ? "closed" : "open");
	close(fd);
	return 0;
}

static int ping_on(int fd)
{
	struct kj__buf b = { 0 };
	kj__msg_begin(&b, KJ_MSG_PING, 1);
	kj__msg_end(&b);
	int r = send_all(fd, b.p, b.len);
	kj__buf_free(&b);
	if (r < 0) {
		printf("ping send failed: %s", strerror(errno));
		return 1;
	}
	return print_reply(fd, 5000, NULL, 0);
}

static int cmd_idle(int secs)
{
	int fd = dial();
	sleep((unsigned)secs);
	printf("after %d s idle: ", secs);
	ping_on(fd);
	printf("\n");
	close(fd);
	return 0;
}

static int cmd_half(int wait_s)
{
	uint8_t h[KJ_FRAME_HDR_SIZE + 10] = { 0 };
	int fd = dial();
	double t0 = now_s();

	put_hdr(h, 100, KJ_MSG_PING, KJ_PROTO_VERSION, 5);
	send_all(fd, h, sizeof h);
	print_reply(fd, wait_s * 1000, NULL, 0);
	printf(" after %.1f s | %s\n", now_s() - t0, peer_closed(fd, 2000) ? "closed" : "open");
	close(fd);
	return 0;
}

static int cmd_trunc(void)
{
	uint8_t h[KJ_FRAME_HDR_SIZE];
	int fd = dial();

	put_hdr(h, 100, KJ_MSG_GET, KJ_PROTO_VERSION, 3);
	send_all(fd, h, sizeof h);
	close(fd);
	printf("sent a 12-byte header promising 100 bytes, then closed\n");
	return 0;
}

/* N GETs of SRCFILE sent without reading any reply.  The socket is
 * non-blocking: when the daemon stops reading (back-pressure), sends
 * stall; after 2 s of stall we stop and hold the connection. */
static int cmd_noread(int n, const char *srcfile, int hold)
{
	struct kj__buf b = { 0 };
	size_t size;
	uint8_t *src = read_file(srcfile, &size);
	int fd = dial();
	size_t sent = 0, total;
	double stalled = 0;

	kj__msg_begin(&b, KJ_MSG_GET, 1);
	kj__msg_put_u32(&b, KJ_F_BACKEND, KJIT_BACKEND_HIP);
	kj__msg_put_str(&b, KJ_F_TARGET, "gfx90a");
	kj__msg_put(&b, KJ_F_SOURCE, src, size);
	kj__msg_end(&b);
	total = b.len * (size_t)n;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (sent < total) {
		size_t off = sent % b.len;
		ssize_t w = send(fd, b.p + off, b.len - off, MSG_NOSIGNAL);
		if (w > 0) {
			sent += (size_t)w;
			stalled = 0;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			printf("send failed after %zu bytes: %s\n", sent, strerror(errno));
			return 0;
		}
		if (stalled == 0)
			stalled = now_s();
		else if (now_s() - stalled > 2)
			break;
		usleep(10000);
	}
	printf("sent %zu of %zu bytes (%zu requests of %zu bytes) without reading; holding %d s\n", sent, total,
	       (size_t)n, b.len, hold);
	fflush(stdout);
	sleep((unsigned)hold);
	close(fd);
	kj__buf_free(&b);
	free(src);
	return 0;
}

/* Keeps asking for SRCFILE (must already be cached) until STOPFILE exists. */
static int cmd_good(const char *stop, const char *srcfile)
{
	size_t len;
	uint8_t *src = read_file(srcfile, &len);
	kjit_open_options o = { .socket_path = sock_path, .no_autostart = 1, .timeout_ms = 30000 };
	kjit_client *c = NULL;
	unsigned long ok = 0, bad = 0;
	char last[512] = "";

	while (access(stop, F_OK) != 0) {
		kjit_request rq = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .source = src,
				    .source_size = len, .source_name = "good.src", .no_env = 1 };
		kjit_result res = { 0 };
		int r = c ? 0 : kjit_open(&c, &o);
		if (r == 0)
			r = kjit_get(c, &rq, &res);
		if (r == 0 && res.status == KJIT_STATUS_HIT && res.size == len && memcmp(res.data, src, len) == 0) {
			ok++;
		} else {
			bad++;
			snprintf(last, sizeof last, "r=%d status=%d %s", r, res.status,
				 res.error ? res.error : c ? kjit_last_error(c) : kjit_last_error(NULL));
		}
		kjit_result_free(&res);
		usleep(2000);
	}
	kjit_close(c);
	free(src);
	printf("good client: %lu ok, %lu failed%s%s\n", ok, bad, bad ? "; last: " : "", last);
	return 0;
}

static int cmd_fetch(const char *dir)
{
	kjit_open_options o = { .socket_path = sock_path, .no_autostart = 1, .timeout_ms = 60000 };
	kjit_client *c = NULL;
	char name[512], path[1024];
	unsigned long n = 0, bad = 0;

	if (kjit_open(&c, &o) < 0) {
		printf("fetch: cannot connect: %s\n", kjit_last_error(NULL));
		return 1;
	}
	while (fgets(name, sizeof name, stdin)) {
		name[strcspn(name, "\n")] = '\0';
		if (!name[0])
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, name);
		size_t len;
		uint8_t *src = read_file(path, &len);
		kjit_request rq = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .source = src,
				    .source_size = len, .source_name = name, .no_env = 1 };
		kjit_result res = { 0 };
		int r = kjit_get(c, &rq, &res);
		n++;
		if (r < 0 || res.status != KJIT_STATUS_HIT || res.size != len || memcmp(res.data, src, len) != 0) {
			bad++;
			printf("MISMATCH %s: r=%d status=%s size=%zu want %zu%s%s\n", name, r,
			       r == 0 ? kjit_status_name(res.status) : "-", res.size, len, res.error ? " " : "",
			       res.error ? res.error : "");
		}
		kjit_result_free(&res);
		free(src);
	}
	kjit_close(c);
	printf("fetched %lu, %lu wrong\n", n, bad);
	return bad ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rawclient SOCK CMD [ARGS] (see the comment at the top)\n");
		return 1;
	}
	/* Every get must reach the daemon: no answers from the process memo. */
	setenv("KJIT_PROCESS_MEMO", "0", 1);
	sock_path = argv[1];
	const char *cmd = argv[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(cmd, "hdr") == 0 && argc >= 6)
		return cmd_hdr((uint32_t)strtoul(argv[3], NULL, 0), (uint16_t)strtoul(argv[4], NULL, 0),
			       (uint8_t)strtoul(argv[5], NULL, 0), argc > 6 ? strtoul(argv[6], NULL, 0) : 0);
	if (strcmp(cmd, "get") == 0)
		return cmd_get(argc - 3, argv + 3);
	if (strcmp(cmd, "idle") == 0 && argc == 4)
		return cmd_idle(atoi(argv[3]));
	if (strcmp(cmd, "half") == 0 && argc == 4)
		return cmd_half(atoi(argv[3]));
	if (strcmp(cmd, "trunc") == 0)
		return cmd_trunc();
	if (strcmp(cmd, "noread") == 0 && argc == 6)
		return cmd_noread(atoi(argv[3]), argv[4], atoi(argv[5]));
	if (strcmp(cmd, "good") == 0 && argc == 5)
		return cmd_good(argv[3], argv[4]);
	if (strcmp(cmd, "fetch") == 0 && argc == 4)
		return cmd_fetch(argv[3]);
	fprintf(stderr, "rawclient: unknown command or wrong arguments: %s\n", cmd);
	return 1;
}
