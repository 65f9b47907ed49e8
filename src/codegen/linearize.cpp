#include "codegen/linearize.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/loop_ranges.h"
#include "codegen/stage.h"
#include "codegen/tensor_cores.h"
#include "shape/size.h"

namespace lazygrad {

namespace {

AxisKind kind_of(const UOp* r) { return r->as<RangeArg>().kind; }

class Linearizer {
 public:
  LinearKernel out;
  std::unordered_map<const UOp*, std::vector<UOpPtr>> side_stores;  // see Staged

  explicit Linearizer(const Kernel& k) {
    std::unordered_set<const UOp*> seen;
    std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
      if (!seen.insert(u.get()).second) return;
      for (const auto& s : u->src) walk(s);
      if (u->op == Ops::RANGE && kind_of(u.get()) == AxisKind::Vector) {
        int64_t w = u->src[0]->const_int();
        if (out.lanes != 1 && out.lanes != w) throw Error("linearize: vector ranges of different widths");
        out.lanes = w;
      }
      if (u->op == Ops::REDUCE) groups_[std::vector<UOpPtr>(u->src.begin() + 1, u->src.end())].push_back(u);
      if (u->op == Ops::RANGE && (kind_of(u.get()) == AxisKind::Local || kind_of(u.get()) == AxisKind::Group))
        out.thread_ranges.push_back(u);
    };
    walk(k.sink);
    lanes_ = out.lanes;
    std::sort(out.thread_ranges.begin(), out.thread_ranges.end(), [](const UOpPtr& a, const UOpPtr& b) {
      bool ga = kind_of(a.get()) == AxisKind::Group, gb = kind_of(b.get()) == AxisKind::Group;
      return ga != gb ? gb : a->as<RangeArg>().id < b->as<RangeArg>().id;
    });
    if (!out.thread_ranges.empty() && kind_of(out.thread_ranges.back().get()) == AxisKind::Group)
      out.group_range = out.thread_ranges.back();
  }

  void emit(const UOpPtr& u, int depth, int64_t trips) {
    if (done_.count(u.get())) return;
    if (u->op == Ops::RANGE && !is_loop(u.get())) return;  // the global loop and the lanes: always there
    if (u->op == Ops::RANGE) throw Error("linearize: range used outside its reduction");
    if (u->op == Ops::DEFINE_GLOBAL || u->op == Ops::DEFINE_VAR || u->op == Ops::DEFINE_LOCAL ||
        u->op == Ops::CONST) {
      done_.insert(u.get());
      return;  // parameters and literals need no step
    }
    if (u->op == Ops::REDUCE) {
      emit_reduce_group(u, depth, trips);
      return;
    }
    for (const auto& s : u->src) emit(s, depth, trips);
    out.insts.push_back({Step::Compute, u, depth});
    if (is_alu(u->op) && u->dtype != kInt64 && u->op != Ops::CAST)
      out.flops_per_item += trips * (is_vector(u) ? lanes_ : 1);
    done_.insert(u.get());
  }

  // The Vector range a value runs along: one that it depends on other than through a reduction over
  // it (null: a scalar). Two in one value would need two-dimensional vectors.
  const UOp* vector_of(const UOpPtr& u) {
    if (auto it = vector_memo_.find(u.get()); it != vector_memo_.end()) return it->second;
    const UOp* v = u->op == Ops::RANGE && kind_of(u.get()) == AxisKind::Vector ? u.get() : nullptr;
    for (size_t i = 0; i < u->src.size(); i++) {
      const UOp* s = vector_of(u->src[i]);  // visits all sources: fills out.vector_of
      if (u->op == Ops::REDUCE && i > 0) continue;
      if (s && v && s != v) throw Error("linearize: a value runs along two vector axes");
      v = s ? s : v;
    }
    if (u->op == Ops::REDUCE && std::any_of(u->src.begin() + 1, u->src.end(), [&](const UOpPtr& r) {
          return r->op == Ops::RANGE && kind_of(r.get()) == AxisKind::Vector;
        }))
      out.over_lanes.insert(u.get());
    if (u->op == Ops::REDUCE && v && std::find_if(u->src.begin() + 1, u->src.end(), [&](const UOpPtr& r) {
                                       return r.get() == v;
                                     }) != u->src.end())
      v = nullptr;
    if (v) out.vector_of[u.get()] = v;
    return vector_memo_[u.get()] = v;
  }
  bool is_vector(const UOpPtr& u) { return vector_of(u) != nullptr; }

  // The stores, inside the output loops (Loop ranges no reduction owns) they depend on; before
  // those loops open, the copies of staged loads into scratch (codegen/stage.h).
  void emit_stores(const std::vector<UOpPtr>& stores, const std::vector<UOpPtr>& packs) {
    std::set<const UOp*> loop_set;
    for (const auto& s : stores) {
      const auto& r = ranges(s);
      loop_set.insert(r.begin(), r.end());
    }
    std::vector<UOpPtr> loops;
    std::unordered_set<const UOp*> found;
    std::function<void(const UOpPtr&)> find = [&](const UOpPtr& u) {
      if (!found.insert(u.get()).second) return;
      if (u->op == Ops::RANGE && loop_set.count(u.get()) &&
          std::find(loops.begin(), loops.end(), u) == loops.end())
        loops.push_back(u);
      for (const auto& s : u->src) find(s);
    };
    for (const auto& s : stores) find(s->src[1]);  // in the order the store's index uses them
    std::sort(loops.begin(), loops.end(),
              [](const UOpPtr& a, const UOpPtr& b) { return a->as<RangeArg>().id < b->as<RangeArg>().id; });
    int64_t trips = 1;
    for (const auto& l : loops) trips *= l->src[0]->const_int();
    // Hoist what needs no loop at all (a value inside a reduction's body waits for its loop). Each
    // node once: a graph that reads its values several times over (PyTorch's floor division reads
    // a and b in five places) is a DAG whose paths are exponentially many (the compiler fuzzer's
    // seed 38025, a chain of them, walked for half an hour).
    // Nor what a work-item computes only in a reduction's trips that it may not run at all (gate).
    std::unordered_set<const UOp*> hoisted;
    std::function<void(const UOpPtr&, const std::set<const UOp*>&)> hoist =
        [&](const UOpPtr& u, const std::set<const UOp*>& gate) {
          if (done_.count(u.get()) || !hoisted.insert(u.get()).second) return;
          if (ranges(u).empty() && u->op != Ops::RANGE && !gated(u, gate)) {
            emit(u, 0, 1);
            return;
          }
          if (u->op == Ops::REDUCE) {
            std::set<const UOp*> inner = gate;
            add_gate(std::vector<UOpPtr>(u->src.begin() + 1, u->src.end()), inner);
            for (const auto& s : u->src) hoist(s, inner);
            return;
          }
          for (const auto& s : u->src) hoist(s, gate);
        };
    // First, as a hoisted value may read a staged load. Copies over the same ranges (a panel's
    // vectors side by side) share one loop nest: one pass over the source's rows, not one per vector.
    std::vector<std::pair<std::vector<UOpPtr>, std::vector<UOpPtr>>> nests;  // loops, packs
    for (const auto& p : packs) {
      std::vector<UOpPtr> loops = pack_loops(p);
      auto same = std::find_if(nests.begin(), nests.end(), [&](const auto& n) { return n.first == loops; });
      if (same == nests.end())
        nests.push_back({std::move(loops), {p}});
      else
        same->second.push_back(p);
    }
    for (const auto& [nest_loops, nest_packs] : nests) emit_packs(nest_loops, nest_packs);
    for (const auto& s : stores) hoist(s, {});
    for (size_t i = 0; i < loops.size(); i++) {
      out.insts.push_back({Step::Open, loops[i], static_cast<int>(i)});
      done_.insert(loops[i].get());
    }
    for (const auto& s : stores) emit(s, static_cast<int>(loops.size()), trips);
    for (size_t i = loops.size(); i-- > 0;) out.insts.push_back({Step::Close, loops[i], static_cast<int>(i)});
  }

 private:
  // A staged load's copy into scratch: a loop nest over its own ranges, before the output loops.
  std::vector<UOpPtr> pack_loops(const UOpPtr& pack) {
    std::vector<UOpPtr> loops;
    std::unordered_set<const UOp*> found;
    std::function<void(const UOpPtr&)> find = [&](const UOpPtr& u) {
      if (!found.insert(u.get()).second) return;
      if (is_loop(u.get()) && std::find(loops.begin(), loops.end(), u) == loops.end()) loops.push_back(u);
      for (const auto& s : u->src) find(s);
    };
    find(pack);
    std::sort(loops.begin(), loops.end(),
              [](const UOpPtr& a, const UOpPtr& b) { return a->as<RangeArg>().id < b->as<RangeArg>().id; });
    return loops;
  }

  void emit_packs(const std::vector<UOpPtr>& loops, const std::vector<UOpPtr>& packs) {
    int64_t trips = 1;
    for (size_t i = 0; i < loops.size(); i++) {
      out.insts.push_back({Step::Open, loops[i], static_cast<int>(i)});
      done_.insert(loops[i].get());
      trips *= loops[i]->src[0]->const_int();
    }
    size_t scope_start = out.insts.size();
    for (const auto& pack : packs) emit(pack, static_cast<int>(loops.size()), trips);
    for (size_t i = loops.size(); i-- > 0;) out.insts.push_back({Step::Close, loops[i], static_cast<int>(i)});
    end_scope(scope_start, loops);
  }

  // Values computed inside loops that just closed go out of scope with them.
  void end_scope(size_t scope_start, const std::vector<UOpPtr>& loops) {
    for (size_t i = scope_start; i < out.insts.size(); i++)
      if (out.insts[i].step == Step::Compute || out.insts[i].step == Step::AccInit)
        done_.erase(out.insts[i].u.get());
    for (const auto& l : loops) done_.erase(l.get());
  }

  // Every reduction over the same ranges as red is emitted with it: one loop nest, one accumulator
  // each. A member that depends on another member's value waits for a later nest, and so does one
  // whose value depends on a loop not open here (red was hoisted out of a loop another member runs
  // in: the compiler fuzzer's seed 10726, an upcast conv whose stores shared an inner reduction's
  // ranges).
  void emit_reduce_group(const UOpPtr& red, int depth, int64_t trips) {
    std::vector<UOpPtr> key(red->src.begin() + 1, red->src.end());
    std::vector<UOpPtr> loops;
    std::set<const UOp*> own;
    int64_t inner = trips;
    for (const auto& r : key) {
      own.insert(r.get());
      if (is_loop(r.get())) {
        loops.push_back(r);
        inner *= r->src[0]->const_int();
      }
    }
    auto loops_open = [&](const UOpPtr& r) {
      const auto& rs = ranges(r->src[0]);
      return std::all_of(rs.begin(), rs.end(), [&](const UOp* x) { return own.count(x) || done_.count(x); });
    };
    std::vector<UOpPtr> group;
    for (const auto& r : groups_[key])
      if (!done_.count(r.get()) &&
          (r == red || (!depends_on(r, red.get()) && !depends_on(red, r.get()) && loops_open(r))))
        group.push_back(r);
    // Hoist: everything in the bodies that does not depend on these ranges goes first (each node
    // once, as in emit_stores), but not what depends on the work-item where a loop's own bound
    // does: a work-item past a grouped row's end runs no trip, and what it would compute there
    // before the loop reads past the row (the compiler fuzzer's seed 3820: a uint8 remainder by
    // bytes read past the end of a row of 5 on groups of 32 raised division by zero).
    std::set<const UOp*> gate;
    add_gate(loops, gate);
    std::unordered_set<const UOp*> hoisted;
    std::function<void(const UOpPtr&)> hoist = [&](const UOpPtr& u) {
      if (done_.count(u.get()) || !hoisted.insert(u.get()).second) return;
      const auto& r = ranges(u);
      bool dependent =
          std::any_of(r.begin(), r.end(), [&](const UOp* x) { return own.count(x); }) || gated(u, gate);
      if (!dependent && u->op != Ops::RANGE) {
        emit(u, depth, trips);
        return;
      }
      if (u->op == Ops::REDUCE) return;  // a dependent inner reduction is emitted inside the loop
      for (const auto& s : u->src) hoist(s);
    };
    for (const auto& r : group) hoist(r->src[0]);
    std::erase_if(group,
                  [&](const UOpPtr& r) { return done_.count(r.get()) != 0; });  // emitted while hoisting
    for (const auto& r : group) out.insts.push_back({Step::AccInit, r, depth});
    for (const auto& l : loops)  // a loop's own bound (a grouped reduction's partial last trip)
      if (l->src.size() > 1) emit(l->src[1], depth, trips);
    for (size_t i = 0; i < loops.size(); i++) {
      out.insts.push_back({Step::Open, loops[i], depth + static_cast<int>(i)});
      done_.insert(loops[i].get());
    }
    int inner_depth = depth + static_cast<int>(loops.size());
    size_t scope_start = out.insts.size();
    for (const auto& r : group) emit(r->src[0], inner_depth, inner);
    for (const auto& r : group)
      if (auto it = side_stores.find(r.get()); it != side_stores.end())
        for (const auto& st : it->second) emit(st, inner_depth, inner);
    for (const auto& r : group) {
      if (fusable(r)) out.fused.insert(r.get());
      out.insts.push_back({Step::AccUpdate, r, inner_depth});
      out.flops_per_item += inner * (is_vector(r->src[0]) ? lanes_ : 1);
    }
    for (size_t i = loops.size(); i-- > 0;)
      out.insts.push_back({Step::Close, loops[i], depth + static_cast<int>(i)});
    end_scope(scope_start, loops);
    for (const auto& r : group)
      if (std::any_of(key.begin(), key.end(),
                      [](const UOpPtr& x) { return kind_of(x.get()) == AxisKind::Group; }))
        out.insts.push_back({Step::AccGroup, r, depth});
    for (const auto& r : group) {
      if (out.acc_apart(r)) out.insts.push_back({Step::AccFinish, r, depth});
      done_.insert(r.get());
    }
  }

  // A vector float sum of a plain product (not x * (1/y), which is a division on lanes): see fused.
  bool fusable(const UOpPtr& r) {
    const UOpPtr& m = r->src[0];
    const DType dt = out.acc_dtype(r);
    return r->as<ReduceArg>().op == Ops::ADD && out.vector_acc(r) && m->op == Ops::MUL && m->dtype == dt &&
           (dt == kFloat32 || dt == kFloat64) && is_vector(m) && m->src[0]->op != Ops::LOG2 &&
           m->src[1]->op != Ops::RECIPROCAL;
  }

  // The work-item ranges that decide whether a loop of `loops` runs a trip at all (those its own
  // bound reads: a grouped reduction's partial last trip), added to gate.
  void add_gate(const std::vector<UOpPtr>& loops, std::set<const UOp*>& gate) {
    for (const auto& l : loops)
      if (l->op == Ops::RANGE && l->src.size() > 1) {
        const auto& t = threads(l->src[1]);
        gate.insert(t.begin(), t.end());
      }
  }
  // Whether u depends on a work-item range of the gate: computed only inside the gated trips.
  bool gated(const UOpPtr& u, const std::set<const UOp*>& gate) {
    if (gate.empty()) return false;
    const auto& t = threads(u);
    return std::any_of(t.begin(), t.end(), [&](const UOp* x) { return gate.count(x) != 0; });
  }

  std::unordered_set<const UOp*> done_;
  LoopRanges ranges;     // the Loop ranges each node depends on
  ThreadRanges threads;  // the Local and Group ranges each node depends on
  std::unordered_map<const UOp*, const UOp*> vector_memo_;
  std::map<std::vector<UOpPtr>, std::vector<UOpPtr>> groups_;
  int64_t lanes_ = 1;
};

}  // namespace

DType accumulator_dtype(const UOp& red, bool vector_lanes, bool target_float64) {
  bool float_sum = red.as<ReduceArg>().op == Ops::ADD && is_float(red.dtype) && red.dtype != kFloat64;
  if (float_sum && !vector_lanes && target_float64) return kFloat64;
  return LinearKernel::compute_dtype(red.dtype);
}

LinearKernel linearize(const Kernel& k, bool target_float64) {
  if (k.tensor_core) {  // rendered whole (renderer/tensor_core_kernel.cpp): no steps, its FLOPs
    LinearKernel lin;
    const TensorCoreTile& tc = *k.tensor_core;
    const int64_t per_tile = 2 * 16 * tc.t * 8 * tc.t * tc.match.size(tc.match.k_axis);
    lin.flops_per_item =
        saturating_mul(per_tile, tc.tiles()) / std::max<int64_t>(1, k.global_size * k.local_size);
    return lin;
  }
  // Work-items of a group split their work by their local index, not by copies into scratch (nor
  // could a copy carry a grouped loop's own bound): a kernel with work-groups stages nothing.
  Staged staged = k.local_size > 1 ? Staged{k.sink, {}, {}, {}} : stage(k);
  Kernel with_stages = k;
  with_stages.sink = staged.sink;
  Linearizer L(with_stages);
  // The work-group the kernel is launched with (work_groups) is exactly the pieces its code indexes.
  int64_t thread_size = 1;
  for (const auto& r : L.out.thread_ranges) thread_size = saturating_mul(thread_size, r->src[0]->const_int());
  if (thread_size != k.local_size)
    throw Error("linearize: kernel " + k.name + " has work-groups of " + std::to_string(k.local_size) +
                " work-items but indexes " + std::to_string(thread_size));
  L.out.float64 = target_float64;
  for (const auto& store : staged.sink->src) L.vector_of(store);  // fills out.vector_of
  for (const auto& pack : staged.packs) L.vector_of(pack);
  for (const auto& [red, stores] : staged.side_stores)
    for (const auto& st : stores) L.vector_of(st);
  L.out.locals = staged.locals;
  L.side_stores = staged.side_stores;
  L.emit_stores(staged.sink->src, staged.packs);
  return L.out;
}

WorkGroups work_groups(const Kernel& k, const Target& t) {
  if (k.local_size > 1) return {true, k.local_size, k.global_size};
  const int64_t size =
      std::max<int64_t>(1, std::min({t.block_size, t.max_local[0], t.max_group_size, k.global_size}));
  return {false, size, (k.global_size + size - 1) / size};
}

}  // namespace lazygrad
