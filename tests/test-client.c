/* test-client.c: libkjit against a fake kjitd.
 *
 * The fake daemon is this test binary itself: a listening socket bound in
 * the test, then a forked accept loop that serves each connection in a
 * child of its own with canned replies built with kj__msg_*, misbehaving on
 * purpose in the modes that test the client's checks.  For autostart, the
 * same binary is started by libkjit through a shell script named by
 * KJIT_KJITD: the script counts its starts in a file and execs this binary
 * with KJ_FAKE_KJITD set, which a constructor turns into the fake daemon
 * before main() runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"
#include "resolve.h"
#include "sha.h"
#include "kjit.h"
#include "kj_limits.h"
#include "procmemo.h"
#include "proto.h"
#include "test.h"
#include "util.h"

enum fake_mode {
	FM_NORMAL,
	FM_WRONG_ID,       /* replies carry the request's id + 1 */
	FM_BAD_FIELD,      /* a field's length runs past the body */
	FM_CLOSE_MID,      /* half a reply, then the connection closes */
	FM_BAD_VERSION,    /* protocol version 9 */
	FM_NO_CODE,        /* a reply without CODE */
	FM_SILENT,         /* never answers */
	FM_CLOSE_AFTER,    /* closes the connection after each reply */
	FM_CLOSE_AT_ONCE,  /* closes each connection as soon as it is accepted */
	FM_CLOSE_FIRST,    /* the first connection: refuses ATTACH (no table), then closes; serves the others */
	FM_REFUSE_FIRST,   /* the first connection: a refusal (a REPLY of id 0), then closes; serves the others */
};

#define FAKE_KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FAKE_OBJ_SIZE 5000
#define FAKE_IDLE_MS 10000 /* a fake daemon nobody talks to exits */

static const char *const entries[] = { "vadd", "vsub" };
static const char *const options[] = { "-O3", "-DN=4", "-ffast-math" };
static const char hdr1[] = "#define ONE 1\n";
static const char hdr2[] = "#define TWO 2\n";

/* ---- the fake daemon ---- */

static int reply(int fd, struct kj__buf *b)
{
	kj__msg_end(b);
	return kj__frame_write_fd(fd, b);
}

static int field_is(const struct kj__field *f, const char *s)
{
	return f && f->len == strlen(s) && memcmp(f->p, s, f->len) == 0;
}

/* Checks a GET built from test_get_roundtrip's request; returns why not. */
static const char *get_mismatch(const struct kj__msg *m)
{
	uint32_t backend = 0;
	size_t pos = 0;
	const struct kj__field *f;

	if (kj__field_u32(kj__msg_get(m, KJ_F_BACKEND), &backend) < 0 || backend != KJIT_BACKEND_HIP)
		return "backend";
	if (!field_is(kj__msg_get(m, KJ_F_TARGET), "gfx90a:xnack-"))
		return "target";
	if (!field_is(kj__msg_get(m, KJ_F_VERSION), "5.2"))
		return "version";
	if (!field_is(kj__msg_get(m, KJ_F_SOURCE), "__global__ void vadd() {}\n"))
		return "source";
	if (!field_is(kj__msg_get(m, KJ_F_SOURCE_NAME), "vadd.hip"))
		return "source name";
	if (kj__msg_get(m, KJ_F_KERNEL) != NULL)
		return "kernel";
	for (size_t i = 0; i < KJ_ARRAY_SIZE(entries); i++)
		if (!field_is(kj__msg_next(m, KJ_F_ENTRY, &pos), entries[i]))
			return "entries";
	pos = 0;
	for (size_t i = 0; i < KJ_ARRAY_SIZE(options); i++)
		if (!field_is(kj__msg_next(m, KJ_F_OPTION, &pos), options[i]))
			return "options (order)";
	if (kj__msg_next(m, KJ_F_OPTION, &pos) != NULL)
		return "extra option";
	/* Header pairs: name immediately followed by its data. */
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (m->f[i].tag != KJ_F_HEADER_NAME)
			continue;
		if (i + 1 >= m->n || m->f[i + 1].tag != KJ_F_HEADER_DATA)
			return "header pairs";
		if (!field_is(&m->f[i], k == 0 ? "one.h" : "sub/two.h") ||
		    !field_is(&m->f[i + 1], k == 0 ? hdr1 : hdr2))
			return "header contents";
		k++;
	}
	f = kj__msg_get(m, KJ_F_TARGET_SOURCE);
	if (k != 2 || f != NULL)
		return "header count or target source";
	return NULL;
}

#define FAKE_BIG_SIZE (KJ_RESULT_TAKE_MIN + 4321) /* kernel "big": the result takes the reply's buffer */

static void answer_get(int fd, struct kj__buf *b, const struct kj__msg *m)
{
	static uint8_t obj[FAKE_OBJ_SIZE], big[FAKE_BIG_SIZE];
	const struct kj__field *kernel = kj__msg_get(m, KJ_F_KERNEL);
	const struct kj__field *target = kj__msg_get(m, KJ_F_TARGET);
	const struct kj__field *from = kj__msg_get(m, KJ_F_TARGET_SOURCE);
	const char *why = NULL;
	char echo[KJ_TARGET_MAX + 80];

	for (size_t i = 0; i < sizeof obj; i++)
		obj[i] = (uint8_t)(i * 7);
	if (field_is(kernel, "fail_compile")) {
		kj__msg_put_i32(b, KJ_F_CODE, KJIT_ECOMPILE);
		kj__msg_put_str(b, KJ_F_ERROR, "k.hip:3:5: error: expected ';'");
		kj__msg_put_str(b, KJ_F_LOG, "k.hip:3:5: error: expected ';'\n  int x\n    ^\n");
		reply(fd, b);
		return;
	}
	if (field_is(kernel, "echo_target")) {
		/* Answers with the target and its source as the log. */
		snprintf(echo, sizeof echo, "target=%.*s from=%.*s", target ? (int)target->len : 0,
			 target ? (const char *)target->p : "", from ? (int)from->len : 0,
			 from ? (const char *)from->p : "");
	} else if (kernel == NULL) {
		why = get_mismatch(m);
	}
	if (why) {
		kj__msg_put_i32(b, KJ_F_CODE, KJIT_EINTERNAL);
		kj__msg_put_str(b, KJ_F_ERROR, why);
		reply(fd, b);
		return;
	}
	kj__msg_put_i32(b, KJ_F_CODE, 0);
	kj__msg_put_u32(b, KJ_F_STATUS, field_is(kernel, "bad_status") ? 9 : KJIT_STATUS_COMPILED);
	if (field_is(kernel, "big")) {
		for (size_t i = 0; i < sizeof big; i++)
			big[i] = (uint8_t)(i * 13 + i / 251);
		kj__msg_put(b, KJ_F_DATA, big, sizeof big);
	} else {
		kj__msg_put(b, KJ_F_DATA, obj, sizeof obj);
	}
	kj__msg_put_str(b, KJ_F_KEY, field_is(kernel, "bad_key") ? "XYZ" : FAKE_KEY);
	kj__msg_put_str(b, KJ_F_TARGET, "gfx90a:xnack-");
	kj__msg_put_str(b, KJ_F_VERSION, "5.2");
	kj__msg_put_str(b, KJ_F_LOG, field_is(kernel, "echo_target") ? echo : "remark: fine");
	reply(fd, b);
}

static void answer_admin(int fd, struct kj__buf *b, const struct kj__msg *m)
{
	char *cmd = NULL, *arg = NULL, text[256];

	kj__field_strdup(kj__msg_get(m, KJ_F_CMD), 64, &cmd);
	kj__field_strdup(kj__msg_get(m, KJ_F_ARG), 4096, &arg);
	if (cmd && strcmp(cmd, "verify") == 0) {
		kj__msg_put_i32(b, KJ_F_CODE, KJIT_ECORRUPT);
		kj__msg_put_str(b, KJ_F_TEXT, "corrupt " FAKE_KEY "\n");
		kj__msg_put_str(b, KJ_F_JSON, "{\"checked\":3,\"bad\":1}");
		kj__msg_put_str(b, KJ_F_ERROR, "verify found 1 corrupt object");
	} else {
		snprintf(text, sizeof text, "cmd=%s arg=%s\n", cmd ? cmd : "", arg ? arg : "(none)");
		kj__msg_put_i32(b, KJ_F_CODE, 0);
		kj__msg_put_str(b, KJ_F_TEXT, text);
		kj__msg_put_str(b, KJ_F_JSON, "{\"ok\":true}");
	}
	reply(fd, b);
	free(cmd);
	free(arg);
}

/* Serves one connection until it closes. */
static void serve_conn(int fd, int mode)
{
	struct kj__frame_hdr h;
	uint8_t *body;

	while (kj__frame_read_fd(fd, FAKE_IDLE_MS, &h, &body) == 0) {
		struct kj__msg m = { 0 };
		struct kj__buf b = { 0 };
		uint32_t id = mode == FM_WRONG_ID ? h.id + 1 : h.id;

		kj__msg_decode(body, h.len, &m);
		kj__msg_begin(&b, KJ_MSG_REPLY, id);
		if (mode == FM_SILENT) {
			sleep(FAKE_IDLE_MS / 1000);
		} else if (mode == FM_BAD_FIELD) {
			static const uint8_t bad[] = { KJ_F_CODE, 0, 100, 0, 0, 0, 1, 2 };
			kj__buf_append(&b, bad, sizeof bad);
			reply(fd, &b);
		} else if (mode == FM_CLOSE_MID) {
			kj__msg_put_i32(&b, KJ_F_CODE, 0);
			kj__msg_put_str(&b, KJ_F_TEXT, "a reply that is cut short");
			kj__msg_end(&b);
			kj__write_all(fd, b.p, b.len / 2);
			_exit(0);
		} else if (mode == FM_BAD_VERSION) {
			kj__msg_put_i32(&b, KJ_F_CODE, 0);
			b.p[6] = 9;
			reply(fd, &b);
		} else if (mode == FM_NO_CODE) {
			kj__msg_put_str(&b, KJ_F_TEXT, "no code here");
			reply(fd, &b);
		} else if (h.type == KJ_MSG_PING) {
			kj__msg_put_i32(&b, KJ_F_CODE, 0);
			reply(fd, &b);
		} else if (h.type == KJ_MSG_ATTACH) { /* no shared table here */
			kj__msg_put_i32(&b, KJ_F_CODE, KJIT_ENOENT);
			reply(fd, &b);
		} else if (h.type == KJ_MSG_GET) {
			answer_get(fd, &b, &m);
		} else if (h.type == KJ_MSG_ADMIN) {
			answer_admin(fd, &b, &m);
		} else if (h.type == KJ_MSG_STOP) {
			kj__msg_put_i32(&b, KJ_F_CODE, 0);
			reply(fd, &b);
			kill(getppid(), SIGTERM);
			_exit(0);
		}
		kj__buf_free(&b);
		kj__msg_free(&m);
		free(body);
		if (mode == FM_CLOSE_AFTER && h.type != KJ_MSG_ATTACH)
			break;
	}
	_exit(0);
}

/* The accept loop: one child per connection.  Exits when idle. */
static void __attribute__((noreturn)) fake_serve(int lfd, int mode)
{
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* connection children reap themselves */
	for (int n = 0;; n++) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		if (poll(&p, 1, FAKE_IDLE_MS) <= 0)
			_exit(0);
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (mode == FM_CLOSE_AT_ONCE) {
			close(fd);
			continue;
		}
		if (mode == FM_REFUSE_FIRST && n == 0) { /* as kjitd refuses at accept */
			struct kj__buf b = { 0 };
			kj__msg_begin(&b, KJ_MSG_REPLY, 0);
			kj__msg_put_i32(&b, KJ_F_CODE, KJIT_EBUSY);
			kj__msg_put_str(&b, KJ_F_ERROR, "fake kjitd: too many connections");
			reply(fd, &b);
			kj__buf_free(&b);
			close(fd);
			continue;
		}
		if (mode == FM_CLOSE_FIRST && n == 0) { /* kept by the client, then gone */
			struct kj__frame_hdr h;
			uint8_t *body = NULL;
			if (kj__frame_read_fd(fd, FAKE_IDLE_MS, &h, &body) == 0 && h.type == KJ_MSG_ATTACH) {
				struct kj__buf b = { 0 };
				kj__msg_begin(&b, KJ_MSG_REPLY, h.id);
				kj__msg_put_i32(&b, KJ_F_CODE, KJIT_ENOENT);
				reply(fd, &b);
				kj__buf_free(&b);
			}
			free(body);
			close(fd);
			continue;
		}
		if (fork() == 0) {
			close(lfd);
			serve_conn(fd, mode);
		}
		close(fd);
	}
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof sa.sun_path)
		return -1;
	memcpy(sa.sun_path, path, strlen(path));
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Started by libkjit as "kjitd --socket PATH ... --ready-fd 3" through
 * fake-kjitd.sh, which sets KJ_FAKE_READY_FD: the fake says it serves
 * there, as kjitd does. */
__attribute__((constructor)) static void fake_kjitd_main(void)
{
	const char *sock = getenv("KJ_FAKE_KJITD");
	const char *pidfile = getenv("KJ_FAKE_PIDFILE");
	char pid[32];

	if (sock == NULL)
		return;
	struct timespec ts = { 0, 200 * 1000000L }; /* come up slowly, as a real one may */
	nanosleep(&ts, NULL);
	int fd = listen_at(sock);
	if (fd < 0) {
		fprintf(stderr, "fake kjitd: cannot listen at %s: %s\n", sock, strerror(errno));
		_exit(1);
	}
	if (pidfile) {
		int pf = open(pidfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		snprintf(pid, sizeof pid, "%d\n", (int)getpid());
		if (pf >= 0) {
			kj__write_all(pf, pid, strlen(pid));
			close(pf);
		}
	}
	const char *ready = getenv("KJ_FAKE_READY_FD");
	if (ready) {
		int rfd = atoi(ready);
		if (write(rfd, "", 1) != 1)
			fprintf(stderr, "fake kjitd: cannot write to --ready-fd %d: %s\n", rfd, strerror(errno));
		close(rfd);
	}
	fake_serve(fd, FM_NORMAL);
}

/* ---- test scaffolding ---- */

struct fake {
	char dir[64];
	char sock[128];
	pid_t pid;
};

static void make_dir(struct fake *f)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/kjit-test-client.XXXXXX");
	CHECK(mkdtemp(f->dir) != NULL);
	snprintf(f->sock, sizeof f->sock, "%s/kjitd.sock", f->dir);
	f->pid = -1;
}

static void fake_start(struct fake *f, int mode)
{
	make_dir(f);
	int fd = listen_at(f->sock);
	CHECK(fd >= 0);
	fflush(NULL);
	f->pid = fork();
	CHECK(f->pid >= 0);
	if (f->pid == 0) {
		setpgid(0, 0); /* fake_stop ends it with its connection children */
		fake_serve(fd, mode);
	}
	setpgid(f->pid, f->pid);
	close(fd);
}

static void fake_stop(struct fake *f)
{
	char cmd[128];

	if (f->pid > 0) {
		kill(-f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	CHECK(system(cmd) == 0);
}

static kjit_client *open_at(const char *sock, int timeout_ms)
{
	kjit_open_options o = { .socket_path = sock, .no_autostart = 1, .timeout_ms = timeout_ms };
	kjit_client *c = NULL;
	int r = kjit_open(&c, &o);
	if (r != 0)
		fprintf(stderr, "kjit_open: %d %s\n", r, kjit_last_error(NULL));
	CHECK_EQ_INT(r, 0);
	return c;
}

/* A clean environment for target resolution. */
static void env_clear(void)
{
	static const char *const vars[] = {
		"KJIT_HIP_ARCH", "KJIT_CUDA_ARCH", "KJIT_VULKAN_ENV", "KJIT_ROCM_VERSION",
		"KJIT_CUDA_VERSION", "HSA_OVERRIDE_GFX_VERSION", "HSA_XNACK", "CANDLE_ROCM_ARCH",
		"CANDLE_ROCM_VERSION", "KJIT_NO_AUTOSTART", "KJIT_SOCKET", "KJIT_KJITD",
	};
	for (size_t i = 0; i < KJ_ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
}

/* ---- tests ---- */

static void test_ping(void)
{
	struct fake f;
	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
	CHECK_EQ_INT(kjit_ping(c), 0);
	CHECK_EQ_INT(kjit_ping(c), 0);
	CHECK_EQ_STR(kjit_last_error(c), "");
	kjit_close(c);
	kjit_close(NULL);
	fake_stop(&f);
}

static void test_get_roundtrip(void)
{
	struct fake f;
	static const char src[] = "__global__ void vadd() {}\n";
	kjit_header h[] = { { "one.h", hdr1, sizeof hdr1 - 1 }, { "sub/two.h", hdr2, sizeof hdr2 - 1 } };
	kjit_request req = {
		.backend = KJIT_BACKEND_HIP, .target = "gfx90a:xnack-", .runtime_version = "5.2",
		.source = src, .source_size = sizeof src - 1, .source_name = "vadd.hip",
		.entries = entries, .n_entries = 2, .options = options, .n_options = 3,
		.headers = h, .n_headers = 2,
	};
	kjit_result res;

	env_clear();
	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
	int r = kjit_get(c, &req, &res);
	if (r != 0)
		fprintf(stderr, "error: %s\n", res.error ? res.error : "(none)");
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_INT(res.status, KJIT_STATUS_COMPILED);
	CHECK_EQ_INT(res.size, FAKE_OBJ_SIZE);
	for (size_t i = 0; i < res.size; i++)
		CHECK(res.data[i] == (uint8_t)(i * 7));
	CHECK_EQ_STR(res.key, FAKE_KEY);
	CHECK_EQ_STR(res.target, "gfx90a:xnack-");
	CHECK_EQ_STR(res.runtime_version, "5.2");
	CHECK_EQ_STR(res.log, "remark: fine");
	CHECK(res.error == NULL);
	kjit_result_free(&res);
	kjit_result_free(&res); /* twice is safe */
	CHECK(res.data == NULL && res.target == NULL && res.size == 0);
	kjit_result_free(NULL);
	kjit_close(c);
	fake_stop(&f);
}

static void test_get_env_target(void)
{
	struct fake f;
	kjit_request req = { .backend = KJIT_BACKEND_HIP, .kernel = "echo_target" };
	kjit_result res;

	env_clear();
	/* The same bytes go out twice here and the daemon's echo is checked
	 * each time: the process memo would answer the second itself. */
	setenv("KJIT_PROCESS_MEMO", "0", 1);
	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
	/* Nothing set: no TARGET goes out; the daemon decides. */
	CHECK_EQ_INT(kjit_get(c, &req, &res), 0);
	CHECK_EQ_STR(res.log, "target= from=");
	kjit_result_free(&res);
	/* The environment's choice, and where it came from. */
	setenv("KJIT_HIP_ARCH", "gfx90a", 1);
	CHECK_EQ_INT(kjit_get(c, &req, &res), 0);
	CHECK(res.log && strncmp(res.log, "target=gfx90a", 13) == 0);
	CHECK(strstr(res.log, "from=KJIT_HIP_ARCH") != NULL);
	kjit_result_free(&res);
	/* no_env: the environment is not consulted. */
	req.no_env = 1;
	CHECK_EQ_INT(kjit_get(c, &req, &res), 0);
	CHECK_EQ_STR(res.log, "target= from=");
	kjit_result_free(&res);
	/* An explicit target wins and carries no source. */
	req.no_env = 0;
	req.target = "gfx1030";
	CHECK_EQ_INT(kjit_get(c, &req, &res), 0);
	CHECK_EQ_STR(res.log, "target=gfx1030 from=");
	kjit_result_free(&res);
	/* A malformed variable fails with a line that names it. */
	req.target = NULL;
	setenv("KJIT_HIP_ARCH", "amdgcn-amd-amdhsa--gfx90a", 1);
	int r = kjit_get(c, &req, &res);
	CHECK(r == KJIT_ETARGET || r == KJIT_EINVAL);
	CHECK(res.error && strstr(res.error, "KJIT_HIP_ARCH") != NULL);
	CHECK(strchr(res.error, '\n') == NULL);
	kjit_result_free(&res);
	kjit_close(c);
	fake_stop(&f);
}

static void test_get_compile_error(void)
{
	struct fake f;
	kjit_request req = { .backend = KJIT_BACKEND_HIP, .kernel = "fail_compile", .no_env = 1 };
	kjit_result res;

	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
	CHECK_EQ_INT(kjit_get(c, &req, &res), KJIT_ECOMPILE);
	CHECK_EQ_STR(res.error, "k.hip:3:5: error: expected ';'");
	CHECK(res.log && strstr(res.log, "int x") != NULL);
	CHECK(res.data == NULL && res.status == KJIT_STATUS_NONE);
	CHECK_EQ_STR(kjit_last_error(c), "k.hip:3:5: error: expected ';'");
	kjit_result_free(&res);
	/* The connection is still in step after an error reply. */
	CHECK_EQ_INT(kjit_ping(c), 0);
	kjit_close(c);
	fake_stop(&f);
}

static void test_get_bad_answers(void)
{
	struct fake f;
	kjit_request req = { .backend = KJIT_BACKEND_HIP, .kernel = "bad_key", .no_env = 1 };
	kjit_result res;

	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
	CHECK_EQ_INT(kjit_get(c, &req, &res), KJIT_EPROTO);
	CHECK(res.error != NULL && res.data == NULL && res.target == NULL);
	kjit_result_free(&res);
	req.kernel = "bad_status";
	CHECK_EQ_INT(kjit_get(c, &req, &res), KJIT_EPROTO);
	kjit_result_free(&res);
	kjit_close(c);
	fake_stop(&f);
}

static void expect_transport(int mode, int want, const char *word)
{
	struct fake f;
	fake_start(&f, mode);
	kjit_client *c = open_at(f.sock, 500);
	uint64_t t0 = kj__now_us();
	CHECK_EQ_INT(kjit_ping(c), want);
	CHECK(kj__now_us() - t0 < 5000000u);
	const char *e = kjit_last_error(c);
	if (strstr(e, word) == NULL)
		fprintf(stderr, "last error: %s\n", e);
	CHECK(strstr(e, word) != NULL);
	CHECK(strchr(e, '\n') == NULL);
	kjit_close(c);
	fake_stop(&f);
}

static void test_wrong_id(void) { expect_transport(FM_WRONG_ID, KJIT_EPROTO, "request"); }
static void test_bad_field(void) { expect_transport(FM_BAD_FIELD, KJIT_EPROTO, "malformed"); }
static void test_bad_version(void) { expect_transport(FM_BAD_VERSION, KJIT_EPROTO, "version 9"); }
static void test_no_code(void) { expect_transport(FM_NO_CODE, KJIT_EPROTO, "malformed"); }
static void test_close_mid_reply(void) { expect_transport(FM_CLOSE_MID, KJIT_ECONNECT, "closed"); }
static void test_timeout(void) { expect_transport(FM_SILENT, KJIT_ETIMEDOUT, "500 ms"); }

static void test_sigpipe_safe(void)
{
	/* SIGPIPE keeps its default action: a send to a closed peer must not
	 * kill the process. */
	signal(SIGPIPE, SIG_DFL);
	expect_transport(FM_CLOSE_AT_ONCE, KJIT_ECONNECT, "kjitd");
}

static void test_reconnect_after_close(void)
{
	struct fake f;
	fake_start(&f, FM_CLOSE_AFTER);
	kjit_client *c = open_at(f.sock, 0);
	struct timespec ts = { 0, 50 * 1000000L }; /* the daemon goes away between calls */
	for (int i = 0; i < 5; i++) {
		CHECK_EQ_INT(kjit_ping(c), 0);
		nanosleep(&ts, NULL);
	}
	kjit_close(c);
	fake_stop(&f);
}

/* A connection the daemon closed before it carried any request (a client
 * whose hits all came from the shared table or its memo, then a kjitd
 * restart): the next request is sent again on a fresh connection, as on
 * one that had carried requests. */
/* Waits (5 s at most) until the daemon has closed c's connection (what
 * it sent before is left unread). */
static void wait_hangup(kjit_client *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };
	CHECK(c->fd >= 0 && poll(&p, 1, 5000) == 1 && (p.revents & (POLLRDHUP | POLLHUP)));
}

static void test_reconnect_unused(void)
{
	struct fake f;
	fake_start(&f, FM_CLOSE_FIRST);
	kjit_client *c = open_at(f.sock, 0);
	wait_hangup(c);
	CHECK_EQ_INT(kjit_ping(c), 0);
	CHECK_EQ_INT(kjit_ping(c), 0);
	kjit_close(c);
	fake_stop(&f);
	/* The same for a batch (kjit_get_many's own exchange). */
	kjit_request req = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a", .runtime_version = "5.2",
			     .kernel = "vadd" };
	kjit_result res[1] = { { 0 } };
	int codes[1] = { 1 };
	env_clear();
	fake_start(&f, FM_CLOSE_FIRST);
	c = open_at(f.sock, 0);
	wait_hangup(c);
	CHECK_EQ_INT(kjit_get_many(c, &req, 1, res, codes, NULL, NULL), 0);
	CHECK(codes[0] == 0 && res[0].size == FAKE_OBJ_SIZE);
	kjit_result_free(&res[0]);
	kjit_close(c);
	fake_stop(&f);
	/* A refusal waiting on kjit_open's connection (no ATTACH read it: the
	 * fast path off) is the answer, not a reason to connect again. */
	setenv("KJIT_FAST_PATH", "0", 1);
	fake_start(&f, FM_REFUSE_FIRST);
	c = open_at(f.sock, 0);
	wait_hangup(c);
	CHECK_EQ_INT(kjit_ping(c), KJIT_EBUSY);
	CHECK(strstr(kjit_last_error(c), "too many connections") != NULL);
	kjit_close(c);
	fake_stop(&f);
	unsetenv("KJIT_FAST_PATH");
}

static void test_admin(void)
{
	struct fake f;
	char *text = NULL, *json = NULL;

	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
	CHECK_EQ_INT(kjit_admin(c, "ls", "gfx90a", &text, &json), 0);
	CHECK_EQ_STR(text, "cmd=ls arg=gfx90a\n");
	CHECK_EQ_STR(json, "{\"ok\":true}");
	free(text);
	free(json);
	CHECK_EQ_INT(kjit_admin(c, "stats", NULL, &text, NULL), 0);
	CHECK_EQ_STR(text, "cmd=stats arg=(none)\n");
	free(text);
	/* A failed command still hands over its report. */
	CHECK_EQ_INT(kjit_admin(c, "verify", NULL, &text, &json), KJIT_ECORRUPT);
	CHECK(text && strstr(text, "corrupt") != NULL);
	CHECK_EQ_STR(json, "{\"checked\":3,\"bad\":1}");
	CHECK_EQ_STR(kjit_last_error(c), "verify found 1 corrupt object");
	free(text);
	free(json);
	CHECK_EQ_INT(kjit_admin(c, "bad cmd", NULL, &text, &json), KJIT_EINVAL);
	CHECK(text == NULL && json == NULL);
	CHECK_EQ_INT(kjit_admin(c, "ls", "a\nb", NULL, NULL), KJIT_EINVAL);
	kjit_close(c);
	fake_stop(&f);
}

static void test_stop(void)
{
	struct fake f;
	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
	CHECK_EQ_INT(kjit_stop(c), 0);
	waitpid(f.pid, NULL, 0);
	f.pid = -1;
	/* Gone, and with autostart off the next call says so. */
	CHECK_EQ_INT(kjit_ping(c), KJIT_ECONNECT);
	kjit_close(c);
	fake_stop(&f);
}

static void test_validation(void)
{
	struct fake f;
	static const char *const bad_entries[] = { "ok", NULL };
	static const char *const slash_entry[] = { "a/b" };
	kjit_header bad_h = { NULL, "x", 1 };
	kjit_result res;
	const kjit_request good = { .backend = KJIT_BACKEND_HIP, .source = "x", .source_size = 1,
				    .no_env = 1 };
	kjit_request r;

	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 0);
#define EXPECT(code, ...)                                                   \
	do {                                                                \
		r = good;                                                   \
		__VA_ARGS__;                                                \
		CHECK_EQ_INT(kjit_get(c, &r, &res), code);                  \
		CHECK(res.error != NULL && res.error[0] != '\0');           \
		kjit_result_free(&res);                                     \
	} while (0)
	EXPECT(KJIT_EBACKEND, r.backend = 42);
	EXPECT(KJIT_EBACKEND, r.backend = KJIT_BACKEND_NONE);
	EXPECT(KJIT_EINVAL, r.kernel = "gelu");
	EXPECT(KJIT_EINVAL, r.source = NULL);
	EXPECT(KJIT_EINVAL, r.source_size = 0);
	EXPECT(KJIT_ETOOBIG, r.source_size = KJ_SOURCE_MAX + 1);
	EXPECT(KJIT_EINVAL, r.source = NULL; r.kernel = "../etc");
	EXPECT(KJIT_EINVAL, r.source_name = "dir/../x.hip"); /* a place in the tree ("dir/x.hip") is fine, ".." is not */
	EXPECT(KJIT_EINVAL, r.target = "gfx 90a");
	EXPECT(KJIT_EINVAL, r.runtime_version = "5/2");
	EXPECT(KJIT_EINVAL, r.entries = bad_entries; r.n_entries = 2);
	EXPECT(KJIT_EINVAL, r.entries = slash_entry; r.n_entries = 1);
	EXPECT(KJIT_EINVAL, r.n_entries = 1);
	EXPECT(KJIT_EINVAL, r.options = options; r.n_options = KJ_OPTIONS_MAX_COUNT + 1);
	EXPECT(KJIT_EINVAL, r.headers = &bad_h; r.n_headers = 1);
#undef EXPECT
	CHECK_EQ_INT(kjit_get(c, NULL, &res), KJIT_EINVAL);
	CHECK_EQ_INT(kjit_get(NULL, &good, &res), KJIT_EINVAL);
	CHECK_EQ_INT(kjit_get(c, &good, NULL), KJIT_EINVAL);
	/* Validation never desynchronised the connection. */
	CHECK_EQ_INT(kjit_ping(c), 0);
	kjit_close(c);
	fake_stop(&f);
}

static void test_no_server_no_autostart(void)
{
	struct fake f;
	kjit_client *c = (kjit_client *)&f;
	kjit_open_options o = { .no_autostart = 1 };

	env_clear();
	make_dir(&f);
	o.socket_path = f.sock;
	uint64_t t0 = kj__now_us();
	CHECK_EQ_INT(kjit_open(&c, &o), KJIT_ECONNECT);
	CHECK(c == NULL);
	CHECK(kj__now_us() - t0 < 1000000u);
	CHECK(strstr(kjit_last_error(NULL), f.sock) != NULL);
	CHECK(strstr(kjit_last_error(NULL), "autostart is off") != NULL);
	/* The environment switch, with the socket from KJIT_SOCKET. */
	setenv("KJIT_SOCKET", f.sock, 1);
	setenv("KJIT_NO_AUTOSTART", "1", 1);
	CHECK_EQ_INT(kjit_open(&c, NULL), KJIT_ECONNECT);
	CHECK(strstr(kjit_last_error(NULL), "KJIT_NO_AUTOSTART") != NULL);
	/* System mode: never started, and the message says how to start it. */
	setenv("KJIT_SOCKET", "/run/kjit/kjitd.sock", 1);
	unsetenv("KJIT_NO_AUTOSTART");
	if (access("/run/kjit/kjitd.sock", F_OK) != 0) {
		CHECK_EQ_INT(kjit_open(&c, NULL), KJIT_ECONNECT);
		CHECK(strstr(kjit_last_error(NULL), "systemctl start kjitd.socket") != NULL);
	}
	fake_stop(&f);
}

static void test_autostart_refuses_shared_dir(void)
{
	struct fake f;
	kjit_client *c = NULL;
	char sock[192];

	env_clear();
	make_dir(&f);
	CHECK(chmod(f.dir, 0777) == 0);
	snprintf(sock, sizeof sock, "%s/kjitd.sock", f.dir);
	setenv("KJIT_SOCKET", sock, 1);
	setenv("KJIT_KJITD", "/bin/false", 1);
	CHECK_EQ_INT(kjit_open(&c, NULL), KJIT_ECONNECT);
	/* Refused before autostart: the trust rules (client/trust.c) say why. */
	CHECK(strstr(kjit_last_error(NULL), "writable by others") != NULL);
	fake_stop(&f);
}

static void test_autostart_bad_binary(void)
{
	struct fake f;
	kjit_client *c = NULL;
	char sock[192];

	env_clear();
	make_dir(&f);
	snprintf(sock, sizeof sock, "%s/run/kjitd.sock", f.dir);
	setenv("KJIT_SOCKET", sock, 1);
	setenv("KJIT_KJITD", "/nonexistent/kjitd", 1);
	uint64_t t0 = kj__now_us();
	CHECK_EQ_INT(kjit_open(&c, NULL), KJIT_ECONNECT);
	CHECK(kj__now_us() - t0 < 2000000u);
	const char *e = kjit_last_error(NULL);
	CHECK(strstr(e, "could not start kjitd (/nonexistent/kjitd)") != NULL);
	CHECK(strstr(e, "kjitd.log") != NULL);
	fake_stop(&f);
}

static void test_autostart_race(void)
{
	struct fake f;
	char sock[192], script[192], count[192], pidfile[192], self[512], cmd[1024];
	enum { CLIENTS = 8 };
	pid_t kids[CLIENTS];
	struct stat st;

	env_clear();
	make_dir(&f);
	snprintf(sock, sizeof sock, "%s/rt/kjitd.sock", f.dir);
	snprintf(script, sizeof script, "%s/fake-kjitd.sh", f.dir);
	snprintf(count, sizeof count, "%s/starts", f.dir);
	snprintf(pidfile, sizeof pidfile, "%s/pid", f.dir);
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = '\0';
	/* kjitd --socket PATH: count the start, then become the fake daemon. */
	FILE *fp = fopen(script, "w");
	CHECK(fp != NULL);
	fprintf(fp, "#!/bin/sh\n[ \"$1\" = --socket ] || exit 2\necho start >> '%s'\n"
		    "case \"$*\" in *'--ready-fd 3'*) export KJ_FAKE_READY_FD=3;; esac\n"
		    "KJ_FAKE_KJITD=\"$2\" KJ_FAKE_PIDFILE='%s' exec '%s'\n", count, pidfile, self);
	fclose(fp);
	CHECK(chmod(script, 0755) == 0);
	setenv("KJIT_SOCKET", sock, 1);
	setenv("KJIT_KJITD", script, 1);
	fflush(NULL);
	for (int i = 0; i < CLIENTS; i++) {
		kids[i] = fork();
		CHECK(kids[i] >= 0);
		if (kids[i] == 0) {
			kjit_client *c = NULL;
			int r = kjit_open(&c, NULL);
			if (r == 0)
				r = kjit_ping(c);
			if (r != 0)
				fprintf(stderr, "client %d: %s\n", i, c ? kjit_last_error(c) : kjit_last_error(NULL));
			kjit_close(c);
			_exit(r == 0 ? 0 : 1);
		}
	}
	int ok = 0;
	for (int i = 0; i < CLIENTS; i++) {
		int s = 0;
		waitpid(kids[i], &s, 0);
		ok += WIFEXITED(s) && WEXITSTATUS(s) == 0;
	}
	uint8_t *data = NULL;
	size_t len = 0;
	CHECK(kj__read_file(count, 4096, &data, &len) == 0);
	CHECK_EQ_STR((char *)data, "start\n"); /* exactly one start */
	free(data);
	CHECK(kj__read_file(pidfile, 64, &data, &len) == 0);
	pid_t daemon_pid = (pid_t)atoi((char *)data);
	free(data);
	CHECK(daemon_pid > 1);
	kill(daemon_pid, SIGTERM);
	CHECK_EQ_INT(ok, CLIENTS);
	/* The socket's directory was made private, the log is there. */
	snprintf(cmd, sizeof cmd, "%s/rt", f.dir);
	CHECK(stat(cmd, &st) == 0 && (st.st_mode & 0777) == 0700);
	snprintf(cmd, sizeof cmd, "%s/rt/kjitd.log", f.dir);
	CHECK(access(cmd, F_OK) == 0);
	fake_stop(&f);
}

/* Ends the fake daemon and its connection children, keeping its files. */
static void fake_kill(struct fake *f)
{
	kill(-f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	f->pid = -1;
}

/* A fake kjitd and a handle on it, with the process memo on (its default). */
static kjit_client *memo_client(struct fake *f)
{
	env_clear();
	unsetenv("KJIT_PROCESS_MEMO");
	fake_start(f, FM_NORMAL);
	return open_at(f->sock, 2000);
}

/* The second get of the same bytes is answered with the daemon gone: it
 * never reached the socket.  Other bytes, and failures, still need it. */
static void test_process_memo(void)
{
	struct fake f;
	kjit_request req = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a:xnack-", .kernel = "vadd" };
	kjit_request fail = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a:xnack-", .kernel = "fail_compile" };
	kjit_result res, res2;

	kjit_client *c = memo_client(&f);
	CHECK_EQ_INT(kjit_get(c, &req, &res), 0);
	CHECK_EQ_INT(res.status, KJIT_STATUS_COMPILED);
	CHECK_EQ_INT(kjit_get(c, &fail, &res2), KJIT_ECOMPILE);
	kjit_result_free(&res2);
	fake_kill(&f);
	CHECK_EQ_INT(kjit_get(c, &req, &res2), 0);
	CHECK_EQ_INT(res2.status, KJIT_STATUS_HIT);
	CHECK(res2.size == res.size && memcmp(res2.data, res.data, res.size) == 0 && res2.data != res.data);
	CHECK_EQ_STR(res2.key, res.key);
	CHECK_EQ_STR(res2.target, "gfx90a:xnack-");
	CHECK_EQ_STR(res2.runtime_version, "5.2");
	CHECK(res2.error == NULL && res2.log == NULL);
	kjit_result_free(&res2);
	/* A failure was not remembered; other bytes (another target) miss. */
	CHECK_EQ_INT(kjit_get(c, &fail, &res2), KJIT_ECONNECT);
	kjit_result_free(&res2);
	req.target = "gfx90a";
	CHECK_EQ_INT(kjit_get(c, &req, &res2), KJIT_ECONNECT);
	kjit_result_free(&res2);
	kjit_result_free(&res);
	kjit_close(c);
	fake_stop(&f);
}

/* An object of KJ_RESULT_TAKE_MIN bytes or more: the result takes the
 * reply's own buffer (the object moved to its front) instead of a copy;
 * every byte and every text right, the buffer the result's to free (ASan:
 * no leak, no double free), and the process memo does not keep it (the
 * second get needs the daemon: the shared table serves it, a copy either
 * way). */
static void test_large_result_takes_reply(void)
{
	struct fake f;
	kjit_request req = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a:xnack-", .kernel = "big" };
	kjit_result res, res2;
	int same = 1;

	kjit_client *c = memo_client(&f);
	CHECK_EQ_INT(kjit_get(c, &req, &res), 0);
	CHECK_EQ_INT(res.status, KJIT_STATUS_COMPILED);
	CHECK(res.size == FAKE_BIG_SIZE && res.data != NULL);
	for (size_t i = 0; res.data && i < res.size && same; i++)
		same = res.data[i] == (uint8_t)(i * 13 + i / 251);
	CHECK(same);
	CHECK_EQ_STR(res.key, FAKE_KEY);
	CHECK_EQ_STR(res.target, "gfx90a:xnack-");
	CHECK_EQ_STR(res.runtime_version, "5.2");
	CHECK_EQ_STR(res.log, "remark: fine");
	fake_kill(&f);
	CHECK_EQ_INT(kjit_get(c, &req, &res2), KJIT_ECONNECT);
	kjit_result_free(&res2);
	kjit_result_free(&res);
	kjit_close(c);
	fake_stop(&f);
}

static void test_process_memo_off(void)
{
	struct fake f;
	kjit_request req = { .backend = KJIT_BACKEND_HIP, .target = "gfx90a:xnack-", .kernel = "vadd" };
	kjit_result res;

	env_clear();
	setenv("KJIT_PROCESS_MEMO", "0", 1);
	fake_start(&f, FM_NORMAL);
	kjit_client *c = open_at(f.sock, 2000);
	CHECK_EQ_INT(kjit_get(c, &req, &res), 0);
	kjit_result_free(&res);
	fake_kill(&f);
	CHECK_EQ_INT(kjit_get(c, &req, &res), KJIT_ECONNECT);
	kjit_result_free(&res);
	kjit_close(c);
	fake_stop(&f);
	unsetenv("KJIT_PROCESS_MEMO");
}

static void memo_res(kjit_result *r, uint8_t *buf, size_t n, uint8_t fill)
{
	memset(r, 0, sizeof *r);
	memset(buf, fill, n);
	r->data = buf;
	r->size = n;
	r->status = KJIT_STATUS_COMPILED;
	snprintf(r->key, sizeof r->key, "%s", FAKE_KEY);
	r->target = "sm_90";
	r->runtime_version = "13.0";
}

/* The memo on its own: bound, least recently used out, generations. */
static void test_process_memo_bound(void)
{
	struct kj__procmemo *m = NULL;
	static uint8_t buf[40000];
	uint8_t fp[KJ_SHA256_LEN];
	kjit_result in, out;
	size_t n, bytes;

	CHECK_EQ_INT(kj__procmemo_new(&m, 0), 0);
	CHECK(m == NULL); /* off */
	CHECK_EQ_INT(kj__procmemo_get(NULL, fp, 0, &out), 0);
	CHECK_EQ_INT(kj__procmemo_new(&m, 100000), 0);
	for (int i = 0; i < 10; i++) {
		memset(fp, i, sizeof fp);
		memo_res(&in, buf, 10000, (uint8_t)i);
		CHECK_EQ_INT(kj__procmemo_put(m, fp, 7, &in), 0);
		if (i == 3) { /* keep 0 recently used */
			memset(fp, 0, sizeof fp);
			CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 1);
			kjit_result_free(&out);
		}
	}
	kj__procmemo_usage(m, &n, &bytes);
	CHECK(bytes <= 100000 && n >= 8 && n < 10);
	memset(fp, 0, sizeof fp);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 1);
	CHECK(out.size == 10000 && out.data[9999] == 0 && out.status == KJIT_STATUS_HIT);
	CHECK_EQ_STR(out.target, "sm_90");
	CHECK_EQ_STR(out.runtime_version, "13.0");
	CHECK_EQ_STR(out.key, FAKE_KEY);
	kjit_result_free(&out);
	memset(fp, 1, sizeof fp);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 0); /* the oldest went */
	memset(fp, 9, sizeof fp);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 8, &out), 0); /* another generation: dropped */
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 0);
	/* Over a quarter of the memo: not kept. */
	memset(fp, 20, sizeof fp);
	memo_res(&in, buf, 30000, 20);
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 7, &in), 0);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 0);
	kj__procmemo_free(m);
	kj__procmemo_free(NULL);
}

/* A reply's frame taken over instead of copied (kj__procmemo_adopt): the
 * memo answers from it, frees it (ASan: no leak, no double free), counts
 * the whole frame, and leaves the caller a block it does not keep. */
static void test_process_memo_adopt(void)
{
	struct kj__procmemo *m = NULL;
	uint8_t fp[KJ_SHA256_LEN];
	kjit_result in, out;
	size_t n, bytes;

	CHECK_EQ_INT(kj__procmemo_new(&m, 100000), 0);
	uint8_t *frame = malloc(5000);
	CHECK(frame != NULL);
	if (frame == NULL)
		return;
	memset(frame, 0xee, 5000);
	memset(fp, 5, sizeof fp);
	memo_res(&in, frame + 1000, 4000, 5); /* the object: the frame's last 4000 bytes */
	uint8_t *keep = frame;
	CHECK_EQ_INT(kj__procmemo_adopt(m, fp, 7, &in, &keep, 5000), 0);
	CHECK(keep == NULL); /* the memo's now */
	kj__procmemo_usage(m, &n, &bytes);
	CHECK(n == 1 && bytes >= 5000);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 1);
	CHECK(out.size == 4000 && out.data != NULL && out.data[0] == 5 && out.data[3999] == 5);
	CHECK_EQ_STR(out.key, FAKE_KEY);
	kjit_result_free(&out);
	/* Not inside the block: refused, the block still the caller's. */
	static uint8_t other[100];
	uint8_t *mine = malloc(200);
	CHECK(mine != NULL);
	memset(fp, 6, sizeof fp);
	memo_res(&in, other, sizeof other, 6);
	keep = mine;
	CHECK_EQ_INT(kj__procmemo_adopt(m, fp, 7, &in, &keep, 200), KJIT_EINVAL);
	CHECK(keep == mine);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 0);
	/* Past the block's end: refused too. */
	memo_res(&in, mine, 100, 6);
	in.data = mine + 150; /* 100 bytes from there end 50 past the block */
	CHECK_EQ_INT(kj__procmemo_adopt(m, fp, 7, &in, &keep, 200), KJIT_EINVAL);
	CHECK(keep == mine);
	/* Over a quarter of the memo: not kept, the block still the caller's. */
	uint8_t *big = calloc(1, 30000);
	CHECK(big != NULL);
	memo_res(&in, big, 30000, 6);
	keep = big;
	CHECK_EQ_INT(kj__procmemo_adopt(m, fp, 7, &in, &keep, 30000), 0);
	CHECK(keep == big);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 7, &out), 0);
	free(big);
	free(mine);
	kj__procmemo_free(m); /* frees the adopted frame */
}

/* Lowered names (--name-expression) are kept with the object: a memo hit
 * returns its own copies of them, a missing one (NULL) included. */
static void test_process_memo_lowered(void)
{
	struct kj__procmemo *m = NULL;
	static uint8_t buf[100];
	uint8_t fp[KJ_SHA256_LEN];
	char *names[2] = { "_Z5scaleIfEvPT_S0_", NULL };
	kjit_result in, out;

	CHECK_EQ_INT(kj__procmemo_new(&m, 100000), 0);
	memset(fp, 3, sizeof fp);
	memo_res(&in, buf, sizeof buf, 3);
	in.lowered_names = names;
	in.n_lowered_names = 2;
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &in), 0);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 0, &out), 1);
	CHECK(out.n_lowered_names == 2 && out.lowered_names != NULL);
	if (out.lowered_names) {
		CHECK(out.lowered_names[0] != names[0]);
		CHECK_EQ_STR(out.lowered_names[0], "_Z5scaleIfEvPT_S0_");
		CHECK(out.lowered_names[1] == NULL);
	}
	kjit_result_free(&out);
	/* Without lowered names: none come back. */
	memset(fp, 4, sizeof fp);
	memo_res(&in, buf, sizeof buf, 4);
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &in), 0);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 0, &out), 1);
	CHECK(out.n_lowered_names == 0 && out.lowered_names == NULL);
	kjit_result_free(&out);
	kj__procmemo_free(m);
}

/* A sink handing out buf (NULL once fail is set), counting its calls. */
struct memo_sink {
	uint8_t buf[100];
	int calls, fail;
};

static void *memo_sink_alloc(void *ctx, size_t size)
{
	struct memo_sink *s = ctx;
	s->calls++;
	return s->fail || size > sizeof s->buf ? NULL : s->buf;
}

/* Whether the sink's buffer holds memo_res's bytes of fill. */
static int ms_is(const uint8_t *b, uint8_t fill)
{
	for (size_t i = 0; i < 100; i++)
		if (b[i] != fill)
			return 0;
	return 1;
}

/* kj__procmemo_get_into: the object into the sink's buffer, res->data
 * NULL, the rest as kj__procmemo_get; no buffer: KJIT_ENOMEM, res zeroed. */
static void test_process_memo_into(void)
{
	struct kj__procmemo *m = NULL;
	static uint8_t buf[100];
	static struct memo_sink ms;
	struct kj__sink sink = { memo_sink_alloc, &ms, NULL, NULL };
	uint8_t fp[KJ_SHA256_LEN];
	kjit_result in, out;

	CHECK_EQ_INT(kj__procmemo_new(&m, 100000), 0);
	memset(fp, 5, sizeof fp);
	memo_res(&in, buf, sizeof buf, 5);
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &in), 0);
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp, 0, &out, &sink), 1);
	CHECK(ms.calls == 1 && out.data == NULL && out.size == sizeof buf);
	CHECK(memcmp(ms.buf, buf, sizeof buf) == 0);
	CHECK(out.status == KJIT_STATUS_HIT && out.target && strcmp(out.target, "sm_90") == 0);
	CHECK_EQ_STR(out.key, FAKE_KEY);
	kjit_result_free(&out);
	ms.fail = 1;
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp, 0, &out, &sink), KJIT_ENOMEM);
	CHECK(out.data == NULL && out.size == 0 && out.target == NULL);
	CHECK_EQ_INT(kj__procmemo_get(m, fp, 0, &out), 1); /* still there */
	CHECK(out.data != NULL && memcmp(out.data, buf, sizeof buf) == 0);
	kjit_result_free(&out);
	kj__procmemo_free(m);
}

/* A sink whose caller holds the bytes of memo entry `holds` (0: none). */
struct kept_sink {
	struct memo_sink ms;
	uint64_t holds;
	int asked;
};

static int kept_sink_have(void *ctx, const uint64_t id[2], size_t size)
{
	struct kept_sink *k = ctx;
	k->asked++;
	return id[0] == 1 && id[1] != 0 && id[1] == k->holds && size == 100;
}

static void *kept_sink_alloc(void *ctx, size_t size)
{
	return memo_sink_alloc(&((struct kept_sink *)ctx)->ms, size);
}

/* The sink's have() and id (kj__get_into_kept): each entry entered gets
 * a number of its own, its id {1, number}, never reused (not by the same
 * fingerprint entered again, nor after a generation's drop); an answer
 * whose id the caller holds copies nothing and asks for no buffer; every
 * memo answer says its id. */
static void test_process_memo_kept(void)
{
	struct kj__procmemo *m = NULL;
	static uint8_t buf[100];
	static struct kept_sink ks;
	uint64_t id[2] = { 99, 99 };
	struct kj__sink sink = { kept_sink_alloc, &ks, kept_sink_have, id };
	uint8_t fp[KJ_SHA256_LEN], fp2[KJ_SHA256_LEN];
	kjit_result in, out;

	CHECK_EQ_INT(kj__procmemo_new(&m, 100000), 0);
	memset(fp, 5, sizeof fp);
	memset(fp2, 6, sizeof fp2);
	memo_res(&in, buf, sizeof buf, 5);
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &in), 0);
	memo_res(&in, buf, sizeof buf, 6);
	CHECK_EQ_INT(kj__procmemo_put(m, fp2, 0, &in), 0);
	/* Not held: copied, its number said. */
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp, 0, &out, &sink), 1);
	CHECK(ks.asked == 1 && ks.ms.calls == 1 && ms_is(ks.ms.buf, 5) && id[0] == 1 && id[1] == 1);
	kjit_result_free(&out);
	/* Held: nothing copied, no buffer asked for, the rest of the answer whole. */
	ks.holds = 1;
	memset(ks.ms.buf, 0, sizeof ks.ms.buf);
	id[0] = id[1] = 0;
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp, 0, &out, &sink), 1);
	CHECK(ks.asked == 2 && ks.ms.calls == 1 && ks.ms.buf[0] == 0 && id[0] == 1 && id[1] == 1);
	CHECK(out.data == NULL && out.size == sizeof buf && out.status == KJIT_STATUS_HIT);
	CHECK(out.target && strcmp(out.target, "sm_90") == 0);
	CHECK_EQ_STR(out.key, FAKE_KEY);
	kjit_result_free(&out);
	/* Another entry: its own number, not the held one. */
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp2, 0, &out, &sink), 1);
	CHECK(ks.ms.calls == 2 && ms_is(ks.ms.buf, 6) && id[0] == 1 && id[1] == 2);
	kjit_result_free(&out);
	/* The same fingerprint entered again (other bytes): a new number, so
	 * what the caller holds of the old entry is not taken for it. */
	memo_res(&in, buf, sizeof buf, 7);
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 0, &in), 0);
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp, 0, &out, &sink), 1);
	CHECK(ks.ms.calls == 3 && ms_is(ks.ms.buf, 7) && id[0] == 1 && id[1] == 3);
	kjit_result_free(&out);
	/* Dropped by another generation and entered again: a new number too. */
	ks.holds = 3;
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp, 1, &out, &sink), 0);
	memo_res(&in, buf, sizeof buf, 8);
	CHECK_EQ_INT(kj__procmemo_put(m, fp, 1, &in), 0);
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp, 1, &out, &sink), 1);
	CHECK(ks.ms.calls == 4 && ms_is(ks.ms.buf, 8) && id[0] == 1 && id[1] == 4);
	kjit_result_free(&out);
	/* Cleared (a reconnect): the numbers go on, so an entry made after it
	 * is never taken for one the caller kept from before. */
	ks.holds = 1; /* what it kept of the memo's first entry */
	kj__procmemo_clear(m);
	size_t n_ent, n_bytes;
	kj__procmemo_usage(m, &n_ent, &n_bytes);
	CHECK(n_ent == 0 && n_bytes == 0);
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp2, 0, &out, &sink), 0);
	memo_res(&in, buf, sizeof buf, 9);
	CHECK_EQ_INT(kj__procmemo_put(m, fp2, 0, &in), 0);
	CHECK_EQ_INT(kj__procmemo_get_into(m, fp2, 0, &out, &sink), 1);
	CHECK(ks.ms.calls == 5 && ms_is(ks.ms.buf, 9) && id[0] == 1 && id[1] == 5);
	kjit_result_free(&out);
	kj__procmemo_clear(NULL);
	kj__procmemo_free(m);
}

static void test_strings(void)
{
	/* Every code has words and its own name (common/err.c's one row each);
	 * the names are what the Python package shows (kjit.Error.code_name). */
	for (int code = KJIT_ERROR_MIN; code <= 0; code++) {
		CHECK(kjit_strerror(code) != NULL && kjit_strerror(code)[0] != '\0' &&
		      strcmp(kjit_strerror(code), "unknown kjit error") != 0);
		CHECK(kjit_error_name(code) != NULL && strncmp(kjit_error_name(code), "KJIT_", 5) == 0);
		for (int other = code + 1; other <= 0 && kjit_error_name(code); other++)
			CHECK(kjit_error_name(other) == NULL || strcmp(kjit_error_name(code), kjit_error_name(other)) != 0);
	}
	CHECK_EQ_STR(kjit_error_name(KJIT_ECOMPILE), "KJIT_ECOMPILE");
	CHECK_EQ_STR(kjit_error_name(KJIT_ESHUTDOWN), "KJIT_ESHUTDOWN");
	CHECK_EQ_STR(kjit_error_name(0), "KJIT_OK");
	CHECK(kjit_error_name(KJIT_ERROR_MIN - 1) == NULL && kjit_error_name(1) == NULL);
	CHECK_EQ_STR(kjit_strerror(KJIT_ERROR_MIN - 1), "unknown kjit error");
	CHECK_EQ_STR(kjit_status_name(KJIT_STATUS_JOINED), "joined");
	CHECK_EQ_STR(kjit_status_name(KJIT_STATUS_REMOTE), "remote hit");
	CHECK_EQ_INT(kjit_backend_from_name("vulkan"), KJIT_BACKEND_VULKAN);
	CHECK_EQ_STR(kjit_last_error(NULL), "");
	CHECK_EQ_INT(kjit_ping(NULL), KJIT_EINVAL);
	CHECK_EQ_INT(kjit_open(NULL, NULL), KJIT_EINVAL);
}

TEST_LIST(
	TEST(ping)
	TEST(get_roundtrip)
	TEST(get_env_target)
	TEST(get_compile_error)
	TEST(get_bad_answers)
	TEST(large_result_takes_reply)
	TEST(wrong_id)
	TEST(bad_field)
	TEST(bad_version)
	TEST(no_code)
	TEST(close_mid_reply)
	TEST(timeout)
	TEST(sigpipe_safe)
	TEST(reconnect_after_close)
	TEST(reconnect_unused)
	TEST(admin)
	TEST(stop)
	TEST(validation)
	TEST(no_server_no_autostart)
	TEST(autostart_refuses_shared_dir)
	TEST(autostart_bad_binary)
	TEST(autostart_race)
	TEST(process_memo)
	TEST(process_memo_off)
	TEST(process_memo_bound)
	TEST(process_memo_lowered)
	TEST(process_memo_adopt)
	TEST(process_memo_into)
	TEST(process_memo_kept)
	TEST(strings)
)
