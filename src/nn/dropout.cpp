// Dropout: Tensor::dropout in training mode, the identity in evaluation mode.
#include <string>

#include "lazygrad/nn.h"
#include "nn/python_format.h"
#include "nn/require.h"

namespace lazygrad::nn {

Dropout::Dropout(double p) : p(p) {
  require(p >= 0.0 && p <= 1.0,
          "Dropout: dropout probability has to be between 0 and 1, but got " + py_float(p), ErrorKind::Value);
}

Tensor Dropout::forward(const Tensor& input) { return input.dropout(p, is_training()); }

std::string Dropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

}  // namespace lazygrad::nn
