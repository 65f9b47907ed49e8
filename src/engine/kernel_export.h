// The compile-only CUDA check's source of kernels: with LAZYGRAD_CUDA_EXPORT set to a folder, every
// kernel a process compiles (for whatever device it runs on) is also optimized for a CUDA GPU, as
// the CUDA device would optimize it, rendered in CUDA C++ and written to that folder, one file per
// distinct source. tests/cuda_compile.cpp compiles them all with NVRTC, on a machine without a GPU.
#pragma once

#include "codegen/kernel.h"

namespace lazygrad {

// Writes k's CUDA renderings into $LAZYGRAD_CUDA_EXPORT (nothing when it is unset): with the
// default opts, and with LAZYGRAD_CUDA_EXPORT_SAMPLES=N also N random walks of BEAM's moves on the
// CUDA target (seeded by the kernel's name: the same kernels each run). A file is
// `lg_<hash>.cu`, its kernel named lg_<hash> so that many fit one NVRTC program; a kernel that
// cannot be rendered leaves `lg_<hash>.error` with the reason, which the check reports.
void export_cuda_kernel(const Kernel& k);

}  // namespace lazygrad
