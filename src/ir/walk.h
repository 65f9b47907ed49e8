// Walks over UOp graphs without recursion: a graph can be 100,000 nodes deep (a chain of adds, the
// backward pass of a long chain), far deeper than the call stack. Every walk visits each node once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

#include "ir/uop.h"

namespace lazygrad {

// What graph walks did, for tests: `visits` counts nodes a walk expanded (read the sources of),
// `nodes` the distinct nodes it met. Each walk expands each of its nodes once, so visits == nodes;
// a walk that revisits shared subgraphs (a tree walk of a DAG: exponential) shows as visits >> nodes.
struct WalkCounts {
  std::atomic<int64_t> visits{0}, nodes{0};
};
WalkCounts& walk_counts();

// The nodes under the roots, sources before their users (post-order), each once. `descend(u)`
// false: u is listed but its sources are not walked (a realized node, a reduction's inside).
std::vector<const UOp*> toposort(const std::vector<const UOp*>& roots,
                                 const std::function<bool(const UOp*)>& descend = {});
inline std::vector<const UOp*> toposort(const UOp* root,
                                        const std::function<bool(const UOp*)>& descend = {}) {
  return toposort(std::vector<const UOp*>{root}, descend);
}

// Records one walk in walk_counts() (for walks written as their own loops).
void count_walk(int64_t visits, int64_t nodes);

}  // namespace lazygrad
