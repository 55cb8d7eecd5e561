/* stress.c: many client processes hammering one kjitd (docs/reliability.md,
 * "Stress").  The daemon must run with `--hip-compiler test`
 * (compilers/testcomp.c): its object is the source itself, so every reply
 * can be checked byte for byte without a second compiler.
 *
 *   stress -p DAEMON_PID [-c CLIENTS] [-n REQUESTS] [-s SOCKET]
 *          [--hits PCT] [--shared PCT] [--bad PCT] [--disc PCT] [--rss-slack MB]
 *
 * Each of CLIENTS processes makes REQUESTS requests, each one of:
 *   hit      one of 64 pre-warmed sources: status hit, bytes == source
 *   shared   one of a few hundred sources that several clients ask for at
 *            once (test "sleep 2"): compiled, joined or hit, bytes == source
 *   miss     a source unique to this request (test "sleep 1"): compiled
 *   bad      "#pragma kjit_test error": KJIT_ECOMPILE, one-line error, log
 *   disc     a raw connection dropped mid-request: half a frame then close,
 *            a whole GET (of a compile, "sleep 5") then close before the reply,
 *            or a GET of a hit then close without reading
 * (the rest of the percentages are misses).  A reply that never comes or
 * breaks the stream (transport error) is "lost".  The parent samples the
 * daemon's VmRSS every second and counts its descriptors before and after.
 * Prints a summary; exits 1 on any wrong or lost reply, RSS growth over the
 * slack (default 20 MB) after the warm-up, or a leaked descriptor.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kjit.h"
#include "proto.h"

#define N_HOT 64
#define N_SHARED 256

enum { K_HIT, K_SHARED, K_MISS, K_BAD, K_DISC, K_COUNT };
static const char *const kind_name[K_COUNT] = { "hit", "shared", "miss", "bad", "disconnect" };

struct counts {
	unsigned long done[K_COUNT];
	unsigned long wrong[K_COUNT];
	unsigned long lost[K_COUNT];
	unsigned long status[4];
	char last_wrong[256];
};

static const char *sock_path;
static unsigned run_tag;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static long proc_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	long v = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':')
			v = strtol(line + fl + 1, NULL, 10);
	fclose(f);
	return v;
}

static int count_fds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The daemon's descriptors with their targets, "N -> TARGET\n" each, into
 * buf (for the report of a leak: which one it is). */
static void list_fds(pid_t pid, char *buf, size_t cap)
{
	char path[64], link[PATH_MAX], target[PATH_MAX];
	struct dirent *de;
	size_t len = 0;

	buf[0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && len < cap) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof link, "%s/%s", path, de->d_name);
		ssize_t n = readlink(link, target, sizeof target - 1);
		target[n < 0 ? 0 : n] = '\0';
		int w = snprintf(buf + len, cap - len, "%s -> %s\n", de->d_name, target);
		len += w < 0 ? cap : (size_t)w;
	}
	closedir(d);
}

/* Prints the lines of after that are not in before (descriptors opened
 * meanwhile). */
static void print_new_fds(const char *before, const char *after)
{
	for (const char *p = after; *p;) {
		size_t l = strcspn(p, "\n");
		char line[PATH_MAX + 32];
		snprintf(line, sizeof line, "%.*s\n", (int)l, p);
		if (strstr(before, line) == NULL)
			printf("stress: opened during the run: %.*s\n", (int)l, p);
		p += l + (p[l] == '\n');
	}
}

/* The source of kind k number i (client ci, request ri for unique ones). */
static size_t make_source(char *buf, size_t cap, int k, unsigned i, unsigned ci, unsigned ri)
{
	int n = 0;
	switch (k) {
	case K_HIT: n = snprintf(buf, cap, "// stress hot %u\nint hot_%u;\n", i, i); break;
	case K_SHARED: n = snprintf(buf, cap, "#pragma kjit_test sleep 2\n// shared %u run %u\n", i, run_tag); break;
	case K_MISS: n = snprintf(buf, cap, "#pragma kjit_test sleep 1\n// miss %u.%u run %u\n", ci, ri, run_tag); break;
	case K_BAD: n = snprintf(buf, cap, "#pragma kjit_test error\n// bad %u.%u run %u\n", ci, ri, run_tag); break;
	default: n = snprintf(buf, cap, "#pragma kjit_test sleep 5\n// disc %u.%u run %u\n", ci, ri, run_tag); break;
	}
	return (size_t)n;
}

static int is_transport(int r)
{
	return r == KJIT_ECONNECT || r == KJIT_EPROTO || r == KJIT_ETIMEDOUT || r == KJIT_EIO;
}

static void note_wrong(struct counts *ct, int k, const char *fmt, const char *a, int r)
{
	ct->wrong[k]++;
	snprintf(ct->last_wrong, sizeof ct->last_wrong, fmt, kind_name[k], a ? a : "", r);
}

static int dial(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A raw connection dropped mid-request, three ways. */
static int disconnect_once(unsigned ci, unsigned ri, unsigned how)
{
	char src[256];
	struct kj__buf b = { 0 };
	int fd = dial();
	size_t len;

	if (fd < 0)
		return -1;
	if (how == 2)
		len = make_source(src, sizeof src, K_HIT, ri % N_HOT, ci, ri);
	else
		len = make_source(src, sizeof src, K_DISC, 0, ci, ri);
	kj__msg_begin(&b, KJ_MSG_GET, ri + 1);
	kj__msg_put_u32(&b, KJ_F_BACKEND, KJIT_BACKEND_HIP);
	kj__msg_put_str(&b, KJ_F_TARGET, "gfx90a");
	kj__msg_put_str(&b, KJ_F_SOURCE_NAME, "disc.src");
	kj__msg_put(&b, KJ_F_SOURCE, src, len);
	kj__msg_end(&b);
	size_t n = how == 0 ? b.len / 2 : b.len;
	ssize_t w = send(fd, b.p, n, MSG_NOSIGNAL);
	kj__buf_free(&b);
	close(fd);
	return w == (ssize_t)n ? 0 : -1;
}

static void client_main(unsigned ci, unsigned n_req, const unsigned pct[K_COUNT], struct counts *ct)
{
	kjit_open_options o = { .socket_path = sock_path, .no_autostart = 1, .timeout_ms = 120000 };
	kjit_client *c = NULL;
	unsigned seed = ci * 7919u + run_tag;
	char src[256], name[64];

	if (kjit_open(&c, &o) < 0) {
		snprintf(ct->last_wrong, sizeof ct->last_wrong, "client %u: %s", ci, kjit_last_error(NULL));
		ct->lost[K_HIT] += n_req;
		return;
	}
	for (unsigned ri = 0; ri < n_req; ri++) {
		unsigned roll = (unsigned)rand_r(&seed) % 100, acc = 0;
		int k = K_MISS;
		for (int j = 0; j < K_COUNT; j++) {
			acc += pct[j];
			if (roll < acc) {
				k = j;
				break;
			}
		}
		ct->done[k]++;
		if (k == K_DISC) {
			if (disconnect_once(ci, ri, (unsigned)rand_r(&seed) % 3) < 0)
				note_wrong(ct, k, "%s: connect or send failed%s (%d)", NULL, errno);
			continue;
		}
		unsigned i = k == K_HIT ? (unsigned)rand_r(&seed) % N_HOT : (unsigned)rand_r(&seed) % N_SHARED;
		size_t len = make_source(src, sizeof src, k, i, ci, ri);
		snprintf(name, sizeof name, "%s-%u-%u.src", kind_name[k], ci, ri);
		kjit_request rq = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .source = src,
				    .source_size = len, .source_name = name, .no_env = 1 };
		kjit_result res = { 0 };
		int r = kjit_get(c, &rq, &res);
		if (is_transport(r)) {
			ct->lost[k]++;
			snprintf(ct->last_wrong, sizeof ct->last_wrong, "%s lost: %s", kind_name[k],
				 res.error ? res.error : kjit_last_error(c));
		} else if (k == K_BAD) {
			if (r != KJIT_ECOMPILE || res.error == NULL || strchr(res.error, '\n') || res.log == NULL ||
			    strstr(res.log, "error") == NULL)
				note_wrong(ct, k, "%s: wanted a compile error, got '%s' (%d)", res.error, r);
		} else if (r < 0) {
			note_wrong(ct, k, "%s: failed: %s (%d)", res.error, r);
		} else {
			if (res.status >= 1 && res.status <= 3)
				ct->status[res.status]++;
			int st_ok = k == K_HIT ? res.status == KJIT_STATUS_HIT
				    : k == K_MISS ? res.status == KJIT_STATUS_COMPILED : res.status != 0;
			if (!st_ok || res.size != len || memcmp(res.data, src, len) != 0)
				note_wrong(ct, k, "%s: status %s or bytes wrong (%d)", kjit_status_name(res.status),
					   (int)res.size);
		}
		kjit_result_free(&res);
	}
	kjit_close(c);
}

static int prewarm(void)
{
	kjit_open_options o = { .socket_path = sock_path, .no_autostart = 1, .timeout_ms = 60000 };
	kjit_client *c = NULL;
	char src[256];
	int bad = 0;

	if (kjit_open(&c, &o) < 0) {
		fprintf(stderr, "stress: cannot reach kjitd: %s\n", kjit_last_error(NULL));
		return -1;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < N_HOT; i++) {
			size_t len = make_source(src, sizeof src, K_HIT, i, 0, 0);
			kjit_request rq = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .source = src,
					    .source_size = len, .source_name = "hot.src", .no_env = 1 };
			kjit_result res = { 0 };
			if (kjit_get(c, &rq, &res) < 0 || res.size != len || memcmp(res.data, src, len) != 0) {
				fprintf(stderr, "stress: pre-warm failed: %s\n", res.error ? res.error : kjit_last_error(c));
				bad = 1;
			}
			kjit_result_free(&res);
		}
	}
	kjit_close(c);
	/* Start every worker the daemon will use (they stay), so the
	 * descriptor count after warm-up is the steady state: 16 slow
	 * compiles at once, from 16 processes. */
	for (unsigned ci = 0; ci < 16; ci++) {
		if (fork() == 0) {
			kjit_client *cc = NULL;
			int len = snprintf(src, sizeof src, "#pragma kjit_test sleep 100\n// start %u run %u\n", ci,
					   run_tag);
			kjit_request rq = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .source = src,
					    .source_size = (size_t)len, .no_env = 1 };
			kjit_result res = { 0 };
			if (kjit_open(&cc, &o) == 0)
				kjit_get(cc, &rq, &res);
			kjit_result_free(&res);
			kjit_close(cc);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	return bad ? -1 : 0;
}

/* Waits until the daemon's descriptors drop to want (connections close
 * asynchronously); returns the last count. */
static int settle_fds(pid_t pid, int want, double max_s)
{
	double t0 = now_s();
	int n = count_fds(pid);
	while (n > want && now_s() - t0 < max_s) {
		usleep(100000);
		n = count_fds(pid);
	}
	return n;
}

static void usage(void)
{
	fprintf(stderr, "usage: stress -p DAEMON_PID [-c CLIENTS] [-n REQUESTS] [-s SOCKET] [--hits PCT] "
			"[--shared PCT] [--bad PCT] [--disc PCT] [--rss-slack MB]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned clients = 64, n_req = 1000, pct[K_COUNT] = { 45, 15, 20, 10, 10 };
	long slack_mb = 20;
	pid_t dpid = 0;

	/* Every get must reach the daemon: no answers from the process memo. */
	setenv("KJIT_PROCESS_MEMO", "0", 1);
	sock_path = getenv("KJIT_SOCKET");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (v == NULL)
			usage();
		if (strcmp(a, "-p") == 0) dpid = (pid_t)atoi(v);
		else if (strcmp(a, "-c") == 0) clients = (unsigned)atoi(v);
		else if (strcmp(a, "-n") == 0) n_req = (unsigned)atoi(v);
		else if (strcmp(a, "-s") == 0) sock_path = v;
		else if (strcmp(a, "--hits") == 0) pct[K_HIT] = (unsigned)atoi(v);
		else if (strcmp(a, "--shared") == 0) pct[K_SHARED] = (unsigned)atoi(v);
		else if (strcmp(a, "--bad") == 0) pct[K_BAD] = (unsigned)atoi(v);
		else if (strcmp(a, "--disc") == 0) pct[K_DISC] = (unsigned)atoi(v);
		else if (strcmp(a, "--rss-slack") == 0) slack_mb = atol(v);
		else usage();
		i++;
	}
	if (dpid <= 0 || sock_path == NULL || clients == 0)
		usage();
	unsigned fixed = pct[K_HIT] + pct[K_SHARED] + pct[K_BAD] + pct[K_DISC];
	if (fixed > 100)
		usage();
	pct[K_MISS] = 100 - fixed;
	run_tag = (unsigned)time(NULL) ^ (unsigned)getpid() << 8;
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (prewarm() < 0)
		return 1;
	usleep(300000);
	int fds0 = count_fds(dpid);
	static char fdlist0[1 << 16], fdlist1[1 << 16];
	list_fds(dpid, fdlist0, sizeof fdlist0);
	long rss_start = proc_kb(dpid, "VmRSS"), rss_peak = rss_start;
	printf("stress: %u clients x %u requests (hit %u%%, shared %u%%, miss %u%%, bad %u%%, disconnect %u%%)\n",
	       clients, n_req, pct[K_HIT], pct[K_SHARED], pct[K_MISS], pct[K_BAD], pct[K_DISC]);
	printf("stress: after warm-up: daemon RSS %ld kB, %d fds\n", rss_start, fds0);

	struct counts *ct = mmap(NULL, clients * sizeof *ct, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ct == MAP_FAILED)
		return 1;
	memset(ct, 0, clients * sizeof *ct);
	double t0 = now_s();
	for (unsigned ci = 0; ci < clients; ci++) {
		pid_t p = fork();
		if (p == 0) {
			client_main(ci, n_req, pct, &ct[ci]);
			_exit(0);
		}
		if (p < 0) {
			perror("fork");
			return 1;
		}
	}
	unsigned left = clients, crashed = 0;
	double next = now_s() + 1;
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			left--;
			crashed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			continue;
		}
		if (now_s() >= next) {
			long rss = proc_kb(dpid, "VmRSS");
			if (rss < 0) {
				printf("stress: kjitd (pid %d) is gone\n", (int)dpid);
				crashed++;
				break;
			}
			if (rss > rss_peak)
				rss_peak = rss;
			next += 1;
		}
		usleep(20000);
	}
	while (left > 0 && wait(NULL) > 0)
		left--;
	double secs = now_s() - t0;
	int fds1 = settle_fds(dpid, fds0, 10);
	long rss_end = proc_kb(dpid, "VmRSS");
	if (rss_end > rss_peak)
		rss_peak = rss_end;

	struct counts tot = { 0 };
	const char *last = "";
	for (unsigned ci = 0; ci < clients; ci++) {
		for (int k = 0; k < K_COUNT; k++) {
			tot.done[k] += ct[ci].done[k];
			tot.wrong[k] += ct[ci].wrong[k];
			tot.lost[k] += ct[ci].lost[k];
		}
		for (int s = 0; s < 4; s++)
			tot.status[s] += ct[ci].status[s];
		if (ct[ci].last_wrong[0])
			last = ct[ci].last_wrong;
	}
	unsigned long all = 0, wrong = 0, lost = 0;
	for (int k = 0; k < K_COUNT; k++) {
		printf("stress: %-10s %8lu requests, %lu wrong, %lu lost\n", kind_name[k], tot.done[k], tot.wrong[k],
		       tot.lost[k]);
		all += tot.done[k];
		wrong += tot.wrong[k];
		lost += tot.lost[k];
	}
	printf("stress: answers: %lu hit, %lu compiled, %lu joined\n", tot.status[1], tot.status[2], tot.status[3]);
	printf("stress: %lu requests in %.1f s (%.0f/s); %lu wrong, %lu lost, %u clients crashed\n", all, secs,
	       all / secs, wrong, lost, crashed);
	printf("stress: daemon RSS start %ld kB, peak %ld kB, end %ld kB (end - start %+ld kB, slack %ld MB)\n",
	       rss_start, rss_peak, rss_end, rss_end - rss_start, slack_mb);
	printf("stress: daemon fds before %d, after %d\n", fds0, fds1);
	if (last[0])
		printf("stress: last problem: %s\n", last);
	int fail = 0;
	if (all != (unsigned long)clients * n_req || wrong || lost || crashed) {
		printf("stress: FAIL: %lu of %lu requests made, %lu wrong, %lu lost, %u crashed\n", all,
		       (unsigned long)clients * n_req, wrong, lost, crashed);
		fail = 1;
	}
	if (rss_end < 0 || rss_end - rss_start > slack_mb * 1024) {
		printf("stress: FAIL: daemon RSS grew %ld kB over the run\n", rss_end - rss_start);
		fail = 1;
	}
	if (fds1 < 0 || fds1 > fds0) {
		printf("stress: FAIL: daemon descriptors %d -> %d\n", fds0, fds1);
		list_fds(dpid, fdlist1, sizeof fdlist1);
		print_new_fds(fdlist0, fdlist1);
		fail = 1;
	}
	return fail;
}
