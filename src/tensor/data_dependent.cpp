// Ops whose result's shape depends on the values: masked_select, nonzero (argwhere). A lazy graph
// needs its shapes up front, so these realize the mask (self for nonzero) first and read it on the
// host; masked_select then gathers lazily at the positions found, so its gradient flows to self as
// a gather's does. nonzero's coordinates are data, not a function of self: no gradient.
#include <algorithm>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// The row-major positions of the nonzero (true, NaN included) elements of t. Realizes t.
std::vector<int64_t> nonzero_positions(const Tensor& t) {
  Tensor truth = t.dtype() == kBool ? t : t.ne(0);
  std::vector<uint8_t> v = truth.contiguous().to_vector<uint8_t>();
  std::vector<int64_t> positions;
  for (size_t i = 0; i < v.size(); i++)
    if (v[i]) positions.push_back(static_cast<int64_t>(i));
  return positions;
}

// Row-major coordinates [count, dim] of the flat positions in a tensor of the given shape.
std::vector<int64_t> coordinates(const std::vector<int64_t>& positions, const Shape& shape) {
  size_t nd = shape.size();
  std::vector<int64_t> out(positions.size() * nd);
  for (size_t k = 0; k < positions.size(); k++) {
    int64_t rest = positions[k];
    for (size_t a = nd; a-- > 0;) {
      out[k * nd + a] = rest % shape[a];
      rest /= shape[a];
    }
  }
  return out;
}

}  // namespace

Tensor Tensor::masked_select(const Tensor& mask) const {
  require(mask.dtype() == kBool || mask.dtype() == kUInt8,
          "masked_select: expected a bool (or uint8) mask, got " + std::string(dtype_name(mask.dtype())) +
              " mask " + shape_str(mask.shape()) + " for input " + shape_str(shape()));
  Shape common = broadcast_shape(shape(), mask.shape(), "masked_select");
  std::vector<int64_t> positions = nonzero_positions(mask.to(kBool).expand(common));
  int64_t count = static_cast<int64_t>(positions.size());
  Tensor flat = expand(common).flatten();
  if (count == 0) return flat.slice(0, 0, 0);
  return flat.gather(0, Tensor::from_vector(positions, {count}, device()));
}

Tensor Tensor::nonzero() const {
  std::vector<int64_t> positions = nonzero_positions(*this);
  int64_t count = static_cast<int64_t>(positions.size());
  return Tensor::from_vector(coordinates(positions, shape()), {count, dim()}, device());
}

std::vector<Tensor> Tensor::nonzero_tuple() const {
  // A 0-d tensor counts as 1-d here, as in PyTorch.
  Tensor coords = dim() == 0 ? reshape({1}).nonzero() : nonzero();
  std::vector<Tensor> out;
  for (int64_t a = 0; a < coords.shape()[1]; a++) out.push_back(coords.select(1, a).contiguous());
  return out;
}

}  // namespace lazygrad
