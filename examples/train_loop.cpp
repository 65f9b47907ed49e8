// A training loop in C++, step by step, for comparison with the same loop written in Python
// (tests/python/test_train_parity.py runs both and compares the losses):
//
//   ./build/example_train_loop [STEPS] [SEED]
//
// A 784-128-10 MLP (nn::Sequential of Linear, ReLU, Linear), Adam at lr 1e-3, and per step a batch
// of 64 inputs from randn and labels from randint, all drawn from the generator seeded with SEED
// (model first, then the batches, in this order). Prints one line per step: the loss, to 9 digits.
#include <lazygrad/lazygrad.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

using namespace lazygrad;

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  Tensor::manual_seed(seed);
  // One statement per layer: the order in which a function's arguments are evaluated is unspecified
  // in C++, and each layer's initialization draws from the generator.
  auto first = std::make_shared<nn::Linear>(784, 128);
  auto second = std::make_shared<nn::Linear>(128, 10);
  auto model = std::make_shared<nn::Sequential>(first, std::make_shared<nn::ReLU>(), second);
  optim::Adam opt(model->parameters(), 1e-3);
  for (int i = 0; i < steps; i++) {
    Tensor x = Tensor::randn({64, 784}), y = Tensor::randint(0, 10, {64});
    opt.zero_grad();
    Tensor loss = (*model)(x).cross_entropy(y);
    loss.backward();
    opt.step({loss});
    std::printf("%.9g\n", loss.item<float>());
  }
}
