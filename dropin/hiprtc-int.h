/* hiprtc-int.h: what the files of kjit's libhiprtc share (hiprtc.c,
 * hiprtc-get.c) and nothing else includes.
 */
#ifndef KJ_HIPRTC_INT_H
#define KJ_HIPRTC_INT_H

#include <stddef.h>

#include "dropin.h"

typedef int hiprtcResult;
typedef void *hiprtcProgram;

/* hiprtc 5.2's result codes the drop-in answers itself. */
enum {
	HIP_OK = 0, HIP_OOM = 1, HIP_INPUT = 3, HIP_PROGRAM = 4, HIP_COMPILATION = 6, HIP_NAME_INVALID = 10,
	HIP_INTERNAL = 11,
};

/* The public API, with the contracts of the installed hiprtc.h (ROCm 5.2)
 * as hiprtc 5.2 behaves (docs/dropin.md lists its quirks).  Exported by
 * hiprtc.map. */
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

/* The real hiprtc's functions (hiprtc.c loads them once; read-only after). */
struct kj__hip_real {
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
};

/* The real library's table, loading it on first use; NULL (said once on
 * stderr) when there is none. */
const struct kj__hip_real *kj__hip_real(void);

/* Most options a compile may carry and still be served. */
#define KJ_HIP_OPTS_MAX 256

/* Splits opts into the target (--offload-arch= / --gpu-architecture=) and
 * the options kjit serves as given (kept, borrowed from opts).
 * KJ_DS_SERVED, or the reason to forward with *bad the option at fault. */
int kj__hip_opts_split(int n, const char *const *opts, const char **target, const char **kept, int *n_kept,
		       const char **bad);
/* KJ_DS_SERVED when p's headers and name expressions reach hiprtc through
 * kjitd as the program gave them, else KJ_DS_INPUT with *bad saying what. */
int kj__hip_input_ok(const struct kj__dp_prog *p, const char **bad);

#endif /* KJ_HIPRTC_INT_H */
