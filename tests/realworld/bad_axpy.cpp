// bad_axpy.cpp: a HIP program named .cpp, as HIP programs often are, with a
// deliberate error: hipcc's message must name bad_axpy.cpp.
#include <hip/hip_runtime.h>

__global__ void bad_axpy(float a, const float *x, float *y, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y_missing[i];
}
