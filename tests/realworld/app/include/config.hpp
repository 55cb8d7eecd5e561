// config.hpp: the application's build configuration.
#pragma once
#define APP_SCALE_BIAS 0.0f
