/* testcomp.h: the debug-only "test" compiler family (compilers/testcomp.c).
 * Compiled in always, selected only by name (`kjitd --worker test`); the
 * daemon's tests use it to make a worker abort, hang or stall on demand. */
#ifndef KJ_TESTCOMP_H
#define KJ_TESTCOMP_H

#include "compiler.h"

extern const struct kj__compiler_ops kj__compiler_test;

#endif /* KJ_TESTCOMP_H */
