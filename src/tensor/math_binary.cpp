// Binary elementwise math beyond the arithmetic primitives (fmod, copysign, logaddexp, isclose), and
// two functionals built on existing reductions (softmin, normalize). Composed from Tensor ops;
// autograd differentiates the composition.
#include <algorithm>
#include <numbers>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

void require_float(DType dt, const char* op) {
  require(is_float(dt), std::string(op) + ": not implemented for " + std::string(dtype_name(dt)) +
                            " tensors (floating point only, as in PyTorch)");
}

// The result type of a binary op as PyTorch promotes it (0-d tensors and scalars rank lower), read
// off the arithmetic op that already implements the rule: only the dtype of the lazy graph is used.
DType promoted(const Tensor& a, const Tensor& b) {
  if (a.dtype() == kBool && b.dtype() == kBool) return kBool;
  return a.sub(b.dtype() == kBool ? b.to(a.dtype()) : b).dtype();
}

// x < 0, or x is -0.0 (whose reciprocal is -inf).
Tensor sign_bit(const Tensor& x) {
  if (!is_float(x.dtype())) return x.lt(0);
  return x.lt(0).logical_or(x.eq(0).logical_and(x.reciprocal().lt(0)));
}

// log(e^a + e^b) (base e) or log2(2^a + 2^b): the larger plus log1p of the smaller's share, which
// neither overflows nor loses the smaller one. Equal infinities are that infinity (their difference
// would be NaN); at a = b each gets half the gradient, as in PyTorch.
Tensor log_add(const Tensor& self, const Tensor& other, bool base2, const char* op) {
  broadcast_shape(self.shape(), other.shape(), op);
  DType out = promoted(self, other);
  require_float(out, op);
  DType dt = is_half(out) ? kFloat32 : out;
  Tensor a = self.to(dt), b = other.to(dt);
  Tensor a_larger = a.ge(b), same_inf = a.eq(b).logical_and(a.isinf());
  Tensor larger = lazygrad::where(a_larger, a, b);
  Tensor gap =
      lazygrad::where(same_inf, scalar_tensor(0, dt), lazygrad::where(a_larger, b - a, a - b));  // <= 0
  Tensor share = base2 ? gap.exp2().log1p() * std::numbers::log2e : gap.exp().log1p();
  return (larger + share).to(out);
}

}  // namespace

Tensor Tensor::fmod(const Tensor& other) const {
  broadcast_shape(shape(), other.shape(), "fmod");
  DType out = promoted(*this, other);
  require(out != kBool, "fmod: not implemented for bool tensors");
  if (!is_float(out)) {
    // Python's % has the divisor's sign; where it differs from the dividend's, step back by one
    // divisor. A zero divisor is an Error when the kernel runs, as remainder's is.
    Tensor r = to(out).remainder(other.to(out));
    Tensor differs = r.ne(0).logical_and(r.lt(0).ne(lt(0)));
    return lazygrad::where(differs, r - other.to(out), r);
  }
  // a - trunc(a / b) b, in float64: for 32- and 16-bit floats, where the quotient of two float32
  // values and the product q b are exact enough that the result is C's exact fmod while |a / b| <
  // 2^29 (float32 arithmetic would be off by a whole b where a / b rounds across an integer).
  // trunc has a zero gradient, so d/da = 1 and d/db = -trunc(a / b), as PyTorch's.
  // The operands are first rounded to the result type, as PyTorch computes in it. A finite
  // dividend over an infinite divisor is itself (the formula would give 0 * inf).
  Tensor a = to(out).to(kFloat64), b = other.to(out).to(kFloat64);
  // A zero result has a's sign, as C's fmod: a negative a takes -(q b - a), whose zero is -0.0
  // (a - q b is +0.0 either way), the same value and gradient elsewhere.
  Tensor qb = (a / b).trunc() * b;
  Tensor r = lazygrad::where(sign_bit(a), -(qb - a), a - qb);
  return lazygrad::where(b.isinf().logical_and(a.isinf().logical_not()), a, r).to(out);
}

Tensor Tensor::fmod(Scalar other) const {
  return fmod(scalar_tensor(other, scalar_result_type(*this, other)));
}

Tensor Tensor::copysign(const Tensor& other) const {
  // |self| with other's sign bit (-0.0 counts as negative). Integers give float32. The gradient
  // reaches self only (sign(self) sign(result), 0 at 0: abs's), as in PyTorch.
  broadcast_shape(shape(), other.shape(), "copysign");
  DType out = promoted(*this, other);
  if (!is_float(out)) out = kFloat32;
  Tensor mag = to(out).abs();
  return lazygrad::where(sign_bit(other), -mag, mag);
}

Tensor Tensor::copysign(Scalar other) const {
  return copysign(scalar_tensor(
      other, is_float(scalar_result_type(*this, other)) ? scalar_result_type(*this, other) : kFloat32));
}

Tensor Tensor::logaddexp(const Tensor& other) const { return log_add(*this, other, false, "logaddexp"); }
Tensor Tensor::logaddexp2(const Tensor& other) const { return log_add(*this, other, true, "logaddexp2"); }

Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  require(dtype() == other.dtype(), "isclose: expected both inputs to have the same dtype, got " +
                                        std::string(dtype_name(dtype())) + " and " +
                                        std::string(dtype_name(other.dtype())));
  require(rtol >= 0, "isclose: rtol must be greater than or equal to zero, got " + std::to_string(rtol));
  require(atol >= 0, "isclose: atol must be greater than or equal to zero, got " + std::to_string(atol));
  broadcast_shape(shape(), other.shape(), "isclose");
  // Equal values (infinities of one sign included) are close; otherwise a finite difference within
  // atol + rtol |other|, computed in float (integers in float64, so that large ones stay exact).
  Tensor close = eq(other);
  if (dtype() == kBool) return close;
  if (equal_nan && is_float(dtype())) close = close.logical_or(isnan().logical_and(other.isnan()));
  DType dt = is_float(dtype()) && !is_half(dtype()) ? dtype() : is_half(dtype()) ? kFloat32 : kFloat64;
  Tensor a = to(dt), b = other.to(dt);
  Tensor diff = (a - b).abs();
  Tensor allowed = b.abs() * rtol + atol;
  return close.logical_or(diff.isinf().logical_not().logical_and(diff.le(allowed)));
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return isclose(other, rtol, atol, equal_nan).all().item<bool>();
}

Tensor Tensor::softmin(int64_t dim) const {
  normalize_axis(dim, this->dim(), "softmin");  // so that a bad dim is reported as softmin's
  return neg().softmax(dim);
}

Tensor Tensor::normalize(double p, int64_t dim, double eps) const {
  // self / max(||self||_p, eps) along dim, the norm broadcast back over dim.
  require(is_float(dtype()), "normalize: expected a floating point tensor, got " +
                                 std::string(dtype_name(dtype())) + " of shape " + shape_str(shape()));
  normalize_axis(dim, this->dim(), "normalize");
  return *this / norm(p, dim, true).clamp(Scalar(eps));
}

}  // namespace lazygrad
