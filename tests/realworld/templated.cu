// templated.cu: a templated kernel as NVRTC users write it: no extern "C",
// instantiated and found by name expression (scale<float>), the mangled
// name coming back from nvrtcGetLoweredName.
#include <cuda_fp16.h>
#include "rw/common.cuh"

template <typename T, int UNROLL>
__global__ void scale(T *__restrict__ x, T a, int n)
{
	int i = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
#pragma unroll
	for (int k = 0; k < UNROLL; k++)
		if (i + k < n)
			x[i + k] = x[i + k] * a;
}
