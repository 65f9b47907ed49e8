// StateDict: named tensors, as Module::state_dict() returns them and safetensors files hold them.
#pragma once

#include <map>
#include <string>

#include "lazygrad/tensor.h"

namespace lazygrad {

using StateDict = std::map<std::string, Tensor>;

}  // namespace lazygrad
