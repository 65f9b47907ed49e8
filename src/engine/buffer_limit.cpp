#include "engine/buffer_limit.h"

#include <limits>
#include <unordered_set>
#include <vector>

#include "ir/ops.h"

namespace lazygrad {

namespace {

// How many buffers the kernel computing `root` reads: realized nodes (other than root) and BUFFER
// nodes it reaches without passing another, plus `cut` (when not null) read as a buffer of its own.
// Also lists the nodes the kernel computes (root excepted) into `inside` when it is not null.
size_t buffers_read(const UOp* root, const std::map<const UOp*, UOpPtr>& realize, const UOp* cut,
                    std::vector<UOpPtr>* inside) {
  std::unordered_set<const UOp*> seen{root}, leaves;
  std::vector<const UOp*> stack{root};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    for (const UOpPtr& s : u->src) {
      if (!seen.insert(s.get()).second) continue;
      if (s.get() == cut || realize.count(s.get()) || s->op == Ops::BUFFER) {
        leaves.insert(s.get());
        continue;
      }
      if (inside) inside->push_back(s);
      stack.push_back(s.get());
    }
  }
  return leaves.size();
}

bool holds(const Target& t, DType dt) {
  if (dt == kInt64 || dt == kUInt64) return t.int64;
  return dt != kFloat64 || t.float64;
}

}  // namespace

UOpPtr value_to_split_off(const UOpPtr& root, const std::map<const UOp*, UOpPtr>& realize,
                          const Target& target) {
  std::vector<UOpPtr> inside;
  const size_t now = buffers_read(root.get(), realize, nullptr, &inside);
  UOpPtr best;
  int64_t best_numel = std::numeric_limits<int64_t>::max();
  size_t best_left = now;
  for (const UOpPtr& c : inside) {
    if (!(is_alu(c->op) || c->op == Ops::REDUCE_AXIS) || !holds(target, c->dtype)) continue;
    if (c->numel() > best_numel) continue;
    const size_t left = buffers_read(root.get(), realize, c.get(), nullptr);
    if (left >= now) continue;
    if (c->numel() < best_numel || left < best_left) {
      best = c;
      best_numel = c->numel();
      best_left = left;
    }
  }
  return best;
}

}  // namespace lazygrad
