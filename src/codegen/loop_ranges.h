// Which Loop ranges a kernel node depends on: what the linearizer and the stager both ask to
// decide where a value may be computed (a REDUCE's own ranges end with it).
#pragma once

#include <set>
#include <unordered_map>

#include "ir/uop.h"

namespace lazygrad {

inline bool is_loop(const UOp* u) { return u->op == Ops::RANGE && u->as<RangeArg>().kind == AxisKind::Loop; }

class LoopRanges {
 public:
  const std::set<const UOp*>& operator()(const UOpPtr& u) {
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    std::set<const UOp*> r;
    if (is_loop(u.get())) r.insert(u.get());
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
  std::unordered_map<const UOp*, std::set<const UOp*>> memo_;
};

}  // namespace lazygrad
