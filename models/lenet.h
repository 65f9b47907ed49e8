// A LeNet-style convolutional network for 28x28 grey images (LeCun et al. 1998, with ReLU and max
// pooling in place of the sigmoids and subsampling, and wider layers), in PyTorch:
//
//   conv1 = nn.Conv2d(1, 32, 5)     # [N, 1, 28, 28]  -> [N, 32, 24, 24]
//   ReLU, nn.MaxPool2d(2)           #                 -> [N, 32, 12, 12]
//   conv2 = nn.Conv2d(32, 64, 5)    #                 -> [N, 64, 8, 8]
//   ReLU, nn.MaxPool2d(2)           #                 -> [N, 64, 4, 4]
//   fc1 = nn.Linear(1024, 128)      # flattened 64 * 4 * 4 = 1024
//   ReLU
//   fc2 = nn.Linear(128, 10)        # logits
//
// No padding: each 5x5 convolution trims 2 pixels from every side. Input: float images
// [N, 1, 28, 28] in [0, 1]; output: logits [N, 10]. Header-only and public API only.
#pragma once

#include <lazygrad/nn.h>

#include <memory>

namespace lazygrad::models {

class LeNet : public nn::Module {
 public:
  static constexpr int64_t kClasses = 10;

  LeNet() {
    conv1 = register_module("conv1", std::make_shared<nn::Conv2d>(1, 32, 5));
    conv2 = register_module("conv2", std::make_shared<nn::Conv2d>(32, 64, 5));
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(64 * 4 * 4, 128));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(128, kClasses));
  }

  Tensor forward(const Tensor& images) override {
    // [N, 28, 28] gets its channel dim; [N, 1, 28, 28] is left as it is.
    Tensor x = images.dim() == 3 ? images.unsqueeze(1) : images;
    x = (*conv1)(x).relu().max_pool2d(2);
    x = (*conv2)(x).relu().max_pool2d(2);
    x = x.flatten(1);
    x = (*fc1)(x).relu();
    return (*fc2)(x);
  }

  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::Linear> fc1, fc2;
};

}  // namespace lazygrad::models
