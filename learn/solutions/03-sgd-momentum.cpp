// lazygrad learn, exercise 3: sgd-momentum, a reference solution (for tests and teachers).
#include <lazygrad/learn.h>

#include <vector>

using lazygrad::Tensor;

void sgd_momentum_step(std::vector<Tensor>& params, std::vector<Tensor>& velocity, double lr,
                       double momentum) {
  lazygrad::NoGrad no_grad;
  const bool first = velocity.empty();
  for (size_t i = 0; i < params.size(); i++) {
    Tensor g = params[i].grad();
    if (first) {
      velocity.push_back(g);
    } else {
      velocity[i] = momentum * velocity[i] + g;
    }
    params[i] -= lr * velocity[i];
  }
}

const bool submitted = lazygrad::learn::submit(&sgd_momentum_step);
