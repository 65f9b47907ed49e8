// Buffer: flat device memory of one dtype. Pool memory is allocated on first use and freed with the
// last reference; external memory (a file mapping) belongs to an owner that the Buffer keeps alive.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "lazygrad/dtype.h"

namespace lazygrad {

struct Buffer {
  // Throws SizeError when `size` elements of `dtype` are not a byte count int64 holds.
  Buffer(std::string device, DType dtype, int64_t size);
  // Over memory someone else owns: `memory.get()` holds `size` elements aligned to the dtype's size,
  // and `memory` keeps them alive (for a mapped file: shared_ptr's aliasing constructor over the
  // file's owner). Never given to the pool. Throws Error when `memory` is null, or the size is bad.
  Buffer(std::string device, DType dtype, int64_t size, std::shared_ptr<void> memory);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::string device;
  DType dtype;
  int64_t size;  // elements
  // How many kernels have written it: a graph kept for a later backward pass records the versions
  // of the buffers it read, and finds out this way that one was overwritten in place since.
  std::atomic<int64_t> version{0};
  size_t nbytes() const { return static_cast<size_t>(size) * itemsize(dtype); }
  bool allocated() const { return data_ != nullptr; }
  bool external() const { return external_ != nullptr; }
  // Pool memory: allocates (64-byte aligned) on first call; OutOfMemoryError (naming the bytes and
  // the buffer) when the machine will not give it, with nothing allocated or counted.
  void* data();

 private:
  void* data_ = nullptr;
  std::shared_ptr<void> external_;  // the owner of external memory; null for pool memory
};

}  // namespace lazygrad
