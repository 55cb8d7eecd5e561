/* nvrtc-inc.c: NVRTC compiles with -I folders (CuPy passes its include
 * folder), served by reading the headers the source includes in this
 * process, as `kjit get` does (client/ccopts.c: libkjit's include scan,
 * the folders searched in order after the program's own headers), and
 * sending them as request headers under the names they were included by.
 *
 * NVRTC reads those files itself, so kjit serves such a compile only where
 * the result cannot depend on how the file was found: no line info (it
 * names the file's path), no text using __FILE__, __has_include or
 * #include_next, no computed #include, one folder, every header found at
 * its top (NVRTC looks beside an including header first; kjit's worker
 * does not), none of them also in the current folder (NVRTC may look there
 * first), none included with <> (NVRTC's built-in headers may come first);
 * and, checked after the compile by nvrtc.c, a success with an empty log
 * (a warning names the path NVRTC found).  Everything else goes to the real
 * library.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccopts.h"
#include "dropstat.h"
#include "nvrtc-int.h"

/* Most -I folders read before forwarding is decided (one is served: with
 * two, NVRTC looks beside the including header before the earlier folder). */
#define KJ_NV_DIRS_MAX 16

/* 1 if text has something whose meaning depends on where a file lies. */
static int path_sensitive(const char *t, size_t n)
{
	static const char *const words[] = { "__FILE__", "__has_include", "include_next", "__FILE_NAME__" };

	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		if (memmem(t, n, words[i], strlen(words[i])) != NULL)
			return 1;
	return 0;
}

/* 1 if text includes a name other than as "NAME" (a computed include), or
 * includes one of the found headers (from first on) as <NAME>. */
static int odd_include(const char *t, size_t n, const kjit_header *h, size_t first, size_t nh)
{
	const char *end = t + n;

	for (const char *q = t; (q = memchr(q, '#', (size_t)(end - q))) != NULL;) {
		q++;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (end - q < 7 || memcmp(q, "include", 7) != 0)
			continue;
		q += 7;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q >= end || (*q != '"' && *q != '<'))
			return 1;
		if (*q == '"')
			continue;
		const char *e = memchr(q, '>', (size_t)(end - q));
		if (e == NULL)
			return 1;
		for (size_t i = first; i < nh; i++)
			if (strlen(h[i].name) == (size_t)(e - q - 1) && memcmp(h[i].name, q + 1, (size_t)(e - q - 1)) == 0)
				return 1;
	}
	return 0;
}

/* KJ_DS_SERVED when the headers read (p->inc) resolve as NVRTC's would. */
static int faithful(const struct kj__dp_prog *p, const char **bad)
{
	size_t first = (size_t)p->n_headers;

	if (path_sensitive(p->src, strlen(p->src)) || odd_include(p->src, strlen(p->src), p->inc, first, p->n_inc)) {
		*bad = " (-I: the source uses __FILE__, __has_include, a computed or <> include)";
		return KJ_DS_OPTION;
	}
	for (size_t i = 0; i < p->n_inc; i++) {
		const kjit_header *h = &p->inc[i];
		if (path_sensitive(h->data, h->size) || odd_include(h->data, h->size, p->inc, first, p->n_inc)) {
			*bad = " (-I: a header uses __FILE__, __has_include, a computed or <> include)";
			return KJ_DS_OPTION;
		}
		if (i >= first && (strchr(h->name, '/') != NULL || access(h->name, F_OK) == 0)) {
			*bad = " (-I: a header below a folder's top, or also in the current folder)";
			return KJ_DS_OPTION;
		}
	}
	return KJ_DS_SERVED;
}

int kj__nv_read_includes(struct kj__dp_prog *p, int n, const char *const *opts, const char **bad)
{
	const char *dirs[KJ_NV_DIRS_MAX];
	kjit_header *own = NULL;
	kjit_request rq;
	size_t n_dirs = 0;
	char err[256];
	int why = KJ_DS_OPTION;

	for (int i = 0; i < n; i++) {
		const char *o = opts[i];
		const char *d = strncmp(o, "-I", 2) == 0 ? o + 2 : strncmp(o, "--include-path=", 15) == 0 ? o + 15 : NULL;
		if (strcmp(o, "-lineinfo") == 0 || strcmp(o, "--generate-line-info") == 0)
			why = KJ_DS_INPUT; /* remembered: line info names -I headers by path */
		if (d == NULL)
			continue;
		if (n_dirs == KJ_NV_DIRS_MAX) {
			*bad = " (-I: too many folders)";
			return KJ_DS_OPTION;
		}
		dirs[n_dirs++] = d;
	}
	if (n_dirs == 0)
		return KJ_DS_SERVED;
	if (why == KJ_DS_INPUT || n_dirs > 1) {
		*bad = n_dirs > 1 ? " (-I: more than one folder)" : " (-I with line info: it names the headers' paths)";
		return KJ_DS_OPTION;
	}
	if (p->n_headers > 0 && (own = calloc((size_t)p->n_headers, sizeof *own)) == NULL) {
		*bad = " (out of memory)";
		return KJ_DS_REFUSED;
	}
	for (int i = 0; i < p->n_headers; i++)
		own[i] = (kjit_header){ p->hdr_names[i], p->hdr_data[i], strlen(p->hdr_data[i]) };
	memset(&rq, 0, sizeof rq);
	rq.source = p->src;
	rq.source_size = strlen(p->src);
	rq.source_name = p->name ? p->name : "default_program";
	rq.headers = own;
	rq.n_headers = (size_t)p->n_headers;
	err[0] = '\0';
	if (kj__headers_from_dirs(&rq, dirs, n_dirs, &p->inc, &p->n_inc, err, sizeof err) < 0) {
		p->inc = NULL;
		p->n_inc = 0;
		*bad = " (-I: a header kjit cannot read or send)";
		free(own);
		return KJ_DS_OPTION;
	}
	free(own);
	return faithful(p, bad);
}
