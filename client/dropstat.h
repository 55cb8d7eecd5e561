/* dropstat.h: the per-user counters of kjit's drop-in libnvrtc/libhiprtc:
 * how many compiles kjit served and how many went to the real library,
 * and why.  Written by dropin/ (any process of the user), read by `kjit
 * stats`.  docs/dropin.md says why a file and not kjitd.
 */
#ifndef KJ_DROPSTAT_H
#define KJ_DROPSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "kj_limits.h"

/* What happened to one compile through the drop-in. */
enum kj__dropstat_why {
	KJ_DS_SERVED = 0,    /* kjit answered it (hit, compiled or joined) */
	KJ_DS_UNREACHABLE,   /* kjitd could not be reached */
	KJ_DS_OPTION,        /* an option kjit does not model (-I, -dlto, PCH, --time, unknown) */
	KJ_DS_NO_ARCH,       /* no --gpu-architecture / --offload-arch: the real default applies */
	KJ_DS_API,           /* a call kjit does not model came first (flow callback) */
	KJ_DS_INPUT,         /* a program or header name kjit's protocol cannot carry */
	KJ_DS_REFUSED,       /* kjitd answered an error other than a compile failure */
	KJ_DS_OPTION_ERROR,  /* the compiler rejected an option: the real library gives the exact code */
	KJ_DS_TRUNCATED,     /* the compile log was past kjit's log cap */
	KJ_DS_LOG,           /* hiprtc: a log kjit cannot give byte for byte (it names comgr's random folder) */
	KJ_DS_UNTRUSTED,     /* the kjitd found was not trusted (client/trust.c): nothing was sent */
	KJ_DS_BAD_OUTPUT,    /* kjitd's answer was not the object asked for (client/objcheck.c) */
	KJ_DS_PATH,          /* -I: the output could depend on where a header lies (line info, __FILE__, a
			      * log, an include NVRTC finds elsewhere) */
	KJ_DS_COUNT
};

/* The file: $KJIT_DROPIN_STATS, else $XDG_CACHE_HOME/kjit/dropin.stats,
 * else $HOME/.cache/kjit/dropin.stats.  0, or KJIT_ETOOBIG / KJIT_ENOENT
 * (no HOME).  */
int kj__dropstat_path(char *buf, size_t len);

/* Adds one to counter why (creating the file, 0600, and its folder).
 * 0 or a negative code; the drop-in ignores failures (a count is not
 * worth a program's error). */
int kj__dropstat_add(int why);

/* Reads every counter into counts[KJ_DS_COUNT].  KJIT_ENOENT when the
 * file does not exist yet. */
int kj__dropstat_read(uint64_t *counts);

/* "served", "unreachable", ...; NULL past the end. */
const char *kj__dropstat_name(int why);

#endif /* KJ_DROPSTAT_H */
