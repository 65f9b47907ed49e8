// Pooling modules: MaxPool1d/2d, AvgPool2d, AdaptiveAvgPool2d over Tensor's pooling ops. A stride
// left empty is the kernel size (PyTorch's stride=None), and is stored that way so it prints so.
#include <string>

#include "lazygrad/nn.h"
#include "nn/python_format.h"
#include "nn/require.h"

namespace lazygrad::nn {

namespace {

IntList checked_kernel(IntList kernel_size, const char* module) {
  require(!kernel_size.empty(), std::string(module) + ": kernel_size must be given");
  return kernel_size;
}

std::string value_str(const IntList& v) { return py_int_or_tuple(v.values()); }

}  // namespace

MaxPool1d::MaxPool1d(IntList kernel_size, IntList stride, IntList padding, IntList dilation, bool ceil_mode)
    : kernel_size(checked_kernel(std::move(kernel_size), "MaxPool1d")),
      stride(stride.empty() ? this->kernel_size : std::move(stride)),
      padding(std::move(padding)),
      dilation(std::move(dilation)),
      ceil_mode(ceil_mode) {}

Tensor MaxPool1d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  return input.max_pool1d(kernel_size, stride, padding, dilation, ceil_mode);
}

std::string MaxPool1d::extra_repr() const {
  return "kernel_size=" + value_str(kernel_size) + ", stride=" + value_str(stride) +
         ", padding=" + value_str(padding) + ", dilation=" + value_str(dilation) +
         ", ceil_mode=" + py_bool(ceil_mode);
}

MaxPool2d::MaxPool2d(IntList kernel_size, IntList stride, IntList padding, IntList dilation, bool ceil_mode)
    : kernel_size(checked_kernel(std::move(kernel_size), "MaxPool2d")),
      stride(stride.empty() ? this->kernel_size : std::move(stride)),
      padding(std::move(padding)),
      dilation(std::move(dilation)),
      ceil_mode(ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  return input.max_pool2d(kernel_size, stride, padding, dilation, ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + value_str(kernel_size) + ", stride=" + value_str(stride) +
         ", padding=" + value_str(padding) + ", dilation=" + value_str(dilation) +
         ", ceil_mode=" + py_bool(ceil_mode);
}

AvgPool2d::AvgPool2d(IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                     bool count_include_pad, std::optional<int64_t> divisor_override)
    : kernel_size(checked_kernel(std::move(kernel_size), "AvgPool2d")),
      stride(stride.empty() ? this->kernel_size : std::move(stride)),
      padding(std::move(padding)),
      ceil_mode(ceil_mode),
      count_include_pad(count_include_pad),
      divisor_override(divisor_override) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  const ProfileScope scope(*this);
  return input.avg_pool2d(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + value_str(kernel_size) + ", stride=" + value_str(stride) +
         ", padding=" + value_str(padding);
}

std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + value_str(output_size); }

}  // namespace lazygrad::nn
