// host_axpy.cu: a whole program as found in training code bases: host
// code, <stdint.h> and <cstdio> beside the kernel.  Only nvcc takes it.
#include <stdint.h>
#include <cstdio>
#include <cstdlib>
#include "rw/common.cuh"

__global__ void axpy(float a, const float *x, float *y, uint32_t n)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += a * x[i];
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], nullptr, 10) : 1u << 20;
	float *x = nullptr, *y = nullptr;
	if (cudaMalloc(&x, n * sizeof *x) != cudaSuccess || cudaMalloc(&y, n * sizeof *y) != cudaSuccess)
		return 1;
	axpy<<<(n + RW_BLOCK - 1) / RW_BLOCK, RW_BLOCK>>>(2.0f, x, y, n);
	printf("axpy: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
	cudaFree(x);
	cudaFree(y);
	return 0;
}
