// The reference interpreter (reference.h): each op written out for one element at a time, in
// double, rounded to the result's dtype after every op as PyTorch's eager ops round.
#include "reference.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>

namespace lazygrad::fuzz {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- dtypes -----------------------------------------------------------------------------------

struct FloatFormat {
  int mantissa_bits;  // stored bits after the point
  int min_exponent;   // of the smallest normal: 2^min_exponent
  double max_finite;
};

FloatFormat format_of(DType dt) {
  switch (dt) {
    case kFloat16:
      return {10, -14, 65504.0};
    case kBFloat16:
      return {7, -126, 3.3895313892515355e38};
    case kFloat32:
      return {23, -126, FLT_MAX};
    default:
      return {52, -1022, DBL_MAX};
  }
}

double min_normal(DType dt) { return std::ldexp(1.0, format_of(dt).min_exponent); }

// Whether a product p of factors whose magnitudes >= 1 multiply to `big` and the others to `small`
// may come out other than p in dt: partial products in the dtype (vector lanes, split reductions,
// a scan's order) leave its range where p does not, the factors >= 1 together overflowing or those
// below 1 together underflowing (flushed to 0, or a 0 among them), and an overflowed partial times
// an underflowed one is inf * 0 = NaN. Which happens depends on the order, as in PyTorch's own
// vectorized prod (seed 22756: 0 exactly, NaN on 8 lanes; seed 92282, a cumprod: 2.9e20 * 9.7e24
// overflows float32, then times 0 is NaN, where the exact prefix is 0).
bool partials_leave_range(double big, double small, double p, DType dt) {
  const double top = format_of(dt).max_finite, bottom = min_normal(dt), ap = std::fabs(p);
  const bool overflows = big > top, underflows = small < bottom;
  return !std::isnan(p) && ((overflows && (ap <= top || underflows)) || (underflows && ap >= bottom));
}

int bits_of(DType dt) {
  switch (dt) {
    case kBool:
      return 1;
    case kUInt8:
    case kInt8:
      return 8;
    case kInt16:
    case kUInt16:
      return 16;
    case kInt32:
    case kUInt32:
      return 32;
    default:
      return 64;
  }
}

bool is_unsigned_type(DType dt) { return dt == kUInt8 || dt == kUInt16 || dt == kUInt32 || dt == kUInt64; }

// The bound one rounding to dt adds to a result r.
double rounding(DType dt, double r) {
  if (!std::isfinite(r)) return 0;
  return ulp_of(dt) * (std::fabs(r) + min_normal(dt));
}

// The bound a sum of n terms whose magnitudes add to abs_sum may carry from its own roundings in
// dt: relative to abs_sum (the sqrt(n) of a random walk, plus 2), and at least half a subnormal
// step for each of its 2n roundings (a product, then an add), which is what float32 FMA
// accumulation of products in the subnormals shows (seed 49170: 13 products of 1e-42 each, summed
// in float32, came out 5 steps of 2^-149 away from the exact sum).
double sum_spread(DType dt, int64_t n, double abs_sum) {
  const double terms = static_cast<double>(n);
  return ulp_of(dt) * ((2 + std::sqrt(terms)) * abs_sum + terms * min_normal(dt));
}

// ---- tensors ----------------------------------------------------------------------------------

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

RefTensor make(const Shape& shape, DType dt) {
  RefTensor t;
  t.shape = shape;
  t.dtype = dt;
  int64_t n = numel_of(shape);
  if (is_float(dt)) {
    t.f.assign(n, 0);
    t.err.assign(n, 0);
  } else {
    t.i.assign(n, 0);
  }
  t.dc.assign(n, 0);
  return t;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] ? flat % s[d] : 0;
    flat = s[d] ? flat / s[d] : 0;
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t flat = 0;
  for (size_t d = 0; d < s.size(); d++) flat = flat * s[d] + idx[d];
  return flat;
}

// Copies element `from` of src into element `to` of dst (same dtype).
void copy_elem(RefTensor& dst, int64_t to, const RefTensor& src, int64_t from) {
  if (src.is_float_type()) {
    dst.f[to] = src.f[from];
    dst.err[to] = src.err[from];
  } else {
    dst.i[to] = src.i[from];
  }
  dst.dc[to] = src.dc[from];
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t k = 0; k < out.size(); k++) {
    int64_t x = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    int64_t y = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) throw Invalid("shapes do not broadcast");
    out[k] = x == 1 ? y : x;
  }
  return out;
}

// For each element of `out`, the element of `in` (broadcast to out) it reads.
std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out) {
  std::vector<int64_t> st = strides_of(in), map(numel_of(out));
  size_t lead = out.size() - in.size();
  for (int64_t k = 0; k < static_cast<int64_t>(map.size()); k++) {
    std::vector<int64_t> idx = unravel(k, out);
    int64_t flat = 0;
    for (size_t d = 0; d < in.size(); d++) flat += (in[d] == 1 ? 0 : idx[d + lead]) * st[d];
    map[k] = flat;
  }
  return map;
}

// ---- elementwise ------------------------------------------------------------------------------

// A float result: the exact value rounded to dt, with its bound; don't care where a correct
// implementation could overflow while the reference did not, or the other way round.
void set_float(RefTensor& t, int64_t k, double exact, double err, bool dc) {
  double r = round_to(t.dtype, exact);
  double max = format_of(t.dtype).max_finite;
  if (std::isfinite(exact) && std::fabs(exact) + err >= max) dc = true;  // at the edge of overflow
  // A 16-bit intermediate that overflows: lazygrad keeps a fused chain in float32 (its stores
  // round), PyTorch rounds after each op.
  if (std::isfinite(exact) && !std::isfinite(r) && (t.dtype == kFloat16 || t.dtype == kBFloat16)) dc = true;
  t.f[k] = r;
  t.err[k] = std::isfinite(r) ? err + rounding(t.dtype, r) : 0;
  if (!std::isfinite(t.err[k])) dc = true;
  t.dc[k] = dc;
}

struct Unary {
  double (*f)(double);
  // |f'(x)| e, the error an input error e carries through, in an order that neither underflows nor
  // overflows where the product does not (seed 52476: 1/x of x = 4.3e284 had a slope 1/x^2 of 0).
  double (*propagate)(double x, double r, double e);
  double rel_ulps, abs_ulps;  // what an implementation may add: of |r|, and of 1
  int singular;  // 1: f is singular at 0 and defined for x > 0 (log, sqrt); 2: singular at 0 (1/x)
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

Unary unary_spec(Op op) {
  switch (op) {
    case Op::Exp:
      return {[](double x) { return std::exp(x); },
              [](double, double r, double e) { return std::fabs(r) * e; }, 2, 0, 0};
    case Op::Exp2:
      return {[](double x) { return std::exp2(x); },
              [](double, double r, double e) { return std::fabs(r) * M_LN2 * e; }, 2, 0, 0};
    case Op::Log:
      return {[](double x) { return std::log(x); },
              [](double x, double, double e) { return e / std::fabs(x); }, 2, 1, 1};
    case Op::Log2:
      return {[](double x) { return std::log2(x); },
              [](double x, double, double e) { return e / std::fabs(x) / M_LN2; }, 2, 1, 1};
    case Op::Sqrt:
      return {[](double x) { return std::sqrt(x); }, [](double, double r, double e) { return 0.5 * e / r; },
              0, 0, 1};
    case Op::Rsqrt:
      return {[](double x) { return 1 / std::sqrt(x); },
              [](double x, double r, double e) { return 0.5 * r * (e / x); }, 2, 0, 1};
    case Op::Sin:
      return {[](double x) { return std::sin(x); }, [](double, double, double e) { return e; }, 2, 2, 0};
    case Op::Cos:
      return {[](double x) { return std::cos(x); }, [](double, double, double e) { return e; }, 2, 2, 0};
    case Op::Reciprocal:
      return {[](double x) { return 1 / x; },
              [](double, double r, double e) { return std::fabs(r) * e * std::fabs(r); }, 0, 0, 2};
    case Op::Tanh:
      return {[](double x) { return std::tanh(x); },
              [](double, double r, double e) { return (1 - r * r) * e; }, 8, 8, 0};
    case Op::Sigmoid:
      return {sigmoid, [](double, double r, double e) { return r * (1 - r) * e; }, 8, 8, 0};
    case Op::Square:
      return {[](double x) { return x * x; }, [](double x, double, double e) { return 2 * std::fabs(x) * e; },
              0, 0, 0};
    case Op::Neg:
      return {[](double x) { return -x; }, [](double, double, double e) { return e; }, 0, 0, 0};
    case Op::Abs:
      return {[](double x) { return std::fabs(x); }, [](double, double, double e) { return e; }, 0, 0, 0};
    case Op::Relu:
      return {[](double x) { return x > 0 ? x : (std::isnan(x) ? x : 0.0); },
              [](double, double, double e) { return e; }, 0, 0, 0};
    default:
      throw Invalid("not a smooth unary op");
  }
}

// floor, ceil, trunc, round, sign: exact results that jump at integers (round: at halves; sign: at
// 0). An input closer to a jump than its bound is don't care.
double stepwise(Op op, double x) {
  switch (op) {
    case Op::Floor:
      return std::floor(x);
    case Op::Ceil:
      return std::ceil(x);
    case Op::Trunc:
      return std::trunc(x);
    case Op::Round:
      return std::nearbyint(x);  // half to even (the default rounding mode)
    default:                     // Sign: NaN gives 0 (torch 1.13)
      return std::isnan(x) ? 0.0 : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
  }
}
bool near_jump(Op op, double x, double e) {
  if (e == 0 || !std::isfinite(x)) return false;
  if (op == Op::Sign) return std::fabs(x) <= e;
  double j = op == Op::Round ? std::floor(x) + 0.5 : std::nearbyint(x);
  return std::fabs(x - j) <= e || std::fabs(x - std::floor(x)) <= e || std::fabs(std::ceil(x) - x) <= e;
}

int64_t int_unary(Op op, DType dt, int64_t x) {
  switch (op) {
    case Op::Neg:
      return wrap_int(dt, static_cast<int64_t>(0ULL - static_cast<uint64_t>(x)));
    case Op::Abs:
      return x < 0 ? wrap_int(dt, static_cast<int64_t>(0ULL - static_cast<uint64_t>(x))) : x;
    case Op::Relu:
      return x > 0 ? x : 0;
    case Op::Sign:
      return x > 0 ? 1 : x < 0 ? -1 : 0;
    case Op::Square:
      return wrap_int(dt, static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(x)));
    case Op::Floor:
    case Op::Ceil:
    case Op::Trunc:
    case Op::Round:
      return x;
    case Op::BitwiseNot:
      return dt == kBool ? !x : wrap_int(dt, ~x);
    default:
      throw Invalid("not an integer unary op");
  }
}

RefTensor unary(const Step& s, const RefTensor& x) {
  DType dt = x.dtype;
  if (s.op == Op::LogicalNot) {
    RefTensor out = make(x.shape, kBool);
    for (int64_t k = 0; k < x.numel(); k++) {
      bool zero = x.is_float_type() ? x.f[k] == 0 : x.i[k] == 0;
      out.i[k] = zero;
      out.dc[k] = x.dc[k] || (x.is_float_type() && std::fabs(x.f[k]) <= x.err[k] && x.err[k] > 0);
    }
    return out;
  }
  if (!is_float(dt)) {
    if (dt == kBool && s.op != Op::BitwiseNot) throw Invalid("bool unary");
    RefTensor out = make(x.shape, dt);
    for (int64_t k = 0; k < x.numel(); k++) {
      out.i[k] = int_unary(s.op, dt, x.i[k]);
      out.dc[k] = x.dc[k];
    }
    return out;
  }
  if (s.op == Op::BitwiseNot) throw Invalid("bitwise_not of a float");
  RefTensor out = make(x.shape, dt);
  bool step =
      s.op == Op::Floor || s.op == Op::Ceil || s.op == Op::Trunc || s.op == Op::Round || s.op == Op::Sign;
  for (int64_t k = 0; k < x.numel(); k++) {
    double v = x.f[k], e = x.err[k];
    if (step) {
      out.f[k] = stepwise(s.op, v);
      out.err[k] = 0;
      out.dc[k] = x.dc[k] || near_jump(s.op, v, e);
      continue;
    }
    Unary u = unary_spec(s.op);
    double exact = u.f(v);
    bool dc = x.dc[k];
    if (u.singular && e > 0 && std::fabs(v) <= 2 * e) dc = true;  // the input may be on either side of 0
    double carried = std::isfinite(exact) ? u.propagate(v, exact, e) : 0;
    double err = carried + ulp_of(dt) * (u.rel_ulps * std::fabs(exact) + u.abs_ulps);
    // |(x + d)^2 - x^2| <= 2|x| e + e^2: the slope alone is 0 at 0 (seed 12448: the square of a relu
    // of a sin of a float32 near 3e10, its bound 1024, was bounded by 1e-45).
    if (s.op == Op::Square) err += e * e;
    set_float(out, k, exact, std::isfinite(err) ? err : 0, dc);
  }
  return out;
}

// ---- type promotion (PyTorch's, for the cases the generator makes) ------------------------------

// A tensor of dtype dt with a Python scalar: the tensor's category wins unless the scalar's is higher.
DType with_scalar(DType dt, bool scalar_is_int) {
  if (is_float(dt)) return dt;
  if (!scalar_is_int) return kFloat32;
  return dt == kBool ? kInt64 : dt;
}

// ---- binary -----------------------------------------------------------------------------------

bool cmp(Op op, double a, double b) {
  switch (op) {
    case Op::Eq:
      return a == b;
    case Op::Ne:
      return a != b;
    case Op::Lt:
      return a < b;
    case Op::Le:
      return a <= b;
    case Op::Gt:
      return a > b;
    default:
      return a >= b;
  }
}
bool cmp_int(Op op, DType dt, int64_t a, int64_t b) {
  if (dt == kUInt64) {
    uint64_t x = a, y = b;
    return op == Op::Eq   ? x == y
           : op == Op::Ne ? x != y
           : op == Op::Lt ? x < y
           : op == Op::Le ? x <= y
           : op == Op::Gt ? x > y
                          : x >= y;
  }
  return op == Op::Eq   ? a == b
         : op == Op::Ne ? a != b
         : op == Op::Lt ? a < b
         : op == Op::Le ? a <= b
         : op == Op::Gt ? a > b
                        : a >= b;
}
bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

// A division by an exact 0 of a value whose bound reaches 0: which of -inf, NaN and inf is right
// depends on the sign of a correct computation's rounding (seed 21133: log_softmax's largest entry,
// -5.6e-13 here and 0 in float32, as PyTorch computes it, divided by 0).
bool zero_over_zero_unknown(double a, double ea, double b) { return b == 0 && ea > 0 && std::fabs(a) <= ea; }

// PyTorch's floor division of floats (c10's div_floor_floating), from the exact fmod: an infinite
// dividend gives NaN (fmod's), not floor(inf / b).
double torch_floor_divide(double a, double b) {
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  double floored = std::floor(div);
  return div - floored > 0.5 ? floored + 1 : floored;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

int64_t int_binary(Op op, DType dt, int64_t a, int64_t b) {
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  int bits = bits_of(dt);
  switch (op) {
    case Op::Add:
      return wrap_int(dt, static_cast<int64_t>(u(a) + u(b)));
    case Op::Sub:
      return wrap_int(dt, static_cast<int64_t>(u(a) - u(b)));
    case Op::Mul:
      return wrap_int(dt, static_cast<int64_t>(u(a) * u(b)));
    case Op::FloorDivide:
      if (b == 0) throw Invalid("integer division by zero");
      if (b == -1) return wrap_int(dt, static_cast<int64_t>(0ULL - u(a)));
      if (dt == kUInt64) return static_cast<int64_t>(u(a) / u(b));
      return floor_div(a, b);
    case Op::Remainder:
      if (b == 0) throw Invalid("integer division by zero");
      if (b == -1) return 0;
      if (dt == kUInt64) return static_cast<int64_t>(u(a) % u(b));
      return floor_mod(a, b);
    case Op::Maximum:
      return dt == kUInt64 ? static_cast<int64_t>(std::max(u(a), u(b))) : std::max(a, b);
    case Op::Minimum:
      return dt == kUInt64 ? static_cast<int64_t>(std::min(u(a), u(b))) : std::min(a, b);
    case Op::BitwiseAnd:
      return a & b;
    case Op::BitwiseOr:
      return a | b;
    case Op::BitwiseXor:
      return a ^ b;
    // A count outside [0, bits) shifts every bit out (src/ir/ops.h; PyTorch's ATen kernels).
    case Op::LeftShift:
      if (b < 0 || b >= bits) return 0;
      return wrap_int(dt, static_cast<int64_t>(u(a) << b));
    case Op::RightShift:
      if (b < 0 || b >= bits) return !is_unsigned_type(dt) && a < 0 ? -1 : 0;
      if (is_unsigned_type(dt))
        return static_cast<int64_t>((u(a) & (bits == 64 ? ~0ULL : ((1ULL << bits) - 1))) >> b);
      return a >> b;
    default:
      throw Invalid("not an integer binary op");
  }
}

// Float a op b into element k of out, with bounds ea and eb.
void float_binary(Op op, RefTensor& out, int64_t k, double a, double ea, double b, double eb, bool dc,
                  bool scalar_exponent) {
  double exact = 0, err = 0;
  switch (op) {
    case Op::Add:
      exact = a + b, err = ea + eb;
      break;
    case Op::Sub:
      exact = a - b, err = ea + eb;
      break;
    case Op::Mul:
      exact = a * b, err = ea * std::fabs(b) + eb * std::fabs(a) + ea * eb;
      // An infinity times a value whose bound reaches 0 is NaN where a correct computation rounds
      // that value to 0 (seed 214667: a log_softmax's largest entry, 0 in float32 as in PyTorch,
      // -2.2e-16 here, times inf).
      if ((std::isinf(a) && eb > 0 && std::fabs(b) <= eb) || (std::isinf(b) && ea > 0 && std::fabs(a) <= ea))
        dc = true;
      break;
    case Op::Div:
      exact = a / b;
      if (eb > 0 && std::fabs(b) <= 2 * eb) dc = true;
      if (zero_over_zero_unknown(a, ea, b)) dc = true;
      err = (ea + std::fabs(exact) * eb) / std::max(std::fabs(b) - eb, 1e-300);
      break;
    case Op::Maximum:
    case Op::Minimum:
      exact = std::isnan(a) || std::isnan(b) ? kNaN : op == Op::Maximum ? std::max(a, b) : std::min(a, b);
      err = std::max(ea, eb);
      break;
    case Op::Pow: {
      exact = std::pow(a, b);
      // PyTorch's own forms of these scalar exponents: sqrt(-inf) is NaN where pow(-inf, 0.5) is inf.
      if (scalar_exponent && b == 0.5) exact = std::sqrt(a);
      if (scalar_exponent && b == -0.5) exact = 1 / std::sqrt(a);
      if (ea > 0 && std::fabs(a) <= 2 * ea) dc = true;
      // A base that may be negative is NaN under a fraction and a number under an integer: an
      // exponent within its bound of an integer decides which (seed 9445: a softmax's 0.99999994,
      // computed 1 by one correct order of summation and 0.99999994 by another).
      if (a - ea < 0 && eb > 0 && std::fabs(b - std::nearbyint(b)) <= eb) dc = true;
      // A NaN base is 1 under an exponent of exactly 0 and NaN under any other (seed 37071: a
      // log_softmax's largest entry, 0 in float32 and -5e-13 here).
      if (std::isnan(a) && eb > 0 && std::fabs(b) <= eb) dc = true;
      double la = a != 0 ? std::fabs(std::log(std::fabs(a))) : 0;
      err = std::fabs(exact) * (la * eb + (a != 0 ? std::fabs(b) * ea / std::fabs(a) : 0) +
                                ulp_of(out.dtype) * (4 + 2 * std::fabs(b) * la));
      break;
    }
    case Op::FloorDivide:
    case Op::Remainder: {
      double q = a / b;
      // Near an integer quotient the result jumps (floor), or the remainder from 0 to |b|.
      double eq = (ea + std::fabs(q) * eb) / std::max(std::fabs(b) - eb, 1e-300) +
                  4 * ulp_of(out.dtype) * std::fabs(q);
      if (std::isfinite(q) && std::fabs(q - std::nearbyint(q)) <= eq) dc = true;
      if (eb > 0 && std::fabs(b) <= 2 * eb) dc = true;
      if (zero_over_zero_unknown(a, ea, b)) dc = true;
      if (op == Op::FloorDivide) {
        exact = b == 0 ? q : torch_floor_divide(a, b);
        err = 0;
      } else {
        if (b == 0) {
          exact = kNaN;
        } else {
          double m = std::fmod(a, b);
          exact = (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
        }
        err = ea + std::fabs(std::floor(q)) * eb + 2 * ulp_of(out.dtype) * (std::fabs(a) + std::fabs(b));
      }
      break;
    }
    default:
      throw Invalid("not a float binary op");
  }
  set_float(out, k, exact, std::isfinite(err) ? err : 0, dc);
}

RefTensor binary(const Step& s, const RefTensor& a, const RefTensor* bt) {
  // The second operand: a tensor of a's dtype (the generator casts), or a scalar.
  DType dt = bt ? a.dtype : with_scalar(a.dtype, s.scalar_is_int);
  if (bt && bt->dtype != a.dtype) throw Invalid("operands of different dtypes");
  Shape shape = bt ? broadcast_shape(a.shape, bt->shape) : a.shape;
  std::vector<int64_t> ia = broadcast_index(a.shape, shape), ib;
  if (bt) ib = broadcast_index(bt->shape, shape);
  bool logical = s.op == Op::LogicalAnd || s.op == Op::LogicalOr;
  bool compare = is_comparison(s.op);
  DType out_dt = compare || logical ? kBool : s.op == Op::Div && !is_float(dt) ? kFloat32 : dt;
  bool bitwise = s.op == Op::BitwiseAnd || s.op == Op::BitwiseOr || s.op == Op::BitwiseXor ||
                 s.op == Op::LeftShift || s.op == Op::RightShift;
  if (bitwise && is_float(dt)) throw Invalid("bitwise op on floats");
  if ((s.op == Op::LeftShift || s.op == Op::RightShift) && dt == kBool) throw Invalid("shift of bools");
  if (dt == kBool && (s.op == Op::Sub || s.op == Op::FloorDivide || s.op == Op::Remainder ||
                      s.op == Op::Pow || s.op == Op::Maximum || s.op == Op::Minimum))
    throw Invalid("arithmetic on bools");
  if (s.op == Op::Pow && !is_float(dt)) throw Invalid("integer pow");
  RefTensor out = make(shape, out_dt);
  // A scalar operand in the computation's dtype.
  double sb = s.scalar;
  int64_t sbi = static_cast<int64_t>(s.scalar);
  if (!bt && is_float(dt)) sb = round_to(dt, sb);
  for (int64_t k = 0; k < out.numel(); k++) {
    int64_t x = ia[k], y = bt ? ib[k] : 0;
    bool dc = a.dc[x] || (bt && bt->dc[y]);
    if (is_float(dt) || s.op == Op::Div) {
      // Floats; integers meeting a float (a true division, a float scalar) are converted to float32 first.
      auto num = [&](const RefTensor& t, int64_t j) {
        return t.is_float_type() ? t.f[j] : round_to(kFloat32, static_cast<double>(t.i[j]));
      };
      double va = num(a, x), ea = a.is_float_type() ? a.err[x] : 0;
      double vb = bt ? num(*bt, y) : (is_float(dt) ? sb : round_to(kFloat32, s.scalar));
      double eb = bt && bt->is_float_type() ? bt->err[y] : 0;
      if (compare || logical) {
        bool r = compare ? cmp(s.op, va, vb)
                         : (s.op == Op::LogicalAnd ? (va != 0 && vb != 0) : (va != 0 || vb != 0));
        bool exact = ea == 0 && eb == 0;
        if (compare && !exact && std::fabs(va - vb) <= ea + eb) dc = true;
        if (logical && ((ea > 0 && std::fabs(va) <= ea) || (eb > 0 && std::fabs(vb) <= eb))) dc = true;
        out.i[k] = r;
        out.dc[k] = dc;
        continue;
      }
      float_binary(s.op, out, k, va, ea, vb, eb, dc, bt == nullptr);
      continue;
    }
    int64_t va = a.i[x], vb = bt ? bt->i[y] : wrap_int(dt, sbi);
    if (dt == kBool && !bt) vb = s.scalar != 0;
    if (compare) {
      out.i[k] = cmp_int(s.op, dt, va, vb);
    } else if (logical) {
      out.i[k] = s.op == Op::LogicalAnd ? (va != 0 && vb != 0) : (va != 0 || vb != 0);
    } else if (dt == kBool) {
      // bool + bool and bool * bool stay bool (or and and), as in PyTorch.
      int64_t r = s.op == Op::Add   ? (va | vb)
                  : s.op == Op::Mul ? (va & vb)
                                    : int_binary(s.op, kInt64, va, vb);
      out.i[k] = r != 0;
    } else {
      out.i[k] = int_binary(s.op, dt, va, vb);
    }
    out.dc[k] = dc;
  }
  return out;
}

RefTensor where(const RefTensor& c, const RefTensor& a, const RefTensor& b) {
  if (c.dtype != kBool) throw Invalid("where: condition is not bool");
  if (a.dtype != b.dtype) throw Invalid("where: operands of different dtypes");
  Shape shape = broadcast_shape(broadcast_shape(c.shape, a.shape), b.shape);
  auto ic = broadcast_index(c.shape, shape), ia = broadcast_index(a.shape, shape),
       ib = broadcast_index(b.shape, shape);
  RefTensor out = make(shape, a.dtype);
  for (int64_t k = 0; k < out.numel(); k++) {
    bool take_a = c.i[ic[k]] != 0;
    copy_elem(out, k, take_a ? a : b, take_a ? ia[k] : ib[k]);
    if (c.dc[ic[k]]) {
      bool same = a.is_float_type() ? (a.f[ia[k]] == b.f[ib[k]] && a.err[ia[k]] == 0 && b.err[ib[k]] == 0)
                                    : a.i[ia[k]] == b.i[ib[k]];
      out.dc[k] = out.dc[k] || !same || a.dc[ia[k]] || b.dc[ib[k]];
    }
  }
  return out;
}

RefTensor cast(const RefTensor& x, DType to) {
  RefTensor out = make(x.shape, to);
  for (int64_t k = 0; k < x.numel(); k++) {
    bool dc = x.dc[k];
    if (x.is_float_type()) {
      double v = x.f[k], e = x.err[k];
      if (is_float(to)) {
        set_float(out, k, v, e, dc);
        continue;
      }
      if (to == kBool) {
        out.i[k] = v != 0;
        out.dc[k] = dc || (e > 0 && std::fabs(v) <= e);
        continue;
      }
      // To an integer: truncation; C leaves NaN, infinities and values out of range undefined.
      double lo = is_unsigned_type(to) ? 0 : -std::ldexp(1.0, bits_of(to) - 1);
      double hi = std::ldexp(1.0, bits_of(to) - (is_unsigned_type(to) ? 0 : 1));
      if (!std::isfinite(v) || v - e <= lo - 1 || v + e >= hi) {
        out.i[k] = 0;
        out.dc[k] = 1;
        continue;
      }
      double t = std::trunc(v);
      if (e > 0 && (std::fabs(v - std::nearbyint(v)) <= e)) dc = true;
      out.i[k] = wrap_int(to, static_cast<int64_t>(t));
      out.dc[k] = dc;
      continue;
    }
    int64_t v = x.i[k];
    if (is_float(to)) {
      double d = x.dtype == kUInt64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
      set_float(out, k, d, 0, dc);
      out.err[k] = 0;  // exact conversion of the rounded value
      continue;
    }
    out.i[k] = to == kBool ? v != 0 : wrap_int(to, v);
    out.dc[k] = dc;
  }
  return out;
}

// ---- reductions -------------------------------------------------------------------------------

// The elements of x that each output element of a reduction over `axes` reads.
struct Groups {
  Shape out_shape;  // with keepdim
  std::vector<std::vector<int64_t>> members;
};

Groups groups_of(const Shape& shape, std::vector<int64_t> axes, bool keepdim) {
  if (axes.empty())
    for (size_t d = 0; d < shape.size(); d++) axes.push_back(static_cast<int64_t>(d));
  Shape kept = shape;
  for (int64_t a : axes) kept[a] = 1;
  Groups g;
  g.members.assign(numel_of(kept), {});
  for (int64_t k = 0; k < numel_of(shape); k++) {
    std::vector<int64_t> idx = unravel(k, shape);
    for (int64_t a : axes) idx[a] = 0;
    g.members[ravel(idx, kept)].push_back(k);
  }
  if (keepdim) {
    g.out_shape = kept;
  } else {
    for (size_t d = 0; d < shape.size(); d++)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
        g.out_shape.push_back(shape[d]);
  }
  return g;
}

RefTensor reduce(const Step& s, const RefTensor& x) {
  Groups g = groups_of(x.shape, s.ints, s.keepdim);
  bool fl = x.is_float_type();
  DType dt = x.dtype;
  if (s.op == Op::Sum || s.op == Op::Prod) dt = fl ? x.dtype : kInt64;
  if (s.op == Op::Any || s.op == Op::All) dt = x.dtype == kUInt8 ? kUInt8 : kBool;
  if ((s.op == Op::Mean || s.op == Op::Logsumexp) && !fl) throw Invalid("mean of integers");
  RefTensor out = make(g.out_shape, dt);
  for (size_t o = 0; o < g.members.size(); o++) {
    const auto& m = g.members[o];
    int64_t n = static_cast<int64_t>(m.size());
    bool dc = false;
    for (int64_t k : m) dc = dc || x.dc[k];
    if ((s.op == Op::Max || s.op == Op::Min) && n == 0) throw Invalid("max over an empty axis");
    if (s.op == Op::Any || s.op == Op::All) {
      // x != 0 for each member: known (one way or the other) unless a float lies within its bound of 0.
      int sure_nonzero = 0, sure_zero = 0, unsure = 0;
      bool any = false, all = true;
      for (int64_t k : m) {
        bool nz = fl ? x.f[k] != 0 : x.i[k] != 0;
        any = any || nz;
        all = all && nz;
        if (x.dc[k] || (fl && x.err[k] > 0 && std::fabs(x.f[k]) <= x.err[k]))
          unsure++;
        else
          (nz ? sure_nonzero : sure_zero)++;
      }
      out.i[o] = s.op == Op::Any ? any : all;
      out.dc[o] = unsure > 0 && (s.op == Op::Any ? sure_nonzero == 0 : sure_zero == 0);
      continue;
    }
    if (!fl) {
      int64_t acc = s.op == Op::Prod ? 1 : 0;
      if (s.op == Op::Max || s.op == Op::Min) acc = x.i[m[0]];
      for (int64_t k : m) {
        int64_t v = x.i[k];
        if (s.op == Op::Sum)
          acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
        if (s.op == Op::Prod)
          acc = static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
        if (s.op == Op::Max)
          acc = x.dtype == kUInt64 ? int64_t(std::max<uint64_t>(acc, v)) : std::max(acc, v);
        if (s.op == Op::Min)
          acc = x.dtype == kUInt64 ? int64_t(std::min<uint64_t>(acc, v)) : std::min(acc, v);
      }
      out.i[o] = (s.op == Op::Sum || s.op == Op::Prod) ? acc : wrap_int(dt, acc);
      out.dc[o] = dc;
      continue;
    }
    double sum = 0, abs_sum = 0, err_sum = 0;
    for (int64_t k : m) {
      sum += x.f[k];
      abs_sum += std::fabs(x.f[k]);
      err_sum += x.err[k];
    }
    double spread = sum_spread(dt, n, abs_sum);
    switch (s.op) {
      case Op::Sum:
        set_float(out, o, sum, err_sum + spread, dc);
        break;
      case Op::Mean:
        set_float(out, o, n ? sum / n : kNaN, n ? (err_sum + spread) / n : 0, dc);
        break;
      case Op::Prod: {
        double p = 1, err = 0;
        for (int64_t k : m) p *= x.f[k];
        for (int64_t k : m) {
          double others = 1;
          for (int64_t j : m)
            if (j != k) others *= std::fabs(x.f[j]);
          err += x.err[k] * others;
        }
        // Partial products that leave the dtype's range: don't care (partials_leave_range).
        double big = 1, small = 1;
        for (int64_t k : m) (std::fabs(x.f[k]) >= 1 ? big : small) *= std::fabs(x.f[k]);
        if (partials_leave_range(big, small, p, dt)) dc = true;
        set_float(out, o, p, err + ulp_of(dt) * (n + 1) * std::fabs(p), dc);
        break;
      }
      case Op::Max:
      case Op::Min: {
        bool is_max = s.op == Op::Max;
        double best = x.f[m[0]];
        bool nan = false;
        for (int64_t k : m) {
          nan = nan || std::isnan(x.f[k]);
          best = is_max ? std::max(best, x.f[k]) : std::min(best, x.f[k]);
        }
        double err = 0;
        for (int64_t k : m)
          if (std::fabs(x.f[k] - best) <= x.err[k] + err + 1e-300 || x.f[k] == best)
            err = std::max(err, x.err[k]);
        // A zero minimum (or maximum) with zeros of both signs among the values: which one comes
        // out depends on the order the values are compared in, as in PyTorch (torch.min of
        // [0.0, -0.0] is -0.0 over the whole tensor and 0.0 along a dimension): don't care (seed
        // 84026: 1 / min was inf against -inf).
        bool plus_zero = false, minus_zero = false;
        for (int64_t k : m)
          if (x.f[k] == 0 && best == 0) (std::signbit(x.f[k]) ? minus_zero : plus_zero) = true;
        set_float(out, o, nan ? kNaN : best, err, dc || (plus_zero && minus_zero));
        out.err[o] = err;  // a selection: no rounding of its own
        break;
      }
      case Op::Logsumexp: {
        double mx = -kInf;
        double err = 0;
        for (int64_t k : m) {
          mx = std::max(mx, x.f[k]);
          err = std::max(err, x.err[k]);
        }
        double r;
        if (n == 0 || mx == -kInf) {
          r = -kInf;
        } else if (!std::isfinite(mx)) {
          r = mx;
        } else {
          double t = 0;
          for (int64_t k : m) t += std::exp(x.f[k] - mx);
          r = mx + std::log(t);
        }
        bool nan = false;
        for (int64_t k : m) nan = nan || std::isnan(x.f[k]);
        set_float(out, o, nan ? kNaN : r,
                  err + ulp_of(dt) * (2 * std::fabs(r) + 8 + 2 * std::sqrt(double(n))), dc);
        break;
      }
      default:
        throw Invalid("not a reduction");
    }
  }
  return out;
}

// argmax/argmin along one axis (ints empty: over the flattened tensor).
RefTensor arg_extreme(const Step& s, const RefTensor& x) {
  if (x.dtype == kBool) throw Invalid("argmax of bools");
  bool flat = s.ints.empty();
  Shape shape = flat ? Shape{x.numel()} : x.shape;
  int64_t axis = flat ? 0 : s.ints[0];
  if (shape.empty()) shape = {1}, axis = 0;  // a 0-d tensor: one element
  if (shape[axis] == 0) throw Invalid("argmax over an empty axis");
  Groups g = groups_of(shape, {axis}, s.keepdim && !flat);
  if (flat) g.out_shape = {};
  if (!flat && x.shape.empty()) g.out_shape = {};
  RefTensor out = make(g.out_shape, kInt64);
  out.choices.assign(g.members.size(), {});
  out.index_limit = shape[axis];
  bool largest = s.op == Op::Argmax;
  bool fl = x.is_float_type();
  for (size_t o = 0; o < g.members.size(); o++) {
    const auto& m = g.members[o];
    bool dc = false;
    for (int64_t k : m) dc = dc || x.dc[k];
    // The exact answer: the first NaN, else the first extreme.
    int64_t best = 0;
    for (size_t j = 0; j < m.size(); j++) {
      double v = x.value(m[j]), b = x.value(m[best]);
      if (fl && std::isnan(b)) break;
      if (fl && std::isnan(v)) {
        best = static_cast<int64_t>(j);
        break;
      }
      bool better =
          fl ? (largest ? v > b : v < b)
             : (x.dtype == kUInt64 ? (largest ? uint64_t(x.i[m[j]]) > uint64_t(x.i[m[best]])
                                              : uint64_t(x.i[m[j]]) < uint64_t(x.i[m[best]]))
                                   : (largest ? x.i[m[j]] > x.i[m[best]] : x.i[m[j]] < x.i[m[best]]));
      if (better) best = static_cast<int64_t>(j);
    }
    out.i[o] = best;
    // Near ties: every index whose value may be the extreme.
    if (fl && !std::isnan(x.f[m[best]])) {
      std::vector<int64_t> cands;
      for (size_t j = 0; j < m.size(); j++) {
        double e = x.err[m[j]] + x.err[m[best]];
        if (static_cast<int64_t>(j) == best || (e > 0 && std::fabs(x.f[m[j]] - x.f[m[best]]) <= e))
          cands.push_back(j);
      }
      if (cands.size() > 1) {
        dc = true;
        out.choices[o] = cands;
      }
    }
    out.dc[o] = dc;
  }
  return out;
}

RefTensor scan(const Step& s, const RefTensor& x) {
  int64_t axis = s.ints[0];
  Shape shape = x.shape.empty() ? Shape{1} : x.shape;
  bool fl = x.is_float_type();
  RefTensor out = make(x.shape, fl ? x.dtype : kInt64);
  Groups g = groups_of(shape, {axis}, true);
  bool prod = s.op == Op::Cumprod;
  for (const auto& m : g.members) {
    double acc = prod ? 1 : 0, abs_acc = 0, err = 0;
    double big = 1, small = 1;  // the prefix's factors of magnitude >= 1, and those below 1
    int64_t iacc = prod ? 1 : 0;
    bool dc = false;
    for (size_t j = 0; j < m.size(); j++) {
      int64_t k = m[j];
      dc = dc || x.dc[k];
      if (!fl) {
        uint64_t v = static_cast<uint64_t>(x.i[k]);
        iacc = static_cast<int64_t>(prod ? static_cast<uint64_t>(iacc) * v : static_cast<uint64_t>(iacc) + v);
        out.i[k] = iacc;
        out.dc[k] = dc;
        continue;
      }
      double v = x.f[k];
      if (prod) {
        // Each step's rounding, with its absolute floor in the subnormals (`rounding`), carried on by
        // the later factors (seed 200557: a prefix through 5.7e-39, then multiplied by 124 and 192).
        err = err * std::fabs(v) + x.err[k] * std::fabs(acc) + rounding(x.dtype, acc * v) * (j + 1);
        acc *= v;
        // A prefix's partial products may leave the dtype's range (partials_leave_range).
        (std::fabs(v) >= 1 ? big : small) *= std::fabs(v);
        if (partials_leave_range(big, small, acc, x.dtype)) dc = true;
        set_float(out, k, acc, err, dc);
      } else {
        acc += v;
        abs_acc += std::fabs(v);
        err += x.err[k];
        set_float(out, k, acc, err + sum_spread(x.dtype, static_cast<int64_t>(j + 1), abs_acc), dc);
      }
    }
  }
  return out;
}

RefTensor softmax(const Step& s, const RefTensor& x) {
  if (!x.is_float_type()) throw Invalid("softmax of integers");
  Shape shape = x.shape.empty() ? Shape{1} : x.shape;
  Groups g = groups_of(shape, {s.ints[0]}, true);
  RefTensor out = make(x.shape, x.dtype);
  bool log = s.op == Op::LogSoftmax;
  for (const auto& m : g.members) {
    double mx = -kInf, err = 0;
    bool dc = false, nan = false;
    for (int64_t k : m) {
      mx = std::max(mx, x.f[k]);
      err = std::max(err, x.err[k]);
      dc = dc || x.dc[k];
      nan = nan || std::isnan(x.f[k]);
    }
    double t = 0;
    for (int64_t k : m) t += std::exp(x.f[k] - mx);
    double n = static_cast<double>(m.size());
    for (int64_t k : m) {
      double r = log ? x.f[k] - mx - std::log(t) : std::exp(x.f[k] - mx) / t;
      if (nan || !std::isfinite(mx)) r = kNaN;  // an infinite row: inf - inf somewhere
      double e = log ? 2 * err + ulp_of(x.dtype) * (std::fabs(r) + 8 + 2 * std::sqrt(n))
                     : std::fabs(r) * (2 * err + ulp_of(x.dtype) * (8 + 2 * std::sqrt(n)));
      bool d = dc || (!nan && !std::isfinite(mx));
      set_float(out, k, r, e, d);
    }
  }
  return out;
}

// ---- movement ---------------------------------------------------------------------------------

RefTensor gather_elems(const RefTensor& x, const Shape& shape, const std::vector<int64_t>& from) {
  RefTensor out = make(shape, x.dtype);
  for (int64_t k = 0; k < out.numel(); k++) copy_elem(out, k, x, from[k]);
  return out;
}

RefTensor movement(const Step& s, const std::vector<const RefTensor*>& in) {
  const RefTensor& x = *in[0];
  std::vector<int64_t> from;
  Shape shape;
  switch (s.op) {
    case Op::Reshape:
      if (numel_of(s.ints) != x.numel()) throw Invalid("reshape to another size");
      shape = s.ints;
      for (int64_t k = 0; k < x.numel(); k++) from.push_back(k);
      break;
    case Op::Permute: {
      for (int64_t p : s.ints) shape.push_back(x.shape[p]);
      std::vector<int64_t> st = strides_of(x.shape);
      for (int64_t k = 0; k < numel_of(shape); k++) {
        std::vector<int64_t> idx = unravel(k, shape);
        int64_t f = 0;
        for (size_t d = 0; d < idx.size(); d++) f += idx[d] * st[s.ints[d]];
        from.push_back(f);
      }
      break;
    }
    case Op::Expand:
      shape = s.ints;
      if (broadcast_shape(x.shape, shape) != shape) throw Invalid("expand");
      from = broadcast_index(x.shape, shape);
      break;
    case Op::Flip: {
      shape = x.shape;
      for (int64_t k = 0; k < x.numel(); k++) {
        std::vector<int64_t> idx = unravel(k, shape);
        for (int64_t a : s.ints) idx[a] = shape[a] - 1 - idx[a];
        from.push_back(ravel(idx, shape));
      }
      break;
    }
    case Op::Slice: {
      int64_t dim = s.ints[0], start = s.ints[1], end = s.ints[2], step = s.ints[3];
      shape = x.shape;
      shape[dim] = end > start ? (end - start + step - 1) / step : 0;
      for (int64_t k = 0; k < numel_of(shape); k++) {
        std::vector<int64_t> idx = unravel(k, shape);
        idx[dim] = start + idx[dim] * step;
        from.push_back(ravel(idx, x.shape));
      }
      break;
    }
    case Op::Pad: {
      // PyTorch's list: (left, right) of the last axis first.
      shape = x.shape;
      size_t pairs = s.ints.size() / 2;
      std::vector<int64_t> before(shape.size(), 0);
      for (size_t p = 0; p < pairs; p++) {
        size_t d = shape.size() - 1 - p;
        before[d] = s.ints[2 * p];
        shape[d] += s.ints[2 * p] + s.ints[2 * p + 1];
      }
      RefTensor out = make(shape, x.dtype);
      double v = is_float(x.dtype) ? round_to(x.dtype, s.scalar) : 0;
      for (int64_t k = 0; k < out.numel(); k++) {
        std::vector<int64_t> idx = unravel(k, shape);
        bool inside = true;
        for (size_t d = 0; d < idx.size(); d++) {
          idx[d] -= before[d];
          inside = inside && idx[d] >= 0 && idx[d] < x.shape[d];
        }
        if (inside) {
          copy_elem(out, k, x, ravel(idx, x.shape));
        } else if (out.is_float_type()) {
          out.f[k] = v;
        } else {
          out.i[k] = x.dtype == kBool ? s.scalar != 0 : wrap_int(x.dtype, static_cast<int64_t>(s.scalar));
        }
      }
      return out;
    }
    case Op::Cat: {
      int64_t dim = s.ints[0];
      shape = x.shape;
      shape[dim] = 0;
      for (const RefTensor* t : in) {
        if (t->dtype != x.dtype) throw Invalid("cat of different dtypes");
        shape[dim] += t->shape[dim];
      }
      RefTensor out = make(shape, x.dtype);
      for (int64_t k = 0; k < out.numel(); k++) {
        std::vector<int64_t> idx = unravel(k, shape);
        size_t t = 0;
        while (idx[dim] >= in[t]->shape[dim]) idx[dim] -= in[t++]->shape[dim];
        copy_elem(out, k, *in[t], ravel(idx, in[t]->shape));
      }
      return out;
    }
    default:
      throw Invalid("not a movement op");
  }
  return gather_elems(x, shape, from);
}

// ---- products ---------------------------------------------------------------------------------

RefTensor matmul(const RefTensor& a, const RefTensor& b) {
  if (!a.is_float_type() || a.dtype != b.dtype) throw Invalid("matmul operands");
  if (a.shape.size() != b.shape.size() || a.shape.size() < 2) throw Invalid("matmul ranks");
  size_t r = a.shape.size();
  int64_t M = a.shape[r - 2], K = a.shape[r - 1], N = b.shape[r - 1];
  if (b.shape[r - 2] != K) throw Invalid("matmul inner sizes");
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < r; d++) {
    if (a.shape[d] != b.shape[d]) throw Invalid("matmul batch");
    batch *= a.shape[d];
  }
  Shape shape = a.shape;
  shape[r - 1] = N;
  RefTensor out = make(shape, a.dtype);
  for (int64_t z = 0; z < batch; z++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double sum = 0, abs_sum = 0, err = 0;
        bool dc = false;
        for (int64_t k = 0; k < K; k++) {
          int64_t x = (z * M + i) * K + k, y = (z * K + k) * N + j;
          double p = a.f[x] * b.f[y];
          sum += p;
          abs_sum += std::fabs(p);
          err += a.err[x] * std::fabs(b.f[y]) + std::fabs(a.f[x]) * b.err[y] + a.err[x] * b.err[y];
          dc = dc || a.dc[x] || b.dc[y];
        }
        set_float(out, (z * M + i) * N + j, sum, err + sum_spread(a.dtype, K, abs_sum), dc);
      }
  return out;
}

RefTensor conv2d(const Step& s, const RefTensor& x, const RefTensor& w) {
  if (!x.is_float_type() || x.dtype != w.dtype || x.shape.size() != 4 || w.shape.size() != 4)
    throw Invalid("conv2d operands");
  int64_t stride = s.ints[0], pad = s.ints[1], dil = s.ints[2], groups = s.ints[3];
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t O = w.shape[0], Cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  if (C != Cg * groups || O % groups != 0) throw Invalid("conv2d groups");
  int64_t span_h = H + 2 * pad - dil * (KH - 1) - 1, span_w = W + 2 * pad - dil * (KW - 1) - 1;
  if (span_h < 0 || span_w < 0) throw Invalid("conv2d: the input is smaller than the kernel");
  int64_t HO = span_h / stride + 1, WO = span_w / stride + 1;
  RefTensor out = make({N, O, HO, WO}, x.dtype);
  int64_t og = O / groups;
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t p = 0; p < HO; p++)
        for (int64_t q = 0; q < WO; q++) {
          double sum = 0, abs_sum = 0, err = 0;
          bool dc = false;
          int64_t g = o / og, terms = Cg * KH * KW;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t i = 0; i < KH; i++)
              for (int64_t j = 0; j < KW; j++) {
                int64_t h = p * stride - pad + i * dil, v = q * stride - pad + j * dil;
                int64_t wi = ((o * Cg + c) * KH + i) * KW + j;
                if (h < 0 || h >= H || v < 0 || v >= W) {
                  // The zero padding is multiplied like any input (an infinite weight gives NaN), as
                  // PyTorch's convolution does.
                  sum += 0.0 * w.f[wi];
                  dc = dc || w.dc[wi];
                  continue;
                }
                int64_t xi = ((n * C + g * Cg + c) * H + h) * W + v;
                double prod = x.f[xi] * w.f[wi];
                sum += prod;
                abs_sum += std::fabs(prod);
                err +=
                    x.err[xi] * std::fabs(w.f[wi]) + std::fabs(x.f[xi]) * w.err[wi] + x.err[xi] * w.err[wi];
                dc = dc || x.dc[xi] || w.dc[wi];
              }
          set_float(out, ((n * O + o) * HO + p) * WO + q, sum, err + sum_spread(x.dtype, terms, abs_sum), dc);
        }
  return out;
}

}  // namespace

// ---- public -------------------------------------------------------------------------------------

int64_t RefTensor::numel() const { return numel_of(shape); }

double ulp_of(DType dt) { return std::ldexp(1.0, -format_of(dt).mantissa_bits); }

double round_to(DType dt, double x) {
  if (!is_float(dt)) return static_cast<double>(wrap_int(dt, static_cast<int64_t>(x)));
  if (dt == kFloat64 || !std::isfinite(x) || x == 0) return x;
  if (dt == kFloat32) return static_cast<double>(static_cast<float>(x));
  FloatFormat f = format_of(dt);
  int e;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  double spacing = std::ldexp(1.0, std::max(e - 1, f.min_exponent) - f.mantissa_bits);
  double q = std::nearbyint(x / spacing) * spacing;  // the default rounding mode: to nearest even
  return std::fabs(q) > f.max_finite ? std::copysign(kInf, x) : q;
}

int64_t wrap_int(DType dt, int64_t x) {
  if (dt == kBool) return x != 0;
  int bits = bits_of(dt);
  if (bits == 64) return x;
  uint64_t mask = (uint64_t(1) << bits) - 1, u = static_cast<uint64_t>(x) & mask;
  if (!is_unsigned_type(dt) && (u >> (bits - 1))) u |= ~mask;
  return static_cast<int64_t>(u);
}

RefTensor ref_apply(const Step& s, const std::vector<const RefTensor*>& in) {
  switch (op_kind(s.op)) {
    case OpKind::Input: {
      RefTensor t = make(s.shape, s.dtype);
      for (int64_t k = 0; k < t.numel(); k++) {
        if (t.is_float_type())
          t.f[k] = round_to(s.dtype, s.values[k]);
        else
          t.i[k] = wrap_int(s.dtype, static_cast<int64_t>(s.values[k]));
      }
      return t;
    }
    case OpKind::Unary: {
      bool on_integers = s.op == Op::Neg || s.op == Op::Abs || s.op == Op::Relu || s.op == Op::Sign ||
                         s.op == Op::Square || s.op == Op::Floor || s.op == Op::Ceil || s.op == Op::Trunc ||
                         s.op == Op::Round || s.op == Op::BitwiseNot || s.op == Op::LogicalNot;
      if (!is_float(in[0]->dtype) && !on_integers) throw Invalid("a float op on integers");
      return unary(s, *in[0]);
    }
    case OpKind::Binary:
      return binary(s, *in[0], in.size() > 1 ? in[1] : nullptr);
    case OpKind::Where:
      return where(*in[0], *in[1], *in[2]);
    case OpKind::Cast:
      return cast(*in[0], s.dtype);
    case OpKind::Reduce:
      return reduce(s, *in[0]);
    case OpKind::ArgReduce:
      return arg_extreme(s, *in[0]);
    case OpKind::AlongAxis:
      return s.op == Op::Cumsum || s.op == Op::Cumprod ? scan(s, *in[0]) : softmax(s, *in[0]);
    case OpKind::Movement:
      return movement(s, in);
    case OpKind::Product:
      return s.op == Op::Matmul ? matmul(*in[0], *in[1]) : conv2d(s, *in[0], *in[1]);
    case OpKind::Realization:
      return *in[0];
  }
  throw Invalid("unknown op");
}

}  // namespace lazygrad::fuzz
