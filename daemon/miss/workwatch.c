/* workwatch.c: a compile worker seen from outside (issue 29), for pool.c:
 * its resident size after a job (a worker that kept more than
 * --worker-max-rss is replaced: an in-process hiprtc kept 1 GB after a 2 GB
 * job), and the CPU time of its whole process tree, so that a job that
 * makes no CPU progress (nvcc blocked reading /proc/self/fd/2) is bounded
 * by --job-idle-timeout apart from --compile-timeout.
 *
 * Both read /proc, summed over the worker and every descendant (a walled
 * worker compiles in a child of its own, compilers/walls.c): /proc/PID/
 * status's VmRSS, /proc/PID/stat's utime, stime, cutime and cstime; the
 * descendants found through
 * /proc/PID/task/TID/children (Linux 3.5, CONFIG_PROC_CHILDREN; without it
 * the worker's own and its reaped children's time only), at most
 * WATCH_PROCS_MAX processes.  A process that exits between two reads is
 * simply not counted: its time moves to its parent's cutime once reaped,
 * so the sum may step back for a moment, never stay still while something
 * runs.  No state of its own.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"

#define WATCH_PROCS_MAX 256 /* processes of one worker's tree summed */

/* VmRSS of pid, in bytes; 0 if gone. */
static uint64_t proc_rss(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb;
	uint64_t bytes = 0;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) {
			bytes = (uint64_t)kb * 1024;
			break;
		}
	fclose(f);
	return bytes;
}

/* utime + stime + cutime + cstime of pid, in clock ticks; 0 if gone. */
static uint64_t proc_cpu(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long ut, st;
	long long cut, cst;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	if (p == NULL || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut, &st,
				&cut, &cst) != 4)
		return 0;
	return ut + st + (uint64_t)(cut > 0 ? cut : 0) + (uint64_t)(cst > 0 ? cst : 0);
}

/* Adds pid's children (all its threads') to the list at *n, up to max. */
static void add_children(pid_t pid, pid_t *list, size_t *n, size_t max)
{
	char path[64], num[32];
	struct dirent *de;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && *n < max) {
		if (de->d_name[0] == '.')
			continue;
		char cpath[128];
		snprintf(cpath, sizeof cpath, "/proc/%d/task/%.20s/children", (int)pid, de->d_name);
		FILE *f = fopen(cpath, "re");
		if (f == NULL)
			continue;
		while (*n < max && fscanf(f, "%31s", num) == 1)
			list[(*n)++] = (pid_t)strtol(num, NULL, 10);
		fclose(f);
	}
	closedir(d);
}

/* The sum of what one of the above says of pid and its descendants. */
static int tree_sum(pid_t pid, uint64_t (*what)(pid_t), uint64_t *out)
{
	pid_t list[WATCH_PROCS_MAX];
	size_t n = 1;
	uint64_t sum = 0;

	list[0] = pid;
	for (size_t i = 0; i < n; i++) {
		sum += what(list[i]);
		add_children(list[i], list, &n, WATCH_PROCS_MAX);
	}
	*out = sum;
	return sum || n > 1 ? 0 : -1;
}

int kj__proc_rss(pid_t pid, uint64_t *bytes)
{
	return tree_sum(pid, proc_rss, bytes);
}

int kj__proc_tree_cpu(pid_t pid, uint64_t *ticks)
{
	return tree_sum(pid, proc_cpu, ticks);
}
