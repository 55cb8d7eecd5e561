// A kernel in the style of CUTLASS and CuTe: the standard library is
// reached through a macro that picks libcu++ (<cuda/std/...>), so NVRTC
// and nvcc build the same source.  Project headers are computed too.
#define STYLES_STD_HEADER(name) <cuda/std/name>
#define STYLES_STR2(x) #x
#define STYLES_STR(x) STYLES_STR2(x)
#define STYLES_PROJECT_HEADER(name) STYLES_STR(rw/name)

#include STYLES_STD_HEADER(cstdint)
#include STYLES_STD_HEADER(type_traits)
#include STYLES_PROJECT_HEADER(common.cuh)

namespace styles {
template <typename T>
__device__ T twice(T v)
{
	static_assert(cuda::std::is_arithmetic<T>::value, "a number");
	return v + v;
}
} // namespace styles

extern "C" __global__ void stl_twice(float *out, const float *in, cuda::std::uint32_t n)
{
	cuda::std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = styles::twice(in[i]);
}
