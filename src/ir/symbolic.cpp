// Symbolic simplification of kernel-level integer math (indexes and validity), applied as nodes
// are built: constant folding, x+0, x*1, and div/mod over known value ranges, so that the index
// expressions of merged views come out as simple as the loops allow.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_set>

#include "ir/rewrite.h"
#include "ir/uop.h"
#include "ir/walk.h"

namespace lazygrad {

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();

std::pair<int64_t, int64_t> dtype_range(DType dt) {
  if (dt == kBool) return {0, 1};
  if (is_float(dt) || dt == kUInt64 || dt == kInt64) return {kMin, kMax};
  int bits = bit_width(dt);
  if (is_unsigned(dt)) return {0, (int64_t(1) << bits) - 1};
  return {-(int64_t(1) << (bits - 1)), (int64_t(1) << (bits - 1)) - 1};
}

int64_t sat(__int128 v) { return v < kMin ? kMin : v > kMax ? kMax : static_cast<int64_t>(v); }

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

bool is_index(const UOpPtr& u) { return is_int(u->dtype) || u->dtype == kBool; }

// Constant folding of integer and bool ALU ops, with the dtype's wraparound.
UOpPtr fold(const UOpPtr& u) {
  if (!is_alu(u->op) || u->src.empty() || !is_index(u)) return nullptr;
  for (const auto& s : u->src)
    if (!s->is_const() || !is_index(s)) return nullptr;
  auto v = [&](size_t i) { return u->src[i]->const_int(); };
  int64_t r;
  switch (u->op) {
    case Ops::ADD:
      r = static_cast<int64_t>(static_cast<uint64_t>(v(0)) + static_cast<uint64_t>(v(1)));
      break;
    case Ops::MUL:
      r = static_cast<int64_t>(static_cast<uint64_t>(v(0)) * static_cast<uint64_t>(v(1)));
      break;
    case Ops::MAX:
      r = std::max(v(0), v(1));
      break;
    case Ops::CMPLT:
      r = v(0) < v(1);
      break;
    case Ops::CMPNE:
      r = v(0) != v(1);
      break;
    case Ops::AND:
      r = v(0) & v(1);
      break;
    case Ops::OR:
      r = v(0) | v(1);
      break;
    case Ops::XOR:
      r = v(0) ^ v(1);
      break;
    case Ops::IDIV:
      if (v(1) == 0 || u->src[0]->dtype == kUInt64) return nullptr;  // left for the kernel to report
      r = floordiv(v(0), v(1));
      break;
    case Ops::MOD:
      if (v(1) == 0 || u->src[0]->dtype == kUInt64) return nullptr;
      r = floormod(v(0), v(1));
      break;
    case Ops::WHERE:
      r = v(0) ? v(1) : v(2);
      break;
    case Ops::CAST:
      r = v(0);
      break;
    default:
      return nullptr;
  }
  if (u->dtype == kUInt64 && (u->op == Ops::MAX || u->op == Ops::CMPLT)) return nullptr;  // unsigned order
  return const_int_uop(u->dtype, r);
}

// A sum as terms (atom -> coefficient) plus a constant, looking through ADD and MUL by a constant.
struct Linear {
  std::vector<std::pair<UOpPtr, int64_t>> terms;
  int64_t constant = 0;
  void add(const UOpPtr& u, int64_t coef) {
    if (u->op == Ops::ADD && u->dtype == kInt64) {
      add(u->src[0], coef);
      add(u->src[1], coef);
    } else if (u->op == Ops::MUL && u->dtype == kInt64 && u->src[1]->is_const()) {
      add(u->src[0], coef * u->src[1]->const_int());
    } else if (u->is_const()) {
      constant += coef * u->const_int();
    } else {
      for (auto& t : terms)
        if (t.first == u) {
          t.second += coef;
          return;
        }
      terms.emplace_back(u, coef);
    }
  }
  UOpPtr build() const {
    UOpPtr out;
    for (const auto& [atom, coef] : terms) {
      if (coef == 0) continue;
      UOpPtr t = idx_mul(atom, coef);
      out = out ? idx_add(out, t) : t;
    }
    if (!out) return index_const(constant);
    return constant ? idx_add(out, index_const(constant)) : out;
  }
};

// (x//c)*c + x%c -> x and ((x//c)%d)*c + x%c -> x%(c*d): what unravel-then-ravel leaves behind.
UOpPtr combine_divmod(const UOpPtr& sum) {
  Linear lin;
  lin.add(sum, 1);
  if (lin.terms.size() < 2) return nullptr;
  for (size_t i = 0; i < lin.terms.size(); i++) {
    auto [m, k] = lin.terms[i];
    if (m->op != Ops::MOD || !m->src[1]->is_const() || k == 0) continue;
    const UOpPtr& x = m->src[0];
    int64_t c = m->src[1]->const_int();
    for (size_t j = 0; j < lin.terms.size(); j++) {
      auto [d, kc] = lin.terms[j];
      if (j == i || kc != k * c) continue;
      UOpPtr merged;
      if (d->op == Ops::IDIV && d->src[0] == x && d->src[1]->is_const(static_cast<double>(c)))
        merged = x;
      else if (d->op == Ops::MOD && d->src[1]->is_const() && d->src[0]->op == Ops::IDIV &&
               d->src[0]->src[0] == x && d->src[0]->src[1]->is_const(static_cast<double>(c)))
        merged = idx_mod(x, c * d->src[1]->const_int());
      if (!merged) continue;
      Linear out;
      for (size_t t = 0; t < lin.terms.size(); t++)
        if (t != i && t != j) out.terms.push_back(lin.terms[t]);
      out.add(merged, k);
      out.constant += lin.constant;
      return out.build();
    }
  }
  // Like terms that were spread out (x + y + x) come together.
  Linear direct;
  size_t n_direct = 0;
  std::function<void(const UOpPtr&)> count = [&](const UOpPtr& u) {
    if (u->op == Ops::ADD) {
      count(u->src[0]);
      count(u->src[1]);
    } else {
      n_direct++;
    }
  };
  count(sum);
  size_t n_lin = lin.terms.size() + (lin.constant != 0);
  return n_lin < n_direct ? lin.build() : nullptr;
}

// (a*c + b) // c -> a + b // c, and (a*c + b) % c -> b % c, for c > 0 (exact under floor semantics).
UOpPtr split_divmod(const UOpPtr& u) {
  int64_t c = u->src[1]->const_int();
  if (c <= 0 || u->src[0]->op != Ops::ADD) return nullptr;
  Linear lin;
  lin.add(u->src[0], 1);
  // Every coefficient reduced mod c: when what is left stays inside one multiple of c, the div or
  // mod is gone. (ow + 13*kw) % 12 -> ow + kw for ow < 8, kw < 5: how a pooling view reads a window.
  {
    Linear quot, rest;
    for (const auto& [atom, coef] : lin.terms) {
      int64_t q = floordiv(coef, c);
      if (q) quot.terms.emplace_back(atom, q);
      if (coef - q * c) rest.terms.emplace_back(atom, coef - q * c);
    }
    quot.constant = floordiv(lin.constant, c);
    rest.constant = lin.constant - quot.constant * c;
    UOpPtr r = rest.build();
    auto [lo, hi] = r->bounds();
    if (!quot.terms.empty() && lo != std::numeric_limits<int64_t>::min() &&
        floordiv(lo, c) == floordiv(hi, c)) {
      int64_t k = floordiv(lo, c);
      if (u->op == Ops::MOD) return idx_add(r, index_const(-k * c));
      quot.constant += k;
      return quot.build();
    }
  }
  // A common factor g of c: (g*X + r) // c -> X // (c/g) and (g*X + r) % c -> (X % (c/g))*g + r
  // when 0 <= r < g. A vector of 8 lanes over a row of 48: (8*k + lane) // 48 is k // 6, the same
  // for every lane.
  // The candidates for g: each term's coefficient's common factor with c (at most one per term).
  std::vector<int64_t> factors;
  for (const auto& [atom, coef] : lin.terms) {
    const int64_t g = std::gcd(coef, c);
    if (g > 1 && g < c && std::find(factors.begin(), factors.end(), g) == factors.end()) factors.push_back(g);
  }
  std::sort(factors.rbegin(), factors.rend());
  for (int64_t g : factors) {
    Linear big, small;
    for (const auto& [atom, coef] : lin.terms) (coef % g == 0 ? big : small).terms.emplace_back(atom, coef);
    big.constant = floordiv(lin.constant, g) * g;
    small.constant = lin.constant - big.constant;
    if (big.terms.empty() || small.terms.empty()) continue;
    // The small part's bounds from its atoms' (building it as a node here made every candidate a
    // new subgraph to simplify: a 3000-deep chain of reshapes took minutes).
    int64_t lo = small.constant, hi = small.constant;
    bool known = true;
    for (const auto& [atom, coef] : small.terms) {
      const int64_t a = atom->vmin(), b = atom->vmax();
      if (a == std::numeric_limits<int64_t>::min() || b == std::numeric_limits<int64_t>::max() ||
          std::abs(coef) > (int64_t{1} << 20) || std::max(std::abs(a), std::abs(b)) > (int64_t{1} << 40)) {
        known = false;
        break;
      }
      lo += std::min(coef * a, coef * b);
      hi += std::max(coef * a, coef * b);
    }
    if (!known || lo < 0 || hi >= g) continue;
    for (auto& t : big.terms) t.second /= g;
    big.constant /= g;
    if (u->op == Ops::IDIV) return idx_div(big.build(), c / g);
    if (std::any_of(small.terms.begin(), small.terms.end(),
                    [](const auto& t) { return t.first->op == Ops::IDIV || t.first->op == Ops::MOD; }))
      continue;  // (x // g) % m * g + x % g is combine_divmod's x % c: it would undo this
    return idx_add(idx_mul(idx_mod(big.build(), c / g), g), small.build());
  }
  Linear quot, rest;
  for (const auto& [atom, coef] : lin.terms) (coef % c == 0 ? quot : rest).terms.emplace_back(atom, coef);
  quot.constant = floordiv(lin.constant, c) * c;
  rest.constant = lin.constant - quot.constant;
  if (quot.terms.empty() && quot.constant == 0) return nullptr;
  UOpPtr r = rest.build();
  if (u->op == Ops::MOD) return idx_mod(r, c);
  for (auto& t : quot.terms) t.second /= c;
  quot.constant /= c;
  return idx_add(quot.build(), idx_div(r, c));
}

const PatternMatcher& symbolic() {
  static const PatternMatcher pm({
      // Everything constant, or a value range of one point, is a constant.
      {any("x"), [](const Binds&, const UOpPtr& u) { return fold(u); }},
      {any("x"),
       [](const Binds&, const UOpPtr& u) -> UOpPtr {
         if (u->is_const() || !is_index(u) || u->op == Ops::DEFINE_GLOBAL) return nullptr;
         auto [lo, hi] = u->bounds();
         return lo == hi ? const_int_uop(u->dtype, lo) : nullptr;
       }},
      // Constants go on the right of ADD and MUL, so equal sums are one node.
      {op(Ops::ADD, {cnst("c"), any("x")}),
       [](const Binds& b, const UOpPtr& u) {
         return b["x"]->is_const() ? nullptr : alu(Ops::ADD, u->dtype, {b["x"], b["c"]});
       }},
      {op(Ops::MUL, {cnst("c"), any("x")}),
       [](const Binds& b, const UOpPtr& u) {
         return b["x"]->is_const() ? nullptr : alu(Ops::MUL, u->dtype, {b["x"], b["c"]});
       }},
      // Identities.
      {commute(op(Ops::ADD, {any("x"), cnst("c")})),
       [](const Binds& b, const UOpPtr&) { return b["c"]->is_const(0) ? b["x"] : nullptr; }},
      {commute(op(Ops::MUL, {any("x"), cnst("c")})),
       [](const Binds& b, const UOpPtr&) { return b["c"]->is_const(1) ? b["x"] : nullptr; }},
      {commute(op(Ops::MUL, {any("x"), cnst("c")})),
       [](const Binds& b, const UOpPtr& u) {
         return b["c"]->is_const(0) ? const_int_uop(u->dtype, 0) : nullptr;
       }},
      {op(Ops::MUL, {op(Ops::MUL, {any("x"), cnst("a")}), cnst("b")}),
       [](const Binds& b, const UOpPtr& u) -> UOpPtr {
         if (u->dtype != kInt64) return nullptr;
         return idx_mul(b["x"], b["a"]->const_int() * b["b"]->const_int());
       }},
      // (x + a) * b -> x * b + a * b: the constant part of an index ends up outside, where the C
      // compiler folds it into an address's displacement (the rows of a register tile then share
      // one base pointer).
      {op(Ops::MUL, {op(Ops::ADD, {any("x"), cnst("a")}), cnst("b")}),
       [](const Binds& b, const UOpPtr& u) -> UOpPtr {
         if (u->dtype != kInt64) return nullptr;
         return idx_add(idx_mul(b["x"], b["b"]->const_int()),
                        index_const(b["a"]->const_int() * b["b"]->const_int()));
       }},
      {op(Ops::IDIV, {any("x"), cnst("c")}),
       [](const Binds& b, const UOpPtr&) { return b["c"]->is_const(1) ? b["x"] : nullptr; }},
      {op(Ops::MOD, {any("x"), cnst("c")}),
       [](const Binds& b, const UOpPtr& u) {
         return b["c"]->is_const(1) ? const_int_uop(u->dtype, 0) : nullptr;
       }},
      // div and mod over a known range.
      {op(Ops::MOD, {any("x"), cnst("c")}),
       [](const Binds& b, const UOpPtr&) {
         const UOpPtr& x = b["x"];
         return x->vmin() >= 0 && x->vmax() < b["c"]->const_int() ? x : nullptr;
       }},
      {op(Ops::IDIV, {op(Ops::IDIV, {any("x"), cnst("a")}), cnst("b")}),
       [](const Binds& b, const UOpPtr&) -> UOpPtr {
         int64_t a = b["a"]->const_int(), c = b["b"]->const_int();
         return a > 0 && c > 0 ? idx_div(b["x"], a * c) : nullptr;
       }},
      {op(Ops::MOD, {op(Ops::MOD, {any("x"), cnst("a")}), cnst("b")}),
       [](const Binds& b, const UOpPtr&) -> UOpPtr {
         int64_t a = b["a"]->const_int(), c = b["b"]->const_int();
         return a > 0 && c > 0 && a % c == 0 ? idx_mod(b["x"], c) : nullptr;
       }},
            // Exact integer arithmetic, so index (int64) arithmetic only: a narrower integer's product
      // wraps (uint8 (x * 255) // 255 is not x: fuzzer seed 94381), and only int64 has bounds.
      {op(Ops::IDIV, {op(Ops::MUL, {any("x"), cnst("a")}), cnst("b")}),
       [](const Binds& b, const UOpPtr& u) -> UOpPtr {
         int64_t a = b["a"]->const_int(), c = b["b"]->const_int();
         if (a <= 0 || c <= 0 || u->dtype != kInt64) return nullptr;
         if (a % c == 0) return idx_mul(b["x"], a / c);
         if (c % a == 0) return idx_div(b["x"], c / a);
         return nullptr;
       }},
      {op(Ops::MOD, {op(Ops::MUL, {any("x"), cnst("a")}), cnst("b")}),
              [](const Binds& b, const UOpPtr& u) -> UOpPtr {
         int64_t a = b["a"]->const_int(), c = b["b"]->const_int();
         return a > 0 && c > 0 && a % c == 0 && u->dtype == kInt64 ? const_int_uop(u->dtype, 0) : nullptr;
       }},
            {op(Ops::IDIV, {op(Ops::ADD), cnst("c")}),
       [](const Binds&, const UOpPtr& u) { return u->dtype == kInt64 ? split_divmod(u) : nullptr; }},
      {op(Ops::MOD, {op(Ops::ADD), cnst("c")}),
       [](const Binds&, const UOpPtr& u) { return u->dtype == kInt64 ? split_divmod(u) : nullptr; }},
      {op(Ops::ADD), [](const Binds&, const UOpPtr& u) { return u->dtype == kInt64 ? combine_divmod(u) : nullptr; }},
      // Comparisons decided by range, and boolean identities.
      {op(Ops::CMPLT, {any("x"), cnst("c")}),
       [](const Binds& b, const UOpPtr&) -> UOpPtr {
         // Integers only: a float constant as an int64 is a truncation (and inf none at all: x < inf
         // was once decided false this way).
         if (is_float(b["x"]->dtype)) return nullptr;
         int64_t c = b["c"]->const_int();
         if (b["x"]->vmax() < c) return const_int_uop(kBool, 1);
         if (b["x"]->vmin() >= c) return const_int_uop(kBool, 0);
         return nullptr;
       }},
      {commute(op(Ops::AND, {any("x"), cnst("c")})),
       [](const Binds& b, const UOpPtr& u) -> UOpPtr {
         if (u->dtype != kBool) return nullptr;
         return b["c"]->const_int() ? b["x"] : b["c"];
       }},
      {op(Ops::WHERE, {cnst("c"), any("a"), any("b")}),
       [](const Binds& b, const UOpPtr&) { return b["c"]->const_int() ? b["a"] : b["b"]; }},
  });
  return pm;
}

UOpPtr simplify_node(UOpPtr u) {
  if (!is_index(u)) return u;
  for (int guard = 0; guard < 100; guard++) {
    UOpPtr next = symbolic().rewrite_once(u);
    if (!next || next == u) break;
    u = next;
  }
  return u;
}

}  // namespace

std::pair<int64_t, int64_t> UOp::bounds() const {
  if (bounds_) return *bounds_;
  bool sources_known =
      std::all_of(src.begin(), src.end(), [](const UOpPtr& s) { return s->bounds_.has_value(); });
  if (!sources_known)  // the sources first, without recursion: an index expression can be deep
    for (const UOp* u : toposort(this, [](const UOp* n) { return !n->bounds_; }))
      if (!u->bounds_) u->bounds_ = u->own_bounds();
  if (!bounds_) bounds_ = own_bounds();
  return *bounds_;
}

// This node's bounds from its sources' (known already).
std::pair<int64_t, int64_t> UOp::own_bounds() const {
  std::pair<int64_t, int64_t> r = dtype_range(dtype);
  auto b = [&](size_t i) { return *src[i]->bounds_; };
  switch (op) {
    case Ops::CONST:
      if (!is_float(dtype)) r = {const_int(), const_int()};
      break;
    case Ops::RANGE:
      r = {0, src[0]->const_int() - 1};
      break;
    case Ops::ADD:
      if (dtype == kInt64)
        r = {sat(__int128(b(0).first) + b(1).first), sat(__int128(b(0).second) + b(1).second)};
      break;
    case Ops::MUL:
      if (dtype == kInt64) {
        auto [a0, a1] = b(0);
        auto [c0, c1] = b(1);
        __int128 v[] = {__int128(a0) * c0, __int128(a0) * c1, __int128(a1) * c0, __int128(a1) * c1};
        r = {sat(*std::min_element(v, v + 4)), sat(*std::max_element(v, v + 4))};
      }
      break;
    case Ops::IDIV:
      if (dtype == kInt64 && src[1]->is_const() && src[1]->const_int() > 0) {
        int64_t c = src[1]->const_int();
        r = {floordiv(b(0).first, c), floordiv(b(0).second, c)};
      }
      break;
    case Ops::MOD:
      if (dtype == kInt64 && src[1]->is_const() && src[1]->const_int() > 0) {
        int64_t c = src[1]->const_int();
        r = b(0).first >= 0 && b(0).second < c ? b(0) : std::pair<int64_t, int64_t>{0, c - 1};
      }
      break;
    case Ops::MAX:
      if (dtype == kInt64) r = {std::max(b(0).first, b(1).first), std::max(b(0).second, b(1).second)};
      break;
    case Ops::WHERE:
      if (dtype == kInt64) r = {std::min(b(1).first, b(2).first), std::max(b(1).second, b(2).second)};
      break;
    default:
      break;
  }
  return r;
}

UOpPtr alu(Ops o, DType dtype, std::vector<UOpPtr> src) {
  return simplify_node(make_uop(o, dtype, std::move(src)));
}

UOpPtr alu(Ops o, UOpPtr a, UOpPtr b) {
  DType dt = is_comparison(o) ? kBool : a->dtype;
  return alu(o, dt, {std::move(a), std::move(b)});
}

bool depends_on(const UOpPtr& u, const UOp* x) {
  std::vector<const UOp*> stack{u.get()};
  std::unordered_set<const UOp*> seen;
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (n == x) return true;
    if (!seen.insert(n).second) continue;
    for (const auto& s : n->src) stack.push_back(s.get());
  }
  return false;
}

std::optional<std::pair<UOpPtr, int64_t>> affine_in(const UOpPtr& idx, const UOp* x) {
  Linear lin;
  lin.add(idx, 1);
  Linear rest;
  rest.constant = lin.constant;
  int64_t coef = 0;
  for (const auto& [atom, k] : lin.terms) {
    if (atom.get() == x)
      coef += k;
    else if (depends_on(atom, x))
      return std::nullopt;
    else
      rest.terms.emplace_back(atom, k);
  }
  return std::make_pair(rest.build(), coef);
}

std::optional<UOpPtr> halved_in(const UOpPtr& idx, const UOp* x) {
  Linear lin;
  lin.add(idx, 1);
  Linear rest;
  rest.constant = lin.constant;
  UOpPtr half;
  for (const auto& [atom, k] : lin.terms) {
    if (!depends_on(atom, x)) {
      rest.terms.emplace_back(atom, k);
      continue;
    }
    if (half || k != 1 || atom->op != Ops::IDIV || !atom->src[1]->is_const() ||
        atom->src[1]->const_int() != 2)
      return std::nullopt;
    half = atom;
  }
  if (!half) return std::nullopt;
  auto inner = affine_in(half->src[0], x);
  if (!inner || inner->second != 1) return std::nullopt;
  // (B + x) / 2 is B / 2 + x / 2 for x >= 0 only when B is even.
  Linear b;
  b.add(inner->first, 1);
  if (b.constant % 2 != 0) return std::nullopt;
  Linear b_half;
  b_half.constant = b.constant / 2;
  for (const auto& [atom, k] : b.terms) {
    if (k % 2 != 0) return std::nullopt;
    b_half.terms.emplace_back(atom, k / 2);
  }
  for (const auto& t : b_half.terms) rest.terms.push_back(t);
  rest.constant += b_half.constant;
  return rest.build();
}

UOpPtr idx_add(UOpPtr a, UOpPtr b) { return alu(Ops::ADD, std::move(a), std::move(b)); }
UOpPtr idx_mul(UOpPtr a, int64_t c) { return alu(Ops::MUL, std::move(a), index_const(c)); }
UOpPtr idx_div(UOpPtr a, int64_t c) { return alu(Ops::IDIV, std::move(a), index_const(c)); }
UOpPtr idx_mod(UOpPtr a, int64_t c) { return alu(Ops::MOD, std::move(a), index_const(c)); }
UOpPtr idx_lt(UOpPtr a, int64_t c) { return alu(Ops::CMPLT, std::move(a), index_const(c)); }
UOpPtr idx_ge(UOpPtr a, int64_t c) {
  return alu(Ops::CMPNE, alu(Ops::CMPLT, std::move(a), index_const(c)), const_int_uop(kBool, 1));
}
UOpPtr bool_and(UOpPtr a, UOpPtr b) {
  if (!a) return b;
  if (!b) return a;
  return alu(Ops::AND, std::move(a), std::move(b));
}

}  // namespace lazygrad
