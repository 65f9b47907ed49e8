// The multilayer perceptron of the Fashion-MNIST baseline: 784-512-512-10 with ReLU, as
// `nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
// nn.Linear(512, 10))` in PyTorch. It takes float images [N, 1, 28, 28] (or [N, 28, 28], or already
// flat [N, 784]) in [0, 1] and returns logits [N, 10]; the loss (cross-entropy) is the caller's.
//
// Header-only and public API only: `lazygrad train` includes it, and so can any program.
#pragma once

#include <lazygrad/nn.h>

#include <memory>

namespace lazygrad::models {

class MLP : public nn::Module {
 public:
  static constexpr int64_t kInputs = 28 * 28;  // one flattened Fashion-MNIST image
  static constexpr int64_t kHidden = 512;
  static constexpr int64_t kClasses = 10;

  MLP() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(kInputs, kHidden));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(kHidden, kHidden));
    fc3 = register_module("fc3", std::make_shared<nn::Linear>(kHidden, kClasses));
  }

  Tensor forward(const Tensor& images) override {
    Tensor x = images.flatten(1);  // each image as one row of 784 pixels
    x = (*fc1)(x).relu();
    x = (*fc2)(x).relu();
    return (*fc3)(x);  // logits: cross_entropy applies the log-softmax
  }

  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
};

}  // namespace lazygrad::models
