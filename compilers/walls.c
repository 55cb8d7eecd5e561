/* walls.c: the namespaces, the minimal root and the unprivileged uid a
 * compile worker runs in (docs/reliability.md, "What a compile can touch").
 *
 * kj__walls_enter() runs once per worker start, before the compiler loads:
 *   - a worker of a root daemon unshares mount, PID, network, IPC and UTS
 *     namespaces, and later drops to the worker user (kjit-worker, or
 *     KJIT_WORKER_USER); it never keeps uid 0;
 *   - a worker of an ordinary user creates a user namespace first (its own
 *     uid mapped to itself), then the same namespaces, and drops every
 *     capability once the root is built;
 *   - then it forks: the child is PID 1 of the new PID namespace and is the
 *     worker from then on; the parent only waits and passes on how the
 *     child ended (exit status or signal), so kjitd sees one process.
 * The child builds a tmpfs root holding read-only binds of the trees its
 * family needs (kj__walls_trees), a private tmpfs at /tmp (read-write, the
 * worker's directory from then on), /dev with null, zero and urandom, a
 * fresh /proc of its own PID namespace, and pivots into it; the old root
 * is detached.  Where user
 * namespaces are unavailable an ordinary user's worker keeps Landlock alone
 * (level KJ_WALLS_LANDLOCK) and becomes a child subreaper so it can still
 * find and kill what a job leaves behind.  Invariant: after a successful
 * enter the worker's uid is not 0 and not the daemon's (namespace levels),
 * and nothing but the trees listed in w is visible.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compint.h"
#include "kj_limits.h"
#include "kj_types.h"
#include "util.h"

#define WALLS_SIG_EXIT 128 /* a PID-1 worker reports "died of signal S" as exit 128+S */
#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

/* The trees every family reads, each with its reason (docs/reliability.md). */
static const char *const base_trees[] = {
	"/usr",              /* compilers, their libraries, headers, bitcode, perl, gcc */
	"/lib", "/lib64",    /* the loader and libc (links into /usr on merged systems) */
	"/bin", "/sbin",     /* /bin/sh for nvcc's steps (links into /usr on merged systems) */
	"/etc/ld.so.cache",  /* the loader's index of library folders (ld.so.conf.d entries) */
	"/etc/alternatives", /* Debian's links behind /usr/bin/cc, c++, ld and friends */
};

static int add_tree(struct kj__walls *w, const char *path)
{
	for (size_t i = 0; i < w->n; i++) {
		size_t l = strlen(w->tree[i]);
		if (strncmp(path, w->tree[i], l) == 0 && (path[l] == '/' || path[l] == '\0'))
			return 0; /* already beneath a listed tree */
	}
	if (w->n == KJ_WALL_TREES_MAX || strlen(path) >= sizeof w->tree[0])
		return KJIT_ETOOBIG;
	snprintf(w->tree[w->n++], sizeof w->tree[0], "%s", path);
	return 0;
}

/* Lists path, and where it leads if it is a link (AMD's /opt/rocm ->
 * /opt/rocm-6.x, a /usr/local/cuda -> /opt/... toolkit): inside the root
 * the link is recreated and its target bound. */
static int add_linked(struct kj__walls *w, const char *path)
{
	struct stat st;
	char real[PATH_MAX];
	int r;

	if (lstat(path, &st) < 0)
		return 0;
	if ((r = add_tree(w, path)) < 0 || !S_ISLNK(st.st_mode) || realpath(path, real) == NULL)
		return r;
	return add_tree(w, real);
}

int kj__walls_trees(const char *family, struct kj__walls *w)
{
	struct stat st;
	const char *toolkit = kj__family_toolkit(family);
	int r = 0;

	w->n = 0;
	for (size_t i = 0; r == 0 && i < KJ_ARRAY_SIZE(base_trees); i++)
		r = add_linked(w, base_trees[i]);
	/* The family's vendor tree (compiler.c's table): AMD's packages install
	 * under /opt/rocm; NVIDIA's toolkit is /usr/local/cuda, possibly a
	 * link to elsewhere. */
	if (r == 0 && toolkit)
		r = add_linked(w, toolkit);
	/* Compiler libraries outside /usr (a CUDA toolkit under /opt, say). */
	const char *llp = getenv("LD_LIBRARY_PATH");
	char *copy = llp ? kj__strdup(llp) : NULL, real[PATH_MAX];
	for (char *save = NULL, *dir = copy ? strtok_r(copy, ":", &save) : NULL; r == 0 && dir;
	     dir = strtok_r(NULL, ":", &save))
		if (dir[0] == '/' && realpath(dir, real) != NULL && stat(real, &st) == 0 && S_ISDIR(st.st_mode))
			r = add_tree(w, real);
	free(copy);
	return r;
}

int kj__worker_trees(const char *family, char *out, size_t outlen)
{
	struct kj__walls *w = calloc(1, sizeof *w);
	size_t k = 0;
	int r = w ? kj__walls_trees(family, w) : KJIT_ENOMEM;

	out[0] = '\0';
	for (size_t i = 0; r == 0 && i < w->n; i++) {
		int n = snprintf(out + k, outlen - k, " %s", w->tree[i]);
		if (n < 0 || (size_t)n >= outlen - k)
			r = KJIT_ETOOBIG;
		else
			k += (size_t)n;
	}
	free(w);
	return r;
}

/* Read-only flags a bind keeps from its source (the kernel refuses to
 * clear the locked ones inside a user namespace). */
static unsigned long kept_flags(const char *path)
{
	struct statvfs sv;
	unsigned long f = 0;

	if (statvfs(path, &sv) < 0)
		return 0;
	f |= sv.f_flag & ST_NOSUID ? MS_NOSUID : 0;
	f |= sv.f_flag & ST_NODEV ? MS_NODEV : 0;
	f |= sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0;
	f |= sv.f_flag & ST_NOATIME ? MS_NOATIME : 0;
	f |= sv.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0;
	f |= sv.f_flag & ST_RELATIME ? MS_RELATIME : 0;
	return f;
}

/* Makes every parent of path under root. */
static int make_parents(const char *root, const char *path)
{
	char p[PATH_MAX];

	if ((size_t)snprintf(p, sizeof p, "%s%s", root, path) >= sizeof p)
		return -ENAMETOOLONG;
	char *slash = strrchr(p, '/');
	if (slash == NULL || slash == p)
		return 0;
	*slash = '\0';
	return kj__mkdir_p(p, 0755) < 0 ? -EIO : 0;
}

/* Binds host path src at root/dst: read-only with what is mounted beneath
 * it, or (rw) read-write alone. */
static int bind_in(const char *root, const char *src, const char *dst, int rw)
{
	char at[PATH_MAX], link[PATH_MAX];
	struct stat st;
	int fd;

	if (lstat(src, &st) < 0)
		return -errno;
	if ((size_t)snprintf(at, sizeof at, "%s%s", root, dst) >= sizeof at || make_parents(root, dst) < 0)
		return -ENAMETOOLONG;
	if (S_ISLNK(st.st_mode)) { /* /lib -> usr/lib: the same link inside */
		ssize_t n = readlink(src, link, sizeof link - 1);
		if (n < 0)
			return -errno;
		link[n] = '\0';
		return symlink(link, at) < 0 && errno != EEXIST ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(at, 0755) < 0 && errno != EEXIST)
			return -errno;
	} else {
		if ((fd = open(at, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0)
			return -errno;
		close(fd);
	}
	if (mount(src, at, NULL, MS_BIND | (rw ? 0 : MS_REC), NULL) < 0)
		return -errno;
	unsigned long f = MS_BIND | MS_REMOUNT | MS_NOSUID | kept_flags(src) | (rw ? MS_NODEV : MS_RDONLY);
	if (S_ISCHR(st.st_mode))
		f &= ~(unsigned long)MS_NODEV;
	return mount(NULL, at, NULL, f, NULL) < 0 ? -errno : 0;
}

/* The worker's new root under root (a fresh tmpfs), then pivot_root. */
static int build_root(const struct kj__walls *w, const char *root, uid_t uid, gid_t gid, int *no_proc, char *what,
		      size_t wl)
{
	static const char *const devs[] = { "/dev/null", "/dev/zero", "/dev/urandom" };
	char p[PATH_MAX];
	int r = 0;

#define FAIL(...) do { snprintf(what, wl, __VA_ARGS__); return r < 0 ? r : -errno; } while (0)
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		FAIL("making mounts private");
	if (mount("kjit-root", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
		FAIL("tmpfs at %.100s", root);
	/* The worker's directory: a tmpfs of its own, so a job's directory
	 * costs no disk metadata and nothing of it exists outside.  Mounted
	 * before the trees, so a tree under /tmp (a library folder of
	 * LD_LIBRARY_PATH) is bound inside it rather than in its way. */
	char opts[128];
	snprintf(opts, sizeof opts, "mode=0700,size=%llu,uid=%u,gid=%u", (unsigned long long)KJ_WORKER_TMPFS_MAX,
		 (unsigned)uid, (unsigned)gid);
	if ((size_t)snprintf(p, sizeof p, "%.*s/tmp", PATH_MAX - 16, root) >= sizeof p || mkdir(p, 0700) < 0 ||
	    mount("kjit-tmp", p, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		FAIL("tmpfs at /tmp");
	for (size_t i = 0; i < w->n; i++)
		if ((r = bind_in(root, w->tree[i], w->tree[i], 0)) < 0 && r != -ENOENT)
			FAIL("bind %s", w->tree[i]);
	for (size_t i = 0; i < KJ_ARRAY_SIZE(devs); i++)
		if ((r = bind_in(root, devs[i], devs[i], 1)) < 0)
			FAIL("bind %s", devs[i]);
	if ((size_t)snprintf(p, sizeof p, "%.*s/proc", PATH_MAX - 16, root) >= sizeof p || mkdir(p, 0555) < 0)
		FAIL("/proc");
	/* A kernel refuses a fresh /proc inside a user namespace when the
	 * host's has parts hidden (a container, systemd's ProtectKernelTunables=):
	 * the compilers work without one, so the worker goes on with none. */
	*no_proc = mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? errno : 0;
	if ((size_t)snprintf(p, sizeof p, "%.*s/.old", PATH_MAX - 16, root) >= sizeof p || mkdir(p, 0700) < 0 || syscall(SYS_pivot_root, root, p) < 0 || chdir("/") < 0)
		FAIL("pivot_root");
	if (umount2("/.old", MNT_DETACH) < 0 || rmdir("/.old") < 0)
		FAIL("detaching the old root");
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		FAIL("read-only root");
#undef FAIL
	return 0;
}

/* Writes s to the file at path (the user namespace's maps). */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	int r = kj__write_all(fd, s, strlen(s));
	close(fd);
	return r < 0 ? -EIO : 0;
}

/* An unprivileged daemon's worker: a user namespace with uid and gid mapped
 * to themselves, then the other namespaces. */
static int enter_userns(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | NS_FLAGS) < 0)
		return -errno;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0 || write_file("/proc/self/setgroups", "deny") < 0)
		return -EPERM;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", map) < 0 ? -EPERM : 0;
}

/* Drops every capability (inside the worker's user namespace). */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof data);
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	return syscall(SYS_capset, &h, data) < 0 ? -errno : 0;
}

/* The parent outside: waits for the PID-1 worker and ends as it did. */
static void relay(pid_t child, int fd, const char *tmpdir_owned)
{
	int st = 0;

	close(fd);
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			_exit(1);
	if (tmpdir_owned)
		kj__rm_rf(tmpdir_owned);
	int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) > WALLS_SIG_EXIT && WEXITSTATUS(st) < WALLS_SIG_EXIT + 64)
		sig = WEXITSTATUS(st) - WALLS_SIG_EXIT;
	if (sig) {
		signal(sig, SIG_DFL);
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* no core of the relay */
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		sigprocmask(SIG_UNBLOCK, &s, NULL);
		raise(sig);
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

/* Init of a PID namespace ignores signals it has no handler for when they
 * come from inside; these would kill an ordinary worker, so they end this
 * one too, as an exit status the relay turns back into the signal. */
static void die_of(int sig)
{
	_exit(WALLS_SIG_EXIT + sig);
}

static void pid1_signals(void)
{
	static const int sigs[] = { SIGABRT, SIGXCPU, SIGXFSZ, SIGTERM, SIGINT, SIGHUP, SIGQUIT,
				    SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE };
	for (size_t i = 0; i < KJ_ARRAY_SIZE(sigs); i++)
		if (sigs[i] != SIGPIPE)
			signal(sigs[i], die_of);
}

/* The worker user's uid and gid: KJIT_WORKER_USER, else kjit-worker. */
static int worker_ids(uid_t *uid, gid_t *gid, char *what, size_t wl)
{
	const char *name = getenv("KJIT_WORKER_USER");
	struct passwd *pw;

	if (name == NULL || !*name)
		name = KJ_WORKER_USER_DEFAULT;
	errno = 0;
	if ((pw = getpwnam(name)) == NULL) {
		snprintf(what, wl, "no user '%.64s' for the workers of a root kjitd (scripts/deps.sh or the "
			 "systemd sysusers file creates it; --worker-user names another)", name);
		return KJIT_EINVAL;
	}
	if (pw->pw_uid == 0 || pw->pw_gid == 0) {
		snprintf(what, wl, "worker user '%.64s' is root; name an unprivileged one", name);
		return KJIT_EINVAL;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* In the PID-1 child: the new root, then the unprivileged identity. */
static int child_setup(struct kj__walls *w, const char *tmpdir, int root, uid_t uid, gid_t gid, char *note,
		       size_t notelen)
{
	char what[160] = "", newroot[PATH_MAX];
	int r, no_proc = 0;

	pid1_signals();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return snprintf(note, notelen, "prctl: %s", strerror(errno)), KJIT_EINTERNAL;
	snprintf(newroot, sizeof newroot, "%s/.root", tmpdir);
	if (mkdir(newroot, 0700) < 0 && errno != EEXIST)
		return snprintf(note, notelen, "mkdir %.200s: %s", newroot, strerror(errno)), KJIT_EIO;
	if ((r = build_root(w, newroot, root ? uid : getuid(), root ? gid : getgid(), &no_proc, what,
			    sizeof what)) < 0) {
		snprintf(note, notelen, "worker root: %s: %s", what, strerror(-r));
		return KJIT_EINTERNAL;
	}
	if (root) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0 ||
		    getuid() == 0 || geteuid() == 0) {
			snprintf(note, notelen, "dropping to uid %u: %s", (unsigned)uid, strerror(errno));
			return KJIT_EINTERNAL;
		}
	} else if ((r = drop_caps()) < 0) {
		snprintf(note, notelen, "dropping capabilities: %s", strerror(-r));
		return KJIT_EINTERNAL;
	}
	if (setenv("TMPDIR", "/tmp", 1) < 0 || chdir("/tmp") < 0)
		return snprintf(note, notelen, "TMPDIR: %s", strerror(errno)), KJIT_EIO;
	w->pid1 = 1;
	snprintf(note, notelen, "namespaces %smount pid net ipc uts (made %s), uid %u, %zu read-only trees%s%s",
		 root ? "" : "user ", root ? "as root" : "in a user namespace", (unsigned)getuid(), w->n,
		 no_proc ? ", no /proc: " : "", no_proc ? strerror(no_proc) : "");
	return 0;
}

int kj__walls_enter(const char *family, int fd, char *tmpdir, size_t tmplen, int owned, struct kj__walls *w,
		    char *note, size_t notelen)
{
	int root = geteuid() == 0, r;
	uid_t uid = 0;
	gid_t gid = 0;
	char what[256] = "";

	memset(w, 0, sizeof *w);
	if ((r = kj__walls_trees(family, w)) < 0) {
		snprintf(note, notelen, "too many trees to bind (at most %d)", KJ_WALL_TREES_MAX);
		return r;
	}
	if (root && (r = worker_ids(&uid, &gid, note, notelen)) < 0)
		return r;
	/* The new root's folders are made here as root and entered after the
	 * drop to the worker user: kjitd's umask (027 under a hardened unit)
	 * would leave them 0750 root and the job unable to reach its own tree.
	 * Everything this process makes is inside its private root and tmpfs. */
	if (root)
		umask(022);
	/* KJIT_WORKER_NO_NAMESPACES=1 (tests) makes an unprivileged worker take
	 * the path of a kernel without user namespaces; a root one ignores it. */
	const char *no_ns = getenv("KJIT_WORKER_NO_NAMESPACES");
	int skip_ns = !root && no_ns && strcmp(no_ns, "1") == 0;
	if ((skip_ns ? (errno = ENOSYS, -1) : root ? unshare(NS_FLAGS) : enter_userns()) < 0) {
		if (root) {
			snprintf(note, notelen, "cannot create the worker's namespaces as root (%s; a container without "
				 "CAP_SYS_ADMIN?): a root kjitd never compiles unwalled; run kjitd as an ordinary user "
				 "there (its workers fall back to Landlock)", strerror(errno));
			return KJIT_EINTERNAL;
		}
		w->level = KJ_WALLS_LANDLOCK;
		if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
			snprintf(note, notelen, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
			return KJIT_EINTERNAL;
		}
		snprintf(note, notelen, "no user namespaces here (%s): Landlock walls only", strerror(errno));
		return 0;
	}
	w->level = root ? KJ_WALLS_NS_ROOT : KJ_WALLS_NS_USER;
	pid_t child = fork();
	if (child < 0) {
		snprintf(note, notelen, "fork: %s", strerror(errno));
		return KJIT_EINTERNAL;
	}
	if (child > 0)
		relay(child, fd, owned ? tmpdir : NULL);
	if ((r = child_setup(w, tmpdir, root, uid, gid, what, sizeof what)) < 0) {
		snprintf(note, notelen, "%s", what);
		return r;
	}
	snprintf(note, notelen, "%s", what);
	snprintf(tmpdir, tmplen, "/tmp");
	return 0;
}

/* Kills and reaps every process but this one: a PID-1 worker signals its
 * whole namespace; a subreaper finds its descendants in /proc (orphans of
 * the job were reparented to it) until none is left. */
int kj__walls_reap(const struct kj__walls *w)
{
	int st, left = 0;

	/* Every process of the namespace descends from its init, and a
	 * subreaper inherits its descendants' orphans: no child at all (ECHILD)
	 * means nothing is left, without walking every task. */
	if (waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD)
		return 0;
	if (w->pid1) {
		if (kill(-1, SIGKILL) < 0 && errno != ESRCH)
			return -errno;
		while (waitpid(-1, &st, 0) > 0 || errno == EINTR)
			;
		return 0;
	}
	for (int round = 0; round < KJ_REAP_ROUNDS_MAX; round++) {
		left = 0;
		DIR *d = opendir("/proc");
		struct dirent *e;
		if (d == NULL)
			return -errno;
		while ((e = readdir(d)) != NULL) {
			char path[64], buf[512];
			int pid = atoi(e->d_name), ppid = 0;
			if (pid <= 0 || pid == getpid())
				continue;
			snprintf(path, sizeof path, "/proc/%d/stat", pid);
			FILE *f = fopen(path, "re");
			if (f == NULL)
				continue;
			const char *rp = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
			fclose(f);
			if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == getpid()) {
				kill(pid, SIGKILL);
				left++;
			}
		}
		closedir(d);
		while (waitpid(-1, &st, 0) > 0 || (errno == EINTR))
			;
		if (left == 0)
			return 0;
	}
	return KJIT_EWORKER; /* descendants keep appearing: the caller ends the worker */
}
