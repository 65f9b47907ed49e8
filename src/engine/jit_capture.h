// What a Jit captured, seen from outside it (Jit::captured()): the launches in order, where the
// inputs were and what the outputs are. Read by export_webgpu, which writes a capture out as a page.
#pragma once

#include <utility>
#include <vector>

#include "engine/realize.h"
#include "lazygrad/jit.h"

namespace lazygrad {

struct Jit::Captured {
  const std::vector<ExecItem>& items;                            // in launch order
  const std::vector<std::vector<const Buffer*>>& input_buffers;  // by input position (one per shard)
  const std::vector<std::pair<Shape, DType>>& input_types;
  const std::vector<UOpPtr>& outputs;  // views of the captured output buffers
};

}  // namespace lazygrad
