// util.hpp: the application's device helpers; its detail header is
// reached through a subfolder and back out of it.
#pragma once
#include "detail/math.hpp"

namespace app {
__device__ inline float scaled(float v, float s) { return detail::mul(v, s); }
}
