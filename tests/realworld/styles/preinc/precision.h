// precision.h: the project's floating-point type, chosen once.
#pragma once
typedef float pre_real;
#define PRE_REAL(v) ((pre_real)(v))
