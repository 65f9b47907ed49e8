// Buffer: flat memory of one dtype on one device. Its memory comes from the device's allocator on
// first use and goes back with the last reference; external memory (a file mapping) belongs to an
// owner that the Buffer keeps alive. Outside runtime/ nothing reads it by pointer: copyin, copyout,
// and host_ptr() where the host can read it (the CPU: zero copy).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lazygrad/dtype.h"

namespace lazygrad {

class Device;

struct Buffer {
  // Throws SizeError when `size` elements of `dtype` are not a byte count int64 holds, Error when
  // the device is unknown or cannot be opened.
  Buffer(const std::string& device, DType dtype, int64_t size);
  // Over host memory someone else owns (on a device the host can read: the CPU): `memory.get()`
  // holds `size` elements aligned to the dtype's size, and `memory` keeps them alive (for a mapped
  // file: shared_ptr's aliasing constructor over the file's owner). Never given to the allocator.
  // Throws Error when `memory` is null, the device is not the host's, or the size is bad.
  Buffer(const std::string& device, DType dtype, int64_t size, std::shared_ptr<void> memory);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::string device;  // canonical: "CPU", "CL:1"
  DType dtype;
  int64_t size;  // elements
  // How many kernels have written it: a graph kept for a later backward pass records the versions
  // of the buffers it read, and finds out this way that one was overwritten in place since.
  std::atomic<int64_t> version{0};
  size_t nbytes() const { return static_cast<size_t>(size) * itemsize(dtype); }
  bool allocated() const { return handle_ != nullptr; }
  bool external() const { return external_ != nullptr; }
  Device& dev() const { return *dev_; }
  // The device's handle to the memory, allocated on first call; OutOfMemoryError (naming the bytes
  // and the buffer) when the device will not give it, with nothing allocated or counted.
  void* handle();
  // Allocates it as memory that reads as zeros (Allocator::alloc_zeroed); false, with nothing
  // allocated, when it already was or the device has no such memory.
  bool allocate_zeroed();
  // The memory's host address where the host can read it (allocating it), else null.
  void* host_ptr();
  // Whole-buffer copies from and to the host (nbytes() each).
  void copyin(std::span<const std::byte> src);
  void copyout(std::span<std::byte> dst);

 private:
  void check_dtype() const;
  Device* dev_;
  void* handle_ = nullptr;
  std::shared_ptr<void> external_;  // the owner of external memory; null for the device's own
};

}  // namespace lazygrad
