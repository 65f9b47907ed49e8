// The printed arguments of the activation and reshaping modules (their forward is inline in nn.h).
#include <string>

#include "lazygrad/nn.h"
#include "nn/python_format.h"
#include "nn/require.h"

namespace lazygrad::nn {

GELU::GELU(std::string approximate) : approximate(std::move(approximate)) {
  require(this->approximate == "none" || this->approximate == "tanh",
          "GELU: approximate must be \"none\" or \"tanh\", got \"" + this->approximate + "\"");
}

std::string LeakyReLU::extra_repr() const { return "negative_slope=" + py_float(negative_slope); }
std::string GELU::extra_repr() const { return "approximate=" + py_str(approximate); }
std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim); }
std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(dim); }
std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

}  // namespace lazygrad::nn
