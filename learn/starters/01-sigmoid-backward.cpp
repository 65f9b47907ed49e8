// lazygrad learn, exercise 1: sigmoid-backward (docs/learn/04-autograd.md)
//
// Autograd runs each op's backward rule: given the gradient of the loss with respect to the op's
// output (grad_output), it returns the gradient with respect to the op's input. Write the rule for
//
//   sigmoid(x) = 1 / (1 + exp(-x))
//
// By the chain rule, elementwise: grad_input = d sigmoid(x) / dx * grad_output. x and grad_output
// have the same shape, and so has the result. Keep it finite for large |x| (x = -100 happens).
//
// Check it with:   lazygrad learn check 1     (add --file PATH when this file is elsewhere)
// The checker compares it with lazygrad's own autograd, x.sigmoid().backward(grad_output).
#include <lazygrad/learn.h>

using lazygrad::Tensor;

Tensor sigmoid_backward(const Tensor& x, const Tensor& grad_output) {
  // TODO: compute sigmoid's slope at x and multiply it by grad_output. The slope can be written
  // with sigmoid itself (x.sigmoid()); lazygrad's ops (*, -, +, ...) work elementwise. Do not call
  // backward(): this function is a backward rule.
  (void)x;
  return grad_output;  // wrong, a placeholder so that the file compiles: the identity's rule
}

// Hands sigmoid_backward to the checker when `lazygrad learn check` loads this file. Keep it last.
const bool submitted = lazygrad::learn::submit(&sigmoid_backward);
