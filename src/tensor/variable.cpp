// lazygrad::Variable: a scalar kernel argument the host can change between launches.
#include "lazygrad/variable.h"

#include <cstring>

#include "ir/variable_state.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {
int64_t to_bits(double value, DType dtype) {
  if (!is_float(dtype)) return static_cast<int64_t>(value);
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
}  // namespace

Variable::Variable(double value, DType dtype) : state_(std::make_shared<VariableState>()) {
  require(dtype != kBool, "Variable: a bool Variable is not supported");
  state_->dtype = dtype;
  state_->bits = to_bits(value, dtype);
}

void Variable::set(double value) { state_->bits = to_bits(value, state_->dtype); }

double Variable::get() const {
  int64_t bits = state_->bits.load();
  if (!is_float(state_->dtype)) return static_cast<double>(bits);
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

DType Variable::dtype() const { return state_->dtype; }

Tensor Variable::tensor() const { return make_tensor(make_uop(Ops::VAR, state_->dtype, {}, state_)); }

}  // namespace lazygrad
