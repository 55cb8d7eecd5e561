// hipified.hip: what hipify-perl makes of a CUDA kernel: the runtime header
// included with quotes, a project header beside it, CUDA's built-ins kept.
#include "hip/hip_runtime.h"
#include "rw/scale.h"

extern "C" __global__ void scale_rows(float *x, const float *s, int cols)
{
	int row = blockIdx.x;
	for (int c = threadIdx.x; c < cols; c += blockDim.x)
		x[row * cols + c] *= RW_SCALE(s[row]);
}
