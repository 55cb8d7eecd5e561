// blur_common.glsl: beside blur.comp.
#define BLUR_GAIN 0.5
