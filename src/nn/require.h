// The nn modules' argument checks: a failed one throws lazygrad::Error with the given message.
#pragma once

#include <string>

#include "lazygrad/error.h"

namespace lazygrad::nn {

inline void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}

}  // namespace lazygrad::nn
