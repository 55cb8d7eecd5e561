/* config.c: kjitd's configuration file, SIGHUP, and `kjit config`.
 *
 * The file is lines of `name = value` (or a bare `name` for a switch, or
 * `name = yes|no`), named as the long options of options.c's table, so a
 * new option row is a setting with no edit here; `#` starts a comment.
 * Each line is applied as `--name=value` by options.c's own parser, with
 * its origin "FILE:LINE" noted, after the command line has said which rows
 * it gives: those lines are ignored (the command line wins).  Which file:
 * --config FILE, else $KJITD_CONFIG, else SYSCONFDIR/kjit/kjitd.conf for
 * --system and $XDG_CONFIG_HOME/kjit/kjitd.conf (~/.config) for a per-user
 * kjitd; a default file that does not exist is no error, a named one is.
 *
 * SIGHUP reopens the log (logrotate's postrotate, the unit's ExecReload)
 * and rereads the file: --log-level takes effect at once; any other setting
 * whose value changed is logged as taking effect on restart (sockets,
 * cache and workers are not rebuilt under running clients).  A file that
 * no longer parses is logged and the running settings kept.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon-int.h" /* and daemon.h */
#include "util.h"

#define CONFIG_LINE_MAX 4096

/* The file to read, malloc'd; *named 1 if it was asked for by name. */
static char *config_path(const char *path, int system_mode, int *named)
{
	const char *env = getenv("KJITD_CONFIG");

	*named = 1;
	if (path)
		return kj__strdup(path);
	if (env && *env)
		return kj__strdup(env);
	*named = 0;
	if (system_mode)
		return kj__asprintf("%s/kjit/kjitd.conf", KJIT_SYSCONFDIR);
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	if (xdg && *xdg == '/')
		return kj__asprintf("%s/kjit/kjitd.conf", xdg);
	return home && *home == '/' ? kj__asprintf("%s/.config/kjit/kjitd.conf", home) : NULL;
}

/* The row named name, or -1. */
static int row_of(const char *name)
{
	int shown;
	const char *n;

	for (size_t i = 0; (n = kj__option_at(i, &shown)) != NULL; i++)
		if (shown && strcmp(n, name) == 0 && strcmp(n, "config") != 0 && strcmp(n, "version") != 0)
			return (int)i;
	return -1;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* One line of the file applied to cfg; -1 to go on, else an exit status. */
static int apply_line(struct kj__config *cfg, char *line, const char *where, const unsigned char *skip)
{
	char *hash = strchr(line, '#'), *eq, *name, *value = NULL, arg[CONFIG_LINE_MAX + 8];

	if (hash)
		*hash = '\0';
	name = trim(line);
	if (*name == '\0')
		return -1;
	if ((eq = strchr(name, '=')) != NULL) {
		*eq = '\0';
		value = trim(eq + 1);
		name = trim(name);
	}
	int row = row_of(name);
	if (row < 0) {
		fprintf(stderr, "kjitd: %s: unknown setting '%s' (settings are kjitd's long options, see kjitd(8))\n",
			where, name);
		return 2;
	}
	if (kj__option_has_arg((size_t)row)) {
		if (value == NULL || *value == '\0') {
			fprintf(stderr, "kjitd: %s: '%s' needs a value: %s = VALUE\n", where, name, name);
			return 2;
		}
		snprintf(arg, sizeof arg, "--%s=%s", name, value);
	} else {
		if (value && strcmp(value, "no") == 0)
			return -1;
		if (value && *value && strcmp(value, "yes") != 0) {
			fprintf(stderr, "kjitd: %s: '%s' is a switch: %s = yes or %s = no\n", where, name, name, name);
			return 2;
		}
		snprintf(arg, sizeof arg, "--%s", name);
	}
	char *argv[] = { (char *)"kjitd", arg, NULL };
	int rc = kj__options_apply(2, argv, cfg, where, skip, NULL);
	if (rc >= 0)
		fprintf(stderr, "kjitd: (in %s)\n", where);
	return rc;
}

int kj__config_file_read(struct kj__config *cfg, const char *path_opt, int system_mode, const unsigned char *skip)
{
	int named, rc = -1;
	char *path = config_path(path_opt, system_mode, &named);
	char line[CONFIG_LINE_MAX], where[CONFIG_LINE_MAX + 32];

	if (path == NULL)
		return -1;
	FILE *f = fopen(path, "re");
	if (f == NULL) {
		if (!named && errno == ENOENT) {
			free(path);
			return -1;
		}
		fprintf(stderr, "kjitd: cannot read the configuration %s: %s\n", path, strerror(errno));
		free(path);
		return 2;
	}
	for (unsigned n = 1; rc < 0 && fgets(line, sizeof line, f) != NULL; n++) {
		snprintf(where, sizeof where, "%s:%u", path, n);
		if (strchr(line, '\n') == NULL && !feof(f)) {
			fprintf(stderr, "kjitd: %s: line longer than %d bytes\n", where, CONFIG_LINE_MAX - 2);
			rc = 2;
			break;
		}
		rc = apply_line(cfg, line, where, skip);
	}
	if (rc < 0 && ferror(f)) {
		fprintf(stderr, "kjitd: cannot read the configuration %s: %s\n", path, strerror(errno));
		rc = 1;
	}
	fclose(f);
	free(cfg->config_path);
	cfg->config_path = path;
	return rc;
}

void kj__config_reload(struct kj__daemon *d)
{
	struct kj__config n = { 0 };
	int shown;
	const char *name;

	kj__log_reopen(d);
	/* The parser's complaints go to stderr: the log or the journal. */
	int rc = kj__options_parse(d->top->argc, d->top->argv, &n);
	if (rc >= 0) {
		kj__log(d, "SIGHUP: the configuration %s does not parse (said above): keeping the running settings",
			d->cfg.config_path ? d->cfg.config_path : "(none)");
		kj__options_free(&n);
		return;
	}
	for (size_t i = 0; (name = kj__option_at(i, &shown)) != NULL; i++) {
		const char *a = d->cfg.given[i], *b = n.given[i];
		if ((a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0))
			continue;
		if (strcmp(name, "log-level") == 0) {
			d->cfg.log_level = n.log_level;
			kj__log(d, "SIGHUP: log-level is now %s", b ? b : "info (the default)");
			continue;
		}
		kj__log(d, "SIGHUP: %s changed to %s (%s): it takes effect when kjitd restarts", name,
			b ? b : "its default", n.origin[i] ? n.origin[i] : "no longer set");
	}
	/* What `kjit config` shows: log-level's new origin; the rest run as before. */
	for (size_t i = 0; (name = kj__option_at(i, &shown)) != NULL; i++) {
		if (strcmp(name, "log-level") != 0)
			continue;
		free(d->cfg.given[i]);
		free(d->cfg.origin[i]);
		d->cfg.given[i] = n.given[i];
		d->cfg.origin[i] = n.origin[i];
		n.given[i] = n.origin[i] = NULL;
	}
	kj__log(d, "SIGHUP: configuration reread from %s", n.config_path ? n.config_path : "(no file)");
	kj__options_free(&n);
}

/* A JSON string of s onto b. */
static void json_str(struct kj__buf *b, const char *s)
{
	kj__buf_printf(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			kj__buf_printf(b, "\\%c", *p);
		else if (*p < 0x20)
			kj__buf_printf(b, "\\u%04x", *p);
		else
			kj__buf_printf(b, "%c", *p);
	}
	kj__buf_printf(b, "\"");
}

int kj__admin_config(struct kj__daemon *d, struct kj__buf *text, struct kj__buf *json)
{
	int shown;
	const char *name;

	kj__buf_printf(text, "configuration file: %s\n", d->cfg.config_path ? d->cfg.config_path : "(none)");
	kj__buf_printf(json, "{\"file\":");
	json_str(json, d->cfg.config_path ? d->cfg.config_path : "");
	kj__buf_printf(json, ",\"settings\":[");
	int first = 1;
	for (size_t i = 0; (name = kj__option_at(i, &shown)) != NULL; i++) {
		if (!shown || strcmp(name, "config") == 0 || strcmp(name, "version") == 0)
			continue;
		const char *v = d->cfg.given[i], *o = d->cfg.origin[i] ? d->cfg.origin[i] : "default";
		/* A fleet URL may carry a password. */
		if (v && strcmp(name, "remote") == 0)
			v = "(set)";
		kj__buf_printf(text, "%-26s %-28s %s\n", name, v ? v : "-", o);
		kj__buf_printf(json, "%s{\"name\":", first ? "" : ",");
		json_str(json, name);
		kj__buf_printf(json, ",\"value\":");
		if (v)
			json_str(json, v);
		else
			kj__buf_printf(json, "null");
		kj__buf_printf(json, ",\"origin\":");
		json_str(json, o);
		kj__buf_printf(json, "}");
		first = 0;
	}
	kj__buf_printf(json, "],\"effective\":{\"socket\":");
	json_str(json, d->cfg.socket_path);
	kj__buf_printf(json, ",\"cache_dir\":");
	json_str(json, d->cfg.cache_dir);
	kj__buf_printf(json, ",\"max_size\":%llu,\"jobs\":%u}}", (unsigned long long)d->cfg.max_size, d->cfg.jobs);
	kj__buf_printf(text, "in effect: socket %s, cache %s, max size %llu, %u workers per compiler\n",
		       d->cfg.socket_path, d->cfg.cache_dir, (unsigned long long)d->cfg.max_size, d->cfg.jobs);
	return 0;
}

/* (the top room's handles, started by main.c) */
void kj__top_stop(struct kj__daemon *d)
{
	uv_timer_stop(&d->top->flush_timer);
	uv_close((uv_handle_t *)&d->top->flush_timer, NULL);
	uv_close((uv_handle_t *)&d->top->sigterm, NULL);
	uv_close((uv_handle_t *)&d->top->sigint, NULL);
}
