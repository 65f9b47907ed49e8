// The nn modules' argument checks: a failed one throws lazygrad::Error with the given message, of
// the kind PyTorch's Python class for the mistake (ErrorKind::Value for a bad argument value).
#pragma once

#include <string>

#include "lazygrad/error.h"

namespace lazygrad::nn {

inline void require(bool ok, const std::string& message, ErrorKind kind = ErrorKind::Runtime) {
  if (!ok) throw Error(message, kind);
}

}  // namespace lazygrad::nn
