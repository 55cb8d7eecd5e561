/* hiprtc.c: kjit's libhiprtc.so.6 (also reachable as libhiprtc.so.5 and
 * libhiprtc.so): the 11 functions of the installed hiprtc.h, for programs
 * written for ROCm 6 and later, which load hiprtc as its own library.
 *
 * On Debian 12 (ROCm 5.2) hiprtc lives inside libamdhip64.so.5, which no
 * drop-in can replace (it is the whole HIP runtime).  This library
 * forwards every call to the real hiprtc, found by full path (real.c:
 * KJIT_REAL_HIPRTC, a copy already loaded, libamdhip64.so.5 in the system
 * and ROCm folders, then ROCm 6's libhiprtc.so.6): the program's hiprtc
 * handles are the real library's own, so every answer is hiprtc's.  It does
 * not serve compiles from kjit's cache yet (docs/dropin.md says why and
 * what is left); compiles are counted as forwarded ("hiprtc").
 * Invariants: the real library is loaded once, all-or-nothing; a call
 * without it answers HIPRTC_ERROR_INTERNAL_ERROR and says why once.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "dropin.h"
#include "dropstat.h"

typedef int hiprtcResult;
typedef void *hiprtcProgram;

enum { HIPRTC_INTERNAL = 11 };

/* The public API, with the contracts of hiprtc.h (ROCm 5.2), answered by
 * the real hiprtc.  Exported by hiprtc.map. */
const char *hiprtcGetErrorString(hiprtcResult r);
hiprtcResult hiprtcVersion(int *major, int *minor);
hiprtcResult hiprtcAddNameExpression(hiprtcProgram prog, const char *expr);
hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int n, const char **opts);
hiprtcResult hiprtcCreateProgram(hiprtcProgram *prog, const char *src, const char *name, int n, const char **hdrs,
				 const char **names);
hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog);
hiprtcResult hiprtcGetLoweredName(hiprtcProgram prog, const char *expr, const char **lowered);
hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log);
hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *size);
hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code);
hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *size);

KJ_DP_EXPORT const char kjit_dropin_version[] = "kjit drop-in libhiprtc.so.6 0.1";

static struct {
	pthread_once_t once;
	int ok;
	char err[512];
	const char *(*errstr)(hiprtcResult);
	hiprtcResult (*version)(int *, int *);
	hiprtcResult (*add_name)(hiprtcProgram, const char *);
	hiprtcResult (*compile)(hiprtcProgram, int, const char **);
	hiprtcResult (*create)(hiprtcProgram *, const char *, const char *, int, const char **, const char **);
	hiprtcResult (*destroy)(hiprtcProgram *);
	hiprtcResult (*lowered)(hiprtcProgram, const char *, const char **);
	hiprtcResult (*log)(hiprtcProgram, char *);
	hiprtcResult (*log_size)(hiprtcProgram, size_t *);
	hiprtcResult (*code)(hiprtcProgram, char *);
	hiprtcResult (*code_size)(hiprtcProgram, size_t *);
} R = { .once = PTHREAD_ONCE_INIT };

static void real_load(void)
{
	static const char *const paths[] = {
		"/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so.5",
		"/opt/rocm/lib/libhiprtc.so.6", "/usr/lib/x86_64-linux-gnu/libhiprtc.so.6",
		"/opt/rocm/lib/libhiprtc.so.5",
	};
	void *h = kj__dp_real_open("KJIT_REAL_HIPRTC", "libhiprtc.so.6", paths, sizeof paths / sizeof *paths, R.err,
				   sizeof R.err);
	int missing = 0;

	if (h == NULL)
		return;
#define SYM(f, name) missing |= (*(void **)&R.f = dlsym(h, name)) == NULL
	SYM(errstr, "hiprtcGetErrorString");
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
	if (missing)
		snprintf(R.err, sizeof R.err, "the real hiprtc lacks a function of hiprtc.h");
	R.ok = !missing;
}

static int real_ok(void)
{
	static int said;

	pthread_once(&R.once, real_load);
	if (!R.ok && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "kjit libhiprtc: cannot use the real hiprtc (%s); set KJIT_REAL_HIPRTC to its path\n",
			R.err);
	return R.ok;
}

KJ_DP_EXPORT const char *hiprtcGetErrorString(hiprtcResult r)
{
	return real_ok() ? R.errstr(r) : "HIPRTC_ERROR_INTERNAL_ERROR";
}

KJ_DP_EXPORT hiprtcResult hiprtcVersion(int *major, int *minor)
{
	return real_ok() ? R.version(major, minor) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcAddNameExpression(hiprtcProgram prog, const char *expr)
{
	return real_ok() ? R.add_name(prog, expr) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int n, const char **opts)
{
	if (!real_ok())
		return HIPRTC_INTERNAL;
	kj__dp_count("libhiprtc", KJ_DS_HIPRTC, "");
	return R.compile(prog, n, opts);
}

KJ_DP_EXPORT hiprtcResult hiprtcCreateProgram(hiprtcProgram *prog, const char *src, const char *name, int n,
					      const char **hdrs, const char **names)
{
	return real_ok() ? R.create(prog, src, name, n, hdrs, names) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog)
{
	return real_ok() ? R.destroy(prog) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetLoweredName(hiprtcProgram prog, const char *expr, const char **lowered)
{
	return real_ok() ? R.lowered(prog, expr, lowered) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log)
{
	return real_ok() ? R.log(prog, log) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *size)
{
	return real_ok() ? R.log_size(prog, size) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code)
{
	return real_ok() ? R.code(prog, code) : HIPRTC_INTERNAL;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *size)
{
	return real_ok() ? R.code_size(prog, size) : HIPRTC_INTERNAL;
}
