// A build that chooses a configuration header on the command line
// (-DSTYLES_CONFIG=common.cuh), included through a stringizing macro: the
// header's name is known only once -D is applied.
#define STYLES_STR2(x) #x
#define STYLES_STR(x) STYLES_STR2(x)
#include STYLES_STR(rw/STYLES_CONFIG)

extern "C" __global__ void cfg_sum(float *out, const float *in)
{
	float v = in[threadIdx.x];
	v = rw_warp_sum(v);
	if (threadIdx.x == 0)
		out[blockIdx.x] = v;
}
