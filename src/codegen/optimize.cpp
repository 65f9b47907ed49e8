// Kernel optimizations as substitutions on the lowered graph: an axis split into a loop and pieces
// is the range replaced by loop * size + piece; an Upcast or Unroll piece is then expanded by
// substituting each of its values (hash-consing shares whatever does not depend on it, such as a
// matrix product's row loaded once for a whole register tile).
#include "codegen/optimize.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "codegen/row_stream.h"
#include "codegen/tensor_cores.h"
#include "ir/walk.h"
#include "lazygrad/error.h"
#include "runtime/buffer.h"
#include "shape/size.h"
#include "shape/view.h"

namespace lazygrad {

namespace {

UOpPtr make_range(int64_t size, int64_t id, AxisKind kind) {
  return make_uop(Ops::RANGE, kInt64, {index_const(size)}, RangeArg{id, kind});
}

AxisKind kind_of(const UOpPtr& r) { return r->as<RangeArg>().kind; }

// Rebuilds a graph with nodes replaced; a REDUCE's ranges are replaced by lists of ranges, and
// Unroll ranges among them are expanded into the reduction's body.
class Substitute {
 public:
  using Map = std::unordered_map<const UOp*, UOpPtr>;
  using RangeLists = std::unordered_map<const UOp*, std::vector<UOpPtr>>;
  explicit Substitute(Map map, RangeLists lists = {}) : map_(std::move(map)), lists_(std::move(lists)) {}
  // Padded output axes (Pad opts), and what their indices past the axis's size do. Every store
  // that depends on one is gated by `keep`, in the new indices, so each real index is stored once.
  //  - Real: the tile that reaches past the end moves back to end at the axis's end (a where, once
  //    per tile); it recomputes a few indices the tile before it stored, which `keep` skips. Every
  //    index is real, so its loads are neither gated nor clamped, and its rows stay at constant
  //    offsets from one base: GCC's FMAs take them as base + displacement operands, where the
  //    clamped rows below take a register each (4 pointers kept live across the loop spilled two to
  //    the stack) and an indexed operand, which Intel's cores split in two micro-ops. GPT-2's LM
  //    head, 50257 rows padded to 50260 (bench/lm_head.py, the Xeon): 4.8 ms with gated loads,
  //    3.35-3.90 clamped, 3.09 moved back; 50260 rows, no padding, 2.97-3.24.
  //  - Clamped: an axis shorter than its tile cannot move back, and an in-place kernel's does not:
  //    its loads read at the index clamped to size - 1, the extra rows' values only ever reaching
  //    their gated stores.
  //  - Gated: on the vector lanes, a load is gated by `keep` too (0 past the end): one masked load.
  enum class PadLoads { Real, Clamped, Gated };
  struct Padded {
    const UOp* range;
    int64_t size;
    PadLoads loads;
    UOpPtr keep;
  };
  std::vector<Padded> padded;

  UOpPtr operator()(const UOpPtr& u) {
    if (auto it = map_.find(u.get()); it != map_.end()) return it->second;
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    UOpPtr out = u->op == Ops::REDUCE ? reduce(u) : rebuild(u);
    memo_[u.get()] = out;
    return out;
  }

 private:
  UOpPtr rebuild(const UOpPtr& u) {
    std::vector<UOpPtr> src;
    bool same = true;
    for (const auto& s : u->src) {
      src.push_back((*this)(s));
      same = same && src.back() == s;
    }
    if (same) return u;
    if (u->op == Ops::LOAD && std::any_of(padded.begin(), padded.end(), [&](const Padded& p) {
          return p.loads == PadLoads::Clamped && depends_on(u, p.range);
        }))
      return clamped()(u);
    if (u->op == Ops::LOAD || u->op == Ops::STORE) {
      const size_t gate_at = u->op == Ops::LOAD ? 2 : 3;
      for (const auto& [range, size, loads, keep] : padded) {
        if (!depends_on(u, range) || (u->op == Ops::LOAD && loads != PadLoads::Gated)) continue;
        if (src.size() > gate_at)
          src[gate_at] = alu(Ops::AND, kBool, {src[gate_at], keep});
        else
          src.push_back(keep);
      }
    }
    if (u->op == Ops::LOAD && src.size() == 3 && src[2]->is_const()) {  // validity decided
      if (!src[2]->const_int()) return const_uop(u->dtype, 0);
      src.pop_back();
    }
    if (is_alu(u->op)) return alu(u->op, u->dtype, std::move(src));
    return make_uop(u->op, u->dtype, std::move(src), u->arg);
  }

  // The reduction's loops that a load's validity depends on (a convolution's window: kh and kw)
  // go outside the others (its channels), keeping their order among themselves: the validity, a
  // few vector compares per load, is then computed once per window position instead of once per
  // channel too (the linearizer places a value in the innermost loop it depends on). Only Loop
  // ranges move; lanes and groups keep their places. The sum's order changes with the loops'.
  static void validity_loops_outside(const UOpPtr& body, std::vector<UOpPtr>& ranges) {
    std::vector<size_t> slots;
    for (size_t i = 0; i < ranges.size(); i++)
      if (kind_of(ranges[i]) == AxisKind::Loop) slots.push_back(i);
    if (slots.size() < 2) return;
    std::vector<UOpPtr> gated_loads;
    for (const UOp* x : toposort(body.get()))
      if (x->op == Ops::LOAD && x->src.size() == 3) gated_loads.push_back(x->src[2]);
    if (gated_loads.empty()) return;
    std::vector<UOpPtr> loops;
    for (size_t i : slots) loops.push_back(ranges[i]);
    std::stable_partition(loops.begin(), loops.end(), [&](const UOpPtr& r) {
      return std::any_of(gated_loads.begin(), gated_loads.end(),
                         [&](const UOpPtr& v) { return depends_on(v, r.get()); });
    });
    for (size_t j = 0; j < slots.size(); j++) ranges[slots[j]] = loops[j];
  }

  // The same substitution with each clamping padded range's index at most its size - 1, and its
  // loads not gated by it (built on first use).
  Substitute& clamped() {
    if (!clamped_) {
      Map m = map_;
      for (const Padded& p : padded)
        if (p.loads == PadLoads::Clamped) {
          const UOpPtr& at = map_.at(p.range);
          m[p.range] = alu(Ops::WHERE, kInt64, {idx_lt(at, p.size), at, index_const(p.size - 1)});
        }
      clamped_ = std::make_unique<Substitute>(std::move(m), lists_);
      for (const Padded& p : padded)
        if (p.loads != PadLoads::Clamped) clamped_->padded.push_back(p);
    }
    return *clamped_;
  }

  UOpPtr reduce(const UOpPtr& u) {
    UOpPtr body = (*this)(u->src[0]);
    std::vector<UOpPtr> ranges, unrolled;
    for (size_t i = 1; i < u->src.size(); i++) {
      auto it = lists_.find(u->src[i].get());
      for (const auto& r : it == lists_.end() ? std::vector<UOpPtr>{u->src[i]} : it->second)
        (kind_of(r) == AxisKind::Unroll ? unrolled : ranges).push_back(r);
    }
    Ops op = u->as<ReduceArg>().op;
    // A sum or product of 16-bit floats accumulates in float32 (linearize.cpp, accumulator_dtype),
    // and so do its unrolled terms: rounded to float16, the partial product 1712 * 298.75 overflowed
    // to inf and met a 0 of the other half as NaN, where the loop's accumulator holds 0 (seed 74869).
    const bool widen = (u->dtype == kFloat16 || u->dtype == kBFloat16) &&
                       (op == Ops::ADD || op == Ops::MUL) && !unrolled.empty();
    const DType dt = widen ? kFloat32 : u->dtype;
    if (!unrolled.empty()) {
      // One copy of the body per value of the unrolled pieces, combined as a balanced tree.
      std::vector<UOpPtr> terms;
      for_each_value(unrolled, [&](const Map& m) {
        UOpPtr t = Substitute(m)(body);
        terms.push_back(widen ? alu(Ops::CAST, dt, {t}) : t);
      });
      while (terms.size() > 1) {
        std::vector<UOpPtr> next;
        for (size_t i = 0; i + 1 < terms.size(); i += 2)
          next.push_back(alu(op, dt, {terms[i], terms[i + 1]}));
        if (terms.size() % 2) next.push_back(terms.back());
        terms = std::move(next);
      }
      body = terms[0];
    }
    // Over no loop at all (its axes had one element each, or were all unrolled): the body is the
    // value. A REDUCE without ranges would be a reduction the linearizer cannot place.
    UOpPtr value = body;
    if (!ranges.empty()) {
      validity_loops_outside(body, ranges);
      std::vector<UOpPtr> src{body};
      src.insert(src.end(), ranges.begin(), ranges.end());
      value = make_uop(Ops::REDUCE, dt, std::move(src), u->arg);
    }
    return widen ? alu(Ops::CAST, u->dtype, {value}) : value;
  }

 public:
  // Calls f with each assignment of constants to the pieces (all combinations, last piece fastest).
  static void for_each_value(const std::vector<UOpPtr>& pieces, const std::function<void(const Map&)>& f) {
    std::vector<int64_t> v(pieces.size(), 0);
    while (true) {
      Map m;
      for (size_t i = 0; i < pieces.size(); i++) m[pieces[i].get()] = index_const(v[i]);
      f(m);
      size_t i = pieces.size();
      while (i > 0 && ++v[i - 1] == pieces[i - 1]->src[0]->const_int()) v[--i] = 0;
      if (i == 0) return;
    }
  }

 private:
  Map map_;
  RangeLists lists_;
  Map memo_;
  std::unique_ptr<Substitute> clamped_;
};

void collect(const UOpPtr& u, Ops op, std::unordered_set<const UOp*>& seen, std::vector<UOpPtr>& out) {
  if (!seen.insert(u.get()).second) return;
  if (u->op == op) out.push_back(u);
  for (const auto& s : u->src) collect(s, op, seen, out);
}

std::vector<UOpPtr> all_of(const UOpPtr& root, Ops op) {
  std::unordered_set<const UOp*> seen;
  std::vector<UOpPtr> out;
  collect(root, op, seen, out);
  return out;
}

// How a memory access moves along one axis: stride 1 (contiguous lanes), 0 (one value for all),
// or anything else (each lane its own load).
// Half: each value for two neighbouring lanes (index base + r / 2: a pooling gradient's pooled
// values), which the renderer loads as half a vector and duplicates. Strided: every second value
// (base + 2 r: a 2x2 pooling window's columns), loaded as two vectors' worth and deinterleaved.
enum class Access { Broadcast, Contiguous, Half, Strided, Gather };

Access access_along(const UOpPtr& mem, const UOp* range) {
  auto aff = affine_in(mem->src[1], range);
  if (!aff)
    return mem->op == Ops::LOAD && mem->src.size() == 2 && halved_in(mem->src[1], range) ? Access::Half
                                                                                         : Access::Gather;
  // A validity that changes along the axis (a padded window) still loads contiguously inside the
  // image, lane by lane only at its edges (the renderer checks all lanes first).
  bool masked = mem->op == Ops::LOAD && mem->src.size() == 3 && depends_on(mem->src[2], range);
  if (masked && aff->second == 0) return Access::Gather;
  if (aff->second == 2 && mem->op == Ops::LOAD && mem->src.size() == 2) return Access::Strided;
  return aff->second == 0 ? Access::Broadcast : aff->second == 1 ? Access::Contiguous : Access::Gather;
}

}  // namespace

UOpPtr substitute(const UOpPtr& root, const std::unordered_map<const UOp*, UOpPtr>& map) {
  return Substitute(map)(root);
}

std::string opts_str(std::span<const Opt> opts) {
  std::ostringstream os;
  for (size_t i = 0; i < opts.size(); i++)
    os << (i ? " " : "") << kAxisLetters[static_cast<int>(opts[i].kind)] << opts[i].axis << ":"
       << opts[i].amount;
  return os.str();
}

KernelAxes kernel_axes(const Kernel& k) {
  KernelAxes ax;
  std::unordered_map<int64_t, UOpPtr> outputs;
  for (const auto& r : all_of(k.sink, Ops::RANGE))
    if (kind_of(r) == AxisKind::Output) outputs[r->as<RangeArg>().id] = r;
  for (size_t i = 0; i < k.out_shape.size(); i++) {  // axes of size 1 have no range and no number
    auto it = outputs.find(static_cast<int64_t>(i));
    if (it == outputs.end()) continue;
    ax.ranges.push_back(it->second);
    ax.sizes.push_back(k.out_shape[i]);
  }
  ax.n_output = ax.ranges.size();
  ax.reduces = all_of(k.sink, Ops::REDUCE);
  if (ax.reduces.size() == 1) ax.reduce = ax.reduces[0];
  for (const auto& red : ax.reduces)
    for (size_t i = 1; i < red->src.size(); i++) {
      ax.ranges.push_back(red->src[i]);
      ax.sizes.push_back(red->src[i]->src[0]->const_int());
    }
  return ax;
}

namespace {

// A TensorCore opt (which stands alone): the kernel as the tensor cores' product, its warp tiles
// four to a work-group.
Kernel apply_tensor_core(const Kernel& k, std::span<const Opt> opts) {
  const Opt& o = opts[0];
  auto bad = [&](const std::string& why) {
    return Error("optimize: opt " + opts_str(opts) + " does not fit kernel " + k.name + ": " + why);
  };
  if (opts.size() != 1) throw bad("a TensorCore opt stands alone");
  auto match = match_tensor_core(k);
  if (!match) throw bad("it is not a product of two float16 or two bfloat16 operands the tensor cores take");
  if (o.axis != 0 || (o.amount != 1 && o.amount != 2 && o.amount != 4) || !tensor_core_fits(*match, o.amount))
    throw bad("C0:T takes T of 1, 2 or 4 with M a multiple of 16 T and N of 8 T");
  auto tile = std::make_shared<TensorCoreTile>();
  tile->match = std::move(*match);
  tile->t = o.amount;
  Kernel out = k;
  out.local_size = 32 * TensorCoreTile::kWarps;
  out.global_size = (tile->tiles() + TensorCoreTile::kWarps - 1) / TensorCoreTile::kWarps;
  out.work_per_item = tile->match.size(tile->match.k_axis);
  out.tensor_core = std::move(tile);
  out.opts = opts_str(opts);
  return out;
}

}  // namespace

Kernel apply_opts(const Kernel& k, std::span<const Opt> opts) {
  if (std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.kind == AxisKind::TensorCore; }))
    return apply_tensor_core(k, opts);
  KernelAxes ax = kernel_axes(k);
  struct Plan {
    int64_t loop;                // iterations left to the axis's loop
    std::vector<UOpPtr> pieces;  // in the order split: the first is innermost
  };
  std::vector<Plan> plan;
  for (int64_t s : ax.sizes) plan.push_back({s, {}});
  int64_t next_id = 1000;                  // lowering numbers its ranges from 0
  int64_t vector = 0;                      // the lanes' width, once a vector axis is chosen
  int64_t local_size = 1;                  // work-items per group (Local and Group pieces)
  int group_axis = -1;                     // the axis of the Group piece (at most one)
  bool group_rest = false;                 // its amount does not divide the axis: the last trip is partial
  std::vector<size_t> order(ax.n_output);  // the global loop's axes, outermost first
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::vector<int64_t> padded_to(ax.n_output, 0);  // Pad opts: the axis's new size
  for (const Opt& o : opts) {
    auto bad = [&](const std::string& why) {
      return Error("optimize: opt " + opts_str(std::span<const Opt>(&o, 1)) + " does not fit kernel " +
                   k.name + ": " + why);
    };
    if (o.axis < 0 || o.axis >= static_cast<int>(plan.size())) throw bad("no such axis");
    if (o.kind == AxisKind::Global) {  // loop order: this output axis outermost in the global loop
      if (static_cast<size_t>(o.axis) >= ax.n_output || o.amount != 0)
        throw bad("global order takes an output axis and 0");
      order.erase(std::find(order.begin(), order.end(), static_cast<size_t>(o.axis)));
      order.insert(order.begin(), static_cast<size_t>(o.axis));
      continue;
    }
    bool output = static_cast<size_t>(o.axis) < ax.n_output;
    if (o.kind == AxisKind::Pad) {  // before the split checks: it need not divide, it makes it divide
      if (!output || !plan[o.axis].pieces.empty() || padded_to[o.axis] || o.amount < 2)
        throw bad("pad takes an output axis before its other opts, once, and an amount of at least 2");
      if (ax.sizes[o.axis] % o.amount == 0) throw bad("the axis is already a multiple of the amount");
      padded_to[o.axis] = (ax.sizes[o.axis] + o.amount - 1) / o.amount * o.amount;
      plan[o.axis].loop = padded_to[o.axis];
      continue;
    }
    if (o.axis == group_axis && group_rest)
      throw bad("a Group that does not divide its axis is the axis's only split");
    // A Group piece that is the only split of its axis may leave a partial last trip: each
    // work-item's loop stops at the axis's end (a row of 1000 on groups of 64).
    bool partial = o.kind == AxisKind::Group && plan[o.axis].pieces.empty() && plan[o.axis].loop > 0;
    if (o.amount < 2 || (!partial && (plan[o.axis].loop < o.amount || plan[o.axis].loop % o.amount != 0)))
      throw bad("amount must be at least 2 and divide what is left of the axis (" +
                std::to_string(plan[o.axis].loop) + ")");
    if ((o.kind == AxisKind::Upcast && !output) || (o.kind == AxisKind::Unroll && output) ||
        (o.kind == AxisKind::Loop && !output) || (o.kind == AxisKind::Local && !output) ||
        (o.kind == AxisKind::Group && output))
      throw bad("upcast, loop and local split output axes, unroll and group reduction axes");
    if (o.kind == AxisKind::Global || o.kind == AxisKind::Output) throw bad("not an optimization");
    if (o.kind == AxisKind::Vector && vector && vector != o.amount)
      throw bad("vector axes of different widths");
    if (o.kind == AxisKind::Group && group_axis >= 0) throw bad("one Group piece per kernel");
    if (o.kind == AxisKind::Vector) vector = o.amount;
    if (o.kind == AxisKind::Local || o.kind == AxisKind::Group)
      local_size = saturating_mul(local_size, o.amount);
    if (o.kind == AxisKind::Group) {
      group_axis = o.axis;
      group_rest = plan[o.axis].loop % o.amount != 0;
    }
    plan[o.axis].pieces.push_back(make_range(o.amount, next_id++, o.kind));
    plan[o.axis].loop = (plan[o.axis].loop + o.amount - 1) / o.amount;
  }
  if (vector && local_size > 1)
    throw Error("optimize: kernel " + k.name + ": vector lanes and work-groups together");
  // The output axes' loops become one Global range, unraveled row-major in `order`.
  Shape loops;
  int64_t global = 1;
  for (size_t i : order) global *= plan[i].loop, loops.push_back(plan[i].loop);
  std::vector<UOpPtr> ordered = unravel(make_range(global, 0, AxisKind::Global), loops),
                      loop_idx(ax.n_output);
  for (size_t j = 0; j < order.size(); j++) loop_idx[order[j]] = ordered[j];
  Substitute::Map map;
  Substitute::RangeLists lists;
  std::vector<Substitute::Padded> padded;
  for (size_t i = 0; i < plan.size(); i++) {
    UOpPtr expr;
    std::vector<UOpPtr> list;
    if (i < ax.n_output) {
      expr = loop_idx[i];
    } else {
      // A loop of 0 iterations stays (an empty reduction); a loop of 1 is its index 0.
      const int64_t id = ax.ranges[i]->as<RangeArg>().id;
      if (static_cast<int>(i) == group_axis && group_rest) {
        // A partial last trip: work-item p of the group reduces p, p + G, ... while below the axis's
        // size n, so its loop runs n / G times, once more when p < n % G (src[1], its own bound).
        const UOpPtr& piece = plan[i].pieces[0];
        const int64_t g = piece->src[0]->const_int(), n = ax.sizes[i];
        UOpPtr bound =
            alu(Ops::WHERE, kInt64, {idx_lt(piece, n % g), index_const(n / g + 1), index_const(n / g)});
        expr = make_uop(Ops::RANGE, kInt64, {index_const(plan[i].loop), bound}, RangeArg{id, AxisKind::Loop});
      } else {
        expr = plan[i].loop != 1 ? make_range(plan[i].loop, id, AxisKind::Loop) : index_const(0);
      }
      if (expr->op == Ops::RANGE) list.push_back(expr);
    }
    const bool pads = i < ax.n_output && padded_to[i];
    UOpPtr within = index_const(0);  // a padded axis's index within its tile: the pieces' part
    for (size_t p = plan[i].pieces.size(); p-- > 0;) {
      const UOpPtr& piece = plan[i].pieces[p];
      expr = idx_add(idx_mul(expr, piece->src[0]->const_int()), piece);
      if (pads) within = idx_add(idx_mul(within, piece->src[0]->const_int()), piece);
      list.push_back(piece);
    }
    if (pads) {  // Substitute::Padded says what each kind does
      const int64_t size = ax.sizes[i], tile = padded_to[i] / plan[i].loop;
      const bool vector = std::any_of(plan[i].pieces.begin(), plan[i].pieces.end(),
                                      [](const UOpPtr& r) { return kind_of(r) == AxisKind::Vector; });
      // The last tile starts at size - tile at the latest. Not in an in-place kernel (y += a @ b),
      // where it would read rows of y the tile before it stores, on another thread perhaps.
      if (!vector && size >= tile && !k.in_place) {
        UOpPtr start = idx_mul(loop_idx[i], tile);
        UOpPtr moved =
            alu(Ops::WHERE, kInt64, {idx_lt(start, size - tile + 1), start, index_const(size - tile)});
        expr = idx_add(moved, within);
        // Stored where not already stored by the tile before: within >= start - moved.
        UOpPtr back = idx_add(start, idx_mul(moved, -1));
        padded.push_back({ax.ranges[i].get(), size, Substitute::PadLoads::Real,
                          alu(Ops::CMPLT, kBool, {idx_add(back, index_const(-1)), within})});
      } else {
        padded.push_back({ax.ranges[i].get(), size,
                          vector ? Substitute::PadLoads::Gated : Substitute::PadLoads::Clamped,
                          idx_lt(expr, size)});
      }
    }
    map[ax.ranges[i].get()] = expr;
    if (i >= ax.n_output) lists[ax.ranges[i].get()] = list;
  }
  Substitute substitute_ranges(map, lists);
  substitute_ranges.padded = std::move(padded);
  UOpPtr sink = substitute_ranges(k.sink);
  // Upcast pieces: one copy of every store per value.
  std::vector<UOpPtr> upcasts;
  for (const auto& p : plan)
    for (const auto& r : p.pieces)
      if (kind_of(r) == AxisKind::Upcast) upcasts.push_back(r);
  if (!upcasts.empty()) {
    std::vector<UOpPtr> stores;
    Substitute::for_each_value(upcasts, [&](const Substitute::Map& m) {
      Substitute sub(m);
      for (const auto& s : sink->src) stores.push_back(sub(s));
    });
    sink = make_uop(Ops::SINK, kBool, std::move(stores));
  }
  Kernel out = k;
  out.sink = sink;
  out.global_size = global;
  // The work-group is the Local and Group pieces the code still indexes. A piece of an axis whose
  // range is another axis's too (one argmin read by two pieces of a cat is one reduction range,
  // listed as two axes) is gone when the other axis's split replaces it, and counting it would
  // launch groups of work-items that nothing tells apart (the compiler fuzzer's seeds 3256 and
  // 3718: WGSL's @workgroup_size said 5, the launch 4). work_groups (linearize.h) reads this;
  // linearize checks it against the ranges.
  int64_t used_local_size = 1;
  for (const auto& r : all_of(sink, Ops::RANGE))
    if (kind_of(r) == AxisKind::Local || kind_of(r) == AxisKind::Group)
      used_local_size = saturating_mul(used_local_size, r->src[0]->const_int());
  out.local_size = used_local_size;
  out.work_per_item = saturating_mul(k.global_size, k.work_per_item) / std::max<int64_t>(global, 1);
  out.opts = opts_str(opts);
  int vector_axis = -1;
  int64_t row_elements = 1;  // what the tile reads contiguously along the vector axis
  for (const Opt& o : opts)
    if (o.kind == AxisKind::Vector) vector_axis = o.axis;
  for (const Opt& o : opts)
    if (o.axis == vector_axis && (o.kind == AxisKind::Vector || o.kind == AxisKind::Upcast))
      row_elements *= o.amount;
  // A tile that reads a kilobyte or more of each row (row_stream's whole rows) is a stream the
  // hardware prefetchers follow, and gets no software prefetch.
  out.one_row_tile =
      ax.ranges.size() > ax.n_output &&
      row_elements * static_cast<int64_t>(itemsize(k.buffers[0]->dtype)) < 1024 &&
      std::none_of(opts.begin(), opts.end(), [&](const Opt& o) {
        return (o.kind == AxisKind::Upcast || o.kind == AxisKind::Loop) && o.axis != vector_axis;
      });
  return out;
}

namespace {

// The loads under u, not looking inside reductions.
std::vector<UOpPtr> loads_outside_reductions(const UOpPtr& u) {
  std::vector<UOpPtr> out;
  std::unordered_set<const UOp*> seen;
  std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& x) {
    if (!seen.insert(x.get()).second || x->op == Ops::REDUCE) return;
    if (x->op == Ops::LOAD) out.push_back(x);
    for (const auto& s : x->src) walk(s);
  };
  walk(u);
  return out;
}

// +2 for each access contiguous along range r, +1 for each read in halves or every second value
// (a load and a shuffle), -3 for each gathered, 0 for one that does not move.
int64_t vector_score(const std::vector<UOpPtr>& accesses, const UOp* r) {
  int64_t score = 0;
  for (const auto& m : accesses) {
    Access acc = access_along(m, r);
    score += acc == Access::Contiguous                       ? 2
             : acc == Access::Half || acc == Access::Strided ? 1
             : acc == Access::Gather                         ? -3
                                                             : 0;
  }
  return score;
}

// The widest of 16, 8 and 4 lanes, up to the machine's vector of 32-bit values, that divides the
// axis (4 fills half an AVX2 register, still better than one lane: a LeNet feature map is 12 or 24
// wide, a ResNet one 28).
int64_t vector_width(int64_t size, const Target& target) {
  for (int64_t w : {16, 8, 4})
    if (w * 4 <= std::max<int64_t>(target.vector_bytes, 16) && size >= w && size % w == 0) return w;
  return 0;
}

// A kernel with a reduction that some output axes do not depend on (a row's max or sum, fused into
// the kernel that reads it back along the row): those axes become loops inside the kernel, after the
// reduction; vector lanes go along the last of them and along each reduction's best axis.
std::vector<Opt> nested_opts(const Kernel& k, const KernelAxes& ax, const std::vector<size_t>& inner,
                             const Target& target) {
  std::vector<Opt> opts;
  std::vector<int64_t> left = ax.sizes;
  bool vectors = k.buffers[0]->dtype == kFloat32 || k.buffers[0]->dtype == kInt32;
  int64_t width = 0;
  size_t last = inner.back();
  std::vector<UOpPtr> nest = loads_outside_reductions(k.sink), stores = all_of(k.sink, Ops::STORE);
  nest.insert(nest.end(), stores.begin(), stores.end());
  if (vectors && vector_width(left[last], target) && vector_score(nest, ax.ranges[last].get()) > 0) {
    width = vector_width(left[last], target);
    opts.push_back({AxisKind::Vector, static_cast<int>(last), width});
    left[last] /= width;
  }
  for (size_t a : inner)
    if (left[a] > 1) opts.push_back({AxisKind::Loop, static_cast<int>(a), left[a]});
  size_t axis = ax.n_output;
  for (const auto& red : ax.reduces) {
    size_t n = red->src.size() - 1;
    bool along_output = width && depends_on(red, ax.ranges[last].get());
    std::vector<UOpPtr> body = all_of(red->src[0], Ops::LOAD);
    int best = -1;
    int64_t best_score = 0;
    for (size_t b = axis; b < axis + n && vectors && !along_output; b++) {
      int64_t w =
          width ? (left[b] % width == 0 && left[b] >= width ? width : 0) : vector_width(left[b], target);
      int64_t score = w ? vector_score(body, ax.ranges[b].get()) : 0;
      if (score > best_score) {
        best = static_cast<int>(b);
        best_score = score;
      }
    }
    if (best >= 0) {
      if (!width) width = vector_width(left[best], target);
      opts.push_back({AxisKind::Vector, best, width});
    }
    axis += n;
  }
  return opts;
}

}  // namespace

namespace {
// The output axes some reduction does not depend on (a row statistic the scheduler fused into its
// reader): they must be loops inside the kernel, or the reduction would run once per element.
std::vector<size_t> row_axes(const KernelAxes& ax) {
  std::vector<size_t> inner;
  for (size_t a = 0; a < ax.n_output; a++)
    if (std::any_of(ax.reduces.begin(), ax.reduces.end(),
                    [&](const UOpPtr& red) { return !depends_on(red, ax.ranges[a].get()); }))
      inner.push_back(a);
  return inner;
}
}  // namespace

std::vector<Opt> required_opts(const Kernel& k) {
  KernelAxes ax = kernel_axes(k);
  std::vector<Opt> opts;
  for (size_t a : row_axes(ax))  // an empty axis has no loop to make (the kernel never runs)
    if (ax.sizes[a] > 1) opts.push_back({AxisKind::Loop, static_cast<int>(a), ax.sizes[a]});
  return opts;
}

namespace {
// Lanes on the reduction (x @ W.T: both operands contiguous along k) and a register tile of rows:
// each output is a dot product of the tile's rows of A with one row of B. Walking down the rows
// for each column panel would read all of B once per row tile, from memory once B outgrows the L2
// (GPT-2's LM head: B is wte, [50257, 768], 154 MB, read 16 times: 40 GFLOP/s). Instead the
// columns go outermost and a block of them becomes a Loop inside the kernel: the row tile (staged
// into scratch, codegen/stage.h) stays in L1 for the whole block, and the block's rows of B stay in
// the L2 while every row tile passes over them. The block is a divisor of what is left of the
// columns after their tile (GPT-2's 50257, padded to 50260 for a tile of 4: 12565 = 5 * 7 * 359),
// the largest up to 64. Measured on 1 thread (CPU time), before the column tile: the head 24-25
// GFLOP/s before, 44-58 after (OpenBLAS 75-91); [256, 4096] @ [4096, 4096].T 21 -> 40.
void column_blocks(const KernelAxes& ax, int64_t reduce_size, const std::vector<int64_t>& upcast,
                   std::vector<int64_t>& left, std::vector<Opt>& opts, int64_t l2_bytes) {
  if (ax.n_output != 2) return;  // a batch axis too: left as it was
  const size_t cols = 1;         // out[i, j] = x[i] . W[j]: W's rows are the second output axis
  if (left[cols] < 2 ||
      left[cols] * upcast[cols] * reduce_size * static_cast<int64_t>(sizeof(float)) < l2_bytes)
    return;
  opts.push_back({AxisKind::Global, static_cast<int>(cols), 0});
  for (int64_t block = 64; block >= 4; block--)
    if (left[cols] % block == 0 && left[cols] / block >= 2) {
      opts.push_back({AxisKind::Loop, static_cast<int>(cols), block});
      left[cols] /= block;
      return;
    }
}

// Whether every index past a padded axis's end is harmless: nothing there can raise (an integer
// division by a loaded value, an index check), since those indices load 0.
bool paddable(const Kernel& k) {
  if (!all_of(k.sink, Ops::CHECK_INDEX).empty()) return false;
  for (Ops op : {Ops::IDIV, Ops::MOD})
    for (const auto& u : all_of(k.sink, op))
      if (!u->src[1]->is_const()) return false;
  return true;
}
}  // namespace

namespace {
// A Group that does not divide its axis leaves some work-items a trip fewer: its loop skips the
// trips past each one's bound. Inside a loop over output elements, whose body then holds the
// group's barriers, PoCL 3.1 cannot form its work-item loops around that branch and aborts the
// process (its ParallelRegion assertion `exit != NULL`; the compiler fuzzer's seed 95064 on CL,
// with sampled opts; every other form of the skip that was tried, a bound of each work-item's own
// or a `continue`, aborts there too or in seed 87). Such opts are refused on every target: the
// group then divides its axis, or the output is not a loop.
bool partial_group_in_output_loop(const Kernel& applied) {
  std::unordered_set<const UOp*> reduced;
  for (const auto& red : all_of(applied.sink, Ops::REDUCE))
    for (size_t i = 1; i < red->src.size(); i++) reduced.insert(red->src[i].get());
  bool partial = false, output_loop = false;
  for (const auto& r : all_of(applied.sink, Ops::RANGE)) {
    partial = partial || r->src.size() > 1;
    output_loop = output_loop || (kind_of(r) == AxisKind::Loop && !reduced.count(r.get()));
  }
  return partial && output_loop;
}
}  // namespace

std::string misfit(const Kernel& applied, const Target& target) {
  if (applied.tensor_core && !target.tensor_cores) return "it has no tensor cores";
  int64_t lanes = 1, grouped = 0;
  for (const auto& u : all_of(applied.sink, Ops::RANGE))
    if (kind_of(u) == AxisKind::Vector) lanes = u->src[0]->const_int();
  for (const auto& red : all_of(applied.sink, Ops::REDUCE))
    grouped += std::any_of(red->src.begin() + 1, red->src.end(),
                           [](const UOpPtr& r) { return kind_of(r) == AxisKind::Group; });
  if (lanes > 1 && target.vector_bytes == 0) return "it has no vector lanes";
  if (applied.local_size > 1 && (target.thread_slices || target.local_memory == 0))
    return "it has no work-groups";
  if (partial_group_in_output_loop(applied))
    return "a grouped reduction whose last trip is partial inside an output loop (its barriers in the loop)";
  const int64_t max_group = std::min(target.max_group_size, target.max_local[0]);
  if (applied.local_size > max_group)
    return std::to_string(applied.local_size) + " work-items per group, more than its " +
           std::to_string(max_group);
  // Each grouped reduction's partial results: one accumulator (at most 8 bytes) per work-item.
  const int64_t bytes = saturating_mul(saturating_mul(grouped, applied.local_size), 8);
  if (bytes > target.local_memory && grouped)
    return std::to_string(bytes) + " bytes of local memory, more than its " +
           std::to_string(target.local_memory);
  return "";
}

std::vector<Opt> fit_to_target(const Kernel& k, std::vector<Opt> opts, const Target& target) {
  if (target.vector_bytes == 0) std::erase_if(opts, [](const Opt& o) { return o.kind == AxisKind::Vector; });
  if (target.thread_slices || target.local_memory == 0)
    std::erase_if(opts, [](const Opt& o) { return o.kind == AxisKind::Local || o.kind == AxisKind::Group; });
  if (!target.tensor_cores) std::erase_if(opts, [](const Opt& o) { return o.kind == AxisKind::TensorCore; });
  try {
    if (misfit(apply_opts(k, opts), target).empty()) return opts;
  } catch (const Error&) {
  }
  return required_opts(k);
}

namespace {
// A product the tensor cores take, when it is large enough to fill a GPU's warps (2^21 multiply-
// adds: 128^3), with the largest warp tile that divides it (T = 4: 16 mma per K step of 16, each
// operand element loaded once per 4 uses); else none.
std::vector<Opt> tensor_core_opts(const Kernel& k) {
  auto m = match_tensor_core(k);
  if (!m || !required_opts(k).empty()) return {};
  const int64_t macs =
      saturating_mul(saturating_mul(m->size(m->m_axis), m->size(m->n_axis)), m->size(m->k_axis));
  if (macs < (int64_t(1) << 21)) return {};
  for (int64_t t : {4, 2, 1})
    if (tensor_core_fits(*m, t)) return {{AxisKind::TensorCore, 0, t}};
  return {};
}

// A device with work-groups: a kernel with one reduction whose operands lie contiguously along one
// of its axes (a row sum, x @ W.T) gets a grouped reduction of target.group_reduction work-items
// there, work-item p reducing elements p, p + G, ...: neighbouring work-items read neighbouring
// elements, and the group's partial sums are independent chains. Not a kernel with a row
// statistic's loop (softmax): on PoCL its barriers inside the loop made it 5x slower.
//
// Each work-item reduces 4 elements at least (a shorter axis is not worth the combine), except in
// a kernel of few outputs (a layer norm's mean of one row): there the group narrows, down to 32
// work-items, to fit the axis. Without a group such a kernel is one work-item per output whose
// loads wait one after another: on an H200, GPT-2's 768-wide layer-norm statistics took 200-700 us
// each, 10.5 of a decode step's 16.9 ms (scripts/gpu-check.sh, docs/devices.md).
constexpr int64_t kFewOutputs = 64;  // outputs of a kernel too few to fill a GPU on their own
std::vector<Opt> work_group_opts(const Kernel& k, const Target& target) {
  std::vector<Opt> opts = required_opts(k);
  const int64_t g = target.group_reduction;
  KernelAxes ax = kernel_axes(k);
  if (g < 2 || !ax.reduce || !opts.empty()) return opts;
  int64_t outputs = 1;
  for (size_t a = 0; a < ax.n_output; a++) outputs = saturating_mul(outputs, ax.sizes[a]);
  auto group_width = [&](int64_t size) {
    int64_t w = g;
    if (outputs <= kFewOutputs)
      while (w > 32 && size < 4 * w) w /= 2;
    return size >= 4 * w ? w : 0;
  };
  std::vector<UOpPtr> body = all_of(ax.reduce->src[0], Ops::LOAD);
  int best = -1;
  int64_t best_score = 0;
  for (size_t b = ax.n_output; b < ax.ranges.size(); b++) {
    const int64_t score = vector_score(body, ax.ranges[b].get());
    if (group_width(ax.sizes[b]) > 0 && score > best_score) {
      best = static_cast<int>(b);
      best_score = score;
    }
  }
  if (best < 0) return opts;
  opts.push_back({AxisKind::Group, best, group_width(ax.sizes[best])});
  try {
    if (misfit(apply_opts(k, opts), target).empty()) return opts;
  } catch (const Error&) {
  }
  opts.pop_back();
  return opts;
}
}  // namespace

namespace {
// The register tile of a reduction: how many copies (1, 2, 4 or 8) of the body each output axis
// gets, each copy its own accumulator, from the machine model (codegen/cpu_model.h). Per trip of the
// reduction the tile issues one FMA per accumulator and one load per distinct value it reads (a
// load shared by the copies along an axis it does not depend on is loaded once), so a trip costs
//   max(FMAs / FMA pipes, loads / load ports, FMA latency)
// cycles: the last because each accumulator's FMAs form one chain. The tile keeps the FMA pipes
// busiest (FMAs per cycle over the pipes), then reads fewest bytes per FMA (a vector load reads a
// whole vector, a broadcast one element: the traffic from the L1 and, for a staged panel larger
// than the L1, from the L2, which is what bounds a tile whose FMAs are covered), then uses fewest
// registers, within the registers there are: one per accumulator, one per
// vector loaded (kept for the whole tile) and one for a broadcast value. A load with a validity (a
// padded window) counts twice: it checks, and goes lane by lane at the edges.
// Only axes that some load is broadcast along (the tile shares it) and some load depends on.
std::vector<int64_t> register_tile(const KernelAxes& ax, const std::vector<UOpPtr>& loads,
                                   const std::vector<UOpPtr>& reduced_loads, int vector_axis,
                                   const std::vector<int64_t>& left, const CpuModel& cpu) {
  const size_t n = ax.n_output;
  std::vector<int64_t> best(n, 1);
  struct LoadUse {
    std::vector<bool> depends;
    int64_t weight;
    bool vector;
    int64_t bytes;  // what one copy reads
  };
  std::vector<LoadUse> uses;
  std::vector<bool> tileable(n, false);
  for (size_t a = 0; a < n; a++) {
    bool shared = false, varies = false;
    for (const auto& m : loads) {
      const bool broadcast = access_along(m, ax.ranges[a].get()) == Access::Broadcast;
      shared |= broadcast;
      varies |= !broadcast;
    }
    tileable[a] = shared && varies;
  }
  for (const auto& m : reduced_loads) {  // an epilogue's loads run once per tile, not per trip
    const bool vector =
        vector_axis >= 0 && access_along(m, ax.ranges[vector_axis].get()) != Access::Broadcast;
    const auto element = static_cast<int64_t>(itemsize(m->dtype));
    LoadUse u{std::vector<bool>(n), m->src.size() == 3 ? 2 : 1, vector,
              vector ? std::max(cpu.vector_bytes, element) : element};
    for (size_t a = 0; a < n; a++) u.depends[a] = access_along(m, ax.ranges[a].get()) != Access::Broadcast;
    uses.push_back(std::move(u));
  }
  double best_busy = -1, best_intensity = 0;
  int64_t best_registers = 0;
  std::vector<int64_t> amounts(n, 1);
  std::function<void(size_t)> search = [&](size_t a) {
    if (a == n) {
      int64_t fmas = 1, loaded = 0, bytes = 0, registers = 1;
      for (int64_t x : amounts) fmas *= x;
      for (const auto& u : uses) {
        int64_t copies = 1;
        for (size_t b = 0; b < n; b++)
          if (u.depends[b]) copies *= amounts[b];
        loaded += u.weight * copies;
        bytes += u.bytes * copies;
        if (u.vector) registers += copies;
      }
      registers += fmas;
      if (fmas > 64 || registers > cpu.vector_registers) return;
      const double cycles =
          std::max({static_cast<double>(fmas) / cpu.fmas_per_cycle,
                    static_cast<double>(loaded) / cpu.loads_per_cycle, static_cast<double>(cpu.fma_latency)});
      const double busy = static_cast<double>(fmas) / cycles / cpu.fmas_per_cycle;
      const double intensity = static_cast<double>(fmas) / std::max<int64_t>(bytes, 1);
      const bool better =
          busy > best_busy + 1e-9 ||
          (busy > best_busy - 1e-9 && (intensity > best_intensity + 1e-9 ||
                                       (intensity > best_intensity - 1e-9 && registers < best_registers)));
      if (better) {
        best = amounts;
        best_busy = busy;
        best_intensity = intensity;
        best_registers = registers;
      }
      return;
    }
    for (int64_t u : {1, 2, 4, 8}) {
      if (u > 1 && (!tileable[a] || left[a] % u != 0)) break;
      amounts[a] = u;
      search(a + 1);
    }
    amounts[a] = 1;
  };
  search(0);
  return best;
}
}  // namespace

namespace {
// A sum that reads a large matrix W [K, N] once, down its rows, into at most kRowStreamMaxOutputs
// outputs per global index: the partial sums of a matrix-vector product x @ W whose reduction the
// scheduler split (engine/schedule.cpp; both stages judge by streams_rows, codegen/row_stream.h).
// The whole row of outputs becomes the tile, one accumulator per vector (GCC keeps what the
// registers cannot hold in L1), so each trip of the reduction reads a whole row of W and each thread
// one contiguous stream. Column tiles read 512 contiguous bytes of each row instead, rows 4N bytes
// apart, where the hardware prefetchers do not follow: 16-18 GB/s against 27-29 for whole rows
// (bench_matvec_orders, 2 threads on the Xeon). Only where no other output axis reuses W (then the
// register tile's reuse counts for more) and the global range is left at least 2 indices to share
// among threads.
bool row_stream(const Kernel& k, const KernelAxes& ax, const std::vector<UOpPtr>& loads, int vector_axis,
                int64_t width) {
  if (ax.sizes[vector_axis] % width != 0) return false;
  int64_t others = 1;
  for (size_t a = 0; a < ax.n_output; a++)
    if (static_cast<int>(a) != vector_axis) others *= ax.sizes[a];
  if (others < 2) return false;
  for (const auto& m : loads) {
    const Buffer& b = *k.buffers.at(static_cast<size_t>(m->src[0]->as<int64_t>()));
    MatrixRead read{
        .outputs = ax.sizes[vector_axis],
        .bytes = static_cast<int64_t>(b.nbytes()),
        .contiguous_along_output = access_along(m, ax.ranges[vector_axis].get()) == Access::Contiguous};
    for (size_t a = 0; a < ax.ranges.size(); a++) {
      if (ax.sizes[a] <= 1) continue;
      const Access along = access_along(m, ax.ranges[a].get());
      if (a < ax.n_output) read.broadcast_along_output |= along == Access::Broadcast;
      if (a >= ax.n_output) read.steps_along_sum |= along != Access::Broadcast && along != Access::Contiguous;
    }
    if (streams_rows(read)) return true;
  }
  return false;
}
}  // namespace

std::vector<Opt> default_opts(const Kernel& k, const Target& target) {
  if (target.tensor_cores)
    if (auto opts = tensor_core_opts(k); !opts.empty()) return opts;
  if (!target.thread_slices) return work_group_opts(k, target);
  if (target.vector_bytes == 0) return required_opts(k);
  KernelAxes ax = kernel_axes(k);
  std::vector<size_t> inner = row_axes(ax);
  if (!inner.empty()) return nested_opts(k, ax, inner, target);
  std::vector<UOpPtr> loads = all_of(k.sink, Ops::LOAD), stores = all_of(k.sink, Ops::STORE);
  std::vector<Opt> opts;
  DType out_dtype = k.buffers[0]->dtype;
  if (out_dtype != kFloat32 && out_dtype != kInt32) return opts;
  // Vector lanes: the axis where contiguous loads and stores outweigh gathers.
  int best = -1;
  int64_t best_width = 0, best_score = 0;
  for (size_t a = 0; a < ax.ranges.size(); a++) {
    int64_t width = vector_width(ax.sizes[a], target);
    if (!width || (a >= ax.n_output && ax.reduce && ax.reduce->as<ReduceArg>().op == Ops::MUL)) continue;
    // A reduction's store runs once per many loads: it does not count.
    int64_t score =
        vector_score(loads, ax.ranges[a].get()) + (ax.reduce ? 0 : vector_score(stores, ax.ranges[a].get()));
    if (score > best_score ||
        (score == best_score && best >= 0 && static_cast<size_t>(best) >= ax.n_output)) {
      best = static_cast<int>(a);
      best_score = score;
      best_width = width;
    }
  }
  std::vector<int64_t> left = ax.sizes;
  // A reduction whose lanes would fill less of the machine's vector than the axis padded to whole
  // vectors does (a LeNet feature map's 12 or 24 columns on 16 lanes: 4 or 8 lanes, against 12 of
  // 16): the axis is padded, and its last lanes load under a mask (one AVX-512 masked load,
  // renderer/c_style.cpp) and store nothing.
  const int64_t full = std::max<int64_t>(target.vector_bytes / 4, 4);
  if (ax.reduce && best >= 0 && static_cast<size_t>(best) < ax.n_output && best_width < full &&
      ax.sizes[best] % full != 0 && paddable(k)) {
    const int64_t padded = (ax.sizes[best] + full - 1) / full * full;
    if (10 * ax.sizes[best] * full > 12 * padded * best_width) {  // 1.2 times the useful lanes
      opts.push_back({AxisKind::Pad, best, full});
      left[best] = padded;
      best_width = full;
    }
  }
  if (best >= 0) {
    opts.push_back({AxisKind::Vector, best, best_width});
    left[best] /= best_width;
  }
  // A reduction that streams whole rows: the row of outputs is the tile (row_stream below).
  if (ax.reduce && best >= 0 && static_cast<size_t>(best) < ax.n_output &&
      row_stream(k, ax, loads, best, best_width)) {
    if (left[best] > 1) opts.push_back({AxisKind::Upcast, best, left[best]});
    // Four rows a trip, their products summed before the accumulator: a quarter of the partial
    // sums' loads and stores where they outnumber the registers (GCC keeps them in L1).
    const int down = static_cast<int>(ax.ranges.size()) - 1;
    for (int64_t rows : {4, 2})
      if (ax.sizes[down] % rows == 0) {
        opts.push_back({AxisKind::Unroll, down, rows});
        break;
      }
    return opts;
  }
  // A register tile for reductions, from the machine model (register_tile below).
  if (ax.reduce) {
    // An output axis that no tile divides (GPT-2's 50257 vocabulary rows) is padded to a multiple
    // of 4 where the tile then uses it (tinygrad's PADTO; at least 64 long: at most 5% padding).
    std::vector<int64_t> unpadded = left;
    const bool pad = paddable(k);
    for (size_t a = 0; a < ax.n_output; a++)
      if (pad && static_cast<int>(a) != best && left[a] >= 64 && left[a] % 4 != 0)
        left[a] = (left[a] + 3) / 4 * 4;
    std::vector<int64_t> upcast =
        register_tile(ax, loads, all_of(ax.reduce->src[0], Ops::LOAD), best, left, target.cpu);
    for (size_t a = 0; a < ax.n_output; a++) {
      if (left[a] == unpadded[a]) continue;
      if (upcast[a] > 1)
        opts.push_back({AxisKind::Pad, static_cast<int>(a), 4});
      else
        left[a] = unpadded[a];
    }
    for (size_t a = 0; a < ax.n_output; a++)
      for (int64_t u = upcast[a]; u > 1; u /= u % 4 == 0 ? 4 : 2) {  // as U a:4 then U a:2 pieces
        const int64_t piece = u % 4 == 0 ? 4 : 2;
        opts.push_back({AxisKind::Upcast, static_cast<int>(a), piece});
        left[a] /= piece;
      }
    // A matrix product whose B (the operand that varies along the columns and the reduction)
    // outgrows half the L2: the column tiles outermost in the global loop, so that each thread
    // keeps one panel of B while it walks down the rows, staged into scratch (codegen/stage.h) where
    // the rows read it contiguously. Otherwise every row tile streams all of B from the L3 or memory
    // (at N = 2048: 120 GFLOP/s instead of 39 on Zen 4; N = 1024 on a Xeon with a 1 MiB L2 ran at
    // 0.31 of OpenBLAS without it).
    int64_t reduce_size = 1;
    for (size_t b = ax.n_output; b < ax.ranges.size(); b++) reduce_size *= ax.sizes[b];
    const int64_t b_bytes = best >= 0 ? saturating_mul(saturating_mul(reduce_size, ax.sizes[best]), 4) : 0;
    // Only with rows to walk down: a matrix-vector product's one output axis is both the columns
    // and the tile, and keeps its global loop for the threads.
    bool rows = false;
    for (size_t a = 0; a < ax.n_output; a++) rows |= static_cast<int>(a) != best && upcast[a] > 1;
    if (best >= static_cast<int>(ax.n_output) && rows)
      column_blocks(ax, reduce_size, upcast, left, opts, target.cpu.l2_bytes);
    if (best >= 0 && static_cast<size_t>(best) < ax.n_output && 2 * b_bytes > target.cpu.l2_bytes && rows) {
      opts.push_back({AxisKind::Global, best, 0});
      // The row tiles' rest as a loop inside the kernel: each global index is one column panel,
      // which the linearizer stages (codegen/stage.h) into scratch once for all its row tiles.
      for (size_t a = 0; a < ax.n_output; a++)
        if (static_cast<int>(a) != best && upcast[a] > 1 && left[a] > 1)
          opts.push_back({AxisKind::Loop, static_cast<int>(a), left[a]});
    }
  }
  return opts;
}

}  // namespace lazygrad
