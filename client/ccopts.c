/* ccopts.c: the options users pass to nvcc, hipcc, NVRTC and glslc,
 * accepted by `kjit get` as they write them, and the headers that -I finds.
 *
 * kj__ccopts_take pulls -I DIR / -IDIR / --include-path=DIR, -D NAME[=V],
 * -U NAME, -O[LEVEL], -std=X, -default-device, nvcc's --fatbin, --compiler FAMILY,
 * --name-expression EXPR, warnings (-w, -Wall, -Wextra, -Werror, -Wno-...),
 * -g, -x LANG, other -fFLAG options, -include FILE / --pre-include[=]FILE
 * (kept in cc->pre: the get command sends the file), and glslc's -fshader-stage= /
 * -fentry-point= / --target-env= out of a command line before getopt sees it (getopt would
 * read -std=c++17 as -s -t -d ...); the get command's own options and their
 * values pass through untouched.  Macros and the rest become compiler
 * options as the daemon's whitelists spell them ("-DNAME=V"); the include
 * directories are searched here, in this process, by
 * kj__headers_from_dirs, which runs the same include scan as the daemon
 * (common/include.c) over the source with the directories as its roots and
 * sends what it finds as request headers: the daemon never reads a
 * client's files.  No state outside the call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "includes.h"
#include "ccopts.h"
#include "kj_limits.h"
#include "targetid.h"
#include "util.h"

/* The get command's options that take a separate value ("--source FILE"). */
static const char *const valued[] = { "--source", "--kernel", "--backend", "--target", "--entry", "--opt",
				      "--include-header", "--output", "-o" };

static int takes_value(const char *a)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(valued); i++)
		if (strcmp(a, valued[i]) == 0)
			return 1;
	return 0;
}

static int add_opt(struct kj__ccopts *cc, const char *a, const char *b, char *err, size_t errlen)
{
	if (cc->n_opts >= KJ_CCOPTS_MAX) {
		kj__seterr(err, errlen, "more than %d compiler options", KJ_CCOPTS_MAX);
		return KJIT_EINVAL;
	}
	if ((cc->opts[cc->n_opts] = kj__asprintf("%s%s", a, b)) == NULL)
		return KJIT_ENOMEM;
	cc->n_opts++;
	return 0;
}

/* Is a an optimisation level: -O, -O0..-O3, -Os, -Ofast? */
static int is_olevel(const char *a)
{
	return strcmp(a, "-O") == 0 || strcmp(a, "-Os") == 0 || strcmp(a, "-Ofast") == 0 ||
	       (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && a[3] == '\0');
}

/* Is a a warning option as gcc, clang, nvcc and glslc spell them: -w, or
 * -W and a lowercase letter (-Wall, -Wextra, -Werror, -Wno-unused,
 * -Werror=all-warnings)?  Which a family takes is its whitelist's say. */
static int is_warning(const char *a)
{
	return strcmp(a, "-w") == 0 || (a[0] == '-' && a[1] == 'W' && a[2] >= 'a' && a[2] <= 'z');
}

/* glslc's and clang's -x LANG / -xLANG: one option "-x LANG" (the daemon's
 * spelling).  1 taken, or a negative code. */
static int take_lang(struct kj__ccopts *cc, const char *a, const char *next, int *i, char *err, size_t errlen)
{
	const char *lang = a[2] ? a + 2 : next;

	if (lang == NULL || *lang == '\0') {
		kj__seterr(err, errlen, "missing argument to -x");
		return KJIT_EINVAL;
	}
	if (!a[2])
		(*i)++;
	int r = add_opt(cc, "-x ", lang, err, errlen);
	return r < 0 ? r : 1;
}

/* nvcc's and hipcc's -include FILE, NVRTC's --pre-include=FILE (and the
 * other spellings of both): the file, read by the get command and sent as
 * a header (issue 30).  1 taken, or a negative code. */
static int take_pre_include(struct kj__ccopts *cc, const char *a, const char *next, int *i, char *err,
			    size_t errlen)
{
	const char *eq = strchr(a, '=');
	const char *file = eq ? eq + 1 : next;

	if (file == NULL || *file == '\0') {
		kj__seterr(err, errlen, "missing argument to %s", a);
		return KJIT_EINVAL;
	}
	if (cc->n_pre >= KJ_CCOPTS_MAX) {
		kj__seterr(err, errlen, "more than %d pre-included files", KJ_CCOPTS_MAX);
		return KJIT_EINVAL;
	}
	if (eq == NULL)
		(*i)++;
	cc->pre[cc->n_pre++] = file;
	return 1;
}

/* Handles argv[*i] if it is a compiler-style option: 1 taken (*i moved past
 * its value), 0 not one, or a negative code. */
static int take_one(struct kj__ccopts *cc, int argc, char **argv, int *i, char *err, size_t errlen)
{
	const char *a = argv[*i];
	const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
	int r;

	if ((r = kj__ccflags_take(cc, argc, argv, i, err, errlen)) != 0) /* habits, -arch= (ccflags.c) */
		return r;
	if (strcmp(a, "--name-expression") == 0 || strncmp(a, "--name-expression=", 18) == 0) {
		if (a[17] == '\0' && next == NULL) {
			kj__seterr(err, errlen, "missing argument to %s", a);
			return KJIT_EINVAL;
		}
		if (cc->n_exprs >= KJ_CCOPTS_MAX) {
			kj__seterr(err, errlen, "more than %d name expressions", KJ_CCOPTS_MAX);
			return KJIT_EINVAL;
		}
		cc->exprs[cc->n_exprs++] = a[17] ? a + 18 : argv[++*i];
		return 1;
	}
	if (strcmp(a, "-include") == 0 || strncmp(a, "-include=", 9) == 0 || strcmp(a, "--pre-include") == 0 ||
	    strncmp(a, "--pre-include=", 14) == 0)
		return take_pre_include(cc, a, next, i, err, errlen);
	if (strcmp(a, "--compiler") == 0 || strncmp(a, "--compiler=", 11) == 0) {
		if (a[10] == '\0' && next == NULL) {
			kj__seterr(err, errlen, "missing argument to %s", a);
			return KJIT_EINVAL;
		}
		cc->compiler = a[10] ? a + 11 : argv[++*i];
		return 1;
	}
	if (strcmp(a, "-I") == 0 || strcmp(a, "--include-path") == 0 || strcmp(a, "-D") == 0 ||
	    strcmp(a, "-U") == 0 || strcmp(a, "--define-macro") == 0) {
		if (next == NULL) {
			kj__seterr(err, errlen, "missing argument to %s", a);
			return KJIT_EINVAL;
		}
		(*i)++;
		if (a[1] == 'I' || a[2] == 'i') {
			if (cc->n_dirs >= KJ_CCOPTS_MAX) {
				kj__seterr(err, errlen, "more than %d include directories", KJ_CCOPTS_MAX);
				return KJIT_EINVAL;
			}
			cc->dirs[cc->n_dirs++] = next;
			return 1;
		}
		r = add_opt(cc, a[1] == 'U' ? "-U" : "-D", next, err, errlen);
		return r < 0 ? r : 1;
	}
	if ((strncmp(a, "-I", 2) == 0 && a[2]) || strncmp(a, "--include-path=", 15) == 0) {
		if (cc->n_dirs >= KJ_CCOPTS_MAX) {
			kj__seterr(err, errlen, "more than %d include directories", KJ_CCOPTS_MAX);
			return KJIT_EINVAL;
		}
		cc->dirs[cc->n_dirs++] = a[1] == 'I' ? a + 2 : a + 15;
		return 1;
	}
	if (strncmp(a, "-x", 2) == 0)
		return take_lang(cc, a, next, i, err, errlen);
	if (strncmp(a, "--define-macro=", 15) == 0)
		r = add_opt(cc, "-D", a + 15, err, errlen);
	else if (((a[1] == 'D' || a[1] == 'U') && a[0] == '-' && a[2]) || is_olevel(a) ||
		 strncmp(a, "-std=", 5) == 0 || strncmp(a, "--std=", 6) == 0 || strcmp(a, "-default-device") == 0 ||
		 kj__cuda_fatbin_opt(a) || is_warning(a) || strcmp(a, "-g") == 0)
		r = add_opt(cc, a, "", err, errlen);
	else if (strncmp(a, "-fshader-stage=", 15) == 0)
		cc->stage = a + 15, r = 0;
	else if (strncmp(a, "-fentry-point=", 14) == 0)
		cc->entry_point = a + 14, r = 0;
	else if (strncmp(a, "--target-env=", 13) == 0)
		cc->target_env = a + 13, r = 0;
	else if (a[0] == '-' && a[1] == 'f' && a[2] >= 'a' && a[2] <= 'z') /* -ffast-math, -fhlsl-iomap ... */
		r = add_opt(cc, a, "", err, errlen);
	else
		return 0;
	return r < 0 ? r : 1;
}

int kj__ccopts_take(struct kj__ccopts *cc, int *argc, char **argv, char *err, size_t errlen)
{
	int k = 1, r = 0, i;

	memset(cc, 0, sizeof *cc);
	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (takes_value(a) && i + 1 < *argc) {
			argv[k++] = argv[i++];
			argv[k++] = argv[i];
			continue;
		}
		if ((r = take_one(cc, *argc, argv, &i, err, errlen)) < 0)
			return r;
		if (r == 0)
			argv[k++] = argv[i];
	}
	while (i < *argc)
		argv[k++] = argv[i++];
	argv[k] = NULL;
	*argc = k;
	return 0;
}

int kj__ccopts_finish(struct kj__ccopts *cc, int backend, const char **target, char *err, size_t errlen)
{
	if ((cc->stage || cc->target_env || cc->entry_point) && backend != KJIT_BACKEND_VULKAN) {
		kj__seterr(err, errlen, "-fshader-stage=, -fentry-point= and --target-env= are for --backend vulkan");
		return KJIT_EINVAL;
	}
	if (cc->entry_point && !kj__name_ok(cc->entry_point)) {
		kj__seterr(err, errlen, "-fentry-point=%.80s: not a name kjit takes ([A-Za-z0-9._+-])",
			   cc->entry_point);
		return KJIT_EINVAL;
	}
	if (cc->stage && strcmp(cc->stage, "compute") != 0 && strcmp(cc->stage, "comp") != 0) {
		kj__seterr(err, errlen, "-fshader-stage=%s: kjit builds compute shaders only", cc->stage);
		return KJIT_EINVAL;
	}
	if (cc->arch) { /* -arch=sm_90, --offload-arch=gfx90a ... */
		if (*target && strcmp(*target, cc->arch) != 0) {
			kj__seterr(err, errlen, "%s and --target %s disagree: give the target once, with --target",
				   cc->arch_opt, *target);
			return KJIT_EINVAL;
		}
		*target = cc->arch;
	}
	if (cc->target_env) {
		if (*target && strcmp(*target, cc->target_env) != 0) {
			kj__seterr(err, errlen, "--target-env=%s and --target %s disagree", cc->target_env, *target);
			return KJIT_EINVAL;
		}
		*target = cc->target_env;
	}
	for (size_t i = 0; i < cc->n_opts && backend == KJIT_BACKEND_VULKAN; i++) {
		char *o = cc->opts[i];
		if (o[1] == 'O' && o[2] >= '1' && o[2] <= '3')
			o[2] = '\0'; /* glslc has one level: -O */
		if (strcmp(o, "-Ofast") == 0)
			o[2] = '\0';
	}
	return 0;
}

void kj__ccopts_free(struct kj__ccopts *cc)
{
	if (cc == NULL)
		return;
	for (size_t i = 0; i < cc->n_opts; i++)
		free(cc->opts[i]);
	memset(cc, 0, sizeof *cc);
}

void kj__headers_free(kjit_header *h, size_t n)
{
	for (size_t i = 0; h && i < n; i++) {
		free((char *)h[i].name);
		free((void *)h[i].data);
	}
	free(h);
}

/* Appends a copy of (name, data, len) to h[*n]. */
static int copy_header(kjit_header *h, size_t *n, const char *name, const void *data, size_t len)
{
	char *nm = kj__strdup(name);
	void *d = malloc(len ? len : 1);

	if (nm == NULL || d == NULL) {
		free(nm);
		free(d);
		return KJIT_ENOMEM;
	}
	if (len)
		memcpy(d, data, len);
	h[*n] = (kjit_header){ .name = nm, .data = d, .size = len };
	(*n)++;
	return 0;
}

/* kj__headers_from_dirs with tree (NULL: none) and the source named name. */
static int headers_in_tree(const kjit_request *req, const char *name, const char *const *dirs, size_t n,
			   struct kj__include_tree *tree, kjit_header **out, size_t *n_out, char *err,
			   size_t errlen);

int kj__headers_from_dirs(const kjit_request *req, const char *const *dirs, size_t n, kjit_header **out,
			  size_t *n_out, char *err, size_t errlen)
{
	return headers_in_tree(req, req->source_name, dirs, n, NULL, out, n_out, err, errlen);
}

/* The place of a source whose folder is dir (an absolute real path) and
 * whose name is base, k folders down from the tree root: the last k
 * components of dir, then base ("src/main.hip"), malloc'd; *anc (malloc'd)
 * gets the folder k levels above dir.  NULL when dir is not that deep, a
 * component is not a name kjit sends, or on ENOMEM. */
static char *place_of(const char *dir, const char *base, int k, char **anc)
{
	const char *p = dir + strlen(dir);

	*anc = NULL;
	for (int i = 0; i < k; i++) {
		if (p <= dir + 1) /* "/" has no folder above it */
			return NULL;
		p--; /* onto the component's last byte, then back to its slash */
		while (p > dir && *p != '/')
			p--;
	}
	char *place = kj__asprintf("%s/%s", p + 1, base);
	*anc = p == dir ? kj__strdup("/") : kj__strndup(dir, (size_t)(p - dir));
	if (place == NULL || *anc == NULL || !kj__path_ok(place)) {
		free(place);
		free(*anc);
		*anc = NULL;
		return NULL;
	}
	return place;
}

int kj__headers_for_source(const kjit_request *req, const char *path, const char *const *dirs, size_t n,
			   kjit_header **out, size_t *n_out, char **place, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	const char *base = req->source_name ? req->source_name : "source";
	char *rel = slash ? kj__strndup(path, (size_t)(slash - path) + (slash == path)) : kj__strdup(".");
	char *dir = rel ? realpath(rel, NULL) : NULL;
	char *anc = NULL, *name = NULL, *first = NULL;
	struct kj__include_tree tree = { 0 };
	int r = KJIT_ENOMEM, k = 0;

	*place = NULL;
	if (dir == NULL || (name = kj__strdup(base)) == NULL)
		goto out;
	tree.anc = tree.src_dir = dir;
	r = headers_in_tree(req, name, dirs, n, &tree, out, n_out, err, errlen);
	if (r < 0 && err && errlen && (first = kj__strdup(err)) == NULL)
		r = KJIT_ENOMEM;
	/* An include climbed out of the source's folder: give the source the
	 * place in the tree that makes ".." land where it does on disk, and
	 * look again (every read still checked against the roots). */
	while (r == KJIT_EINCLUDE && tree.climb > 0 && k + tree.climb <= KJ_INCLUDE_CLIMB_MAX) {
		k += tree.climb;
		char *p = place_of(dir, base, k, &anc);
		if (p == NULL)
			break;
		free(name);
		name = p;
		tree.anc = anc;
		/* issue 30: the folder the include climbs to is a root, as it is
		 * for the compiler: the client reads what its user can read (the
		 * daemon reads none of it), and sends it under its tree path */
		tree.src_dir = anc;
		tree.climb = 0;
		r = headers_in_tree(req, name, dirs, n, &tree, out, n_out, err, errlen);
		free(anc);
		anc = NULL;
	}
	if (r == 0) {
		*place = name;
		name = NULL;
	} else if (first && (k == 0 || tree.climb > 0)) /* still out of every root: said of the source
							  * as the user named it, not of a place tried */
		snprintf(err, errlen, "%s", first);
out:
	free(first);
	free(name);
	free(dir);
	free(rel);
	return r;
}

static int headers_in_tree(const kjit_request *req, const char *sname, const char *const *dirs, size_t n,
			   struct kj__include_tree *tree, kjit_header **out, size_t *n_out, char *err,
			   size_t errlen)
{
	struct kj__includes inc = { 0 };
	const char **names = NULL;
	const uint8_t **data = NULL;
	size_t *lens = NULL, nh = req->n_headers, k = 0;
	kjit_header *h = NULL;
	int r = KJIT_ENOMEM;

	*out = NULL;
	*n_out = 0;
	if (req->source == NULL) {
		kj__seterr(err, errlen, "include directories need a source (not a bundled kernel)");
		return KJIT_EINVAL;
	}
	names = calloc(nh + 1, sizeof *names);
	data = calloc(nh + 1, sizeof *data);
	lens = calloc(nh + 1, sizeof *lens);
	if (names == NULL || data == NULL || lens == NULL)
		goto out;
	for (size_t i = 0; i < nh; i++) {
		names[i] = req->headers[i].name;
		data[i] = req->headers[i].data;
		lens[i] = req->headers[i].size;
	}
	struct kj__include_tree none = { 0 };
	if (tree == NULL)
		tree = &none;
	tree->options = req->options; /* -D/-U for computed includes, pre-included headers */
	tree->n_options = req->options ? req->n_options : 0;
	r = kj__includes_resolve_tree(sname, req->source, req->source_size, names, data, lens, nh, dirs, n, tree,
				      &inc, err, errlen);
	if (r < 0)
		goto out;
	r = KJIT_ENOMEM;
	if ((h = calloc(nh + inc.n + 1, sizeof *h)) == NULL)
		goto out;
	for (size_t i = 0; i < nh; i++)
		if ((r = copy_header(h, &k, names[i], data[i], lens[i])) < 0)
			goto out;
	for (size_t i = 0; i < inc.n; i++) {
		int in_req = 0;
		for (size_t j = 0; j < nh && !in_req; j++)
			in_req = strcmp(names[j], inc.names[i]) == 0;
		if (!in_req && (r = copy_header(h, &k, inc.names[i], inc.data[i], inc.len[i])) < 0)
			goto out;
	}
	/* success */
	*out = h;
	*n_out = k;
	h = NULL;
	r = 0;
out:
	kj__headers_free(h, k);
	kj__includes_free(&inc);
	free(names);
	free(data);
	free(lens);
	return r;
}
