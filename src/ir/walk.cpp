#include "ir/walk.h"

namespace lazygrad {

WalkCounts& walk_counts() {
  static WalkCounts c;
  return c;
}

void count_walk(int64_t visits, int64_t nodes) {
  walk_counts().visits += visits;
  walk_counts().nodes += nodes;
}

std::vector<const UOp*> toposort(const std::vector<const UOp*>& roots,
                                 const std::function<bool(const UOp*)>& descend) {
  std::vector<const UOp*> order;
  std::unordered_set<const UOp*> seen;
  // (node, index of the next source to walk); a node is listed once all its sources are.
  std::vector<std::pair<const UOp*, size_t>> stack;
  int64_t visits = 0;
  for (const UOp* r : roots) {
    if (!seen.insert(r).second) continue;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next == 0) {
        visits++;
        if (descend && !descend(u)) next = u->src.size();
      }
      if (next < u->src.size()) {
        const UOp* s = u->src[next++].get();
        if (seen.insert(s).second) stack.push_back({s, 0});
        continue;
      }
      order.push_back(u);
      stack.pop_back();
    }
  }
  count_walk(visits, static_cast<int64_t>(seen.size()));
  return order;
}

}  // namespace lazygrad
