// The HIP build of the same application: "../include/" with no -I.
#include <hip/hip_runtime.h>
#include "../include/saxpy_params.hpp"

extern "C" __global__ void app_saxpy(float *y, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = SAXPY_A * x[i] + y[i];
}
