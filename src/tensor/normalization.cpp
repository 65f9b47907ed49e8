// Normalization layers of torch.nn.functional: layer_norm, batch_norm, group_norm and rms_norm,
// composed from reductions and elementwise ops (autograd differentiates them through the
// primitives, batch statistics included).
#include <string>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// An optional tensor argument; an undefined Tensor counts as absent too.
bool given(const std::optional<Tensor>& t) { return t && t->defined(); }

// 16-bit inputs are normalized in float32: the statistics are stored between kernels, and in 16
// bits they would lose what PyTorch keeps (it accumulates them in float32 too).
DType stats_type(DType dt) { return dt == kFloat64 ? kFloat64 : kFloat32; }

void require_float(const Tensor& x, const char* op) {
  require(is_float(x.dtype()), std::string(op) + ": expected a floating-point input, got " +
                                   std::string(dtype_name(x.dtype())) + " of shape " + shape_str(x.shape()));
}

// The trailing axes that normalized_shape names, after checking that the input ends with it.
std::vector<int64_t> trailing_axes(const Tensor& x, const Shape& normalized_shape, const char* op) {
  require(!normalized_shape.empty(), std::string(op) + ": normalized_shape must have at least one dimension");
  size_t k = normalized_shape.size(), n = x.shape().size();
  bool ok = n >= k && Shape(x.shape().end() - static_cast<ptrdiff_t>(k), x.shape().end()) == normalized_shape;
  require(ok, std::string(op) + ": normalized_shape " + shape_str(normalized_shape) +
                  " expects an input of shape [*, " + shape_str(normalized_shape).substr(1) + ", got " +
                  shape_str(x.shape()));
  std::vector<int64_t> axes;
  for (size_t i = n - k; i < n; i++) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

void check_param_shape(const std::optional<Tensor>& p, const Shape& shape, const char* op, const char* name) {
  if (!given(p)) return;
  require(p->shape() == shape, std::string(op) + ": expected " + name + " of shape " + shape_str(shape) +
                                   ", got " + shape_str(p->shape()));
}

// A per-channel parameter [C] of an [N, C, ...] input, as a tensor that broadcasts along dim 1.
void check_per_channel(const std::optional<Tensor>& p, int64_t channels, const char* op, const char* name) {
  if (!given(p)) return;
  require(p->numel() == channels, std::string(op) + ": " + name + " should have " + std::to_string(channels) +
                                      " elements (one per channel), got shape " + shape_str(p->shape()));
}
Tensor along_channels(const Tensor& p, int64_t ndim) {
  Shape s(static_cast<size_t>(ndim), 1);
  s[1] = p.numel();
  return p.reshape(s);
}

// (x - mean) / sqrt(var + eps) over axes, with the biased variance of the deviations from the mean
// (two passes: E[x^2] - E[x]^2 would cancel away the precision of inputs with a large mean).
Tensor standardize(const Tensor& x, const Axes& axes, double eps) {
  Tensor centered = x - x.mean(axes, true);
  Tensor var = (centered * centered).mean(axes, true);
  return centered * (var + eps).sqrt().reciprocal();
}

Tensor scale_shift(Tensor y, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias) {
  if (given(weight)) y = y * *weight;
  if (given(bias)) y = y + *bias;
  return y;
}

}  // namespace

Tensor Tensor::layer_norm(const Shape& normalized_shape, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, double eps) const {
  require_float(*this, "layer_norm");
  std::vector<int64_t> axes = trailing_axes(*this, normalized_shape, "layer_norm");
  check_param_shape(weight, normalized_shape, "layer_norm", "weight");
  check_param_shape(bias, normalized_shape, "layer_norm", "bias");
  Tensor y = standardize(to(stats_type(dtype())), axes, eps);
  return scale_shift(y, weight, bias).to(dtype());
}

Tensor Tensor::rms_norm(const Shape& normalized_shape, const std::optional<Tensor>& weight,
                        std::optional<double> eps) const {
  require_float(*this, "rms_norm");
  std::vector<int64_t> axes = trailing_axes(*this, normalized_shape, "rms_norm");
  check_param_shape(weight, normalized_shape, "rms_norm", "weight");
  // torch.finfo(dtype).eps by default.
  double machine_eps = dtype() == kFloat64    ? 2.220446049250313e-16
                       : dtype() == kFloat16  ? 0.0009765625
                       : dtype() == kBFloat16 ? 0.0078125
                                              : 1.1920928955078125e-07;
  Tensor x = to(stats_type(dtype()));
  Tensor y = x * ((x * x).mean(axes, true) + eps.value_or(machine_eps)).sqrt().reciprocal();
  return scale_shift(y, weight, std::nullopt).to(dtype());
}

Tensor Tensor::group_norm(int64_t num_groups, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, double eps) const {
  require_float(*this, "group_norm");
  require(dim() >= 2, "group_norm: expected an input of shape [N, C, ...], got " + shape_str(shape()),
          ErrorKind::Index);
  int64_t batch = shape()[0], channels = shape()[1];
  require(num_groups > 0 && channels % num_groups == 0,
          "group_norm: expected the number of channels of input of shape " + shape_str(shape()) +
              " to be divisible by num_groups=" + std::to_string(num_groups));
  check_per_channel(weight, channels, "group_norm", "weight");
  check_per_channel(bias, channels, "group_norm", "bias");
  int64_t group_size = channels / num_groups;
  for (size_t i = 2; i < shape().size(); i++) group_size *= shape()[i];
  Tensor grouped = to(stats_type(dtype())).reshape({batch, num_groups, group_size});
  Tensor y = standardize(grouped, 2, eps).reshape(shape());
  return scale_shift(y, given(weight) ? std::optional(along_channels(*weight, dim())) : std::nullopt,
                     given(bias) ? std::optional(along_channels(*bias, dim())) : std::nullopt)
      .to(dtype());
}

Tensor Tensor::batch_norm(const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          bool training, double momentum, double eps) const {
  require_float(*this, "batch_norm");
  require(dim() >= 2, "batch_norm: expected an input of shape [N, C, ...], got " + shape_str(shape()),
          ErrorKind::Index);
  int64_t channels = shape()[1];
  check_per_channel(running_mean, channels, "batch_norm", "running_mean");
  check_per_channel(running_var, channels, "batch_norm", "running_var");
  check_per_channel(weight, channels, "batch_norm", "weight");
  check_per_channel(bias, channels, "batch_norm", "bias");
  Tensor x = to(stats_type(dtype()));
  std::vector<int64_t> axes;  // every axis but the channels
  for (int64_t i = 0; i < dim(); i++)
    if (i != 1) axes.push_back(i);

  Tensor y;
  if (training) {
    int64_t count = channels == 0 ? 0 : numel() / channels;
    require(count > 1,
            "batch_norm: expected more than 1 value per channel when training, got input of shape " +
                shape_str(shape()),
            ErrorKind::Value);
    Tensor mean = x.mean(axes, true);
    Tensor centered = x - mean;
    Tensor var = (centered * centered).mean(axes, true);
    y = centered * (var + eps).sqrt().reciprocal();
    // The running statistics are state, not part of the computation: they take detached values.
    // PyTorch's running variance is unbiased (n / (n - 1)) although it normalizes with the biased one.
    if (given(running_mean)) {
      Tensor r = *running_mean;  // a handle: assign writes into the caller's tensor
      r.assign(r * (1 - momentum) + mean.detach().reshape(r.shape()) * momentum);
    }
    if (given(running_var)) {
      Tensor r = *running_var;
      double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
      r.assign(r * (1 - momentum) + var.detach().reshape(r.shape()) * (unbias * momentum));
    }
  } else {
    require(given(running_mean) && given(running_var),
            "batch_norm: running_mean and running_var must be given when not training");
    Tensor mean = along_channels(*running_mean, dim()).to(x.dtype());
    Tensor var = along_channels(*running_var, dim()).to(x.dtype());
    y = (x - mean) * (var + eps).sqrt().reciprocal();
  }
  return scale_shift(y, given(weight) ? std::optional(along_channels(*weight, dim())) : std::nullopt,
                     given(bias) ? std::optional(along_channels(*bias, dim())) : std::nullopt)
      .to(dtype());
}

}  // namespace lazygrad
