// Counting a config's parameters with every product and sum checked, so that an absurd config
// (n_layer 10^18, n_embd 2^32) is refused by the field that makes it too large, before anything is
// allocated, instead of wrapping around to a small count or to shapes that are not the config's.
//
// Header-only and public API only.
#pragma once

#include <lazygrad/error.h>

#include <cstdint>
#include <string>
#include <utility>

namespace lazygrad::models {

// Every partial count must stay at most kLimit: as float32 bytes (4 each) it then fits in int64,
// the type of every buffer size. Beyond that no machine could hold the model and no checkpoint
// could store it.
class ParameterCount {
 public:
  static constexpr int64_t kLimit = INT64_MAX / 4;

  // `reader` starts the messages ("GPT2Config").
  explicit ParameterCount(std::string reader) : reader_(std::move(reader)) {}

  // a * b and a + b of counts in [0, kLimit]; `field` names the config value that made the result
  // too large ("n_layer 10").
  int64_t mul(int64_t a, int64_t b, const std::string& field) const {
    int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out) || out > kLimit) fail(field);
    return out;
  }
  int64_t add(int64_t a, int64_t b, const std::string& field) const {
    int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out) || out > kLimit) fail(field);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& field) const {
    throw Error(reader_ + ": " + field +
                " makes the model's size overflow 64 bits (more than 2^61 float32 parameters)");
  }

  std::string reader_;
};

}  // namespace lazygrad::models
