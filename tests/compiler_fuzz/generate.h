// Random programs: chains of ops on random shapes (1, odd sizes, primes, empty axes) and dtypes,
// each step drawn until the reference accepts it, so every program is one PyTorch would run.
#pragma once

#include <cstdint>

#include "program.h"
#include "reference.h"

namespace lazygrad::fuzz {

struct GenOptions {
  int min_steps = 4, max_steps = 14;  // ops after the first inputs
  int64_t max_elements = 2048;        // of any value
};

Program generate(uint64_t seed, const GenOptions& options = {});

// The reference values of every step (throws Invalid if a step is not one PyTorch would run).
std::vector<RefTensor> interpret(const Program& p);

}  // namespace lazygrad::fuzz
