// Row streams: the one criterion for a sum that reads a large matrix once, down its rows, into a
// few thousand outputs (a decode step's x @ W, W [K, N] row-major). Two stages apply it, each to
// its own representation of the read: the scheduler splits such a sum into partial sums over pieces
// of K (engine/schedule.cpp, row_stream_pieces, from the view's strides), and the optimizer gives
// the partials' kernel the whole row of outputs as its tile (codegen/optimize.cpp, row_stream, from
// the kernel's loads). If they disagreed, a split sum would get column tiles, or a whole-row tile a
// sum no thread shares.
#pragma once

#include <cstdint>

namespace lazygrad {

// How a sum reads one operand.
struct MatrixRead {
  int64_t outputs = 0;                   // the outputs each row of it feeds (N)
  int64_t bytes = 0;                     // what the sum reads of it, each element once
  bool steps_along_sum = false;          // neither broadcast nor contiguous along the reduction
  bool contiguous_along_output = false;  // contiguous along an output axis (the rows' direction)
  bool broadcast_along_output = false;   // some output axis re-reads it (then a tile reuses it)
};

// At most 4096 outputs: one row of accumulators stays in the L1 (16 KiB). At least 1 MiB read:
// below that the matrix comes from the caches, and splitting the sum only adds a kernel.
inline constexpr int64_t kRowStreamMaxOutputs = 4096, kRowStreamMinBytes = int64_t(1) << 20;

inline bool streams_rows(const MatrixRead& m) {
  return m.outputs <= kRowStreamMaxOutputs && m.bytes >= kRowStreamMinBytes && m.steps_along_sum &&
         m.contiguous_along_output && !m.broadcast_along_output;
}

}  // namespace lazygrad
