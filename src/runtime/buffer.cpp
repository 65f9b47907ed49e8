// Buffer memory comes from a small pool of freed allocations, reused by size: a fresh allocation
// of a large buffer makes the kernel that first writes it pay a page fault per 4 KiB (measured:
// most of the time of a 64 MB elementwise add), a reused one does not.
#include "runtime/buffer.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "lazygrad/counters.h"
#include "lazygrad/error.h"
#include "shape/size.h"

namespace lazygrad {

namespace {

class Pool {
 public:
  static constexpr size_t kMaxPooled = size_t(1) << 30;  // bytes kept for reuse at most

  // Null when the machine will not give the memory.
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        pooled_ -= bytes;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, bytes);
    if (!p && release_spare()) p = std::aligned_alloc(64, bytes);  // the pooled memory may make room
    return p;
  }

  // Called from ~Buffer, so it never throws: memory it cannot keep (or track) is freed.
  void give(void* p, size_t bytes) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    if (pooled_ + bytes <= kMaxPooled) {
      try {
        free_.emplace(bytes, p);
        pooled_ += bytes;
        return;
      } catch (const std::bad_alloc&) {
      }
    }
    std::free(p);
  }

 private:
  // Frees the pooled allocations; false when there were none.
  bool release_spare() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return false;
    for (auto& [bytes, p] : free_) std::free(p);
    free_.clear();
    pooled_ = 0;
    return true;
  }

  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t pooled_ = 0;
};

// Never destroyed: buffers held by other static objects may be freed during static destruction.
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

// aligned_alloc wants a multiple of the alignment, and never 0 bytes. n fits in int64 (the
// constructor checks), so rounding up cannot wrap.
size_t rounded(size_t n) { return n ? (n + 63) / 64 * 64 : 64; }

}  // namespace

// GlobalCounters::mem_used counts nbytes() (as tinygrad does, not the rounded allocation) of pool
// memory only: an external buffer's memory is its owner's (a file mapping, paged in from the file),
// so it counts in buffers_live alone.
Buffer::Buffer(std::string device, DType dtype, int64_t size)
    : device(std::move(device)), dtype(dtype), size(size) {
  checked_nbytes({size}, dtype, "Buffer");
}

Buffer::Buffer(std::string device, DType dtype, int64_t size, std::shared_ptr<void> memory)
    : device(std::move(device)), dtype(dtype), size(size), external_(std::move(memory)) {
  if (!external_) throw Error("Buffer: external memory is null");
  checked_nbytes({size}, dtype, "Buffer");
  data_ = external_.get();
  GlobalCounters::buffers_live++;
}

Buffer::~Buffer() {
  if (!data_) return;
  GlobalCounters::buffers_live--;
  if (external_) return;  // the owner frees it, when its last holder goes
  GlobalCounters::mem_used -= static_cast<int64_t>(nbytes());
  pool().give(data_, rounded(nbytes()));
}

void* Buffer::data() {
  if (!data_) {
    data_ = pool().take(rounded(nbytes()));
    if (!data_)
      throw OutOfMemoryError("Buffer: cannot allocate " + std::to_string(nbytes()) + " bytes on " + device +
                             " (" + std::to_string(size) + " " + std::string(dtype_name(dtype)) +
                             " elements): out of memory");
    GlobalCounters::mem_used += static_cast<int64_t>(nbytes());
    GlobalCounters::buffers_live++;
  }
  return data_;
}

}  // namespace lazygrad
