// warn_unused.cu: a kernel with an unused variable: a warning (#177-D in
// NVRTC and nvcc, -Wunused-variable in clang), an error under -Werror.
extern "C" __global__ void warn_unused(float *x)
{
	int unused_local;
	x[threadIdx.x] = 1.0f;
}
