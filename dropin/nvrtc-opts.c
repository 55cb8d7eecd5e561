/* nvrtc-opts.c: which NVRTC compiles kjit serves as NVRTC would, and what
 * a served program keeps for later.
 *
 * Served options are the ones the nvrtc compile worker passes on as given
 * and that change nothing but the object: macros, the C++ standard, math
 * modes, register caps, line info, warnings, the default execution space.
 * The architecture becomes the request's target; include folders (-IDIR,
 * -I DIR, --include-path=DIR, --include-path DIR) leave the options for
 * inc.c, which reads the headers they give where that is faithful.  Everything else (-dlto and
 * --optix-ir, other outputs; PCH options; --time and other side effects;
 * -G; anything unknown or misspelled) is the real library's, so its answer
 * and its error codes are NVRTC's own.  The list errs on the side of
 * forwarding.  Headers named with '/' (jitify) are served when every
 * include resolves in kjit's worker as in NVRTC.
 */
#include <stdlib.h>
#include <string.h>

#include "dropstat.h"
#include "nvrtc-int.h"
#include "util.h"

static const char *const exact[] = {
	"--use_fast_math", "-use_fast_math", "-lineinfo", "--generate-line-info", "--extra-device-vectorization",
	"-w", "--disable-warnings", "-default-device", "--device-as-default-execution-space",
};
static const char *const prefixed[] = {
	"-D", "-U", "-std=", "--std=", "--ftz=", "--prec-div=", "--prec-sqrt=", "--fmad=", "--maxrregcount=",
	"-maxrregcount=",
};

/* "sm_90", "sm_90a", "compute_100f": what kjit's nvrtc family takes. */
static int arch_ok(const char *t)
{
	const char *d = strncmp(t, "sm_", 3) == 0 ? t + 3 : strncmp(t, "compute_", 8) == 0 ? t + 8 : NULL;
	size_t n = 0;

	if (d == NULL)
		return 0;
	while (d[n] >= '0' && d[n] <= '9')
		n++;
	return n >= 2 && n <= 4 && (d[n] == '\0' || ((d[n] == 'a' || d[n] == 'f') && d[n + 1] == '\0'));
}

static int served(const char *o)
{
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
		if (strcmp(o, exact[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof prefixed / sizeof *prefixed; i++) {
		size_t l = strlen(prefixed[i]);
		if (strncmp(o, prefixed[i], l) == 0 && o[l] != '\0' && o[l] != ' ')
			return 1;
	}
	return 0;
}

int kj__nv_opts_split(int n, const char *const *opts, const char **target, const char **kept, int *n_kept,
		      const char **bad)
{
	*target = NULL;
	*n_kept = 0;
	if (n > KJ_NV_OPTS_MAX) {
		*bad = " (too many options)";
		return KJ_DS_OPTION;
	}
	for (int i = 0; i < n; i++) {
		const char *o = opts[i], *arch = NULL;
		if (o == NULL) {
			*bad = " (a NULL option)";
			return KJ_DS_OPTION;
		}
		if (strncmp(o, "--gpu-architecture=", 19) == 0)
			arch = o + 19;
		else if (strncmp(o, "-arch=", 6) == 0)
			arch = o + 6;
		if (arch && (*target != NULL || !arch_ok(arch))) {
			*bad = o;
			return KJ_DS_OPTION;
		}
		if (arch)
			*target = arch;
		else if (kj__dp_inc_dir(0, n, opts, &i) != NULL)
			continue; /* kj__dp_read_includes reads it */
		else if (served(o))
			kept[(*n_kept)++] = o;
		else {
			*bad = o;
			return KJ_DS_OPTION;
		}
	}
	if (*target == NULL) {
		*bad = "";
		return KJ_DS_NO_ARCH;
	}
	return KJ_DS_SERVED;
}

/* 1 if some header of p is named with name as a proper tail of its path
 * ("c.h" or "b/c.h" for "a/b/c.h") and none is named name itself: kjit's
 * nvrtc worker offers such a header under the tail too, where NVRTC finds
 * nothing. */
static int tail_alias(const struct kj__dp_prog *p, const char *name, size_t l)
{
	int tail = 0;

	for (int i = 0; i < p->n_headers; i++) {
		const char *h = p->hdr_names[i];
		size_t n = strlen(h);
		if (n == l && memcmp(h, name, l) == 0)
			return 0;
		tail |= n > l && h[n - l - 1] == '/' && memcmp(h + n - l, name, l) == 0;
	}
	return tail;
}

/* 1 when text includes nothing kjit's worker would find where NVRTC
 * does not: an include spelled with "..", a tail of a header's path, or a
 * computed #include (name unknown). */
static int includes_faithful(const struct kj__dp_prog *p, const char *t)
{
	for (const char *q = t; (q = strchr(q, '#')) != NULL;) {
		q++;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, "include", 7) != 0)
			continue;
		q += 7;
		while (*q == ' ' || *q == '\t')
			q++;
		const char *e = *q == '"' ? strchr(q + 1, '"') : *q == '<' ? strchr(q + 1, '>') : NULL;
		if (e == NULL || memchr(q, '\n', (size_t)(e - q)) != NULL)
			return 0;
		size_t l = (size_t)(e - q - 1);
		for (size_t k = 1; k + 1 <= l; k++)
			if (q[k] == '.' && q[k + 1] == '.')
				return 0;
		if (tail_alias(p, q + 1, l))
			return 0;
		q = e;
	}
	return 1;
}

int kj__nv_input_ok(const struct kj__dp_prog *p, const char **bad)
{
	int slash = 0;

	if (p->name && !kj__name_ok(p->name)) {
		*bad = " (program name)";
		return KJ_DS_INPUT;
	}
	for (int i = 0; i < p->n_headers; i++) {
		const char *h = p->hdr_names[i];
		if (h == NULL || p->hdr_data[i] == NULL || !kj__path_ok(h) || *h == '.' || strstr(h, "/.") != NULL) {
			*bad = " (a header name)";
			return KJ_DS_INPUT;
		}
		for (int j = 0; j < i; j++)
			if (strcmp(h, p->hdr_names[j]) == 0) {
				*bad = " (two headers of one name)";
				return KJ_DS_INPUT;
			}
		slash |= strchr(h, '/') != NULL;
	}
	/* Headers named with '/' (jitify's "cuda/std/..."): served when every
	 * include resolves in kjit's worker exactly as in NVRTC. */
	for (int i = -1; slash && i < p->n_headers; i++)
		if (!includes_faithful(p, i < 0 ? p->src : p->hdr_data[i])) {
			*bad = " (an include of a header named with '/' by its tail, or with ..)";
			return KJ_DS_INPUT;
		}
	return KJ_DS_SERVED;
}

int kj__nv_failure_servable(const char *log)
{
	if (log == NULL || *log == '\0' || strncmp(log, "nvrtc: error: ", 14) == 0)
		return KJ_DS_OPTION_ERROR;
	if (strstr(log, "\n[log truncated: ") != NULL)
		return KJ_DS_TRUNCATED;
	return KJ_DS_SERVED;
}

int kj__nv_keep(struct kj__dp_prog *p, const char *target, int n, const char *const *opts)
{
	if ((p->target = strdup(target)) == NULL || (n > 0 && (p->opts = calloc((size_t)n, sizeof *p->opts)) == NULL))
		return KJIT_ENOMEM;
	for (; p->n_opts < n; p->n_opts++)
		if ((p->opts[p->n_opts] = strdup(opts[p->n_opts])) == NULL)
			return KJIT_ENOMEM;
	return 0;
}
