#include "codegen/stage.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/loop_ranges.h"
#include "codegen/optimize.h"
#include "runtime/buffer.h"

namespace lazygrad {

namespace {

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
        own_loops_.push_back(l);
        trips_ *= l->src[0]->const_int();
      }
    // In id order, so that the kernel's source (its cache key) is the same from run to run.
    std::sort(own_loops_.begin(), own_loops_.end(),
              [](const UOpPtr& a, const UOpPtr& b) { return a->as<RangeArg>().id < b->as<RangeArg>().id; });
  }

  Staged run() {
    Staged out{k_.sink, {}, {}, {}};
    if (own_.empty()) return out;
    stage_recomputed(out);
    if (trips_ >= 4) stage_loads(out);  // fewer trips do not pay for the copy
    return out;
  }

 private:
  // Values a row statistic computes that the Loop after it computes again (the same node with the
  // reduction's ranges renamed to the Loop's): stored inside the reduction, loaded inside the Loop.
  void stage_recomputed(Staged& out) {
    std::unordered_set<const UOp*> in_stores;
    std::vector<UOpPtr> reduces, free_vectors;
    std::unordered_set<const UOp*> owned;
    std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
      if (!in_stores.insert(u.get()).second) return;
      if (u->op == Ops::REDUCE) {
        reduces.push_back(u);
        for (size_t i = 1; i < u->src.size(); i++) owned.insert(u->src[i].get());
      }
      if (u->op == Ops::RANGE && u->as<RangeArg>().kind == AxisKind::Vector) free_vectors.push_back(u);
      for (const auto& s : u->src) walk(s);
    };
    for (const auto& s : out.sink->src) walk(s);
    std::erase_if(free_vectors, [&](const UOpPtr& v) { return owned.count(v.get()) != 0; });
    std::unordered_map<const UOp*, UOpPtr> replace;
    for (const auto& red : reduces) {
      if (!ranges(red).empty()) continue;  // not a row statistic computed before the Loops
      std::vector<UOpPtr> loop, lane;
      for (size_t i = 1; i < red->src.size(); i++)
        (is_loop(red->src[i].get()) ? loop : lane).push_back(red->src[i]);
      if (loop.size() != 1 || lane.size() > 1) continue;
      // Pair the reduction's loop (and lanes) with an output Loop (and free lanes) of the same size.
      for (const UOpPtr& o_ptr : own_loops_) {
        if (o_ptr->src[0]->const_int() != loop[0]->src[0]->const_int()) continue;
        std::vector<UOpPtr> lane_pairs = lane.empty() ? std::vector<UOpPtr>{nullptr} : free_vectors;
        bool found = false;
        for (const auto& v : lane_pairs) {
          if (v && v->src[0]->const_int() != lane[0]->src[0]->const_int()) continue;
          std::unordered_map<const UOp*, UOpPtr> rename{{loop[0].get(), o_ptr}};
          if (v) rename[lane[0].get()] = v;
          auto index = [&](const UOpPtr& l, const UOpPtr& x) {
            return x ? idx_add(idx_mul(l, x->src[0]->const_int()), x) : l;
          };
          std::unordered_set<const UOp*> seen;
          std::function<void(const UOpPtr&)> find = [&](const UOpPtr& n) {
            if (!seen.insert(n.get()).second || !is_alu(n->op) || !transcendental(n)) return;
            if (!depends_on(n, loop[0].get()) || (!lane.empty() && !depends_on(n, lane[0].get()))) return;
            // A value on the output's own vector lanes has one element per lane, and the scratch
            // holds one per trip of the loop (and of the reduction's lanes): not such a value.
            if (std::any_of(free_vectors.begin(), free_vectors.end(),
                            [&](const UOpPtr& f) { return depends_on(n, f.get()); }))
              return;
            UOpPtr again = plain(n->dtype) ? substitute(n, rename) : nullptr;
            int64_t elements = loop[0]->src[0]->const_int() * (v ? v->src[0]->const_int() : 1);
            if (again && in_stores.count(again.get()) && !replace.count(again.get()) &&
                bytes_ + elements * itemsize(n->dtype) <= kMaxStageBytes) {
              bytes_ += elements * itemsize(n->dtype);
              UOpPtr local = new_local(out, n->dtype, elements);
              out.side_stores[red.get()].push_back(make_uop(
                  Ops::STORE, n->dtype, {local, index(loop[0], lane.empty() ? nullptr : lane[0]), n}));
              replace[again.get()] = make_uop(Ops::LOAD, n->dtype, {local, index(o_ptr, v)});
              found = true;
              return;
            }
            for (const auto& s : n->src) find(s);
          };
          find(red->src[0]);
          if (found) break;
        }
      }
    }
    if (!replace.empty()) out.sink = substitute(out.sink, replace);
  }

  static bool plain(DType dt) { return dt == kFloat32 || dt == kFloat64 || dt == kInt32 || dt == kInt64; }

  bool transcendental(const UOpPtr& n) {
    if (auto it = transcendental_.find(n.get()); it != transcendental_.end()) return it->second;
    bool t = n->op == Ops::EXP2 || n->op == Ops::LOG2 || n->op == Ops::SIN || n->op == Ops::SQRT ||
             std::any_of(n->src.begin(), n->src.end(), [&](const UOpPtr& s) { return transcendental(s); });
    return transcendental_[n.get()] = t;
  }

  UOpPtr new_local(Staged& out, DType dt, int64_t elements) {
    out.locals.push_back(
        make_uop(Ops::DEFINE_LOCAL, dt, {index_const(elements)}, static_cast<int64_t>(out.locals.size())));
    return out.locals.back();
  }

  // Loads a Loop repeats (see stage.h): copied into scratch before the Loop.
  void stage_loads(Staged& out) {
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
    for (const auto& s : out.sink->src) visit(s, false);
    int64_t bytes = 0;
    for (const auto& l : loads) bytes += elements(l) * itemsize(l->dtype);
    if (loads.empty() || bytes_ + bytes > kMaxStageBytes) return;
    bytes_ += bytes;

    std::unordered_map<const UOp*, UOpPtr> staged;
    // Loads over the same ranges (a panel's vectors, upcast copies of one load) get the same copy
    // ranges, so the linearizer copies them in one loop nest.
    std::map<std::vector<const UOp*>, std::vector<UOpPtr>> copies_of;
    for (size_t i = 0; i < loads.size(); i++) {
      const UOpPtr& load = loads[i];
      std::vector<UOpPtr> rs = loop_ranges(load);
      std::vector<const UOp*> key;
      for (const auto& r : rs) key.push_back(r.get());
      std::vector<UOpPtr>& copies = copies_of[key];
      for (size_t j = copies.size(); j < rs.size(); j++) {
        // The copy loop's own ranges: ids past any the lowering and the optimizer hand out.
        int64_t id = kFirstStageRangeId + 100 * static_cast<int64_t>(i) + static_cast<int64_t>(j);
        copies.push_back(make_uop(Ops::RANGE, kInt64, {rs[j]->src[0]}, RangeArg{id, AxisKind::Loop}));
      }
      std::unordered_map<const UOp*, UOpPtr> rename;
      for (size_t j = 0; j < rs.size(); j++) rename[rs[j].get()] = copies[j];
      UOpPtr local = new_local(out, load->dtype, elements(load));
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
    }
    out.sink = substitute(out.sink, staged);
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
  std::vector<UOpPtr> own_loops_;       // the same, in id order
  int64_t bytes_ = 0;                   // scratch handed out so far, at most kMaxStageBytes
  std::unordered_map<const UOp*, bool> transcendental_;
  int64_t trips_ = 1;
  LoopRanges ranges;  // the Loop ranges each node depends on
};

}  // namespace

Staged stage(const Kernel& k) { return Stager(k).run(); }

}  // namespace lazygrad
