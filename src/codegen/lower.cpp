// Lowering: a tensor-level subgraph becomes a loop body. Every node is evaluated at a
// multi-dimensional index; movement ops only transform that index (through a ShapeTracker), a
// reduction opens loops of its own, and realized nodes are loads from their buffers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <unordered_set>

#include "codegen/kernel.h"
#include "codegen/optimize.h"
#include "ir/rewrite.h"
#include "ir/walk.h"
#include "lazygrad/error.h"
#include "runtime/buffer.h"
#include "shape/size.h"
#include "shape/view.h"

namespace lazygrad {

namespace {

// v made safe to evaluate where `valid` is false (its value there is thrown away, but a fused kernel
// still computes it): a load whose index varies with the guarded position (depends on one of
// `atoms`) is gated by `valid`, so it reads nothing outside its buffer, and a divisor or a checked
// index that may differ there becomes a harmless one, so no error bit is set for a position that
// does not exist.
class GuardOutside {
 public:
  GuardOutside(std::unordered_set<const UOp*> atoms, UOpPtr valid)
      : atoms_(std::move(atoms)), valid_(std::move(valid)) {}

  UOpPtr operator()(const UOpPtr& v) { return guard(v).first; }

 private:
  // v guarded, and whether v's value may differ where valid is false.
  std::pair<UOpPtr, bool> guard(const UOpPtr& v) {
    if (auto it = memo_.find(v.get()); it != memo_.end()) return it->second;
    std::vector<UOpPtr> src;
    std::vector<bool> differs;
    for (const auto& s : v->src) {
      auto [g, d] = guard(s);
      src.push_back(g);
      differs.push_back(d);
    }
    const bool varies =
        atoms_.count(v.get()) || std::find(differs.begin(), differs.end(), true) != differs.end();
    if (v->op == Ops::LOAD && differs[1]) {
      src.resize(3);
      src[2] = bool_and(src[2], valid_);
    } else if ((v->op == Ops::IDIV || v->op == Ops::MOD) && differs[1]) {
      src[1] = or_where_invalid(src[1], 1);
    } else if (v->op == Ops::CHECK_INDEX && differs[0]) {
      IndexCheck c = IndexCheck::from(v->as<std::vector<int64_t>>());
      if (c.lo < c.hi)
        src[0] = or_where_invalid(src[0], c.lo);
      else if (c.exempt)
        src[0] = or_where_invalid(src[0], *c.exempt);
    }
    UOpPtr out = src == v->src ? v : make_uop(v->op, v->dtype, src, v->arg);
    return memo_[v.get()] = {out, varies};
  }
  UOpPtr or_where_invalid(const UOpPtr& x, int64_t fallback) {
    return alu(Ops::WHERE, x->dtype, {valid_, x, const_int_uop(x->dtype, fallback)});
  }

  std::unordered_set<const UOp*> atoms_;
  UOpPtr valid_;
  std::unordered_map<const UOp*, std::pair<UOpPtr, bool>> memo_;
};

// The sum over one range r of where(e == r, v, 0), where e does not depend on r, is v at r = e
// (0 where e lies outside [0, n)): the one-hot masks that gather, index and Embedding are made of
// (tensor/indexing.cpp) become one load instead of a loop over the whole table. tinygrad folds the
// same pattern. eq(a, b) is CMPNE(CMPNE(a, b), true).
const PatternMatcher& one_hot_sum() {
  static const PatternMatcher pm(
      {{op(Ops::REDUCE,
           {op(Ops::WHERE,
               {op(Ops::CMPNE, {commute(op(Ops::CMPNE, {any("e"), op(Ops::RANGE, {}, "r")})), cnst("t")}),
                any("v"), cnst("zero")}),
            any("range")}),
        [](const Binds& b, const UOpPtr& sum) -> UOpPtr {
          const UOpPtr &r = b["r"], &zero = b["zero"];
          if (sum->as<ReduceArg>().op != Ops::ADD || r != b["range"] || !b["t"]->is_const(1) ||
              !zero->is_const(0) || depends_on(b["e"], r.get()))
            return nullptr;
          UOpPtr e = b["e"]->dtype == kInt64 ? b["e"] : alu(Ops::CAST, kInt64, {b["e"]});
          UOpPtr valid = bool_and(idx_ge(e, 0), idx_lt(e, r->src[0]->const_int()));
          UOpPtr v = GuardOutside({e.get()}, valid)(substitute(b["v"], {{r.get(), e}}));
          return alu(Ops::WHERE, sum->dtype, {valid, v, zero});
        }}});
  return pm;
}

// What a reduction of no elements is: 0 for a sum, 1 for a product, the lowest value for a max.
UOpPtr reduce_identity(Ops op, DType dt) {
  if (op == Ops::ADD) return const_int_uop(dt, 0);
  if (op == Ops::MUL) return const_int_uop(dt, 1);
  if (is_float(dt)) return const_uop(dt, -std::numeric_limits<double>::infinity());
  if (dt == kBool || is_unsigned(dt)) return const_int_uop(dt, 0);
  return const_int_uop(dt, bit_width(dt) == 64 ? INT64_MIN : -(int64_t(1) << (bit_width(dt) - 1)));
}

class Lowerer {
 public:
  Lowerer(const RealizedMap& realized, const UOp* root) : realized_(realized), root_(root) {}

  // Parameter index of a buffer (one parameter per distinct buffer, so restrict holds).
  UOpPtr param(const std::shared_ptr<Buffer>& b, bool write) {
    for (size_t i = 0; i < buffers_.size(); i++)
      if (buffers_[i] == b) {
        written_[i] = written_[i] || write;
        return make_uop(Ops::DEFINE_GLOBAL, b->dtype, {}, int64_t(i));
      }
    buffers_.push_back(b);
    written_.push_back(write);
    return make_uop(Ops::DEFINE_GLOBAL, b->dtype, {}, int64_t(buffers_.size() - 1));
  }

  UOpPtr new_range(int64_t size) {
    return make_uop(Ops::RANGE, kInt64, {index_const(size)}, RangeArg{next_range_++, AxisKind::Loop});
  }

  const std::shared_ptr<Buffer>* buffer_of(const UOpPtr& u) {
    if (u->op == Ops::BUFFER) return &u->as<std::shared_ptr<Buffer>>();
    if (u.get() == root_) return nullptr;
    auto it = realized_.find(u.get());
    if (it == realized_.end()) return nullptr;
    reads_.push_back(u.get());
    return &it->second;
  }

  // The value of node u at index idx (one index expression per axis of u's shape).
  UOpPtr lower(const UOpPtr& u, const std::vector<UOpPtr>& idx) {
    auto key = std::make_pair(u.get(), idx);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    UOpPtr out = lower_uncached(u, idx);
    memo_[key] = out;
    return out;
  }

  UOpPtr load(const std::shared_ptr<Buffer>& b, const UOpPtr& flat, const UOpPtr& valid) {
    std::vector<UOpPtr> src{param(b, false), flat};
    if (valid) src.push_back(valid);
    return make_uop(Ops::LOAD, b->dtype, src);
  }

  UOpPtr lower_uncached(const UOpPtr& u, const std::vector<UOpPtr>& idx) {
    if (auto* b = buffer_of(u)) return load(*b, ravel(idx, u->shape), nullptr);
    if (is_movement(u->op)) {
      // Fold the chain of movement ops down to its base into one ShapeTracker.
      std::vector<const UOp*> chain;
      const UOp* base = u.get();
      while (is_movement(base->op) && !(base != root_ && realized_.count(base))) {
        chain.push_back(base);
        base = base->src[0].get();
      }
      ShapeTracker st = ShapeTracker::contiguous(base->shape);
      for (size_t i = chain.size(); i-- > 0;)
        st = st.apply(chain[i]->op, chain[i]->as<std::vector<int64_t>>());
      auto [flat, valid] = st.to_index(idx);
      UOpPtr base_ptr = chain.back()->src[0];
      if (auto* b = buffer_of(base_ptr)) return load(*b, flat, valid);
      if (!valid) return lower(base_ptr, unravel(flat, base->shape));
      // A pad of a computed value: where(valid, v, 0), v computed at the unpadded index, which lies
      // outside v where valid is false. An empty v is never read (valid is false everywhere).
      if (std::find(base->shape.begin(), base->shape.end(), 0) != base->shape.end())
        return const_uop(u->dtype, 0);
      std::unordered_set<const UOp*> atoms;  // what the index is made of that varies
      for (const UOp* a : toposort(flat.get()))
        if (a->op == Ops::RANGE || a->op == Ops::DEFINE_VAR) atoms.insert(a);
      UOpPtr v = GuardOutside(std::move(atoms), valid)(lower(base_ptr, unravel(flat, base->shape)));
      return alu(Ops::WHERE, u->dtype, {valid, v, const_uop(u->dtype, 0)});
    }
    switch (u->op) {
      case Ops::CONST:
        return u;
      case Ops::VAR: {  // each distinct VAR is one scalar argument of the kernel
        auto it = std::find(vars_.begin(), vars_.end(), u.get());
        int64_t k = it - vars_.begin();
        if (it == vars_.end()) vars_.push_back(u.get());
        return make_uop(Ops::DEFINE_VAR, u->dtype, {}, k);
      }
      case Ops::SHRINK_AT: {  // the source read at the index shifted by the start along one axis
        const auto& a = u->as<std::vector<int64_t>>();
        std::vector<UOpPtr> src_idx = idx;
        src_idx[a[0]] = alu(Ops::ADD, idx[a[0]], start(u->src[1], 0, u->src[0]->shape[a[0]] - a[1]));
        return lower(u->src[0], src_idx);
      }
      case Ops::CHECK_INDEX: {  // the same index, and an error bit of its own (sites past the last share it)
        auto [site, fresh] = check_sites_.try_emplace(u.get(), check_sites_.size());
        size_t slot = std::min(site->second, kIndexErrorSlots - 1);
        IndexCheck check = IndexCheck::from(u->as<std::vector<int64_t>>());
        if (fresh) {
          if (slot == index_errors_.size()) index_errors_.emplace_back();
          index_errors_[slot] += (index_errors_[slot].empty() ? "" : ", or ") + check.message();
        }
        check.error_bit = 1 << (kFirstIndexErrorBit + slot);
        return make_uop(Ops::CHECK_INDEX, u->dtype, {lower(u->src[0], idx)}, check.arg());
      }
      case Ops::IOTA:
        return idx[0]->dtype == u->dtype ? idx[0] : alu(Ops::CAST, u->dtype, {idx[0]});
      case Ops::CONTIGUOUS:
      case Ops::DETACH:
        return lower(u->src[0], idx);
      case Ops::REDUCE_AXIS: {
        // Each call here is a new index for u (lower() memoizes equal ones): a second one means u
        // would be computed twice.
        if (++lowered_at_[u.get()] == 2) recomputed_.push_back(u);
        const auto& r = u->as<ReduceArg>();
        // Over an empty axis: the identity, with nothing read (a load hoisted out of a loop of no
        // trips would read past an empty buffer, and an index check would judge what it read).
        for (int64_t a : r.axes)
          if (u->src[0]->shape[a] == 0) return reduce_identity(r.op, u->dtype);
        std::vector<UOpPtr> src_idx = idx, ranges;
        int64_t trips = 1;
        for (int64_t a : r.axes) {
          src_idx[a] = new_range(u->src[0]->shape[a]);
          ranges.push_back(src_idx[a]);
          trips = saturating_mul(trips, u->src[0]->shape[a]);
        }
        // The work per output item: a reduction inside another runs its trips for each of the outer
        // one's, so nested ones multiply; reductions side by side add.
        const int64_t outer_trips = enclosing_trips_;
        enclosing_trips_ = saturating_mul(outer_trips, trips);
        const int64_t work = enclosing_trips_;
        reduce_work_ = saturating_add(reduce_work_, work);
        std::vector<UOpPtr> src{lower(u->src[0], src_idx)};
        enclosing_trips_ = outer_trips;
        src.insert(src.end(), ranges.begin(), ranges.end());
        UOpPtr sum = make_uop(Ops::REDUCE, u->dtype, src, ReduceArg{r.op, {}});
        if (UOpPtr folded = one_hot_sum().rewrite_once(sum)) {
          reduce_work_ = std::max<int64_t>(reduce_work_ - work, 0);  // one guarded load, no loop
          return folded;
        }
        return sum;
      }
      default:
        break;
    }
    if (!is_alu(u->op)) throw Error("lower: cannot lower " + std::string(op_name(u->op)));
    std::vector<UOpPtr> src;
    for (const auto& s : u->src) src.push_back(lower(s, idx));
    return alu(u->op, u->dtype, src);
  }

  // A narrow's start (a CONST, or an integer VAR that must lie in [lo, hi] at launch) as an int64
  // index term.
  UOpPtr start(const UOpPtr& s, int64_t lo, int64_t hi) {
    UOpPtr v = lower(s, {});
    if (v->op == Ops::DEFINE_VAR) bounds_.push_back({static_cast<size_t>(v->as<int64_t>()), lo, hi});
    return v->dtype == kInt64 ? v : alu(Ops::CAST, kInt64, {v});
  }

  std::vector<std::shared_ptr<Buffer>> buffers_;
  std::vector<bool> written_;
  std::vector<VarBound> bounds_;
  std::vector<const UOp*> reads_;
  std::vector<const UOp*> vars_;
  std::vector<UOpPtr> recomputed_;
  std::vector<std::string> index_errors_;
  int64_t reduce_work_ = 0;  // loop trips per output item over every reduction (an estimate)

 private:
  const RealizedMap& realized_;
  const UOp* root_;
  std::map<std::pair<const UOp*, std::vector<UOpPtr>>, UOpPtr> memo_;
  std::unordered_map<const UOp*, int> lowered_at_;      // REDUCE_AXIS -> how many indices it was lowered at
  std::unordered_map<const UOp*, size_t> check_sites_;  // tensor-level CHECK_INDEX -> its order
  int next_range_ = 0;
  int64_t enclosing_trips_ = 1;  // the trips of the reductions being lowered, multiplied
};

// Kernel names are C identifiers and part of the cache's file names: at most kMaxNameBytes, the rest
// folded into a hash (a kernel with a hundred reductions would otherwise outgrow the file system's
// 255-byte names).
constexpr size_t kMaxNameBytes = 64;

std::string kernel_name(const UOpPtr& root, const Shape& out_shape) {
  // tinygrad's convention: E_ for elementwise, r_ for a reduction; then the loop sizes (of the
  // reductions not inside another, in the order a depth-first walk meets them; each node once).
  std::vector<int64_t> reduce_sizes;
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> stack{root.get()};
  int64_t visits = 0;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    visits++;
    if (u->op == Ops::REDUCE) {
      for (size_t i = 1; i < u->src.size(); i++) reduce_sizes.push_back(u->src[i]->src[0]->const_int());
      continue;
    }
    for (size_t i = u->src.size(); i-- > 0;) stack.push_back(u->src[i].get());
  }
  count_walk(visits, static_cast<int64_t>(seen.size()));
  std::string name = reduce_sizes.empty() ? "E" : "r";
  bool any = false;
  for (int64_t s : out_shape)
    if (s != 1) {
      name += "_" + std::to_string(s);
      any = true;
    }
  if (!any && reduce_sizes.empty()) name += "_1";
  for (int64_t s : reduce_sizes) name += "_" + std::to_string(s);
  if (name.size() <= kMaxNameBytes) return name;
  char hash[24];
  std::snprintf(hash, sizeof hash, "_h%016llx",
                static_cast<unsigned long long>(std::hash<std::string>{}(name)));
  return name.substr(0, kMaxNameBytes - std::strlen(hash)) + hash;
}

}  // namespace

Kernel lower_kernel(const UOpPtr& root, const std::shared_ptr<Buffer>& out, const UOpPtr& out_view,
                    const RealizedMap& realized) {
  Lowerer L(realized, root.get());
  // A narrow_assign (ASSIGN with a start) loops over its value's region only.
  const bool region = root->op == Ops::ASSIGN && root->src.size() == 3;
  const Shape& shape = region ? root->src[1]->shape : root->shape;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  // One Output range per axis; the optimizer decides how they become loops (optimize.cpp).
  std::vector<UOpPtr> idx;
  for (size_t i = 0; i < shape.size(); i++)
    idx.push_back(shape[i] == 1 ? index_const(0)
                                : make_uop(Ops::RANGE, kInt64, {index_const(shape[i])},
                                           RangeArg{static_cast<int64_t>(i), AxisKind::Output}));
  UOpPtr out_param = L.param(out, true);
  UOpPtr value = L.lower(root->op == Ops::ASSIGN ? root->src[1] : root, idx);
  UOpPtr flat = ravel(idx, shape);
  if (out_view) {
    // ASSIGN: store through the target's view of its buffer (an injective view: no pad, no expand).
    std::vector<const UOp*> chain;
    const UOp* base = out_view.get();
    while (is_movement(base->op)) {
      chain.push_back(base);
      base = base->src[0].get();
    }
    ShapeTracker st = ShapeTracker::contiguous(base->shape);
    for (size_t i = chain.size(); i-- > 0;) st = st.apply(chain[i]->op, chain[i]->as<std::vector<int64_t>>());
    std::vector<UOpPtr> at = idx;
    if (region) {
      const int64_t axis = root->as<int64_t>();
      at[axis] = alu(Ops::ADD, idx[axis], L.start(root->src[2], 0, root->shape[axis] - shape[axis]));
    }
    auto [f, valid] = st.to_index(at);
    if (valid) throw Error("assign: cannot write through a padded view");
    flat = f;
  } else if (region) {
    throw Error("narrow_assign: the write must go into the tensor's own buffer");
  }
  if (value->dtype != out->dtype) value = alu(Ops::CAST, out->dtype, {value});
  UOpPtr store = make_uop(Ops::STORE, out->dtype, {out_param, flat, value});
  Kernel k;
  k.sink = make_uop(Ops::SINK, kBool, {store});
  k.name = kernel_name(k.sink, shape);
  k.out_shape = shape;
  k.global_size = n;
  k.work_per_item = std::max<int64_t>(L.reduce_work_, 1);
  k.in_place = root->op == Ops::ASSIGN;
  k.buffers = L.buffers_;
  k.written = L.written_;
  k.reads = L.reads_;
  for (const UOp* v : L.vars_) k.vars.push_back(v->as<std::shared_ptr<VariableState>>());
  k.var_bounds = L.bounds_;
  k.recomputed = L.recomputed_;
  k.index_errors = L.index_errors_;
  return k;
}

bool fills_fresh_output_with_zeros(const Kernel& k) {
  if (k.copy || k.in_place || k.buffers.size() != 1 || !k.sink || k.sink->src.size() != 1) return false;
  const UOpPtr& store = k.sink->src[0];
  if (store->op != Ops::STORE || store->src.size() != 3 || !store->src[2]->is_const()) return false;
  int64_t n = 1;  // it stores every element: one per index of its output axes
  for (int64_t d : k.out_shape) n *= d;
  if (n != k.buffers[0]->size) return false;
  const UOp& value = *store->src[2];
  // Zero bits: -0.0 is not zeros.
  return is_float(value.dtype) ? value.const_double() == 0 && !std::signbit(value.const_double())
                               : value.const_int() == 0;
}

bool reads_output_elsewhere(const Kernel& k) {
  const UOpPtr& store = k.sink->src[0];
  const UOpPtr &out = store->src[0], &index = store->src[1];
  std::unordered_set<const UOp*> seen;
  std::function<bool(const UOpPtr&)> other_read = [&](const UOpPtr& u) {
    if (!seen.insert(u.get()).second) return false;
    if (u->op == Ops::LOAD && u->src[0] == out && (u->src[1] != index || u->src.size() > 2)) return true;
    for (const auto& s : u->src)
      if (other_read(s)) return true;
    return false;
  };
  return other_read(store->src[2]);
}

}  // namespace lazygrad
