/* inc.c: NVRTC and hiprtc compiles with include folders (CuPy passes its
 * include tree and the CUDA headers' folder, Warp --include-path=), served
 * by reading the headers the program would reach in this process, as
 * `kjit get -I` does (client/ccopts.c's kj__headers_from_dirs: libkjit's
 * include scan, the program's own headers first, then the folders in
 * order), and sending them as request headers under the names they were
 * included by.  The folders themselves never reach kjitd: two programs with
 * the same headers in different places share one entry.
 *
 * The scan models the folders as one tree; the compilers read files.  So
 * before anything is sent, every #include of every text the compile will
 * read (the source, the program's headers, the headers found) is resolved
 * twice and the two must land on the same file: as NVRTC 13 and hiprtc 5.2
 * do on disk (measured, tests/e2e/dropin-inc.sh: the program's headers by
 * exact name first; for "..." the folder of the including file when that
 * is a file on disk, or for NVRTC the current folder for the source; then
 * each folder in order; no built-in headers), and as kjit's worker will (a
 * request header of that exact name, else for NVRTC the one header whose
 * path ends in it: compilers/nvrtc.c's aliases).  Files are compared by
 * device and inode; a program header by name.  Where they differ (a header
 * beside its includer in one folder and its name in an earlier one, two
 * headers of one tail, a file in the current folder) the compile is the
 * real library's.  So is anything whose output names where a file lies:
 * line info, a found header using __FILE__ (the compilers write the folder
 * as given), __has_include or #include_next anywhere, an include kjit
 * cannot follow (a computed name, "..").  hiprtc also forwards program
 * headers given with folders, and found headers below a folder's top
 * (its worker takes names without '/').  After kjit's compile only a
 * success with an empty log is served (a warning names the path the
 * compiler found).  These forwards are counted as "path".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccopts.h"
#include "dropstat.h"
#include "dropin.h"

/* Most include folders one compile may give and still be served. */
#define KJ_NV_DIRS_MAX 32

/* Where one #include lands: nowhere, a program header (by name), or a file. */
struct fid {
	int kind; /* 0 nowhere, 1 program header, 2 file */
	const char *mem;
	dev_t dev;
	ino_t ino;
};

struct inc_ctx {
	const struct kj__dp_prog *p;
	int hip;     /* hiprtc: no current folder, no tail aliases */
	const char *dirs[KJ_NV_DIRS_MAX];
	size_t n_dirs;
	int *dir_of; /* [n_inc]: the folder a found header was read from; -1 a program header */
	struct fid *ids; /* [n_inc] */
};

const char *kj__dp_inc_dir(int hip, int n, const char *const *opts, int *i)
{
	const char *o = opts[*i];
	int dash_i = strncmp(o, "-I", 2) == 0, path = !hip && strncmp(o, "--include-path", 14) == 0;

	if (((dash_i && o[2] == '\0') || (path && o[14] == '\0')) && *i + 1 < n && opts[*i + 1] &&
	    opts[*i + 1][0] != '\0' && opts[*i + 1][0] != '-')
		return opts[++*i];
	if (dash_i && o[2] != '\0' && o[2] != ' ' && o[2] != '=')
		return o + 2;
	if (path && o[14] == '=' && o[15] != '\0' && o[15] != ' ')
		return o + 15;
	return NULL;
}

/* The file dir/a/b (b may be NULL, a may be ""), as a fid (kind 0 when
 * there is none). */
static struct fid file_at(const char *dir, const char *a, size_t al, const char *b)
{
	char path[4096];
	struct stat st;
	struct fid f = { 0 };
	int n = b ? snprintf(path, sizeof path, "%s/%.*s%s%s", dir, (int)al, a, al ? "/" : "", b)
		  : snprintf(path, sizeof path, "%s/%.*s", dir, (int)al, a);

	if (n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode))
		f = (struct fid){ 2, NULL, st.st_dev, st.st_ino };
	return f;
}

static int fid_eq(struct fid a, struct fid b)
{
	if (a.kind != b.kind)
		return 0;
	return a.kind == 0 || (a.kind == 1 ? strcmp(a.mem, b.mem) == 0 : a.dev == b.dev && a.ino == b.ino);
}

/* Where NVRTC lands "name" (quoted or not) included from text `from`
 * (-1 the source, else an index into p->inc). */
static struct fid nvrtc_lands(const struct inc_ctx *x, long from, const char *name, int quoted)
{
	const struct kj__dp_prog *p = x->p;
	struct fid f = { 0 };

	for (int i = 0; i < p->n_headers; i++)
		if (strcmp(p->hdr_names[i], name) == 0)
			return (struct fid){ 1, p->hdr_names[i], 0, 0 };
	if (quoted && from < 0 && !x->hip)
		f = file_at(".", "", 0, name);
	else if (quoted && from >= 0 && x->dir_of[from] >= 0) {
		const char *h = p->inc[from].name, *slash = strrchr(h, '/');
		f = file_at(x->dirs[x->dir_of[from]], h, slash ? (size_t)(slash - h) : 0, name);
	}
	for (size_t d = 0; f.kind == 0 && d < x->n_dirs; d++)
		f = file_at(x->dirs[d], name, strlen(name), NULL);
	return f;
}

/* Where kjit's worker lands "name": the request header of that name, else
 * the only one whose path ends in "/name". */
static struct fid worker_lands(const struct inc_ctx *x, const char *name)
{
	const struct kj__dp_prog *p = x->p;
	size_t l = strlen(name), tail = (size_t)-1;
	int n_tail = 0;

	for (size_t i = 0; i < p->n_inc; i++) {
		const char *h = p->inc[i].name;
		size_t n = strlen(h);
		if (strcmp(h, name) == 0)
			return x->ids[i];
		if (n > l && h[n - l - 1] == '/' && strcmp(h + n - l, name) == 0) {
			tail = i;
			n_tail++;
		}
	}
	return n_tail == 1 && !x->hip ? x->ids[tail] : (struct fid){ 0 };
}

/* What in t (n bytes) depends on where a file lies, or NULL; found: a
 * header read from a folder (its __FILE__ names the folder). */
static const char *path_sensitive(const char *t, size_t n, int found)
{
	static const char *const words[] = { "__has_include", "include_next", "__FILE__", "__FILE_NAME__" };

	for (size_t i = 0; i < (found ? 4u : 2u); i++)
		if (memmem(t, n, words[i], strlen(words[i])) != NULL)
			return i < 2 ? " (-I: __has_include or #include_next)" : " (-I: a header read from a folder uses __FILE__)";
	return NULL;
}

/* Checks every #include of text t (from: as in nvrtc_lands).  NULL when
 * each lands on the same file in NVRTC and in kjit's worker, else why not. */
static const char *includes_agree(const struct inc_ctx *x, long from, const char *t, size_t n)
{
	static const char *const odd = " (-I: a computed include, or one spelled with .. or ./)";
	static const char *const differ = " (-I: an include NVRTC finds in another file than kjit's worker would)";

	const char *end = t + n;
	char name[KJ_NAME_MAX + 1];

	for (const char *q = t; (q = memchr(q, '#', (size_t)(end - q))) != NULL;) {
		q++;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (end - q < 7 || memcmp(q, "include", 7) != 0)
			continue;
		q += 7;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (x->n_dirs == 0 && (q >= end || *q != '"'))
			continue; /* no folders: only "..." can reach a file (the current folder) */
		if (q >= end || (*q != '"' && *q != '<'))
			return odd; /* computed: its name is not known here */
		const char *e = memchr(q + 1, *q == '"' ? '"' : '>', (size_t)(end - q - 1));
		size_t l = e ? (size_t)(e - q - 1) : 0;
		if (e == NULL || l == 0 || l > KJ_NAME_MAX || memchr(q + 1, '\n', l) != NULL)
			return x->n_dirs == 0 ? NULL : odd;
		memcpy(name, q + 1, l);
		name[l] = '\0';
		if (x->n_dirs > 0 && (name[0] == '/' || strstr(name, "..") || strncmp(name, "./", 2) == 0 || strstr(name, "/./")))
			return odd;
		struct fid nv = nvrtc_lands(x, from, name, *q == '"');
		if (x->n_dirs == 0 ? nv.kind == 2 : !fid_eq(nv, worker_lands(x, name)))
			return x->n_dirs == 0 ? " (the source includes a file of the current folder)" : differ;
		q = e;
	}
	return NULL;
}

/* KJ_DS_SERVED when the headers read (p->inc) are what NVRTC would read,
 * each #include landing on the same file. */
static int faithful(struct inc_ctx *x, const char **bad)
{
	const struct kj__dp_prog *p = x->p;
	size_t first = (size_t)p->n_headers;

	for (size_t i = 0; i < p->n_inc; i++) {
		if (x->hip && strchr(p->inc[i].name, '/') != NULL) {
			*bad = " (-I: a header below a folder's top)";
			return KJ_DS_PATH;
		}
		x->dir_of[i] = -1;
		x->ids[i] = (struct fid){ 1, p->inc[i].name, 0, 0 };
		for (size_t d = 0; i >= first && d < x->n_dirs && x->dir_of[i] < 0; d++)
			if ((x->ids[i] = file_at(x->dirs[d], p->inc[i].name, strlen(p->inc[i].name), NULL)).kind)
				x->dir_of[i] = (int)d;
		if (i >= first && x->dir_of[i] < 0) {
			*bad = " (-I: a header kjit read is no longer in its folder)";
			return KJ_DS_PATH;
		}
	}
	if ((*bad = path_sensitive(p->src, strlen(p->src), 0)) != NULL ||
	    (*bad = includes_agree(x, -1, p->src, strlen(p->src))) != NULL)
		return KJ_DS_PATH;
	for (size_t i = 0; i < p->n_inc; i++) {
		const kjit_header *h = &p->inc[i];
		if ((*bad = path_sensitive(h->data, h->size, i >= first)) != NULL ||
		    (*bad = includes_agree(x, (long)i, h->data, h->size)) != NULL)
			return KJ_DS_PATH;
	}
	return KJ_DS_SERVED;
}

/* Takes the folders out of opts into x; KJ_DS_SERVED or why not. */
static int take_dirs(struct inc_ctx *x, int n, const char *const *opts, const char **bad)
{
	int lines = 0;

	for (int i = 0; i < n; i++) {
		const char *o = opts[i], *d = kj__dp_inc_dir(x->hip, n, opts, &i);
		lines |= strcmp(o, "-lineinfo") == 0 || strcmp(o, "--generate-line-info") == 0;
		if (d == NULL)
			continue;
		if (x->n_dirs == KJ_NV_DIRS_MAX) {
			*bad = " (-I: too many folders)";
			return KJ_DS_OPTION;
		}
		x->dirs[x->n_dirs++] = d;
	}
	if (x->n_dirs > 0 && lines) {
		*bad = " (-I with line info: it names the headers' paths)";
		return KJ_DS_PATH;
	}
	return KJ_DS_SERVED;
}

/* The program's own headers as kjit_headers (borrowed strings). */
static kjit_header *own_headers(const struct kj__dp_prog *p)
{
	kjit_header *own = calloc((size_t)p->n_headers + 1, sizeof *own);

	for (int i = 0; own && i < p->n_headers; i++)
		own[i] = (kjit_header){ p->hdr_names[i], p->hdr_data[i], strlen(p->hdr_data[i]) };
	return own;
}

int kj__dp_read_includes(struct kj__dp_prog *p, int hip, int n, const char *const *opts, const char **bad)
{
	struct inc_ctx x = { .p = p, .hip = hip };
	kjit_header *own = NULL;
	kjit_request rq;
	char err[256];
	int why = take_dirs(&x, n, opts, bad);

	if (why != KJ_DS_SERVED)
		return why;
	if (x.n_dirs == 0 && hip)
		return KJ_DS_SERVED;
	if (x.n_dirs == 0) { /* NVRTC finds "x.h" of the source in the current folder too */
		*bad = includes_agree(&x, -1, p->src, strlen(p->src));
		return *bad ? KJ_DS_PATH : KJ_DS_SERVED;
	}
	for (int i = 0; i < p->n_headers; i++)
		if (hip || strchr(p->hdr_names[i], '/') != NULL) {
			*bad = hip ? " (-I with program headers)" : " (-I with program headers named with '/')";
			return KJ_DS_PATH;
		}
	if ((own = own_headers(p)) == NULL) {
		*bad = " (out of memory)";
		return KJ_DS_REFUSED;
	}
	memset(&rq, 0, sizeof rq);
	rq.source = p->src;
	rq.source_size = strlen(p->src);
	rq.source_name = p->name ? p->name : "default_program";
	rq.headers = own;
	rq.n_headers = (size_t)p->n_headers;
	err[0] = '\0';
	if (kj__headers_from_dirs(&rq, x.dirs, x.n_dirs, &p->inc, &p->n_inc, err, sizeof err) < 0) {
		p->inc = NULL;
		p->n_inc = 0;
		*bad = " (-I: a header kjit cannot read or send)";
		free(own);
		return KJ_DS_PATH;
	}
	free(own);
	x.dir_of = calloc(p->n_inc + 1, sizeof *x.dir_of);
	x.ids = calloc(p->n_inc + 1, sizeof *x.ids);
	why = x.dir_of && x.ids ? faithful(&x, bad) : KJ_DS_REFUSED;
	if (x.dir_of == NULL || x.ids == NULL)
		*bad = " (out of memory)";
	free(x.dir_of);
	free(x.ids);
	return why;
}
