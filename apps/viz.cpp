// `lazygrad viz`: one VIZ page (docs/viz.md) of a chosen computation, every realize in it on one
// page: the tensor graph, which nodes fused into which kernel, each kernel's source and time.
#include <lazygrad/lazygrad.h>

#include <iostream>
#include <memory>
#include <string>

#include "../models/mlp.h"
#include "command.h"
#include "option_values.h"

namespace lazygrad::cli {

namespace {

// What each example computes; inputs are made (and realized) before the page records anything.
std::function<void()> example(const std::string& name) {
  Tensor::manual_seed(0);
  if (name == "matmul") {
    Tensor x = Tensor::randn({16, 32}).realize(), w = Tensor::randn({32, 8}).realize(),
           b = Tensor::randn({8}).realize();
    return [=] { (x.matmul(w) + b).relu().realize(); };
  }
  if (name == "softmax") {
    Tensor x = Tensor::randn({8, 100}).realize();
    return [=] { x.softmax(1).realize(); };
  }
  if (name == "attention") {
    Tensor q = Tensor::randn({1, 2, 16, 8}).realize(), k = Tensor::randn({1, 2, 16, 8}).realize();
    Tensor v = Tensor::randn({1, 2, 16, 8}).realize();
    return [=] { scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true).realize(); };
  }
  // mlp-step: one training step of a small MLP (forward, cross-entropy, backward, SGD).
  auto model = std::make_shared<nn::Sequential>();
  model->register_module("0", std::make_shared<nn::Linear>(20, 32));
  model->register_module("1", std::make_shared<nn::ReLU>());
  model->register_module("2", std::make_shared<nn::Linear>(32, 4));
  auto opt = std::make_shared<optim::SGD>(model->parameters(), 0.1);
  Tensor x = Tensor::randn({8, 20}).realize(), y = Tensor::randint(0, 4, {8}).realize();
  return [=] {
    Tensor loss = (*model)(x).cross_entropy(y);
    loss.backward();
    opt->step({loss});
  };
}

}  // namespace

int cmd_viz(const Args& args) {
  Options opts = parse_options(args, {"--example", "--out"});
  no_positionals(opts);
  const std::string name = parse_choice("--example", opts.get("--example").value_or("mlp-step"),
                                        {"matmul", "softmax", "attention", "mlp-step"});
  const std::string out = opts.get("--out").value_or("lazygrad-viz.html");
  if (out.empty()) throw UsageError{"--out takes a path, got ''"};
  write_viz(example(name), out);
  std::cout << "wrote " << out << " (" << name << "): open it in a browser\n";
  return 0;
}

}  // namespace lazygrad::cli
