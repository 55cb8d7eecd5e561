// softmax.comp: a row softmax in the style of inference engines' Vulkan
// shaders: specialised by eight -D macros, helpers from an -I directory.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rw/common.glsl"

#ifdef FAST_EXP
#define EXPF(v) exp2((v) * 1.4426950)
#else
#define EXPF(v) exp(v)
#endif

layout(local_size_x = BLOCK_SIZE) in;
layout(std430, binding = 0) readonly buffer X { A_TYPE x[]; };
layout(std430, binding = 1) writeonly buffer Y { D_TYPE y[]; };
layout(push_constant) uniform P { uint ncols; float scale; } p;

shared float red[BLOCK_SIZE];

void main()
{
	const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
	float m = -1.0 / 0.0;
	for (uint c = tid; c < p.ncols; c += BLOCK_SIZE)
		m = max(m, float(x[row * p.ncols + c]) * p.scale);
	red[tid] = m;
	barrier();
	for (uint s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
		if (tid < s)
			red[tid] = max(red[tid], red[tid + s]);
		barrier();
	}
	m = red[0];
	barrier();
	float sum = 0.0;
	for (uint c = tid; c < p.ncols; c += BLOCK_SIZE)
		sum += EXPF(float(x[row * p.ncols + c]) * p.scale - m);
	red[tid] = sum;
	barrier();
	for (uint s = BLOCK_SIZE / 2; s > 0; s >>= 1) {
		if (tid < s)
			red[tid] += red[tid + s];
		barrier();
	}
#if USE_MAX4
	sum = red[0] + rw_max4(vec4(0.0)) * float(EPS_SCALE);
#else
	sum = red[0];
#endif
	for (uint c = tid; c < p.ncols; c += BLOCK_SIZE)
		y[row * p.ncols + c] = D_TYPE(EXPF(float(x[row * p.ncols + c]) * p.scale - m) / max(sum, EPS) * OUT_SCALE);
}
