// app/src/main.hip: a HIP sample application laid out as src/ + include/,
// whose source reaches its headers with "../include/..." as HIP and CUDA
// sample applications do (built with -I app/include, or from app/src).
#include <hip/hip_runtime.h>
#include "../include/util.hpp"

extern "C" __global__ void app_scale(float *x, float s, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = app::scaled(x[i], s);
}
