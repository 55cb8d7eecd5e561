/* cmd-warm.c: `kjit warm`, which compiles the bundled kernels (or those
 * named) for every target given or resolved, all in one kjit_get_many
 * (one round trip; the daemon compiles the misses in parallel on its
 * workers, so -j is accepted and no longer needed); with --replay it asks
 * kjitd to replay the recipes it recorded instead; with --remote-only it
 * only fetches (local cache, then the fleet tier kjitd was started with:
 * docs/remote.md), never compiling, and reports what neither holds.  A
 * progress bar on a terminal (or a line per result as it arrives), one
 * summary line (or JSON) at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli-int.h"
#include "client_int.h"
#include "kjit.h"
#include "kj_limits.h"
#include "util.h"

/* Width of the progress bar of `kjit warm` on a terminal. */
#define BAR_WIDTH 24

/* ---- kjit warm ---- */

enum { J_PENDING, J_COMPILED, J_CACHED, J_FAILED, J_SKIPPED, J_FETCHED, J_MISSING };

struct warm_group {
	int backend;
	const char *target; /* NULL: resolved (env, then daemon) */
	int implicit;       /* backend not asked for: no target or compiler means skip */
	char *skip_reason;  /* set when skipped */
};

struct warm_job {
	struct warm_group *g;
	char *kernel;
	int state;
	char *error;
};

struct warm {
	pthread_mutex_t mu;
	struct warm_job *jobs;
	size_t n, next, done, n_compiled, n_cached, n_failed, n_skipped, n_fetched, n_missing;
	struct warm_group groups[3 * MAX_REPEAT];
	size_t n_groups;
	int tty, json;
	int remote_only;    /* fetch, never compile (KJ_GET_NO_COMPILE) */
	uint64_t t0;
	char *open_err;
};

static const char *target_label(const struct warm_group *g)
{
	return g->target ? g->target : "(resolved)";
}

/* Redraws the progress bar (terminal) or prints the job's line.  Called
 * with w->mu held. */
static void warm_progress(struct warm *w, const struct warm_job *j)
{
	if (w->tty) {
		size_t fill = w->n ? w->done * BAR_WIDTH / w->n : BAR_WIDTH;
		char bar[BAR_WIDTH + 1];
		double el = (double)(kj__now_us() - w->t0) / 1e6;
		double eta = w->done ? el / (double)w->done * (double)(w->n - w->done) : 0;
		for (size_t i = 0; i < BAR_WIDTH; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[BAR_WIDTH] = '\0';
		fprintf(stderr, "\r[%s] %zu/%zu %-16.16s %s %zu failed ETA %d:%02d\033[K", bar, w->done,
			w->n, j->kernel, kjit_backend_name(j->g->backend), w->n_failed,
			(int)eta / 60, (int)eta % 60);
		fflush(stderr);
		return;
	}
	if (w->json)
		return;
	static const char *const words[] = { "pending", "compiled", "cached", "FAILED", "skipped", "fetched", "missing" };
	printf("[%zu/%zu] %s %s %s %s%s%s\n", w->done, w->n, words[j->state], j->kernel,
	       kjit_backend_name(j->g->backend), target_label(j->g), j->error ? ": " : "",
	       j->error ? j->error : "");
	fflush(stdout);
}

/* Takes the next job to run, skipping those of skipped groups.  NULL when
 * none is left.  With w->mu held. */
static struct warm_job *warm_take(struct warm *w)
{
	while (w->next < w->n) {
		struct warm_job *j = &w->jobs[w->next++];
		if (j->g->skip_reason == NULL)
			return j;
		j->state = J_SKIPPED;
		w->done++;
		w->n_skipped++;
	}
	return NULL;
}

static void warm_record(struct warm *w, struct warm_job *j, int r, const kjit_result *res)
{
	if (r == 0) {
		j->state = res->status == KJIT_STATUS_HIT ? J_CACHED : res->status == KJIT_STATUS_REMOTE ? J_FETCHED : J_COMPILED;
		if (j->state == J_CACHED)
			w->n_cached++;
		else if (j->state == J_FETCHED)
			w->n_fetched++;
		else
			w->n_compiled++;
	} else if (w->remote_only && r == KJIT_ENOENT) {
		j->state = J_MISSING;
		w->n_missing++;
		j->error = kj__strdup(res->error ? res->error : kjit_strerror(r));
	} else if (j->g->implicit && (r == KJIT_ENOTARGET || r == KJIT_EBACKEND)) {
		j->state = J_SKIPPED;
		w->n_skipped++;
		if (j->g->skip_reason == NULL)
			j->g->skip_reason = kj__strdup(res->error ? res->error : kjit_strerror(r));
	} else {
		j->state = J_FAILED;
		w->n_failed++;
		j->error = kj__strdup(res->error ? res->error : kjit_strerror(r));
	}
	w->done++;
	warm_progress(w, j);
}

static int backend_of_target(const char *t)
{
	if (strncmp(t, "gfx", 3) == 0)
		return KJIT_BACKEND_HIP;
	if (strncmp(t, "sm_", 3) == 0 || strncmp(t, "compute_", 8) == 0)
		return KJIT_BACKEND_CUDA;
	if (strncmp(t, "vulkan", 6) == 0)
		return KJIT_BACKEND_VULKAN;
	return KJIT_BACKEND_NONE;
}

struct warm_args {
	int backends[3];
	size_t n_backends;
	const char *targets[MAX_REPEAT], *kernels[MAX_REPEAT];
	size_t n_targets, n_kernels;
	long jobs;
	int replay, json, remote_only;
};

static int warm_parse(const struct cmd *cmd, int argc, char **argv, struct warm_args *a)
{
	static const struct option lo[] = {
		{ "backend", required_argument, NULL, 'b' }, { "target", required_argument, NULL, 't' },
		{ "kernel", required_argument, NULL, 'k' }, { "jobs", required_argument, NULL, 'j' },
		{ "replay", no_argument, NULL, 'R' }, { "json", no_argument, NULL, 'J' },
		{ "remote-only", no_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 }
	};
	int ch, b, r = 0;
	char *end;

	while (r == 0 && (ch = getopt_long(argc, argv, ":j:", lo, NULL)) != -1) {
		switch (ch) {
		case 'b':
			r = kj__cli_parse_backend(cmd, optarg, &b);
			for (size_t i = 0; r == 0 && i < a->n_backends; i++)
				if (a->backends[i] == b)
					b = KJIT_BACKEND_NONE;
			if (r == 0 && b != KJIT_BACKEND_NONE)
				a->backends[a->n_backends++] = b;
			break;
		case 't': r = kj__cli_push(cmd, a->targets, &a->n_targets, optarg, "--target"); break;
		case 'k': r = kj__cli_push(cmd, a->kernels, &a->n_kernels, optarg, "--kernel"); break;
		case 'j':
			errno = 0;
			a->jobs = strtol(optarg, &end, 10); /* kept for old scripts: kjitd's --jobs decides */
			if (errno || *end || a->jobs < 1 || a->jobs > MAX_REPEAT)
				return kj__cli_usage_error(cmd, "bad -j (a number from 1 to 512):", optarg);
			break;
		case 'R': a->replay = 1; break;
		case 'J': a->json = 1; break;
		case 'O': a->remote_only = 1; break;
		default: return kj__cli_option_error(cmd, ch, argv);
		}
	}
	if (r != 0)
		return r;
	if (optind < argc)
		return kj__cli_usage_error(cmd, "unexpected argument", argv[optind]);
	return 0;
}

/* Splits the requested backends and targets into groups.  Returns 0 or the
 * usage exit code. */
static int warm_groups(const struct cmd *cmd, const struct warm_args *a, struct warm *w)
{
	int explicit_b = a->n_backends > 0;
	int backends[3];
	size_t nb = 0;

	for (size_t i = 0; i < a->n_backends; i++)
		backends[nb++] = a->backends[i];
	for (size_t i = 0; !explicit_b && i < a->n_targets; i++) {
		int b = backend_of_target(a->targets[i]);
		if (b == KJIT_BACKEND_NONE)
			return kj__cli_usage_error(cmd, "cannot tell the backend of --target", a->targets[i]);
		size_t k = 0;
		while (k < nb && backends[k] != b)
			k++;
		if (k == nb)
			backends[nb++] = b;
	}
	for (size_t i = 0; nb == 0 && i < KJ_ARRAY_SIZE(kj__cli_backends); i++)
		backends[i] = kj__cli_backends[i];
	if (nb == 0)
		nb = KJ_ARRAY_SIZE(kj__cli_backends);
	for (size_t i = 0; i < a->n_targets; i++) {
		int b = backend_of_target(a->targets[i]);
		if (b == KJIT_BACKEND_NONE && nb > 1)
			return kj__cli_usage_error(cmd, "cannot tell the backend of --target", a->targets[i]);
		size_t k = 0;
		while (k < nb && b != KJIT_BACKEND_NONE && backends[k] != b)
			k++;
		if (k == nb)
			return kj__cli_usage_error(cmd, "no --backend given for --target", a->targets[i]);
	}
	for (size_t k = 0; k < nb; k++) {
		size_t before = w->n_groups;
		for (size_t i = 0; i < a->n_targets; i++) {
			int b = backend_of_target(a->targets[i]);
			if (b == backends[k] || (b == KJIT_BACKEND_NONE && nb == 1))
				w->groups[w->n_groups++] = (struct warm_group){ backends[k], a->targets[i], 0, NULL };
		}
		if (w->n_groups == before && a->n_targets == 0)
			w->groups[w->n_groups++] = (struct warm_group){ backends[k], NULL, !explicit_b, NULL };
	}
	return 0;
}

/* The bundled kernels of backend: the daemon's manifest ("NAME BACKEND"
 * lines) or the --kernel names.  Appends them to *names. */
static int warm_kernels(kjit_client *c, const struct warm_args *a, int backend, char ***names,
			size_t *n)
{
	char *text = NULL;

	if (a->n_kernels) {
		*names = calloc(a->n_kernels, sizeof **names);
		for (size_t i = 0; *names && i < a->n_kernels; i++)
			(*names)[(*n)++] = kj__strdup(a->kernels[i]);
		return *names ? 0 : KJIT_ENOMEM;
	}
	int r = kjit_admin(c, "kernels", kjit_backend_name(backend), &text, NULL);
	if (r < 0)
		return r;
	size_t cap = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *name = strtok(line, " \t"), *b = strtok(NULL, " \t");
		if (name == NULL || !kj__name_ok(name) || (b && kjit_backend_from_name(b) != backend))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			char **p = realloc(*names, cap * sizeof *p);
			if (p == NULL) {
				r = KJIT_ENOMEM;
				break;
			}
			*names = p;
		}
		(*names)[(*n)++] = kj__strdup(name);
	}
	free(text);
	return r;
}

static int warm_build_jobs(kjit_client *c, const struct warm_args *a, struct warm *w)
{
	int backends_done[4] = { 0 };
	char **names[4] = { NULL };
	size_t counts[4] = { 0 }, total = 0;
	int r = 0;

	for (size_t g = 0; r == 0 && g < w->n_groups; g++) {
		int b = w->groups[g].backend;
		if (!backends_done[b]) {
			backends_done[b] = 1;
			r = warm_kernels(c, a, b, &names[b], &counts[b]);
		}
		total += counts[b];
	}
	if (r == 0 && total && (w->jobs = calloc(total, sizeof *w->jobs)) == NULL)
		r = KJIT_ENOMEM;
	for (size_t g = 0; r == 0 && g < w->n_groups; g++) {
		int b = w->groups[g].backend;
		for (size_t i = 0; i < counts[b]; i++) {
			w->jobs[w->n].g = &w->groups[g];
			w->jobs[w->n++].kernel = kj__strdup(names[b][i] ? names[b][i] : "");
		}
	}
	for (int b = 0; b < 4; b++) {
		for (size_t i = 0; i < counts[b]; i++)
			free(names[b][i]);
		free(names[b]);
	}
	return r;
}

static void warm_summary_json(const struct warm *w)
{
	struct kj__buf b = { 0 };
	int r = kj__buf_printf(&b, "{\"compiled\":%zu,\"cached\":%zu,\"fetched\":%zu,\"missing\":%zu,"
			       "\"failed\":%zu,\"skipped\":%zu,\"seconds\":%.3f,\"failures\":[", w->n_compiled,
			       w->n_cached, w->n_fetched, w->n_missing, w->n_failed, w->n_skipped,
			       (double)(kj__now_us() - w->t0) / 1e6);
	int first = 1;
	for (size_t i = 0; r == 0 && i < w->n; i++) {
		const struct warm_job *j = &w->jobs[i];
		if (j->state != J_FAILED)
			continue;
		r = kj__buf_printf(&b, "%s{\"kernel\":", first ? "" : ",");
		first = 0;
		if (r == 0)
			r = kj__json_str(&b, j->kernel);
		if (r == 0)
			r = kj__buf_printf(&b, ",\"backend\":\"%s\",\"target\":", kjit_backend_name(j->g->backend));
		if (r == 0)
			r = kj__json_str(&b, j->g->target ? j->g->target : "");
		if (r == 0)
			r = kj__buf_printf(&b, ",\"error\":");
		if (r == 0)
			r = kj__json_str(&b, j->error ? j->error : "");
		if (r == 0)
			r = kj__buf_printf(&b, "}");
	}
	if (r == 0)
		r = kj__buf_printf(&b, "],\"skipped_backends\":[");
	first = 1;
	for (size_t g = 0; r == 0 && g < w->n_groups; g++) {
		if (w->groups[g].skip_reason == NULL)
			continue;
		r = kj__buf_printf(&b, "%s{\"backend\":\"%s\",\"reason\":", first ? "" : ",",
				   kjit_backend_name(w->groups[g].backend));
		first = 0;
		if (r == 0)
			r = kj__json_str(&b, w->groups[g].skip_reason);
		if (r == 0)
			r = kj__buf_printf(&b, "}");
	}
	if (r == 0)
		r = kj__buf_printf(&b, "]}\n");
	if (r == 0)
		fwrite(b.p, 1, b.len, stdout);
	kj__buf_free(&b);
}

static void warm_summary(const struct warm *w)
{
	if (w->tty)
		fprintf(stderr, "\r\033[K");
	if (w->json) {
		warm_summary_json(w);
		return;
	}
	printf("warm: %zu compiled, %zu already cached, %zu failed", w->n_compiled, w->n_cached, w->n_failed);
	if (w->n_fetched || w->remote_only)
		printf(", %zu fetched from the remote", w->n_fetched);
	if (w->remote_only)
		printf(", %zu missing (not compiled: --remote-only)", w->n_missing);
	if (w->n_skipped)
		printf(", %zu skipped", w->n_skipped);
	printf(" (%.1f s)\n", (double)(kj__now_us() - w->t0) / 1e6);
	for (size_t g = 0; g < w->n_groups; g++)
		if (w->groups[g].skip_reason)
			printf("  skipped %s: %s\n", kjit_backend_name(w->groups[g].backend),
			       w->groups[g].skip_reason);
	for (size_t i = 0; i < w->n; i++)
		if (w->jobs[i].state == J_MISSING)
			printf("  missing %s %s %s\n", w->jobs[i].kernel, kjit_backend_name(w->jobs[i].g->backend),
			       target_label(w->jobs[i].g));
	for (size_t i = 0; i < w->n; i++)
		if (w->jobs[i].state == J_FAILED)
			printf("  failed %s %s %s: %s\n", w->jobs[i].kernel,
			       kjit_backend_name(w->jobs[i].g->backend), target_label(w->jobs[i].g),
			       w->jobs[i].error ? w->jobs[i].error : "");
}

struct warm_batch {
	struct warm *w;
	struct warm_job **jobs;
};

static void warm_on_ready(void *arg, size_t i, int code, const kjit_result *res)
{
	struct warm_batch *b = arg;

	warm_record(b->w, b->jobs[i], code, res);
}

/* Every job in one kjit_get_many: one round trip, the daemon compiles the
 * misses in parallel (its --jobs workers per compiler) and each line or
 * progress step appears as its result arrives. */
static int warm_run(struct warm *w, kjit_client *c)
{
	struct warm_batch b = { .w = w, .jobs = calloc(w->n, sizeof *b.jobs) };
	kjit_request *reqs = calloc(w->n, sizeof *reqs);
	kjit_result *res = calloc(w->n, sizeof *res);
	struct warm_job *j;
	size_t m = 0;

	w->t0 = kj__now_us();
	if (b.jobs && reqs && res) {
		while ((j = warm_take(w)) != NULL) {
			b.jobs[m] = j;
			reqs[m++] = (kjit_request){ .backend = j->g->backend, .target = j->g->target, .kernel = j->kernel };
		}
		kj__get_many_flags(c, reqs, m, w->remote_only ? KJ_GET_NO_COMPILE : 0, res, NULL, warm_on_ready, &b);
		for (size_t i = 0; i < m; i++)
			kjit_result_free(&res[i]);
	}
	for (size_t i = 0; i < w->n; i++) {
		j = &w->jobs[i];
		if (j->state != J_PENDING)
			continue;
		j->state = J_FAILED;
		j->error = kj__strdup("out of memory");
		w->n_failed++;
		w->done++;
	}
	free(b.jobs);
	free(reqs);
	free(res);
	warm_summary(w);
	return w->n_failed ? EX_FAIL : EX_OK;
}

int kj__cmd_warm(const struct cmd *cmd, int argc, char **argv)
{
	struct warm_args a;
	struct warm *w = calloc(1, sizeof *w);
	kjit_client *c = NULL;
	int ex;

	memset(&a, 0, sizeof a);
	if (w == NULL)
		return kj__cli_fail(EX_FAIL, "out of memory");
	pthread_mutex_init(&w->mu, NULL);
	ex = warm_parse(cmd, argc, argv, &a);
	if (ex == 0 && a.replay && a.remote_only)
		ex = kj__cli_usage_error(cmd, "--replay compiles; it does not go with", "--remote-only");
	if (ex == 0 && a.replay) {
		ex = kj__cli_admin_run("replay", NULL, a.json, 0);
		goto out;
	}
	if (ex == 0)
		ex = warm_groups(cmd, &a, w);
	if (ex == 0)
		ex = kj__cli_open(&c, 0);
	if (ex != 0)
		goto out;
	int r = warm_build_jobs(c, &a, w);
	if (r < 0) {
		ex = kj__cli_report(r, kjit_last_error(c));
		goto out;
	}
	if (w->n == 0) {
		printf(a.json ? "{\"compiled\":0,\"cached\":0,\"failed\":0}\n"
			      : "warm: nothing to do (no bundled kernels listed)\n");
		goto out;
	}
	w->json = a.json;
	w->remote_only = a.remote_only;
	w->tty = isatty(STDERR_FILENO);
	ex = warm_run(w, c);
out:
	kjit_close(c);
	for (size_t i = 0; i < w->n; i++) {
		free(w->jobs[i].kernel);
		free(w->jobs[i].error);
	}
	for (size_t g = 0; g < w->n_groups; g++)
		free(w->groups[g].skip_reason);
	free(w->jobs);
	free(w->open_err);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return ex;
}
