/* compiler.c: the table of compiler families and the helpers they share
 * (compint.h): option whitelists, include checks, log capping and the
 * inspection of what compilers hand back (ELF headers, clang offload
 * bundles).  Everything here is pure: no compiler is loaded by this file.
 *
 * Invariant: a family never sees an option its whitelist does not name, and
 * never gets a log longer than KJ_LOG_MAX from these helpers.
 */
#include <dlfcn.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "lowered.h"
#ifndef KJ_NO_TESTCOMP
#include "testcomp.h"
#endif
#include "util.h"

/* Every compiler family, one row each: the one list of family names (the
 * daemon's options, its request parser, pool choice and the worker walls
 * all ask this table; tests/test-compilers.c fails if a family name is
 * spelled again elsewhere in compilers/ or daemon/). */
static const struct family {
	const struct kj__compiler_ops *ops;
	unsigned char is_default; /* the backend's family when kjitd is not told another */
	unsigned char config_only; /* not for a request: only `kjitd --hip-compiler` (tests) */
	const char *toolkit;       /* the vendor tree its worker reads (a link followed), or NULL */
} families[] = {
	{ &kj__compiler_hiprtc, 1, 0, "/opt/rocm" },
	{ &kj__compiler_hipcc, 0, 0, "/opt/rocm" },
	{ &kj__compiler_nvrtc, 1, 0, "/usr/local/cuda" },
	{ &kj__compiler_nvcc, 0, 0, "/usr/local/cuda" },
	{ &kj__compiler_shaderc, 1, 0, NULL },
#ifndef KJ_NO_TESTCOMP /* the tests' fake compiler: not in the installed kjitd (Makefile) */
	{ &kj__compiler_test, 0, 1, NULL },
#endif
};

static const struct family *family_named(const char *name)
{
	for (size_t i = 0; name && i < KJ_ARRAY_SIZE(families); i++)
		if (strcmp(families[i].ops->name, name) == 0)
			return &families[i];
	return NULL;
}

const struct kj__compiler_ops *kj__compiler_find(const char *name)
{
	const struct family *f = family_named(name);
	return f ? f->ops : NULL;
}

const struct kj__compiler_ops *kj__family_at(size_t i)
{
	return i < KJ_ARRAY_SIZE(families) ? families[i].ops : NULL;
}

const char *kj__family_default(int backend)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(families); i++)
		if (families[i].ops->backend == backend && families[i].is_default)
			return families[i].ops->name;
	return NULL;
}

const struct kj__compiler_ops *kj__family_choose(const char *name, int backend, int configured)
{
	const struct family *f = family_named(name);

	if (f == NULL || f->ops->backend != backend || (f->config_only && !configured))
		return NULL;
	return f->ops;
}

void kj__family_choices(int backend, const char *sep, char *out, size_t outlen)
{
	size_t k = 0, n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < KJ_ARRAY_SIZE(families); i++) {
		if (families[i].ops->backend != backend || families[i].config_only)
			continue;
		int w = snprintf(out + k, outlen - k, "%s%s", n++ ? sep : "", families[i].ops->name);
		if (w < 0 || (size_t)w >= outlen - k)
			return; /* cut short: still a string */
		k += (size_t)w;
	}
}

const char *kj__family_toolkit(const char *name)
{
	const struct family *f = family_named(name);
	return f ? f->toolkit : NULL;
}

void kj__compile_out_free(struct kj__compile_out *out)
{
	if (out == NULL)
		return;
	free(out->data);
	free(out->log);
	free(out->error);
	free(out->lowered);
	memset(out, 0, sizeof *out);
}

int kj__out_error(struct kj__compile_out *out, int code, const char *msg)
{
	free(out->error);
	out->error = kj__strdup(msg);
	return code;
}

/* 1 if s[0..n) is a C identifier. */
static int ident_ok(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

/* 1 if v is one of the '|'-separated words of list. */
static int choice_ok(const char *list, const char *v)
{
	size_t vl = strlen(v);
	const char *p = list;

	while (*p) {
		const char *e = strchr(p, '|');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == vl && memcmp(p, v, l) == 0)
			return 1;
		if (e == NULL)
			break;
		p = e + 1;
	}
	return 0;
}

/* 1 if s[0..n) is the parameter list of a function-like macro as gcc and
 * clang take it after the name in -D ("(buf,i)", "(a, ...)", "()"). */
static int params_ok(const char *s, size_t n)
{
	size_t i = 1;

	if (n < 2 || s[0] != '(' || s[n - 1] != ')')
		return 0;
	if (n == 2)
		return 1;
	for (;;) {
		while (s[i] == ' ')
			i++;
		size_t b = i;
		if (n - 1 - i >= 3 && memcmp(s + i, "...", 3) == 0) {
			for (i += 3; s[i] == ' '; i++)
				;
			return i == n - 1;
		}
		while (i < n - 1 && (isalnum((unsigned char)s[i]) || s[i] == '_'))
			i++;
		if (!ident_ok(s + b, i - b))
			return 0;
		while (s[i] == ' ')
			i++;
		if (i == n - 1)
			return 1;
		if (s[i++] != ',')
			return 0;
	}
}

/* 1 if the n bytes at item match pat (n bytes): a word; one ending in '#'
 * takes 1..6 decimal digits after the rest; one ending in '*' a tail of
 * 2..KJ_WARN_NAME_MAX bytes of [a-z0-9_+=.-] that starts with a lowercase
 * letter (-Wno-*: never -Wl, -Wa, -Wp, whose values go elsewhere). */
static int item_ok(const char *pat, size_t pl, const char *item, size_t n)
{
	char last = pl ? pat[pl - 1] : 0;

	if (last != '#' && last != '*')
		return pl == n && memcmp(pat, item, n) == 0;
	if (n <= pl - 1 || memcmp(pat, item, pl - 1) != 0)
		return 0;
	const char *t = item + pl - 1;
	size_t tl = n - (pl - 1);
	for (size_t i = 0; i < tl; i++)
		if (!(last == '#' ? isdigit((unsigned char)t[i]) : islower((unsigned char)t[i]) ||
		      isdigit((unsigned char)t[i]) || strchr("_+=.-", t[i]) != NULL))
			return 0;
	return last == '#' ? tl <= 6 : tl >= 2 && tl <= KJ_WARN_NAME_MAX && islower((unsigned char)t[0]);
}

/* 1 if v is a comma-separated list of items, each matching a pattern of
 * the '|'-separated list (item_ok). */
static int list_ok(const char *list, const char *v)
{
	for (;;) {
		size_t n = strcspn(v, ","), ok = 0;
		for (const char *p = list; !ok && *p;) {
			size_t pl = strcspn(p, "|");
			ok = item_ok(p, pl, v, n);
			p += pl + (p[pl] == '|');
		}
		if (!ok)
			return 0;
		if (v[n] == '\0')
			return 1;
		v += n + 1;
	}
}

/* 1 if opt matches rule r. */
static int rule_match(const struct kj__opt_rule *r, const char *opt)
{
	size_t tl = strlen(r->text);

	switch (r->kind) {
	case KJ_OPT_EXACT:
		return strcmp(opt, r->text) == 0;
	case KJ_OPT_MACRO: {
		if (strncmp(opt, r->text, tl) != 0)
			return 0;
		const char *name = opt + tl, *eq = strchr(name, '=');
		size_t nl = eq ? (size_t)(eq - name) : strlen(name), il = strcspn(name, "(=");
		/* a function-like macro, -D'buffer_ld1(buf,i)=buf[i]' (not -U) */
		if (il < nl && (strcmp(r->text, "-D") != 0 || !params_ok(name + il, nl - il)))
			return 0;
		if (!ident_ok(name, il))
			return 0;
		if (eq == NULL)
			return 1;
		if (strcmp(r->text, "-D") != 0)
			return 0;
		for (const char *c = eq + 1; *c; c++) /* no newline or control bytes */
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return 0;
		return 1;
	}
	case KJ_OPT_CHOICE:
		return strncmp(opt, r->text, tl) == 0 && choice_ok(r->arg, opt + tl);
	case KJ_OPT_LIST:
		return strncmp(opt, r->text, tl) == 0 && list_ok(r->arg, opt + tl);
	case KJ_OPT_WARN: {
		if (strncmp(opt, r->text, tl) != 0)
			return 0;
		const char *w = opt + tl;
		size_t wl = strlen(w);
		return wl > 0 && wl <= KJ_WARN_NAME_MAX && w[0] >= 'a' && w[0] <= 'z' &&
		       strspn(w, "abcdefghijklmnopqrstuvwxyz0123456789_+=-") == wl;
	}
	case KJ_OPT_UINT: {
		if (strncmp(opt, r->text, tl) != 0) /* first: opt may be shorter than the prefix */
			return 0;
		const char *d = opt + tl;
		size_t dl = strlen(d);
		if (dl == 0 || dl > 6)
			return 0;
		return strspn(d, "0123456789") == dl;
	}
	case KJ_OPT_TEXT: {
		if (strncmp(opt, r->text, tl) != 0)
			return 0;
		const char *t = opt + tl;
		size_t l = strlen(t);
		if (l == 0 || l > KJ_NAME_MAX)
			return 0;
		for (const char *c = t; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return 0;
		return 1;
	}
	}
	return 0;
}

int kj__identity_put(const char *identity, const char *runtime, char *id, size_t idlen, char *rv, size_t rvlen)
{
	if ((size_t)snprintf(id, idlen, "%s", identity) >= idlen || (size_t)snprintf(rv, rvlen, "%s", runtime) >= rvlen)
		return KJIT_ETOOBIG;
	return 0;
}

int kj__lowered_add(struct kj__compile_out *out, const char *expr, const char *lowered)
{
	int r = kj__lowered_append(&out->lowered, expr, lowered);

	if (r < 0)
		kj__out_error(out, r, r == KJIT_ENOMEM  ? "out of memory"
				      : r == KJIT_ETOOBIG ? "the lowered names of the --name-expression options are over "
							   "the size cap"
							 : "a lowered name holds a tab or newline");
	return r;
}

/* 1 if s holds a control byte (a newline among them) or DEL. */
static int has_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int kj__options_check(const char *family, const struct kj__opt_rule *rules, size_t n,
		      const struct kj__compile_job *job, char *err, size_t errlen)
{
	return kj__options_check2(family, rules, n, NULL, 0, job, err, errlen);
}

int kj__options_check2(const char *family, const struct kj__opt_rule *rules, size_t n,
		       const struct kj__opt_rule *more, size_t n_more, const struct kj__compile_job *job, char *err,
		       size_t errlen)
{
	if (job->n_options > KJ_OPTIONS_MAX_COUNT) {
		snprintf(err, errlen, "%zu options is more than the %d allowed", job->n_options,
			 KJ_OPTIONS_MAX_COUNT);
		return KJIT_EINVAL;
	}
	for (size_t i = 0; i < job->n_options; i++) {
		const char *o = job->options[i];
		int ok = 0;
		if (o == NULL || strlen(o) > KJ_OPTION_MAX) {
			snprintf(err, errlen, "option %zu is missing or too long", i);
			return KJIT_EINVAL;
		}
		for (size_t j = 0; j < n && !ok; j++)
			ok = rule_match(&rules[j], o);
		for (size_t j = 0; j < n_more && !ok; j++)
			ok = rule_match(&more[j], o);
		if (!ok && strncmp(o, "-D", 2) == 0 && strchr(o, '=') && has_ctrl(strchr(o, '='))) {
			size_t nl = strcspn(o + 2, "=");
			snprintf(err, errlen, "the value of -D%.*s holds a newline or another control byte: a "
				 "definition must be one line of printable text", (int)(nl > 64 ? 64 : nl), o + 2);
			return KJIT_EINVAL;
		}
		if (!ok) {
			snprintf(err, errlen, "option '%.80s' is not allowed for %s (see docs/compilers.md)",
				 o, family);
			return KJIT_EINVAL;
		}
	}
	return 0;
}

/* The tree path of the quoted name (n bytes) included from the file at
 * tree path from, ".." resolved against from's folder, into out.  0, or -1
 * when it climbs above the root or does not fit. */
int kj__tree_join(const char *from, const char *name, size_t n, char *out, size_t outlen)
{
	const char *slash = strrchr(from, '/');
	size_t k = slash ? (size_t)(slash - from) : 0;

	if (k >= outlen)
		return -1;
	memcpy(out, from, k);
	for (size_t i = 0; i < n;) {
		size_t l = 0;
		while (i + l < n && name[i + l] != '/')
			l++;
		if (l == 2 && name[i] == '.' && name[i + 1] == '.') {
			if (k == 0)
				return -1;
			while (k > 0 && out[k - 1] != '/')
				k--;
			k -= k > 0;
		} else if (l > 0 && !(l == 1 && name[i] == '.')) {
			if (k + l + 2 > outlen)
				return -1;
			if (k > 0)
				out[k++] = '/';
			memcpy(out + k, name + i, l);
			k += l;
		}
		i += l + 1;
	}
	out[k] = '\0';
	return 0;
}

/* 1 if the quoted name (n bytes) included from the file at tree path file
 * lands, its ".." resolved against file's folder, on a file of the job
 * (the source or a header) without climbing above the job's root.  The
 * compiler then finds it there first and never looks anywhere else. */
static int lands_in_job(const struct kj__compile_job *job, const char *file, const char *name, size_t n)
{
	char out[2 * KJ_NAME_MAX + 2];

	if (n > KJ_NAME_MAX || kj__tree_join(file, name, n, out, sizeof out) < 0)
		return 0; /* above the job's root */
	if (strcmp(out, job->source_name) == 0)
		return 1;
	for (size_t i = 0; i < job->n_headers; i++)
		if (job->headers[i].name && strcmp(out, job->headers[i].name) == 0)
			return 1;
	return 0;
}

/* Scans text for #include lines whose path is absolute, or holds ".."
 * that does not land on a file of the job from file's place.  0, or
 * KJIT_EINCLUDE naming the include and the file it is in. */
static int scan_includes(const struct kj__compile_job *job, const char *file, const uint8_t *t, size_t n,
			 char *err, size_t errlen)
{
	size_t i = 0;

	while (i < n) {
		size_t s = i;
		while (i < n && t[i] != '\n')
			i++;
		size_t e = i++;
		while (s < e && (t[s] == ' ' || t[s] == '\t'))
			s++;
		if (s >= e || t[s] != '#')
			continue;
		s++;
		while (s < e && (t[s] == ' ' || t[s] == '\t'))
			s++;
		if (e - s < 7 || memcmp(t + s, "include", 7) != 0)
			continue;
		s += 7;
		while (s < e && (t[s] == ' ' || t[s] == '\t'))
			s++;
		if (s >= e || (t[s] != '"' && t[s] != '<'))
			continue;
		char close = t[s] == '"' ? '"' : '>';
		size_t ps = ++s;
		while (s < e && t[s] != close)
			s++;
		size_t pl = s - ps;
		int bad = pl > 0 && t[ps] == '/', dots = 0;
		for (size_t k = ps; k + 1 < s && !dots; k++)
			dots = t[k] == '.' && t[k + 1] == '.';
		if (dots && !bad)
			bad = close != '"' || !lands_in_job(job, file, (const char *)t + ps, pl);
		if (bad) {
			snprintf(err, errlen, "%s: #include \"%.*s\" leaves the allowed include directories",
				 file, (int)(pl > 120 ? 120 : pl), (const char *)t + ps);
			return KJIT_EINCLUDE;
		}
	}
	return 0;
}

int kj__includes_check(const struct kj__compile_job *job, char *err, size_t errlen)
{
	int r;

	if (!kj__path_ok(job->source_name)) {
		snprintf(err, errlen, "source name '%.120s' is not a relative path of plain names", job->source_name);
		return KJIT_EINCLUDE;
	}
	r = scan_includes(job, job->source_name, job->source, job->source_len, err, errlen);

	for (size_t i = 0; r == 0 && i < job->n_headers; i++) {
		const struct kj__header *h = &job->headers[i];
		if (h->name == NULL || !kj__path_ok(h->name)) {
			snprintf(err, errlen, "header name '%.120s' is not a relative path of plain names",
				 h->name ? h->name : "");
			return KJIT_EINCLUDE;
		}
		r = scan_includes(job, h->name, h->data, h->len, err, errlen);
	}
	/* a pre-included file (-include, issue 30) is named as a header of the
	 * job or of the toolchain is: a relative path of plain names */
	for (size_t i = 0; r == 0 && i < job->n_options; i++) {
		const char *pre = kj__opt_pre_include(job->options[i]);
		if (pre && !kj__path_ok(pre)) {
			snprintf(err, errlen, "pre-included '%.120s' is not a relative path of plain names", pre);
			return KJIT_EINCLUDE;
		}
	}
	return r;
}

char *kj__log_dup_of(const char *p, size_t n, size_t total)
{
	static const char mark[] = "\n[log truncated: %zu bytes omitted]\n";
	char tail[96];

	if (p == NULL || n == 0)
		return NULL;
	if (total < n)
		total = n;
	if (total < KJ_LOG_MAX)
		return kj__strndup(p, n);
	size_t keep = KJ_LOG_MAX - sizeof tail;
	if (keep > n)
		keep = n;
	int tl = snprintf(tail, sizeof tail, mark, total - keep);
	char *s = malloc(keep + (size_t)tl + 1);
	if (s == NULL)
		return NULL;
	memcpy(s, p, keep);
	memcpy(s + keep, tail, (size_t)tl + 1);
	return s;
}

char *kj__log_scrub(const char *log, const char *marker, const char *blind, const char *name)
{
	struct kj__buf b = { 0 };
	const char *p = log, *m;
	size_t ml = strlen(marker), bl = strlen(blind);
	int r = 0;

	if (log == NULL)
		return NULL;
	while (r == 0 && (m = strstr(p, marker)) != NULL) {
		const char *t = m; /* back to the start of the path token */
		while (t > p && t[-1] != ' ' && t[-1] != '\n' && t[-1] != '\t' && t[-1] != '"' && t[-1] != '\'')
			t--;
		r = kj__buf_append(&b, p, (size_t)(t - p));
		/* past "DIR-XXXX/" and the one directory under it ("input/") */
		p = m + ml;
		for (int k = 0; k < 2; k++) {
			size_t n = strcspn(p, "/ \n\t\"':");
			if (p[n] == '/')
				p += n + 1;
		}
		if (r == 0 && strncmp(p, blind, bl) == 0) {
			r = kj__buf_append(&b, name, strlen(name));
			p += bl;
		}
	}
	if (r == 0)
		r = kj__buf_append(&b, p, strlen(p) + 1);
	if (r < 0) {
		kj__buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

void kj__log_reason(const char *log, const char *fallback, char *out, size_t outlen)
{
	const char *p = log;

	while (p && *p) {
		size_t n = strcspn(p, "\n");
		const char *e = memmem(p, n, "error", 5);
		if (e == NULL)
			e = memmem(p, n, "Error", 5);
		/* "1 error detected in the compilation of" is a summary, not the reason */
		if (e && !(n > 0 && p[0] >= '0' && p[0] <= '9' && memmem(p, n, "detected", 8))) {
			while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' '))
				n--;
			snprintf(out, outlen, "%.*s", (int)(n < 200 ? n : 200), p);
			for (char *q = out; *q; q++)
				if ((unsigned char)*q < 0x20)
					*q = ' ';
			return;
		}
		p += n + (p[n] == '\n');
	}
	snprintf(out, outlen, "%s", fallback);
}

char *kj__log_dup(const char *p, size_t n)
{
	return kj__log_dup_of(p, n, n);
}

int kj__cstr_dup(const uint8_t *p, size_t n, char **out)
{
	*out = NULL;
	if (n > 0 && memchr(p, '\0', n) != NULL)
		return KJIT_EINVAL;
	*out = kj__strndup(n ? (const char *)p : "", n);
	return *out ? 0 : KJIT_ENOMEM;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

int kj__elf_is(const uint8_t *p, size_t n, unsigned machine, uint32_t *flags)
{
	/* e_ident[16], e_type u16, e_machine u16 @18, e_version u32, e_entry,
	 * e_phoff, e_shoff u64, e_flags u32 @48 (ELF64). */
	if (p == NULL || n < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 || p[5] != 1)
		return 0;
	if (le16(p + 18) != machine)
		return 0;
	if (flags)
		*flags = le32(p + 48);
	return 1;
}

#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"

int kj__bundle_find(const uint8_t *p, size_t n, const char *target, const uint8_t **obj,
		    size_t *objlen)
{
	/* Layout (clang/lib/Driver/OffloadBundler.cpp): magic[24], u64 count,
	 * then count x {u64 offset, u64 size, u64 triple length, triple}. */
	size_t ml = sizeof BUNDLE_MAGIC - 1, off = ml + 8;
	char want4[KJ_TARGET_MAX + 32], want[KJ_TARGET_MAX + 32];

	snprintf(want4, sizeof want4, "hipv4-amdgcn-amd-amdhsa--%s", target);
	snprintf(want, sizeof want, "hip-amdgcn-amd-amdhsa-%s", target);
	if (n < off || memcmp(p, BUNDLE_MAGIC, ml) != 0)
		return KJIT_ECORRUPT;
	uint64_t count = le64(p + ml);
	if (count > 1024)
		return KJIT_ECORRUPT;
	for (uint64_t i = 0; i < count; i++) {
		if (n - off < 24)
			return KJIT_ECORRUPT;
		uint64_t eo = le64(p + off), es = le64(p + off + 8), tl = le64(p + off + 16);
		off += 24;
		if (tl > n - off || eo > n || es > n - eo)
			return KJIT_ECORRUPT;
		const char *t = (const char *)p + off;
		off += tl;
		if ((tl == strlen(want4) && memcmp(t, want4, tl) == 0) ||
		    (tl == strlen(want) && memcmp(t, want, tl) == 0)) {
			*obj = p + eo;
			*objlen = es;
			return 0;
		}
	}
	return KJIT_ENOENT;
}

void *kj__dlopen_compiler(const char *name, int flags)
{
	void *h = dlopen(name, flags);

	if (h && dlsym(h, "kjit_dropin_version") != NULL) {
		dlclose(h);
		h = NULL;
	}
	return h;
}
