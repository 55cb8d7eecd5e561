/* nvrtc.c: kjit's libnvrtc.so.13: the whole public C API of NVRTC 13
 * (nvrtc.h: 24 functions, each versioned libnvrtc.so.13 by nvrtc.map);
 * this file has the program's life (create, name expressions, flow
 * callback, compile, destroy), the library-wide calls and the real
 * library; nvrtc-get.c answers the Get calls, nvrtc-opts.c decides what
 * kjit can serve.
 *
 * nvrtcCreateProgram keeps the source, name and headers;
 * nvrtcCompileProgram sends one kjit request (target from
 * --gpu-architecture / -arch, the other options as given, the headers, the
 * name expressions) to kjitd.  Whatever kjit cannot serve faithfully goes
 * to the real NVRTC (real.c, by full path), program and all, before
 * anything is answered: options kjit does not model, no architecture, flow
 * callbacks, names kjit's protocol cannot carry, kjitd unreachable or
 * refusing, a compile that failed on an option (only NVRTC knows its exact
 * code), a log past kjit's cap.  The library-wide calls (version,
 * architectures, PCH heap) always go there: they load it (about 8 ms).
 * Invariants: a program is either served (p->real NULL) or forwarded, and
 * once forwarded every call on it goes to the real program; the error
 * strings are NVRTC 13's, compared with the real ones by tests/e2e/dropin.sh.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropstat.h"
#include "nvrtc-int.h"

/* What programs and the real library can ask: the marker real.c and the
 * nvrtc compile worker look for, so no drop-in ever forwards to itself. */
KJ_DP_EXPORT const char kjit_dropin_version[] = "kjit drop-in libnvrtc.so.13 0.1";

static struct {
	pthread_once_t once;
	int ok;
	char err[512];
	struct kj__nv_real fn;
} real = { .once = PTHREAD_ONCE_INIT };

static void real_load(void)
{
	static const char *const paths[] = {
		"/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib/libnvrtc.so.13",
		"/usr/local/cuda-13/lib64/libnvrtc.so.13", "/usr/lib/x86_64-linux-gnu/libnvrtc.so.13",
	};
	static const char *const sz[NV_OUT_N] = { "nvrtcGetPTXSize", "nvrtcGetCUBINSize", "nvrtcGetLTOIRSize",
						  "nvrtcGetOptiXIRSize", "nvrtcGetProgramLogSize" };
	static const char *const gt[NV_OUT_N] = { "nvrtcGetPTX", "nvrtcGetCUBIN", "nvrtcGetLTOIR",
						  "nvrtcGetOptiXIR", "nvrtcGetProgramLog" };
	struct kj__nv_real *f = &real.fn;
	void *h = kj__dp_real_open("KJIT_REAL_NVRTC", "libnvrtc.so.13", paths, sizeof paths / sizeof *paths,
				   real.err, sizeof real.err);
	int missing = 0;

	if (h == NULL)
		return;
#define SYM(field, name) missing |= (*(void **)&f->field = dlsym(h, name)) == NULL
	SYM(version, "nvrtcVersion");
	SYM(num_archs, "nvrtcGetNumSupportedArchs");
	SYM(archs, "nvrtcGetSupportedArchs");
	SYM(create, "nvrtcCreateProgram");
	SYM(destroy, "nvrtcDestroyProgram");
	SYM(compile, "nvrtcCompileProgram");
	SYM(add_name, "nvrtcAddNameExpression");
	SYM(lowered, "nvrtcGetLoweredName");
	SYM(pch_heap, "nvrtcGetPCHHeapSize");
	SYM(set_pch_heap, "nvrtcSetPCHHeapSize");
	SYM(pch_status, "nvrtcGetPCHCreateStatus");
	SYM(pch_required, "nvrtcGetPCHHeapSizeRequired");
	SYM(flow, "nvrtcSetFlowCallback");
	for (int i = 0; i < NV_OUT_N; i++) {
		SYM(size[i], sz[i]);
		SYM(get[i], gt[i]);
	}
#undef SYM
	if (missing) {
		snprintf(real.err, sizeof real.err, "the real libnvrtc.so.13 lacks a function of NVRTC 13");
		return; /* the handle stays open: a half library is never called */
	}
	real.ok = 1;
}

const struct kj__nv_real *kj__nv_real(void)
{
	static int said;

	pthread_once(&real.once, real_load);
	if (!real.ok && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "kjit libnvrtc: cannot use the real NVRTC (%s); set KJIT_REAL_NVRTC to its path\n",
			real.err);
	return real.ok ? &real.fn : NULL;
}

KJ_DP_EXPORT const char *nvrtcGetErrorString(nvrtcResult r)
{
	static const char *const s[] = {
		"NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
		"NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
		"NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
		"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
		"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", "NVRTC_ERROR_INTERNAL_ERROR",
		"NVRTC_ERROR_TIME_FILE_WRITE_FAILED", "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED",
		"NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED", "NVRTC_ERROR_PCH_CREATE", "NVRTC_ERROR_CANCELLED",
		"NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED",
	};
	return r >= 0 && (size_t)r < sizeof s / sizeof *s ? s[r] : "NVRTC_ERROR unknown";
}

KJ_DP_EXPORT nvrtcResult nvrtcVersion(int *major, int *minor)
{
	const struct kj__nv_real *f = kj__nv_real();
	return f ? f->version(major, minor) : NV_INTERNAL;
}

KJ_DP_EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int *n)
{
	const struct kj__nv_real *f = kj__nv_real();
	return f ? f->num_archs(n) : NV_INTERNAL;
}

KJ_DP_EXPORT nvrtcResult nvrtcGetSupportedArchs(int *archs)
{
	const struct kj__nv_real *f = kj__nv_real();
	return f ? f->archs(archs) : NV_INTERNAL;
}

KJ_DP_EXPORT nvrtcResult nvrtcGetPCHHeapSize(size_t *ret)
{
	const struct kj__nv_real *f = kj__nv_real();
	return f ? f->pch_heap(ret) : NV_INTERNAL;
}

KJ_DP_EXPORT nvrtcResult nvrtcSetPCHHeapSize(size_t size)
{
	const struct kj__nv_real *f = kj__nv_real();
	return f ? f->set_pch_heap(size) : NV_INTERNAL;
}

KJ_DP_EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int n,
					    const char *const *hdrs, const char *const *names)
{
	struct kj__dp_prog *p = NULL;

	if (prog == NULL)
		return NV_PROGRAM;
	if (src == NULL || n < 0)
		return NV_INPUT;
	if (kj__dp_prog_new(&p, src, name, n, hdrs, names) < 0)
		return NV_OOM;
	*prog = p;
	return NV_OK;
}

KJ_DP_EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog)
{
	struct kj__dp_prog *p = prog ? kj__dp_prog_check(*prog) : NULL;
	nvrtcResult r = NV_OK;

	if (p == NULL)
		return NV_PROGRAM;
	if (p->real)
		r = kj__nv_real()->destroy(&p->real);
	kj__dp_prog_free(p);
	*prog = NULL;
	return r;
}

KJ_DP_EXPORT nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char *expr)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return NV_PROGRAM;
	if (p->real)
		return kj__nv_real()->add_name(p->real, expr);
	if (expr == NULL)
		return NV_INPUT;
	if (p->state != KJ_DP_NEW)
		return NV_NO_NAMES_AFTER;
	return kj__dp_prog_add_expr(p, expr) < 0 ? NV_OOM : NV_OK;
}

KJ_DP_EXPORT nvrtcResult nvrtcSetFlowCallback(nvrtcProgram prog, int (*cb)(void *, void *), void *payload)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return NV_PROGRAM;
	if (p->real)
		return kj__nv_real()->flow(p->real, cb, payload);
	p->flow_cb = *(void **)&cb;
	p->flow_arg = payload;
	return NV_OK;
}

/* Creates p's program in the real library with all it was given. */
static nvrtcResult real_program(const struct kj__nv_real *f, struct kj__dp_prog *p)
{
	nvrtcResult r = f->create(&p->real, p->src, p->name, p->n_headers, (const char *const *)p->hdr_data,
				  (const char *const *)p->hdr_names);

	if (r != NV_OK) {
		p->real = NULL;
		return r;
	}
	for (int i = 0; i < p->n_exprs; i++)
		if ((r = f->add_name(p->real, p->exprs[i])) != NV_OK)
			return r;
	if (p->flow_cb) {
		int (*cb)(void *, void *);
		*(void **)&cb = p->flow_cb;
		r = f->flow(p->real, cb, p->flow_arg);
	}
	return r;
}

nvrtcResult kj__nv_forward(struct kj__dp_prog *p, int n, const char *const *opts, int why, const char *detail)
{
	const struct kj__nv_real *f;
	nvrtcResult r;

	kj__dp_count("libnvrtc", why, detail);
	if ((f = kj__nv_real()) == NULL)
		return NV_INTERNAL;
	if (p->real == NULL && (r = real_program(f, p)) != NV_OK)
		return r;
	r = f->compile(p->real, n, opts);
	kj__dp_prog_reset(p); /* after: opts may be p's own */
	return r;
}

KJ_DP_EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int n, const char *const *opts)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);
	const char *target = NULL, *kept[KJ_NV_OPTS_MAX], *bad = NULL;
	int n_kept = 0, why;
	kjit_result res;

	if (p == NULL)
		return NV_PROGRAM;
	if (n < 0 || (n > 0 && opts == NULL))
		return NV_INPUT;
	if (p->real || p->flow_cb)
		return kj__nv_forward(p, n, opts, KJ_DS_API, p->real ? " (program already forwarded)" : " (flow callback)");
	double t0 = kj__dp_ms();
	why = kj__nv_opts_split(n, opts, &target, kept, &n_kept, &bad);
	if (why == KJ_DS_SERVED)
		why = kj__nv_input_ok(p, &bad);
	kj__dp_prog_reset(p);
	if (why == KJ_DS_SERVED)
		why = kj__dp_read_includes(p, 0, n, opts, &bad);
	if (why != KJ_DS_SERVED)
		return kj__nv_forward(p, n, opts, why, bad);
	double t1 = kj__dp_ms();
	int r = kj__dp_fetch(p, KJIT_BACKEND_CUDA, "nvrtc", target, kept, n_kept, &res, &why);
	double t2 = kj__dp_ms();
	if (r == KJIT_ECOMPILE && (why = kj__nv_failure_servable(res.log)) != KJ_DS_SERVED)
		r = KJIT_EINVAL;
	if (p->inc && (r == KJIT_ECOMPILE || (r == 0 && res.log && *res.log))) {
		r = KJIT_EINVAL; /* NVRTC names -I headers by the path it found them under */
		why = KJ_DS_PATH;
	}
	if (r < 0 && r != KJIT_ECOMPILE) {
		char detail[160];
		snprintf(detail, sizeof detail, " (%.150s)",
			 p->inc && why == KJ_DS_PATH ? "-I: only a success with an empty log is served"
			 : res.error ? res.error : kjit_strerror(r));
		kjit_result_free(&res);
		return kj__nv_forward(p, n, opts, why, detail);
	}
	if (kj__nv_keep(p, target, n, opts) < 0) {
		kjit_result_free(&res);
		return NV_OOM;
	}
	char took[96];
	snprintf(took, sizeof took, "%s (checks and headers %.2f ms, kjitd %.2f ms)",
		 r == 0 ? kjit_status_name(res.status) : "compile failed", t1 - t0, t2 - t1);
	kj__dp_count("libnvrtc", KJ_DS_SERVED, took);
	p->res = res;
	p->res_is_ptx = strncmp(target, "compute_", 8) == 0;
	p->state = r == 0 ? KJ_DP_OK : KJ_DP_FAILED;
	return r == 0 ? NV_OK : NV_COMPILATION;
}
