// Linearization: the kernel's graph becomes a list of steps in program order, with loops opened
// and closed explicitly and loop-invariant work hoisted out of reduction loops. Reductions over the
// same loops (the accumulators of a register tile) share one loop nest.
#pragma once

#include <unordered_set>
#include <vector>

#include "codegen/kernel.h"

namespace lazygrad {

// AccFinish: a reduction over vector lanes combines its lanes after its loops close.
enum class Step { Compute, Open, Close, AccInit, AccUpdate, AccFinish };

struct Inst {
  Step step;
  UOpPtr u;   // the node computed; for Open/Close the RANGE; for Acc* the REDUCE
  int depth;  // loop nesting (0: inside the global loop)
};

struct LinearKernel {
  std::vector<Inst> insts;
  int64_t flops_per_item = 0;                // ALU ops executed per global index
  UOpPtr vector_range;                       // the Vector range, if the kernel has one
  std::unordered_set<const UOp*> vectors;    // nodes whose value is a vector (one value per lane)
  bool vector_acc(const UOpPtr& red) const;  // a REDUCE whose accumulator is a vector
};

LinearKernel linearize(const Kernel& k);

}  // namespace lazygrad
