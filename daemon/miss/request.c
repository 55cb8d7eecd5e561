/* request.c: a GET request's fields, parsed and checked.
 *
 * kj__get_req_parse copies every field it keeps out of the frame (the
 * frame is only valid while it is dispatched) and checks each against the
 * limits of kj_limits.h; a bad request gets one line that says what is
 * wrong.  kj__get_req_load_kernel fills in a bundled kernel's source,
 * entries and options from the manifest; the source is a copy of the text
 * the manifest kept from an earlier read while a stat proves the file
 * unchanged since (the memo's proof, kj__file_unchanged_since), else read
 * (and kept, when small).  A COMPILER field must name a
 * family of the compiler table (compilers/compiler.c) that builds for the
 * request's backend.  Nothing here touches the cache, the pools or a
 * connection, so the fuzz target (tests/fuzz/fuzz-get.c) exercises exactly
 * this file through kj__get_check.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "daemon.h"
#include "kj_types.h"
#include "util.h"

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void kj__get_req_clear(struct kj__get_req *g)
{
	if (g == NULL)
		return;
	free(g->target);
	free(g->version);
	free(g->kernel);
	free(g->family);
	free(g->source_name);
	free(g->target_from);
	free(g->kernel_path);
	free(g->module_entries);
	free(g->source);
	strv_free(g->entries, g->n_entries);
	strv_free(g->options, g->n_options);
	strv_free(g->hnames, g->n_headers);
	for (size_t i = 0; g->hdata && i < g->n_headers; i++)
		free(g->hdata[i]);
	free(g->hdata);
	free(g->hlen);
	memset(g, 0, sizeof *g);
}

int kj__get_req_wants_lowered(const struct kj__get_req *g)
{
	for (size_t i = 0; i < g->n_options; i++)
		if (strncmp(g->options[i], "--name-expression=", 18) == 0)
			return 1;
	return g->want_log;
}

/* The request's compiler choice (COMPILER, a family name such as "nvcc"),
 * which must build for its backend.  0, or KJIT_EINVAL / KJIT_EBACKEND
 * with err. */
static int parse_family(struct kj__get_req *g, const struct kj__msg *m, char *err, size_t errlen)
{
	char choices[64];

	if (kj__field_strdup(kj__msg_get(m, KJ_F_COMPILER), KJ_NAME_MAX, &g->family) < 0) {
		snprintf(err, errlen, "the compiler name is malformed (a family such as nvcc: letters and digits)");
		return KJIT_EINVAL;
	}
	if (g->family == NULL)
		return 0;
	if (!kj__name_ok(g->family) || kj__family_choose(g->family, g->backend, 0) == NULL) {
		kj__family_choices(g->backend, " or ", choices, sizeof choices);
		snprintf(err, errlen, "compiler '%.32s' does not build for %s (%s: %s)",
			 kj__name_ok(g->family) ? g->family : "?", kjit_backend_name(g->backend),
			 kjit_backend_name(g->backend), choices);
		return KJIT_EBACKEND;
	}
	return 0;
}

static int dup_strs(const struct kj__msg *m, uint16_t tag, size_t max_count, size_t max_len, char ***out,
		    size_t *n)
{
	size_t pos = 0, count = 0;

	while (kj__msg_next(m, tag, &pos))
		count++;
	*out = NULL;
	*n = 0;
	if (count > max_count)
		return KJIT_ETOOBIG;
	if (count == 0)
		return 0;
	*out = calloc(count, sizeof **out);
	if (*out == NULL)
		return KJIT_ENOMEM;
	pos = 0;
	for (size_t i = 0; i < count; i++) {
		int r = kj__field_strdup(kj__msg_next(m, tag, &pos), max_len, &(*out)[i]);
		*n = i + 1;
		if (r < 0)
			return r;
	}
	return 0;
}

int kj__proc_dev_path(const char *name)
{
	const char *p = name;

	if (*p != '/')
		return 0;
	for (;;) { /* "//proc", "/./dev": the same directories */
		while (*p == '/')
			p++;
		if (p[0] == '.' && (p[1] == '/' || p[1] == '\0'))
			p++;
		else
			break;
	}
	return ((strncmp(p, "proc", 4) == 0 && (p[4] == '/' || p[4] == '\0')) ||
		(strncmp(p, "dev", 3) == 0 && (p[3] == '/' || p[3] == '\0')));
}

/* Headers come as HEADER_NAME then HEADER_DATA, pair by pair. */
static int parse_headers(struct kj__get_req *g, const struct kj__msg *m, char *err, size_t errlen)
{
	size_t count = 0, total = 0;

	for (size_t i = 0; i < m->n; i++)
		count += m->f[i].tag == KJ_F_HEADER_NAME;
	if (count > KJ_HEADERS_MAX_COUNT) {
		snprintf(err, errlen, "%zu headers: more than the %d allowed", count, KJ_HEADERS_MAX_COUNT);
		return KJIT_ETOOBIG;
	}
	if (count == 0)
		return 0;
	g->hnames = calloc(count, sizeof *g->hnames);
	g->hdata = calloc(count, sizeof *g->hdata);
	g->hlen = calloc(count, sizeof *g->hlen);
	if (!g->hnames || !g->hdata || !g->hlen)
		return KJIT_ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		if (m->f[i].tag != KJ_F_HEADER_NAME)
			continue;
		if (i + 1 >= m->n || m->f[i + 1].tag != KJ_F_HEADER_DATA) {
			snprintf(err, errlen, "header name without its data");
			return KJIT_EINVAL;
		}
		size_t k = g->n_headers++;
		if (kj__field_strdup(&m->f[i], KJ_NAME_MAX, &g->hnames[k]) < 0 || g->hnames[k][0] == '\0') {
			snprintf(err, errlen, "a header name is empty, too long or holds a NUL");
			return KJIT_EINVAL;
		}
		if (kj__proc_dev_path(g->hnames[k])) { /* the name unquoted: it may hold control bytes */
			snprintf(err, errlen, "a header named under /proc or /dev is refused: such paths never reach a "
				 "compiler");
			return KJIT_EINVAL;
		}
		total += m->f[i + 1].len;
		if (total > KJ_HEADERS_MAX_TOTAL) {
			snprintf(err, errlen, "headers total over the %u-byte limit", KJ_HEADERS_MAX_TOTAL);
			return KJIT_ETOOBIG;
		}
		g->hlen[k] = m->f[i + 1].len;
		g->hdata[k] = malloc(g->hlen[k] + 1);
		if (g->hdata[k] == NULL)
			return KJIT_ENOMEM;
		memcpy(g->hdata[k], m->f[i + 1].p, g->hlen[k]);
		g->hdata[k][g->hlen[k]] = '\0';
	}
	return 0;
}

/* The request's flags: NO_COMPILE (0 or 1, else malformed) and EXPLAIN
 * (1 asks; any other value is ignored: a reply never fails for it).  0 or
 * KJIT_EPROTO with err set. */
static int parse_flags(struct kj__get_req *g, const struct kj__msg *m, char *err, size_t errlen)
{
	uint32_t no_compile = 0, explain = 0, want_log = 0;

	if (kj__msg_get(m, KJ_F_NO_COMPILE) && (kj__field_u32(kj__msg_get(m, KJ_F_NO_COMPILE), &no_compile) < 0 ||
						no_compile > 1)) {
		snprintf(err, errlen, "the no-compile flag is malformed");
		return KJIT_EPROTO;
	}
	g->no_compile = (int)no_compile;
	g->explain = kj__field_u32(kj__msg_get(m, KJ_F_EXPLAIN), &explain) == 0 && explain == 1;
	if (kj__msg_get(m, KJ_F_WANT_LOG) && (kj__field_u32(kj__msg_get(m, KJ_F_WANT_LOG), &want_log) < 0 || want_log > 1)) {
		snprintf(err, errlen, "the want-log flag is malformed");
		return KJIT_EPROTO;
	}
	g->want_log = (int)want_log;
	return 0;
}

/* " -std=c++17": the blanks around an option, which NVRTC ignores, go
 * before the whitelists and the key see it (issue 30). */
static void trim_options(struct kj__get_req *g)
{
	for (size_t i = 0; i < g->n_options; i++) {
		char *o = g->options[i];
		size_t b = strspn(o, " \t"), l = strlen(o + b);
		while (l > 0 && (o[b + l - 1] == ' ' || o[b + l - 1] == '\t'))
			l--;
		memmove(o, o + b, l);
		o[l] = '\0';
	}
}

int kj__get_req_parse(struct kj__get_req *g, const struct kj__msg *m, char *err, size_t errlen)
{
	uint32_t backend = 0;
	const struct kj__field *src;
	int r;

	if (kj__field_u32(kj__msg_get(m, KJ_F_BACKEND), &backend) < 0 || kjit_backend_name((int)backend) == NULL) {
		snprintf(err, errlen, "unknown or missing backend; use hip, cuda or vulkan");
		return KJIT_EBACKEND;
	}
	g->backend = (int)backend;
	if ((r = kj__field_strdup(kj__msg_get(m, KJ_F_TARGET), KJ_TARGET_MAX - 1, &g->target)) < 0 ||
	    (g->target && !kj__token_ok(g->target, KJ_TARGET_MAX))) {
		snprintf(err, errlen, "the target is malformed (too long, or holds '/', spaces or control characters)");
		return KJIT_ETARGET;
	}
	if ((r = kj__field_strdup(kj__msg_get(m, KJ_F_VERSION), KJ_VERSION_STR_MAX - 1, &g->version)) < 0 ||
	    (g->version && !kj__token_ok(g->version, KJ_VERSION_STR_MAX))) {
		snprintf(err, errlen, "the runtime version is malformed");
		return KJIT_EINVAL;
	}
	kj__field_strdup(kj__msg_get(m, KJ_F_TARGET_SOURCE), 64, &g->target_from);
	if ((r = parse_flags(g, m, err, errlen)) < 0 || (r = parse_family(g, m, err, errlen)) < 0)
		return r;
	if (kj__field_strdup(kj__msg_get(m, KJ_F_KERNEL), KJ_NAME_MAX, &g->kernel) < 0 ||
	    (g->kernel && !kj__name_ok(g->kernel))) {
		snprintf(err, errlen, "the kernel name is malformed (letters, digits, '._+-' only)");
		return KJIT_EINVAL;
	}
	if (kj__field_strdup(kj__msg_get(m, KJ_F_SOURCE_NAME), KJ_NAME_MAX, &g->source_name) < 0 ||
	    (g->source_name && !kj__path_ok(g->source_name))) {
		snprintf(err, errlen, "the source name is malformed (a file name: letters, digits, '._+-' only, "
			 "with folders of the same: src/main.hip)");
		return KJIT_EINVAL;
	}
	src = kj__msg_get(m, KJ_F_SOURCE);
	if ((src == NULL) == (g->kernel == NULL)) {
		snprintf(err, errlen, "a request names exactly one of a source or a bundled kernel");
		return KJIT_EINVAL;
	}
	if (src) {
		if (src->len == 0) {
			snprintf(err, errlen, "the source is empty");
			return KJIT_EINVAL;
		}
		if (src->len > KJ_SOURCE_MAX) {
			snprintf(err, errlen, "the source is %u bytes, over the %u-byte limit", src->len, KJ_SOURCE_MAX);
			return KJIT_ETOOBIG;
		}
		g->source = malloc(src->len + 1);
		if (g->source == NULL)
			return KJIT_ENOMEM;
		memcpy(g->source, src->p, src->len);
		g->source[src->len] = '\0';
		g->source_len = src->len;
	}
	r = dup_strs(m, KJ_F_ENTRY, KJ_ENTRIES_MAX_COUNT, KJ_NAME_MAX, &g->entries, &g->n_entries);
	if (r < 0) {
		snprintf(err, errlen, "entry points: too many, too long, or holding a NUL");
		return r;
	}
	for (size_t i = 0; i < g->n_entries; i++) {
		if (!kj__name_ok(g->entries[i])) {
			snprintf(err, errlen, "entry point name is malformed (letters, digits, '._+-' only)");
			return KJIT_EINVAL;
		}
	}
	r = dup_strs(m, KJ_F_OPTION, KJ_OPTIONS_MAX_COUNT, KJ_OPTION_MAX, &g->options, &g->n_options);
	if (r < 0) {
		snprintf(err, errlen, "options: too many, too long, or holding a NUL");
		return r;
	}
	trim_options(g);
	return parse_headers(g, m, err, errlen);
}

int kj__get_check(const struct kj__msg *m, char *err, size_t errlen)
{
	struct kj__get_req g = { 0 };
	int r = kj__get_req_parse(&g, m, err, errlen);

	kj__get_req_clear(&g);
	return r;
}

static int same_strv(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return 1;
}

/* Where entries are not in the key (hip, cuda), every kernel of the
 * manifest built from k's file with k's options is one module, compiled
 * once: their entries, "NAME\n" each, go with the module's fleet value
 * (miss-help.c), so a node fetching any kernel of it is served
 * whichever kernel compiled it.  0 or KJIT_ENOMEM. */
static int module_entries(struct kj__get_req *g, const struct kj__manifest *m, const struct kj__kernel *k)
{
	struct kj__buf b = { 0 };
	int r = 0;

	if (kj__cache_key_entries_in(g->backend))
		return 0;
	for (size_t i = 0; r == 0 && i < m->n; i++) {
		const struct kj__kernel *o = &m->k[i];
		if (o->backend != k->backend || strcmp(o->file, k->file) != 0 ||
		    !same_strv(o->options, o->n_options, k->options, k->n_options))
			continue;
		for (size_t e = 0; r == 0 && e < o->n_entries; e++)
			r = kj__buf_printf(&b, "%s\n", o->entries[e]);
	}
	if (r == 0 && b.len && kj__buf_append(&b, "", 1) == 0) {
		g->module_entries = (char *)b.p;
		return 0;
	}
	kj__buf_free(&b);
	return r < 0 ? KJIT_ENOMEM : 0;
}

/* g's source from k's kept text, if a stat of path proves the file
 * unchanged since that read: 1, else 0 (read it). */
static int kept_text(const struct kj__kernel *k, const char *path, struct kj__get_req *g)
{
	struct stat st;

	if (k->text == NULL || !kj__file_unchanged_since(path, &k->text_st, &k->text_read_at, &st) ||
	    (g->source = malloc(k->text_len + 1)) == NULL)
		return 0;
	memcpy(g->source, k->text, k->text_len + 1);
	g->source_len = k->text_len;
	g->kernel_st = k->text_st;
	g->kernel_read_at = k->text_read_at;
	return 1;
}

/* Keeps g's source, just read, as k's text: when small, and when the read
 * was not overlapped by a change (its clock kept: kj__read_file_st), so a
 * later stat can prove it.  Without memory, nothing is kept. */
static void keep_text(struct kj__manifest *m, struct kj__kernel *k, const struct kj__get_req *g)
{
	size_t had = k->text ? k->text_len + 1 : 0;
	uint8_t *p;

	if (g->source_len > KJ_KERNEL_TEXT_MAX || (g->kernel_read_at.tv_sec == 0 && g->kernel_read_at.tv_nsec == 0) ||
	    m->text_bytes - had + g->source_len + 1 > KJ_KERNEL_TEXT_TOTAL || (p = malloc(g->source_len + 1)) == NULL)
		return;
	memcpy(p, g->source, g->source_len + 1);
	free(k->text);
	m->text_bytes = m->text_bytes - had + g->source_len + 1;
	k->text = p;
	k->text_len = g->source_len;
	k->text_st = g->kernel_st;
	k->text_read_at = g->kernel_read_at;
}

/* Replaces the request's source by the bundled kernel's: its kept text
 * while a stat proves it current (issue 35: a 16 KiB source's open, fstat,
 * read, fstat and close cost ~40 us of a cold remote hit), else read. */
int kj__get_req_load_kernel(struct kj__get_req *g, struct kj__manifest *m, const char *kernels_dir, char *err,
			    size_t errlen)
{
	const struct kj__kernel *found = kj__manifest_find(m, g->kernel, g->backend);
	struct kj__kernel *k = found ? &m->k[found - m->k] : NULL;
	char *path = NULL;
	int r = 0;

	if (k == NULL) {
		snprintf(err, errlen, "no bundled %s kernel named '%s'; `kjit warm --backend %s` lists what there is",
			 kjit_backend_name(g->backend), g->kernel, kjit_backend_name(g->backend));
		return KJIT_ENOKERNEL;
	}
	path = kj__asprintf("%s/%s", kernels_dir, k->file);
	if (path == NULL)
		return KJIT_ENOMEM;
	if (!kept_text(k, path, g) &&
	    (r = kj__read_file_st(path, KJ_SOURCE_MAX, &g->source, &g->source_len, &g->kernel_st, &g->kernel_read_at)) == 0)
		keep_text(m, k, g);
	g->kernel_path = path;
	if (r < 0) {
		snprintf(err, errlen, "bundled kernel '%s': cannot read %s: %s", g->kernel, k->file, strerror(-r));
		return KJIT_EIO;
	}
	if (module_entries(g, m, k) < 0)
		return KJIT_ENOMEM;
	const char *base = strrchr(k->file, '/');
	g->source_name = kj__strdup(base ? base + 1 : k->file);
	/* The manifest's entries and options come first; a request may add options. */
	if (g->n_entries == 0 && k->n_entries > 0) {
		g->entries = calloc(k->n_entries, sizeof *g->entries);
		if (g->entries == NULL)
			return KJIT_ENOMEM;
		for (size_t i = 0; i < k->n_entries; i++, g->n_entries++)
			if ((g->entries[i] = kj__strdup(k->entries[i])) == NULL)
				return KJIT_ENOMEM;
	}
	if (k->n_options > 0) {
		char **o = calloc(k->n_options + g->n_options, sizeof *o);
		if (o == NULL)
			return KJIT_ENOMEM;
		for (size_t i = 0; i < k->n_options; i++)
			o[i] = kj__strdup(k->options[i]);
		for (size_t i = 0; i < g->n_options; i++)
			o[k->n_options + i] = g->options[i];
		free(g->options);
		g->options = o;
		g->n_options += k->n_options;
		for (size_t i = 0; i < k->n_options; i++)
			if (o[i] == NULL)
				return KJIT_ENOMEM;
	}
	return g->source_name ? 0 : KJIT_ENOMEM;
}
