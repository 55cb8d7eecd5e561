// A sample application laid out as src/ and include/, built from its
// folder with no -I: nvcc and hipcc look for a quoted include beside the
// including file first, so "../include/" is found.
#include "../include/saxpy_params.hpp"

extern "C" __global__ void app_saxpy(float *y, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = SAXPY_A * x[i] + y[i];
}
