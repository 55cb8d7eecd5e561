/* sandbox.c: the Landlock wall around a compile worker (Linux 5.13 and
 * later): the second wall inside the namespaces of compilers/walls.c, and
 * the only file wall where a kernel has no user namespaces.
 *
 * After its compiler has loaded, a worker may read and execute only its
 * family's trees (kj__walls_trees: where compilers, their libraries,
 * headers and bitcode live), its own /proc, /dev/zero and /dev/urandom,
 * may write only its own temporary directory and /dev/null,
 * and (Landlock ABI 4 and later) may not bind or connect TCP sockets; with
 * ABI 6 it also may not reach abstract Unix sockets or signal processes
 * outside itself.  Home directories, the cache and everything under /tmp
 * but its own directory are out of reach, so a source cannot make a
 * compiler read them into a log.  A kernel without Landlock leaves the
 * worker with its rlimits and no_new_privs alone, and says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compint.h"
#include "kj_types.h"
#include "util.h"

/* The ruleset attribute as of ABI 6; older kernels get a shorter prefix. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

#define LL_NET_BIND_TCP (1ull << 0)
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0)
#define LL_SCOPE_SIGNAL (1ull << 1)

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_WRITE_V1 (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
		     LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | \
		     LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | \
		     LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)
#define FS_REFER (1ull << 13)    /* ABI 2 */
#define FS_TRUNCATE (1ull << 14) /* ABI 3 */

/* Read beside the family's trees: the worker's own /proc (its PID
 * namespace's, or the host's where it has none) and the harmless devices. */
static const char *const read_extra[] = { "/proc", "/dev", "/dev/zero", "/dev/urandom" };

static int add_path(int ruleset, const char *path, uint64_t access)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = access };
	int r;

	struct stat st;

	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0)
		return errno == ENOENT ? 0 : -errno; /* an absent tree needs no rule */
	if (fstat(pb.parent_fd, &st) == 0 && !S_ISDIR(st.st_mode)) /* a file takes only file rights */
		pb.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
				     LANDLOCK_ACCESS_FS_WRITE_FILE | FS_TRUNCATE;
	r = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	r = r < 0 ? -errno : 0;
	close(pb.parent_fd);
	return r;
}

int kj__sandbox_landlock(const struct kj__walls *w, const char *rw_dir, char *note, size_t notelen)
{
	struct ll_ruleset_attr attr = { 0 };
	size_t attr_size = sizeof attr.handled_access_fs;
	int abi, ruleset = -1, r = 0;

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		snprintf(note, notelen, "Landlock unavailable (%s): the worker runs with rlimits and no_new_privs only",
			 strerror(errno));
		return 0;
	}
	uint64_t write = FS_WRITE_V1 | (abi >= 2 ? FS_REFER : 0) | (abi >= 3 ? FS_TRUNCATE : 0);
	attr.handled_access_fs = FS_READ | write;
	if (abi >= 4) {
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		attr_size = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
		attr_size = sizeof attr;
	}
	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0) {
		snprintf(note, notelen, "landlock_create_ruleset: %s", strerror(errno));
		return KJIT_EINTERNAL;
	}
	for (size_t i = 0; r == 0 && i < w->n; i++)
		r = add_path(ruleset, w->tree[i], FS_READ);
	for (size_t i = 0; r == 0 && i < KJ_ARRAY_SIZE(read_extra); i++)
		r = add_path(ruleset, read_extra[i], i == 0 ? FS_READ : i == 1 ? LANDLOCK_ACCESS_FS_READ_DIR :
							 LANDLOCK_ACCESS_FS_READ_FILE);
	if (r == 0)
		r = add_path(ruleset, "/dev/null", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
						   (abi >= 3 ? FS_TRUNCATE : 0));
	if (r == 0)
		r = add_path(ruleset, rw_dir, FS_READ | write);
	if (r < 0) {
		snprintf(note, notelen, "landlock_add_rule: %s", strerror(-r));
		close(ruleset);
		return KJIT_EINTERNAL;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) {
		snprintf(note, notelen, "landlock_restrict_self: %s", strerror(errno));
		close(ruleset);
		return KJIT_EINTERNAL;
	}
	close(ruleset);
	snprintf(note, notelen, "Landlock ABI %d: read-only system trees, writable %s only%s", abi, rw_dir,
		 abi >= 4 ? ", no TCP" : "");
	return 0;
}
