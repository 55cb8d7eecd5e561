/* err.c: the words for kjit's error codes, backends and statuses.
 *
 * Each KJIT_E* code has one row here, giving its words and, through the
 * preprocessor, its name spelled from the enumerator itself: kjit_error_name()
 * is how the Python package and any other binding name a code, so no second
 * table of codes exists outside include/kjit.h (tests/test-client.c fails when
 * a code between KJIT_ERROR_MIN and 0 lacks a row).
 */
#include <string.h>

#include "kj_types.h"

struct code_row {
	const char *name;  /* "KJIT_ENOMEM" */
	const char *words; /* "out of memory" */
};

#define ROW(code, text) [-(code)] = { #code, text }

static const struct code_row codes[] = {
	ROW(KJIT_OK, "success"),
	ROW(KJIT_ENOMEM, "out of memory"),
	ROW(KJIT_EINVAL, "invalid argument or malformed request"),
	ROW(KJIT_EIO, "input/output error"),
	ROW(KJIT_ECONNECT, "kjitd is unreachable"),
	ROW(KJIT_EPROTO, "protocol error (client and daemon versions differ?)"),
	ROW(KJIT_ECOMPILE, "the compiler rejected the source"),
	ROW(KJIT_ENOTARGET, "no target given, configured or detected"),
	ROW(KJIT_ETARGET, "target unknown or unsupported by the compiler"),
	ROW(KJIT_EBACKEND, "backend unknown or its compiler is not installed"),
	ROW(KJIT_ENOKERNEL, "no bundled kernel of that name"),
	ROW(KJIT_EWORKER, "the compile worker crashed or was killed"),
	ROW(KJIT_ETIMEDOUT, "timed out"),
	ROW(KJIT_ETOOBIG, "over the size limit"),
	ROW(KJIT_EINCLUDE, "an #include outside the allowed directories"),
	ROW(KJIT_ENOENT, "no such cache entry"),
	ROW(KJIT_ECORRUPT, "digest mismatch: corrupt data"),
	ROW(KJIT_EBUSY, "kjitd is busy (retry shortly), or another kjitd already serves this cache directory"),
	ROW(KJIT_EDENIED, "kjitd refused this user"),
	ROW(KJIT_EINTERNAL, "internal error in kjit (please report it)"),
	ROW(KJIT_ESHUTDOWN, "kjitd is shutting down"),
};

_Static_assert(sizeof codes / sizeof codes[0] == 1 - KJIT_ERROR_MIN, "a KJIT_E* code past KJIT_ERROR_MIN, or a row missing");

/* The row of code, or NULL. */
static const struct code_row *row_of(int code)
{
	if (code > 0 || code < KJIT_ERROR_MIN || codes[-code].name == NULL)
		return NULL;
	return &codes[-code];
}

const char *kjit_strerror(int code)
{
	const struct code_row *r = row_of(code);
	return r ? r->words : "unknown kjit error";
}

const char *kjit_error_name(int code)
{
	const struct code_row *r = row_of(code);
	return r ? r->name : NULL;
}

static const char *const backends[] = { NULL, "hip", "cuda", "vulkan" };

const char *kjit_backend_name(int backend)
{
	if (backend <= 0 || backend >= (int)(sizeof backends / sizeof backends[0]))
		return NULL;
	return backends[backend];
}

int kjit_backend_from_name(const char *name)
{
	for (int i = 1; name && i < (int)(sizeof backends / sizeof backends[0]); i++)
		if (strcmp(name, backends[i]) == 0)
			return i;
	return KJIT_BACKEND_NONE;
}

const char *kjit_status_name(int status)
{
	switch (status) {
	case KJIT_STATUS_HIT: return "hit";
	case KJIT_STATUS_COMPILED: return "compiled";
	case KJIT_STATUS_JOINED: return "joined";
	case KJIT_STATUS_REMOTE: return "remote hit";
	default: return "none";
	}
}
