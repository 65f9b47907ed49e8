// Elementwise ops: broadcasting, PyTorch's type promotion, and the math composed from primitives.
#include <cmath>
#include <numbers>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

int category(DType dt) { return dt == kBool ? 0 : is_float(dt) ? 2 : 1; }

// torch.result_type for two tensors: dimensioned tensors outrank 0-d ones of the same category.
DType result_type(const Tensor& a, const Tensor& b) {
  bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const Tensor& dimmed = a0 ? b : a;
  const Tensor& zero = a0 ? a : b;
  if (category(zero.dtype()) > category(dimmed.dtype())) return zero.dtype();
  return dimmed.dtype();
}

// Ops composed from several primitives check shapes first, so the error names the op the user called.
void check_broadcast(const Tensor& a, const Tensor& b, const char* op) {
  broadcast_shape(a.shape(), b.shape(), op);
}

UOpPtr to_shape(const Tensor& t, const Shape& shape) {
  UOpPtr u = t.uop();
  if (u->shape == shape) return u;
  Shape padded(shape.size() - u->shape.size(), 1);
  padded.insert(padded.end(), u->shape.begin(), u->shape.end());
  if (padded != u->shape) u = make_uop(Ops::RESHAPE, u->dtype, {u}, std::vector<int64_t>(padded));
  return make_uop(Ops::EXPAND, u->dtype, {u}, std::vector<int64_t>(shape));
}

UOpPtr cast_uop(const UOpPtr& u, DType dt) { return u->dtype == dt ? u : make_uop(Ops::CAST, dt, {u}); }

// A binary primitive on broadcast, promoted operands. `out` is the result dtype (bool for compares).
Tensor binary(Ops op, const Tensor& a, const Tensor& b, const char* name, std::optional<DType> compute = {}) {
  DType dt = compute ? *compute : result_type(a, b);
  Shape shape = broadcast_shape(a.shape(), b.shape(), name);
  UOpPtr x = cast_uop(to_shape(a, shape), dt), y = cast_uop(to_shape(b, shape), dt);
  DType out = is_comparison(op) ? kBool : dt;
  return make_result(make_uop(op, out, {x, y}), {&a, &b});
}

Tensor unary(Ops op, const Tensor& t) { return make_result(make_uop(op, t.dtype(), {t.uop()}), {&t}); }

Tensor as_float(const Tensor& t) { return is_float(t.dtype()) ? t : t.to(kFloat32); }

Tensor lift(const Tensor& t, Scalar s) { return scalar_tensor(s, scalar_result_type(t, s)); }

// An op that changes nothing for this dtype (abs of unsigned, floor of int) still returns a new
// tensor, as PyTorch does: an in-place update of the result must not reach the input.
Tensor same_values(const Tensor& t) { return make_result(t.uop(), {&t}); }

void require_int(const Tensor& a, const char* op) {
  require(!is_float(a.dtype()), std::string(op) + ": not defined for " + std::string(dtype_name(a.dtype())) +
                                    " tensors (integer or bool only)");
}

// Shifts are defined for integer results only (PyTorch refuses bool << bool, "not implemented for
// 'Bool'"; a bool with an int shifts as the int type).
Tensor shift(Ops op, const Tensor& a, const Tensor& b, const char* name) {
  require_int(a, name), require_int(b, name);
  require(result_type(a, b) != kBool, std::string(name) + ": not implemented for bool tensors");
  return binary(op, a, b, name);
}

constexpr double kLog2E = std::numbers::log2e, kLn2 = std::numbers::ln2;

}  // namespace

Shape broadcast_shape(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw Error(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                  " cannot be broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Tensor scalar_tensor(Scalar v, DType dtype) {
  if (v.above_int64()) {
    // A uint64 past INT64_MAX (2**64-1 as a mask): exact as a uint64, rounded as a float, and out
    // of range of every other dtype (PyTorch: "Overflow when unpacking long", a RuntimeError).
    require(dtype == kUInt64 || is_float(dtype), std::to_string(static_cast<uint64_t>(v.to_int())) +
                                                     " does not fit in " + std::string(dtype_name(dtype)));
    if (is_float(dtype)) return make_tensor(const_uop(dtype, v.to_double()));
  }
  UOpPtr c = v.is_float() ? const_uop(dtype, v.to_double()) : const_int_uop(dtype, v.to_int());
  return make_tensor(c);
}

DType scalar_result_type(const Tensor& t, Scalar s) {
  int sc = s.kind() == Scalar::Kind::Bool ? 0 : s.kind() == Scalar::Kind::Int ? 1 : 2;
  if (sc <= category(t.dtype())) return t.dtype();
  return sc == 2 ? kFloat32 : kInt64;
}

Tensor Tensor::to(DType dt) const {
  if (dt == dtype()) return *this;
  return make_result(cast_uop(uop(), dt), {this});
}

Tensor Tensor::add(const Tensor& o) const {
  check_broadcast(*this, o, "add");
  if (dtype() == kBool && o.dtype() == kBool) return logical_or(o);
  return binary(Ops::ADD, *this, o, "add");
}
Tensor Tensor::mul(const Tensor& o) const {
  check_broadcast(*this, o, "mul");
  if (dtype() == kBool && o.dtype() == kBool) return logical_and(o);
  return binary(Ops::MUL, *this, o, "mul");
}
Tensor Tensor::neg() const {
  require(dtype() != kBool, "neg: negation of a bool tensor is not supported, use logical_not");
  return mul(scalar_tensor(-1, dtype()));
}
Tensor Tensor::sub(const Tensor& o) const {
  check_broadcast(*this, o, "sub");
  require(dtype() != kBool || o.dtype() != kBool, "sub: subtraction of bool tensors is not supported");
  DType dt = result_type(*this, o);
  return binary(Ops::ADD, *this, o.to(dt).neg(), "sub");
}
Tensor Tensor::div(const Tensor& o) const {
  check_broadcast(*this, o, "div");
  DType dt = result_type(*this, o);
  if (!is_float(dt)) dt = kFloat32;
  Tensor b = o.to(dt);
  return binary(Ops::MUL, to(dt), unary(Ops::RECIPROCAL, b), "div");
}
Tensor Tensor::floor_divide(const Tensor& o) const {
  check_broadcast(*this, o, "floor_divide");
  DType dt = result_type(*this, o);
  if (is_half(dt)) return to(kFloat32).floor_divide(o.to(kFloat32)).to(dt);
  if (is_float(dt)) {
    // PyTorch's (c10's div_floor_floating): from the exact fmod, so that a quotient that rounds up to
    // an integer (1 / 0.1f is 9.99999985, 10 in float32) or underflows to 0 (a subnormal over -3, -0)
    // still floors as the exact one does (9, -1); a zero divisor gives a / b's inf or NaN.
    Tensor a = to(dt), b = o.to(dt), mod = a.fmod(b);
    Tensor div = (a - mod).div(b);
    div = lazygrad::where(mod.ne(0).logical_and(b.lt(0).ne(mod.lt(0))), div - 1, div);
    Tensor floored = div.floor();
    floored = lazygrad::where((div - floored).gt(0.5), floored + 1, floored);
    Tensor quotient = a.div(b);
    return lazygrad::where(b.eq(0), quotient.floor(),
                           lazygrad::where(div.ne(0), floored, Tensor::zeros_like(a).copysign(quotient)));
  }
  require(dt != kBool, "floor_divide: not supported for bool tensors");
  return binary(Ops::IDIV, *this, o, "floor_divide");
}
Tensor Tensor::remainder(const Tensor& o) const {
  check_broadcast(*this, o, "remainder");
  DType dt = result_type(*this, o);
  if (is_half(dt)) return to(kFloat32).remainder(o.to(kFloat32)).to(dt);
  if (is_float(dt)) {  // PyTorch's: the exact fmod, moved by one b where its sign is not b's
    Tensor b = o.to(dt), mod = to(dt).fmod(b);
    return lazygrad::where(mod.ne(0).logical_and(b.lt(0).ne(mod.lt(0))), mod + b, mod);
  }
  require(dt != kBool, "remainder: not supported for bool tensors");
  return binary(Ops::MOD, *this, o, "remainder");
}

Tensor Tensor::add(Scalar o) const { return add(lift(*this, o)); }
Tensor Tensor::sub(Scalar o) const { return sub(lift(*this, o)); }
Tensor Tensor::mul(Scalar o) const { return mul(lift(*this, o)); }
Tensor Tensor::div(Scalar o) const {
  // True division computes in float32 from integers: the scalar is not first narrowed to the
  // tensor's integer type (uint8 / -2 is -1 in PyTorch, not 2 / 254).
  if (!is_float(scalar_result_type(*this, o))) return to(kFloat32).div(scalar_tensor(o, kFloat32));
  return div(lift(*this, o));
}
Tensor Tensor::floor_divide(Scalar o) const { return floor_divide(lift(*this, o)); }
Tensor Tensor::remainder(Scalar o) const { return remainder(lift(*this, o)); }

// Comparisons: from CMPLT and CMPNE only; NaN compares false everywhere but in !=.
Tensor Tensor::lt(const Tensor& o) const { return binary(Ops::CMPLT, *this, o, "lt"); }
Tensor Tensor::gt(const Tensor& o) const {
  check_broadcast(*this, o, "gt");
  return o.lt(*this);
}
Tensor Tensor::ne(const Tensor& o) const { return binary(Ops::CMPNE, *this, o, "ne"); }
Tensor Tensor::eq(const Tensor& o) const {
  check_broadcast(*this, o, "eq");
  return ne(o).logical_not();
}
Tensor Tensor::le(const Tensor& o) const {
  check_broadcast(*this, o, "le");
  return lt(o).logical_or(eq(o));
}
Tensor Tensor::ge(const Tensor& o) const {
  check_broadcast(*this, o, "ge");
  return o.le(*this);
}
Tensor Tensor::lt(Scalar o) const { return lt(lift(*this, o)); }
Tensor Tensor::gt(Scalar o) const { return gt(lift(*this, o)); }
Tensor Tensor::ne(Scalar o) const { return ne(lift(*this, o)); }
Tensor Tensor::eq(Scalar o) const { return eq(lift(*this, o)); }
Tensor Tensor::le(Scalar o) const { return le(lift(*this, o)); }
Tensor Tensor::ge(Scalar o) const { return ge(lift(*this, o)); }

Tensor Tensor::logical_not() const {
  return binary(Ops::CMPNE, to(kBool), scalar_tensor(true, kBool), "logical_not");
}
Tensor Tensor::logical_and(const Tensor& o) const {
  return binary(Ops::AND, to(kBool), o.to(kBool), "logical_and", kBool);
}
Tensor Tensor::logical_or(const Tensor& o) const {
  return binary(Ops::OR, to(kBool), o.to(kBool), "logical_or", kBool);
}

Tensor Tensor::bitwise_and(const Tensor& o) const {
  require_int(*this, "bitwise_and"), require_int(o, "bitwise_and");
  return binary(Ops::AND, *this, o, "bitwise_and");
}
Tensor Tensor::bitwise_or(const Tensor& o) const {
  require_int(*this, "bitwise_or"), require_int(o, "bitwise_or");
  return binary(Ops::OR, *this, o, "bitwise_or");
}
Tensor Tensor::bitwise_xor(const Tensor& o) const {
  require_int(*this, "bitwise_xor"), require_int(o, "bitwise_xor");
  return binary(Ops::XOR, *this, o, "bitwise_xor");
}
Tensor Tensor::bitwise_not() const {
  require_int(*this, "bitwise_not");
  if (dtype() == kBool) return logical_not();
  return binary(Ops::XOR, *this, scalar_tensor(-1, dtype()), "bitwise_not");
}
Tensor Tensor::bitwise_left_shift(const Tensor& o) const {
  return shift(Ops::SHL, *this, o, "bitwise_left_shift");
}
Tensor Tensor::bitwise_right_shift(const Tensor& o) const {
  return shift(Ops::SHR, *this, o, "bitwise_right_shift");
}

Tensor where(const Tensor& c, const Tensor& x, const Tensor& y) {
  require(c.dtype() == kBool, "where: expected a bool condition, got " + std::string(dtype_name(c.dtype())));
  DType dt = promote_types(x.dtype(), y.dtype());
  if (x.dim() != y.dim() && (x.dim() == 0 || y.dim() == 0)) {
    const Tensor& dimmed = x.dim() ? x : y;
    const Tensor& zero = x.dim() ? y : x;
    dt = category(zero.dtype()) > category(dimmed.dtype()) ? zero.dtype() : dimmed.dtype();
  }
  Shape shape = broadcast_shape(broadcast_shape(c.shape(), x.shape(), "where"), y.shape(), "where");
  UOpPtr cu = cast_uop(to_shape(c, shape), kBool);
  return make_result(
      make_uop(Ops::WHERE, dt, {cu, cast_uop(to_shape(x, shape), dt), cast_uop(to_shape(y, shape), dt)}),
      {&c, &x, &y});
}
Tensor where(const Tensor& c, Scalar x, const Tensor& y) { return where(c, lift(y, x), y); }
Tensor where(const Tensor& c, const Tensor& x, Scalar y) { return where(c, x, lift(x, y)); }
Tensor Tensor::where(const Tensor& c, const Tensor& other) const { return lazygrad::where(c, *this, other); }
Tensor Tensor::where(const Tensor& c, Scalar other) const { return lazygrad::where(c, *this, other); }

// ---- math ----
Tensor Tensor::exp2() const { return unary(Ops::EXP2, as_float(*this)); }
Tensor Tensor::log2() const { return unary(Ops::LOG2, as_float(*this)); }
Tensor Tensor::sqrt() const { return unary(Ops::SQRT, as_float(*this)); }
Tensor Tensor::sin() const { return unary(Ops::SIN, as_float(*this)); }
Tensor Tensor::reciprocal() const { return unary(Ops::RECIPROCAL, as_float(*this)); }
// exp and log through exp2/log2; the renderer turns these exact shapes back into libm's exp and log.
Tensor Tensor::exp() const { return as_float(*this).mul(kLog2E).exp2(); }
Tensor Tensor::log() const { return log2().mul(kLn2); }
Tensor Tensor::cos() const {
  // cos(x) = sin(pi/2 - x). The renderer turns this exact shape back into libm's cos: computed as
  // written, pi/2 - x would round away the low bits of a large x.
  Tensor x = as_float(*this);
  return (scalar_tensor(std::numbers::pi / 2, x.dtype()) - x).sin();
}
Tensor Tensor::relu() const {
  if (dtype() == kBool) return same_values(*this);
  // Not maximum(x, 0): its gradient at 0 would be the tie's 0.5; PyTorch's relu has 0 there, and
  // passes NaN (value and gradient) through, which `x <= 0` being false for NaN gives.
  return lazygrad::where(le(0), scalar_tensor(0, dtype()), *this);
}
Tensor Tensor::maximum(const Tensor& o) const { return binary(Ops::MAX, *this, o, "maximum"); }
Tensor Tensor::minimum(const Tensor& o) const {
  check_broadcast(*this, o, "minimum");
  DType dt = result_type(*this, o);
  if (is_float(dt)) return to(dt).neg().maximum(o.to(dt).neg()).neg();
  if (dt == kBool) return logical_and(o);
  Tensor a = to(dt), b = o.to(dt);
  return lazygrad::where(a.lt(b), a, b);
}
Tensor Tensor::abs() const {
  if (dtype() == kBool || is_unsigned(dtype())) return same_values(*this);
  if (!is_float(dtype())) return maximum(neg());
  // max(x, -x) keeps its second operand on a tie, so it took 0.0 to -0.0 (and copysign(0, y) to the
  // wrong sign); a zero is +0.0, with abs's gradient there, 0, as in PyTorch.
  return lazygrad::where(eq(0), Tensor::zeros_like(*this), maximum(neg()));
}
Tensor Tensor::trunc() const {
  if (!is_float(dtype())) return same_values(*this);
  // Values this large are integers already (and inf and NaN stay as they are); below it a round
  // trip through int64 truncates. Neither branch carries a gradient (the integer cast ends the
  // graph): PyTorch's zero gradient is tied on, and floor, ceil and round inherit it. A zero result
  // keeps x's sign (trunc(-0.3) is -0.0, and so are floor and ceil built on it): x * 0 is that
  // signed zero.
  double big = dtype() == kFloat64 ? 4503599627370496.0 : 8388608.0;
  Tensor i = to(kInt64).to(dtype());
  Tensor x = detach();
  return with_zero_gradient(lazygrad::where(abs().lt(big), lazygrad::where(i.eq(0), x * 0, i), x), *this);
}
Tensor Tensor::floor() const {
  if (!is_float(dtype())) return same_values(*this);
  Tensor t = trunc();
  return lazygrad::where(t.gt(*this), t - 1, t);
}
Tensor Tensor::ceil() const {
  if (!is_float(dtype())) return same_values(*this);
  Tensor t = trunc();
  return lazygrad::where(t.lt(*this), t + 1, t);
}

namespace {

// x ** y for float x and y of one shape, with C's special values; gradients: Tensor::pow.
Tensor pow_value(const Tensor& x, const Tensor& y) {
  DType dt = x.dtype();
  Tensor mag = (y * x.abs().log2()).exp2();
  // Negative bases (-0.0 and -inf too): integer exponents give a sign, others NaN for a finite base
  // and the magnitude for -0.0 and -inf (as C's pow does: pow(-0.0, -1) is -inf, pow(-inf, 0.5) inf).
  Tensor y_int = y.trunc().eq(y);
  Tensor y_odd = y_int.logical_and((y - (y * 0.5).trunc() * 2).abs().eq(1));
  Tensor finite_negative = x.lt(0).logical_and(x.isinf().logical_not());
  Tensor neg_result = lazygrad::where(y_int, lazygrad::where(y_odd, mag.neg(), mag),
                                      lazygrad::where(finite_negative, std::nan(""), mag));
  Tensor signed_zero = x.eq(0).logical_and(x.reciprocal().lt(0));
  Tensor r = lazygrad::where(x.lt(0).logical_or(signed_zero), neg_result, mag);
  // x**0 and (+-1)**y are 1 whatever the other operand is (C's pow agrees, but for (-1)**NaN). exp2(y *
  // log2|x|) gives that already, except where the product is 0 * inf or NaN: only there is the 1 put
  // in as a constant.
  Tensor l = x.abs().log2();
  auto not_finite = [](const Tensor& t) { return (t - t).ne(0); };
  // (-1)**NaN stays NaN (C's pow: only 1**NaN is 1), (-1)**inf is 1.
  Tensor unit = l.eq(0).logical_and(not_finite(y)).logical_and(x.eq(1).logical_or(y.eq(y)));
  Tensor special = y.eq(0).logical_and(not_finite(l)).logical_or(unit);
  return lazygrad::where(special, scalar_tensor(1, dt), r);
}

}  // namespace

Tensor Tensor::pow(const Tensor& e) const {
  check_broadcast(*this, e, "pow");
  DType dt = result_type(*this, e);
  if (!is_float(dt)) {
    // Integer powers through float64: exact while the result fits in 53 bits.
    Tensor r = to(kFloat64).pow(e.to(kFloat64));
    return lazygrad::where(r.lt(0), r - 0.5, r + 0.5).to(dt);
  }
  if (is_half(dt)) return to(kFloat32).pow(e.to(kFloat32)).to(dt);
  Shape shape = broadcast_shape(this->shape(), e.shape(), "pow");
  Tensor x = to(dt).expand(shape), y = e.to(dt).expand(shape);
  return with_gradient(pow_value(x, y), {x, y}, [](const Tensor& g, const std::vector<Tensor>& in) {
    // PyTorch's gradients (the chain through exp2(y * log2|x|) would give NaN at a zero base):
    // d/dx = y * x^(y-1), and 0 where y == 0; d/dy = x^y * ln(x), and 0 where x == 0 and y >= 0.
    const Tensor &b = in[0], &p = in[1];
    Tensor zero = Tensor::zeros_like(g);
    Tensor dx = lazygrad::where(p.eq(0), zero, g * (p * b.pow(p - 1)));
    Tensor dy = g * lazygrad::where(b.eq(0).logical_and(p.ge(0)), zero, b.pow(p) * b.log());
    return std::vector<Tensor>{dx, dy};
  });
}

Tensor Tensor::pow(Scalar e) const {
  DType dt = scalar_result_type(*this, e);
  if (dt != dtype()) return to(dt).pow(e);
  if (!e.is_float() || e.to_double() == std::floor(e.to_double())) {
    double v = e.to_double();
    require(is_float(dtype()) || v >= 0, "pow: integers to negative integer powers are not allowed");
    if (v >= 0 && v <= 64) {
      // Exponentiation by squaring: exact, and fuses into a few multiplies.
      auto n = static_cast<int64_t>(v);
      Tensor result = full_like(*this, 1), base = *this;
      bool first = true;
      while (n) {
        if (n & 1) result = first ? base : result * base, first = false;
        n >>= 1;
        if (n) base = base * base;
      }
      return first ? with_zero_gradient(full_like(*this, 1), *this) : result;  // x ** 0: gradient 0
    }
  }
  // PyTorch's own forms of these exponents (pow(-0.0, -0.5) is then -inf, pow(-inf, 0.5) NaN).
  if (e.to_double() == 0.5) return sqrt();
  if (e.to_double() == -0.5)  // with PyTorch's gradient, -0.5 * x ** -1.5 (-inf at -0.0 too)
    return with_gradient(rsqrt(), {*this}, [](const Tensor& g, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{g * in[0].pow(-1.5) * -0.5};
    });
  return pow(lift(*this, e));
}

// ---- operators ----
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator~(const Tensor& a) { return a.bitwise_not(); }
Tensor operator!(const Tensor& a) { return a.logical_not(); }
Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator+(const Tensor& a, Scalar b) { return a.add(b); }
Tensor operator+(Scalar a, const Tensor& b) { return lift(b, a).add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator-(const Tensor& a, Scalar b) { return a.sub(b); }
Tensor operator-(Scalar a, const Tensor& b) { return lift(b, a).sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator*(const Tensor& a, Scalar b) { return a.mul(b); }
Tensor operator*(Scalar a, const Tensor& b) { return lift(b, a).mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator/(const Tensor& a, Scalar b) { return a.div(b); }
Tensor operator/(Scalar a, const Tensor& b) { return lift(b, a).div(b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return a.remainder(b); }
Tensor operator%(const Tensor& a, Scalar b) { return a.remainder(b); }
Tensor operator%(Scalar a, const Tensor& b) { return lift(b, a).remainder(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<(const Tensor& a, Scalar b) { return a.lt(b); }
Tensor operator<(Scalar a, const Tensor& b) { return b.gt(a); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator<=(const Tensor& a, Scalar b) { return a.le(b); }
Tensor operator<=(Scalar a, const Tensor& b) { return b.ge(a); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>(const Tensor& a, Scalar b) { return a.gt(b); }
Tensor operator>(Scalar a, const Tensor& b) { return b.lt(a); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator>=(const Tensor& a, Scalar b) { return a.ge(b); }
Tensor operator>=(Scalar a, const Tensor& b) { return b.le(a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator==(const Tensor& a, Scalar b) { return a.eq(b); }
Tensor operator==(Scalar a, const Tensor& b) { return b.eq(a); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator!=(const Tensor& a, Scalar b) { return a.ne(b); }
Tensor operator!=(Scalar a, const Tensor& b) { return b.ne(a); }
Tensor operator&(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
Tensor operator&(const Tensor& a, Scalar b) { return a.bitwise_and(lift(a, b)); }
Tensor operator&(Scalar a, const Tensor& b) { return lift(b, a).bitwise_and(b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
Tensor operator|(const Tensor& a, Scalar b) { return a.bitwise_or(lift(a, b)); }
Tensor operator|(Scalar a, const Tensor& b) { return lift(b, a).bitwise_or(b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
Tensor operator^(const Tensor& a, Scalar b) { return a.bitwise_xor(lift(a, b)); }
Tensor operator^(Scalar a, const Tensor& b) { return lift(b, a).bitwise_xor(b); }
Tensor operator<<(const Tensor& a, const Tensor& b) { return a.bitwise_left_shift(b); }
Tensor operator<<(const Tensor& a, Scalar b) { return a.bitwise_left_shift(lift(a, b)); }
Tensor operator<<(Scalar a, const Tensor& b) { return lift(b, a).bitwise_left_shift(b); }
Tensor operator>>(const Tensor& a, const Tensor& b) { return a.bitwise_right_shift(b); }
Tensor operator>>(const Tensor& a, Scalar b) { return a.bitwise_right_shift(lift(a, b)); }
Tensor operator>>(Scalar a, const Tensor& b) { return lift(b, a).bitwise_right_shift(b); }

}  // namespace lazygrad
