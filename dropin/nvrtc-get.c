/* nvrtc-get.c: the Get calls of kjit's libnvrtc: PTX, CUBIN, LTO-IR,
 * OptiX IR, the log, lowered names, PCH status; each answered as NVRTC 13
 * answers it (tests/e2e/dropin.sh compares them byte for byte).
 *
 * A served program answers from kjit's result: an output it does not have
 * is NVRTC's empty answer (PTX: size 1, the string ""; the others size 0),
 * as is everything before a compile.  The PTX of an sm_XX compile is asked
 * of kjit for compute_XX the first time a program wants it (NVRTC's two
 * are the same bytes); should kjit not give it, the program goes to the
 * real library then, and every later answer is the real one.  A forwarded
 * program answers from the real library.
 */
#include <stdio.h>
#include <string.h>

#include "dropstat.h"
#include "nvrtc-int.h"

/* Fetches the PTX of p's sm_ compile; 0 or a reason to forward. */
static int fetch_ptx(struct kj__dp_prog *p)
{
	const char *target, *kept[KJ_NV_OPTS_MAX], *bad;
	char ptx_target[64];
	int n_kept = 0, why;

	if (p->ptx_state == 1)
		return 0;
	if (kj__nv_opts_split(p->n_opts, (const char *const *)p->opts, &target, kept, &n_kept, &bad) != KJ_DS_SERVED)
		return KJ_DS_OPTION;
	snprintf(ptx_target, sizeof ptx_target, "compute_%s", p->target + 3);
	if (kj__dp_fetch(p, KJIT_BACKEND_CUDA, "nvrtc", ptx_target, kept, n_kept, &p->ptx, &why) < 0) {
		kjit_result_free(&p->ptx);
		return why == KJ_DS_SERVED ? KJ_DS_REFUSED : why;
	}
	p->ptx_state = 1;
	return 0;
}

/* The bytes of output which of served program p: *data (may be "" for
 * none), *size.  NV_OK, or a code when the program had to be forwarded and
 * that failed. */
static nvrtcResult served_out(struct kj__dp_prog *p, int which, const char **data, size_t *size)
{
	*data = "";
	*size = which == NV_OUT_PTX || which == NV_OUT_LOG ? 1 : 0;
	if (which == NV_OUT_LOG && p->state != KJ_DP_NEW && p->res.log) {
		*data = p->res.log;
		*size = strlen(p->res.log) + 1;
	}
	if (p->state != KJ_DP_OK)
		return NV_OK;
	if ((which == NV_OUT_PTX && p->res_is_ptx) || (which == NV_OUT_CUBIN && !p->res_is_ptx)) {
		*data = (const char *)p->res.data;
		*size = p->res.size;
	} else if (which == NV_OUT_PTX) {
		int why = fetch_ptx(p);
		if (why != 0) {
			nvrtcResult r = kj__nv_forward(p, p->n_opts, (const char *const *)p->opts, why,
						       " (the PTX of an sm_ compile)");
			return r;
		}
		*data = (const char *)p->ptx.data;
		*size = p->ptx.size;
	}
	return NV_OK;
}

static nvrtcResult out_size(nvrtcProgram prog, int which, size_t *ret)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);
	const char *data;
	nvrtcResult r;

	if (p == NULL)
		return NV_PROGRAM;
	if (ret == NULL)
		return NV_INPUT;
	if (p->real == NULL && (r = served_out(p, which, &data, ret)) != NV_OK)
		return r;
	return p->real ? kj__nv_real()->size[which](p->real, ret) : NV_OK;
}

static nvrtcResult out_get(nvrtcProgram prog, int which, char *buf)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);
	const char *data;
	size_t size;
	nvrtcResult r;

	if (p == NULL)
		return NV_PROGRAM;
	if (buf == NULL)
		return NV_INPUT;
	if (p->real == NULL && (r = served_out(p, which, &data, &size)) != NV_OK)
		return r;
	if (p->real)
		return kj__nv_real()->get[which](p->real, buf);
	memcpy(buf, data, size);
	return NV_OK;
}

KJ_DP_EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ret)
{
	return out_size(prog, NV_OUT_PTX, ret);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx)
{
	return out_get(prog, NV_OUT_PTX, ptx);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *ret)
{
	return out_size(prog, NV_OUT_CUBIN, ret);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin)
{
	return out_get(prog, NV_OUT_CUBIN, cubin);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t *ret)
{
	return out_size(prog, NV_OUT_LTOIR, ret);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char *ltoir)
{
	return out_get(prog, NV_OUT_LTOIR, ltoir);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram prog, size_t *ret)
{
	return out_size(prog, NV_OUT_OPTIXIR, ret);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetOptiXIR(nvrtcProgram prog, char *optixir)
{
	return out_get(prog, NV_OUT_OPTIXIR, optixir);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *ret)
{
	return out_size(prog, NV_OUT_LOG, ret);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log)
{
	return out_get(prog, NV_OUT_LOG, log);
}

KJ_DP_EXPORT nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char *expr, const char **lowered)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return NV_PROGRAM;
	if (p->real)
		return kj__nv_real()->lowered(p->real, expr, lowered);
	if (expr == NULL || lowered == NULL)
		return NV_INPUT;
	if (p->state != KJ_DP_OK)
		return NV_NO_LOWERED_BEFORE;
	for (int i = 0; i < p->n_exprs; i++) {
		if (strcmp(p->exprs[i], expr) != 0)
			continue;
		if ((size_t)i >= p->res.n_lowered_names || p->res.lowered_names[i] == NULL)
			break;
		*lowered = p->res.lowered_names[i];
		return NV_OK;
	}
	return NV_NAME_INVALID;
}

KJ_DP_EXPORT nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram prog)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return NV_PROGRAM;
	return p->real ? kj__nv_real()->pch_status(p->real) : NV_NO_PCH;
}

KJ_DP_EXPORT nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram prog, size_t *size)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return NV_PROGRAM;
	if (p->real)
		return kj__nv_real()->pch_required(p->real, size);
	if (size == NULL)
		return NV_INPUT;
	*size = 0;
	return NV_OK;
}
