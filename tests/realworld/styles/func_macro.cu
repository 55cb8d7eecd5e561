// Build files that pass function-like macros with -D (ncnn passes dozens
// to every shader): -D'STYLES_LD(p)=__ldg(p)' used in code, and
// -D'STYLES_CFG(x)=<rw/x>' used to name a header (nvcc splits a -D value
// at commas, so one parameter each).
#include STYLES_CFG(common.cuh)

extern "C" __global__ void func_copy(float *out, const float *in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = STYLES_LD(in + i);
}
