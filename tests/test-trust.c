/* test-trust.c: the client's trust checks (client/trust.c) and its
 * discovery order (client/discover.c), without a daemon: plain listening
 * sockets stand for daemons (the fast path is off, so kjit_open only
 * connects).  The attacks themselves, with a second user, are
 * tests/e2e/trust.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_int.h"
#include "test.h"
#include "util.h"

/* A listening socket at path (its folder made 0700 first). */
static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *dir = kj__strdup(path);

	CHECK(dir != NULL);
	*strrchr(dir, '/') = '\0';
	CHECK(kj__mkdir_p(dir, 0700) == 0);
	free(dir);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(strlen(path) < sizeof sa.sun_path);
	strcpy(sa.sun_path, path);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(fd, 8) == 0);
	return fd;
}

static char tmp[64];

/* Writes n bytes of s to a new file at path, mode mode. */
static void put_file(const char *path, const char *s, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	CHECK(kj__write_all(fd, s, n) == 0);
	CHECK(close(fd) == 0);
}

/* A fresh folder and an environment that points nowhere real. */
static void setup(void)
{
	char p[128];

	snprintf(tmp, sizeof tmp, "/tmp/kjit-test-trust.XXXXXX");
	CHECK(mkdtemp(tmp) != NULL);
	unsetenv("KJIT_SOCKET");
	snprintf(p, sizeof p, "%s/xdg", tmp);
	setenv("XDG_RUNTIME_DIR", p, 1);
	snprintf(p, sizeof p, "%s/sys/kjitd.sock", tmp);
	setenv("KJIT_SYSTEM_SOCKET", p, 1);
	snprintf(p, sizeof p, "%s/cache", tmp);
	setenv("KJIT_CACHE_DIR", p, 1);
	setenv("KJIT_NO_AUTOSTART", "1", 1);
	setenv("KJIT_FAST_PATH", "0", 1);
}

static void teardown(void)
{
	CHECK(kj__rm_rf(tmp) == 0);
}

/* Opens with opt and checks the socket found and how. */
static void expect_found(const kjit_open_options *opt, const char *path, const char *how)
{
	kjit_client *c = NULL;
	const char *h = NULL, *note = NULL;

	int r = kjit_open(&c, opt);
	if (r != 0)
		fprintf(stderr, "kjit_open: %s\n", kjit_last_error(NULL));
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_STR(kjit_socket_path(c, &h, &note), path);
	CHECK_EQ_STR(h, how);
	CHECK(note != NULL);
	kjit_close(c);
}

static void test_dir_rules(void)
{
	char why[512], p[128];

	setup();
	CHECK_EQ_INT(kj__trust_dir(tmp, 1, why, sizeof why), 0);
	CHECK_EQ_INT(kj__trust_dir(tmp, 0, why, sizeof why), 0);
	CHECK(chmod(tmp, 0770) == 0);
	CHECK_EQ_INT(kj__trust_dir(tmp, 0, why, sizeof why), -EPERM);
	CHECK(strstr(why, "writable by its group") != NULL);
	CHECK(chmod(tmp, 01777) == 0); /* sticky does not make a shared folder private */
	CHECK_EQ_INT(kj__trust_dir(tmp, 0, why, sizeof why), -EPERM);
	CHECK(strstr(why, "writable by others (mode 1777)") != NULL);
	CHECK(chmod(tmp, 0700) == 0);
	snprintf(p, sizeof p, "%s/none", tmp);
	CHECK_EQ_INT(kj__trust_dir(p, 0, why, sizeof why), -ENOENT);
	snprintf(p, sizeof p, "%s/file", tmp);
	put_file(p, "x", 1, 0600);
	CHECK_EQ_INT(kj__trust_dir(p, 0, why, sizeof why), -ENOTDIR);
	if (geteuid() == 0) {
		snprintf(p, sizeof p, "%s/other", tmp);
		CHECK(mkdir(p, 0700) == 0 && chown(p, 65534, 65534) == 0);
		CHECK_EQ_INT(kj__trust_dir(p, 0, why, sizeof why), -EPERM);
		CHECK(strstr(why, "owned by uid 65534") != NULL);
	} else {
		/* root's folder: trusted to talk to, not to start a daemon in */
		CHECK_EQ_INT(kj__trust_dir("/", 0, why, sizeof why), 0);
		CHECK_EQ_INT(kj__trust_dir("/", 1, why, sizeof why), -EPERM);
	}
	teardown();
}

static void test_peer_self(void)
{
	char why[256];
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_EQ_INT(kj__trust_peer(sv[0], NULL, why, sizeof why), 0);
	close(sv[0]);
	close(sv[1]);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0); /* not connected: no peer to trust */
	CHECK(fd >= 0);
	CHECK(kj__trust_peer(fd, NULL, why, sizeof why) < 0 && why[0] != '\0');
	close(fd);
}

/* A listener of uid 65534 in folder dir: the connected client end, or -1. */
static int connect_to_other(const char *dir, pid_t *child)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int ready[2], fd;
	char c;

	snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
	if (pipe(ready) < 0 || (*child = fork()) < 0)
		return -1;
	if (*child == 0) {
		int l = socket(AF_UNIX, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || setgid(65534) < 0 || setuid(65534) < 0 ||
		    listen(l, 4) < 0) /* listened as 65534, as kjitd re-listens on systemd's socket */
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1 || (fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return close(ready[0]), -1;
	close(ready[0]);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return close(fd), -1;
	return fd;
}

/* A listener of another uid: refused in a folder under /tmp (its chain has
 * a world-writable /tmp), trusted where every folder is root's alone (as
 * /run/kjit: kjitd's DynamicUser re-listens on the socket systemd made). */
static void test_peer_root_chain(void)
{
	char why[256], dir[64];
	pid_t child;
	int fd;

	if (geteuid() != 0) {
		puts("# skip peer_root_chain: needs root (a listener of another uid)");
		return;
	}
	snprintf(dir, sizeof dir, "/tmp/kjit-trust.XXXXXX");
	CHECK(mkdtemp(dir) != NULL && chmod(dir, 0755) == 0);
	CHECK((fd = connect_to_other(dir, &child)) >= 0);
	CHECK(kj__trust_peer(fd, dir, why, sizeof why) < 0 && strstr(why, "uid 65534") != NULL);
	close(fd);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	CHECK(kj__rm_rf(dir) == 0);
	snprintf(dir, sizeof dir, "/run/kjit-trust.XXXXXX");
	if (mkdtemp(dir) == NULL) {
		puts("# skip peer_root_chain: no /run to make a root folder in");
		return;
	}
	CHECK(chmod(dir, 0755) == 0);
	CHECK((fd = connect_to_other(dir, &child)) >= 0);
	CHECK_EQ_INT(kj__trust_peer(fd, dir, why, sizeof why), 0);
	CHECK(kj__trust_peer(fd, NULL, why, sizeof why) < 0); /* without the folder: the uid rule alone */
	close(fd);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	CHECK(kj__rm_rf(dir) == 0);
}

static void test_discovery_order(void)
{
	char user[128], sys[128], rec[128], env[128], recfile[160];

	setup();
	snprintf(user, sizeof user, "%s/xdg/kjit/kjitd.sock", tmp);
	snprintf(sys, sizeof sys, "%s/sys/kjitd.sock", tmp);
	snprintf(rec, sizeof rec, "%s/other-xdg/kjit/kjitd.sock", tmp);
	snprintf(env, sizeof env, "%s/env/kjitd.sock", tmp);
	snprintf(recfile, sizeof recfile, "%s/cache/%s", tmp, KJ_SOCKET_RECORD);
	/* nothing anywhere: the per-user socket's error, autostart off */
	kjit_client *c = NULL;
	CHECK_EQ_INT(kjit_open(&c, NULL), KJIT_ECONNECT);
	CHECK(strstr(kjit_last_error(NULL), user) != NULL);
	/* the cache's record only */
	int lr = listen_at(rec);
	CHECK(kj__mkdir_p(getenv("KJIT_CACHE_DIR"), 0700) == 0);
	char line[160];
	snprintf(line, sizeof line, "%s\n", rec);
	put_file(recfile, line, strlen(line), 0600);
	expect_found(NULL, rec, "recorded by the cache's kjitd");
	/* a record others may write is no hint */
	CHECK(chmod(recfile, 0666) == 0);
	CHECK_EQ_INT(kjit_open(&c, NULL), KJIT_ECONNECT);
	CHECK(chmod(recfile, 0600) == 0);
	/* the system socket comes before the record */
	int ls = listen_at(sys);
	expect_found(NULL, sys, "system");
	/* the per-user socket comes first */
	int lu = listen_at(user);
	expect_found(NULL, user, "per-user");
	/* KJIT_SOCKET, and a given socket, are used alone */
	int le = listen_at(env);
	setenv("KJIT_SOCKET", env, 1);
	expect_found(NULL, env, "KJIT_SOCKET");
	kjit_open_options o = { .socket_path = sys };
	expect_found(&o, sys, "given");
	unsetenv("KJIT_SOCKET");
	/* an untrusted per-user folder stops the search, though the system answers */
	char dir[128];
	snprintf(dir, sizeof dir, "%s/xdg/kjit", tmp);
	CHECK(chmod(dir, 0757) == 0);
	CHECK_EQ_INT(kjit_open(&c, NULL), KJIT_ECONNECT);
	CHECK(strstr(kjit_last_error(NULL), "refusing to talk to kjitd at") != NULL);
	CHECK(strstr(kjit_last_error(NULL), "writable by others") != NULL);
	CHECK_EQ_INT(kj__last_open_errno(), EPERM);
	close(lu);
	close(ls);
	close(lr);
	close(le);
	teardown();
}

TEST_LIST(TEST(dir_rules) TEST(peer_self) TEST(peer_root_chain) TEST(discovery_order))
