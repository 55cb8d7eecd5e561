/* hipcc.c: the "hipcc" family: the alternative HIP compiler, running the
 * hipcc driver (perl + clang) as a child process, for systems where hiprtc
 * is missing or misbehaves.
 *
 * A job runs as the spawned compilers' skeleton runs it (spawn-family.c,
 * driven by hipcc_family below): a private directory (the worker's, at
 * its fixed path: job->dir) holding the source, under the name the user
 * gave it and passed to hipcc relative to the directory (__FILE__ is that
 * name, the same on every node and run), and the job's headers and
 * nothing else; hipcc runs there through posix_spawn (spawn.c) with a
 * clean environment (PATH, HOME and TMPDIR pointing into the directory,
 * LC_ALL=C, HIP_PLATFORM=amd), its own process group (a job past
 * KJ_COMPILE_TIMEOUT_MS has the whole group killed) and stdout+stderr
 * captured as the log (capped at KJ_LOG_MAX, the directory's path removed).
 * The directory is emptied afterwards, whatever happened.  hipcc.pl
 * builds one shell command line: no definition reaches it (they go to a
 * header included first, defs.c) and every argument it gets is checked
 * against the shell-safe set before it runs.  What is hipcc's own here:
 * finding it, its version, its target and option checks, and cutting the
 * device ELF out of what it writes.
 *
 * On Debian `hipcc --genco` writes a clang offload bundle
 * ("__CLANG_OFFLOAD_BUNDLE__" with an empty host entry and one
 * "hipv4-amdgcn-amd-amdhsa--TARGET" entry): the device ELF is cut out of it
 * here (compint.h: kj__bundle_find), so both HIP families hand back a plain
 * AMDGPU ELF.  A plain ELF (other hipcc builds) is taken as is.
 *
 * hipcc, unlike hiprtc, reads the system's headers (<cstdint>, <iostream>):
 * the sandbox lets it read the system trees, and their identity is part of
 * the compiler's.
 *
 * Identity: "hipcc HIPVERSION; clang VERSION; device-libs HASH; system
 * headers HASH" from `hipcc --version` run once in init and treeid.c's
 * kj__system_headers_id; runtime version: MAJOR.MINOR of the HIP
 * version.  A target is admitted when kj__amd_target_parse accepts it
 * and the device libs carry oclc_isa_version_NNN.bc for its processor.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "util.h"

#define HIPCC_OUT "kjit-out.co"

static const char *const hipcc_paths[] = { "/usr/bin/hipcc", "/opt/rocm/bin/hipcc",
					   "/opt/rocm/hip/bin/hipcc" };

/* hipcc's own beside the rules shared with hiprtc: -fPIC as CMake passes
 * it (host code only), and -x hip, which kjit gives every source anyway
 * (not passed on). */
static const struct kj__opt_rule hipcc_only[] = {
	{ KJ_OPT_EXACT, "-fPIC", NULL },
	{ KJ_OPT_EXACT, "-fpic", NULL },
	{ KJ_OPT_EXACT, "-x hip", NULL },
};

static int hipcc_check_target(void *state, const char *target, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat sb;
	const char *dir = kj__amd_bitcode_dir();
	int r = kj__amd_target_ok(target, err, errlen);

	(void)state;
	if (r < 0)
		return r;
	size_t pl = strcspn(target, ":");
	if (dir == NULL || pl < 4 ||
	    (size_t)snprintf(path, sizeof path, "%s/oclc_isa_version_%.*s.bc", dir, (int)(pl - 3),
			     target + 3) >= sizeof path ||
	    stat(path, &sb) != 0) {
		snprintf(err, errlen, "target '%s': the installed device libraries have no '%.*s' (oclc_isa_version_%.*s.bc)",
			 target, (int)pl, target, (int)(pl > 3 ? pl - 3 : 0), target + (pl > 3 ? 3 : 0));
		return KJIT_ETARGET;
	}
	return 0;
}

/* Sets st->path: the first of hipcc_paths that runs. */
static int find_hipcc(struct kj__spawn_state *st)
{
	for (size_t i = 0; i < KJ_ARRAY_SIZE(hipcc_paths); i++)
		if (access(hipcc_paths[i], X_OK) == 0) {
			snprintf(st->path, sizeof st->path, "%s", hipcc_paths[i]);
			return 0;
		}
	return KJIT_EBACKEND;
}

/* Fills st->identity and st->runtime from `hipcc --version`. */
static int probe_version(struct kj__spawn_state *st, char *err, size_t errlen)
{
	char hipv[KJ_VERSION_STR_MAX] = "", clangv[KJ_VERSION_STR_MAX] = "";
	char dl[KJ_VERSION_STR_MAX], sys[32], *t = NULL;
	int maj = 0, min = 0;
	int r = kj__spawn_query(st, "hipcc", "--version", &t);

	if (r < 0) {
		if (r == KJIT_EIO)
			snprintf(err, errlen, "cannot make a directory under %s", st->tmp_root);
		else
			snprintf(err, errlen, "'%s --version' failed", st->path);
		return r;
	}
	r = KJIT_EBACKEND;
	const char *h = strstr(t, "HIP version: "), *c = strstr(t, "clang version ");
	if (h == NULL || sscanf(h + 13, "%63s", hipv) != 1 || sscanf(hipv, "%d.%d", &maj, &min) != 2) {
		snprintf(err, errlen, "'%s --version' names no HIP version", st->path);
		goto out;
	}
	if (c)
		sscanf(c + 14, "%63s", clangv);
	if ((r = kj__amd_devlibs_id(dl, sizeof dl)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the device libraries");
		goto out;
	}
	if ((r = kj__system_headers_id(NULL, sys, sizeof sys)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the system include trees (%s)", kjit_strerror(r));
		goto out;
	}
	if ((size_t)snprintf(st->identity, sizeof st->identity, "hipcc %s; clang %s; %s; system headers %s", hipv,
			     clangv[0] ? clangv : "unknown", dl, sys) >= sizeof st->identity) {
		snprintf(err, errlen, "hipcc's identity is too long");
		r = KJIT_EBACKEND;
		goto out;
	}
	snprintf(st->runtime, sizeof st->runtime, "%d.%d", maj, min);
	r = 0;
out:
	free(t);
	return r;
}

/* 1 if name ends in suffix (and is longer). */
static int ends_with(const char *name, const char *suffix)
{
	size_t l = strlen(name), s = strlen(suffix);
	return l > s && strcmp(name + l - s, suffix) == 0;
}

/* The source is written under the user's name, so that hipcc's messages
 * and __FILE__ name the user's file (at its place in the include tree:
 * "src/main.hip", so that its "../include/x.h" lands where it does on the
 * user's disk).  One that does not end in .hip or .cu (x.cpp, as HIP
 * programs are often named, or "source") needs `-x hip` before it,
 * whatever HIP_COMPILE_CXX_AS_HIP says, and so does any with the user's
 * own -x hip.  ("source.hip" only for a name kjit cannot write.) */
static int needs_hip(const struct kj__compile_job *job, const char *name)
{
	int as_hip = !ends_with(name, ".hip") && !ends_with(name, ".cu");

	for (size_t i = 0; i < job->n_options; i++) /* the user's own -x hip */
		as_hip |= strcmp(job->options[i], "-x hip") == 0;
	return as_hip;
}

/* Reads dir/HIPCC_OUT and takes the device ELF for the job's target out of it. */
static int take_object(const char *dir, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	const char *target = job->target;
	char path[PATH_MAX];
	uint8_t *data = NULL;
	size_t len = 0;
	const uint8_t *obj = NULL;
	size_t objlen = 0;
	int r;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, HIPCC_OUT) >= sizeof path)
		return kj__out_error(out, KJIT_EINTERNAL, "temporary path too long");
	if ((r = kj__read_file(path, KJ_OBJECT_MAX + (1u << 20), &data, &len)) < 0) {
		r = kj__out_error(out, r == -EFBIG ? KJIT_ETOOBIG : KJIT_EINTERNAL,
				  "hipcc succeeded but wrote no code object");
		goto out;
	}
	if (kj__elf_is(data, len, KJ_EM_AMDGPU, NULL)) {
		obj = data;
		objlen = len;
	} else if ((r = kj__bundle_find(data, len, target, &obj, &objlen)) < 0) {
		r = kj__out_error(out, KJIT_EINTERNAL, r == KJIT_ENOENT ?
				  "hipcc's offload bundle has no entry for the target" :
				  "hipcc wrote neither an ELF nor a clang offload bundle");
		goto out;
	}
	if (!kj__elf_is(obj, objlen, KJ_EM_AMDGPU, NULL) || objlen > KJ_OBJECT_MAX) {
		r = kj__out_error(out, KJIT_EINTERNAL, "hipcc's device object is not an AMDGPU ELF");
		goto out;
	}
	if ((out->data = malloc(objlen)) == NULL) {
		r = KJIT_ENOMEM;
		goto out;
	}
	memcpy(out->data, obj, objlen);
	out->len = objlen;
	r = 0;
out:
	free(data);
	return r;
}

/* The target, then the options: the rules shared with hiprtc and hipcc's own. */
static int hipcc_check(void *state, const struct kj__compile_job *job, char *err, size_t errlen)
{
	size_t n_rules;
	const struct kj__opt_rule *rules = kj__hip_option_rules(&n_rules);
	int r = hipcc_check_target(state, job->target, err, errlen);

	return r < 0 ? r : kj__options_check2("hipcc", rules, n_rules, hipcc_only, KJ_ARRAY_SIZE(hipcc_only), job, err,
					      errlen);
}

static const char *genco(const struct kj__compile_job *job)
{
	(void)job;
	return "--genco";
}

/* hipcc's names and steps for the spawned compilers' skeleton (spawn-family.c). */
static const struct kj__spawn_family hipcc_family = {
	.name = "hipcc",
	.not_found = "hipcc not found (/usr/bin/hipcc, /opt/rocm/bin/hipcc): install hipcc",
	.out_file = HIPCC_OUT,
	.fallback = "source.hip",
	.lang = "hip",
	.arch_opt = "--offload-arch=",
	.find = find_hipcc,
	.probe = probe_version,
	.check = hipcc_check,
	.needs_lang = needs_hip,
	.output_flag = genco,
	.take = take_object,
};

static int hipcc_init(void **state, char *err, size_t errlen)
{
	return kj__spawn_init(&hipcc_family, sizeof(struct kj__spawn_state), state, err, errlen);
}

static int hipcc_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	return kj__spawn_compile(&hipcc_family, state, job, out);
}

const struct kj__compiler_ops kj__compiler_hipcc = {
	.name = "hipcc",
	.backend = KJIT_BACKEND_HIP,
	.init = hipcc_init,
	.fini = kj__spawn_fini,
	.identity = kj__spawn_identity,
	.check_target = hipcc_check_target,
	.compile = hipcc_compile,
};
