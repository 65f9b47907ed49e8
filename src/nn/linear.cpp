// Linear: y = x @ weight.T + bias, with PyTorch's initialization.
#include <cmath>
#include <string>

#include "lazygrad/nn.h"
#include "nn/python_format.h"
#include "nn/require.h"

namespace lazygrad::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : in_features(in_features), out_features(out_features) {
  require(in_features >= 0 && out_features >= 0,
          "Linear: in_features and out_features must be non-negative, got " + std::to_string(in_features) +
              " and " + std::to_string(out_features));
  weight = register_parameter("weight", Tensor::empty({out_features, in_features}));
  if (bias) this->bias = register_parameter("bias", Tensor::empty({out_features}));
  reset_parameters();
}

void Linear::reset_parameters() {
  // kaiming_uniform with a = sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias takes that range.
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  require(input.dim() >= 1 && input.shape().back() == in_features,
          "Linear: expected an input of shape [*, " + std::to_string(in_features) + "] (in_features), got " +
              shape_str(input.shape()));
  return input.linear(weight, bias.defined() ? std::optional(bias) : std::nullopt);
}

Int8Linear::Int8Linear(const Linear& linear)
    : in_features(linear.in_features), out_features(linear.out_features) {
  require(linear.weight.dtype() == kFloat32, "Int8Linear: quantizes a float32 Linear, got a " +
                                                 std::string(dtype_name(linear.weight.dtype())) + " weight");
  NoGrad no_grad;
  const Tensor w = linear.weight.detach();
  // Symmetric per row: max|w| maps to 127; an all-zero row keeps scale 1 (its weights are 0 either way).
  Tensor row_max = w.abs().max(1);
  Tensor s = (row_max / 127.0f).where(row_max > 0, 1.0f);
  Tensor q = (w / s.unsqueeze(1)).round().clamp(-127, 127).to(kInt8);
  weight = register_buffer("weight", q);
  scale = register_buffer("scale", s);
  if (linear.bias.defined()) bias = register_buffer("bias", linear.bias.detach());
}

Tensor Int8Linear::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  require(input.dim() >= 1 && input.shape().back() == in_features,
          "Int8Linear: expected an input of shape [*, " + std::to_string(in_features) +
              "] (in_features), got " + shape_str(input.shape()));
  // Lazy: the dequantization is elementwise, so it fuses into the product's kernel.
  const Tensor w = weight.to(kFloat32) * scale.unsqueeze(1);
  return input.linear(w, bias.defined() ? std::optional(bias) : std::nullopt);
}

std::string Int8Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + py_bool(bias.defined()) + ", dtype=torch.qint8";
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + py_bool(bias.defined());
}

}  // namespace lazygrad::nn
