/* dropstat.c: the per-user counters of the drop-in libraries.
 *
 * The file is 8 bytes of magic then KJ_DROPIN_STAT_SLOTS little-endian u64
 * counters, mapped shared and bumped with atomic adds, so any number of
 * processes of the user count at once without a lock and the file never
 * grows.  A file of the wrong size or magic is reset, never trusted.
 * Nothing here is on a compile's answer path: failures are returned and
 * the drop-in drops them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dropstat.h"
#include "kj_types.h"

#define DS_MAGIC "KJDROP01"
#define DS_SIZE (8 + 8 * KJ_DROPIN_STAT_SLOTS)

_Static_assert(KJ_DS_COUNT <= KJ_DROPIN_STAT_SLOTS, "more drop-in reasons than counter slots");

static const char *const names[KJ_DS_COUNT] = {
	"served", "unreachable", "option", "no-arch", "api", "input", "refused", "option-error", "truncated-log",
	"log", "untrusted", "bad-output", "path",
};

const char *kj__dropstat_name(int why)
{
	return why >= 0 && why < KJ_DS_COUNT ? names[why] : NULL;
}

int kj__dropstat_path(char *buf, size_t len)
{
	const char *env = getenv("KJIT_DROPIN_STATS"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (xdg && *xdg == '/')
		n = snprintf(buf, len, "%s/kjit/dropin.stats", xdg);
	else if (home && *home == '/')
		n = snprintf(buf, len, "%s/.cache/kjit/dropin.stats", home);
	else
		return KJIT_ENOENT;
	return n > 0 && (size_t)n < len ? 0 : KJIT_ETOOBIG;
}

/* mkdir -p of path's folder (0700 for what it makes). */
static void make_parent(const char *path)
{
	char d[4096];

	if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d)
		return;
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(d, 0700) < 0 && errno != EEXIST)
			return;
		*p = '/';
	}
}

/* Maps the file (creating or resetting it when create).  NULL on failure. */
static unsigned char *ds_map(int create)
{
	char path[4096];
	struct stat st;
	unsigned char *m = NULL;
	int fd;

	if (kj__dropstat_path(path, sizeof path) < 0)
		return NULL;
	if (create)
		make_parent(path);
	fd = open(path, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	if (st.st_size != DS_SIZE) {
		if (!create || ftruncate(fd, 0) < 0 || ftruncate(fd, DS_SIZE) < 0)
			goto out;
	}
	m = mmap(NULL, DS_SIZE, create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		m = NULL;
	if (m && memcmp(m, DS_MAGIC, 8) != 0) {
		if (create) {
			memset(m + 8, 0, DS_SIZE - 8);
			memcpy(m, DS_MAGIC, 8);
		} else {
			munmap(m, DS_SIZE);
			m = NULL;
		}
	}
out:
	close(fd);
	return m;
}

/* The process's mapping of the file, made on the first count and kept for
 * the process's life (a count costs an atomic add, not an open and a map);
 * a child after fork shares it.  The one piece of process state here. */
static unsigned char *ds_mapped;

int kj__dropstat_add(int why)
{
	unsigned char *m = __atomic_load_n(&ds_mapped, __ATOMIC_ACQUIRE), *none = NULL;

	if (why < 0 || why >= KJ_DS_COUNT)
		return KJIT_EINVAL;
	if (m == NULL) {
		if ((m = ds_map(1)) == NULL)
			return KJIT_EIO;
		if (!__atomic_compare_exchange_n(&ds_mapped, &none, m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			munmap(m, DS_SIZE); /* another thread mapped it first */
			m = none;
		}
	}
	uint64_t *slot = (uint64_t *)(void *)(m + 8 + 8 * (size_t)why);
	__atomic_fetch_add(slot, 1, __ATOMIC_RELAXED);
	return 0;
}

int kj__dropstat_read(uint64_t *counts)
{
	unsigned char *m = ds_map(0);

	memset(counts, 0, sizeof *counts * KJ_DS_COUNT);
	if (m == NULL)
		return KJIT_ENOENT;
	for (int i = 0; i < KJ_DS_COUNT; i++)
		counts[i] = __atomic_load_n((uint64_t *)(void *)(m + 8 + 8 * (size_t)i), __ATOMIC_RELAXED);
	munmap(m, DS_SIZE);
	return 0;
}
