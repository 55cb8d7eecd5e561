// common.cuh: device helpers shared by the realworld CUDA kernels.
#pragma once
#include "host_only.cuh"

#ifndef RW_BLOCK
#define RW_BLOCK 256
#endif

__device__ __forceinline__ float rw_warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
