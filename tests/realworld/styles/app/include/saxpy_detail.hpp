#pragma once
#define SAXPY_DEFAULT_A 2.5f
