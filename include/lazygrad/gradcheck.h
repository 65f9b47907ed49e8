// A finite-difference gradient checker (float64), for tests: compares Tensor::gradient with
// central differences, like torch.autograd.gradcheck.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lazygrad/tensor.h"

namespace lazygrad {

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;  // over all inputs and elements
  std::string message;       // the first mismatch, where and by how much
};

// fn maps the inputs to one tensor. Inputs are converted to float64; each element is moved by
// +-eps. The output is reduced with fixed random weights, so every output element is checked.
// Evaluations cost 2 per input element: keep inputs small.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                          double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);

}  // namespace lazygrad
