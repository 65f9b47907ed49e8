// Sizes: the checked arithmetic every tensor shape is made with. A shape's element count, and its
// byte count in its dtype, fit in int64, so do its strides and every flat index into it; a shape
// that would not is a SizeError naming the op and the shape, never a count that wraps around (a
// wrapped count once sized a 64-byte buffer for a kernel that wrote 2^62 elements into it).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lazygrad/dtype.h"

namespace lazygrad {

// The element count of `shape`. Throws SizeError for a negative size, or when the sizes other than
// 0 multiply past int64 (as numpy refuses them: a zero-size [0, 2^40, 2^40] would still have
// strides past int64).
int64_t checked_numel(const std::vector<int64_t>& shape, std::string_view op);
// checked_numel(shape) * itemsize(dtype), which must fit in int64 too.
int64_t checked_nbytes(const std::vector<int64_t>& shape, DType dtype, std::string_view op);
// a + b for a size made of two (pad's borders, cat's pieces), which must fit in int64.
int64_t checked_size_sum(int64_t a, int64_t b, std::string_view op);

// a * b and a + b for non-negative estimates (a kernel's work, for its thread count), held at
// INT64_MAX instead of wrapping: an estimate past it says "a lot", which is all its readers ask.
int64_t saturating_mul(int64_t a, int64_t b);
int64_t saturating_add(int64_t a, int64_t b);

}  // namespace lazygrad
