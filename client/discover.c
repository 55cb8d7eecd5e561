/* discover.c: which kjitd a client talks to when it was given no socket
 * (kjit_open_options.socket_path) and no KJIT_SOCKET.  The order:
 *   1. the per-user socket ($XDG_RUNTIME_DIR/kjit/kjitd.sock, else
 *      /tmp/kjit-$UID/kjitd.sock);
 *   2. the system socket ($KJIT_SYSTEM_SOCKET, else /run/kjit/kjitd.sock),
 *      so a member of its group finds the shared daemon with nothing set;
 *   3. the socket this user's kjitd recorded in the cache folder
 *      (KJ_SOCKET_RECORD): the same user under another runtime folder (su,
 *      cron, Slurm) reaches the daemon that holds the cache instead of
 *      starting a second one that cannot take its lock;
 *   4. a per-user kjitd started on the per-user socket (connect.c), unless
 *      autostart is off.
 * All under trust.c's rules.  A per-user or system socket that fails them
 * stops the search with its one-line error and nothing sent: a squatted
 * /tmp/kjit-$UID is an attack to report, not a reason to look elsewhere.
 * The record is only a hint: one that fails them is passed over.  A system
 * socket that refuses this user (EACCES: not in its group) is passed over
 * too, and why is kept in c->note for `kjit ping` and for the error should
 * nothing else answer.  Once found, the socket is kept for the client's
 * life (a reconnect goes to it, connect.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_int.h"
#include "util.h"

/* Longest recorded socket path read (a socket's path is far shorter). */
#define RECORD_MAX 1024

/* The socket recorded in the cache folder, malloc'd, or NULL: the record
 * must be a regular file of this user that no one else may write, holding
 * one absolute path. */
static char *recorded_socket(void)
{
	char buf[RECORD_MAX + 1];
	struct stat st;
	ssize_t n = -1;
	char *dir = kj__default_cache_dir();
	char *path = dir ? kj__asprintf("%s/%s", dir, KJ_SOCKET_RECORD) : NULL;

	free(dir);
	if (path == NULL)
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	free(path);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) &&
	    st.st_size <= RECORD_MAX)
		n = read(fd, buf, RECORD_MAX);
	close(fd);
	if (n < 2 || buf[0] != '/')
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return kj__strdup(buf);
}

/* Tries path instead of the per-user socket.  0 when connected
 * (c->socket_path is path now), 1 to look further, or a failure code with
 * c->err set.  strict: a socket that is not trusted is an error (the
 * system socket); else it is passed over (the record). */
static int try_other(kjit_client *c, const char *path, int found, int strict)
{
	if (strcmp(path, c->socket_path) == 0)
		return 1;
	int r = kj__client_connect_trusted(c, path, &c->fd);
	if (r == 0) {
		char *p = kj__strdup(path);
		if (p == NULL) {
			close(c->fd);
			c->fd = -1;
			return kj__client_fail(c, KJIT_ENOMEM, "out of memory");
		}
		free(c->socket_path);
		c->socket_path = p;
		c->found = found;
		return 0;
	}
	c->fd = -1;
	if (r == KJ_UNTRUSTED && strict)
		return KJIT_ECONNECT;
	if (r == -EACCES && strict) {
		kj__client_connect_fail(c, path, EACCES);
		snprintf(c->note, sizeof c->note, "%s", c->err);
	}
	c->err[0] = '\0';
	return 1;
}

int kj__client_discover(kjit_client *c)
{
	int r;

	c->found = KJ_FOUND_USER;
	c->note[0] = '\0';
	r = kj__client_connect_trusted(c, c->socket_path, &c->fd);
	if (r == 0)
		goto done;
	c->fd = -1;
	if (r == KJ_UNTRUSTED) {
		r = KJIT_ECONNECT;
		goto done;
	}
	if (r != -ENOENT && r != -ECONNREFUSED) {
		r = kj__client_connect_fail(c, c->socket_path, -r);
		goto done;
	}
	if ((r = try_other(c, kj__system_socket_path(), KJ_FOUND_SYSTEM, 1)) != 1)
		goto done;
	char *rec = recorded_socket();
	if (rec != NULL) {
		r = try_other(c, rec, KJ_FOUND_RECORD, 0);
		free(rec);
		if (r != 1)
			goto done;
	}
	r = kj__client_connect_or_start(c);
	if (r < 0 && c->note[0] != '\0') {
		size_t n = strlen(c->err);
		snprintf(c->err + n, sizeof c->err - n, "; also %s", c->note);
	}
done:
	if (r == 0)
		c->discover = 0;
	return r;
}
