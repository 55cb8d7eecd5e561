#pragma once
#include "saxpy_detail.hpp"
#define SAXPY_A SAXPY_DEFAULT_A
