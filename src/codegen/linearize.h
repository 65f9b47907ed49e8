// Linearization: the kernel's graph becomes a list of steps in program order, with loops opened
// and closed explicitly and loop-invariant work hoisted out of loops. Reductions over the same loops
// (the accumulators of a register tile) share one loop nest; output axes the optimizer made loops
// (Loop ranges outside any reduction) enclose the stores, after everything that does not depend on
// them (a row's max and sum, computed once for the row).
#pragma once

#include <unordered_map>
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
  int64_t flops_per_item = 0;  // ALU ops executed per global index
  int64_t lanes = 1;           // the width of the kernel's Vector ranges (all have one width)
  std::vector<UOpPtr> locals;  // scratch arrays (DEFINE_LOCAL i), allocated per call of the kernel
  // Nodes whose value is a vector (one value per lane), with the Vector range they run along.
  std::unordered_map<const UOp*, const UOp*> vector_of;
  bool is_vector(const UOp* u) const { return vector_of.count(u) != 0; }
  bool vector_acc(const UOpPtr& red) const { return is_vector(red->src[0].get()); }  // a vector accumulator
};

LinearKernel linearize(const Kernel& k);

}  // namespace lazygrad
