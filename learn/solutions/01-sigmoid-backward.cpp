// lazygrad learn, exercise 1: sigmoid-backward, a reference solution (for tests and teachers).
//
// d/dx 1 / (1 + exp(-x)) = exp(-x) / (1 + exp(-x))^2 = s * (1 - s) with s = sigmoid(x). Written
// with s, which stays in [0, 1], it cannot overflow where exp(-x) would (x below about -88).
#include <lazygrad/learn.h>

using lazygrad::Tensor;

Tensor sigmoid_backward(const Tensor& x, const Tensor& grad_output) {
  Tensor s = x.sigmoid();
  return s * (1 - s) * grad_output;
}

const bool submitted = lazygrad::learn::submit(&sigmoid_backward);
