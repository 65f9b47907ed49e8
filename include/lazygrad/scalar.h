// Scalar: a number on one side of a tensor op (`x * 2`, `2.5 - x`), remembering whether it was
// written as a bool, an integer or a floating-point value, because PyTorch's promotion depends on it.
#pragma once

#include <cstdint>
#include <type_traits>

namespace lazygrad {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  template <class T>
    requires std::is_arithmetic_v<T>
  Scalar(T v) {  // NOLINT: implicit on purpose, so `x + 1` and `x * 0.5f` read naturally
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v ? 1 : 0;
      d_ = i_;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);  // a uint64 past INT64_MAX keeps its bits (see to_int)
      d_ = static_cast<double>(v);
      if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) above_int64_ = v > static_cast<T>(INT64_MAX);
    } else {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
      i_ = 0;
    }
  }

  Kind kind() const { return kind_; }
  bool is_float() const { return kind_ == Kind::Float; }
  double to_double() const { return d_; }
  // An integer's value; a uint64 above INT64_MAX (2**64-1 for a mask) comes back as its bits,
  // which is the value once it is a uint64 constant. Such a value fits no other integer dtype.
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  bool above_int64() const { return above_int64_; }

 private:
  Kind kind_;
  int64_t i_;
  double d_;
  bool above_int64_ = false;
};

}  // namespace lazygrad
