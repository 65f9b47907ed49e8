// Inverse trigonometric and the hyperbolic functions, and log10, composed from existing Tensor ops
// (autograd differentiates the composition). Everything rests on one atan: Cephes' atan.c
// (S. L. Moshier), a reduction of |x| to [0, 0.66] by atan(x) = pi/2 - atan(1/x) and
// pi/4 + atan((x - 1) / (x + 1)), then a rational function good to about 1e-16 relative; evaluated
// in the input's own float type it is within a few ulp in float32 too. The others are written in
// forms that keep full relative accuracy where the textbook formula cancels (acos near 1, asinh
// near 0, acosh near 1), and outside their domain they give NaN because a sqrt or log1p does.
// As in math.cpp, a branch that a `where` does not select is fed a harmless value, so that its
// zero gradient times an infinite local derivative does not turn into NaN.
#include <algorithm>
#include <numbers>

#include "tensor/tensor_impl.h"
#include "tensor/polynomial.h"

namespace lazygrad {

namespace {

// The float type an op computes in: float16/bfloat16 in float32 (rounded back at the end), other
// floats as themselves, integers and bool as float32 (PyTorch's result type).
DType compute_type(DType dt) { return dt == kFloat64 ? kFloat64 : kFloat32; }
DType result_type(DType dt) { return is_float(dt) ? dt : kFloat32; }

Tensor constant(double v, DType dt) { return scalar_tensor(v, dt); }


// |x| as a `where`, so that its derivative at 0 is +1 rather than abs's 0: the odd functions
// below take their sign back with another `where`, and their slope at 0 must survive.
Tensor magnitude(const Tensor& x) { return lazygrad::where(x.lt(0), -x, x); }
Tensor with_sign_of(const Tensor& r, const Tensor& x) { return lazygrad::where(x.lt(0), -r, r); }

// atan of a >= 0 (or NaN) in a's float type.
Tensor atan_nonnegative(const Tensor& a) {
  DType dt = a.dtype();
  constexpr double kTan3PiOver8 = 2.41421356237309504880, kMoreBits = 6.123233995736765886130e-17;
  Tensor far = a.gt(kTan3PiOver8), mid = a.gt(0.66).logical_and(far.logical_not());
  // Each reduction on an input kept inside its own range (1/0 and (a-1)/(a+1) at the other branch
  // would have an infinite or useless derivative there).
  Tensor far_in = lazygrad::where(far, a, constant(4, dt)), mid_in = lazygrad::where(mid, a, constant(1, dt));
  Tensor x = lazygrad::where(far, -far_in.reciprocal(), lazygrad::where(mid, (mid_in - 1) / (mid_in + 1), a));
  Tensor z = x * x;
  Tensor p =
      z *
      polynomial(z, {-8.750608600031904122785E-1, -1.615753718733365076637E1, -7.500855792314704667340E1,
                     -1.228866684490136173410E2, -6.485021904942025371773E1}) /
      polynomial(z,
                 {2.485846490142306297962E1, 1.650270098316988542046E2, 4.328810604912902668951E2,
                  4.853903996359136964868E2, 1.945506571482613964425E2},
                 true);
  Tensor small = x * p + x;
  Tensor base = lazygrad::where(
      far, constant(std::numbers::pi / 2 + kMoreBits, dt),
      lazygrad::where(mid, constant(std::numbers::pi / 4 + kMoreBits / 2, dt), constant(0, dt)));
  return base + small;
}

Tensor atan_of(const Tensor& self) {
  Tensor x = self.to(compute_type(self.dtype()));
  return with_sign_of(atan_nonnegative(magnitude(x)), x);
}

// x < 0, or x is -0.0 (whose reciprocal is -inf): atan2 tells the two zeros apart, as C's does.
Tensor sign_bit(const Tensor& x) { return x.lt(0).logical_or(x.eq(0).logical_and(x.reciprocal().lt(0))); }

}  // namespace

Tensor Tensor::atan() const { return atan_of(*this).to(result_type(dtype())); }

Tensor Tensor::atan2(const Tensor& other) const {
  for (size_t i = 1; i <= std::min(shape().size(), other.shape().size()); i++) {
    int64_t a = shape()[shape().size() - i], b = other.shape()[other.shape().size() - i];
    require(a == b || a == 1 || b == 1, "atan2: shapes " + shape_str(shape()) + " and " +
                                            shape_str(other.shape()) + " cannot be broadcast");
  }
  DType out = result_type(promote_types(dtype(), other.dtype()));
  DType dt = compute_type(out);
  Tensor y = to(dt), x = other.to(dt);
  // The angle of (x, y) from atan(small / large) in [0, pi/4], reflected into its octant: no
  // quotient above 1, so no overflow, and (0, 0) and (inf, inf) are handled apart (0 and pi/4 there,
  // as C's atan2), each division seeing harmless operands where its result is not taken.
  Tensor ax = magnitude(x), ay = magnitude(y);
  Tensor steep = ay.gt(ax), both_inf = ax.isinf().logical_and(ay.isinf());
  Tensor one = scalar_tensor(1, dt);
  Tensor num = lazygrad::where(both_inf, one, lazygrad::where(steep, ax, ay));
  Tensor den = lazygrad::where(steep, ay, ax);
  den = lazygrad::where(both_inf.logical_or(den.eq(0)), one, den);
  Tensor r = atan_nonnegative(num / den);
  r = lazygrad::where(steep, std::numbers::pi / 2 - r, r);
  r = lazygrad::where(sign_bit(x), std::numbers::pi - r, r);
  return lazygrad::where(sign_bit(y), -r, r).to(out);
}

Tensor Tensor::asin() const {
  // asin(x) = atan(x / sqrt((1 - x)(1 + x))): 1 - x is exact near 1, and atan of the large quotient
  // there is pi/2 - atan(small), accurate. |x| > 1 makes the product negative: sqrt gives NaN.
  Tensor x = to(compute_type(dtype()));
  return atan_of(x / ((1 - x) * (x + 1)).sqrt()).to(result_type(dtype()));
}

Tensor Tensor::acos() const {
  // acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): small near x = 1 without pi/2 - asin(x)'s
  // cancellation; x = -1 gives 2 atan(inf) = pi. Outside [-1, 1] the quotient is negative: NaN.
  Tensor x = to(compute_type(dtype()));
  return (atan_nonnegative(((1 - x) / (x + 1)).sqrt()) * 2).to(result_type(dtype()));
}

Tensor Tensor::sinh() const {
  // With t = expm1(|x|): sinh|x| = (t + t / (t + 1)) / 2, exact near 0 (no e^x - e^-x cancellation).
  // From |x| = 20 on, e^-|x| is below rounding: sinh|x| = e^(|x| - ln 2), which stays finite up to
  // the largest sinh rather than overflowing where e^|x| does.
  Tensor x = to(compute_type(dtype()));
  DType dt = x.dtype();
  Tensor a = magnitude(x), big = a.ge(20);
  Tensor t = lazygrad::where(big, constant(1, dt), a).expm1();
  Tensor near = (t + t / (t + 1)) * 0.5;
  Tensor far = (lazygrad::where(big, a, constant(20, dt)) - std::numbers::ln2).exp();
  return with_sign_of(lazygrad::where(big, far, near), x).to(result_type(dtype()));
}

Tensor Tensor::cosh() const {
  // cosh x = h + 1 / (4h) with h = e^(|x| - ln 2): two positive terms, no cancellation, finite up to
  // the largest cosh. |x| is a `where`, so the slope at 0 is h - 1/(4h) = 0 exactly.
  Tensor x = to(compute_type(dtype()));
  Tensor h = (magnitude(x) - std::numbers::ln2).exp();
  return (h + (h * 4).reciprocal()).to(result_type(dtype()));
}

Tensor Tensor::asinh() const {
  // asinh|x| = log1p(a + a^2 / (1 + sqrt(1 + a^2))), accurate near 0; beyond 2^28, where a^2 would
  // lose 1 + a^2's 1 (and overflow float32 later), log(a) + ln 2.
  Tensor x = to(compute_type(dtype()));
  DType dt = x.dtype();
  Tensor a = magnitude(x), big = a.gt(268435456.0);
  Tensor s = lazygrad::where(big, constant(1, dt), a);
  Tensor near = (s + s * s / ((s * s + 1).sqrt() + 1)).log1p();
  Tensor far = lazygrad::where(big, a, constant(2, dt)).log() + std::numbers::ln2;
  return with_sign_of(lazygrad::where(big, far, near), x).to(result_type(dtype()));
}

Tensor Tensor::acosh() const {
  // With t = x - 1 (exact near 1): acosh x = log1p(t + sqrt(2t + t^2)). Below 1, 2t + t^2 < 0 and
  // sqrt gives NaN. Beyond 2^28, log(x) + ln 2.
  Tensor x = to(compute_type(dtype()));
  DType dt = x.dtype();
  Tensor big = x.gt(268435456.0);
  Tensor t = lazygrad::where(big, constant(1, dt), x) - 1;
  Tensor near = (t + (t * 2 + t * t).sqrt()).log1p();
  Tensor far = lazygrad::where(big, x, constant(2, dt)).log() + std::numbers::ln2;
  return lazygrad::where(big, far, near).to(result_type(dtype()));
}

Tensor Tensor::atanh() const {
  // atanh|x| = log1p(2a / (1 - a)) / 2: exact near 0; a = 1 gives inf, a > 1 log1p(< -1) = NaN.
  Tensor x = to(compute_type(dtype()));
  Tensor a = magnitude(x);
  return with_sign_of((a * 2 / (1 - a)).log1p() * 0.5, x).to(result_type(dtype()));
}

Tensor Tensor::log10() const {
  // log2 is the primitive; one rounding more than PyTorch's log10.
  Tensor x = to(compute_type(dtype()));
  return (x.log2() * (std::numbers::ln2 / std::numbers::ln10)).to(result_type(dtype()));
}

}  // namespace lazygrad
