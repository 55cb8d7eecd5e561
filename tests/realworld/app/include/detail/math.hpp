// detail/math.hpp: steps out of detail/ and back into the tree for the
// configuration header beside util.hpp.
#pragma once
#include "../config.hpp"

namespace app { namespace detail {
__device__ inline float mul(float a, float b) { return APP_SCALE_BIAS + a * b; }
} }
