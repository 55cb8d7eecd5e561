/* seccomp.c: the system-call filter of a compile worker, installed once
 * its compiler has loaded and its other walls stand (compilers/worker.c).
 *
 * A hand-written classic BPF program: on the architecture we were built
 * for, the calls listed below fail with EPERM (not a kill: compilers and
 * their libraries probe, and a refused call must stay an error they can
 * report); clone3 fails with ENOSYS so the C library falls back to clone,
 * whose flags can be checked, and clone asking for a new namespace fails
 * with EPERM.  Everything else is allowed.  A foreign architecture's
 * calls (x32 on x86-64 included) are refused whole.  Invariant: once
 * installed the filter cannot be removed, and every process the worker
 * starts inherits it.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "compint.h"
#include "kj_types.h"

#if defined(__x86_64__)
#define KJ_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KJ_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef KJ_AUDIT_ARCH
/* Refused with EPERM: talking to anything (sockets), looking into or
 * steering other processes, the kernel's own machinery, and changing the
 * walls (mounts, namespaces). */
static const long denied[] = {
	SYS_socket, SYS_socketpair, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,
	SYS_bpf, SYS_perf_event_open, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_mount, SYS_umount2,
	SYS_pivot_root, SYS_unshare, SYS_setns, SYS_chroot, SYS_kexec_load, SYS_kexec_file_load,
	SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_reboot, SYS_swapon, SYS_swapoff,
	SYS_acct, SYS_userfaultfd, SYS_open_by_handle_at, SYS_name_to_handle_at, SYS_io_uring_setup,
	SYS_io_uring_enter, SYS_io_uring_register, SYS_fsopen, SYS_fsmount, SYS_fsconfig, SYS_fspick,
	SYS_move_mount, SYS_open_tree, SYS_mount_setattr, SYS_kcmp, SYS_quotactl, SYS_syslog,
	SYS_vhangup, SYS_pidfd_getfd,
#ifdef SYS_iopl
	SYS_iopl, SYS_ioperm,
#endif
};
#define DENY_N (sizeof denied / sizeof denied[0])
#define NS_CLONE (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | \
		  CLONE_NEWCGROUP)
#define PROG_MAX (DENY_N * 2 + 16)
#define STMT(c, k) ((struct sock_filter)BPF_STMT((c), (k)))
#define JUMP(c, k, t, f) ((struct sock_filter)BPF_JUMP((c), (k), (t), (f)))
#endif

int kj__seccomp_apply(int allow_ptrace, char *note, size_t notelen)
{
#ifndef KJ_AUDIT_ARCH
	(void)allow_ptrace;
	snprintf(note, notelen, "no seccomp filter for this architecture");
	return 0;
#else
	struct sock_filter prog[PROG_MAX];
	size_t n = 0;
	const unsigned eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);

	prog[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	prog[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, KJ_AUDIT_ARCH, 1, 0);
	prog[n++] = STMT(BPF_RET | BPF_K, eperm);
	prog[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
	prog[n++] = JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1); /* x32 */
	prog[n++] = STMT(BPF_RET | BPF_K, eperm);
#endif
	prog[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
	prog[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
	for (size_t i = 0; i < DENY_N; i++) {
		if (allow_ptrace && denied[i] == SYS_ptrace)
			continue;
		prog[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)denied[i], 0, 1);
		prog[n++] = STMT(BPF_RET | BPF_K, eperm);
	}
	/* clone(flags, ...): flags is the first argument, low word. */
	prog[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3);
	prog[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
	prog[n++] = JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_CLONE, 0, 1);
	prog[n++] = STMT(BPF_RET | BPF_K, eperm);
	prog[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog fp = { .len = (unsigned short)n, .filter = prog };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) < 0) {
		snprintf(note, notelen, "seccomp: %s", strerror(errno));
		return KJIT_EINTERNAL;
	}
	snprintf(note, notelen, "seccomp: %zu calls refused%s", DENY_N - (allow_ptrace ? 1 : 0),
		 allow_ptrace ? " (ptrace allowed: sanitizer build)" : "");
	return 0;
#endif
}
