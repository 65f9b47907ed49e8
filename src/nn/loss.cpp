// Loss modules: the functional losses with their options held, called as loss(input, target).
#include <string>

#include "lazygrad/nn.h"
#include "nn/require.h"

namespace lazygrad::nn {

namespace {
void check_reduction(const std::string& reduction, const char* module) {
  require(
      reduction == "mean" || reduction == "sum" || reduction == "none",
      std::string(module) + ": reduction must be \"mean\", \"sum\" or \"none\", got \"" + reduction + "\"",
      ErrorKind::Value);
}
}  // namespace

CrossEntropyLoss::CrossEntropyLoss(std::optional<Tensor> weight, int64_t ignore_index, std::string reduction,
                                   double label_smoothing)
    : ignore_index(ignore_index), reduction(std::move(reduction)), label_smoothing(label_smoothing) {
  check_reduction(this->reduction, "CrossEntropyLoss");
  require(
      label_smoothing >= 0.0 && label_smoothing <= 1.0,
      "CrossEntropyLoss: label_smoothing must be between 0 and 1, got " + std::to_string(label_smoothing));
  // A buffer, as in PyTorch: it moves and saves with the module.
  if (weight && weight->defined()) this->weight = register_buffer("weight", *weight);
}

Tensor CrossEntropyLoss::operator()(const Tensor& input, const Tensor& target) const {
  const ProfileScope scope(*this);
  return input.cross_entropy(target, weight.defined() ? std::optional(weight) : std::nullopt, ignore_index,
                             reduction, label_smoothing);
}

MSELoss::MSELoss(std::string reduction) : reduction(std::move(reduction)) {
  check_reduction(this->reduction, "MSELoss");
}

}  // namespace lazygrad::nn
