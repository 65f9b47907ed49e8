// Variable: a scalar that kernels take as an argument instead of a constant in their source, so a
// new value compiles nothing and a captured Jit replays with it (a learning rate under a schedule,
// Adam's bias corrections, the random generator's counter).
#pragma once

#include <cstdint>
#include <memory>

#include "lazygrad/dtype.h"
#include "lazygrad/tensor.h"

namespace lazygrad {

struct VariableState;

class Variable {
 public:
  explicit Variable(double value, DType dtype = kFloat32);
  void set(double value);  // seen by every kernel launched afterwards, including Jit replays
  double get() const;
  DType dtype() const;
  Tensor tensor() const;  // a 0-d tensor whose value is read when its kernel runs
  const std::shared_ptr<VariableState>& state() const { return state_; }

 private:
  std::shared_ptr<VariableState> state_;
};

}  // namespace lazygrad
