// The nn modules' argument checks: a failed one throws lazygrad::Error with the given message, of
// the kind PyTorch's Python class would be for the same mistake (ValueError for a bad value, ...).
#pragma once

#include <string>

#include "lazygrad/error.h"
#include "tensor/tensor_impl.h"  // lazygrad::require

namespace lazygrad::nn {

using lazygrad::require;  // require(ok, message, kind = ErrorKind::Runtime)

}  // namespace lazygrad::nn
