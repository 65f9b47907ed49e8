// Renderers: linear IR to a device's source. One C-style base (c_style.cpp) and a small subclass
// per language: C for the CPU (c_renderer.cpp), OpenCL C (opencl_renderer.cpp), CUDA C++
// (cuda_renderer.cpp); WGSL, not a C dialect, is a renderer of its own (wgsl_renderer.cpp). Each
// publishes a Target, what its device can do, and the optimizer and the engine read that, never a
// device name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codegen/linearize.h"
#include "codegen/target.h"

namespace lazygrad {

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual const Target& target() const = 0;
  // The source of one kernel. Its entry point is named `<k.name>_entry` on the CPU (see
  // c_renderer.cpp) and `<k.name>` on devices with work-groups.
  virtual std::string render(const Kernel& k, const LinearKernel& lin) const = 0;
};

// The dtype of each scalar argument of k (k.vars), from its DEFINE_VAR; int64 for one the kernel
// does not read. What every renderer declares the arguments with.
std::vector<DType> kernel_var_dtypes(const Kernel& k);

const Renderer& c_renderer();                                   // the CPU's
std::unique_ptr<Renderer> make_opencl_renderer(Target target);  // per OpenCL device (its dtypes, sizes)
// An NVIDIA GPU of compute capability sm (90: sm_90), what the CUDA device and the compile-only
// check (engine/kernel_export.h) optimize and render for.
Target cuda_target(int sm);
std::unique_ptr<Renderer> make_cuda_renderer(Target target);

// WGSL for WebGPU (wgsl_renderer.cpp): what the page's GPUDevice allows, from its limits.
struct WgslLimits {
  int64_t max_storage_buffers = 8;               // maxStorageBuffersPerShaderStage
  int64_t max_workgroup_size = 256;              // maxComputeInvocationsPerWorkgroup (and size x)
  int64_t max_workgroups_per_dimension = 65535;  // maxComputeWorkgroupsPerDimension
  int64_t workgroup_storage = 16384;             // maxComputeWorkgroupStorageSize, bytes
  bool keeps_subnormals = true;                  // f32 arithmetic keeps subnormal values
};
Target webgpu_target(const WgslLimits& limits);
std::unique_ptr<Renderer> make_wgsl_renderer(Target target, WgslLimits limits);

}  // namespace lazygrad
