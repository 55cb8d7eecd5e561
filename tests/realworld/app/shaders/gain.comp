// app/shaders/gain.comp: the application's Vulkan path, sharing a GLSL
// header in ../include with "../include/gain.glsl".
#version 450
#extension GL_GOOGLE_include_directive : require
#include "../include/gain.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float v[]; };

void main() { v[gl_GlobalInvocationID.x] = apply_gain(v[gl_GlobalInvocationID.x]); }
