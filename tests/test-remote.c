/* test-remote.c: remote/remote.c against a real redis-server.
 *
 * Each test starts its own redis-server (scripts/deps.sh installs it) on a
 * private Unix socket under a temporary directory (one test on a loopback
 * port, with a password and a database number), drives remote.c on a real
 * libuv loop and stops the server.  The server dies with the test process
 * (PR_SET_PDEATHSIG) even when a check fails.  Without redis-server every
 * test says so and fails: the fleet tier is part of the product.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <uv.h>

#include "backend.h"
#include "buf.h"
#include "entrylist.h"
#include "kj_limits.h"
#include "kjit.h"
#include "redis/redis-int.h"
#include "remote.h"
#include "sha.h"
#include "test.h"
#include "util.h"

struct redis {
	char dir[128];
	char sock[192];
	int port;              /* 0: Unix socket only */
	const char *password;
	pid_t pid;
};

/* ---- redis-server and redis-cli ---- */

static int can_connect(const struct redis *rs)
{
	int fd = socket(rs->port ? AF_INET : AF_UNIX, SOCK_STREAM, 0), ok;
	if (fd < 0)
		return 0;
	if (rs->port) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)rs->port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
	} else {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(a.sun_path, sizeof a.sun_path, "%.100s", rs->sock);
		ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
	}
	close(fd);
	return ok;
}

static void redis_start(struct redis *rs)
{
	char port[16], log[256];

	snprintf(port, sizeof port, "%d", rs->port);
	snprintf(log, sizeof log, "%s/redis.log", rs->dir);
	if (access("/usr/bin/redis-server", X_OK) != 0) {
		fprintf(stderr, "redis-server is not installed: run scripts/deps.sh\n");
		exit(1);
	}
	rs->pid = fork();
	CHECK(rs->pid >= 0);
	if (rs->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		const char *argv[32] = { "redis-server", "--port", port, "--unixsocket", rs->sock, "--unixsocketperm",
					 "700", "--save", "", "--appendonly", "no", "--dir", rs->dir, "--logfile", log,
					 "--enable-debug-command", "local", "--bind", "127.0.0.1" };
		int n = 19;
		if (rs->password) {
			argv[n++] = "--requirepass";
			argv[n++] = rs->password;
		}
		argv[n] = NULL;
		execv("/usr/bin/redis-server", (char **)argv);
		_exit(127);
	}
	for (int i = 0; i < 500 && !can_connect(rs); i++)
		usleep(10000);
	CHECK(can_connect(rs));
}

static void redis_stop(struct redis *rs)
{
	int st;
	if (rs->pid <= 0)
		return;
	kill(rs->pid, SIGKILL);
	waitpid(rs->pid, &st, 0);
	rs->pid = 0;
	unlink(rs->sock);
}

static void redis_init(struct redis *rs, int port, const char *password)
{
	snprintf(rs->dir, sizeof rs->dir, "/tmp/kjit-remote.XXXXXX");
	CHECK(mkdtemp(rs->dir) != NULL);
	snprintf(rs->sock, sizeof rs->sock, "%s/redis.sock", rs->dir);
	rs->port = port;
	rs->password = password;
	redis_start(rs);
}

static void redis_fini(struct redis *rs)
{
	redis_stop(rs);
	kj__rm_rf(rs->dir);
}

/* Runs redis-cli with args on rs; returns its first line of output
 * (static storage), without the newline. */
static const char *cli(const struct redis *rs, const char *args)
{
	static char line[4096];
	char cmd[1024];
	FILE *p;

	snprintf(cmd, sizeof cmd, "redis-cli -s %s %s%s %s 2>/dev/null", rs->sock, rs->password ? "-a " : "",
		 rs->password ? rs->password : "", args);
	line[0] = '\0';
	CHECK((p = popen(cmd, "r")) != NULL);
	if (fgets(line, sizeof line, p) == NULL)
		line[0] = '\0';
	while (fgetc(p) != EOF)
		;
	pclose(p);
	line[strcspn(line, "\r\n")] = '\0';
	return line;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* ---- the loop ---- */

struct logs {
	int unreachable, again, lines;
	char last[512];
};

static void on_log(void *arg, const char *line)
{
	struct logs *l = arg;
	fprintf(stderr, "log: %s\n", line);
	l->lines++;
	snprintf(l->last, sizeof l->last, "%s", line);
	l->unreachable += strstr(line, "unreachable") != NULL;
	l->again += strstr(line, "reachable again") != NULL;
}

static void on_deadline(uv_timer_t *t)
{
	*(int *)t->data = 1;
}

/* Runs the loop until *flag or ms pass; returns *flag. */
static int run_until(uv_loop_t *loop, const int *flag, unsigned ms)
{
	uv_timer_t t;
	int expired = 0;

	uv_timer_init(loop, &t);
	t.data = &expired;
	uv_timer_start(&t, on_deadline, ms, 0);
	while (!*flag && !expired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return *flag;
}

static void run_for(uv_loop_t *loop, unsigned ms)
{
	int never = 0;
	run_until(loop, &never, ms);
}

struct up_wait {
	struct kj__remote *r;
	int up;
};

static void poll_up(uv_timer_t *t)
{
	struct up_wait *w = t->data;
	w->up = kj__remote_is_up(w->r);
}

/* Runs the loop until r is up (or ms pass); returns 1 if up. */
static int wait_up(uv_loop_t *loop, struct kj__remote *r, unsigned ms)
{
	uv_timer_t t;
	struct up_wait w = { r, kj__remote_is_up(r) };

	uv_timer_init(loop, &t);
	t.data = &w;
	uv_timer_start(&t, poll_up, 5, 5);
	run_until(loop, &w.up, ms);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	/* SUB and PUT come up with CMD; give them a moment */
	run_for(loop, 50);
	return w.up;
}

static struct kj__remote *open_remote(uv_loop_t *loop, const char *url, struct kj__remote_options *o, struct logs *lg)
{
	struct kj__remote *r = NULL;
	char err[512];

	o->url = url;
	if (o->lookup_ms == 0)
		o->lookup_ms = 3000; /* a loaded test machine: lookups here are not about deadlines */
	o->log = on_log;
	o->log_arg = lg;
	int rc = kj__remote_new(loop, o, &r, err, sizeof err);
	if (rc < 0)
		fprintf(stderr, "remote_new: %s\n", err);
	CHECK_EQ_INT(rc, 0);
	return r;
}

static void close_remote(uv_loop_t *loop, struct kj__remote *r)
{
	kj__remote_close(r);
	run_for(loop, 20);
}

/* Every handle closed: the loop ends by itself and closes cleanly. */
static void loop_done(uv_loop_t *loop)
{
	CHECK_EQ_INT(uv_run(loop, UV_RUN_DEFAULT), 0);
	CHECK_EQ_INT(uv_loop_close(loop), 0);
}

static char *unix_url(const struct redis *rs)
{
	return kj__asprintf("unix://%s", rs->sock);
}

/* ---- results ---- */

struct got {
	int done, code, outcome;
	struct kj__remote_lease *lease;
	uint8_t *data;
	size_t size;
	char digest[65];
	char log[256];
	uint8_t recipe[256];
	size_t recipe_len;
	uint64_t at_us;
};

static void keep_obj(struct got *g, const struct kj__remote_object *obj)
{
	if (obj == NULL)
		return;
	g->data = malloc(obj->size + 1);
	CHECK(g->data != NULL);
	memcpy(g->data, obj->data, obj->size);
	g->size = obj->size;
	memcpy(g->digest, obj->digest, sizeof g->digest);
	CHECK(obj->log_len < sizeof g->log && obj->recipe_len <= sizeof g->recipe);
	memcpy(g->log, obj->log, obj->log_len);
	g->log[obj->log_len] = '\0';
	memcpy(g->recipe, obj->recipe, obj->recipe_len);
	g->recipe_len = obj->recipe_len;
}

static void on_lookup(void *arg, int code, const struct kj__remote_answer *ans)
{
	struct got *g = arg;
	CHECK(!g->done);   /* called once */
	g->done = 1;
	g->code = code;
	g->at_us = kj__now_us();
	keep_obj(g, ans ? ans->obj : NULL);
}

static void on_lease(void *arg, int outcome, struct kj__remote_lease *lease, const struct kj__remote_answer *ans)
{
	const struct kj__remote_object *obj = ans ? ans->obj : NULL;
	struct got *g = arg;
	CHECK(!g->done);
	g->done = 1;
	g->outcome = outcome;
	g->lease = lease;
	g->at_us = kj__now_us();
	CHECK((outcome == KJ_LEASE_OWNED) == (lease != NULL));
	CHECK((outcome == KJ_LEASE_PUBLISHED) == (obj != NULL));
	keep_obj(g, obj);
}

static void got_free(struct got *g)
{
	free(g->data);
	memset(g, 0, sizeof *g);
}

static void lookup(uv_loop_t *loop, struct kj__remote *r, const char *key, struct got *g)
{
	got_free(g);
	kj__remote_lookup(r, key, on_lookup, g);
	CHECK(run_until(loop, &g->done, 5000));
}

static void random_key(char key[65])
{
	uint8_t b[32];
	CHECK(getrandom(b, sizeof b, 0) == sizeof b);
	kj__hex(b, key);
}

struct object {
	uint8_t *p;
	size_t n;
	char digest[65];
};

static void make_object(struct object *o, size_t n)
{
	uint8_t d[32];
	o->p = malloc(n);
	o->n = n;
	CHECK(o->p != NULL);
	for (size_t i = 0; i < n; i++)
		o->p[i] = (uint8_t)(i * 131 + (i >> 9));
	CHECK(kj__sha256(o->p, n, d) == 0);
	kj__hex(d, o->digest);
}

static const char test_log[] = "warning: unused variable 'x'";
static const uint8_t test_recipe[] = "recipe bytes \x00\x01\x02";

static const char test_meta[] = "backend=1\ntarget=gfx90a\nversion=6.0\n";
static const char test_entries[] = "k1\0k2"; /* with its final NUL: "k1\0k2\0" */
static const char test_lowered[] = "f<1>\t_Z1fILi1EEvv\n";

static void fill_value(struct kj__remote_object *v, const struct object *o)
{
	memset(v, 0, sizeof *v);
	v->data = o->p;
	v->size = o->n;
	memcpy(v->digest, o->digest, sizeof v->digest);
	v->log = test_log;
	v->log_len = strlen(test_log);
	v->recipe = test_recipe;
	v->recipe_len = sizeof test_recipe;
	v->meta = test_meta;
	v->meta_len = strlen(test_meta);
	v->entries = test_entries;
	v->entries_len = sizeof test_entries;
	v->lowered = test_lowered;
	v->lowered_len = strlen(test_lowered);
}

static int publish(struct kj__remote *r, const char *key, const struct object *o, struct kj__remote_lease *l)
{
	struct kj__remote_object v;
	fill_value(&v, o);
	return kj__remote_publish(r, key, &v, l);
}

struct pub_wait {
	struct kj__remote *r;
	uint64_t want;
	int done;
};

static void poll_pub(uv_timer_t *t)
{
	struct pub_wait *w = t->data;
	struct kj__remote_stats s;
	kj__remote_stats(w->r, &s);
	w->done = s.publishes + s.publish_dropped >= w->want;
}

/* Runs the loop until r has acknowledged want publishes. */
static void wait_published(uv_loop_t *loop, struct kj__remote *r, uint64_t want)
{
	uv_timer_t t;
	struct pub_wait w = { r, want, 0 };
	uv_timer_init(loop, &t);
	t.data = &w;
	uv_timer_start(&t, poll_pub, 2, 2);
	run_until(loop, &w.done, 10000);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	CHECK(w.done);
	run_for(loop, 20); /* the release script after the SET */
}

/* ---- tests ---- */

static void test_url_parse(void)
{
	struct kj__redis_url u;
	char err[512];

	CHECK_EQ_INT(kj__redis_url_parse("redis://cache.example", &u, err, sizeof err), 0);
	CHECK_EQ_STR(u.host, "cache.example");
	CHECK(u.port == 6379 && u.db == 0 && u.password == NULL && u.user == NULL && u.path == NULL);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("redis://10.0.0.5:6380/3", &u, err, sizeof err), 0);
	CHECK(strcmp(u.host, "10.0.0.5") == 0 && u.port == 6380 && u.db == 3);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("redis://:s3cret@h", &u, err, sizeof err), 0);
	CHECK(u.user == NULL && strcmp(u.password, "s3cret") == 0 && strcmp(u.host, "h") == 0);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("redis://kjit:p%40ss%2Fw@h:1/2", &u, err, sizeof err), 0);
	CHECK(strcmp(u.user, "kjit") == 0 && strcmp(u.password, "p@ss/w") == 0 && u.port == 1 && u.db == 2);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("redis://pw@h/", &u, err, sizeof err), 0);
	CHECK(u.user == NULL && strcmp(u.password, "pw") == 0 && u.db == 0);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("redis://[::1]:7000", &u, err, sizeof err), 0);
	CHECK(strcmp(u.host, "::1") == 0 && u.port == 7000);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("unix:///run/redis/redis.sock", &u, err, sizeof err), 0);
	CHECK(u.host == NULL && strcmp(u.path, "/run/redis/redis.sock") == 0);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("unix:///run/a@b.sock", &u, err, sizeof err), 0);
	CHECK(u.password == NULL && strcmp(u.path, "/run/a@b.sock") == 0);
	kj__redis_url_free(&u);
	CHECK_EQ_INT(kj__redis_url_parse("unix://u:pw@/tmp/r.sock?db=4", &u, err, sizeof err), 0);
	CHECK(strcmp(u.path, "/tmp/r.sock") == 0 && u.db == 4 && strcmp(u.user, "u") == 0 &&
	      strcmp(u.password, "pw") == 0);
	kj__redis_url_free(&u);

	static const char *const bad[] = {
		"", "http://h", "redis://", "redis://h:0", "redis://h:99999", "redis://h:abc", "redis://h/x",
		"redis://h/1/2", "redis://:p%4@h", "redis://:p%zz@h", "unix://relative.sock", "unix://",
		"unix:///x.sock?db=z", "redis://[::1", "redis://[::1]x", "redis://h h",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		int rc = kj__redis_url_parse(bad[i], &u, err, sizeof err);
		if (rc != KJIT_EINVAL)
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
		CHECK_EQ_INT(rc, KJIT_EINVAL);
		CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
		CHECK(u.host == NULL && u.path == NULL && u.password == NULL);
	}
	CHECK_EQ_INT(kj__redis_url_parse("rediss://h:6380", &u, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "TLS") != NULL);

	/* the front: a scheme no backend takes lists the accepted forms; a
	 * backend's own refusal (rediss: no TLS) comes through; no URL echoed */
	CHECK_EQ_INT(kj__remote_url_check("http://:s3cretpw@cache:6379", err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "expected redis://") != NULL && strstr(err, "unix://") != NULL);
	CHECK(strstr(err, "s3cretpw") == NULL);
	CHECK_EQ_INT(kj__remote_url_check("rediss://h:6380", err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "no TLS") != NULL);
	CHECK_EQ_INT(kj__remote_url_check("redis://h:0", err, sizeof err), KJIT_EINVAL);
	CHECK_EQ_INT(kj__remote_url_check("redis://:pw@h:6379/1", err, sizeof err), 0);
	CHECK_EQ_INT(kj__remote_url_check("unix:///run/r.sock", err, sizeof err), 0);
	CHECK_EQ_INT(kj__remote_url_check("redis:/h", err, sizeof err), KJIT_EINVAL);

	/* kj__remote_new refuses a bad URL without touching the loop */
	uv_loop_t loop;
	struct kj__remote *r = (void *)1;
	struct kj__remote_options o = { .url = "redis://h:0" };
	CHECK_EQ_INT(uv_loop_init(&loop), 0);
	CHECK_EQ_INT(kj__remote_new(&loop, &o, &r, err, sizeof err), KJIT_EINVAL);
	CHECK(r == NULL);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
}

static void test_publish_lookup(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options o = { .prefix = "t:" };
	struct kj__remote_stats st;
	struct got g = { 0 };
	struct object obj;
	char key[65], cmd[256];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	struct kj__remote *r = open_remote(loop, url, &o, &lg);
	CHECK(wait_up(loop, r, 3000));
	random_key(key);

	lookup(loop, r, key, &g);
	CHECK(g.code == 0 && g.data == NULL);
	make_object(&obj, (1u << 20) + 17);
	CHECK_EQ_INT(publish(r, key, &obj, NULL), 0);
	wait_published(loop, r, 1);
	lookup(loop, r, key, &g);
	CHECK_EQ_INT(g.code, 0);
	CHECK(g.size == obj.n && memcmp(g.data, obj.p, obj.n) == 0);
	CHECK_EQ_STR(g.digest, obj.digest);
	CHECK_EQ_STR(g.log, test_log);
	CHECK(g.recipe_len == sizeof test_recipe && memcmp(g.recipe, test_recipe, sizeof test_recipe) == 0);
	/* the value is one string: header + meta + entries + lowered + object + log + recipe + checksum, no TTL */
	snprintf(cmd, sizeof cmd, "STRLEN t:%s", key);
	CHECK_EQ_INT(atol(cli(&rs, cmd)), 72 + strlen(test_meta) + sizeof test_entries + strlen(test_lowered) + obj.n +
						  strlen(test_log) + sizeof test_recipe + 32);
	snprintf(cmd, sizeof cmd, "PTTL t:%s", key);
	CHECK_EQ_STR(cli(&rs, cmd), "-1");

	kj__remote_stats(r, &st);
	CHECK(st.hits == 1 && st.misses == 1 && st.publishes == 1 && st.corrupt == 0 && st.errors == 0);
	CHECK(st.bytes_read >= obj.n && st.bytes_written >= obj.n && st.hit_us_total > 0 && st.up == 1);
	CHECK(lg.unreachable == 0);

	/* a bad key is refused at once, and counted */
	lookup(loop, r, "not-a-key", &g);
	CHECK_EQ_INT(g.code, KJIT_EINVAL);
	got_free(&g);
	close_remote(loop, r);

	/* over --remote-max-object: stays local; TTL set on publish, refreshed on read */
	o.max_object = 1024;
	o.ttl_ms = 600000;
	r = open_remote(loop, url, &o, &lg);
	CHECK(wait_up(loop, r, 3000));
	char key2[65];
	random_key(key2);
	CHECK_EQ_INT(publish(r, key2, &obj, NULL), KJIT_ETOOBIG);
	struct object small;
	make_object(&small, 1000);
	CHECK_EQ_INT(publish(r, key2, &small, NULL), 0);
	wait_published(loop, r, 2);
	snprintf(cmd, sizeof cmd, "PEXPIRE t:%s 5000", key2);
	CHECK_EQ_STR(cli(&rs, cmd), "1");
	lookup(loop, r, key2, &g);
	CHECK(g.code == 0 && g.size == 1000);
	run_for(loop, 30);
	snprintf(cmd, sizeof cmd, "PTTL t:%s", key2);
	CHECK(atol(cli(&rs, cmd)) > 500000);
	kj__remote_stats(r, &st);
	CHECK(st.publishes == 1 && st.publish_dropped == 1);
	got_free(&g);
	close_remote(loop, r);
	loop_done(loop);
	free(url);
	free(obj.p);
	free(small.p);
	redis_fini(&rs);
}

static void test_corrupt_is_miss(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options o = { 0 };
	struct kj__remote_stats st;
	struct got g = { 0 };
	struct object obj;
	char key[65], cmd[512];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	struct kj__remote *r = open_remote(loop, url, &o, &lg);
	CHECK(wait_up(loop, r, 3000));
	random_key(key);
	make_object(&obj, 4096);
	CHECK_EQ_INT(publish(r, key, &obj, NULL), 0);
	wait_published(loop, r, 1);

	/* one byte of the object changed */
	snprintf(cmd, sizeof cmd, "SETRANGE kjit:v2:%s 300 Z", key);
	CHECK(atol(cli(&rs, cmd)) > 300);
	lookup(loop, r, key, &g);
	CHECK(g.code == KJIT_ECORRUPT && g.data == NULL);
	/* truncated */
	snprintf(cmd, sizeof cmd, "SET kjit:v2:%s KJO1short", key);
	CHECK_EQ_STR(cli(&rs, cmd), "OK");
	lookup(loop, r, key, &g);
	CHECK(g.code == KJIT_ECORRUPT);
	/* garbage of the wrong type */
	snprintf(cmd, sizeof cmd, "DEL kjit:v2:%s", key);
	cli(&rs, cmd);
	snprintf(cmd, sizeof cmd, "HSET kjit:v2:%s obj x", key);
	CHECK_EQ_STR(cli(&rs, cmd), "1");
	lookup(loop, r, key, &g);
	CHECK(g.code == KJIT_EPROTO);
	kj__remote_stats(r, &st);
	CHECK(st.corrupt == 2 && st.hits == 0 && st.errors == 1);
	/* the next publish overwrites it */
	snprintf(cmd, sizeof cmd, "DEL kjit:v2:%s", key);
	cli(&rs, cmd);
	CHECK_EQ_INT(publish(r, key, &obj, NULL), 0);
	wait_published(loop, r, 2);
	lookup(loop, r, key, &g);
	CHECK(g.code == 0 && g.size == obj.n && memcmp(g.data, obj.p, obj.n) == 0);
	got_free(&g);
	close_remote(loop, r);
	loop_done(loop);
	free(url);
	free(obj.p);
	redis_fini(&rs);
}

static void test_lease_wait_publish(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options oa = { .daemon_id = "node-a" }, ob = { .daemon_id = "node-b", .lease_poll_ms = 20000 };
	struct kj__remote_stats st;
	struct got ga = { 0 }, gb = { 0 };
	struct object obj;
	char key[65], cmd[256];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	struct kj__remote *a = open_remote(loop, url, &oa, &lg), *b = open_remote(loop, url, &ob, &lg);
	CHECK(wait_up(loop, a, 3000) && wait_up(loop, b, 3000));
	random_key(key);

	kj__remote_lease(a, key, on_lease, &ga);
	CHECK(run_until(loop, &ga.done, 3000));
	CHECK_EQ_INT(ga.outcome, KJ_LEASE_OWNED);
	snprintf(cmd, sizeof cmd, "GET kjit:v2:lease:%s", key);
	CHECK_EQ_STR(cli(&rs, cmd), "node-a");

	kj__remote_lease(b, key, on_lease, &gb);
	run_for(loop, 400);
	CHECK(!gb.done); /* blocked while a compiles */
	make_object(&obj, 300000);
	uint64_t t0 = kj__now_us();
	CHECK_EQ_INT(publish(a, key, &obj, ga.lease), 0);
	CHECK(run_until(loop, &gb.done, 3000));
	/* woken by pub/sub, not by its 20 s poll */
	CHECK(gb.at_us - t0 < 1000000);
	CHECK_EQ_INT(gb.outcome, KJ_LEASE_PUBLISHED);
	CHECK(gb.size == obj.n && memcmp(gb.data, obj.p, obj.n) == 0);
	CHECK_EQ_STR(gb.digest, obj.digest);
	run_for(loop, 50);
	CHECK_EQ_STR(cli(&rs, cmd), ""); /* released by its owner */
	kj__remote_stats(b, &st);
	CHECK(st.lease_waits == 1 && st.lease_woken == 1 && st.lease_owned == 0);
	kj__remote_stats(a, &st);
	CHECK(st.lease_owned == 1 && st.publishes == 1);

	/* a lease released without publishing (compile failed) hands over at once */
	char key2[65];
	random_key(key2);
	got_free(&ga);
	got_free(&gb);
	kj__remote_lease(a, key2, on_lease, &ga);
	CHECK(run_until(loop, &ga.done, 3000) && ga.outcome == KJ_LEASE_OWNED);
	kj__remote_lease(b, key2, on_lease, &gb);
	run_for(loop, 200);
	CHECK(!gb.done);
	kj__remote_lease_release(ga.lease);
	CHECK(run_until(loop, &gb.done, 1000));
	CHECK_EQ_INT(gb.outcome, KJ_LEASE_OWNED);
	kj__remote_lease_release(gb.lease);
	run_for(loop, 50);

	/* only the owner releases: a's stale lease does not delete b's */
	got_free(&ga);
	got_free(&gb);
	kj__remote_lease(b, key2, on_lease, &gb);
	CHECK(run_until(loop, &gb.done, 3000) && gb.outcome == KJ_LEASE_OWNED);
	CHECK_EQ_INT(publish(a, key2, &obj, NULL), 0);
	wait_published(loop, a, 2);
	snprintf(cmd, sizeof cmd, "GET kjit:v2:lease:%s", key2);
	CHECK_EQ_STR(cli(&rs, cmd), "node-b");
	kj__remote_lease_release(gb.lease);

	got_free(&ga);
	got_free(&gb);
	close_remote(loop, a);
	close_remote(loop, b);
	loop_done(loop);
	free(url);
	free(obj.p);
	redis_fini(&rs);
}

/* Ten nodes miss one key at once: one compiles, nine are served its bytes. */
static void test_lease_stampede(void)
{
	enum { N = 10 };
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote *r[N];
	struct got g[N];
	struct object obj;
	char key[65], id[N][24];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	memset(g, 0, sizeof g);
	for (int i = 0; i < N; i++) {
		struct kj__remote_options o = { .daemon_id = id[i], .lease_poll_ms = 20000 };
		snprintf(id[i], sizeof id[i], "node-%d", i);
		r[i] = open_remote(loop, url, &o, &lg);
	}
	for (int i = 0; i < N; i++)
		CHECK(wait_up(loop, r[i], 3000));
	random_key(key);
	for (int i = 0; i < N; i++)
		kj__remote_lease(r[i], key, on_lease, &g[i]);
	int owner = -1, done = 0;
	for (int t = 0; t < 100 && owner < 0; t++) {
		run_for(loop, 30);
		for (int i = 0; i < N; i++)
			if (g[i].done && g[i].outcome == KJ_LEASE_OWNED)
				owner = i;
	}
	run_for(loop, 200);
	owner = -1;
	for (int i = 0; i < N; i++) {
		done += g[i].done;
		if (g[i].done && g[i].outcome == KJ_LEASE_OWNED) {
			CHECK(owner < 0);
			owner = i;
		}
	}
	CHECK(owner >= 0 && done == 1);
	make_object(&obj, 65536);
	CHECK_EQ_INT(publish(r[owner], key, &obj, g[owner].lease), 0);
	for (int i = 0; i < N; i++) {
		CHECK(run_until(loop, &g[i].done, 3000));
		if (i == owner)
			continue;
		CHECK_EQ_INT(g[i].outcome, KJ_LEASE_PUBLISHED);
		CHECK(g[i].size == obj.n && memcmp(g[i].data, obj.p, obj.n) == 0);
	}
	for (int i = 0; i < N; i++) {
		got_free(&g[i]);
		close_remote(loop, r[i]);
	}
	loop_done(loop);
	free(url);
	free(obj.p);
	redis_fini(&rs);
}

static void test_lease_expiry_takeover(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options oa = { .daemon_id = "owner", .lease_ms = 600 },
				  ob = { .daemon_id = "waiter", .lease_ms = 600, .lease_poll_ms = 50 };
	struct kj__remote_stats st;
	struct got ga = { 0 }, gb = { 0 };
	char key[65];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	struct kj__remote *a = open_remote(loop, url, &oa, &lg), *b = open_remote(loop, url, &ob, &lg);
	CHECK(wait_up(loop, a, 3000) && wait_up(loop, b, 3000));
	random_key(key);
	kj__remote_lease(a, key, on_lease, &ga);
	CHECK(run_until(loop, &ga.done, 3000) && ga.outcome == KJ_LEASE_OWNED);
	kj__remote_lease(b, key, on_lease, &gb);
	/* a renews: three lease lifetimes pass and b still waits */
	run_for(loop, 2000);
	CHECK(!gb.done);
	/* a dies: it stops renewing (close does not release, as SIGKILL would not) */
	uint64_t t0 = kj__now_us();
	kj__remote_close(a);
	CHECK(run_until(loop, &gb.done, 3000));
	CHECK_EQ_INT(gb.outcome, KJ_LEASE_OWNED);
	uint64_t waited = gb.at_us - t0;
	CHECK(waited > 100000 && waited < 3000000);
	kj__remote_stats(b, &st);
	CHECK(st.lease_waits == 1 && st.lease_takeovers == 1 && st.lease_owned == 1);
	kj__remote_lease_release(gb.lease);
	got_free(&ga);
	got_free(&gb);
	close_remote(loop, b);
	loop_done(loop);
	free(url);
	redis_fini(&rs);
}

static void test_outage_reconnect(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options o = { 0 };
	struct kj__remote_stats st;
	struct got g = { 0 }, gl = { 0 };
	struct object obj;
	char key[65];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	struct kj__remote *r = open_remote(loop, url, &o, &lg);
	CHECK(wait_up(loop, r, 3000));
	random_key(key);
	make_object(&obj, 1000);

	redis_stop(&rs);
	run_for(loop, 100);
	for (int i = 0; i < 20; i++) {
		lookup(loop, r, key, &g);
		CHECK(g.code < 0 && g.data == NULL);
		CHECK(publish(r, key, &obj, NULL) < 0);
		got_free(&gl);
		kj__remote_lease(r, key, on_lease, &gl);
		CHECK(run_until(loop, &gl.done, 1000) && gl.outcome == KJ_LEASE_UNAVAILABLE);
		run_for(loop, 50);
	}
	CHECK(!kj__remote_is_up(r));
	CHECK_EQ_INT(lg.unreachable, 1);   /* once per outage, not per request */
	kj__remote_stats(r, &st);
	CHECK(st.errors >= 20 && st.outages == 1 && st.up == 0);

	redis_start(&rs);
	CHECK(wait_up(loop, r, 8000));
	run_for(loop, 300);
	CHECK_EQ_INT(lg.again, 1);
	CHECK_EQ_INT(publish(r, key, &obj, NULL), 0);
	wait_published(loop, r, 1);
	lookup(loop, r, key, &g);
	CHECK(g.code == 0 && g.size == obj.n);
	kj__remote_stats(r, &st);
	CHECK(st.reconnects == 1 && st.outages == 1 && st.hits == 1);
	got_free(&g);
	got_free(&gl);
	close_remote(loop, r);
	loop_done(loop);

	/* down at start: one warning, then it comes up by itself */
	struct logs lg2 = { 0 };
	redis_stop(&rs);
	loop = uv_default_loop();
	r = open_remote(loop, url, &o, &lg2);
	run_for(loop, 500);
	CHECK(!kj__remote_is_up(r) && lg2.unreachable == 1);
	redis_start(&rs);
	CHECK(wait_up(loop, r, 8000));
	close_remote(loop, r);
	loop_done(loop);
	free(url);
	free(obj.p);
	redis_fini(&rs);
}

static void test_ro_never_writes(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options orw = { 0 }, oro = { .mode = KJ_REMOTE_RO, .ttl_ms = 100000 };
	struct got g = { 0 };
	struct object obj;
	char key[65], other[65];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	struct kj__remote *w = open_remote(loop, url, &orw, &lg);
	CHECK(wait_up(loop, w, 3000));
	random_key(key);
	random_key(other);
	make_object(&obj, 2000);
	CHECK_EQ_INT(publish(w, key, &obj, NULL), 0);
	wait_published(loop, w, 1);
	close_remote(loop, w);

	CHECK_EQ_STR(cli(&rs, "CONFIG RESETSTAT"), "OK");
	struct kj__remote *r = open_remote(loop, url, &oro, &lg);
	CHECK(wait_up(loop, r, 3000));
	lookup(loop, r, key, &g);
	CHECK(g.code == 0 && g.size == obj.n && memcmp(g.data, obj.p, obj.n) == 0);
	CHECK_EQ_INT(publish(r, other, &obj, NULL), KJIT_EDENIED);
	got_free(&g);
	kj__remote_lease(r, other, on_lease, &g);
	CHECK(g.done && g.outcome == KJ_LEASE_UNAVAILABLE);
	run_for(loop, 100);
	CHECK_EQ_STR(cli(&rs, "DBSIZE"), "1");
	/* commandstats lists every command run since RESETSTAT: reads only */
	FILE *p;
	char cmd[512], line[512];
	snprintf(cmd, sizeof cmd, "redis-cli -s %s INFO commandstats", rs.sock);
	CHECK((p = popen(cmd, "r")) != NULL);
	int reads = 0;
	while (fgets(line, sizeof line, p)) {
		if (strncmp(line, "cmdstat_", 8) != 0)
			continue;
		fprintf(stderr, "%s", line);
		CHECK(strncmp(line, "cmdstat_get:", 12) == 0 || strncmp(line, "cmdstat_ping:", 13) == 0 ||
		      strncmp(line, "cmdstat_subscribe:", 18) == 0 || strncmp(line, "cmdstat_info:", 13) == 0 ||
		      strncmp(line, "cmdstat_dbsize:", 15) == 0 || strncmp(line, "cmdstat_config|resetstat:", 25) == 0);
		reads += strncmp(line, "cmdstat_get:", 12) == 0;
	}
	pclose(p);
	CHECK_EQ_INT(reads, 1);
	got_free(&g);
	close_remote(loop, r);
	loop_done(loop);
	free(url);
	free(obj.p);
	redis_fini(&rs);
}

struct ticker {
	int ticks;
};

static void on_tick10(uv_timer_t *t)
{
	((struct ticker *)t->data)->ticks++;
}

static void test_slow_server_times_out(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options o = { .timeout_ms = 100, .lookup_ms = 100 };
	struct kj__remote_stats st;
	struct got g = { 0 };
	char key[65], cmd[512];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, 0, NULL);
	char *url = unix_url(&rs);
	struct kj__remote *r = open_remote(loop, url, &o, &lg);
	CHECK(wait_up(loop, r, 3000));
	random_key(key);
	/* the server stops answering for 1.5 s */
	snprintf(cmd, sizeof cmd, "redis-cli -s %s DEBUG SLEEP 1.5 >/dev/null 2>&1 &", rs.sock);
	CHECK_EQ_INT(system(cmd), 0);
	usleep(200000);
	struct ticker tk = { 0 };
	uv_timer_t t;
	uv_timer_init(loop, &t);
	t.data = &tk;
	uv_timer_start(&t, on_tick10, 10, 10);
	uint64_t t0 = kj__now_us();
	kj__remote_lookup(r, key, on_lookup, &g);
	CHECK(run_until(loop, &g.done, 3000));
	uint64_t took = g.at_us - t0;
	CHECK_EQ_INT(g.code, KJIT_ETIMEDOUT);
	CHECK(took >= 90000 && took < 1000000); /* not the 1.5 s of the sleep */
	CHECK(tk.ticks >= 5);   /* the loop ran while the op was pending */
	uv_close((uv_handle_t *)&t, NULL);
	kj__remote_stats(r, &st);
	CHECK(st.timeouts >= 1 && st.errors >= 1);
	CHECK_EQ_INT(lg.unreachable, 1);
	/* once the server is back, the remote is too */
	CHECK(wait_up(loop, r, 8000));
	got_free(&g);
	lookup(loop, r, key, &g);
	CHECK(g.code == 0);

	/* a socket that accepts and never answers: connect times out, loop free */
	struct logs lg2 = { 0 };
	char fake[256];
	snprintf(fake, sizeof fake, "%s/fake.sock", rs.dir);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%.100s", fake);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 16) == 0);
	char *furl = kj__asprintf("unix://%s", fake);
	struct kj__remote *f = open_remote(loop, furl, &o, &lg2);
	run_for(loop, 700);
	CHECK(!kj__remote_is_up(f) && lg2.unreachable == 1);
	kj__remote_stats(f, &st);
	CHECK(st.timeouts >= 2);
	close_remote(loop, f);
	close(fd);
	free(furl);
	got_free(&g);
	close_remote(loop, r);
	loop_done(loop);
	free(url);
	redis_fini(&rs);
}

static void test_tcp_auth_select(void)
{
	struct redis rs;
	struct logs lg = { 0 };
	struct kj__remote_options o = { 0 };
	struct kj__remote_stats st;
	struct got g = { 0 };
	struct object obj;
	char key[65], cmd[256];
	uv_loop_t *loop = uv_default_loop();

	redis_init(&rs, free_port(), "s3cr%t");
	char *url = kj__asprintf("redis://default:s3cr%%25t@localhost:%d/2", rs.port);
	struct kj__remote *r = open_remote(loop, url, &o, &lg);
	CHECK(wait_up(loop, r, 3000));
	random_key(key);
	make_object(&obj, 16384);
	CHECK_EQ_INT(publish(r, key, &obj, NULL), 0);
	wait_published(loop, r, 1);
	lookup(loop, r, key, &g);
	CHECK(g.code == 0 && g.size == obj.n && memcmp(g.data, obj.p, obj.n) == 0);
	snprintf(cmd, sizeof cmd, "-n 2 EXISTS kjit:v2:%s", key);
	CHECK_EQ_STR(cli(&rs, cmd), "1");
	snprintf(cmd, sizeof cmd, "-n 0 EXISTS kjit:v2:%s", key);
	CHECK_EQ_STR(cli(&rs, cmd), "0");
	CHECK(strstr(kj__remote_describe(r), "s3cr") == NULL);
	close_remote(loop, r);
	free(url);

	/* a wrong password never comes up, and says why once */
	struct logs lg2 = { 0 };
	url = kj__asprintf("redis://:wrong@127.0.0.1:%d", rs.port);
	r = open_remote(loop, url, &o, &lg2);
	run_for(loop, 600);
	CHECK(!kj__remote_is_up(r));
	kj__remote_stats(r, &st);
	CHECK(st.errors >= 1 && lg2.unreachable == 1);
	CHECK(strstr(lg2.last, "NOAUTH") || strstr(lg2.last, "WRONGPASS")); /* says why */
	close_remote(loop, r);
	loop_done(loop);
	got_free(&g);
	free(url);
	free(obj.p);
	redis_fini(&rs);
}

/* ---- values and their HMAC (remote-value.c), no Redis needed ---- */

static const uint8_t test_secret[] = "0123456789abcdef-fleet";

static void encode(const char *rkey, const struct object *o, const uint8_t *secret, struct kj__buf *b)
{
	struct kj__remote_object v;
	fill_value(&v, o);
	b->len = 0;
	CHECK_EQ_INT(kj__remote_value_encode(rkey, &v, secret, secret ? sizeof test_secret - 1 : 0, b), 0);
	CHECK_EQ_INT(b->len, kj__remote_value_size(&v, secret != NULL));
}

static int decode(const char *rkey, const struct kj__buf *b, const uint8_t *secret, struct kj__remote_object *v)
{
	return kj__remote_value_decode(rkey, b->p, b->len, secret, secret ? sizeof test_secret - 1 : 0, v);
}

/* v signed for k into b through a and into c through the per-use lookup,
 * each verified through the other way. */
static void signed_both_ways(const struct kj__remote_algs *a, const char *k, const struct kj__remote_object *v,
			     const struct object *obj, struct kj__buf *b, struct kj__buf *c)
{
	const size_t sl = sizeof test_secret - 1;
	struct kj__remote_object w;

	CHECK_EQ_INT(kj__remote_value_encode_with(a, k, v, test_secret, sl, b), 0);
	CHECK_EQ_INT(kj__remote_value_encode(k, v, test_secret, sl, c), 0);
	CHECK_EQ_INT(kj__remote_value_decode(k, b->p, b->len, test_secret, sl, &w), 0);
	CHECK(w.authenticated && w.size == obj->n && memcmp(w.data, obj->p, obj->n) == 0);
	CHECK_EQ_INT(kj__remote_value_decode_with(a, k, c->p, c->len, test_secret, sl, &w), 0);
	CHECK(w.authenticated);
}

/* The MAC's algorithms fetched once (the backend's handle, r->algs) give
 * the same bytes as the per-use lookup: an unsigned value's checksum
 * trailer is byte-equal either way, a GMAC value signed through one
 * verifies through the other, an older HMAC value too (and its HMAC is
 * the same), and a forged one is still refused. */
static void test_value_algs(void)
{
	struct kj__remote_algs *a = NULL;
	struct kj__buf b = { 0 }, c = { 0 };
	struct kj__remote_object v, w;
	struct object obj;
	const char *k = "kjit:v2:00aa";
	const size_t sl = sizeof test_secret - 1;
	uint8_t h1[32], h2[32];

	CHECK_EQ_INT(kj__remote_algs_new(&a), 0);
	CHECK(a != NULL);
	make_object(&obj, (1u << 20) + 5);
	fill_value(&v, &obj);
	CHECK_EQ_INT(kj__remote_value_encode_with(a, k, &v, NULL, 0, &b), 0);
	CHECK_EQ_INT(kj__remote_value_encode(k, &v, NULL, 0, &c), 0);
	CHECK(b.len == c.len && memcmp(b.p, c.p, b.len) == 0);
	CHECK_EQ_INT(kj__remote_value_decode_with(a, k, b.p, b.len, NULL, 0, &w), 0);
	CHECK(w.checksummed && w.size == obj.n && memcmp(w.data, obj.p, obj.n) == 0);
	/* signed through the fetched ones, verified through the lookup, and back */
	b.len = c.len = 0;
	signed_both_ways(a, k, &v, &obj, &b, &c);
	b.p[b.len - 1] ^= 1; /* a tag changed: forged, either way */
	CHECK_EQ_INT(kj__remote_value_decode_with(a, k, b.p, b.len, test_secret, sl, &w), KJIT_EDENIED);
	CHECK_EQ_INT(kj__remote_value_decode_with(a, "kjit:v2:00ab", c.p, c.len, test_secret, sl, &w), KJIT_EDENIED);
	CHECK_EQ_INT(kj__remote_hmac_with(a, test_secret, sl, k, obj.p, obj.n, h1), 0);
	CHECK_EQ_INT(kj__remote_hmac(test_secret, sl, k, obj.p, obj.n, h2), 0);
	CHECK(memcmp(h1, h2, 32) == 0);
	/* keyed once (issue 35 round thirteen): the contexts are reused, so
	 * every use must give the bytes of a fresh one; with the secret's
	 * context, a value it signs verifies without the handle and back, a
	 * changed tag or key is forged, another secret is derived per value */
	CHECK_EQ_INT(kj__remote_algs_key(a, NULL, 0), KJIT_EINVAL);
	CHECK_EQ_INT(kj__remote_algs_key(a, test_secret, sl), 0);
	CHECK_EQ_INT(kj__remote_algs_key(a, test_secret, sl), KJIT_EINVAL);
	for (int i = 0; i < 3; i++) {
		b.len = c.len = 0;
		CHECK_EQ_INT(kj__remote_value_encode_with(a, i == 1 ? "kjit:v2:00ab" : k, &v, NULL, 0, &b), 0);
		CHECK_EQ_INT(kj__remote_value_encode(i == 1 ? "kjit:v2:00ab" : k, &v, NULL, 0, &c), 0);
		CHECK(b.len == c.len && memcmp(b.p, c.p, b.len) == 0);
		CHECK_EQ_INT(kj__remote_value_decode_with(a, i == 1 ? "kjit:v2:00ab" : k, b.p, b.len, NULL, 0, &w), 0);
		CHECK(w.checksummed);
		b.len = c.len = 0;
		signed_both_ways(a, k, &v, &obj, &b, &c);
		CHECK_EQ_INT(kj__remote_value_decode_with(a, "kjit:v2:00ab", c.p, c.len, test_secret, sl, &w), KJIT_EDENIED);
		c.p[c.len - 1 - (size_t)i] ^= 1;
		CHECK_EQ_INT(kj__remote_value_decode_with(a, k, c.p, c.len, test_secret, sl, &w), KJIT_EDENIED);
		/* another fleet's secret: not the keyed one, still checked */
		CHECK_EQ_INT(kj__remote_value_decode_with(a, k, b.p, b.len, (const uint8_t *)"another secret, 32 bytes long..", 31, &w),
			     KJIT_EDENIED);
	}
	kj__remote_algs_free(a);
	kj__remote_algs_free(NULL);
	kj__buf_free(&b);
	kj__buf_free(&c);
	free(obj.p);
}

static void test_value_hmac(void)
{
	struct kj__buf b = { 0 }, c = { 0 };
	struct kj__remote_object v;
	struct object obj;
	const char *k = "kjit:v2:00aa", *k2 = "kjit:v2:00ab";

	make_object(&obj, 5000);
	encode(k, &obj, test_secret, &b);
	/* signed, read with the secret: every field back */
	CHECK_EQ_INT(decode(k, &b, test_secret, &v), 0);
	CHECK(v.format == 2 && v.authenticated && v.size == obj.n && memcmp(v.data, obj.p, obj.n) == 0);
	CHECK_EQ_STR(v.digest, obj.digest);
	CHECK(v.lowered_len == strlen(test_lowered) && memcmp(v.lowered, test_lowered, v.lowered_len) == 0);
	CHECK(v.meta_len == strlen(test_meta) && v.log_len == strlen(test_log));
	struct kj__remote_answer a;
	CHECK_EQ_INT(kj__remote_answer_make(&v, &a), 0); /* its entry list, as the miss judges it */
	CHECK(a.entries && kj__entries_has(a.entries, "k1", 2) && kj__entries_has(a.entries, "k2", 2));
	CHECK(a.entries && !kj__entries_has(a.entries, "k3", 2) && !kj__entries_has(a.entries, "k", 1));
	kj__remote_answer_clear(&a);
	/* the same bytes under another key: the HMAC covers the key */
	CHECK_EQ_INT(decode(k2, &b, test_secret, &v), KJIT_EDENIED);
	/* another secret */
	CHECK_EQ_INT(kj__remote_value_decode(k, b.p, b.len, (const uint8_t *)"another-secret-16", 17, &v), KJIT_EDENIED);
	/* a node without a secret reads it (it cannot check the HMAC) */
	CHECK_EQ_INT(decode(k, &b, NULL, &v), 0);
	CHECK(!v.authenticated);
	/* signed over a digest that is not its object's: the signer's word with
	 * the secret (the object is not hashed again), corrupt without */
	struct object lie = obj;
	memset(lie.digest, 'e', 64);
	encode(k, &lie, test_secret, &c);
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), 0);
	CHECK(v.authenticated && strcmp(v.digest, lie.digest) == 0);
	CHECK_EQ_INT(decode(k, &c, NULL, &v), KJIT_ECORRUPT);
	c.len = 0;
	/* one byte of the log changed (digest still right): the HMAC says no */
	b.p[72 + strlen(test_meta) + sizeof test_entries + strlen(test_lowered) + obj.n] ^= 1;
	CHECK_EQ_INT(decode(k, &b, test_secret, &v), KJIT_EDENIED);
	b.p[72 + strlen(test_meta) + sizeof test_entries + strlen(test_lowered) + obj.n] ^= 1;
	/* the HMAC itself changed */
	b.p[b.len - 1] ^= 0x80;
	CHECK_EQ_INT(decode(k, &b, test_secret, &v), KJIT_EDENIED);
	/* cut short, or one byte longer: corrupt before any HMAC */
	CHECK_EQ_INT(kj__remote_value_decode(k, b.p, b.len - 1, test_secret, sizeof test_secret - 1, &v), KJIT_ECORRUPT);
	CHECK_EQ_INT(kj__remote_value_decode(k, b.p, 40, test_secret, sizeof test_secret - 1, &v), KJIT_ECORRUPT);
	/* unsigned (a node without a secret wrote it): a secret node refuses it */
	encode(k, &obj, NULL, &c);
	CHECK_EQ_INT(decode(k, &c, NULL, &v), 0);
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), KJIT_EDENIED);
	/* a length field over its cap: corrupt, nothing read through it */
	c.p[16] = 0xff, c.p[17] = 0xff, c.p[18] = 0xff, c.p[19] = 0x7f;
	CHECK_EQ_INT(decode(k, &c, NULL, &v), KJIT_ECORRUPT);
	/* KJO1, well formed with a right digest: read without a secret, forged with one */
	c.len = 0;
	uint8_t hdr[52] = "KJO1", dg[32];
	hdr[4] = (uint8_t)(obj.n & 0xff), hdr[5] = (uint8_t)(obj.n >> 8);
	CHECK(kj__sha256(obj.p, obj.n, dg) == 0);
	memcpy(hdr + 20, dg, 32);
	CHECK(kj__buf_append(&c, hdr, sizeof hdr) == 0 && kj__buf_append(&c, obj.p, obj.n) == 0);
	CHECK_EQ_INT(decode(k, &c, NULL, &v), 0);
	CHECK(v.format == 1 && v.size == obj.n);
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), KJIT_EDENIED);
	kj__buf_free(&b);
	kj__buf_free(&c);
	free(obj.p);
}

/* Issue 35: a node with a secret signs with AES-256-GMAC (flags 1, IV and
 * tag, 28 bytes) and still reads a value an older node signed with
 * HMAC-SHA256 (flags 0, 32 bytes); anything else in flags or the mac length
 * is corrupt, a changed IV, tag or byte forged. */
static void test_value_gmac(void)
{
	struct kj__buf b = { 0 }, c = { 0 }, h = { 0 };
	struct kj__remote_object v;
	struct object obj;
	const char *k = "kjit:v2:00aa";
	size_t klen = sizeof test_secret - 1;

	make_object(&obj, 1u << 20);
	encode(k, &obj, test_secret, &b);
	CHECK(b.p[4] == 1 && b.p[5] == 0 && b.p[36] == 28 && b.p[37] == 0); /* flags GMAC, 28 bytes of mac */
	CHECK_EQ_INT(decode(k, &b, test_secret, &v), 0);
	CHECK(v.authenticated && v.size == obj.n && memcmp(v.data, obj.p, obj.n) == 0);
	encode(k, &obj, test_secret, &c); /* a fresh IV each time: other bytes, both verify */
	CHECK(c.len == b.len && memcmp(c.p + c.len - 28, b.p + b.len - 28, 12) != 0);
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), 0);
	c.p[c.len - 20] ^= 1; /* the IV */
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), KJIT_EDENIED);
	c.p[c.len - 20] ^= 1;
	c.p[c.len - 1] ^= 1; /* the tag */
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), KJIT_EDENIED);
	c.p[c.len - 1] ^= 1;
	c.p[200] ^= 1; /* the object */
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), KJIT_EDENIED);
	c.p[200] ^= 1;
	c.p[4] = 3; /* an unknown flag */
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), KJIT_ECORRUPT);
	CHECK_EQ_INT(decode(k, &c, NULL, &v), KJIT_ECORRUPT);
	c.p[4] = 0; /* HMAC's flags with GMAC's 28 bytes */
	CHECK_EQ_INT(decode(k, &c, test_secret, &v), KJIT_ECORRUPT);
	/* what a node before issue 35 wrote: flags 0, HMAC-SHA256 over the same input */
	uint8_t mac[32];
	CHECK(kj__buf_append(&h, b.p, b.len - 28) == 0);
	h.p[4] = 0, h.p[36] = 32;
	CHECK_EQ_INT(kj__remote_hmac(test_secret, klen, k, h.p, h.len, mac), 0);
	CHECK(kj__buf_append(&h, mac, 32) == 0);
	CHECK_EQ_INT(decode(k, &h, test_secret, &v), 0);
	CHECK(v.authenticated && v.size == obj.n && memcmp(v.data, obj.p, obj.n) == 0);
	h.p[h.len - 1] ^= 1;
	CHECK_EQ_INT(decode(k, &h, test_secret, &v), KJIT_EDENIED);
	h.p[h.len - 1] ^= 1;
	h.p[4] = 1; /* GMAC's flag on HMAC's 32 bytes */
	CHECK_EQ_INT(decode(k, &h, test_secret, &v), KJIT_ECORRUPT);
	h.p[4] = 0;
	encode(k, &obj, NULL, &c); /* GMAC's flag on an unsigned value */
	c.p[4] = 1;
	CHECK_EQ_INT(decode(k, &c, NULL, &v), KJIT_ECORRUPT);
	/* what each costs on this machine for 1 MiB (printed, not asserted) */
	uint64_t t0 = kj__now_us();
	for (int i = 0; i < 8; i++)
		CHECK_EQ_INT(decode(k, &b, test_secret, &v), 0);
	uint64_t t1 = kj__now_us();
	for (int i = 0; i < 8; i++)
		CHECK_EQ_INT(decode(k, &h, test_secret, &v), 0);
	uint64_t t2 = kj__now_us();
	printf("# verifying a signed 1 MiB value: GMAC %llu us, HMAC-SHA256 %llu us\n",
	       (unsigned long long)(t1 - t0) / 8, (unsigned long long)(t2 - t1) / 8);
	kj__buf_free(&b);
	kj__buf_free(&c);
	kj__buf_free(&h);
	free(obj.p);
}

/* Round seven of issue 35: a node without a secret writes KJO2 with flags
 * 0 and a 32-byte checksum trailer ("KJC1", zero IV, GMAC tag under a
 * public key), which it checks instead of hashing the object; a value
 * without one (an older node's) or whose trailer does not match is hashed
 * as before, so corruption is still caught and old values still read.
 * What older nodes need of the new value: flags 0 and a 32-byte mac (which
 * they do not check without a secret) and the object's true digest. */
static void test_value_checksum(void)
{
	struct kj__buf b = { 0 }, old = { 0 };
	struct kj__remote_object v;
	struct object obj;
	const char *k = "kjit:v2:00aa";
	uint8_t dg[32];
	size_t at = 72 + strlen(test_meta) + sizeof test_entries + strlen(test_lowered);

	make_object(&obj, 1u << 20);
	encode(k, &obj, NULL, &b);
	CHECK(b.p[4] == 0 && b.p[5] == 0 && b.p[36] == 32 && b.p[37] == 0); /* flags 0, 32 bytes of mac */
	CHECK(memcmp(b.p + b.len - 32, "KJC1", 4) == 0);
	CHECK(kj__sha256(obj.p, obj.n, dg) == 0 && memcmp(b.p + 40, dg, 32) == 0);
	CHECK_EQ_INT(decode(k, &b, NULL, &v), 0);
	CHECK(v.checksummed && !v.authenticated && v.size == obj.n && memcmp(v.data, obj.p, obj.n) == 0);
	CHECK_EQ_STR(v.digest, obj.digest);
	/* the same object: the same bytes (no random IV) */
	size_t len = b.len;
	encode(k, &obj, NULL, &old);
	CHECK(old.len == len && memcmp(old.p, b.p, len) == 0);
	/* one bit of the object flipped: the checksum fails, the hash too */
	b.p[at + 4242] ^= 4;
	CHECK_EQ_INT(decode(k, &b, NULL, &v), KJIT_ECORRUPT);
	b.p[at + 4242] ^= 4;
	/* the tag changed, the object intact: hashed, and read */
	b.p[b.len - 3] ^= 1;
	CHECK_EQ_INT(decode(k, &b, NULL, &v), 0);
	CHECK(!v.checksummed);
	b.p[b.len - 3] ^= 1;
	/* a secret node: unsigned, refused from its header */
	CHECK_EQ_INT(decode(k, &b, test_secret, &v), KJIT_EDENIED);
	/* what a node before this round wrote: mac 0, hashed (old values stay readable) */
	CHECK(kj__buf_append(&old, "", 0) == 0);
	old.len -= 32;
	old.p[36] = 0;
	CHECK_EQ_INT(decode(k, &old, NULL, &v), 0);
	CHECK(!v.checksummed && v.size == obj.n && memcmp(v.data, obj.p, obj.n) == 0);
	old.p[at + 7] ^= 1;
	CHECK_EQ_INT(decode(k, &old, NULL, &v), KJIT_ECORRUPT);
	old.p[at + 7] ^= 1;
	/* what each costs on this machine for 1 MiB (printed, not asserted) */
	uint64_t t0 = kj__now_us();
	for (int i = 0; i < 8; i++)
		CHECK_EQ_INT(decode(k, &b, NULL, &v), 0);
	uint64_t t1 = kj__now_us();
	for (int i = 0; i < 8; i++)
		CHECK_EQ_INT(decode(k, &old, NULL, &v), 0);
	uint64_t t2 = kj__now_us();
	printf("# checking an unsigned 1 MiB value: checksum %llu us, SHA-256 (older values) %llu us\n",
	       (unsigned long long)(t1 - t0) / 8, (unsigned long long)(t2 - t1) / 8);
	struct object small;
	make_object(&small, 16384);
	encode(k, &small, NULL, &b);
	t0 = kj__now_us();
	for (int i = 0; i < 64; i++)
		CHECK_EQ_INT(decode(k, &b, NULL, &v), 0);
	t1 = kj__now_us();
	printf("# checking an unsigned 16 KiB value: %llu ns\n", (unsigned long long)(t1 - t0) * 1000 / 64);
	free(small.p);
	kj__buf_free(&b);
	kj__buf_free(&old);
	free(obj.p);
}

/* A writer plants 64 MiB values (the largest object) that are not signed:
 * a secret node refuses them from the header, without hashing the object
 * (it hashed all of it first: ~40 ms of the loop each, and called a KJO1
 * value with a wrong digest corrupt rather than forged). */
static void test_forged_cost(void)
{
	struct kj__buf b = { 0 };
	struct kj__remote_object v;
	struct object obj = { calloc(1, KJ_REMOTE_OBJECT_MAX), KJ_REMOTE_OBJECT_MAX, "" };
	uint8_t hdr[52] = "KJO1";

	CHECK(obj.p != NULL);
	memset(obj.digest, '0', 64); /* not its digest */
	for (int i = 0; i < 8; i++)
		hdr[4 + i] = (uint8_t)((uint64_t)obj.n >> (8 * i));
	CHECK(kj__buf_append(&b, hdr, sizeof hdr) == 0 && kj__buf_append(&b, obj.p, obj.n) == 0);
	uint64_t t0 = kj__now_us();
	CHECK_EQ_INT(decode("kjit:v2:00aa", &b, test_secret, &v), KJIT_EDENIED);
	uint64_t kjo1_us = kj__now_us() - t0;
	encode("kjit:v2:00aa", &obj, NULL, &b); /* KJO2 without an HMAC */
	t0 = kj__now_us();
	CHECK_EQ_INT(decode("kjit:v2:00aa", &b, test_secret, &v), KJIT_EDENIED);
	uint64_t nomac_us = kj__now_us() - t0;
	printf("# 64 MiB planted: KJO1 refused in %llu us, unsigned KJO2 in %llu us\n", (unsigned long long)kjo1_us,
	       (unsigned long long)nomac_us);
	CHECK(kjo1_us < 5000 && nomac_us < 5000);
	/* no secret: its checksum matches (the writer's word, as a signer's),
	 * so a lying digest is not looked at: nothing of a node uses it */
	CHECK_EQ_INT(decode("kjit:v2:00aa", &b, NULL, &v), 0);
	CHECK(v.checksummed);
	b.p[b.len - 1] ^= 1; /* without a matching checksum: hashed, corrupt */
	CHECK_EQ_INT(decode("kjit:v2:00aa", &b, NULL, &v), KJIT_ECORRUPT);
	kj__buf_free(&b);
	free(obj.p);
}

static void write_secret(const char *path, const char *bytes, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, bytes, strlen(bytes)) == (ssize_t)strlen(bytes) && fchmod(fd, mode) == 0);
	close(fd);
}

static void test_secret_file(void)
{
	char dir[] = "/tmp/kjit-secret-XXXXXX", path[128], err[512];
	uint8_t *sec = NULL;
	size_t n = 0;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/secret", dir);
	write_secret(path, "a-fleet-secret-of-32-bytes-long!\n", 0600);
	CHECK_EQ_INT(kj__remote_secret_load(path, &sec, &n, err, sizeof err), 0);
	CHECK(n == 32 && memcmp(sec, "a-fleet-secret-of-32-bytes-long!", 32) == 0); /* the newline is not in it */
	free(sec);
	write_secret(path, "a-fleet-secret-of-32-bytes-long!", 0640);
	CHECK_EQ_INT(kj__remote_secret_load(path, &sec, &n, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "chmod 600") != NULL && sec == NULL);
	write_secret(path, "a-fleet-secret-of-32-bytes-long!", 0604);
	CHECK_EQ_INT(kj__remote_secret_load(path, &sec, &n, err, sizeof err), KJIT_EINVAL);
	write_secret(path, "short\n", 0600);
	CHECK_EQ_INT(kj__remote_secret_load(path, &sec, &n, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "bytes") != NULL);
	CHECK_EQ_INT(kj__remote_secret_load(dir, &sec, &n, err, sizeof err), KJIT_EINVAL); /* a directory */
	/* a symlink to a good secret (swapped in by whoever can write the
	 * directory): not followed */
	char good[160], link[160];
	snprintf(good, sizeof good, "%s/good", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	write_secret(good, "a-fleet-secret-of-32-bytes-long!", 0600);
	CHECK(symlink(good, link) == 0);
	CHECK_EQ_INT(kj__remote_secret_load(link, &sec, &n, err, sizeof err), KJIT_EINVAL);
	CHECK(sec == NULL && strstr(err, "cannot open") != NULL);
	/* a FIFO: refused at once, not a read that blocks kjitd's start */
	snprintf(link, sizeof link, "%s/fifo", dir);
	CHECK(mkfifo(link, 0600) == 0);
	CHECK_EQ_INT(kj__remote_secret_load(link, &sec, &n, err, sizeof err), KJIT_EINVAL);
	CHECK(strstr(err, "not a regular file") != NULL);
	/* a file another (non-root) user owns, mode 0600 or not: refused */
	if (geteuid() == 0) {
		CHECK(chown(good, 65534, 65534) == 0);
		CHECK_EQ_INT(kj__remote_secret_load(good, &sec, &n, err, sizeof err), KJIT_EINVAL);
		CHECK(strstr(err, "owned by uid 65534") != NULL);
	}
	snprintf(path, sizeof path, "%s/none", dir);
	CHECK_EQ_INT(kj__remote_secret_load(path, &sec, &n, err, sizeof err), KJIT_EINVAL);
	snprintf(path, sizeof path, "rm -rf %s", dir);
	CHECK_EQ_INT(system(path), 0);
}

/* The tier takes a value's texts apart (remote-meta.c): a KJO2 value's log
 * and lowered names have fields of their own, a KJO1 value's names are
 * lines of its log. */
static void test_meta_texts(void)
{
	char *log = NULL, *low = NULL;
	struct kj__remote_object o = { .format = 2 };

	o.lowered = "scale<float>\t_Z5scaleIfEvv\n";
	o.lowered_len = strlen(o.lowered);
	o.log = "warning: x\n";
	o.log_len = strlen(o.log);
	CHECK_EQ_INT(kj__remote_texts(&o, &log, &low), 0);
	CHECK(log && low && strcmp(log, "warning: x\n") == 0 && strcmp(low, o.lowered) == 0);
	free(log);
	free(low);
	struct kj__remote_object old = { .format = 1 };
	old.log = "warning: x\nkjit: lowered name: scale<float> = _Z5scaleIfEvv\n";
	old.log_len = strlen(old.log);
	CHECK_EQ_INT(kj__remote_texts(&old, &log, &low), 0);
	CHECK(log && strstr(log, "lowered name") == NULL && low && strcmp(low, "scale<float>\t_Z5scaleIfEvv\n") == 0);
	free(log);
	free(low);
}

static void test_answer_parts(void)
{
	struct kj__remote_meta m = { 2, "sm_90", "12.4", "cubin", "nvrtc" };
	char *meta = kj__remote_meta_text(&m);
	static const char ents[] = "scale\0add\0";
	struct kj__remote_object o = { .format = 2, .entries = ents, .entries_len = sizeof ents - 1 };
	struct kj__remote_answer a;

	CHECK(meta != NULL);
	o.meta = meta;
	o.meta_len = meta ? strlen(meta) : 0;
	o.lowered = "scale<float>\t_Z5scaleIfEvv\n";
	o.lowered_len = strlen(o.lowered);
	o.log = "warning: x\n";
	o.log_len = strlen(o.log);
	CHECK_EQ_INT(kj__remote_answer_make(&o, &a), 0);
	CHECK(a.obj == &o && a.judged && a.meta_ok && a.texts_ok);
	CHECK(a.meta.backend == 2 && a.meta.target && strcmp(a.meta.target, "sm_90") == 0 && a.meta.version &&
	      strcmp(a.meta.version, "12.4") == 0);
	CHECK(a.entries && strcmp(a.entries, "scale\nadd\n") == 0);
	CHECK(a.log && strcmp(a.log, "warning: x\n") == 0 && a.lowered && strcmp(a.lowered, o.lowered) == 0);
	kj__remote_answer_clear(&a);
	CHECK(a.entries == NULL && a.log == NULL);
	/* Not kj__remote_meta_text's form: judged, but names nothing */
	static const char *bad[] = { "backend=02\ntarget=sm_90\nversion=12.4\n", "target=sm_90\nbackend=2\nversion=12.4\n",
				     "backend=2\ntarget=sm_90\n", "backend=\ntarget=sm_90\nversion=12.4\n", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		o.meta = bad[i];
		o.meta_len = strlen(bad[i]);
		CHECK_EQ_INT(kj__remote_answer_make(&o, &a), 0);
		CHECK(a.judged && !a.meta_ok);
		kj__remote_answer_clear(&a);
	}
	/* No entries listed: an empty list, which covers nothing asked */
	o.meta = meta;
	o.meta_len = meta ? strlen(meta) : 0;
	o.entries = NULL;
	o.entries_len = 0;
	CHECK_EQ_INT(kj__remote_answer_make(&o, &a), 0);
	CHECK(a.meta_ok && a.entries && a.entries[0] == '\0');
	kj__remote_answer_clear(&a);
	struct kj__remote_object old = { .format = 1 };
	old.log = "warning: x\nkjit: lowered name: scale<float> = _Z5scaleIfEvv\n";
	old.log_len = strlen(old.log);
	CHECK_EQ_INT(kj__remote_answer_make(&old, &a), 0);
	CHECK(!a.judged && a.entries == NULL && a.texts_ok);
	CHECK(a.log && strstr(a.log, "lowered name") == NULL && a.lowered &&
	      strcmp(a.lowered, "scale<float>\t_Z5scaleIfEvv\n") == 0);
	kj__remote_answer_clear(&a);
	free(meta);
}

TEST_LIST(TEST(url_parse) TEST(answer_parts) TEST(value_algs) TEST(publish_lookup) TEST(corrupt_is_miss) TEST(lease_wait_publish) TEST(lease_stampede)
	  TEST(lease_expiry_takeover) TEST(outage_reconnect) TEST(ro_never_writes) TEST(slow_server_times_out)
	  TEST(tcp_auth_select) TEST(value_hmac) TEST(value_gmac) TEST(value_checksum) TEST(forged_cost) TEST(secret_file)
	  TEST(meta_texts))
