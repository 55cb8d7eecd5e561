/* benchlib.c: timing, percentiles and request plumbing for the bench/
 * programs (contracts in bench.h).  Every failure here is a harness
 * failure: it prints one line and exits 1, so a benchmark never reports a
 * number it did not measure.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

double bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

unsigned long bench_num(const char *flag, const char *s)
{
	char *end;

	errno = 0;
	unsigned long v = s ? strtoul(s, &end, 10) : 0;
	if (s == NULL || errno || end == s || *end)
		bench_die("%s: expected a number, got '%s'", flag, s ? s : "");
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void bench_summarize(double *s, size_t n, struct bench_stats *out)
{
	double sum = 0;

	memset(out, 0, sizeof *out);
	if (n == 0)
		return;
	qsort(s, n, sizeof *s, cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	out->n = n;
	out->p50 = s[n / 2];
	out->p99 = s[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
	out->mean = sum / (double)n;
	out->min = s[0];
	out->max = s[n - 1];
}

void bench_req_init(struct bench_req *b)
{
	memset(b, 0, sizeof *b);
	b->req.backend = KJIT_BACKEND_HIP;
	b->req.no_env = 1;
	b->req.options = b->opts;
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
		bench_die("cannot read %s: %s", path, strerror(errno));
	if ((p = malloc((size_t)n + 1)) == NULL || fread(p, 1, (size_t)n, f) != (size_t)n)
		bench_die("cannot read %s", path);
	fclose(f);
	*len = (size_t)n;
	return p;
}

int bench_req_arg(struct bench_req *b, int argc, char **argv, int *i)
{
	const char *flag = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (strcmp(flag, "--source") && strcmp(flag, "--kernel") && strcmp(flag, "--backend") &&
	    strcmp(flag, "--target") && strcmp(flag, "--opt"))
		return 0;
	if (val == NULL) {
		fprintf(stderr, "%s needs a value\n", flag);
		return -1;
	}
	(*i)++;
	if (strcmp(flag, "--source") == 0) {
		free(b->source);
		b->source = read_file(val, &b->req.source_size);
		b->req.source = b->source;
		const char *base = strrchr(val, '/');
		b->req.source_name = base ? base + 1 : val;
	} else if (strcmp(flag, "--kernel") == 0) {
		b->req.kernel = val;
	} else if (strcmp(flag, "--backend") == 0) {
		if ((b->req.backend = kjit_backend_from_name(val)) == KJIT_BACKEND_NONE) {
			fprintf(stderr, "unknown backend %s\n", val);
			return -1;
		}
	} else if (strcmp(flag, "--target") == 0) {
		b->req.target = val;
	} else {
		if (b->req.n_options >= BENCH_MAX_OPTS) {
			fprintf(stderr, "too many --opt\n");
			return -1;
		}
		b->opts[b->req.n_options++] = val;
	}
	return 1;
}

int bench_req_salt(struct bench_req *b, unsigned long n)
{
	char buf[64];

	snprintf(buf, sizeof buf, "-DSALT=%lu", n);
	/* the last option is the previous salt (owned_opt) only if it was set:
	 * decided before owned_opt is freed, never read after */
	int has = b->owned_opt != NULL && b->req.n_options > 0 && b->opts[b->req.n_options - 1] == b->owned_opt;
	char *o = strdup(buf);
	if (o == NULL)
		return -1;
	if (!has && b->req.n_options >= BENCH_MAX_OPTS) {
		free(o);
		return -1;
	}
	if (!has)
		b->req.n_options++;
	free(b->owned_opt);
	b->owned_opt = o;
	b->opts[b->req.n_options - 1] = o;
	return 0;
}

void bench_req_free(struct bench_req *b)
{
	free(b->owned_opt);
	free(b->source);
	memset(b, 0, sizeof *b);
}

kjit_client *bench_open(void)
{
	kjit_open_options o = { .no_autostart = 1 };
	kjit_client *c = NULL;
	int r = kjit_open(&c, &o);

	if (r < 0)
		bench_die("kjit_open: %s", kjit_strerror(r));
	return c;
}

int bench_get(kjit_client *c, const struct bench_req *b, size_t *size)
{
	kjit_result res;
	int r;

	memset(&res, 0, sizeof res);
	r = kjit_get(c, &b->req, &res);
	if (r < 0)
		bench_die("kjit_get: %s: %s", kjit_strerror(r), res.error ? res.error : kjit_last_error(c));
	if (size)
		*size = res.size;
	r = res.status;
	kjit_result_free(&res);
	return r;
}

long long bench_stat(kjit_client *c, const char *name)
{
	char *json = NULL, pat[64];
	long long v = -1;
	int r = kjit_admin(c, "stats", NULL, NULL, &json);

	if (r < 0)
		bench_die("kjit_admin stats: %s", kjit_strerror(r));
	snprintf(pat, sizeof pat, "\"%s\":", name);
	const char *p = strstr(json, pat);
	if (p)
		v = strtoll(p + strlen(pat), NULL, 10);
	free(json);
	return v;
}

void *bench_shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bench_die("mmap: %s", strerror(errno));
	return p;
}

void bench_fleet_fork(struct bench_fleet *f, int p, int (*body)(int i, void *arg, struct bench_fleet *f),
		      void *arg)
{
	memset(f, 0, sizeof *f);
	f->p = p;
	if ((f->pids = calloc((size_t)p, sizeof *f->pids)) == NULL || pipe(f->go) < 0 || pipe(f->ready) < 0)
		bench_die("fleet: %s", strerror(errno));
	fflush(NULL);
	for (int i = 0; i < p; i++) {
		pid_t pid = fork();
		if (pid < 0)
			bench_die("fork: %s", strerror(errno));
		if (pid == 0) {
			close(f->go[1]);
			close(f->ready[0]);
			_exit(body(i, arg, f));
		}
		f->pids[i] = pid;
	}
	close(f->go[0]);
	close(f->ready[1]);
}

void bench_fleet_wait(struct bench_fleet *f)
{
	char ch = 1;

	if (write(f->ready[1], &ch, 1) != 1)
		_exit(1);
	close(f->ready[1]);
	while (read(f->go[0], &ch, 1) < 0 && errno == EINTR)
		;
}

void bench_fleet_ready(struct bench_fleet *f)
{
	char buf[256];
	int got = 0;

	while (got < f->p) {
		ssize_t k = read(f->ready[0], buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			bench_die("fleet: %d of %d clients failed before the start", f->p - got, f->p);
		got += (int)k;
	}
	close(f->ready[0]);
}

void bench_fleet_go(struct bench_fleet *f)
{
	close(f->go[1]);
}

int bench_fleet_reap(struct bench_fleet *f)
{
	int failed = 0, st;

	for (int i = 0; i < f->p; i++)
		if (waitpid(f->pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	free(f->pids);
	f->pids = NULL;
	return failed;
}
