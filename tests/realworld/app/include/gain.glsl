// gain.glsl: shared by the application's shaders.
float apply_gain(float x) { return 0.5 * x; }
