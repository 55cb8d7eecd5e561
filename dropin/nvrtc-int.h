/* nvrtc-int.h: what the files of kjit's libnvrtc share (nvrtc.c,
 * nvrtc-get.c, nvrtc-opts.c) and nothing else includes.
 */
#ifndef KJ_NVRTC_INT_H
#define KJ_NVRTC_INT_H

#include <stddef.h>

#include "dropin.h"

typedef int nvrtcResult;
typedef void *nvrtcProgram;

/* NVRTC 13's result codes the drop-in answers itself. */
enum {
	NV_OK = 0, NV_OOM = 1, NV_INPUT = 3, NV_PROGRAM = 4, NV_COMPILATION = 6, NV_NO_NAMES_AFTER = 8,
	NV_NO_LOWERED_BEFORE = 9, NV_NAME_INVALID = 10, NV_INTERNAL = 11, NV_NO_PCH = 13,
};

/* The public API, with the contracts of NVRTC 13's nvrtc.h: same
 * arguments, same result codes, same outputs.  Exported by nvrtc.map. */
const char *nvrtcGetErrorString(nvrtcResult r);
nvrtcResult nvrtcVersion(int *major, int *minor);
nvrtcResult nvrtcGetNumSupportedArchs(int *n);
nvrtcResult nvrtcGetSupportedArchs(int *archs);
nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int n,
			       const char *const *hdrs, const char *const *names);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog);
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int n, const char *const *opts);
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ret);
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx);
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *ret);
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin);
nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t *ret);
nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char *ltoir);
nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram prog, size_t *ret);
nvrtcResult nvrtcGetOptiXIR(nvrtcProgram prog, char *optixir);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *ret);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log);
nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char *expr);
nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char *expr, const char **lowered);
nvrtcResult nvrtcGetPCHHeapSize(size_t *ret);
nvrtcResult nvrtcSetPCHHeapSize(size_t size);
nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram prog);
nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram prog, size_t *size);
nvrtcResult nvrtcSetFlowCallback(nvrtcProgram prog, int (*cb)(void *, void *), void *payload);

/* The outputs, in the order of the real library's size/get tables. */
enum { NV_OUT_PTX, NV_OUT_CUBIN, NV_OUT_LTOIR, NV_OUT_OPTIXIR, NV_OUT_LOG, NV_OUT_N };

/* The real NVRTC's functions (nvrtc.c loads them once; read-only after). */
struct kj__nv_real {
	nvrtcResult (*version)(int *, int *);
	nvrtcResult (*num_archs)(int *);
	nvrtcResult (*archs)(int *);
	nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
			      const char *const *);
	nvrtcResult (*destroy)(nvrtcProgram *);
	nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*size[NV_OUT_N])(nvrtcProgram, size_t *);
	nvrtcResult (*get[NV_OUT_N])(nvrtcProgram, char *);
	nvrtcResult (*add_name)(nvrtcProgram, const char *);
	nvrtcResult (*lowered)(nvrtcProgram, const char *, const char **);
	nvrtcResult (*pch_heap)(size_t *);
	nvrtcResult (*set_pch_heap)(size_t);
	nvrtcResult (*pch_status)(nvrtcProgram);
	nvrtcResult (*pch_required)(nvrtcProgram, size_t *);
	nvrtcResult (*flow)(nvrtcProgram, int (*)(void *, void *), void *);
};

/* The real library's table, loading it on first use; NULL (said once on
 * stderr) when there is none. */
const struct kj__nv_real *kj__nv_real(void);

/* Hands p to the real library (created there with all it was given) and
 * compiles it with opts as given; counts why.  The real answer. */
nvrtcResult kj__nv_forward(struct kj__dp_prog *p, int n, const char *const *opts, int why, const char *detail);

/* Most options a compile may carry and still be served. */
#define KJ_NV_OPTS_MAX 256

/* Splits opts into the target (from --gpu-architecture=/-arch=) and the
 * options kjit serves as given (kept, borrowed from opts).  KJ_DS_SERVED,
 * or the reason to forward with *bad the option at fault. */
int kj__nv_opts_split(int n, const char *const *opts, const char **target, const char **kept, int *n_kept,
		      const char **bad);
/* KJ_DS_SERVED when p's name and headers travel to kjitd unchanged, else
 * KJ_DS_INPUT with *bad saying what. */
int kj__nv_input_ok(const struct kj__dp_prog *p, const char **bad);
/* For a failed compile's log: KJ_DS_SERVED when kjit's answer is NVRTC's
 * (NVRTC_ERROR_COMPILATION with this log), else the reason to forward. */
int kj__nv_failure_servable(const char *log);
/* Keeps target and opts[0..n) in p (for the PTX of an sm_ compile).  0 or
 * KJIT_ENOMEM. */
int kj__nv_keep(struct kj__dp_prog *p, const char *target, int n, const char *const *opts);

#endif /* KJ_NVRTC_INT_H */
