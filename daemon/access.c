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
 * process, only the primary group counts.  No state of its own.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Is gid among the groups of process pid, which must run as uid?  Reads
 * the Uid: and Groups: lines of /proc/PID/status. */
static int proc_in_group(pid_t pid, uid_t uid, gid_t gid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int uid_ok = 0, found = 0;

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

int kj__peer_is_admin(const struct kj__daemon *d, const struct kj__conn *c)
{
	uid_t uid = kj__conn_uid(c);

	if (uid == 0 || uid == getuid())
		return 1;
	for (size_t i = 0; i < d->cfg.n_admin_gid; i++)
		if (kj__conn_gid(c) == d->cfg.admin_gid[i] ||
		    proc_in_group(kj__conn_pid(c), uid, d->cfg.admin_gid[i]))
			return 1;
	return 0;
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
