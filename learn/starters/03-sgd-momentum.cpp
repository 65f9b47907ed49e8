// lazygrad learn, exercise 3: sgd-momentum (docs/learn/08-optimizers.md)
//
// One step of SGD with momentum, PyTorch's rule. For each parameter p, with gradient g = p.grad():
//
//   v = momentum * v + g        (on the first step, when there is no v yet: v = g)
//   p = p - lr * v
//
// velocity is empty before the first step. Keep each parameter's v in it (push_back on the first
// step): the checker passes the same vector to every step, as an optimizer keeps its state.
// Update each parameter in place, params[i].assign(new value) or params[i] -= ...: the model holds
// the same tensors (params[i] = ... would only rebind this vector's handle).
//
// Check it with:   lazygrad learn check 3     (add --file PATH when this file is elsewhere)
// The checker runs three steps and compares with optim::SGD(params, lr, momentum).
#include <lazygrad/learn.h>

#include <vector>

using lazygrad::Tensor;

void sgd_momentum_step(std::vector<Tensor>& params, std::vector<Tensor>& velocity, double lr,
                       double momentum) {
  lazygrad::NoGrad no_grad;  // the update is not part of the gradient graph
  for (size_t i = 0; i < params.size(); i++) {
    Tensor g = params[i].grad();
    // TODO: the new v (see above), kept in velocity; then params[i] moves by -lr * v.
    (void)g;
  }
  (void)velocity;
  (void)lr;
  (void)momentum;
}

// Hands sgd_momentum_step to the checker when `lazygrad learn check` loads this file. Keep it last.
const bool submitted = lazygrad::learn::submit(&sgd_momentum_step);
