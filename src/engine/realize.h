// Realize: schedule, compile (in parallel, through the disk cache), run, and report.
#pragma once

#include <vector>

#include "ir/uop.h"

namespace lazygrad {

// Computes the targets; returns for each one what it is now (a view of its buffer).
// Contract: each target is held by exactly two references that the caller replaces or drops
// afterwards (its owner and the vector); the scheduler counts any other holder as a later reader.
std::vector<UOpPtr> realize_uops(const std::vector<UOpPtr>& targets);

}  // namespace lazygrad
