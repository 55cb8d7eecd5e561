// beside/stencil.cu: a kernel whose header sits beside it and is found
// without -I, as nvcc finds it (the including file's own folder first).
#include "stencil_common.h"

extern "C" __global__ void stencil3(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i > 0 && i < n - 1)
		out[i] = STENCIL_W0 * in[i - 1] + STENCIL_W1 * in[i] + STENCIL_W0 * in[i + 1];
}
