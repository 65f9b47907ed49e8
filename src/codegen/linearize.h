// Linearization: the kernel's graph becomes a list of steps in program order, with loops opened
// and closed explicitly and loop-invariant work hoisted out of reduction loops.
#pragma once

#include <vector>

#include "codegen/kernel.h"

namespace lazygrad {

enum class Step { Compute, Open, Close, AccInit, AccUpdate };

struct Inst {
  Step step;
  UOpPtr u;   // the node computed; for Open/Close the RANGE; for Acc* the REDUCE
  int depth;  // loop nesting (0: inside the global loop)
};

struct LinearKernel {
  std::vector<Inst> insts;
  int64_t flops_per_item = 0;  // ALU ops executed per global index
};

LinearKernel linearize(const Kernel& k);

}  // namespace lazygrad
