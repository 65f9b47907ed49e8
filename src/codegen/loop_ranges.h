// Which Loop ranges a kernel node depends on: what the linearizer and the stager both ask to
// decide where a value may be computed (a REDUCE's own ranges end with it); and which work-item
// ranges, which the linearizer asks where a loop's trips depend on the work-item.
#pragma once

#include <set>
#include <unordered_map>

#include "ir/uop.h"

namespace lazygrad {

inline bool is_loop(const UOp* u) { return u->op == Ops::RANGE && u->as<RangeArg>().kind == AxisKind::Loop; }
// A work-item's place in its group: a Local or a Group piece.
inline bool is_thread(const UOp* u) {
  return u->op == Ops::RANGE &&
         (u->as<RangeArg>().kind == AxisKind::Local || u->as<RangeArg>().kind == AxisKind::Group);
}

// The ranges of one kind (`counted`) each node depends on.
class RangeDependence {
 public:
  explicit RangeDependence(bool (*counted)(const UOp*)) : counted_(counted) {}
  const std::set<const UOp*>& operator()(const UOpPtr& u) {
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    std::set<const UOp*> r;
    if (counted_(u.get())) r.insert(u.get());
    for (size_t i = 0; i < u->src.size(); i++) {
      if (u->op == Ops::REDUCE && i > 0) continue;  // a REDUCE's own ranges end with it
      const auto& sr = (*this)(u->src[i]);
      r.insert(sr.begin(), sr.end());
    }
    if (u->op == Ops::REDUCE)
      for (size_t i = 1; i < u->src.size(); i++) r.erase(u->src[i].get());
    return memo_[u.get()] = std::move(r);
  }

 private:
  bool (*counted_)(const UOp*);
  std::unordered_map<const UOp*, std::set<const UOp*>> memo_;
};

class LoopRanges : public RangeDependence {
 public:
  LoopRanges() : RangeDependence(is_loop) {}
};

// The Local and Group ranges each node depends on (a grouped reduction's value, combined across the
// group, depends on none of its own).
class ThreadRanges : public RangeDependence {
 public:
  ThreadRanges() : RangeDependence(is_thread) {}
};

}  // namespace lazygrad
