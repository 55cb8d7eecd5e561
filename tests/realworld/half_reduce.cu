// half_reduce.cu: a row sum over half inputs written to bf16, in the style
// of LLM inference kernels compiled at run time with NVRTC.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/std/cstdint>
#include "rw/common.cuh"

namespace cg = cooperative_groups;

extern "C" __global__ void half_row_sum(const __half *__restrict__ x, __nv_bfloat16 *__restrict__ out,
					cuda::std::uint32_t cols)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	const __half *row = x + (size_t)blockIdx.x * cols;
	float acc = 0.f;
	for (cuda::std::uint32_t c = threadIdx.x; c < cols; c += RW_BLOCK)
		acc += __half2float(row[c]);
	acc = cg::reduce(warp, acc, cg::plus<float>());
	__shared__ float part[RW_BLOCK / 32];
	if (warp.thread_rank() == 0)
		part[warp.meta_group_rank()] = acc;
	block.sync();
	if (threadIdx.x < 32) {
		float v = threadIdx.x < RW_BLOCK / 32 ? part[threadIdx.x] : 0.f;
		v = rw_warp_sum(v);
		if (threadIdx.x == 0)
			out[blockIdx.x] = __float2bfloat16(v);
	}
}
