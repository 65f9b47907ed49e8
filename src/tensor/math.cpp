// Elementwise math and activations, composed from existing Tensor ops; autograd differentiates the
// composition. Two rules shape every function here:
//  - Numerically stable forms: no exp that can overflow into a finite result's path, expm1/log1p
//    where 1 + tiny would round away the answer.
//  - A `where` both selects the value and routes the gradient, so branches follow PyTorch's
//    derivative at the break points (relu6' is 0 at 0 and 6, hardswish' is -0.5 at -3, ...). A
//    branch the `where` does not select still gets a zero gradient times its local derivative, so
//    its input is replaced by a harmless value there ("safe" inputs below): 0 * inf would be NaN.
#include <cmath>
#include <limits>
#include <numbers>

#include "tensor/tensor_impl.h"
#include "tensor/polynomial.h"

namespace lazygrad {

namespace {

Tensor as_float(const Tensor& t) { return is_float(t.dtype()) ? t : t.to(kFloat32); }

Tensor constant(Scalar v, DType dt) { return scalar_tensor(v, dt); }

void require_float(const Tensor& t, const char* op) {
  require(is_float(t.dtype()), std::string(op) + ": not implemented for " + std::string(dtype_name(t.dtype())) +
                                   " tensors (floating point only, as in PyTorch)");
}

void require_broadcastable(const Shape& a, const Shape& b, const char* op) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); i++) {
    int64_t x = a[a.size() - i], y = b[b.size() - i];
    require(x == y || x == 1 || y == 1,
            std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast");
  }
}


// erf and erfc from Cephes (ndtr.c, S. L. Moshier): a rational function for |x| < 1, and erfc for
// |x| >= 1 as exp(-x^2) times a rational function of |x|. About 1e-16 relative in float64 (a few
// ulp in float32); the derivative that autograd takes of it matches PyTorch's 2/sqrt(pi) exp(-x^2)
// as closely (checked over [-30, 30]).
Tensor erf_below_one(const Tensor& x) {
  Tensor z = x * x;
  return x * polynomial(z, {9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
                            7.00332514112805075473E3, 5.55923013010394962768E4}) /
         polynomial(z, {3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
                        2.26290000613890934246E4, 4.92673942608635921086E4}, true);
}

Tensor erfc_from_one(const Tensor& a) {
  // erfc(27) underflows float64; capping there keeps the polynomials (degree 8) finite.
  Tensor x = lazygrad::where(a.gt(27), constant(27, a.dtype()), a);
  Tensor mid = polynomial(x, {2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
                              4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
                              9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2}) /
               polynomial(x, {1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
                              9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
                              1.65666309194161350182E3, 5.57535340817727675546E2}, true);
  Tensor far = polynomial(x, {5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
                              6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0}) /
               polynomial(x, {2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
                              1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0}, true);
  return (-(x * x)).exp() * lazygrad::where(x.lt(8), mid, far);
}

// The pieces erf and erfc share: which elements take the |x| < 1 branch, that branch's value,
// and erfc(|x|) for the others, each computed on inputs kept inside its own branch's range.
struct ErfParts {
  Tensor below_one, negative, small, tail;
};
ErfParts erf_parts(const Tensor& x) {
  ErfParts p;
  p.below_one = x.abs().lt(1);
  p.negative = x.lt(0);
  Tensor zero = constant(0, x.dtype()), one = constant(1, x.dtype());
  p.small = erf_below_one(lazygrad::where(p.below_one, x, zero));
  p.tail = erfc_from_one(lazygrad::where(p.below_one, one, lazygrad::where(p.negative, -x, x)));
  return p;
}

// hardtanh's bound in the input's dtype: PyTorch converts min_val/max_val to it (ints truncate).
Tensor bound(double v, DType dt) {
  return is_float(dt) ? constant(v, dt) : constant(static_cast<int64_t>(v), dt);
}

}  // namespace

// ---- math ----

Tensor Tensor::rsqrt() const {
  if (is_half(dtype())) return to(kFloat32).rsqrt().to(dtype());
  return as_float(*this).sqrt().reciprocal();
}

Tensor Tensor::tan() const {
  // tan has period pi: x is reduced to r = x - k pi with pi in three parts (Cody-Waite), so that k pi
  // is subtracted without rounding while |x| < 2^26 pi. Then tan(r) = sin(r) / cos(r) with
  // cos(r) = sin(pi/2 - |r|) and pi/2 in two parts: exact near the poles, where cos(r) is tiny and
  // a rounded pi/2 would be most of it. In float64, whatever the input type (the result is rounded
  // back), because sin and cos of the reduced argument must be far more exact than the result.
  Tensor x = as_float(*this);
  Tensor xd = x.to(kFloat64);
  Tensor k = (xd * std::numbers::inv_pi).round();
  Tensor r = ((xd - k * 3.1415926814079285) - k * -2.781813535079891e-08) - k * 1.2246467991473532e-16;
  Tensor magnitude = lazygrad::where(r.ge(0), r, -r);
  Tensor cos_r = ((1.5707963267948966 - magnitude) + 6.123233995736766e-17).sin();
  return (r.sin() / cos_r).to(x.dtype());
}

Tensor Tensor::sigmoid() const {
  if (is_half(dtype())) return to(kFloat32).sigmoid().to(dtype());
  // exp of -|x| only, so nothing overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below.
  // -|x| is spelled with where so that its derivative at 0 is -1, not abs's 0.
  Tensor x = as_float(*this);
  Tensor positive = x.ge(0);
  Tensor e = lazygrad::where(positive, -x, x).exp();
  Tensor r = (e + 1).reciprocal();
  return lazygrad::where(positive, r, e * r);
}

Tensor Tensor::tanh() const {
  if (is_half(dtype())) return to(kFloat32).tanh().to(dtype());
  // tanh(|x|) = -m / (2 + m) with m = expm1(-2|x|): no overflow, and full relative accuracy near 0
  // where (1 - e) / (1 + e) would cancel.
  Tensor x = as_float(*this);
  Tensor positive = x.ge(0);
  Tensor m = lazygrad::where(positive, x * -2, x * 2).expm1();
  Tensor t = -m / (m + 2);
  return lazygrad::where(positive, t, -t);
}

Tensor Tensor::expm1() const {
  if (is_half(dtype())) return to(kFloat32).expm1().to(dtype());
  // Near 0, Kahan's trick: with u = exp(x) rounded, (u - 1) * x / log(u) is exact to a few ulp,
  // because log(u) carries the same rounding as u. Away from 0, exp(x) - 1 loses nothing (and its
  // gradient, exp(x), is PyTorch's, overflow to inf included).
  Tensor x = as_float(*this);
  Tensor u = x.exp();
  Tensor tiny = u.eq(1), near = x.abs().lt(0.5).logical_and(tiny.logical_not());
  Tensor safe = lazygrad::where(near, x, constant(0.25, x.dtype()));
  Tensor us = safe.exp();
  Tensor kahan = (us - 1) * (safe / us.log());
  return lazygrad::where(tiny, x, lazygrad::where(near, kahan, u - 1));
}

Tensor Tensor::log1p() const {
  if (is_half(dtype())) return to(kFloat32).log1p().to(dtype());
  // Near 0, Goldberg's trick: with u = 1 + x rounded, log(u) * x / (u - 1) corrects for the
  // rounding of u. Away from 0, log(1 + x) loses nothing.
  Tensor x = as_float(*this);
  Tensor u = x + 1;
  Tensor tiny = u.eq(1), near = x.abs().lt(0.5).logical_and(tiny.logical_not());
  Tensor safe = lazygrad::where(near, x, constant(0.25, x.dtype()));
  Tensor us = safe + 1;
  Tensor goldberg = us.log() * (safe / (us - 1));
  return lazygrad::where(tiny, x, lazygrad::where(near, goldberg, u.log()));
}

Tensor Tensor::erf() const {
  if (is_half(dtype())) return to(kFloat32).erf().to(dtype());
  Tensor x = as_float(*this);
  ErfParts p = erf_parts(x);
  Tensor big = 1 - p.tail;
  return lazygrad::where(p.below_one, p.small, lazygrad::where(p.negative, -big, big));
}

Tensor Tensor::erfc() const {
  if (is_half(dtype())) return to(kFloat32).erfc().to(dtype());
  Tensor x = as_float(*this);
  ErfParts p = erf_parts(x);
  return lazygrad::where(p.below_one, 1 - p.small, lazygrad::where(p.negative, 2 - p.tail, p.tail));
}

Tensor Tensor::sign() const {
  if (dtype() == kBool) return clone();
  // NaN compares false both ways and gives 0, as torch.sign does (1.13). A zero gradient, as in
  // PyTorch (the comparisons themselves end the graph).
  Tensor positive = gt(0).to(dtype());
  return with_zero_gradient(is_unsigned(dtype()) ? positive : positive - lt(0).to(dtype()), *this);
}

Tensor Tensor::square() const {
  if (dtype() == kBool) return to(kInt64) * to(kInt64);  // PyTorch: bool squares to int64
  return *this * *this;
}

Tensor Tensor::round() const {
  require(dtype() != kBool, "round: not implemented for bool tensors");
  if (!is_float(dtype())) return clone();
  // Half to even, like torch.round: floor, then up when the fraction is above one half, or exactly
  // one half and the floor is odd. x - floor(x) is exact below 2^mantissa; above it x is an integer.
  Tensor f = floor();
  Tensor fraction = *this - f;
  Tensor odd = (f - (f * 0.5).floor() * 2).eq(1);
  Tensor up = fraction.gt(0.5).logical_or(fraction.eq(0.5).logical_and(odd));
  Tensor r = lazygrad::where(up, f + 1, f);
  // A zero result keeps x's sign (round(-0.3) is -0.0), and the gradient is 0 everywhere: the
  // x * 0 branch has derivative 0, and x itself (|x| past 2^mantissa) is detached.
  r = lazygrad::where(r.eq(0), *this * 0, r);
  double big = dtype() == kFloat64 ? 4503599627370496.0 : 8388608.0;
  return lazygrad::where(abs().lt(big), r, detach());
}

Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  require(min || max, "clamp: at least one of 'min' or 'max' must not be None");
  std::optional<Tensor> lo, hi;
  if (min) lo = scalar_tensor(*min, scalar_result_type(*this, *min));
  if (max) hi = scalar_tensor(*max, scalar_result_type(*this, *max));
  return clamp(lo, hi);
}

Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  require(min || max, "clamp: at least one of 'min' or 'max' must not be None");
  if (min) require_broadcastable(shape(), min->shape(), "clamp");
  if (max) require_broadcastable(shape(), max->shape(), "clamp");
  if (min && max) require_broadcastable(min->shape(), max->shape(), "clamp");
  // The value is min(max(x, lo), hi) with NaN from any operand (PyTorch's tensor clamp); `where`
  // routes the gradient by PyTorch's masks: x where lo <= x <= hi, lo where x < lo < hi, hi where
  // x > hi or hi < lo. Elsewhere (a NaN, or lo == hi above x) nobody gets one: the value detached.
  Tensor value = *this;
  if (min) value = value.maximum(*min);
  if (max) value = value.minimum(*max);
  DType dt = value.dtype();
  Tensor x = to(dt), result = value.detach();
  Tensor always = Tensor::full({}, true, kBool);
  std::optional<Tensor> lo, hi;
  if (min) lo = min->to(dt);
  if (max) hi = max->to(dt);
  if (lo) result = lazygrad::where(x.lt(*lo).logical_and(hi ? lo->lt(*hi) : always), *lo, result);
  if (hi) {
    // hi < lo sends the gradient to hi whatever x is, but a NaN x still gives NaN: x * 0 + hi.
    Tensor hi_value = is_float(dt) ? lazygrad::where(x.isnan(), x * 0 + *hi, *hi) : *hi;
    result = lazygrad::where(x.gt(*hi).logical_or(lo ? hi->lt(*lo) : always.logical_not()), hi_value, result);
  }
  Tensor inside = (lo ? x.ge(*lo) : always).logical_and(hi ? x.le(*hi) : always);
  return lazygrad::where(inside, x, result);
}

Tensor Tensor::lerp(const Tensor& end, Scalar weight) const {
  require_float(*this, "lerp");
  require(end.dtype() == dtype(), "lerp: expected dtype " + std::string(dtype_name(dtype())) + " for `end` but got dtype " +
                                      std::string(dtype_name(end.dtype())));
  require_broadcastable(shape(), end.shape(), "lerp");
  if (is_half(dtype())) return to(kFloat32).lerp(end.to(kFloat32), weight).to(dtype());
  // PyTorch's two forms, each exact at its end: start + w (end - start) for |w| < 0.5, else
  // end + (end - start)(w - 1).
  double w = weight.to_double();
  Tensor diff = end - *this;
  return std::abs(w) < 0.5 ? *this + diff * w : end + diff * (w - 1);
}

Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const {
  require_float(*this, "lerp");
  require(end.dtype() == dtype(), "lerp: expected dtype " + std::string(dtype_name(dtype())) + " for `end` but got dtype " +
                                      std::string(dtype_name(end.dtype())));
  require(weight.dtype() == dtype(), "lerp: expected dtype " + std::string(dtype_name(dtype())) +
                                         " for `weight` but got dtype " + std::string(dtype_name(weight.dtype())));
  require_broadcastable(shape(), end.shape(), "lerp");
  require_broadcastable(shape(), weight.shape(), "lerp");
  require_broadcastable(end.shape(), weight.shape(), "lerp");
  if (is_half(dtype())) return to(kFloat32).lerp(end.to(kFloat32), weight.to(kFloat32)).to(dtype());
  // The two forms as one: from (start, w) or from (end, w - 1), so that no product of a masked-out
  // branch (0 * an infinite end - start) reaches the gradient.
  Tensor small = weight.abs().lt(0.5);
  Tensor diff = end - *this;
  return lazygrad::where(small, *this, end) + diff * lazygrad::where(small, weight, weight - 1);
}

Tensor Tensor::isnan() const {
  if (!is_float(dtype())) return Tensor::full(shape(), false, kBool, device());
  return ne(*this);
}

Tensor Tensor::isinf(bool detect_positive, bool detect_negative) const {
  double inf = std::numeric_limits<double>::infinity();
  if (!is_float(dtype()) || (!detect_positive && !detect_negative))
    return Tensor::full(shape(), false, kBool, device());
  if (!detect_negative) return eq(inf);
  if (!detect_positive) return eq(-inf);
  return abs().eq(inf);
}

Tensor Tensor::nan_to_num(double nan, std::optional<double> posinf, std::optional<double> neginf) const {
  if (!is_float(dtype())) return clone();
  // The defaults are the dtype's largest finite values. The gradient passes where x is finite.
  double largest = dtype() == kFloat16    ? 65504.0
                   : dtype() == kBFloat16 ? 3.3895313892515355e38
                   : dtype() == kFloat32  ? std::numeric_limits<float>::max()
                                          : std::numeric_limits<double>::max();
  DType dt = dtype();
  double inf = std::numeric_limits<double>::infinity();
  Tensor r = lazygrad::where(eq(inf), constant(posinf.value_or(largest), dt), *this);
  r = lazygrad::where(eq(-inf), constant(neginf.value_or(-largest), dt), r);
  return lazygrad::where(isnan(), constant(nan, dt), r);
}

// ---- activations ----

Tensor Tensor::hardtanh(double min_val, double max_val) const {
  require(dtype() != kBool, "hardtanh: bool inputs are not supported");
  require(!is_unsigned(dtype()) || (min_val >= 0 && max_val >= 0),
          "hardtanh: cannot do hardtanh on an unsigned type with negative limits");
  // PyTorch's gradient is 0 at both limits (strict inequalities) and passes NaN through. With
  // min_val > max_val the value is max_val everywhere, as clamp gives.
  Tensor lo = bound(std::min(min_val, max_val), dtype()), hi = bound(max_val, dtype());
  return lazygrad::where(le(lo), lo, lazygrad::where(ge(hi), hi, *this));
}

Tensor Tensor::relu6() const {
  require(dtype() != kBool, "relu6: bool inputs are not supported");
  return hardtanh(0, 6);
}

Tensor Tensor::leaky_relu(double negative_slope) const {
  require_float(*this, "leaky_relu");
  return lazygrad::where(gt(0), *this, *this * negative_slope);
}

Tensor Tensor::elu(double alpha) const {
  if (is_half(dtype())) return to(kFloat32).elu(alpha).to(dtype());
  require_float(*this, "elu");
  // x <= 0 takes alpha * expm1(x) (gradient alpha at 0, like PyTorch); expm1 sees only x <= 0.
  Tensor negative = le(0);
  Tensor x = lazygrad::where(negative, *this, constant(0, dtype()));
  return lazygrad::where(negative, x.expm1() * alpha, *this);
}

Tensor Tensor::selu() const {
  if (is_half(dtype())) return to(kFloat32).selu().to(dtype());
  require_float(*this, "selu");
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  Tensor negative = le(0);
  Tensor x = lazygrad::where(negative, *this, constant(0, dtype()));
  return lazygrad::where(negative, x.expm1() * (alpha * scale), *this * scale);
}

Tensor Tensor::gelu(const std::string& approximate) const {
  if (is_half(dtype())) return to(kFloat32).gelu(approximate).to(dtype());
  require_float(*this, "gelu");
  require(approximate == "none" || approximate == "tanh",
          "gelu: approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  if (approximate == "tanh") {
    // 0.5 (1 + tanh(z)) is sigmoid(2z): the same function, without 1 + tanh cancelling for x < 0.
    Tensor inner = (*this + *this * *this * *this * 0.044715) * (std::numbers::sqrt2 * std::numbers::inv_sqrtpi * 2);
    return *this * inner.sigmoid();
  }
  // x * Phi(x) with Phi(x) = erfc(-x / sqrt(2)) / 2: accurate in the left tail, where 1 + erf cancels.
  return *this * (*this * -(std::numbers::sqrt2 / 2)).erfc() * 0.5;
}

Tensor Tensor::silu() const {
  if (is_half(dtype())) return to(kFloat32).silu().to(dtype());
  require_float(*this, "silu");
  return *this * sigmoid();
}

Tensor Tensor::softplus(double beta, double threshold) const {
  if (is_half(dtype())) return to(kFloat32).softplus(beta, threshold).to(dtype());
  require_float(*this, "softplus");
  // log1p(exp(beta x)) / beta, and x itself once beta x > threshold (PyTorch's cut-off); the
  // exp sees only the inputs at or below it.
  Tensor scaled = *this * beta;
  Tensor linear = scaled.gt(threshold);
  Tensor safe = lazygrad::where(linear, constant(0, dtype()), scaled);
  return lazygrad::where(linear, *this, safe.exp().log1p() / beta);
}

Tensor Tensor::mish() const {
  if (is_half(dtype())) return to(kFloat32).mish().to(dtype());
  require_float(*this, "mish");
  return *this * softplus().tanh();
}

Tensor Tensor::softsign() const {
  if (is_half(dtype())) return to(kFloat32).softsign().to(dtype());
  require(dtype() != kBool, "softsign: bool inputs are not supported");
  return *this / (abs() + 1);
}

Tensor Tensor::hardswish() const {
  if (is_half(dtype())) return to(kFloat32).hardswish().to(dtype());
  require_float(*this, "hardswish");
  // PyTorch's gradient: 0 below -3, x / 3 + 0.5 on [-3, 3] (both ends included), 1 above. Below
  // -3 the value is x * 0: -0.0 for finite x and NaN at -inf, as x * relu6(x + 3) / 6 gives.
  Tensor inside = ge(-3).logical_and(le(3));
  Tensor x = lazygrad::where(inside, *this, constant(0, dtype()));
  return lazygrad::where(lt(-3), *this * 0, lazygrad::where(inside, x * (x + 3) / 6, *this));
}

Tensor Tensor::hardsigmoid() const {
  if (is_half(dtype())) return to(kFloat32).hardsigmoid().to(dtype());
  require_float(*this, "hardsigmoid");
  // PyTorch's gradient is 1/6 strictly inside (-3, 3) and 0 elsewhere, NaN included: x * 0 gives
  // NaN its NaN value with a zero gradient.
  Tensor inside = gt(-3).logical_and(lt(3));
  Tensor outside = lazygrad::where(le(-3), constant(0, dtype()), lazygrad::where(ge(3), constant(1, dtype()), *this * 0));
  return lazygrad::where(inside, (*this + 3) / 6, outside);
}

}  // namespace lazygrad
