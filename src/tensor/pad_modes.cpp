// F.pad's non-constant modes, one dimension at a time, as views: the border is a shrink of the input
// (flipped for "reflect", one edge element expanded for "replicate", the far end for "circular")
// and is cat'ed on, so a padded tensor is still one fused read of the input.
#include <algorithm>
#include <string>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// x padded along d by `before` and `after` elements taken from x itself.
const char* mode_name(Tensor::PadMode mode) {
  switch (mode) {
    case Tensor::PadMode::Constant: return "constant";
    case Tensor::PadMode::Reflect: return "reflect";
    case Tensor::PadMode::Replicate: return "replicate";
    case Tensor::PadMode::Circular: return "circular";
  }
  return "?";
}

Tensor pad_axis(const Tensor& x, int64_t d, int64_t before, int64_t after, Tensor::PadMode mode) {
  int64_t n = x.shape()[d];
  // PyTorch's words: where each mode's border must fit inside the input.
  auto fail = [&](const std::string& why) {
    return "pad: " + why + ", got padding (" + std::to_string(before) + ", " + std::to_string(after) +
           ") at dimension " + std::to_string(d) + " of input " + shape_str(x.shape()) + " (mode '" +
           mode_name(mode) + "')";
  };
  std::vector<Tensor> parts;
  if (mode == Tensor::PadMode::Reflect) {
    require(before < n && after < n,
            fail("padding size should be less than the corresponding input dimension"));
    if (before > 0) parts.push_back(x.slice(d, 1, before + 1).flip(d));
    parts.push_back(x);
    if (after > 0) parts.push_back(x.slice(d, n - 1 - after, n - 1).flip(d));
  } else if (mode == Tensor::PadMode::Replicate) {
    require(n > 0 || (before == 0 && after == 0), fail("an empty dimension cannot be replicated"));
    auto edge = [&](int64_t at, int64_t count) {
      Shape s = x.shape();
      s[d] = count;
      return x.slice(d, at, at + 1).expand(s);
    };
    if (before > 0) parts.push_back(edge(0, before));
    parts.push_back(x);
    if (after > 0) parts.push_back(edge(n - 1, after));
  } else {  // circular
    require(before <= n && after <= n, fail("padding value causes wrapping around more than once"));
    if (before > 0) parts.push_back(x.slice(d, n - before, n));
    parts.push_back(x);
    if (after > 0) parts.push_back(x.slice(d, 0, after));
  }
  return parts.size() == 1 ? x : Tensor::cat(parts, d);
}

}  // namespace

Tensor::PadMode Tensor::pad_mode(const std::string& name) {
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular})
    if (name == mode_name(m)) return m;
  throw NotImplementedError("pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got '" + name +
                            "'");
}

Tensor Tensor::pad(const std::vector<int64_t>& padding, PadMode mode, Scalar value) const {
  if (mode == PadMode::Constant) return pad(padding, value);
  require(padding.size() % 2 == 0 && static_cast<int64_t>(padding.size()) <= 2 * dim(),
          "pad: padding of length " + std::to_string(padding.size()) +
              " must be even and at most twice the number of dimensions of input " + shape_str(shape()));
  Tensor x = *this;
  // Negative amounts crop first (as for "constant"); what is left pads from the cropped input.
  std::vector<int64_t> crop(padding.size()), grow(padding.size());
  for (size_t k = 0; k < padding.size(); k++) {
    crop[k] = std::min<int64_t>(padding[k], 0);
    grow[k] = std::max<int64_t>(padding[k], 0);
  }
  x = x.pad(crop);
  for (size_t k = 0; k < padding.size() / 2; k++) {
    int64_t d = dim() - 1 - static_cast<int64_t>(k);
    x = pad_axis(x, d, grow[2 * k], grow[2 * k + 1], mode);
  }
  return x;
}

}  // namespace lazygrad
