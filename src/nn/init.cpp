// torch.nn.init: overwrite a tensor's values with random or constant ones, outside the gradient
// graph. Each function realizes the tensor, as PyTorch's are immediate: a model is built once, and
// a pending initialization would otherwise be computed inside the first training step's schedule.
#include <cmath>
#include <string>

#include "lazygrad/nn.h"
#include "nn/require.h"

namespace lazygrad::nn::init {

namespace {

thread_local int skip_init_depth = 0;

Tensor& overwrite(Tensor& tensor, const Tensor& value) {
  if (SkipInit::active()) return tensor.realize();  // its buffer, with nothing computed into it
  NoGrad no_grad;
  tensor.assign(value);
  tensor.realize();
  return tensor;
}

void require_float(const Tensor& tensor, const char* fn) {
  require(tensor.defined(), std::string(fn) + ": use of an undefined tensor");
  require(is_float(tensor.dtype()), std::string(fn) + ": expected a floating-point tensor, got " +
                                        std::string(dtype_name(tensor.dtype())) + " of shape " +
                                        shape_str(tensor.shape()));
}

// kaiming's fan: fan_in preserves the forward pass's variance, fan_out the backward pass's.
int64_t fan_for_mode(const Tensor& tensor, const std::string& mode, const char* fn) {
  require(mode == "fan_in" || mode == "fan_out",
          std::string(fn) + ": mode \"" + mode + "\" not supported, use \"fan_in\" or \"fan_out\"",
          ErrorKind::Value);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? fan_in : fan_out;
}

}  // namespace

SkipInit::SkipInit() { skip_init_depth++; }
SkipInit::~SkipInit() { skip_init_depth--; }
bool SkipInit::active() { return skip_init_depth > 0; }

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  for (const char* linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                             "conv_transpose3d", "sigmoid"})
    if (nonlinearity == linear) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  throw ValueError("calculate_gain: unsupported nonlinearity \"" + nonlinearity + "\"");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  require(tensor.defined(), "calculate_fan_in_and_fan_out: use of an undefined tensor");
  require(
      tensor.dim() >= 2,
      "calculate_fan_in_and_fan_out: fan in and fan out can not be computed for a tensor with fewer than 2 "
      "dimensions, got shape " +
          shape_str(tensor.shape()),
      ErrorKind::Value);
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); d++) receptive_field *= tensor.size(d);
  return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

Tensor& uniform_(Tensor& tensor, double a, double b) {
  require_float(tensor, "uniform_");
  return overwrite(tensor, Tensor::uniform(tensor.shape(), a, b, tensor.dtype()));
}

Tensor& normal_(Tensor& tensor, double mean, double std) {
  require_float(tensor, "normal_");
  require(std >= 0, "normal_: std must be non-negative, got " + std::to_string(std));
  return overwrite(tensor, Tensor::randn(tensor.shape(), tensor.dtype()) * std + mean);
}

Tensor& constant_(Tensor& tensor, double val) {
  require(tensor.defined(), "constant_: use of an undefined tensor");
  return overwrite(tensor, Tensor::full(tensor.shape(), val, tensor.dtype()));
}

Tensor& ones_(Tensor& tensor) { return constant_(tensor, 1.0); }
Tensor& zeros_(Tensor& tensor) { return constant_(tensor, 0.0); }

Tensor& xavier_uniform_(Tensor& tensor, double gain) {
  require_float(tensor, "xavier_uniform_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;  // nothing to draw (and no fan to divide by)
  double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  double bound = std::sqrt(3.0) * std;  // U(-b, b) has variance b^2 / 3
  return uniform_(tensor, -bound, bound);
}

Tensor& xavier_normal_(Tensor& tensor, double gain) {
  require_float(tensor, "xavier_normal_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;
  return normal_(tensor, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

Tensor& kaiming_uniform_(Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  require_float(tensor, "kaiming_uniform_");
  int64_t fan = fan_for_mode(tensor, mode, "kaiming_uniform_");
  if (tensor.numel() == 0) return tensor;
  double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity) {
  require_float(tensor, "kaiming_normal_");
  int64_t fan = fan_for_mode(tensor, mode, "kaiming_normal_");
  if (tensor.numel() == 0) return tensor;
  return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan)));
}

}  // namespace lazygrad::nn::init
