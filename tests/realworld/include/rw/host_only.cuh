// host_only.cuh: host conveniences that NVRTC never sees (__CUDACC_RTC__
// is defined there): the include scan must not refuse them.
#pragma once
#ifndef __CUDACC_RTC__
#include <cstdio>
#include <vector>
static inline void rw_report(const char *what) { std::printf("%s\n", what); }
#endif
