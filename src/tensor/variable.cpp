// lazygrad::Variable: a scalar kernel argument the host can change between launches.
#include "lazygrad/variable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ir/variable_state.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {
int64_t to_bits(double value, DType dtype) {
  if (!is_float(dtype)) {
    // Kernels read the argument in the Variable's dtype, and narrow's range check reads it as int64:
    // a value the dtype cannot hold would wrap in the kernel and pass the check.
    const int bits = is_unsigned(dtype) ? std::min(bit_width(dtype), 63) : bit_width(dtype) - 1;
    const double lo = is_unsigned(dtype) ? 0 : -std::ldexp(1.0, bits), hi = std::ldexp(1.0, bits);
    require(value >= lo && value < hi && value == std::trunc(value),
            "Variable: " + std::to_string(value) + " is not a whole number that " +
                std::string(dtype_name(dtype)) + " holds",
            ErrorKind::Value);
    return static_cast<int64_t>(value);
  }
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
}  // namespace

Variable::Variable(double value, DType dtype) : state_(std::make_shared<VariableState>()) {
  require(dtype != kBool, "Variable: a bool Variable is not supported", ErrorKind::Value);
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
