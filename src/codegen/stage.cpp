#include "codegen/stage.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/optimize.h"
#include "runtime/buffer.h"

namespace lazygrad {

namespace {

bool is_loop(const UOp* u) { return u->op == Ops::RANGE && u->as<RangeArg>().kind == AxisKind::Loop; }

class Stager {
 public:
  explicit Stager(const Kernel& k) : k_(k) {
    std::unordered_set<const UOp*> seen, owned;
    std::vector<UOpPtr> loops;
    std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
      if (!seen.insert(u.get()).second) return;
      if (is_loop(u.get())) loops.push_back(u);
      if (u->op == Ops::REDUCE)
        for (size_t i = 1; i < u->src.size(); i++) owned.insert(u->src[i].get());
      for (const auto& s : u->src) walk(s);
    };
    walk(k.sink);
    for (const auto& l : loops)
      if (!owned.count(l.get())) {
        own_.insert(l.get());
        trips_ *= l->src[0]->const_int();
      }
  }

  Staged run() {
    Staged out{k_.sink, {}, {}};
    if (own_.empty() || trips_ < 4) return out;
    std::set<std::pair<const UOp*, bool>> seen;
    std::vector<UOpPtr> loads;
    // in_loop: inside a reduction that some output Loop encloses (one that depends on the Loop).
    std::function<void(const UOpPtr&, bool)> visit = [&](const UOpPtr& u, bool in_loop) {
      if (!seen.insert({u.get(), in_loop}).second) return;
      if (u->op == Ops::REDUCE) {
        visit(u->src[0], in_loop || meets_own(ranges(u)));
        return;
      }
      if (u->op == Ops::LOAD && in_loop && stageable(u)) loads.push_back(u);
      for (const auto& s : u->src) visit(s, in_loop);
    };
    for (const auto& s : k_.sink->src) visit(s, false);
    int64_t bytes = 0;
    for (const auto& l : loads) bytes += elements(l) * itemsize(l->dtype);
    if (loads.empty() || bytes > kMaxStageBytes) return out;

    std::unordered_map<const UOp*, UOpPtr> staged;
    for (size_t i = 0; i < loads.size(); i++) {
      const UOpPtr& load = loads[i];
      std::vector<UOpPtr> rs = loop_ranges(load), copies;
      std::unordered_map<const UOp*, UOpPtr> rename;
      for (size_t j = 0; j < rs.size(); j++) {
        // The copy loop's own ranges: ids past any the lowering and the optimizer hand out.
        int64_t id = 100000 + 100 * static_cast<int64_t>(i) + static_cast<int64_t>(j);
        copies.push_back(make_uop(Ops::RANGE, kInt64, {rs[j]->src[0]}, RangeArg{id, AxisKind::Loop}));
        rename[rs[j].get()] = copies.back();
      }
      UOpPtr local = make_uop(Ops::DEFINE_LOCAL, load->dtype, {index_const(elements(load))},
                              static_cast<int64_t>(i));
      UOpPtr lane = vector_range(load);
      // Scratch index: the ranges row-major (in id order), then the lane.
      auto index = [&](const std::vector<UOpPtr>& r) {
        UOpPtr idx = index_const(0);
        for (const auto& x : r) idx = idx_add(idx_mul(idx, x->src[0]->const_int()), x);
        return lane ? idx_add(idx_mul(idx, lane->src[0]->const_int()), lane) : idx;
      };
      out.packs.push_back(
          make_uop(Ops::STORE, load->dtype, {local, index(copies), substitute(load, rename)}));
      staged[load.get()] = make_uop(Ops::LOAD, load->dtype, {local, index(rs)});
      out.locals.push_back(local);
    }
    out.sink = substitute(k_.sink, staged);
    return out;
  }

 private:
  // The Loop ranges a node depends on (a REDUCE's own ranges end with it).
  const std::set<const UOp*>& ranges(const UOpPtr& u) {
    if (auto it = ranges_.find(u.get()); it != ranges_.end()) return it->second;
    std::set<const UOp*> r;
    if (is_loop(u.get())) r.insert(u.get());
    for (size_t i = 0; i < u->src.size(); i++) {
      if (u->op == Ops::REDUCE && i > 0) continue;
      const auto& sr = ranges(u->src[i]);
      r.insert(sr.begin(), sr.end());
    }
    if (u->op == Ops::REDUCE)
      for (size_t i = 1; i < u->src.size(); i++) r.erase(u->src[i].get());
    return ranges_[u.get()] = r;
  }

  bool meets_own(const std::set<const UOp*>& r) const {
    return std::any_of(r.begin(), r.end(), [&](const UOp* x) { return own_.count(x) != 0; });
  }

  // A load worth copying: from an input (not a buffer this kernel writes), of a plain dtype (16-bit
  // floats convert on load), moving along some reduction loop and not along any output Loop.
  bool stageable(const UOpPtr& load) {
    const UOpPtr& buf = load->src[0];
    if (buf->op != Ops::DEFINE_GLOBAL || k_.written[buf->as<int64_t>()]) return false;
    DType dt = load->dtype;
    if (dt != kFloat32 && dt != kFloat64 && dt != kInt32 && dt != kInt64) return false;
    const auto& r = ranges(load);
    if (r.empty() || meets_own(r)) return false;
    std::unordered_set<const UOp*> vectors, seen;
    bool reduces = false;
    std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
      if (!seen.insert(u.get()).second) return;
      if (u->op == Ops::REDUCE) reduces = true;
      if (u->op == Ops::RANGE && u->as<RangeArg>().kind == AxisKind::Vector) vectors.insert(u.get());
      for (const auto& s : u->src) walk(s);
    };
    walk(load);
    return !reduces && vectors.size() <= 1;
  }

  std::vector<UOpPtr> loop_ranges(const UOpPtr& load) {
    std::vector<UOpPtr> out;
    std::unordered_set<const UOp*> seen;
    std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
      if (!seen.insert(u.get()).second) return;
      if (is_loop(u.get())) out.push_back(u);
      for (const auto& s : u->src) walk(s);
    };
    walk(load);
    std::sort(out.begin(), out.end(),
              [](const UOpPtr& a, const UOpPtr& b) { return a->as<RangeArg>().id < b->as<RangeArg>().id; });
    return out;
  }

  static UOpPtr vector_range(const UOpPtr& load) {
    UOpPtr v;
    std::unordered_set<const UOp*> seen;
    std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
      if (!seen.insert(u.get()).second) return;
      if (u->op == Ops::RANGE && u->as<RangeArg>().kind == AxisKind::Vector) v = u;
      for (const auto& s : u->src) walk(s);
    };
    walk(load);
    return v;
  }

  int64_t elements(const UOpPtr& load) {
    int64_t n = 1;
    for (const auto& r : loop_ranges(load)) n *= r->src[0]->const_int();
    if (auto v = vector_range(load)) n *= v->src[0]->const_int();
    return n;
  }

  const Kernel& k_;
  std::unordered_set<const UOp*> own_;  // the output Loops: Loop ranges no reduction owns
  int64_t trips_ = 1;
  std::unordered_map<const UOp*, std::set<const UOp*>> ranges_;
};

}  // namespace

Staged stage_loads(const Kernel& k) { return Stager(k).run(); }

}  // namespace lazygrad
