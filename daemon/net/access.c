/* access.c: who may administer kjitd (docs/protocol.md, "Roles").
 *
 * Three roles: kjitd's owner (the uid it runs as) and root administer it;
 * so do peers in a group named with --admin-gid (primary or supplementary
 * group of the peer process); everyone else the allow-list admits is a
 * user, who may compile and fetch, read counts and list only the entries
 * it requested.  Administrative requests: STOP, and ADMIN clear, gc,
 * verify, replay, `stats zero`, export and import; export and import,
 * which make kjitd open a path, stay with the owner and root alone (a
 * group member must not make a root kjitd write any file it names).
 *
 * The supplementary groups come from /proc/PID/status of the peer's pid
 * (SO_PEERCRED), checked to still belong to the peer's uid; with no such
 * process, only the primary group counts.
 *
 * Subordinate uids (issue 29): a user with a /etc/subuid range runs
 * processes as thousands of host uids through a child user namespace
 * (newuidmap, podman), each keeping the user's supplementary groups.  So
 * a peer whose user namespace is below kjitd's is charged (byte budget,
 * connections, resolves, workers, its objects' share: everything keyed by
 * kj__conn_uid) to the owner of the namespace just below kjitd's on the
 * way up (NS_GET_PARENT, NS_GET_OWNER_UID on /proc/PID/ns/user), and sees
 * what that owner sees; it is admitted (--allow-gid) or an administrator
 * (--admin-gid) through a group only if the owner's account is in it too.
 * Its own uid still decides whether it is root or kjitd's owner.  The pid
 * of SO_PEERCRED may be reused once the peer exits: with SO_PEERPIDFD
 * (Linux 6.5) kjitd checks that the very process is still alive after
 * reading its namespace, else that a process of the peer's uid still holds
 * the pid; a peer gone meanwhile is refused.  The residual race, without
 * SO_PEERPIDFD: the peer exits and another process of the same host uid
 * takes its pid before kjitd reads it; since a subordinate uid's processes
 * live only in namespaces its owner made, that charges the same owner
 * (unless root mapped one host uid into namespaces of several owners).
 * A kjitd not running as root cannot open another uid's /proc/PID/ns/user
 * unless the process is in a namespace kjitd's uid owns (which gives it
 * the capability to): such a peer is charged as its own uid.
 * No state of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "kj_types.h"
#include "util.h"

int kj__admin_gid_opt(struct kj__config *cfg, const char *arg)
{
	char *end;

	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || *arg == '\0' || *arg == '-' || *end != '\0' || v > UINT_MAX ||
	    cfg->n_admin_gid == KJ_ARRAY_SIZE(cfg->admin_gid))
		return -1;
	cfg->admin_gid[cfg->n_admin_gid++] = (gid_t)v;
	return 0;
}

/* Does process pid run as uid, with gid among its groups ((gid_t)-1: no
 * group asked)?  Reads the Uid: and Groups: lines of /proc/PID/status. */
static int proc_in_group(pid_t pid, uid_t uid, gid_t gid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int uid_ok = 0, found = gid == (gid_t)-1;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return 0;
	/* getline: a Groups: line may hold thousands of groups */
	while (getline(&line, &cap, f) > 0) {
		unsigned long real;
		if (sscanf(line, "Uid: %lu", &real) == 1)
			uid_ok = real == (unsigned long)uid;
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		for (char *save = NULL, *t = strtok_r(line + 7, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
			if (strtoul(t, NULL, 10) == (unsigned long)gid)
				found = 1;
	}
	free(line);
	fclose(f);
	return uid_ok && found;
}

int kj__uid_in_group(uid_t uid, gid_t gid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	gid_t small[256], *g = small;
	int n = (int)KJ_ARRAY_SIZE(small), found = 0;

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || res == NULL)
		return 0;
	if (pw.pw_gid == gid)
		return 1;
	if (getgrouplist(pw.pw_name, pw.pw_gid, g, &n) < 0) {
		if (n <= 0 || (g = malloc((size_t)n * sizeof *g)) == NULL)
			return 0;
		if (getgrouplist(pw.pw_name, pw.pw_gid, g, &n) < 0)
			n = 0;
	}
	for (int i = 0; i < n && !found; i++)
		found = g[i] == gid;
	if (g != small)
		free(g);
	return found;
}

int kj__peer_is_admin(const struct kj__daemon *d, const struct kj__conn *c)
{
	int nested;
	uid_t uid = kj__conn_peer_uid(c, &nested), owner = kj__conn_uid(c);

	if (uid == 0 || uid == getuid())
		return 1;
	for (size_t i = 0; i < d->cfg.n_admin_gid; i++)
		if ((kj__conn_gid(c) == d->cfg.admin_gid[i] ||
		     proc_in_group(kj__conn_pid(c), uid, d->cfg.admin_gid[i])) &&
		    (!nested || owner == 0 || owner == getuid() || kj__uid_in_group(owner, d->cfg.admin_gid[i])))
			return 1;
	return 0;
}

/* Same namespace file (dev, inode)? */
static int same_ns(int fd, const struct stat *self)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}

/* Is the peer's process still the one SO_PEERCRED named: its pidfd alive
 * (SO_PEERPIDFD), else a process of uid at pid? */
static int peer_still_there(int sock, pid_t pid, uid_t uid)
{
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
	int pidfd = -1;
	socklen_t len = sizeof pidfd;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
		/* signal 0 tells alive (0, or EPERM: another user's) from gone (ESRCH);
		 * a kernel or valgrind without the call: the check below */
		long rc = syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0);
		int e = errno;
		close(pidfd);
		if (rc == 0 || e != ENOSYS)
			return rc == 0 || e == EPERM;
	}
	return proc_in_group(pid, uid, (gid_t)-1);
}

int kj__userns_owner(int sock, pid_t pid, uid_t uid, uid_t *owner, int *nested, char *err, size_t errlen)
{
	struct stat self;
	char path[64];
	int fd, r = -1;

	*owner = uid;
	*nested = 0;
	/* kjitd's own namespace; without /proc there is nothing to tell by */
	if (stat("/proc/self/ns/user", &self) < 0 || pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		/* not ours to inspect (a per-user kjitd and another uid's process,
		 * which is in no namespace kjitd's uid owns): charged as itself */
		if (errno == EACCES || errno == EPERM)
			return 0;
		snprintf(err, errlen, "cannot tell pid %d's user namespace (%s): its process is gone", (int)pid,
			 strerror(errno));
		return -1;
	}
	for (int depth = 0; depth < 40 && !same_ns(fd, &self); depth++) {
		int parent = ioctl(fd, NS_GET_PARENT);
		if (parent < 0) {
			snprintf(err, errlen, "pid %d runs in a user namespace that is not below kjitd's (%s)", (int)pid,
				 strerror(errno));
			goto out;
		}
		if (same_ns(parent, &self)) {
			uid_t o;
			if (ioctl(fd, NS_GET_OWNER_UID, &o) < 0) {
				snprintf(err, errlen, "cannot tell who owns pid %d's user namespace: %s", (int)pid,
					 strerror(errno));
				close(parent);
				goto out;
			}
			*owner = o;
			*nested = 1;
		}
		close(fd);
		fd = parent;
	}
	if (!same_ns(fd, &self)) {
		snprintf(err, errlen, "pid %d runs in user namespaces nested too deep", (int)pid);
		goto out;
	}
	if (!peer_still_there(sock, pid, uid)) {
		snprintf(err, errlen, "pid %d exited before its user namespace could be checked", (int)pid);
		goto out;
	}
	r = 0;
out:
	close(fd);
	if (r < 0) {
		*owner = uid;
		*nested = 0;
	}
	return r;
}

int kj__admin_refused(struct kj__daemon *d, struct kj__conn *c, uint32_t id, const char *what)
{
	if (kj__peer_is_admin(d, c))
		return 0;
	kj__log(d, "refused %s from uid %u pid %d: not an administrator", what, (unsigned)kj__conn_uid(c),
		(int)kj__conn_pid(c));
	kj__conn_error(c, id, KJIT_EDENIED,
		       "%s is reserved to kjitd's owner (uid %u), root and the groups of --admin-gid;"
		       " uid %u is none of these: ask kjitd's operator", what, (unsigned)getuid(),
		       (unsigned)kj__conn_uid(c));
	return 1;
}
