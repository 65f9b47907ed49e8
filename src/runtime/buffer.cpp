#include "runtime/buffer.h"

#include "lazygrad/counters.h"
#include "lazygrad/error.h"
#include "renderer/renderer.h"
#include "runtime/device.h"
#include "shape/size.h"

namespace lazygrad {

namespace {
// Allocations are whole cache lines (the CPU's are 64-byte aligned), and never 0 bytes. n fits in
// int64 (the constructor checks), so rounding up cannot wrap.
size_t rounded(size_t n) { return n ? (n + 63) / 64 * 64 : 64; }
}  // namespace

// GlobalCounters::mem_used counts nbytes() (as tinygrad does, not the rounded allocation) of the
// devices' own memory only: an external buffer's memory is its owner's (a file mapping, paged in
// from the file), so it counts in buffers_live alone.
Buffer::Buffer(const std::string& device_name, DType dtype, int64_t size)
    : dtype(dtype), size(size), dev_(&lazygrad::device(device_name)) {
  device = dev_->name();
  checked_nbytes({size}, dtype, "Buffer");
  check_dtype();
}

// A device that cannot hold the dtype refuses it here, where the tensor is made, not in a kernel.
void Buffer::check_dtype() const {
  const Target& t = dev_->renderer().target();
  if ((dtype == kFloat64 && !t.float64) || ((dtype == kInt64 || dtype == kUInt64) && !t.int64))
    throw Error("Buffer: " + device + " (" + t.language + ") has no " + std::string(dtype_name(dtype)) +
                (t.language == "WGSL" ? " (WGSL has no 64-bit floats: docs/webgpu.md)"
                                      : " (for float64 an OpenCL device needs cl_khr_fp64)") +
                "; keep such tensors on the CPU");
}

Buffer::Buffer(const std::string& device_name, DType dtype, int64_t size, std::shared_ptr<void> memory)
    : dtype(dtype), size(size), dev_(&lazygrad::device(device_name)), external_(std::move(memory)) {
  device = dev_->name();
  if (!external_) throw Error("Buffer: external memory is null");
  if (dev_->kind() != "CPU") throw Error("Buffer: host memory cannot back a buffer on " + device);
  checked_nbytes({size}, dtype, "Buffer");
  handle_ = external_.get();
  GlobalCounters::buffers_live++;
}

Buffer::~Buffer() {
  if (!handle_) return;
  GlobalCounters::buffers_live--;
  if (external_) return;  // the owner frees it, when its last holder goes
  GlobalCounters::mem_used -= static_cast<int64_t>(nbytes());
  dev_->allocator().free(handle_, rounded(nbytes()));
}

// An external buffer's handle is its memory (set in the constructor).
void* Buffer::handle() {
  if (!handle_) {
    handle_ = dev_->allocator().alloc(rounded(nbytes()));
    if (!handle_)
      throw OutOfMemoryError("Buffer: cannot allocate " + std::to_string(nbytes()) + " bytes on " + device +
                             " (" + std::to_string(size) + " " + std::string(dtype_name(dtype)) +
                             " elements): out of memory");
    GlobalCounters::mem_used += static_cast<int64_t>(nbytes());
    GlobalCounters::buffers_live++;
  }
  return handle_;
}

bool Buffer::allocate_zeroed() {
  if (handle_) return false;
  handle_ = dev_->allocator().alloc_zeroed(rounded(nbytes()));
  if (!handle_) return false;
  GlobalCounters::mem_used += static_cast<int64_t>(nbytes());
  GlobalCounters::buffers_live++;
  return true;
}

void* Buffer::host_ptr() { return dev_->allocator().host_ptr(handle()); }

void Buffer::copyin(std::span<const std::byte> src) {
  if (src.size() != nbytes())
    throw Error("Buffer: copy of " + std::to_string(src.size()) + " bytes into a buffer of " +
                std::to_string(nbytes()) + " on " + device);
  dev_->allocator().copyin(handle(), src);
}

void Buffer::copyout(std::span<std::byte> dst) {
  if (dst.size() != nbytes())
    throw Error("Buffer: copy of a buffer of " + std::to_string(nbytes()) + " bytes on " + device + " into " +
                std::to_string(dst.size()) + " bytes");
  dev_->allocator().copyout(dst, handle());
}

}  // namespace lazygrad
