// A fuzz step as lazygrad's API call, and as the C++ text of that call.
#pragma once

#include <string>
#include <vector>

#include "program.h"

namespace lazygrad::fuzz {

// The value of step s, its inputs taken from v (the values of the steps before it).
Tensor apply_step(const Step& s, const std::vector<Tensor>& v);

// While set (a mode on a device tuple), each input is sharded across these devices along its first
// axis with a row for each (replicated when none has), so every op runs on sharded values.
void set_shard_inputs(std::vector<std::string> devices);

// The right-hand side of `Tensor v<k> = ...;` for step s: the call apply makes.
std::string call_text(const Step& s);

}  // namespace lazygrad::fuzz
