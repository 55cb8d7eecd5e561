// beside/blur.comp: a GLSL compute shader whose include sits beside it.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "blur_common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float v[]; };

void main() { v[gl_GlobalInvocationID.x] *= BLUR_GAIN; }
