// vecadd_main.hip: a HIP sample program: standard headers, a host main,
// hipcc builds it.  kjit takes its device code (hipcc --genco).
#include <hip/hip_runtime.h>
#include <cstdint>
#include <iostream>
#include <vector>

__global__ void vecadd(const float *a, const float *b, float *c, std::uint32_t n)
{
	std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

int main()
{
	const std::uint32_t n = 1024;
	std::vector<float> a(n, 1.f), b(n, 2.f), c(n);
	float *da, *db, *dc;
	if (hipMalloc(&da, n * 4) != hipSuccess || hipMalloc(&db, n * 4) != hipSuccess || hipMalloc(&dc, n * 4) != hipSuccess)
		return 1;
	hipMemcpy(da, a.data(), n * 4, hipMemcpyHostToDevice);
	hipMemcpy(db, b.data(), n * 4, hipMemcpyHostToDevice);
	hipLaunchKernelGGL(vecadd, dim3(n / 256), dim3(256), 0, 0, da, db, dc, n);
	hipMemcpy(c.data(), dc, n * 4, hipMemcpyDeviceToHost);
	std::cout << "c[0] = " << c[0] << std::endl;
	return 0;
}
