#include "runtime/buffer.h"

#include <cstdlib>
#include <new>

namespace lazygrad {

Buffer::~Buffer() { std::free(data_); }

void* Buffer::data() {
  if (!data_) {
    // Round up so aligned_alloc's size rule holds, and never ask for 0 bytes.
    size_t n = (nbytes() + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, n ? n : 64);
    if (!data_) throw std::bad_alloc();
  }
  return data_;
}

}  // namespace lazygrad
