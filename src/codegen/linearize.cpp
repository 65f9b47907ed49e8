#include "codegen/linearize.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace lazygrad {

namespace {

class Linearizer {
 public:
  LinearKernel out;

  void emit(const UOpPtr& u, int depth, int64_t trips) {
    if (done_.count(u.get())) return;
    if (u->op == Ops::RANGE && u->as<int64_t>() == 0) return;  // the global range: the kernel's own loop
    if (u->op == Ops::RANGE) throw Error("linearize: range used outside its reduction");
    if (u->op == Ops::DEFINE_GLOBAL || u->op == Ops::DEFINE_VAR || u->op == Ops::CONST) {
      done_.insert(u.get());
      return;  // parameters and literals need no step
    }
    if (u->op == Ops::REDUCE) {
      emit_reduce(u, depth, trips);
      return;
    }
    for (const auto& s : u->src) emit(s, depth, trips);
    out.insts.push_back({Step::Compute, u, depth});
    if (is_alu(u->op) && u->dtype != kInt64 && u->op != Ops::CAST) out.flops_per_item += trips;
    done_.insert(u.get());
  }

 private:
  // The reduction ranges a node depends on.
  const std::set<const UOp*>& ranges(const UOpPtr& u) {
    if (auto it = ranges_.find(u.get()); it != ranges_.end()) return it->second;
    std::set<const UOp*> r;
    if (u->op == Ops::RANGE && u->as<int64_t>() != 0) r.insert(u.get());
    for (size_t i = 0; i < u->src.size(); i++) {
      if (u->op == Ops::REDUCE && i > 0) continue;  // a REDUCE's own ranges end with it
      const auto& sr = ranges(u->src[i]);
      r.insert(sr.begin(), sr.end());
    }
    if (u->op == Ops::REDUCE)
      for (size_t i = 1; i < u->src.size(); i++) r.erase(u->src[i].get());
    return ranges_[u.get()] = r;
  }

  void emit_reduce(const UOpPtr& red, int depth, int64_t trips) {
    std::set<const UOp*> own;
    int64_t inner = trips;
    for (size_t i = 1; i < red->src.size(); i++) {
      own.insert(red->src[i].get());
      inner *= red->src[i]->src[0]->const_int();
    }
    // Hoist: everything in the body that does not depend on this reduction's ranges goes first.
    std::function<void(const UOpPtr&)> hoist = [&](const UOpPtr& u) {
      if (done_.count(u.get())) return;
      const auto& r = ranges(u);
      bool dependent = std::any_of(r.begin(), r.end(), [&](const UOp* x) { return own.count(x); });
      if (!dependent && u->op != Ops::RANGE) {
        emit(u, depth, trips);
        return;
      }
      if (u->op == Ops::REDUCE) return;  // a dependent inner reduction is emitted inside the loop
      for (const auto& s : u->src) hoist(s);
    };
    hoist(red->src[0]);
    out.insts.push_back({Step::AccInit, red, depth});
    for (size_t i = 1; i < red->src.size(); i++) {
      out.insts.push_back({Step::Open, red->src[i], depth + static_cast<int>(i) - 1});
      done_.insert(red->src[i].get());
    }
    int inner_depth = depth + static_cast<int>(red->src.size()) - 1;
    size_t scope_start = out.insts.size();
    emit(red->src[0], inner_depth, inner);
    out.insts.push_back({Step::AccUpdate, red, inner_depth});
    out.flops_per_item += inner;
    for (size_t i = red->src.size() - 1; i >= 1; i--) out.insts.push_back({Step::Close, red->src[i], depth + static_cast<int>(i) - 1});
    // Values computed inside the loop go out of scope with it.
    for (size_t i = scope_start; i < out.insts.size(); i++)
      if (out.insts[i].step == Step::Compute || out.insts[i].step == Step::AccInit) done_.erase(out.insts[i].u.get());
    done_.insert(red.get());
  }

  std::unordered_set<const UOp*> done_;
  std::unordered_map<const UOp*, std::set<const UOp*>> ranges_;
};

}  // namespace

LinearKernel linearize(const Kernel& k) {
  Linearizer L;
  for (const auto& store : k.sink->src) L.emit(store, 0, 1);
  return L.out;
}

}  // namespace lazygrad
