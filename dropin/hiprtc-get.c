/* hiprtc-get.c: the Get calls of kjit's libhiprtc (code, log, lowered
 * names), answered as hiprtc 5.2 answers them, and which compiles kjit
 * serves.
 *
 * A served program answers from kjit's result: its code object (the bytes
 * hiprtcGetCode gives: kjitd's hiprtc worker returns them unchanged), an
 * empty log (size 0, nothing written: hiprtc 5.2 counts no NUL), the
 * lowered names of the expressions added before the compile; before the
 * compile every size is 0 and GetLoweredName answers 10 (not 9).  A
 * forwarded program answers from the real library.
 *
 * Served options are those kjitd's hiprtc worker passes on as given
 * (compilers/hiprtc.c's list: macros, -O, fast math, fp-contract, the C++
 * standard, atomics and CU modes, warning flags); the architecture becomes
 * the request's target; -IDIR and -I DIR leave the options for inc.c,
 * which reads the headers they give where that is faithful.  Anything else
 * (other include options, -fgpu-rdc, -g, unknown options) is the real
 * library's.
 */
#include <string.h>

#include "dropstat.h"
#include "hiprtc-int.h"
#include "util.h"

static const char *const exact[] = {
	"-O0", "-O1", "-O2", "-O3", "-ffast-math", "-fno-fast-math", "-ffp-contract=off", "-ffp-contract=on",
	"-ffp-contract=fast", "-std=c++11", "-std=c++14", "-std=c++17", "-std=c++20", "-munsafe-fp-atomics",
	"-mno-unsafe-fp-atomics", "-mcumode", "-mno-cumode", "-w",
};

static int served(const char *o)
{
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
		if (strcmp(o, exact[i]) == 0)
			return 1;
	/* -DX, -UX; -Wname (-Wall, -Werror, -Wno-x, -Werror=x): no comma, as the worker takes */
	if ((strncmp(o, "-D", 2) == 0 || strncmp(o, "-U", 2) == 0) && o[2] != '\0' && o[2] != ' ')
		return 1;
	return strncmp(o, "-W", 2) == 0 && o[2] >= 'a' && o[2] <= 'z' && strchr(o, ',') == NULL;
}

int kj__hip_opts_split(int n, const char *const *opts, const char **target, const char **kept, int *n_kept,
		       const char **bad)
{
	*target = NULL;
	*n_kept = 0;
	if (n > KJ_HIP_OPTS_MAX) {
		*bad = " (too many options)";
		return KJ_DS_OPTION;
	}
	for (int i = 0; i < n; i++) {
		const char *o = opts[i], *arch = NULL;
		if (strncmp(o, "--offload-arch=", 15) == 0)
			arch = o + 15;
		else if (strncmp(o, "--gpu-architecture=", 19) == 0)
			arch = o + 19;
		if (arch && (*target != NULL || strncmp(arch, "gfx", 3) != 0 || strlen(arch) >= KJ_TARGET_MAX)) {
			*bad = o; /* two architectures: hiprtc fails, saying so */
			return KJ_DS_OPTION;
		}
		if (arch)
			*target = arch;
		else if (kj__dp_inc_dir(1, n, opts, &i) != NULL)
			continue; /* kj__dp_read_includes reads it */
		else if (served(o))
			kept[(*n_kept)++] = o;
		else {
			*bad = o;
			return KJ_DS_OPTION;
		}
	}
	if (*target == NULL) {
		*bad = "";
		return KJ_DS_NO_ARCH;
	}
	return KJ_DS_SERVED;
}

int kj__hip_input_ok(const struct kj__dp_prog *p, const char **bad)
{
	for (int i = 0; i < p->n_headers; i++) {
		const char *h = p->hdr_names[i];
		if (*h == '\0' || *h == '.' || strchr(h, '/') != NULL || strlen(h) > KJ_NAME_MAX) {
			*bad = " (a header name)";
			return KJ_DS_INPUT;
		}
		for (int j = 0; j < i; j++)
			if (strcmp(h, p->hdr_names[j]) == 0) {
				*bad = " (two headers of one name)";
				return KJ_DS_INPUT;
			}
	}
	for (int i = 0; i < p->n_exprs; i++) {
		if (strlen(p->exprs[i]) > KJ_NAME_MAX) {
			*bad = " (a long name expression)";
			return KJ_DS_INPUT;
		}
		for (int j = 0; j < i; j++)
			if (strcmp(p->exprs[i], p->exprs[j]) == 0) {
				*bad = " (a name expression given twice: hiprtc fails on it)";
				return KJ_DS_INPUT;
			}
	}
	return KJ_DS_SERVED;
}

/* The code object of served program p, or none (before a compile). */
static size_t code_of(const struct kj__dp_prog *p, const char **data)
{
	*data = "";
	if (p->state != KJ_DP_OK)
		return 0;
	*data = (const char *)p->res.data;
	return p->res.size;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *size)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);
	const char *data;

	if (p == NULL)
		return HIP_PROGRAM;
	if (size == NULL)
		return HIP_INPUT;
	if (p->real)
		return kj__hip_real()->code_size(p->real, size);
	*size = code_of(p, &data);
	return HIP_OK;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);
	const char *data;
	size_t n;

	if (p == NULL)
		return HIP_PROGRAM;
	if (code == NULL)
		return HIP_INPUT;
	if (p->real)
		return kj__hip_real()->code(p->real, code);
	if ((n = code_of(p, &data)) > 0)
		memcpy(code, data, n);
	return HIP_OK;
}

/* A served program's log is empty (anything else was forwarded). */
KJ_DP_EXPORT hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *size)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return HIP_PROGRAM;
	if (size == NULL)
		return HIP_INPUT;
	if (p->real)
		return kj__hip_real()->log_size(p->real, size);
	*size = 0;
	return HIP_OK;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return HIP_PROGRAM;
	if (log == NULL)
		return HIP_INPUT;
	return p->real ? kj__hip_real()->log(p->real, log) : HIP_OK;
}

KJ_DP_EXPORT hiprtcResult hiprtcGetLoweredName(hiprtcProgram prog, const char *expr, const char **lowered)
{
	struct kj__dp_prog *p = kj__dp_prog_check(prog);

	if (p == NULL)
		return HIP_PROGRAM;
	if (p->real)
		return kj__hip_real()->lowered(p->real, expr, lowered);
	if (expr == NULL || lowered == NULL)
		return HIP_INPUT;
	if (p->state != KJ_DP_OK)
		return HIP_NAME_INVALID; /* hiprtc 5.2: 10 before a compile, not 9 */
	for (int i = 0; i < p->n_exprs_compiled; i++) {
		if (strcmp(p->exprs[i], expr) != 0)
			continue;
		if ((size_t)i >= p->res.n_lowered_names || p->res.lowered_names[i] == NULL)
			break;
		*lowered = p->res.lowered_names[i];
		return HIP_OK;
	}
	return HIP_NAME_INVALID;
}
