// Argument checks shared by the optimizers and the learning-rate schedulers.
#pragma once

#include <sstream>
#include <string>

#include "lazygrad/error.h"

namespace lazygrad::optim {

// A number as PyTorch prints it in its messages (up to 10 significant digits).
inline std::string num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

// Most are argument values (ValueError in PyTorch: "Invalid learning rate", ...).
inline void check(bool ok, const std::string& message, ErrorKind kind = ErrorKind::Value) {
  if (!ok) {
    if (kind == ErrorKind::Value) throw ValueError(message);
    throw Error(message, kind);
  }
}

}  // namespace lazygrad::optim
