// stencil_common.h: the weights, beside the kernel that includes them.
#pragma once
#define STENCIL_W0 0.25f
#define STENCIL_W1 0.5f
