// The HIP build of scale.cu, with hipcc -include prelude.h.
#include <hip/hip_runtime.h>

extern "C" __global__ void pre_scale(pre_real *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = PRE_SCALE(x[i]);
}
