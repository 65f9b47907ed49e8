// The device interface: what the engine needs from a place that runs kernels. A device is four
// small things: an Allocator (its memory), a compiler (Device::compile, through the disk cache), the
// Programs it makes, and synchronize(). A backend is one folder under runtime/ (cpu/, opencl/,
// cuda/, webgpu/) and, if its language is new, one renderer subclass (renderer/renderer.h).
// docs/devices.md has the checklist.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "lazygrad/runtime.h"

namespace lazygrad {

class Renderer;

// A flag that is never set.
inline const volatile int* no_stop() {
  static const volatile int never = 0;
  return &never;
}

// Where a kernel runs on a device with work-groups: grid[i] groups of local[i] threads along axis i.
struct LaunchDims {
  std::array<int64_t, 3> grid{1, 1, 1}, local{1, 1, 1};
};

// One launch's arguments. Buffers are the Allocator's handles (on the CPU, host pointers); scalar
// arguments are int64 bit patterns (a float one: its float64 bits).
struct LaunchArgs {
  std::span<void* const> buffers;
  std::span<const int64_t> vars;
  int64_t global_size = 0;    // the CPU: global indices [0, global_size), split across threads
  int64_t work_per_item = 1;  // inner iterations per global index, for the CPU's threading
  LaunchDims dims;            // devices with work-groups
  // A long kernel on the CPU reads *stop in its loops and returns early, with kInterruptedBit set,
  // once it is non-zero (runtime/interrupt.h).
  const volatile int* stop = no_stop();
  uint32_t launch_id = 0;  // devices without a return code: synchronize() names the first failing one
  bool timed = false;      // wait for the kernel and report its time (DEBUG=2, BEAM)
};

struct LaunchResult {
  int error = 0;        // the kernel's error word (codegen/kernel.h) where the device returns one
  double seconds = -1;  // the kernel's own time when timed (device events where the API has them)
};

// A compiled kernel.
class Program {
 public:
  virtual ~Program() = default;
  virtual LaunchResult launch(const LaunchArgs& args) const = 0;
};

// A launch over global indices [0, global_size) on a target with thread slices (the CPU), in one
// call: for tests and benchmarks that hold a Program.
inline LaunchResult launch_slices(const Program& p, std::span<void* const> buffers,
                                  std::span<const int64_t> vars, int64_t global_size,
                                  int64_t work_per_item = 1, const volatile int* stop = no_stop()) {
  LaunchArgs a;
  a.buffers = buffers;
  a.vars = vars;
  a.global_size = global_size;
  a.work_per_item = work_per_item;
  a.stop = stop;
  return p.launch(a);
}

// An error a kernel raised on a device without a return code: the bits of the first failing
// launch's error word, and its launch_id. bits == 0: none.
struct DeferredError {
  int bits = 0;
  uint32_t launch_id = 0;
};

// A device's memory. Handles are opaque outside runtime/: only the device reads them. Freed blocks
// are kept for reuse by size (PooledAllocator), since a fresh allocation costs page faults on the
// CPU and a driver call elsewhere.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // A handle to `bytes` (> 0, a multiple of 64) of device memory; null when the device will not give it.
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* handle, size_t bytes) noexcept = 0;
  // Host to device and back, whole buffers (n bytes from the start). copyout waits for the kernels
  // that write the buffer; both return once the host memory may be reused.
  virtual void copyin(void* dst, std::span<const std::byte> src) = 0;
  virtual void copyout(std::span<std::byte> dst, void* src) = 0;
  // Where the host can read and write the memory itself (the CPU), its address; else null.
  virtual void* host_ptr(void* /*handle*/) const { return nullptr; }
  // A handle to `bytes` that read as zeros without a kernel writing them, where the device has such
  // memory cheaper than a fill (the CPU: fresh pages, zeroed by the OS as they are first touched);
  // null otherwise, and the engine runs the fill. Freed with free() like any other.
  virtual void* alloc_zeroed(size_t /*bytes*/) { return nullptr; }
};

// An Allocator that keeps freed blocks (up to kMaxPooled bytes) for reuse by size, and on a failed
// allocation frees them and tries once more. A backend implements raw_alloc and raw_free.
class PooledAllocator : public Allocator {
 public:
  static constexpr size_t kMaxPooled = size_t(1) << 30;
  void* alloc(size_t bytes) final;
  void free(void* handle, size_t bytes) noexcept final;
  // Never from the pool, whose blocks hold what they held.
  void* alloc_zeroed(size_t bytes) final;

 protected:
  virtual void* raw_alloc(size_t bytes) = 0;  // null when the device will not give it
  virtual void raw_free(void* handle) noexcept = 0;
  virtual void* raw_alloc_zeroed(size_t /*bytes*/) { return nullptr; }  // null: run the fill

 private:
  bool release_spare();
  struct State;
  std::shared_ptr<State> state_ = make_state();
  static std::shared_ptr<State> make_state();
};

// The programs a device has loaded, by a key naming the kernel (its name, source and compiler),
// while some holder keeps them: a kernel asked for again is that one program, and one no one holds
// is unloaded, and loads again from the disk cache (a process that meets kernel after kernel, the
// compiler fuzzer, ran out of memory mappings keeping them all). Thread-safe.
class LoadedPrograms {
 public:
  std::shared_ptr<Program> find(const std::string& key);
  // p, registered under key; or the program another thread registered under it meanwhile.
  std::shared_ptr<Program> keep(const std::string& key, std::shared_ptr<Program> p);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::weak_ptr<Program>> programs_;
};

class Device {
 public:
  virtual ~Device() = default;
  const std::string& name() const { return name_; }  // "CPU", "CPU:1", "CL", "CL:1"
  std::string kind() const { return name_.substr(0, name_.find(':')); }
  virtual DeviceInfo info() const = 0;
  virtual Allocator& allocator() = 0;
  // The language its kernels are written in, and what the target can do (the optimizer reads it).
  virtual const Renderer& renderer() const = 0;
  // Compile (or load from the disk cache) the kernel function `name` in `source`.
  virtual std::shared_ptr<Program> compile(const std::string& name, const std::string& source) = 0;
  // Several kernels at once: each job gets its program, or its error (an InterruptedError is thrown).
  // The default compiles them one by one; the CPU builds the ones not cached with one compiler.
  struct CompileJob {
    std::string name;
    const std::string* source = nullptr;
    std::shared_ptr<Program> program;
    std::string error;
  };
  virtual void compile_batch(std::span<CompileJob> jobs);
  // Waits until every launch and copy so far has finished; the first error a kernel raised since
  // the last call (devices without a return code; the CPU returns none).
  virtual DeferredError synchronize() { return {}; }
  // Copies src (on `from`) into dst (on this device), n bytes; the default goes through the host.
  virtual void transfer(void* dst, Device& from, void* src, size_t bytes);

 protected:
  explicit Device(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// The registry. A name is a kind and an optional index: "CPU", "cpu:1", "CL", "CL:1", "CUDA:0";
// case does not matter and ":0" is the kind alone. "CPU:n" are distinct virtual devices over the
// same cores (for multi-device tests). Throws Error naming the device when it is unknown or
// missing (why: no library, no platform, no device).
Device& device(const std::string& name);
std::string canonical_device(const std::string& name);  // "cl:0" -> "CL"; Error when malformed

// The backends: each knows its devices and, when it has none, why. Registered in device.cpp.
struct Backend {
  std::string kind;                                                     // "CPU", "CL"
  std::unique_ptr<Device> (*open)(const std::string& name, int index);  // Error when it cannot
  std::vector<DeviceInfo> (*list)();  // what it finds; one unavailable entry with the reason if none
};
std::unique_ptr<Device> open_cpu_device(const std::string& name, int index);
std::vector<DeviceInfo> list_cpu_devices();
std::unique_ptr<Device> open_cl_device(const std::string& name, int index);
std::vector<DeviceInfo> list_cl_devices();
std::unique_ptr<Device> open_cuda_device(const std::string& name, int index);
std::vector<DeviceInfo> list_cuda_devices();
std::unique_ptr<Device> open_webgpu_device(const std::string& name, int index);
std::vector<DeviceInfo> list_webgpu_devices();

Device& cpu_device();  // device("CPU")

}  // namespace lazygrad
