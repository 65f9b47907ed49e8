// A kernel binds every buffer it reads or writes; WebGPU lets a kernel bind only a few storage
// buffers (maxStorageBuffersPerShaderStage: 8 by default, 10 on SwiftShader), and a fused kernel
// can read more: GPT-2's decode step fused a layer norm of the residual stream (the embeddings and
// every earlier layer's outputs) into the next projection, 12 buffers. The scheduler then computes
// one of the kernel's fused values into a buffer of its own, lowers again, and repeats until every
// kernel fits (engine/schedule.cpp). Devices without a limit (Target::max_buffers 0) never get here.
#pragma once

#include <map>

#include "codegen/target.h"
#include "ir/uop.h"

namespace lazygrad {

// The value inside the kernel that computes `root` (nodes in `realize` other than root are read
// from their buffers) to give a buffer of its own so that the kernel binds fewer buffers: of those
// that lower the count, the one of fewest elements (the cheapest to store: a normalized vector
// rather than the product it feeds), then the one leaving the fewest; only values of a dtype the
// target can hold. Null when no value lowers the count.
UOpPtr value_to_split_off(const UOpPtr& root, const std::map<const UOp*, UOpPtr>& realize,
                          const Target& target);

}  // namespace lazygrad
