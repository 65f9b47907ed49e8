// Staging (packing): a load inside a reduction that an enclosing output Loop does not move reads
// the same values on every trip of that Loop. A matrix product whose row tiles are a Loop reads
// the same panel of B for every row tile, and B's rows lie a power-of-two stride apart, so the
// panel thrashes the cache's sets. Such a load is copied once, before the Loop, into kernel
// scratch memory laid out in the order the reduction reads it; inside the Loop it reads the copy.
// The same goes for a value a row statistic computes and the Loop after it computes again: a
// softmax's exp(x - max) is computed for the row's sum and again for the output. Such a value is
// stored into scratch inside the reduction's loop and read back inside the Loop (when it costs a
// transcendental: exp2, log2, sin or sqrt; a subtraction is cheaper to redo than to load), up to
// kMaxStageBytes of scratch.
// Views still never copy: the scratch lives only while the kernel runs.
#pragma once

#include <unordered_map>
#include <vector>

#include "codegen/kernel.h"

namespace lazygrad {

// The ids of a staging copy's loop ranges start here, past any the lowering and the optimizer hand
// out (the C renderer prefetches a copy's strided reads, renderer/c_style.cpp).
inline constexpr int64_t kFirstStageRangeId = 100000;

// The largest scratch a kernel stages into, per thread: about a core's L2, where a staged panel
// must stay to pay for its copy.
inline constexpr int64_t kMaxStageBytes = 1 << 20;

struct Staged {
  UOpPtr sink;                 // the kernel's stores, reading staged loads from scratch
  std::vector<UOpPtr> packs;   // STOREs into scratch, each over its own copies of the load's ranges
  std::vector<UOpPtr> locals;  // DEFINE_LOCAL i: scratch array i (dtype, src[0]: its element count)
  // STOREs into scratch inside a reduction's loop (keyed by the REDUCE), after its body.
  std::unordered_map<const UOp*, std::vector<UOpPtr>> side_stores;
};

// No load is staged when the Loop runs fewer than 4 trips (the copy would not pay) or when the
// scratch would exceed kMaxStageBytes.
Staged stage(const Kernel& k);

}  // namespace lazygrad
