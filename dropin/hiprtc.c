/* hiprtc.c: kjit's libhiprtc.so.6 (also reachable as libhiprtc.so.5 and
 * libhiprtc.so): the 11 functions of the installed hiprtc.h (ROCm 5.2), for
 * programs that load hiprtc as its own library (ROCm 6 and later).  This
 * file has the program's life (create, name expressions, compile, destroy),
 * the library-wide calls and the real library; hiprtc-get.c answers the
 * Get calls and decides which options kjit serves.
 *
 * hiprtcCreateProgram keeps source, name and headers; hiprtcCompileProgram
 * sends one kjit request (target from --offload-arch= / --gpu-architecture=,
 * the other options as given, the headers, the name expressions, compiler
 * hiprtc) to kjitd.  kjit serves a compile only where its answer is hiprtc
 * 5.2's byte for byte: a successful compile with an empty log (hiprtc's
 * logs name comgr's random temporary folder, so a failure or a warning
 * goes to the real library, as do unknown options, no architecture, header
 * names with '/', a name expression given twice, kjitd unreachable or
 * refusing).  The real hiprtc is found by full path (real.c:
 * KJIT_REAL_HIPRTC, a copy already loaded, libamdhip64.so.5 in the system
 * and ROCm folders, then ROCm 6's libhiprtc.so.6).
 *
 * hiprtc 5.2 keeps state across compiles of one program (options and logs
 * accumulate; a second compile with name expressions answers 6): a served
 * program compiled again is replayed in the real library (created, its
 * first compile redone with the same options and name expressions, the
 * later name expressions added) and compiled there, so the answer is the
 * one the real program would give.  Where hiprtc 5.2 crashes or aborts on
 * bad arguments (NULL source, header, option), the drop-in answers
 * HIPRTC_ERROR_INVALID_INPUT.
 * Invariants: a program is either served (p->real NULL) or forwarded, and
 * once forwarded every call on it goes to the real program; the real
 * library is loaded only when a call needs it (a hit never loads the HIP
 * runtime).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropstat.h"
#include "hiprtc-int.h"
#include "util.h"

/* The marker real.c and the hiprtc compile worker look for, so no drop-in
 * ever forwards to itself. */
KJ_DP_EXPORT const char kjit_dropin_version[] = "kjit drop-in libhiprtc.so.6 0.2";

static struct {
	pthread_once_t once;
	int ok;
	char err[512];
	struct kj__hip_real fn;
} R = { .once = PTHREAD_ONCE_INIT };

static void real_load(void)
{
	static const char *const paths[] = {
		"/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so.5",
		"/opt/rocm/lib/libhiprtc.so.6", "/usr/lib/x86_64-linux-gnu/libhiprtc.so.6",
		"/opt/rocm/lib/libhiprtc.so.5",
	};
	struct kj__hip_real *f = &R.fn;
	void *h = kj__dp_real_open("KJIT_REAL_HIPRTC", "libhiprtc.so.6", paths, sizeof paths / sizeof *paths, R.err,
				   sizeof R.err);
	int missing = 0;

	if (h == NULL)
		return;
#define SYM(field, name) missing |= (*(void **)&f->field = dlsym(h, name)) == NULL
	SYM(version, "hiprtcVersion");
	SYM(add_name, "hiprtcAddNameExpression");
	SYM(compile, "hiprtcCompileProgram");
	SYM(create, "hiprtcCreateProgram");
	SYM(destroy, "hiprtcDestroyProgram");
	SYM(lowered, "hiprtcGetLoweredName");
	SYM(log, "hiprtcGetProgramLog");
	SYM(log_size, "hiprtcGetProgramLogSize");
	SYM(code, "hiprtcGetCode");
	SYM(code_size, "hiprtcGetCodeSize");
#undef SYM
	if (missing) {
		snprintf(R.err, sizeof R.err, "the real hiprtc lacks a function of hiprtc.h");
		return; /* the handle stays open: a half library is never called */
	}
	R.ok = 1;
}

const struct kj__hip_real *kj__hip_real(void)
{
	static int said;

	pthread_once(&R.once, real_load);
	if (!R.ok && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "kjit libhiprtc: cannot use the real hiprtc (%s); set KJIT_REAL_HIPRTC to its path\n",
			R.err);
	return R.ok ? &R.fn : NULL;
}

/* hiprtc 5.2's strings (checked against the real ones by dropin.sh); NULL
 * for a code it does not know, as it answers. */
KJ_DP_EXPORT const char *hiprtcGetErrorString(hiprtcResult r)
{
	static const char *const s[] = {
		"HIPRTC_SUCCESS", "HIPRTC_ERROR_OUT_OF_MEMORY", "HIPRTC_ERROR_PROGRAM_CREATION_FAILURE",
		"HIPRTC_ERROR_INVALID_INPUT", "HIPRTC_ERROR_INVALID_PROGRAM", "HIPRTC_ERROR_INVALID_OPTION",
		"HIPRTC_ERROR_COMPILATION", "HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE",
		"HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", "HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
		"HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID", "HIPRTC_ERROR_INTERNAL_ERROR",
	};
	return r >= 0 && (size_t)r < sizeof s / sizeof *s ? s[r] : NULL;
}

KJ_DP_EXPORT hiprtcResult hiprtcVersion(int *major, int *minor)
{
	const struct kj__hip_real *f = kj__hip_real();
	return f ? f->version(major, minor) : HIP_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcCreateProgram(hiprtcProgram *prog, const char *src, const char *name, int n,
					      const char **hdrs, const char **names)
{
	struct kj__dp_prog *p = NULL;

	if (prog == NULL)
		return HIP_PROGRAM;
	if (src == NULL || *src == '\0' || n < 0 || (n > 0 && (hdrs == NULL || names == NULL)))
		return HIP_INPUT;
	for (int i = 0; i < n; i++)
		if (hdrs[i] == NULL || names[i] == NULL)
			return HIP_INPUT; /* hiprtc 5.2 aborts */
	if (kj__dp_prog_new(&p, src, name, n, (const char *const *)hdrs, (const char *const *)names) < 0)
		return HIP_OOM;
	*prog = p;
	return HIP_OK;
}

/* hiprtc 5.2 leaves *prog as it was. */
KJ_DP_EXPORT hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog)
{
	struct kj__dp_prog *p;
	hiprtcResult r = HIP_OK;

	if (prog == NULL)
		return HIP_INPUT;
	if (*prog == NULL)
		return HIP_OK;
	if ((p = kj__dp_prog_check(*prog)) == NULL)
		return HIP_PROGRAM;
	if (p->real)
		r = kj__hip_real()->destroy(&p->real);
	kj__dp_prog_free(p);
	return r;
}

/* Taken before and after a compile (hiprtc 5.2 answers 0 after one too;
 * a name added after the compile has no lowered name). */
KJ_DP_EXPORT hiprtcResult hiprtcAddNameExpression(hiprtcProgram prog, const char *expr)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return HIP_PROGRAM;
	if (p->real)
		return kj__hip_real()->add_name(p->real, expr);
	if (expr == NULL || *expr == '\0')
		return HIP_INPUT;
	return kj__dp_prog_add_expr(p, expr) < 0 ? HIP_OOM : HIP_OK;
}

/* Creates p in the real library with all it was given.  A served program
 * (compiled once by kjit) also gets its compile redone there, with the
 * name expressions it had then, and the later ones added, so the real
 * program is in the state the program's would be. */
static hiprtcResult real_program(const struct kj__hip_real *f, struct kj__dp_prog *p)
{
	int served = p->state == KJ_DP_OK;
	int first = served ? p->n_exprs_compiled : p->n_exprs;
	hiprtcResult r = f->create(&p->real, p->src, p->name, p->n_headers, (const char **)p->hdr_data,
				   (const char **)p->hdr_names);

	if (r != HIP_OK) {
		p->real = NULL;
		return r;
	}
	for (int i = 0; i < first; i++)
		if ((r = f->add_name(p->real, p->exprs[i])) != HIP_OK)
			return r;
	if (served)
		f->compile(p->real, p->n_opts, (const char **)p->opts); /* kjit gave its answer */
	for (int i = first; i < p->n_exprs; i++)
		if ((r = f->add_name(p->real, p->exprs[i])) != HIP_OK)
			return r;
	return HIP_OK;
}

/* Hands p to the real library and compiles it there with opts as given;
 * counts why.  The real answer. */
static hiprtcResult forward(struct kj__dp_prog *p, int n, const char **opts, int why, const char *detail)
{
	const struct kj__hip_real *f;
	hiprtcResult r;

	kj__dp_count("libhiprtc", why, detail);
	if ((f = kj__hip_real()) == NULL)
		return HIP_INTERNAL;
	if (p->real == NULL && (r = real_program(f, p)) != HIP_OK)
		return r;
	r = f->compile(p->real, n, opts);
	kj__dp_prog_reset(p);
	return r;
}

/* Keeps the options of p's served compile (for a later replay). */
static int keep_opts(struct kj__dp_prog *p, int n, const char **opts)
{
	if (n > 0 && (p->opts = calloc((size_t)n, sizeof *p->opts)) == NULL)
		return KJIT_ENOMEM;
	for (; p->n_opts < n; p->n_opts++)
		if ((p->opts[p->n_opts] = strdup(opts[p->n_opts])) == NULL)
			return KJIT_ENOMEM;
	return 0;
}

/* One compile through kjitd; a reason to forward, or KJ_DS_SERVED with
 * *res kjit's answer (a success with an empty log). */
static int served_compile(struct kj__dp_prog *p, int n, const char **opts, kjit_result *res, char *detail,
			  size_t dlen)
{
	const char *target = NULL, *kept[KJ_HIP_OPTS_MAX], *bad = "";
	int n_kept = 0, why, r;

	why = kj__hip_opts_split(n, (const char *const *)opts, &target, kept, &n_kept, &bad);
	if (why == KJ_DS_SERVED)
		why = kj__hip_input_ok(p, &bad);
	if (why == KJ_DS_SERVED)
		why = kj__dp_read_includes(p, 1, n, (const char *const *)opts, &bad);
	if (why != KJ_DS_SERVED) {
		snprintf(detail, dlen, "%s%.150s", *bad == ' ' || *bad == '\0' ? "" : " ", bad);
		return why;
	}
	/* hiprtc 5.2 names every source "CompileSource" (the same code object
	 * for any name, NULL too: checked), so a name kjit's protocol cannot
	 * carry is replaced, not forwarded for. */
	struct kj__dp_prog q = *p;
	if (q.name == NULL || !kj__name_ok(q.name))
		q.name = (char *)"hiprtc_program.cpp";
	r = kj__dp_fetch(&q, KJIT_BACKEND_HIP, "hiprtc", target, kept, n_kept, res, &why);
	if (r == 0 && res->log != NULL && res->log[0] != '\0') {
		snprintf(detail, dlen, " (the compile has a log: warnings)");
		why = KJ_DS_LOG;
	} else if (r == KJIT_ECOMPILE) {
		snprintf(detail, dlen, " (the compile failed)");
		why = KJ_DS_LOG;
	} else if (r < 0) {
		snprintf(detail, dlen, " (%.150s)", res->error ? res->error : kjit_strerror(r));
	}
	if (why != KJ_DS_SERVED)
		kjit_result_free(res);
	return why;
}

KJ_DP_EXPORT hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int n, const char **opts)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);
	char detail[192] = "";
	kjit_result res;
	int why;

	if (p == NULL)
		return HIP_PROGRAM;
	if (n < 0 || (n > 0 && opts == NULL))
		return HIP_INPUT; /* hiprtc 5.2 crashes */
	for (int i = 0; i < n; i++)
		if (opts[i] == NULL)
			return HIP_INPUT;
	if (p->real)
		return forward(p, n, opts, KJ_DS_API, " (program already forwarded)");
	if (p->state == KJ_DP_OK)
		return forward(p, n, opts, KJ_DS_API, " (a program compiled again: hiprtc keeps state)");
	if ((why = served_compile(p, n, opts, &res, detail, sizeof detail)) != KJ_DS_SERVED)
		return forward(p, n, opts, why, detail);
	if (keep_opts(p, n, opts) < 0) {
		kjit_result_free(&res);
		kj__dp_prog_reset(p);
		return HIP_OOM;
	}
	kj__dp_count("libhiprtc", KJ_DS_SERVED, kjit_status_name(res.status));
	p->res = res;
	p->state = KJ_DP_OK;
	p->n_exprs_compiled = p->n_exprs;
	return HIP_OK;
}
