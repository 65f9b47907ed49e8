// What a device can do, as the optimizer and the engine see it: each renderer publishes one
// (renderer/renderer.h), and nothing past this description asks which device a kernel is for.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "codegen/cpu_model.h"

namespace lazygrad {

struct Target {
  std::string language;  // "C", "OpenCL C"
  // Vector lanes: the widest vector in bytes a kernel may compute with (0: scalars only).
  int64_t vector_bytes = 0;
  // The CPU's execution model: the kernel loops over a slice [gstart, gend) of the global range,
  // one slice per thread, and returns its error word. Otherwise the device runs one work-item per
  // global index on a grid of work-groups and the kernel writes its error word atomically into a
  // buffer the device reads at synchronize().
  bool thread_slices = true;
  bool scratch = true;                        // a kernel may allocate scratch (staged loads) at run time
  bool interrupt_polls = true;                // a kernel reads the Ctrl-C flag in its long loops
  int64_t local_memory = 0;                   // bytes of memory a work-group shares (0: no work-groups)
  std::array<int64_t, 3> max_local{1, 1, 1};  // work-items per group, per axis
  int64_t max_group_size = 1;                 // work-items per group in all
  std::array<int64_t, 3> max_grid{INT64_MAX, 1, 1};  // groups per axis
  // The work-items default_opts gives a grouped reduction (0: none). A CPU running OpenCL runs a
  // group on one core and vectorizes across its work-items: its SIMD width in floats. A GPU spreads
  // a group over many lanes to hide memory latency: a few hundred.
  int64_t group_reduction = 0;
  // Work-items per group of a kernel without Local or Group opts (one work-item per global index):
  // a wavefront or two; PoCL vectorizes a group across SIMD lanes.
  int64_t block_size = 64;
  // mma.sync.m16n8k16 on float16 and bfloat16 with float32 accumulation (codegen/tensor_cores.h):
  // CUDA from sm_80; OpenCL emulates it where LAZYGRAD_TC_EMULATE=1 (to test the kernels on a CPU).
  bool tensor_cores = false;
  // The GPU's compute capability, 10 * major + minor (CUDA: 90 is sm_90), 0 elsewhere.
  int sm = 0;
  // Dtypes it can hold. float16 and bfloat16 are stored as 16 bits and computed in float32 on every
  // device; these are about storage and arithmetic of the wide types.
  bool float64 = true, float16 = true, int64 = true;
  bool keeps_subnormals = true;  // arithmetic keeps subnormal values (FTZ=0 parity cases need it)
  // Buffers one kernel may bind, its output and its inputs (0: any number). WebGPU binds each as a
  // storage buffer, of which a kernel has few (maxStorageBuffersPerShaderStage): the scheduler
  // gives a fused value of a kernel with more a buffer of its own (engine/buffer_limit.h).
  int64_t max_buffers = 0;
  // The CPU's registers, pipes and caches, from which the optimizer derives register tiles and
  // blocking (codegen/cpu_model.h); a thread-slice target's only.
  CpuModel cpu;
};

// The CPU's: the host's vectors (64 bytes with AVX-512) and model, thread slices, scratch, Ctrl-C
// polls. The second form describes another machine (tests pin each known kind's kernels with it).
Target cpu_target();
Target cpu_target(const CpuModel& cpu);

}  // namespace lazygrad
