// The first line of a WGSL kernel the renderer writes (renderer/wgsl_renderer.cpp), which says how
// it binds and what its scalar arguments are:
//   // lazygrad-wgsl bindings=rrwea vars=if workgroup=64
// bindings: one letter per binding (r: read, w: written, e: the error word, a: the arguments'
// uniform block); vars: one per scalar argument (i: i32, u: u32, f: f32), "-" for none; workgroup:
// the work-items per group. Read by the WebGPU device and by export_webgpu.
#pragma once

#include <cstdint>
#include <string>

namespace lazygrad::webgpu {

struct KernelHead {
  std::string bindings, vars;  // vars "" when there are none
  int64_t workgroup = 0;
};

// Error naming the kernel when the line or a field is missing.
KernelHead read_kernel_head(const std::string& name, const std::string& source);

}  // namespace lazygrad::webgpu
