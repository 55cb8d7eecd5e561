// prelude.h: what a build passes with -include to every kernel of a
// project (a precision switch and its helpers), so no source includes it.
#pragma once
#include "precision.h"
#define PRE_SCALE(x) ((x) * PRE_REAL(2.0))
