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
 *    listens as root, so the system daemon (DynamicUser) passes.
 * Autostart reuses the folder check, stricter: the folder must be the
 * caller's own (root's /run/kjit is no place for a per-user daemon).
 * Nothing here keeps state.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_int.h"

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
	if (st.st_uid != me && (mine_only || st.st_uid != 0)) {
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

int kj__trust_peer(int fd, char *why, size_t whylen)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	uid_t me = geteuid();

	why[0] = '\0';
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred) {
		snprintf(why, whylen, "its listener's uid cannot be read (SO_PEERCRED: %s)", strerror(errno));
		return -EPERM;
	}
	if (cred.uid != me && cred.uid != 0) {
		snprintf(why, whylen, "it is served by uid %u (pid %d), neither you (uid %u) nor root",
			 (unsigned)cred.uid, (int)cred.pid, (unsigned)me);
		return -EPERM;
	}
	return 0;
}
