/* cmd-variant.c: the line `kjit get --kernel NAME` adds on stderr when NAME
 * belongs to an op with several variants, saying which one was fetched and
 * why (issue 14 item 5, in the spirit of baracuda's Plan::sku()).
 *
 * Variants are told apart by the manifest's naming rules (kernels_src/MANIFEST):
 *  - an "_sg" infix (rms_norm_sg_f32): the Vulkan subgroup-reduction entry; the
 *    name without it reduces through shared memory for devices without
 *    subgroup arithmetic;
 *  - a "_dp4" suffix (matvec_q8_dp4): the Vulkan q8 matvec whose packed 4x8
 *    dot products are OpSDot (integer dot product), where the device has it;
 *  - a "_d256" infix (attn_decode_d256_f32): decode attention for head_dim
 *    <= 256 (32 lanes a key); without it, head_dim <= 128 (16 lanes a key);
 *  - gemm_* and attn_prefill_*: one entry whose path is chosen when kjitd
 *    compiles it, from the target: CUDA sm_80 or newer takes the tensor-core
 *    path (mma.sync m16n8k16), older CUDA, HIP and Vulkan the plain one; and
 *    gemm_sm90_* and attn_prefill_sm90_*, CUDA only, the wgmma + TMA path for
 *    target sm_90a (plain dot products for any other), which launchers use on
 *    sm_90 devices.
 * The family's members are the names of the daemon's manifest (admin
 * "kernels" for the backend) equal to NAME once the infix is removed; the
 * examples' kcase_variant (tests/kernels/kcase.c) makes the same choice from
 * the shape, which `kjit get` does not know, so the line names the rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-int.h"
#include "kjit.h"
#include "kj_limits.h"

/* The variant infixes, each with what it selects and what its absence does. */
static const struct {
	const char *infix, *with, *without;
} kj__variant_rules[] = {
	{ "_sg", "subgroup reductions (the device must support Vulkan subgroup arithmetic)",
	  "shared-memory reductions (any device; the _sg entry is faster where subgroups exist)" },
	{ "_d256", "head_dim <= 256, 32 lanes a key (at head_dim <= 128 the plain entry is faster)",
	  "head_dim <= 128, 16 lanes a key (larger heads need the _d256 entry)" },
	{ "_dp4", "integer dot product, one OpSDot per packed 4x8 word (SPV_KHR_integer_dot_product; the device "
		  "must report shaderIntegerDotProduct and subgroup arithmetic, as NVIDIA, AMD and Mesa drivers do)",
	  "4x8 dot products unpacked with bitfieldExtract and shared-memory reductions (any device; the "
	  "_dp4 entry uses the hardware's integer dot product where the device reports it)" },
};

/* Writes NAME without the first occurrence of infix into out (size n).
 * Returns 1 when the infix was found, else 0 (out is NAME). */
static int strip_infix(const char *name, const char *infix, char *out, size_t n)
{
	const char *p = strstr(name, infix);
	if (p == NULL || (p[strlen(infix)] != '_' && p[strlen(infix)] != '\0')) {
		snprintf(out, n, "%s", name);
		return 0;
	}
	snprintf(out, n, "%.*s%s", (int)(p - name), name, p + strlen(infix));
	return 1;
}

/* The path gemm_* / attn_prefill_* take for target on backend. */
static const char *compile_path(const char *kernel, int backend, const char *target)
{
	const int cuda_sm = backend == KJIT_BACKEND_CUDA && target && strncmp(target, "sm_", 3) == 0;
	const int sm90a = cuda_sm && strcmp(target, "sm_90a") == 0;
	if (strncmp(kernel, "gemm_sm90_", 10) == 0)
		return sm90a ? "wgmma + TMA path, 128 x 256 tiles (CUDA sm_90a; launchers pick it over "
			       "gemm_f16 / gemm_bf16 on sm_90 devices when K % 8 == 0)"
			     : "plain dot products (the wgmma path needs target sm_90a)";
	if (strncmp(kernel, "attn_prefill_sm90_", 18) == 0)
		return sm90a ? "wgmma + TMA path, 128-key tiles, producer warp and 2 consumer warpgroups "
			       "(CUDA sm_90a; launchers pick it over attn_prefill_f16 / _bf16 on sm_90 "
			       "devices when D is 64 or 128)"
			     : "plain dot products (the wgmma path needs target sm_90a)";
	if (cuda_sm && strncmp(kernel, "gemm_", 5) == 0 && atoi(target + 3) == 90)
		return "tensor-core path, mma.sync m16n8k16 (CUDA sm_80 or newer; on sm_90 devices "
		       "launchers use gemm_sm90_* when K % 8 == 0)";
	if (cuda_sm && strncmp(kernel, "attn_prefill_", 13) == 0 && atoi(target + 3) == 90)
		return "tensor-core path, mma.sync m16n8k16 (CUDA sm_80 or newer; on sm_90 devices "
		       "launchers use attn_prefill_sm90_* when D is 64 or 128)";
	if (cuda_sm)
		return atoi(target + 3) >= 80 ? "tensor-core path, mma.sync m16n8k16 (CUDA sm_80 or newer)"
					      : "plain path, f32 multiply-adds (CUDA older than sm_80)";
	return backend == KJIT_BACKEND_VULKAN ? "plain path (no tensor cores through Vulkan)"
					      : "plain path, f32 multiply-adds (no mma.sync on this backend)";
}

int kj__variant_note(kjit_client *c, const char *kernel, int backend, const char *target, FILE *out)
{
	char *text = NULL, base[KJ_NAME_MAX + 1], mine[KJ_NAME_MAX + 1], fam[512] = "";
	const char *why = NULL;
	int n = 0, r;

	if (strncmp(kernel, "gemm_", 5) == 0 || strncmp(kernel, "attn_prefill_", 13) == 0) {
		fprintf(out, "variant: %s for %s: %s\n", kernel, target ? target : "-",
			compile_path(kernel, backend, target));
		return 0;
	}
	/* the family's base name: NAME without its variant infix, if any */
	snprintf(base, sizeof base, "%s", kernel);
	for (size_t i = 0; i < sizeof kj__variant_rules / sizeof kj__variant_rules[0]; i++)
		if (strip_infix(kernel, kj__variant_rules[i].infix, base, sizeof base)) {
			why = kj__variant_rules[i].with;
			break;
		}
	if ((r = kjit_admin(c, "kernels", kjit_backend_name(backend), &text, NULL)) < 0)
		goto out;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *name = strtok(line, " \t");
		if (name == NULL)
			continue;
		for (size_t i = 0; i < sizeof kj__variant_rules / sizeof kj__variant_rules[0]; i++) {
			if (strcmp(name, base) != 0 &&
			    !(strip_infix(name, kj__variant_rules[i].infix, mine, sizeof mine) &&
			      strcmp(mine, base) == 0))
				continue;
			if (why == NULL && strcmp(name, kernel) != 0) /* kernel is the base: say why */
				why = kj__variant_rules[i].without;
			size_t len = strlen(fam);
			snprintf(fam + len, sizeof fam - len, "%s%s", n ? ", " : "", name);
			n++;
			break;
		}
	}
	if (n > 1)
		fprintf(out, "variant: %s of {%s}: %s\n", kernel, fam, why ? why : "");
	r = 0;
out:
	free(text);
	return r;
}
