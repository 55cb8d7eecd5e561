/* shaderc.c: the "shaderc" family: GLSL or HLSL compute shaders to SPIR-V
 * with Google's shaderc, linked statically (Debian's libshaderc.so.1 has
 * undefined glslang symbols; the Makefile's SHADERC_LIBS names the static
 * libraries in link order).
 *
 * One shaderc_compiler per worker, made in init and reused.  Per job:
 * target env from the target (vulkan1.0, glslc's default, |1.1|1.2|1.3); language HLSL when the
 * source name ends in ".hlsl" or an option "-x hlsl" says so, else GLSL;
 * entry point entries[0] (default "main"); -DNAME[=VAL] become macro
 * definitions; glslc's -O0/-O/-Os, -g, -w, -Werror and -fhlsl-*, -fauto-*,
 * -finvert-y, -fnan-clamp flags, --target-spv=spv1.N and the binding
 * bases (-fubo-binding-base N and its kin) set the matching shaderc
 * options; a function-like -D'ld(b,i)=b[i]' gives its name with the
 * parameter list, as shaderc takes it (glslc's
 * -fentry-point=NAME is the client's: it becomes entries[0]).  #include resolves only to the job's headers, through the
 * include callbacks: a relative include is looked up next to the including
 * header first, then by its plain name; nothing is read from disk.
 *
 * Identity: shaderc has no version call, so the identity names what makes
 * the bytes: "shaderc; glslang MAJ.MIN.PATCH; SPIRV-Tools vYYYY.N; SPIR-V
 * 1.N" -- glslang's version from its build_info.h (the static library we
 * link was built from that header), SPIRV-Tools' from
 * spvSoftwareVersionString() in the linked code, and the SPIR-V version
 * from shaderc_get_spv_version().  Runtime version: "1.N", the SPIR-V
 * version.  The object is SPIR-V words (magic 0x07230203).  HLSL is
 * always emitted as SPIR-V 1.3 (see shaderc_compile for the glslang bug).
 */
#include <glslang/build_info.h>
#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compint.h"
#include "kj_types.h"
#include "kj_limits.h"
#include "targetid.h"
#include "util.h"

struct shaderc_state {
	shaderc_compiler_t compiler;
	char identity[KJ_VERSION_STR_MAX * 2];
	char runtime[KJ_VERSION_STR_MAX];
};

/* What the include callbacks see of the job. */
struct include_ctx {
	const struct kj__compile_job *job;
};

/* Options a shader may carry.  Anything else is refused. */
static const struct kj__opt_rule shader_rules[] = {
	{ KJ_OPT_MACRO, "-D", NULL },
	{ KJ_OPT_EXACT, "-O0", NULL },
	{ KJ_OPT_EXACT, "-O", NULL },
	{ KJ_OPT_EXACT, "-Os", NULL },
	{ KJ_OPT_EXACT, "-g", NULL },
	{ KJ_OPT_EXACT, "-w", NULL },
	{ KJ_OPT_EXACT, "-Werror", NULL },
	{ KJ_OPT_CHOICE, "-x ", "glsl|hlsl" },
	{ KJ_OPT_CHOICE, "-x", "glsl|hlsl" },
	{ KJ_OPT_EXACT, "-fhlsl-16bit-types", NULL },
	{ KJ_OPT_EXACT, "-fhlsl-iomap", NULL },
	{ KJ_OPT_EXACT, "-fhlsl-offsets", NULL },
	{ KJ_OPT_EXACT, "-fhlsl-functionality1", NULL },
	{ KJ_OPT_EXACT, "-fhlsl_functionality1", NULL },
	{ KJ_OPT_EXACT, "-fauto-bind-uniforms", NULL },
	{ KJ_OPT_EXACT, "-fauto-map-locations", NULL },
	{ KJ_OPT_EXACT, "-fauto-combined-image-sampler", NULL },
	{ KJ_OPT_EXACT, "-finvert-y", NULL },
	{ KJ_OPT_EXACT, "-fnan-clamp", NULL },
	{ KJ_OPT_CHOICE, "-std=", "430|440|450|460|430core|440core|450core|460core|310es|320es" },
	{ KJ_OPT_CHOICE, "--target-spv=", "spv1.0|spv1.1|spv1.2|spv1.3|spv1.4|spv1.5|spv1.6" },
	/* glslc's "-fubo-binding-base [comp] N", as the client spells it */
	{ KJ_OPT_UINT, "-fimage-binding-base ", NULL },
	{ KJ_OPT_UINT, "-fsampler-binding-base ", NULL },
	{ KJ_OPT_UINT, "-ftexture-binding-base ", NULL },
	{ KJ_OPT_UINT, "-fubo-binding-base ", NULL },
	{ KJ_OPT_UINT, "-fcbuffer-binding-base ", NULL },
	{ KJ_OPT_UINT, "-fssbo-binding-base ", NULL },
	{ KJ_OPT_UINT, "-fuav-binding-base ", NULL },
};

/* glslc's binding-base options and the uniform kind each sets. */
static const struct {
	const char *opt;
	shaderc_uniform_kind kind;
} binding_bases[] = {
	{ "-fimage-binding-base ", shaderc_uniform_kind_image },
	{ "-fsampler-binding-base ", shaderc_uniform_kind_sampler },
	{ "-ftexture-binding-base ", shaderc_uniform_kind_texture },
	{ "-fubo-binding-base ", shaderc_uniform_kind_buffer },
	{ "-fcbuffer-binding-base ", shaderc_uniform_kind_buffer },
	{ "-fssbo-binding-base ", shaderc_uniform_kind_storage_buffer },
	{ "-fuav-binding-base ", shaderc_uniform_kind_unordered_access_view },
};

/* SPIR-V 1.N of glslc's --target-spv=spv1.N (already whitelisted). */
static shaderc_spirv_version spirv_of(const char *v)
{
	static const shaderc_spirv_version by_minor[] = {
		shaderc_spirv_version_1_0, shaderc_spirv_version_1_1, shaderc_spirv_version_1_2,
		shaderc_spirv_version_1_3, shaderc_spirv_version_1_4, shaderc_spirv_version_1_5,
		shaderc_spirv_version_1_6,
	};
	int m = v[5] - '0';
	return by_minor[m >= 0 && m < (int)KJ_ARRAY_SIZE(by_minor) ? m : 0];
}

static void shaderc_fini(void *state)
{
	struct shaderc_state *st = state;

	if (st == NULL)
		return;
	if (st->compiler)
		shaderc_compiler_release(st->compiler);
	free(st);
}

static int shaderc_init(void **state, char *err, size_t errlen)
{
	int r = KJIT_ENOMEM;
	struct shaderc_state *st = calloc(1, sizeof *st);
	unsigned ver = 0, rev = 0;

	if (st == NULL)
		goto out;
	if ((st->compiler = shaderc_compiler_initialize()) == NULL) {
		snprintf(err, errlen, "shaderc_compiler_initialize failed");
		r = KJIT_EBACKEND;
		goto out;
	}
	shaderc_get_spv_version(&ver, &rev);
	const char *spvt = spvSoftwareVersionString();
	snprintf(st->identity, sizeof st->identity, "shaderc; glslang %d.%d.%d; SPIRV-Tools %s; SPIR-V %u.%u",
		 GLSLANG_VERSION_MAJOR, GLSLANG_VERSION_MINOR, GLSLANG_VERSION_PATCH,
		 spvt ? spvt : "unknown", (ver >> 16) & 0xff, (ver >> 8) & 0xff);
	snprintf(st->runtime, sizeof st->runtime, "%u.%u", (ver >> 16) & 0xff, (ver >> 8) & 0xff);
	/* success */
	*state = st;
	st = NULL;
	r = 0;
out:
	shaderc_fini(st);
	return r;
}

static int shaderc_identity(void *state, char *id, size_t idlen, char *rv, size_t rvlen)
{
	struct shaderc_state *st = state;

	if ((size_t)snprintf(id, idlen, "%s", st->identity) >= idlen ||
	    (size_t)snprintf(rv, rvlen, "%s", st->runtime) >= rvlen)
		return KJIT_ETOOBIG;
	return 0;
}

/* The shaderc env version of "vulkan1.N", or 0. */
static int env_version(const char *t, shaderc_env_version *v)
{
	if (t == NULL)
		return 0;
	if (strcmp(t, "vulkan1.0") == 0) /* glslc's default */
		*v = shaderc_env_version_vulkan_1_0;
	else if (strcmp(t, "vulkan1.1") == 0)
		*v = shaderc_env_version_vulkan_1_1;
	else if (strcmp(t, "vulkan1.2") == 0)
		*v = shaderc_env_version_vulkan_1_2;
	else if (strcmp(t, "vulkan1.3") == 0)
		*v = shaderc_env_version_vulkan_1_3;
	else
		return 0;
	return 1;
}

static int shaderc_check_target(void *state, const char *target, char *err, size_t errlen)
{
	shaderc_env_version v;
	char why[256];

	(void)state;
	if (!env_version(target, &v) || kj__vulkan_target_parse(target, why, sizeof why) < 0) {
		snprintf(err, errlen, "target '%.64s' is not supported by shaderc (vulkan1.0, vulkan1.1, vulkan1.2 or vulkan1.3)",
			 target ? target : "");
		return KJIT_ETARGET;
	}
	return 0;
}

static const struct kj__header *find_header(const struct kj__compile_job *job, const char *name,
					    size_t len)
{
	for (size_t i = 0; i < job->n_headers; i++)
		if (strlen(job->headers[i].name) == len && memcmp(job->headers[i].name, name, len) == 0)
			return &job->headers[i];
	return NULL;
}

static shaderc_include_result *include_resolve(void *user, const char *req, int type,
					       const char *from, size_t depth)
{
	struct include_ctx *ctx = user;
	shaderc_include_result *res = calloc(1, sizeof *res);
	const struct kj__header *h = NULL;
	char path[2 * KJ_NAME_MAX + 2];
	static const char toodeep[] = "#include nested too deeply";
	static const char missing[] = "not among the job's headers (includes resolve only to the headers sent with the request)";

	if (res == NULL)
		return NULL;
	if (depth > KJ_INCLUDE_DEPTH_MAX) {
		res->content = toodeep;
		res->content_length = sizeof toodeep - 1;
		return res;
	}
	/* next to the including file first, ".." resolved against its place
	 * (kj__includes_check let through only ".." landing on a job file) */
	if (type == shaderc_include_type_relative && from && strlen(req) <= KJ_NAME_MAX &&
	    kj__tree_join(from, req, strlen(req), path, sizeof path) == 0)
		h = find_header(ctx->job, path, strlen(path));
	if (h == NULL && strstr(req, "..") == NULL)
		h = find_header(ctx->job, req, strlen(req));
	if (h == NULL) {
		res->content = missing;
		res->content_length = sizeof missing - 1;
		return res;
	}
	res->source_name = h->name;
	res->source_name_length = strlen(h->name);
	res->content = (const char *)h->data;
	res->content_length = h->len;
	return res;
}

static void include_release(void *user, shaderc_include_result *res)
{
	(void)user;
	free(res);
}

/* 1 if the job asks for HLSL. */
static int is_hlsl(const struct kj__compile_job *job)
{
	int hlsl = 0;
	size_t l = strlen(job->source_name);

	if (l > 5 && strcmp(job->source_name + l - 5, ".hlsl") == 0)
		hlsl = 1;
	for (size_t i = 0; i < job->n_options; i++) {
		if (strcmp(job->options[i], "-x hlsl") == 0 || strcmp(job->options[i], "-xhlsl") == 0)
			hlsl = 1;
		else if (strcmp(job->options[i], "-x glsl") == 0 || strcmp(job->options[i], "-xglsl") == 0)
			hlsl = 0;
	}
	return hlsl;
}

/* Applies glslc's on/off -f options (already whitelisted); 1 if s was one. */
static int apply_flag(shaderc_compile_options_t o, const char *s)
{
	if (strcmp(s, "-fhlsl-16bit-types") == 0)
		shaderc_compile_options_set_hlsl_16bit_types(o, 1);
	else if (strcmp(s, "-fhlsl-iomap") == 0)
		shaderc_compile_options_set_hlsl_io_mapping(o, 1);
	else if (strcmp(s, "-fhlsl-offsets") == 0)
		shaderc_compile_options_set_hlsl_offsets(o, 1);
	else if (strcmp(s, "-fhlsl-functionality1") == 0 || strcmp(s, "-fhlsl_functionality1") == 0)
		shaderc_compile_options_set_hlsl_functionality1(o, 1);
	else if (strcmp(s, "-fauto-bind-uniforms") == 0)
		shaderc_compile_options_set_auto_bind_uniforms(o, 1);
	else if (strcmp(s, "-fauto-map-locations") == 0)
		shaderc_compile_options_set_auto_map_locations(o, 1);
	else if (strcmp(s, "-fauto-combined-image-sampler") == 0)
		shaderc_compile_options_set_auto_combined_image_sampler(o, 1);
	else if (strcmp(s, "-finvert-y") == 0)
		shaderc_compile_options_set_invert_y(o, 1);
	else if (strcmp(s, "-fnan-clamp") == 0)
		shaderc_compile_options_set_nan_clamp(o, 1);
	else if (strncmp(s, "--target-spv=", 13) == 0)
		shaderc_compile_options_set_target_spirv(o, spirv_of(s + 13));
	else {
		for (size_t i = 0; i < KJ_ARRAY_SIZE(binding_bases); i++) {
			size_t l = strlen(binding_bases[i].opt);
			if (strncmp(s, binding_bases[i].opt, l) == 0) {
				shaderc_compile_options_set_binding_base(o, binding_bases[i].kind,
									 (uint32_t)strtoul(s + l, NULL, 10));
				return 1;
			}
		}
		return 0;
	}
	return 1;
}

/* Applies the (already whitelisted) options to o. */
static void apply_options(shaderc_compile_options_t o, const struct kj__compile_job *job)
{
	for (size_t i = 0; i < job->n_options; i++) {
		const char *s = job->options[i];
		if (apply_flag(o, s)) {
			continue;
		} else if (strncmp(s, "-D", 2) == 0) {
			const char *eq = strchr(s + 2, '=');
			size_t nl = eq ? (size_t)(eq - s - 2) : strlen(s + 2);
			shaderc_compile_options_add_macro_definition(o, s + 2, nl, eq ? eq + 1 : NULL,
								     eq ? strlen(eq + 1) : 0);
		} else if (strcmp(s, "-O0") == 0) {
			shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_zero);
		} else if (strcmp(s, "-O") == 0) {
			shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_performance);
		} else if (strcmp(s, "-Os") == 0) {
			shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_size);
		} else if (strcmp(s, "-g") == 0) {
			shaderc_compile_options_set_generate_debug_info(o);
		} else if (strcmp(s, "-w") == 0) {
			shaderc_compile_options_set_suppress_warnings(o);
		} else if (strcmp(s, "-Werror") == 0) {
			shaderc_compile_options_set_warnings_as_errors(o);
		} else if (strncmp(s, "-std=", 5) == 0) { /* glslc's -std=450[core|es] */
			int es = strstr(s, "es") != NULL;
			shaderc_compile_options_set_forced_version_profile(o, atoi(s + 5),
									   es ? shaderc_profile_es : shaderc_profile_core);
		}
	}
}

static int status_code(shaderc_compilation_status s)
{
	switch (s) {
	case shaderc_compilation_status_success:
		return 0;
	case shaderc_compilation_status_compilation_error:
		return KJIT_ECOMPILE;
	case shaderc_compilation_status_null_result_object:
		return KJIT_ENOMEM;
	case shaderc_compilation_status_invalid_stage:
	case shaderc_compilation_status_invalid_assembly:
	case shaderc_compilation_status_validation_error:
	case shaderc_compilation_status_transformation_error:
	case shaderc_compilation_status_configuration_error:
	case shaderc_compilation_status_internal_error:
	default:
		return KJIT_EINTERNAL;
	}
}

static int shaderc_compile(void *state, const struct kj__compile_job *job, struct kj__compile_out *out)
{
	struct shaderc_state *st = state;
	int r = KJIT_ENOMEM;
	char err[256];
	shaderc_env_version env = shaderc_env_version_vulkan_1_1;
	shaderc_compile_options_t o = NULL;
	shaderc_compilation_result_t res = NULL;
	struct include_ctx ctx = { job };
	const char *entry = job->n_entries > 0 ? job->entries[0] : "main";

	memset(out, 0, sizeof *out);
	if ((r = shaderc_check_target(st, job->target, err, sizeof err)) < 0 ||
	    (r = kj__options_check("shaderc", shader_rules, KJ_ARRAY_SIZE(shader_rules), job, err,
				   sizeof err)) < 0 ||
	    (r = kj__includes_check(job, err, sizeof err)) < 0) {
		r = kj__out_error(out, r, err);
		goto out;
	}
	env_version(job->target, &env);
	if ((o = shaderc_compile_options_initialize()) == NULL)
		goto out;
	shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, env);
	if (is_hlsl(job)) {
		shaderc_compile_options_set_source_language(o, shaderc_source_language_hlsl);
		/* glslang before PR #3121 (issue #2411; Debian 12 has 12.0.0)
		 * decorates HLSL buffers BufferBlock, which SPIR-V 1.4+ removed:
		 * HLSL is built as SPIR-V 1.3, which every Vulkan 1.1+ accepts
		 * (for vulkan1.0, its own 1.0).  A --target-spv= says otherwise. */
		if (env != shaderc_env_version_vulkan_1_0)
			shaderc_compile_options_set_target_spirv(o, shaderc_spirv_version_1_3);
	} else {
		shaderc_compile_options_set_source_language(o, shaderc_source_language_glsl);
	}
	shaderc_compile_options_set_include_callbacks(o, include_resolve, include_release, &ctx);
	apply_options(o, job);
	res = shaderc_compile_into_spv(st->compiler, (const char *)job->source, job->source_len,
				       shaderc_compute_shader, job->source_name, entry, o);
	if (res == NULL)
		goto out;
	const char *msg = shaderc_result_get_error_message(res);
	if (msg && *msg)
		out->log = kj__log_dup(msg, strlen(msg));
	r = status_code(shaderc_result_get_compilation_status(res));
	if (r < 0) {
		if (r == KJIT_ECOMPILE)
			kj__log_reason(out->log, "compilation failed", err, sizeof err);
		else
			snprintf(err, sizeof err, "%s: shaderc: internal error", job->source_name);
		r = kj__out_error(out, r, err);
		goto out;
	}
	size_t len = shaderc_result_get_length(res);
	const uint8_t *bytes = (const uint8_t *)shaderc_result_get_bytes(res);
	uint32_t magic = 0;
	if (len < 20 || len % 4 || len > KJ_OBJECT_MAX || bytes == NULL ||
	    (memcpy(&magic, bytes, 4), magic != KJ_SPIRV_MAGIC)) {
		r = kj__out_error(out, KJIT_EINTERNAL, "shaderc returned something other than SPIR-V");
		goto out;
	}
	r = KJIT_ENOMEM;
	if ((out->data = malloc(len)) == NULL)
		goto out;
	memcpy(out->data, bytes, len);
	out->len = len;
	r = 0;
out:
	if (res)
		shaderc_result_release(res);
	if (o)
		shaderc_compile_options_release(o);
	return r;
}

const struct kj__compiler_ops kj__compiler_shaderc = {
	.name = "shaderc",
	.backend = KJIT_BACKEND_VULKAN,
	.init = shaderc_init,
	.fini = shaderc_fini,
	.identity = shaderc_identity,
	.check_target = shaderc_check_target,
	.compile = shaderc_compile,
};
