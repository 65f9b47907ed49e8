// A fuzz step as lazygrad's API call, and as the C++ text of that call.
#pragma once

#include <string>
#include <vector>

#include "program.h"

namespace lazygrad::fuzz {

// The value of step s, its inputs taken from v (the values of the steps before it).
Tensor apply_step(const Step& s, const std::vector<Tensor>& v);

// The right-hand side of `Tensor v<k> = ...;` for step s: the call apply makes.
std::string call_text(const Step& s);

}  // namespace lazygrad::fuzz
