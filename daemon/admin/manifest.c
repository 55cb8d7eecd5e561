/* manifest.c: the bundled kernel library's manifest, kernels_src/MANIFEST.
 * One kernel per line, whitespace separated:
 *     NAME BACKEND FILE ENTRY[,ENTRY...] [OPTION ...]
 * '#' starts a comment.  Every field that becomes part of a path or a
 * compiler argument is checked here, once, at load. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "kj_types.h"
#include "util.h"

#define MANIFEST_MAX (1u << 20) /* a manifest bigger than this is not ours */
#define FIELDS_MAX 64

static void kernel_free(struct kj__kernel *k)
{
	free(k->name);
	free(k->file);
	for (size_t i = 0; i < k->n_entries; i++)
		free(k->entries[i]);
	free(k->entries);
	for (size_t i = 0; i < k->n_options; i++)
		free(k->options[i]);
	free(k->options);
	free(k->text);
}

/* A relative path of safe components: "rms_norm.cu", "vulkan/rms_norm.comp". */
static int relpath_ok(const char *s)
{
	char buf[512];

	if (strlen(s) >= sizeof buf || s[0] == '/')
		return 0;
	strcpy(buf, s);
	for (char *save = NULL, *tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save))
		if (!kj__name_ok(tok))
			return 0;
	return strstr(s, "//") == NULL && s[strlen(s) - 1] != '/';
}

static int parse_line(char *line, struct kj__kernel *k, char *err, size_t errlen)
{
	char *f[FIELDS_MAX];
	size_t n = 0;

	for (char *save = NULL, *tok = strtok_r(line, " \t\r", &save); tok && n < FIELDS_MAX;
	     tok = strtok_r(NULL, " \t\r", &save))
		f[n++] = tok;
	if (n < 4) {
		snprintf(err, errlen, "expected NAME BACKEND FILE ENTRY[,ENTRY] [OPTION...]");
		return KJIT_EINVAL;
	}
	if (!kj__name_ok(f[0])) {
		snprintf(err, errlen, "bad kernel name '%s'", f[0]);
		return KJIT_EINVAL;
	}
	k->backend = kjit_backend_from_name(f[1]);
	if (k->backend == KJIT_BACKEND_NONE) {
		snprintf(err, errlen, "unknown backend '%s'", f[1]);
		return KJIT_EINVAL;
	}
	if (!relpath_ok(f[2])) {
		snprintf(err, errlen, "bad file '%s'", f[2]);
		return KJIT_EINVAL;
	}
	k->name = kj__strdup(f[0]);
	k->file = kj__strdup(f[2]);
	if (!k->name || !k->file)
		return KJIT_ENOMEM;
	size_t ne = 1;
	for (const char *p = f[3]; *p; p++)
		ne += *p == ',';
	k->entries = calloc(ne, sizeof *k->entries);
	if (k->entries == NULL)
		return KJIT_ENOMEM;
	for (char *save = NULL, *tok = strtok_r(f[3], ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!kj__name_ok(tok)) {
			snprintf(err, errlen, "bad entry point '%s'", tok);
			return KJIT_EINVAL;
		}
		if ((k->entries[k->n_entries++] = kj__strdup(tok)) == NULL)
			return KJIT_ENOMEM;
	}
	if (k->n_entries == 0) {
		snprintf(err, errlen, "no entry point (ENTRY[,ENTRY...] is empty)");
		return KJIT_EINVAL;
	}
	if (n > 4) {
		k->options = calloc(n - 4, sizeof *k->options);
		if (k->options == NULL)
			return KJIT_ENOMEM;
		for (size_t i = 4; i < n; i++)
			if ((k->options[k->n_options++] = kj__strdup(f[i])) == NULL)
				return KJIT_ENOMEM;
	}
	return 0;
}

int kj__manifest_load(const char *dir, struct kj__manifest *m, char *err, size_t errlen)
{
	char *path = kj__asprintf("%s/MANIFEST", dir);
	uint8_t *text = NULL;
	size_t len = 0, lineno = 0;
	int r;

	m->k = NULL;
	m->n = 0;
	m->text_bytes = 0;
	if (path == NULL)
		return KJIT_ENOMEM;
	r = kj__read_file(path, MANIFEST_MAX, &text, &len);
	if (r == -ENOENT) {
		r = 0;
		goto out;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		r = KJIT_EIO;
		goto out;
	}
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	m->k = calloc(lines, sizeof *m->k);
	if (m->k == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	for (char *save = NULL, *line = strtok_r((char *)text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char why[256] = "";
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		if (line[strspn(line, " \t\r")] == '\0')
			continue;
		r = parse_line(line, &m->k[m->n], why, sizeof why);
		m->n++;
		if (r < 0) {
			snprintf(err, errlen, "%s line %zu: %s", path, lineno, why);
			kj__manifest_free(m);
			goto out;
		}
	}
	r = 0;
out:
	free(text);
	free(path);
	return r;
}

const struct kj__kernel *kj__manifest_find(const struct kj__manifest *m, const char *name, int backend)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->k[i].backend == backend && strcmp(m->k[i].name, name) == 0)
			return &m->k[i];
	return NULL;
}

void kj__manifest_free(struct kj__manifest *m)
{
	for (size_t i = 0; m->k && i < m->n; i++)
		kernel_free(&m->k[i]);
	free(m->k);
	m->k = NULL;
	m->n = 0;
	m->text_bytes = 0;
}
