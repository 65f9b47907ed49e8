// Linearization: the kernel's graph becomes a list of steps in program order, with loops opened
// and closed explicitly and loop-invariant work hoisted out of loops. Reductions over the same loops
// (the accumulators of a register tile) share one loop nest; output axes the optimizer made loops
// (Loop ranges outside any reduction) enclose the stores, after everything that does not depend on
// them (a row's max and sum, computed once for the row).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/target.h"

namespace lazygrad {

// AccGroup: after a grouped reduction's loops close, the work-group's partial accumulators combined
// (through local memory) into every work-item's accumulator. AccFinish: then its value from its
// accumulator (a vector accumulator's lanes combined; one of a wider type rounded to the dtype).
enum class Step { Compute, Open, Close, AccInit, AccUpdate, AccGroup, AccFinish };

// The dtype a reduction accumulates in: one rule for every reduction. A scalar sum of float32 (or of
// a 16-bit float) in float64 where the target has it (a long float32 running sum loses digits
// PyTorch's pairwise summation keeps); a vector accumulator's lanes (each a short partial sum) and
// every other reduction in the dtype the reduction computes in. Whatever it is, the reduction's
// value, wherever it is read, compared or reused, is its dtype's: the accumulator rounded once its
// loops close, so a fused argmax compares the very values its max was taken over.
DType accumulator_dtype(const UOp& red, bool vector_lanes, bool target_float64);

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
  // Reductions over a Vector range: each lane is a trip of the reduction, so their accumulator is a
  // vector even when the operand is one value for every lane (a sum of a broadcast value on four
  // lanes counted it once a trip instead of four times: the compiler fuzzer's seed 5898).
  std::unordered_set<const UOp*> over_lanes;
  bool vector_acc(const UOpPtr& red) const {  // a vector accumulator
    return is_vector(red->src[0].get()) || over_lanes.count(red.get()) != 0;
  }
  // Vector float sums of products whose AccUpdate is one fused multiply-add, acc = a * b + acc with
  // one rounding, as BLAS accumulates. Explicit here because kernels compile with contraction off
  // (OpenCL C and NVRTC would contract by default): nothing else is fused, so every device rounds
  // an elementwise a * b + c twice, as PyTorch does.
  std::unordered_set<const UOp*> fused;
  // The work-item's place in its group: the Local pieces by id, then the Group piece (the fastest
  // moving part of the local index, so a group's partial results of one output lie side by side).
  std::vector<UOpPtr> thread_ranges;
  UOpPtr group_range;   // the Group piece: only its work-item 0 stores
  bool float64 = true;  // the target holds float64 (accumulator_dtype)
  DType acc_dtype(const UOpPtr& red) const { return accumulator_dtype(*red, vector_acc(red), float64); }
  // The accumulator is a variable apart from the reduction's value, which AccFinish makes from it
  // (a 16-bit float reduction accumulates in float and is rounded there).
  bool acc_apart(const UOpPtr& red) const {
    return vector_acc(red) ? !is_vector(red.get()) : acc_dtype(red) != red->dtype;
  }
  // 16-bit floats are computed in float32.
  static DType compute_dtype(DType dt) { return dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt; }
};

LinearKernel linearize(const Kernel& k, bool target_float64 = true);

// How a kernel runs on a target with work-groups (not a thread-slice one): one work-group of
// local_size work-items per global index where its opts placed Local or Group pieces (the work-items
// tell themselves apart by their local index); otherwise one work-item per global index, in groups
// of the target's block size, the last cut short by the kernel's bound check. The engine launches
// with it and the renderers write it into the kernel (WGSL's @workgroup_size and its index, CUDA's
// __launch_bounds__, the C-style base's group head): one answer, so they cannot disagree.
struct WorkGroups {
  bool per_index = false;  // one group per global index (Local or Group pieces)
  int64_t size = 1;        // work-items per group
  int64_t count = 0;       // groups
};
WorkGroups work_groups(const Kernel& k, const Target& t);

}  // namespace lazygrad
