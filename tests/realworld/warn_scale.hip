// warn_scale.hip: a kernel built with the warning flags of a real build
// (-Wall -Wextra -Werror, -Wno-unused-parameter), clean under all of them.
#include <hip/hip_runtime.h>

extern "C" __global__ void warn_scale(float *x, float s, unsigned n, int unused)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= s;
}
