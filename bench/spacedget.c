/* spacedget.c: a bare Redis GET timed the way scenario 8 times a remote hit.
 *
 *   bench-spacedget SOCKET SIZE [-n N] [--gap MS] [--relay SOURCE]
 *
 * redis-benchmark's GET floor is a hot loop: one client sending the next GET
 * the moment the last reply arrived, so both processes stay on a CPU.  A
 * remote hit in scenario 8 is timed differently: one request every --gap ms
 * from a process that slept in between (bench-hitlat --gap), so the client,
 * kjitd and Redis all wake cold.  This program times a GET in that same
 * style, so the two can be compared like with like: it SETs N keys of SIZE
 * random bytes on the Redis Unix socket SOCKET (plain RESP, no library),
 * then, on one connection, sleeps --gap ms (untimed) before each GET and
 * times the GET from its write to the last byte of its reply.  Prints one
 * line, "p50_us p99_us mean_us n size", as bench-hitlat does.  The keys
 * (bench:spacedget:I) are deleted at the end.
 *
 * --relay SOURCE: the least any daemon of this design adds to that GET
 * (issue 35's floor).  A relay process, joined to this one by a Unix
 * stream socket as a client is to kjitd, answers each 64-byte request by
 * doing only what a remote hit cannot skip: it reads SOURCE (open, read,
 * close), hashes it with SHA-256 through OpenSSL's EVP (the cache key),
 * GETs the value, checks it with AES-256-GMAC (the value's checksum) and
 * writes it back whole.  No request parsing, no include scan, no index,
 * no hit table, no publish.  Timed from the request's write to the last
 * byte of the value, with the same sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static void usage(void)
{
	fprintf(stderr, "usage: bench-spacedget SOCKET SIZE [-n N] [--gap MS] [--relay SOURCE]\n");
	exit(2);
}

static void put_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			bench_die("write to redis: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* Reads one reply whose length is known in advance (want bytes) into buf. */
static void read_reply(int fd, char *buf, size_t want)
{
	size_t got = 0;
	while (got < want) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			bench_die("read from redis: %s", r == 0 ? "closed" : strerror(errno));
		got += (size_t)r;
	}
}

/* The RESP command "*3 SET key value" (or "*2 GET key" when val is NULL). */
static char *command(const char *key, const char *val, size_t vlen, size_t *len)
{
	size_t klen = strlen(key), cap = vlen + klen + 128;
	char *c = malloc(cap);
	if (c == NULL)
		bench_die("out of memory");
	int h = val ? snprintf(c, cap, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n", klen, key, vlen)
		    : snprintf(c, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", klen, key);
	size_t n = (size_t)h;
	if (val) {
		memcpy(c + n, val, vlen);
		memcpy(c + n + vlen, "\r\n", 2);
		n += vlen + 2;
	}
	*len = n;
	return c;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		bench_die("socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		bench_die("connect %s: %s", path, strerror(errno));
	return fd;
}

/* The relay's side of --relay: for each 64-byte request on fd, SOURCE's
 * SHA-256, the GET of key i, the value's GMAC, the value written back. */
static void relay(int fd, int rfd, const char *source, unsigned long n, size_t size, size_t want, int hlen)
{
	static const uint8_t gkey[32], iv[12];
	char req[64], key[64], *src = malloc(64 << 20), *reply = malloc(want);
	uint8_t dg[EVP_MAX_MD_SIZE], tag[16];
	unsigned dlen = 0;
	EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);
	EVP_CIPHER *gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);

	if (src == NULL || reply == NULL || md == NULL || gcm == NULL)
		bench_die("relay: out of memory or no SHA-256 / AES-256-GCM");
	for (unsigned long i = 0; i < n; i++) {
		read_reply(fd, req, sizeof req);
		int sfd = open(source, O_RDONLY | O_CLOEXEC);
		ssize_t got = sfd < 0 ? -1 : read(sfd, src, 64 << 20);
		if (got < 0 || close(sfd) < 0)
			bench_die("relay: read %s: %s", source, strerror(errno));
		if (EVP_Digest(src, (size_t)got, dg, &dlen, md, NULL) != 1)
			bench_die("relay: SHA-256 failed");
		snprintf(key, sizeof key, "bench:spacedget:%lu", i);
		size_t len;
		char *c = command(key, NULL, 0, &len);
		put_all(rfd, c, len);
		read_reply(rfd, reply, want);
		free(c);
		EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
		int outl = 0;
		if (x == NULL || EVP_EncryptInit_ex2(x, gcm, gkey, iv, NULL) != 1 ||
		    EVP_EncryptUpdate(x, NULL, &outl, (const uint8_t *)reply + hlen, (int)size) != 1 ||
		    EVP_EncryptFinal_ex(x, NULL, &outl) != 1 ||
		    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, sizeof tag, tag) != 1)
			bench_die("relay: GMAC failed");
		EVP_CIPHER_CTX_free(x);
		put_all(fd, reply + hlen, size);
	}
	EVP_MD_free(md);
	EVP_CIPHER_free(gcm);
	free(src);
	free(reply);
}

int main(int argc, char **argv)
{
	unsigned long n = 200, gap_ms = 20;
	const char *source = NULL;
	if (argc < 3)
		usage();
	const char *path = argv[1];
	size_t size = bench_num("SIZE", argv[2]);
	for (int i = 3; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "-n") == 0)
			n = bench_num("-n", argv[++i]);
		else if (strcmp(argv[i], "--gap") == 0)
			gap_ms = bench_num("--gap", argv[++i]);
		else if (strcmp(argv[i], "--relay") == 0)
			source = argv[++i];
		else
			usage();
	}
	if (n == 0 || size == 0)
		usage();

	int fd = connect_unix(path);
	char *val = malloc(size), key[64], hdr[32];
	double *t = calloc(n, sizeof *t);
	if (val == NULL || t == NULL)
		bench_die("out of memory");
	for (size_t i = 0; i < size; i++)
		val[i] = (char)('a' + rand() % 26);
	int hlen = snprintf(hdr, sizeof hdr, "$%zu\r\n", size);
	size_t want = (size_t)hlen + size + 2, len;
	char *reply = malloc(want);
	if (reply == NULL)
		bench_die("out of memory");
	for (unsigned long i = 0; i < n; i++) {
		snprintf(key, sizeof key, "bench:spacedget:%lu", i);
		char *c = command(key, val, size, &len);
		put_all(fd, c, len);
		read_reply(fd, reply, 5);
		if (memcmp(reply, "+OK\r\n", 5) != 0)
			bench_die("SET %s: unexpected reply", key);
		free(c);
	}
	int sv[2] = { -1, -1 };
	pid_t pid = -1;
	if (source) { /* the relay gets its own Redis connection */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || (pid = fork()) < 0)
			bench_die("relay: %s", strerror(errno));
		if (pid == 0) {
			close(sv[0]);
			relay(sv[1], connect_unix(path), source, n, size, want, hlen);
			_exit(0);
		}
		close(sv[1]);
	}
	for (unsigned long i = 0; i < n; i++) {
		snprintf(key, sizeof key, "bench:spacedget:%lu", i);
		char *c = command(key, NULL, 0, &len), req[64] = "get";
		struct timespec ts = { (time_t)(gap_ms / 1000), (long)(gap_ms % 1000) * 1000000L };
		while (gap_ms && nanosleep(&ts, &ts) != 0)
			;
		double t0 = bench_now_us();
		if (source) {
			put_all(sv[0], req, sizeof req);
			read_reply(sv[0], reply + hlen, size);
			memcpy(reply, hdr, (size_t)hlen);
		} else {
			put_all(fd, c, len);
			read_reply(fd, reply, want);
		}
		t[i] = bench_now_us() - t0;
		if (memcmp(reply, hdr, (size_t)hlen) != 0)
			bench_die("GET %s: unexpected reply", key);
		free(c);
	}
	int st = 0;
	if (source && (close(sv[0]) < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0))
		bench_die("relay: it failed");
	for (unsigned long i = 0; i < n; i++) {
		char del[96];
		snprintf(key, sizeof key, "bench:spacedget:%lu", i);
		int m = snprintf(del, sizeof del, "*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n", strlen(key), key);
		put_all(fd, del, (size_t)m);
		read_reply(fd, reply, 4); /* ":1\r\n" */
	}

	struct bench_stats s;
	bench_summarize(t, n, &s);
	printf("%.2f %.2f %.2f %zu %zu\n", s.p50, s.p99, s.mean, s.n, size);
	free(t);
	free(val);
	free(reply);
	close(fd);
	return 0;
}
