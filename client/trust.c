/* trust.c: whether a client may talk to the kjitd it found (docs/protocol.md,
 * "Whom a client talks to").
 *
 * A client sends a user's sources, headers and -D values, and takes back
 * code a program will run, so it talks only to a daemon it can trust.  Two
 * checks, before a byte is sent:
 *  - the socket's folder is a directory owned by the caller or root and
 *    writable by neither its group nor others, so no one else can have put
 *    (or can swap) the socket in it.  A squatter's /tmp/kjit-$UID fails
 *    here;
 *  - the peer's SO_PEERCRED uid (the process that listened) is the
 *    caller's or root's.  This holds even when the folder check was raced
 *    (a symlinked folder repointed between the check and the connect): a
 *    listener of another user is refused.  systemd's socket activation
 *    listens as root, but kjitd listens again on the socket it is handed
 *    (libuv's uv_listen), which makes the peer its own DynamicUser uid:
 *    so a listener of any uid is trusted when every folder from / down
 *    to the socket's is a real folder (no link) owned by root and
 *    writable by no one else, as /run/kjit is: only root can have put
 *    the socket there or handed its listener to a process.
 * Inside a user namespace whose root is not mapped (a rootless container
 * given the host's socket), root and kjitd show as the overflow uid and
 * nothing can be told apart: the user says whom to trust there with
 * KJIT_TRUST_UID=N[,N...] (uids as the client sees them, e.g. 65534), which
 * then count as root does for both checks.
 * Autostart reuses the folder check, stricter: the folder must be the
 * caller's own (root's /run/kjit is no place for a per-user daemon).
 * Nothing here keeps state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_int.h"

/* Is uid listed in $KJIT_TRUST_UID (numbers, comma-separated)? */
static int trusted_by_env(uid_t uid)
{
	const char *v = getenv("KJIT_TRUST_UID");

	while (v && *v) {
		char *end;
		errno = 0;
		unsigned long n = strtoul(v, &end, 10);
		if (end == v || errno != 0)
			return 0;
		if ((uid_t)n == uid && n == (unsigned long)uid)
			return 1;
		v = *end == ',' ? end + 1 : NULL;
	}
	return 0;
}

int kj__trust_dir(const char *dir, int mine_only, char *why, size_t whylen)
{
	struct stat st;
	uid_t me = geteuid();

	why[0] = '\0';
	if (stat(dir, &st) < 0) {
		int e = errno;
		snprintf(why, whylen, "%s cannot be inspected: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "%s is not a folder", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != me && (mine_only || (st.st_uid != 0 && !trusted_by_env(st.st_uid)))) {
		snprintf(why, whylen, "its folder %s is owned by uid %u, not by you (uid %u)%s", dir,
			 (unsigned)st.st_uid, (unsigned)me, mine_only ? "" : " or root");
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "its folder %s is writable by %s (mode %04o)", dir,
			 (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Is every folder from / down to dir (absolute) a real folder owned by
 * root and writable by neither group nor others?  1 or 0. */
static int root_chain(const char *dir)
{
	char p[4096];
	struct stat st;
	size_t n = strlen(dir);

	if (dir[0] != '/' || n >= sizeof p)
		return 0;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		int ok = lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
			 !(st.st_mode & (S_IWGRP | S_IWOTH));
		p[i] = c;
		if (!ok)
			return 0;
	}
	return lstat("/", &st) == 0 && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int kj__trust_peer(int fd, const char *dir, char *why, size_t whylen)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	uid_t me = geteuid();

	why[0] = '\0';
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred) {
		snprintf(why, whylen, "its listener's uid cannot be read (SO_PEERCRED: %s)", strerror(errno));
		return -EPERM;
	}
	if (cred.uid != me && cred.uid != 0 && !trusted_by_env(cred.uid) && !(dir && root_chain(dir))) {
		snprintf(why, whylen, "it is served by uid %u (pid %d), neither you (uid %u) nor root",
			 (unsigned)cred.uid, (int)cred.pid, (unsigned)me);
		return -EPERM;
	}
	return 0;
}
