// A kernel built with -include prelude.h (nvcc, NVRTC's --pre-include):
// PRE_SCALE and pre_real come from the pre-included file.
extern "C" __global__ void pre_scale(pre_real *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = PRE_SCALE(x[i]);
}
