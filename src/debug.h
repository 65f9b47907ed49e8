// The one logging helper for DEBUG output. Each stage logs what it owns at its level:
// 1 realize summary, 2 one line per kernel, 3 schedule and fusion decisions, 4 source, 5 IR.
#pragma once

#include <string>

#include "lazygrad/runtime.h"

namespace lazygrad {

inline bool debug_at(int level) { return settings().debug >= level; }
void debug_log(int level, const std::string& line);

}  // namespace lazygrad
