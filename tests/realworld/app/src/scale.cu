// app/src/scale.cu: the CUDA side of the application: the same helpers,
// reached out of src/ with "../include/util.hpp".
#include "../include/util.hpp"

extern "C" __global__ void app_scale_cu(float *x, float s, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = app::scaled(x[i], s);
}
