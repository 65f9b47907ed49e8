// The device interface: what the engine needs from a place that runs kernels.
// A backend is one folder under runtime/ implementing these (cpu/ today).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lazygrad/runtime.h"

namespace lazygrad {

// A compiled kernel. launch() runs global indices [0, global_size) with the given buffers and
// scalar arguments, and returns the kernel's error word (codegen/kernel.h). A long kernel reads
// *stop in its loops and returns early, with kInterruptedBit set, once it is non-zero
// (runtime/interrupt.h); pass no_stop() for a launch that must run to its end.
class Program {
 public:
  virtual ~Program() = default;
  virtual int launch(std::span<void* const> buffers, std::span<const int64_t> vars, int64_t global_size,
                     int64_t work_per_item, const volatile int* stop) const = 0;
};

// A flag that is never set.
inline const volatile int* no_stop() {
  static const volatile int never = 0;
  return &never;
}

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceInfo info() const = 0;
  // Compile (or load from the disk cache) the kernel function `name` in `source`.
  virtual std::shared_ptr<Program> compile(const std::string& name, const std::string& source) = 0;
};

Device& cpu_device();

}  // namespace lazygrad
