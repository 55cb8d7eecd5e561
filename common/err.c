/* err.c: the words for kjit's error codes, backends and statuses. */
#include <string.h>

#include "kj_types.h"

static const char *const messages[] = {
	[0] = "success",
	[-KJIT_ENOMEM] = "out of memory",
	[-KJIT_EINVAL] = "invalid argument or malformed request",
	[-KJIT_EIO] = "input/output error",
	[-KJIT_ECONNECT] = "kjitd is unreachable",
	[-KJIT_EPROTO] = "protocol error (client and daemon versions differ?)",
	[-KJIT_ECOMPILE] = "the compiler rejected the source",
	[-KJIT_ENOTARGET] = "no target given, configured or detected",
	[-KJIT_ETARGET] = "target unknown or unsupported by the compiler",
	[-KJIT_EBACKEND] = "backend unknown or its compiler is not installed",
	[-KJIT_ENOKERNEL] = "no bundled kernel of that name",
	[-KJIT_EWORKER] = "the compile worker crashed or was killed",
	[-KJIT_ETIMEDOUT] = "timed out",
	[-KJIT_ETOOBIG] = "over the size limit",
	[-KJIT_EINCLUDE] = "an #include outside the allowed directories",
	[-KJIT_ENOENT] = "no such cache entry",
	[-KJIT_ECORRUPT] = "digest mismatch: corrupt data",
	[-KJIT_EBUSY] = "kjitd is busy (retry shortly), or another kjitd already serves this cache directory",
	[-KJIT_EDENIED] = "kjitd refused this user",
	[-KJIT_EINTERNAL] = "internal error in kjit (please report it)",
	[-KJIT_ESHUTDOWN] = "kjitd is shutting down",
};

const char *kjit_strerror(int code)
{
	if (code > 0 || code < KJIT_ERROR_MIN || messages[-code] == NULL)
		return "unknown kjit error";
	return messages[-code];
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
