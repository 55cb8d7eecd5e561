/* detect-run.c: GPU detection for the daemon, run in a child process
 * (`kjitd --detect`) so that libcuda and the Vulkan loader never load into
 * kjitd.  The child prints one tab-separated line per finding:
 *     gpu BACKEND TARGET VERSION NAME
 *     note BACKEND TEXT
 * which the daemon reads back at start. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-int.h" /* and daemon.h */
#include "kj_types.h"
#include "util.h"

#define DETECT_OUTPUT_MAX (64u << 10)

extern char **environ;

int kj__detect_main(const char *sysfs_root)
{
	for (int b = KJIT_BACKEND_HIP; b <= KJIT_BACKEND_VULKAN; b++) {
		struct kj__gpu g[16];
		size_t n = 0;
		char note[256] = "";
		if (kj__detect(b, sysfs_root, g, KJ_ARRAY_SIZE(g), &n, note, sizeof note) < 0 && !note[0])
			snprintf(note, sizeof note, "detection failed");
		for (size_t i = 0; i < n; i++)
			printf("gpu\t%d\t%s\t%s\t%s\n", b, g[i].target, g[i].version[0] ? g[i].version : "-",
			       g[i].name[0] ? g[i].name : "-");
		if (n == 0)
			printf("note\t%d\t%s\n", b, note[0] ? note : "none found");
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

static void parse_output(struct kj__daemon *d, char *out)
{
	for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = { 0 };
		size_t n = 0;
		for (char *s2 = NULL, *t = strtok_r(line, "\t", &s2); t && n < 5; t = strtok_r(NULL, "\t", &s2))
			f[n++] = t;
		int b = n >= 3 ? atoi(f[1]) : 0;
		if (b < KJIT_BACKEND_HIP || b > KJIT_BACKEND_VULKAN)
			continue;
		if (strcmp(f[0], "note") == 0) {
			snprintf(d->top->detect_note[b], sizeof d->top->detect_note[b], "%s", f[2]);
		} else if (strcmp(f[0], "gpu") == 0 && n == 5 && d->top->n_gpus < KJ_ARRAY_SIZE(d->top->gpus) &&
			   kj__token_ok(f[2], KJ_TARGET_MAX)) {
			struct kj__gpu *g = &d->top->gpus[d->top->n_gpus++];
			g->backend = b;
			snprintf(g->target, sizeof g->target, "%s", f[2]);
			snprintf(g->version, sizeof g->version, "%s", strcmp(f[3], "-") ? f[3] : "");
			snprintf(g->name, sizeof g->name, "%s", strcmp(f[4], "-") ? f[4] : "");
		}
	}
}

int kj__detect_run(struct kj__daemon *d)
{
	posix_spawn_file_actions_t fa;
	int fds[2], st = 0;
	pid_t pid;
	char *args[5] = { d->cfg.self_exe, NULL, NULL, NULL, NULL };
	size_t na = 1;
	struct kj__buf out = { 0 };

	if (d->cfg.sysfs_root) {
		args[na++] = "--sysfs-root";
		args[na++] = d->cfg.sysfs_root;
	}
	args[na++] = "--detect";
	if (pipe(fds) < 0) {
		kj__log(d, "detection: pipe: %s", strerror(errno));
		return KJIT_EIO;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	int r = posix_spawn(&pid, d->cfg.self_exe, &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (r != 0) {
		close(fds[0]);
		kj__log(d, "detection: cannot start %s: %s", d->cfg.self_exe, strerror(r));
		return KJIT_EIO;
	}
	char buf[4096];
	ssize_t k;
	while ((k = read(fds[0], buf, sizeof buf)) != 0) {
		if (k < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (out.len + (size_t)k > DETECT_OUTPUT_MAX || kj__buf_append(&out, buf, (size_t)k) < 0)
			break;
	}
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (kj__buf_append(&out, "", 1) == 0)
		parse_output(d, (char *)out.p);
	kj__buf_free(&out);
	for (size_t i = 0; i < d->top->n_gpus; i++)
		kj__log(d, "detected %s %s (%s) %s", kjit_backend_name(d->top->gpus[i].backend), d->top->gpus[i].target,
			d->top->gpus[i].name, d->top->gpus[i].version);
	for (int b = KJIT_BACKEND_HIP; b <= KJIT_BACKEND_VULKAN; b++)
		if (d->top->detect_note[b][0])
			kj__log(d, "%s: %s", kjit_backend_name(b), d->top->detect_note[b]);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		kj__log(d, "detection child ended abnormally (status %d); results may be partial", st);
	return 0;
}

size_t kj__daemon_n_gpus(const struct kj__daemon *d)
{
	return d->top->n_gpus;
}

const struct kj__gpu *kj__daemon_gpu(const struct kj__daemon *d, size_t i)
{
	return &d->top->gpus[i];
}

const char *kj__daemon_detect_note(const struct kj__daemon *d, int backend, const char *dflt)
{
	return d->top->detect_note[backend][0] ? d->top->detect_note[backend] : dflt;
}
