/* objcheck.h: the drop-ins' check of an object before a program gets it
 * (objcheck.c says what passes).
 */
#ifndef KJ_OBJCHECK_H
#define KJ_OBJCHECK_H

#include <stddef.h>

#include "kjit.h"

/* Whether data (size bytes) is what a compile for target of backend
 * (KJIT_BACKEND_CUDA compute_XX: PTX text; sm_XX: a CUBIN for XX;
 * KJIT_BACKEND_HIP gfxNNN: an AMDGPU ELF for it) gives.  0, or -1 with one
 * phrase in why saying what it is instead.  A target or backend without a
 * check fails. */
int kj__object_check(int backend, const char *target, const void *data, size_t size, char *why, size_t whylen);

#endif /* KJ_OBJCHECK_H */
