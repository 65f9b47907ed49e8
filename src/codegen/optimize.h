// The kernel optimizer: transformations of a kernel's loop structure, each one an Opt that splits a
// piece off one axis. The pieces are expanded before linearization (Upcast, Unroll) or become the
// lanes of vector types in the renderer (Vector).
#pragma once

#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/target.h"

namespace lazygrad {

// Split `amount` iterations off axis `axis` (the output axes longer than 1 first, then the axes of the
// kernel's reductions) as a piece of `kind`: Upcast (output axis: one copy of the body per value, kept
// in registers), Unroll (reduction axis: one copy per value, combined before the accumulator), Vector
// (either: the lanes of a vector type; all of one width, and no value along two), Loop (output axis:
// a loop inside the kernel, so that what does not depend on it is computed once outside it). Pieces
// split later sit outside earlier ones. {Global, axis, 0} orders the loops instead: that output
// axis becomes the outermost of the global loop. {Pad, axis, amount}, first on its output axis,
// rounds the axis up to a multiple of amount (tinygrad's PADTO): the extra indices load nothing (0)
// and store nothing, so a tile can divide an axis such as GPT-2's 50257 vocabulary rows.
struct Opt {
  AxisKind kind;
  int axis;
  int64_t amount;
  bool operator==(const Opt&) const = default;
};

std::string opts_str(std::span<const Opt> opts);  // e.g. "V1:16 U0:4", for DEBUG=2 and the BEAM cache

// The axes a kernel's opts refer to.
struct KernelAxes {
  std::vector<UOpPtr> ranges;  // the Output ranges (axes of size 1 have none), then the reduction's
  std::vector<int64_t> sizes;
  size_t n_output = 0;          // how many of them are output axes
  std::vector<UOpPtr> reduces;  // the kernel's reductions; their axes follow the output axes, in order
  UOpPtr reduce;                // the kernel's reduction when it has exactly one
};
KernelAxes kernel_axes(const Kernel& k);

// What every kernel needs, optimized or not (NOOPT, BEAM's baseline): a row statistic fused into
// its reader (docs/optimizer.md) gets the row as a Loop, so it is computed once per row.
std::vector<Opt> required_opts(const Kernel& k);

// Why a kernel with its opts applied cannot run on the target (vector lanes where it has none,
// work-groups where it has none, or larger than it allows, grouped reductions whose partial results
// outgrow its local memory); empty when it can.
std::string misfit(const Kernel& applied, const Target& target);

// opts with what the target cannot do taken out (vector lanes, work-groups); required_opts when
// what is left no longer fits the kernel. For opts chosen elsewhere (the fuzzer's, a test's).
std::vector<Opt> fit_to_target(const Kernel& k, std::vector<Opt> opts, const Target& target);

// Hand-written defaults for the target: on the CPU vector lanes along the axis most loads read
// contiguously and a register tile over output axes that some input is broadcast along; on a device
// with work-groups a grouped reduction where a reduction's operands are contiguous
// (Target::group_reduction work-items). Otherwise what every kernel needs (required_opts).
std::vector<Opt> default_opts(const Kernel& k, const Target& target = cpu_target());

// The kernel with the opts applied and its output axes made one Global range (split across
// threads) over what is left of them. Error on an opt that does not fit the kernel.
Kernel apply_opts(const Kernel& k, std::span<const Opt> opts);

// root with the nodes in `map` replaced (keys are the nodes replaced), rebuilt bottom-up.
UOpPtr substitute(const UOpPtr& root, const std::unordered_map<const UOp*, UOpPtr>& map);

}  // namespace lazygrad
