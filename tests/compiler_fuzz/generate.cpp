// The program generator (generate.h). Each op is drawn with operands that make sense for it (a
// nonzero integer divisor, shift counts inside the width, a broadcastable second operand of the same
// dtype) and kept only if the reference accepts it.
#include "generate.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace lazygrad::fuzz {

namespace {

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t k = 0; k < std::min(a.size(), b.size()); k++) {
    int64_t x = a[a.size() - 1 - k], y = b[b.size() - 1 - k];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

class Gen {
 public:
  Gen(uint64_t seed, const GenOptions& o) : rng_(seed * 0x9e3779b97f4a7c15ULL + 1), opt_(o) {
    p_.seed = seed;
  }

  Program run() {
    int inputs = static_cast<int>(between(1, 3));
    for (int k = 0; k < inputs; k++) fresh(random_shape(), random_dtype());
    int target = static_cast<int>(between(opt_.min_steps, opt_.max_steps));
    for (int made = 0, tries = 0; made < target && tries < 40 * target; tries++)
      if (step()) made++;
    p_.outputs.push_back(static_cast<int>(p_.steps.size()) - 1);
    for (int k = 0; k + 1 < static_cast<int>(p_.steps.size()) && p_.outputs.size() < 4; k++)
      if (p_.steps[k].op != Op::Input && chance(0.2)) p_.outputs.insert(p_.outputs.begin(), k);
    return p_;
  }

 private:
  // ---- randomness
  int64_t between(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[between(0, static_cast<int64_t>(v.size()) - 1)];
  }
  double normal() { return std::normal_distribution<double>(0, 1)(rng_); }

  DType random_dtype() {
    static const std::vector<std::pair<DType, int>> w = {{kFloat32, 55}, {kFloat16, 6}, {kBFloat16, 4},
                                                         {kFloat64, 6},  {kInt32, 12},  {kInt64, 6},
                                                         {kInt8, 4},     {kUInt8, 3},   {kBool, 4}};
    int total = 0;
    for (auto& [d, n] : w) total += n;
    int r = static_cast<int>(between(0, total - 1));
    for (auto& [d, n] : w)
      if ((r -= n) < 0) return d;
    return kFloat32;
  }

  int64_t random_dim() {
    static const std::vector<int64_t> dims = {1, 1, 1, 2, 2,  3,  3,  4,  4,  5,
                                              5, 7, 8, 8, 13, 16, 16, 17, 32, 0};
    return pick(dims);
  }

  Shape random_shape() {
    for (int tries = 0; tries < 20; tries++) {
      Shape s(between(0, 4));
      for (auto& d : s) d = random_dim();
      if (numel_of(s) <= opt_.max_elements) return s;
    }
    return {3};
  }

  double random_value(DType dt) {
    if (dt == kBool) return static_cast<double>(between(0, 1));
    if (dt == kUInt8) return static_cast<double>(chance(0.8) ? between(0, 12) : between(0, 255));
    if (dt == kInt8) return static_cast<double>(chance(0.8) ? between(-8, 8) : between(-128, 127));
    if (dt == kInt32)
      return static_cast<double>(chance(0.9) ? between(-8, 8) : between(-(1LL << 30), 1LL << 30));
    if (dt == kInt64)
      return static_cast<double>(chance(0.9) ? between(-8, 8) : between(-(1LL << 40), 1LL << 40));
    if (chance(0.03)) {
      static const std::vector<double> special = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0};
      return pick(special);
    }
    if (chance(0.15)) return static_cast<double>(between(-2, 2));  // exact ties for max and argmax
    static const std::vector<double> scales = {1, 1, 1, 1, 1, 1, 10, 0.01, 100};
    return round_to(dt, normal() * pick(scales));
  }

  // ---- steps
  // Adds s if the reference accepts it; returns its index or -1.
  int push(Step s) {
    std::vector<const RefTensor*> in;
    for (int k : s.in) in.push_back(&vals_[k]);
    try {
      RefTensor r = ref_apply(s, in);
      if (r.numel() > opt_.max_elements) return -1;
      p_.steps.push_back(std::move(s));
      vals_.push_back(std::move(r));
      return static_cast<int>(vals_.size()) - 1;
    } catch (const Invalid&) {
      return -1;
    }
  }

  int fresh(const Shape& shape, DType dt, int64_t lo = 0, int64_t hi = -1, bool positive = false) {
    Step s;
    s.op = Op::Input;
    s.shape = shape;
    s.dtype = dt;
    for (int64_t k = 0; k < numel_of(shape); k++) {
      double v = hi >= lo ? static_cast<double>(between(lo, hi)) : random_value(dt);
      if (positive) v = std::fabs(v) + 0.25;
      if (std::isnan(v) && positive) v = 1;
      s.values.push_back(v);
    }
    return push(std::move(s));
  }

  int unary_step(Op op, int x, std::vector<int64_t> ints = {}, bool keepdim = false) {
    Step s;
    s.op = op;
    s.in = {x};
    s.ints = std::move(ints);
    s.keepdim = keepdim;
    return push(std::move(s));
  }

  const RefTensor& val(int k) const { return vals_[k]; }

  // A value broadcastable with x's shape (of x's dtype: cast if needed): an earlier one, or a new input.
  int operand_like(int x, bool nonzero = false, bool shift = false) {
    const RefTensor& vx = val(x);
    DType dt = vx.dtype;
    if (!shift && !nonzero && chance(0.4)) {
      std::vector<int> ok;
      for (int k = 0; k < static_cast<int>(vals_.size()); k++)
        if (broadcastable(vals_[k].shape, vx.shape)) ok.push_back(k);
      if (!ok.empty()) {
        int y = pick(ok);
        if (val(y).dtype == dt) return y;
        Step c;
        c.op = Op::Cast;
        c.in = {y};
        c.dtype = dt;
        int z = push(c);
        if (z >= 0) return z;
      }
    }
    // A new input of x's shape with some axes 1 (broadcast) or dropped from the front.
    Shape s = vx.shape;
    if (chance(0.3) && !s.empty()) s.erase(s.begin(), s.begin() + between(0, static_cast<int64_t>(s.size())));
    for (auto& d : s)
      if (chance(0.25)) d = 1;
    if (shift) {  // mostly inside the width, sometimes past it or negative
      int64_t bits = (dt == kInt8 || dt == kUInt8) ? 8 : dt == kInt32 ? 32 : 64;
      return chance(0.7) ? fresh(s, dt, 0, bits - 1) : fresh(s, dt, dt == kUInt8 ? 0 : -3, bits + 3);
    }
    if (nonzero && !is_float(dt)) {
      int y = fresh(s, dt, 1, dt == kUInt8 ? 9 : 6);
      if (y >= 0 && chance(0.5) && dt != kUInt8) {  // negative divisors too
        Step n;
        n.op = Op::Neg;
        n.in = {y};
        int z = push(n);
        if (z >= 0) return z;
      }
      return y;
    }
    return fresh(s, dt);
  }

  bool binary(int x) {
    DType dt = val(x).dtype;
    std::vector<Op> ops;
    if (is_float(dt))
      ops = {Op::Add,       Op::Sub,     Op::Mul,     Op::Div, Op::FloorDivide,
             Op::Remainder, Op::Maximum, Op::Minimum, Op::Pow};
    else if (dt == kBool)
      ops = {Op::Add, Op::Mul, Op::BitwiseAnd, Op::BitwiseOr, Op::BitwiseXor, Op::Div};
    else
      ops = {Op::Add,        Op::Sub,       Op::Mul,       Op::Div,        Op::FloorDivide,
             Op::Remainder,  Op::Maximum,   Op::Minimum,   Op::BitwiseAnd, Op::BitwiseOr,
             Op::BitwiseXor, Op::LeftShift, Op::RightShift};
    ops.push_back(Op::LogicalAnd);
    ops.push_back(Op::LogicalOr);
    Op op = pick(ops);
    bool has_scalar = op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div ||
                      op == Op::FloorDivide || op == Op::Remainder || op == Op::Pow;
    Step s;
    s.op = op;
    s.in = {x};
    if (has_scalar && chance(0.4)) {
      s.scalar_is_int = !is_float(dt) ? chance(0.8) : chance(0.3);
      if (s.scalar_is_int) {
        s.scalar = static_cast<double>(between(-5, 5));
        if ((op == Op::FloorDivide || op == Op::Remainder) && s.scalar == 0) s.scalar = 3;
        if (op == Op::Pow) s.scalar = static_cast<double>(between(0, 3));
      } else {
        static const std::vector<double> f = {0.5, -1.5, 2.0, 3.25, 1e-3, 100.0, -0.75, 7.0};
        s.scalar = op == Op::Pow ? pick(std::vector<double>{0.5, 2.0, 3.0, -1.0, 1.5}) : pick(f);
      }
      return push(s) >= 0;
    }
    bool shift = op == Op::LeftShift || op == Op::RightShift;
    bool nonzero = !is_float(dt) && (op == Op::FloorDivide || op == Op::Remainder);
    int y = op == Op::Pow ? fresh(val(x).shape, dt) : operand_like(x, nonzero, shift);
    if (y < 0) return false;
    s.in.push_back(y);
    if (chance(0.3) && !shift && !nonzero) std::swap(s.in[0], s.in[1]);
    return push(s) >= 0;
  }

  bool compare(int x) {
    Step s;
    s.op = pick(std::vector<Op>{Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge});
    s.in = {x};
    if (chance(0.4)) {
      s.scalar_is_int = !is_float(val(x).dtype) || chance(0.5);
      s.scalar = s.scalar_is_int ? static_cast<double>(between(-2, 2)) : normal();
      return push(s) >= 0;
    }
    int y = operand_like(x);
    if (y < 0) return false;
    s.in.push_back(y);
    return push(s) >= 0;
  }

  bool where(int x) {
    int c = -1;
    std::vector<int> bools;
    for (int k = 0; k < static_cast<int>(vals_.size()); k++)
      if (vals_[k].dtype == kBool && broadcastable(vals_[k].shape, val(x).shape)) bools.push_back(k);
    if (!bools.empty() && chance(0.5)) {
      c = pick(bools);
    } else {
      Step cmp;
      cmp.op = chance(0.5) ? Op::Gt : Op::Lt;
      cmp.in = {x};
      cmp.scalar_is_int = !is_float(val(x).dtype);
      cmp.scalar = cmp.scalar_is_int ? 0 : normal() * 0.5;
      c = push(cmp);
    }
    if (c < 0) return false;
    int y = operand_like(x);
    if (y < 0) return false;
    Step s;
    s.op = Op::Where;
    s.in = chance(0.5) ? std::vector<int>{c, x, y} : std::vector<int>{c, y, x};
    return push(s) >= 0;
  }

  bool reduce(int x) {
    const RefTensor& v = val(x);
    std::vector<Op> ops = {Op::Sum, Op::Max, Op::Min, Op::Any, Op::All};
    if (v.dtype != kBool) ops.push_back(Op::Prod);
    if (is_float(v.dtype)) ops.insert(ops.end(), {Op::Mean, Op::Logsumexp, Op::Sum, Op::Max});
    Op op = pick(ops);
    std::vector<int64_t> axes;
    int64_t rank = static_cast<int64_t>(v.shape.size());
    if (rank > 0 && chance(0.7)) {
      for (int64_t a = 0; a < rank; a++)
        if (chance(0.5)) axes.push_back(a);
      if (axes.empty()) axes.push_back(between(0, rank - 1));
    }
    if (op == Op::Logsumexp && axes.empty() && rank > 0) axes.push_back(rank - 1);
    return unary_step(op, x, axes, chance(0.5)) >= 0;
  }

  bool arg(int x) {
    int64_t rank = static_cast<int64_t>(val(x).shape.size());
    Op op = chance(0.5) ? Op::Argmax : Op::Argmin;
    if (rank == 0 || chance(0.25)) return unary_step(op, x, {}, false) >= 0;
    return unary_step(op, x, {between(0, rank - 1)}, chance(0.5)) >= 0;
  }

  bool along_axis(int x, Op op) {
    int64_t rank = static_cast<int64_t>(val(x).shape.size());
    if (rank == 0) return false;
    return unary_step(op, x, {between(0, rank - 1)}) >= 0;
  }

  bool movement(int x) {
    // Copies, not a reference into vals_: fresh() below appends to it (a reference read after that
    // was a use after free, which clang's ASan caught).
    const Shape s = val(x).shape;
    const DType dtype = val(x).dtype;
    int64_t rank = static_cast<int64_t>(s.size());
    switch (between(0, 6)) {
      case 0: {  // reshape: the prime factors of the size dealt among 1-4 axes
        std::vector<int64_t> f;
        int64_t n = numel_of(s);
        for (int64_t p = 2; n > 1 && p <= n; p++)
          while (n % p == 0) f.push_back(p), n /= p;
        Shape to(between(1, 4), 1);
        if (numel_of(s) == 0) to[between(0, static_cast<int64_t>(to.size()) - 1)] = 0;
        for (int64_t p : f) to[between(0, static_cast<int64_t>(to.size()) - 1)] *= p;
        return unary_step(Op::Reshape, x, to) >= 0;
      }
      case 1: {
        if (rank < 2) return false;
        std::vector<int64_t> order(rank);
        for (int64_t k = 0; k < rank; k++) order[k] = k;
        std::shuffle(order.begin(), order.end(), rng_);
        return unary_step(Op::Permute, x, order) >= 0;
      }
      case 2: {
        Shape to = s;
        for (auto& d : to)
          if (d == 1 && chance(0.6)) d = between(2, 5);
        if (chance(0.4)) to.insert(to.begin(), between(2, 3));
        if (to == s || numel_of(to) > opt_.max_elements) return false;
        return unary_step(Op::Expand, x, to) >= 0;
      }
      case 3: {
        if (rank == 0) return false;
        Step p;
        p.op = Op::Pad;
        p.in = {x};
        for (int64_t k = 0; k < std::min<int64_t>(rank, between(1, 3)); k++) {
          p.ints.push_back(between(0, 2));
          p.ints.push_back(between(0, 2));
        }
        p.scalar_is_int = !is_float(dtype);
        p.scalar = p.scalar_is_int
                       ? static_cast<double>(between(dtype == kBool ? 0 : -3, dtype == kBool ? 1 : 3))
                       : (chance(0.5) ? 0.0 : normal());
        return push(p) >= 0;
      }
      case 4: {
        std::vector<int64_t> dims;
        for (int64_t k = 0; k < rank; k++)
          if (s[k] > 0) dims.push_back(k);
        if (dims.empty()) return false;
        int64_t d = pick(dims), start = between(0, s[d] - 1), end = between(start + 1, s[d]);
        return unary_step(Op::Slice, x, {d, start, end, pick(std::vector<int64_t>{1, 1, 2, 3})}) >= 0;
      }
      case 5: {
        if (rank == 0) return false;
        std::vector<int64_t> axes;
        for (int64_t k = 0; k < rank; k++)
          if (chance(0.5)) axes.push_back(k);
        if (axes.empty()) axes.push_back(between(0, rank - 1));
        return unary_step(Op::Flip, x, axes) >= 0;
      }
      default: {
        if (rank == 0) return false;
        int64_t d = between(0, rank - 1);
        Step c;
        c.op = Op::Cat;
        c.in = {x};
        c.ints = {d};
        for (int64_t k = 0, n = between(1, 2); k < n; k++) {
          if (chance(0.3)) {
            c.in.push_back(x);
            continue;
          }
          Shape part = s;
          part[d] = between(0, 4);
          int y = fresh(part, dtype);
          if (y < 0) return false;
          c.in.push_back(y);
        }
        return push(c) >= 0;
      }
    }
  }

  bool matmul(int x) {
    const RefTensor& v = val(x);
    if (!is_float(v.dtype) || v.shape.size() < 2 || v.shape.size() > 3) return false;
    Shape s = v.shape;
    size_t r = s.size();
    Step m;
    m.op = Op::Matmul;
    if (r == 2 && chance(0.3)) {  // x @ x.T
      int t = unary_step(Op::Permute, x, {1, 0});
      if (t < 0) return false;
      m.in = {x, t};
      return push(m) >= 0;
    }
    Shape w = s;
    w[r - 2] = s[r - 1];
    w[r - 1] = pick(std::vector<int64_t>{1, 3, 4, 5, 8, 16});
    int y = fresh(w, v.dtype);
    if (y < 0) return false;
    m.in = {x, y};
    return push(m) >= 0;
  }

  bool conv(int x) {
    const RefTensor& v = val(x);
    if (!is_float(v.dtype) || v.shape.size() != 4 || v.shape[1] == 0) return false;
    int64_t C = v.shape[1];
    std::vector<int64_t> gs;
    for (int64_t g = 1; g <= C; g++)
      if (C % g == 0) gs.push_back(g);
    int64_t g = chance(0.7) ? 1 : pick(gs);
    int64_t O = g * between(1, 3);
    Shape w = {O, C / g, between(1, 3), between(1, 3)};
    int y = fresh(w, v.dtype);
    if (y < 0) return false;
    Step c;
    c.op = Op::Conv2d;
    c.in = {x, y};
    c.ints = {between(1, 2), between(0, 1), between(1, 2), g};
    return push(c) >= 0;
  }

  bool step() {
    int last = static_cast<int>(vals_.size()) - 1;
    int x = chance(0.6) ? last : static_cast<int>(between(0, last));
    DType dt = val(x).dtype;
    int r = static_cast<int>(between(0, 99));
    if (r < 20) {  // unary
      std::vector<Op> ops;
      if (is_float(dt))
        ops = {Op::Neg,        Op::Exp,  Op::Log,     Op::Exp2,  Op::Log2, Op::Sqrt,  Op::Sin,       Op::Cos,
               Op::Reciprocal, Op::Relu, Op::Abs,     Op::Floor, Op::Ceil, Op::Trunc, Op::Round,     Op::Sign,
               Op::Square,     Op::Tanh, Op::Sigmoid, Op::Rsqrt, Op::Exp,  Op::Relu,  Op::LogicalNot};
      else if (dt == kBool)
        ops = {Op::LogicalNot, Op::BitwiseNot};
      else
        ops = {Op::Neg, Op::Abs, Op::Relu, Op::Sign, Op::Square, Op::BitwiseNot, Op::LogicalNot, Op::Floor};
      return unary_step(pick(ops), x) >= 0;
    }
    if (r < 43) return binary(x);
    if (r < 50) return compare(x);
    if (r < 55) return where(x);
    if (r < 61) {
      Step c;
      c.op = Op::Cast;
      c.in = {x};
      c.dtype = random_dtype();
      return c.dtype != dt && push(c) >= 0;
    }
    if (r < 72) return reduce(x);
    if (r < 76) return arg(x);
    if (r < 79) return along_axis(x, chance(0.6) ? Op::Cumsum : Op::Cumprod);
    if (r < 82) return along_axis(x, chance(0.5) ? Op::Softmax : Op::LogSoftmax);
    if (r < 92) return movement(x);
    if (r < 95) return matmul(x);
    if (r < 97)
      return conv(x) || (chance(0.5) &&
                         fresh({between(1, 2), between(1, 4), between(3, 7), between(3, 7)}, kFloat32) >= 0);
    return unary_step(chance(0.5) ? Op::Realize : Op::Contiguous, x) >= 0;
  }

  std::mt19937_64 rng_;
  GenOptions opt_;
  Program p_;
  std::vector<RefTensor> vals_;
};

}  // namespace

Program generate(uint64_t seed, const GenOptions& options) { return Gen(seed, options).run(); }

std::vector<RefTensor> interpret(const Program& p) {
  std::vector<RefTensor> vals;
  for (const Step& s : p.steps) {
    std::vector<const RefTensor*> in;
    for (int k : s.in) in.push_back(&vals.at(k));
    vals.push_back(ref_apply(s, in));
  }
  return vals;
}

}  // namespace lazygrad::fuzz
