// Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d, sharing parameters and initialization through
// ConvNd (PyTorch's _ConvNd). The arithmetic is Tensor::conv*d / conv_transpose*d.
#include <algorithm>
#include <cmath>
#include <string>

#include "lazygrad/nn.h"
#include "nn/python_format.h"
#include "nn/require.h"

namespace lazygrad::nn {

namespace {

std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

// An int-or-tuple argument as one value per spatial dimension; each at least `min`.
std::vector<int64_t> per_dim(const IntList& arg, int spatial_dims, int64_t min, const std::string& module,
                             const char* name) {
  const std::vector<int64_t>& v = arg.values();
  require(v.size() == 1 || v.size() == static_cast<size_t>(spatial_dims),
          module + ": " + name + " must be one value or " + std::to_string(spatial_dims) + ", got " +
              list_str(v));
  for (int64_t x : v)
    require(x >= min,
            module + ": " + name + " must be at least " + std::to_string(min) + ", got " + list_str(v));
  return v.size() == 1 ? std::vector<int64_t>(static_cast<size_t>(spatial_dims), v[0]) : v;
}

bool all_equal(const std::vector<int64_t>& v, int64_t value) {
  return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == value; });
}

std::optional<Tensor> optional(const Tensor& t) { return t.defined() ? std::optional(t) : std::nullopt; }

}  // namespace

ConvNd::ConvNd(const char* name, int spatial_dims, bool transposed, int64_t in_channels, int64_t out_channels,
               IntList kernel_size, IntList stride, ConvPadding padding, IntList dilation, int64_t groups,
               bool bias, IntList output_padding)
    : in_channels(in_channels),
      out_channels(out_channels),
      padding(padding),
      groups(groups),
      transposed(transposed),
      name_(name),
      spatial_dims_(spatial_dims) {
  std::string m = name;
  require(groups > 0, m + ": groups must be a positive integer, got " + std::to_string(groups),
          ErrorKind::Value);
  require(in_channels >= 0 && out_channels >= 0,
          m + ": in_channels and out_channels must be non-negative, got " + std::to_string(in_channels) +
              " and " + std::to_string(out_channels));
  require(in_channels % groups == 0,
          m + ": in_channels must be divisible by groups, got in_channels=" + std::to_string(in_channels) +
              ", groups=" + std::to_string(groups),
          ErrorKind::Value);
  require(out_channels % groups == 0,
          m + ": out_channels must be divisible by groups, got out_channels=" + std::to_string(out_channels) +
              ", groups=" + std::to_string(groups),
          ErrorKind::Value);
  this->kernel_size = per_dim(kernel_size, spatial_dims, 1, m, "kernel_size");
  this->stride = per_dim(stride, spatial_dims, 1, m, "stride");
  this->dilation = per_dim(dilation, spatial_dims, 1, m, "dilation");
  this->output_padding = per_dim(output_padding, spatial_dims, 0, m, "output_padding");
  if (!padding.mode().empty()) {
    require(padding.mode() == "same" || padding.mode() == "valid",
            m + ": invalid padding string \"" + padding.mode() + "\", should be \"valid\" or \"same\"",
            ErrorKind::Value);
    require(padding.mode() == "valid" || all_equal(this->stride, 1),
            m + ": padding=\"same\" is not supported for strided convolutions, got stride " +
                list_str(this->stride),
            ErrorKind::Value);
  } else {
    this->padding = ConvPadding(per_dim(padding.sizes(), spatial_dims, 0, m, "padding"));
  }

  // [out, in / groups, *kernel]; transposed [in, out / groups, *kernel].
  Shape weight_shape = this->kernel_size;
  weight_shape.insert(weight_shape.begin(), transposed ? out_channels / groups : in_channels / groups);
  weight_shape.insert(weight_shape.begin(), transposed ? in_channels : out_channels);
  weight = register_parameter("weight", Tensor::empty(weight_shape));
  if (bias) this->bias = register_parameter("bias", Tensor::empty({out_channels}));
  reset_parameters();
}

void ConvNd::reset_parameters() {
  // kaiming_uniform with a = sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias takes that range.
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    // PyTorch leaves the bias uninitialized when fan_in is 0; zeros make that repeatable.
    double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

void ConvNd::check_input(const Tensor& input) const {
  int64_t rank = input.dim();
  require(rank == spatial_dims_ + 1 || rank == spatial_dims_ + 2,
          std::string(name_) + ": expected a " + std::to_string(spatial_dims_ + 1) + "-D (unbatched) or " +
              std::to_string(spatial_dims_ + 2) + "-D (batched) input, got shape " +
              shape_str(input.shape()));
  int64_t channels = input.size(rank - spatial_dims_ - 1);
  require(channels == in_channels, std::string(name_) + ": expected an input with " +
                                       std::to_string(in_channels) + " channels (in_channels), got shape " +
                                       shape_str(input.shape()));
}

std::string ConvNd::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + py_tuple(kernel_size) + ", stride=" + py_tuple(stride);
  if (!padding.mode().empty())
    s += ", padding=" + padding.mode();
  else if (!all_equal(padding.sizes().values(), 0))
    s += ", padding=" + py_tuple(padding.sizes().values());
  if (!all_equal(dilation, 1)) s += ", dilation=" + py_tuple(dilation);
  if (!all_equal(output_padding, 0)) s += ", output_padding=" + py_tuple(output_padding);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride,
               ConvPadding padding, IntList dilation, int64_t groups, bool bias)
    : ConvNd("Conv1d", 1, false, in_channels, out_channels, std::move(kernel_size), std::move(stride),
             std::move(padding), std::move(dilation), groups, bias, 0) {}

Tensor Conv1d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  check_input(input);
  return input.conv1d(weight, optional(bias), stride, padding, dilation, groups);
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride,
               ConvPadding padding, IntList dilation, int64_t groups, bool bias)
    : ConvNd("Conv2d", 2, false, in_channels, out_channels, std::move(kernel_size), std::move(stride),
             std::move(padding), std::move(dilation), groups, bias, 0) {}

Tensor Conv2d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  check_input(input);
  return input.conv2d(weight, optional(bias), stride, padding, dilation, groups);
}

Conv3d::Conv3d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride,
               ConvPadding padding, IntList dilation, int64_t groups, bool bias)
    : ConvNd("Conv3d", 3, false, in_channels, out_channels, std::move(kernel_size), std::move(stride),
             std::move(padding), std::move(dilation), groups, bias, 0) {}

Tensor Conv3d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  check_input(input);
  return input.conv3d(weight, optional(bias), stride, padding, dilation, groups);
}

ConvTranspose1d::ConvTranspose1d(int64_t in_channels, int64_t out_channels, IntList kernel_size,
                                 IntList stride, IntList padding, IntList output_padding, int64_t groups,
                                 bool bias, IntList dilation)
    : ConvNd("ConvTranspose1d", 1, true, in_channels, out_channels, std::move(kernel_size), std::move(stride),
             ConvPadding(padding.values()), std::move(dilation), groups, bias, std::move(output_padding)) {}

Tensor ConvTranspose1d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  check_input(input);
  return input.conv_transpose1d(weight, optional(bias), stride, padding.sizes(), output_padding, groups,
                                dilation);
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, IntList kernel_size,
                                 IntList stride, IntList padding, IntList output_padding, int64_t groups,
                                 bool bias, IntList dilation)
    : ConvNd("ConvTranspose2d", 2, true, in_channels, out_channels, std::move(kernel_size), std::move(stride),
             ConvPadding(padding.values()), std::move(dilation), groups, bias, std::move(output_padding)) {}

Tensor ConvTranspose2d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  check_input(input);
  return input.conv_transpose2d(weight, optional(bias), stride, padding.sizes(), output_padding, groups,
                                dilation);
}

}  // namespace lazygrad::nn
