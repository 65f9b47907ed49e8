// The names a kernel's source gives its IR nodes, the same in every language the renderers write:
// g, lane, l<id> and r<id> for the loops' ranges, data<i>, var<i> and local<i> for the buffers,
// scalar arguments and work-group arrays, and acc<n>, val<n>, alu<n> for reductions, loads and the
// rest, numbered in the order they are first named. Constants are each language's literals, not
// names: the renderers write those themselves.
#pragma once

#include <string>
#include <unordered_map>

#include "ir/uop.h"

namespace lazygrad {

class NodeNames {
 public:
  std::string operator()(const UOpPtr& u) {
    if (u->op == Ops::RANGE) {
      const auto& r = u->as<RangeArg>();
      return r.kind == AxisKind::Global                               ? "g"
             : r.kind == AxisKind::Vector                             ? "lane"
             : r.kind == AxisKind::Local || r.kind == AxisKind::Group ? "l" + std::to_string(r.id)
                                                                      : "r" + std::to_string(r.id);
    }
    if (u->op == Ops::DEFINE_GLOBAL) return "data" + std::to_string(u->as<int64_t>());
    if (u->op == Ops::DEFINE_VAR) return "var" + std::to_string(u->as<int64_t>());
    if (u->op == Ops::DEFINE_LOCAL) return "local" + std::to_string(u->as<int64_t>());
    auto it = names_.find(u.get());
    if (it != names_.end()) return it->second;
    std::string n = (u->op == Ops::REDUCE ? "acc"
                     : u->op == Ops::LOAD ? "val"
                                          : "alu") +
                    std::to_string(count_++);
    names_[u.get()] = n;
    return n;
  }
  // Whether a value has been named already (computed into a variable of its own).
  bool named(const UOp* u) const { return names_.count(u) > 0; }

 private:
  std::unordered_map<const UOp*, std::string> names_;
  int count_ = 0;
};

}  // namespace lazygrad
