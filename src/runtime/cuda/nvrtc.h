// NVRTC, NVIDIA's run-time compiler of CUDA C++, opened at run time like the driver (cuda_api.h):
// the CUDA device compiles its kernels with it, and the compile-only check (tests/cuda_compile.cpp)
// compiles every kernel the suites make on a machine with no GPU.
#pragma once

#include <string>

namespace lazygrad {

// Why NVRTC cannot be used ("" when it can). It is LAZYGRAD_NVRTC (a path) when set, else the
// first of libnvrtc.so.13, .12, libnvrtc.so the loader finds, then the same in $CUDA_PATH/lib64
// and /usr/local/cuda/lib64.
std::string nvrtc_missing();
// "13.0"; what a compiled kernel depends on besides its source and arch (the disk cache's key).
std::string nvrtc_version();

// Compiles CUDA C++ `source` for `arch`: "sm_90" gives a CUBIN (machine code for that GPU),
// "compute_90" PTX. Throws lazygrad::Error naming `what` with NVRTC's log when it fails, or when
// NVRTC is missing. Options: lazygrad's (-default-device, no contraction of a * b + c: the CPU's
// rounding) and C++17.
std::string nvrtc_compile(const std::string& source, const std::string& what, const std::string& arch);

}  // namespace lazygrad
