/* testcomp.h: the debug-only "test" compiler family (compilers/testcomp.c).
 * In the build's kjitd, which the tests and benchmarks run, selected only by
 * name (`kjitd --hip-compiler test`); the daemon's tests use it to make a
 * worker abort, hang or stall on demand.  The installed kjitd is built
 * without it (compiler.c with KJ_NO_TESTCOMP: the Makefile's kjitd-dist). */
#ifndef KJ_TESTCOMP_H
#define KJ_TESTCOMP_H

#include "compiler.h"

extern const struct kj__compiler_ops kj__compiler_test;

#endif /* KJ_TESTCOMP_H */
