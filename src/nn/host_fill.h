// Constant tensors written on the host. A layer's constant initial values (norms' ones and zeros,
// BatchNorm's running statistics) are made this way at construction: a Tensor::full would compile
// and run a fill kernel per shape and value, and building a model would wait on them.
#pragma once

#include <cstdint>
#include <vector>

#include "lazygrad/tensor.h"

namespace lazygrad::nn {

inline Tensor host_full(const Shape& shape, double value, DType dtype = kFloat32) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  size_t count = static_cast<size_t>(n);
  switch (dtype) {
    case DType::Float32:
      return Tensor::from_vector(std::vector<float>(count, static_cast<float>(value)), shape);
    case DType::Float64:
      return Tensor::from_vector(std::vector<double>(count, value), shape);
    case DType::Int64:
      return Tensor::from_vector(std::vector<int64_t>(count, static_cast<int64_t>(value)), shape);
    default:
      return Tensor::full(shape, value, dtype).realize();
  }
}

}  // namespace lazygrad::nn
