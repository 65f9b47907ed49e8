// The value behind a VAR node: read when a kernel launches, not when it is compiled.
#pragma once

#include <atomic>
#include <cstdint>

#include "lazygrad/dtype.h"

namespace lazygrad {

enum class VariableKind : uint8_t {
  User,        // a lazygrad::Variable (a learning rate, a bias correction)
  RngCounter,  // the random generator's first counter of one draw (a Jit replay moves it on)
  RngKey,      // the random generator's key (from the seed)
};

struct VariableState {
  // The value as 64 bits: an integer's value, or a floating-point value's float64 bit pattern.
  std::atomic<int64_t> bits{0};
  DType dtype = kInt64;
  VariableKind kind = VariableKind::User;
};

}  // namespace lazygrad
