// Uses the installed headers and library; check.sh expects it to print 8.
// The models are installed with the headers: including every one proves they compile from outside
// the source tree, and the MLP's forward proves they link and run.
#include <lazygrad/lazygrad.h>
#include <lazygrad/models/generate.h>
#include <lazygrad/models/gpt2.h>
#include <lazygrad/models/lenet.h>
#include <lazygrad/models/llama.h>
#include <lazygrad/models/llama_gguf.h>
#include <lazygrad/models/mlp.h>

#include <iostream>

int main() {
  using lazygrad::Tensor;
  lazygrad::models::MLP mlp;
  Tensor logits = mlp.forward(Tensor::zeros({2, 1, 28, 28}));
  if (logits.shape() != lazygrad::Shape{2, lazygrad::models::MLP::kClasses}) return 1;
  std::cout << (Tensor::ones({2, 2}) + 1).sum().item<float>() << "\n";
  return 0;
}
