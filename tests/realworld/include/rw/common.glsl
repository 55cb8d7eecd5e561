// common.glsl: helpers shared by the realworld shaders.
float rw_max4(vec4 v) { return max(max(v.x, v.y), max(v.z, v.w)); }
