// Buffer: flat device memory of one dtype. Allocated on first use, freed with its last reference.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lazygrad/dtype.h"

namespace lazygrad {

struct Buffer {
  Buffer(std::string device, DType dtype, int64_t size) : device(std::move(device)), dtype(dtype), size(size) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::string device;
  DType dtype;
  int64_t size;  // elements
  size_t nbytes() const { return static_cast<size_t>(size) * itemsize(dtype); }
  bool allocated() const { return data_ != nullptr; }
  void* data();  // allocates (64-byte aligned) on first call

 private:
  void* data_ = nullptr;
};

}  // namespace lazygrad
