// F.unfold (im2col): the sliding blocks of a padded image as columns, from Tensor::unfold's windows
// (views) along H and W, a strided slice for the dilation, and one permute and reshape.
#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// An int-or-pair argument as (h, w), each at least `lowest`.
std::pair<int64_t, int64_t> pair_of(const Tensor::IntList& v, const char* what, int64_t lowest) {
  const std::vector<int64_t>& x = v.values();
  require(x.size() == 1 || x.size() == 2, std::string("unfold: ") + what + " must be an int or a pair, got " +
                                              std::to_string(x.size()) + " values");
  std::pair<int64_t, int64_t> p{x[0], x.size() == 2 ? x[1] : x[0]};
  require(p.first >= lowest && p.second >= lowest,
          std::string("unfold: ") + what + " must be " + (lowest > 0 ? "greater than zero" : "non-negative") +
              ", got (" + std::to_string(p.first) + ", " + std::to_string(p.second) + ")");
  return p;
}

}  // namespace

Tensor unfold(const Tensor& input, Tensor::IntList kernel_size, Tensor::IntList dilation,
              Tensor::IntList padding, Tensor::IntList stride) {
  require(input.dim() == 3 || input.dim() == 4,
          "unfold: expected a 3-D (unbatched) or 4-D input, got shape " + shape_str(input.shape()));
  if (input.dim() == 3) return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0);
  auto [kh, kw] = pair_of(kernel_size, "kernel_size", 1);
  auto [dh, dw] = pair_of(dilation, "dilation", 1);
  auto [ph, pw] = pair_of(padding, "padding", 0);
  auto [sh, sw] = pair_of(stride, "stride", 1);
  int64_t n = input.shape()[0], c = input.shape()[1];
  int64_t h = input.shape()[2] + 2 * ph, w = input.shape()[3] + 2 * pw;
  int64_t span_h = dh * (kh - 1) + 1, span_w = dw * (kw - 1) + 1;  // a dilated block's extent
  require(span_h <= h && span_w <= w, "unfold: input of shape " + shape_str(input.shape()) + " padded by (" +
                                          std::to_string(ph) + ", " + std::to_string(pw) +
                                          ") is smaller than the dilated kernel (" + std::to_string(span_h) +
                                          ", " + std::to_string(span_w) + "): no sliding block fits");
  // [N, C, H, W] -> [N, C, oh, ow, span_h, span_w] -> every dilation-th of each block -> columns.
  Tensor blocks = input.pad({pw, pw, ph, ph}).unfold(2, span_h, sh).unfold(3, span_w, sw);
  blocks = blocks.slice(4, 0, std::nullopt, dh).slice(5, 0, std::nullopt, dw);
  int64_t oh = blocks.shape()[2], ow = blocks.shape()[3];
  return blocks.permute({0, 1, 4, 5, 2, 3}).reshape({n, c * kh * kw, oh * ow});
}

}  // namespace lazygrad
