// A kernel on its way to machine code: the lowered loop body (a SINK of STOREs over ranges and
// loads), the buffers it touches, and what DEBUG and the counters report about it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/uop.h"

namespace lazygrad {

// A Variable that positions a read or a write (narrow at a Variable position) must lie in [lo, hi]
// when the kernel runs; a kernel cannot raise, so this is checked before each launch.
struct VarBound {
  size_t var;  // DEFINE_VAR index
  int64_t lo, hi;
};

// The kernel's error word: bits 0-2 are integer division by zero and scratch allocation (see
// engine/realize.cpp); from kFirstIndexErrorBit on, one bit per CHECK_INDEX of the kernel, the last
// one shared by any beyond; kInterruptedBit when it stopped early at Ctrl-C (runtime/interrupt.h).
// Bit 31 stays clear: the word is an int.
inline constexpr int kFirstIndexErrorBit = 3;
inline constexpr size_t kIndexErrorSlots = 27;
inline constexpr int kInterruptedBit = 30;
static_assert(kFirstIndexErrorBit + kIndexErrorSlots <= kInterruptedBit);

struct TensorCoreTile;  // codegen/tensor_cores.h

struct Kernel {
  std::string name;    // e.g. r_64_33: reduce, then the loop sizes
  std::string device;  // where it runs (canonical, runtime/device.h)
  // A copy between devices (COPY): buffers[0] gets buffers[1]'s bytes by the devices' copy path; no
  // code, no sink.
  bool copy = false;
  UOpPtr sink;            // SINK(STORE...) over DEFINE_GLOBAL(i) params and RANGEs (see AxisKind)
  Shape out_shape;        // the output's axes: Output range i loops over out_shape[i]
  int64_t global_size;    // iterations of the Global range (after optimize: the thread-split loop)
  int64_t work_per_item;  // inner iterations per global index, for the threading heuristic
  // Work-items per group when the opts place Local or Group pieces: then each global index is one
  // work-group of local_size work-items. 1: one work-item per global index, grouped by the engine.
  int64_t local_size = 1;
  std::vector<std::shared_ptr<Buffer>> buffers;      // param i -> buffer; 0 is the output
  std::vector<bool> written;                         // param i is stored to
  std::vector<const UOp*> reads;                     // realized nodes (other kernels' outputs) read
  std::vector<std::shared_ptr<VariableState>> vars;  // DEFINE_VAR i -> the value it reads at launch
  std::vector<VarBound> var_bounds;
  std::vector<std::string> index_errors;  // error bit kFirstIndexErrorBit + i: the message of check i
  bool in_place = false;                  // it writes into a buffer that was there before (an assign)
  std::string opts;                       // the optimizations applied, for DEBUG=2
  // A reduction whose opts split output axes only along the vector axis (a matrix-vector product's
  // columns): each value it loads serves one accumulator, none is reused by other rows of a tile, so
  // a strided read streams from memory (the C renderer prefetches it, renderer/c_style.cpp).
  bool one_row_tile = false;
  // Set by a TensorCore opt: the kernel is the tensor cores' product, rendered whole from this
  // (its sink stays the unoptimized one); global_size counts work-groups of local_size work-items.
  std::shared_ptr<const TensorCoreTile> tensor_core;
  // Reductions this kernel would compute more than once per output element, at different indices
  // (a matrix product read by both the max and the comparison of a fused argmax): the scheduler
  // gives them a kernel of their own, so their value is computed once and is one value.
  std::vector<UOpPtr> recomputed;
  // Only while a realize is traced (engine/trace.h): the tensor-level nodes this kernel computes
  // (sources first, its result last) and those it reads from memory.
  std::vector<UOpPtr> traced_nodes, traced_inputs;
};

// Tensor-level subgraph to kernel: `root` is computed into `out` (through `out_view`, a movement
// chain over a BUFFER, for ASSIGN; null for a fresh contiguous buffer). Nodes in `realized` are
// read from their buffers instead of being recomputed.
// A realized tensor-level node's buffer (its contents are the node's value, contiguous).
using RealizedMap = std::unordered_map<const UOp*, std::shared_ptr<Buffer>>;
Kernel lower_kernel(const UOpPtr& root, const std::shared_ptr<Buffer>& out, const UOpPtr& out_view,
                    const RealizedMap& realized);

// Whether the kernel reads its output buffer at an index other than the one it stores to: then
// writing in place would let one element's store change another element's input.
bool reads_output_elsewhere(const Kernel& k);

// Whether the kernel only fills a fresh output with zero bits (Tensor::zeros(...).contiguous()):
// memory the device gives as zeros does the same (engine/realize.cpp).
bool fills_fresh_output_with_zeros(const Kernel& k);

}  // namespace lazygrad
