// Reductions beyond sum/prod/max/min/mean, and the running (cumulative) ones, composed from those
// and from views; autograd differentiates the composition.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

void require_float(const Tensor& t, const char* op, const char* what = "floating point") {
  require(is_float(t.dtype()), std::string(op) + ": expected a " + what + " tensor, got " +
                                   std::string(dtype_name(t.dtype())) + " of shape " + shape_str(t.shape()));
}

// Statistics of 16-bit floats are computed in float32: their reductions are stored between
// kernels, and in 16 bits they would lose what PyTorch keeps (it accumulates in float32 too).
DType compute_type(DType dt) { return dt == kFloat64 ? kFloat64 : kFloat32; }

// The number of elements reduced over `axes`.
int64_t reduced_count(const Tensor& x, const Axes& axes, const char* op) {
  int64_t count = 1;
  for (int64_t a : normalize_axes(axes, x.dim(), op))
    if (x.dim() > 0) count *= x.shape()[a];
  return count;
}

bool reduces_empty_axis(const Tensor& x, const Axes& axes, const char* op) {
  for (int64_t a : normalize_axes(axes, x.dim(), op))
    if (x.dim() > 0 && x.shape()[a] == 0) return true;
  return false;
}

// sqrt whose gradient is 0 where its argument is 0 (PyTorch's std and 2-norm mask it so), not inf.
Tensor sqrt_zero_grad_at_zero(const Tensor& s) {
  Tensor zero = s.eq(0);
  Tensor safe = lazygrad::where(zero, scalar_tensor(1, s.dtype()), s);
  return lazygrad::where(zero, scalar_tensor(0, s.dtype()), safe.sqrt());
}

// base ** e for base > 0: repeated multiplication for a small whole e (exact), else exp(e log(base)).
// Not Tensor::pow, whose special case for base 1 would cut the gradient there.
Tensor positive_pow(const Tensor& base, double e) {
  if (e == std::floor(e) && e >= 0 && e <= 64) return base.pow(e);
  return (base.log() * e).exp();
}

// argmax/argmin: the first index along the axis whose value is the extreme one (or NaN).
Tensor arg_extreme(const Tensor& x, std::optional<int64_t> axis, bool keepdim, bool largest, const char* op) {
  require(x.dtype() != kBool, std::string(op) + ": not implemented for bool tensors");
  Tensor t = x;
  int64_t a = 0;
  if (axis) {
    a = normalize_axis(*axis, x.dim(), op);
    if (x.dim() == 0) t = x.reshape({1});
  } else {
    t = x.reshape({x.numel()});
  }
  int64_t n = t.shape()[a];
  require(n > 0,
          std::string(op) + ": expected reduction dim " + std::to_string(a) +
              " to have non-zero size, got shape " + shape_str(x.shape()),
          axis ? ErrorKind::Index : ErrorKind::Runtime);  // PyTorch: IndexError for a named dim
  Tensor extreme = largest ? t.max(a, true) : t.min(a, true);
  Tensor hit = t.eq(extreme);
  if (is_float(t.dtype())) hit = hit.logical_or(t.isnan());  // a NaN row's extreme is NaN, equal to nothing
  Shape along(t.dim(), 1);
  along[a] = n;
  Tensor index = Tensor::arange(n).reshape(along);
  Tensor first = lazygrad::where(hit, index, scalar_tensor(n, kInt64)).min(a, keepdim && axis);
  if (!axis) return keepdim ? first.reshape(Shape(x.dim(), 1)) : first.reshape({});
  return x.dim() == 0 ? first.reshape({}) : first;
}

// any/all as a max over bools; an empty reduction has no max, and counts instead.
Tensor reduce_any(const Tensor& truth, const Axes& axes, bool keepdim, const char* op) {
  if (reduces_empty_axis(truth, axes, op)) return truth.sum(axes, keepdim).gt(0);
  return truth.max(axes, keepdim);
}

// ---- running reductions ----

// Inputs longer than twice this are scanned in blocks of this size (see scan_last).
constexpr int64_t kScanBlock = 256;

// The running sum or product along the last axis, as one reduction: output i reduces the whole
// input row, seen through an expand (a view) and masked to the positions j <= i. Quadratic in the
// row length, which the blocking in scan_last bounds.
Tensor scan_last_direct(const Tensor& t, bool product) {
  int64_t n = t.shape().back();
  Shape rows = t.shape();
  rows.insert(rows.end() - 1, n);
  Tensor seen = t.unsqueeze(-2).expand(rows);  // [..., i, j] = t[..., j]
  Tensor i = Tensor::arange(n).reshape({n, 1}), j = Tensor::arange(n).reshape({1, n});
  Tensor identity = scalar_tensor(product ? 1 : 0, t.dtype());
  Tensor masked = lazygrad::where(i.ge(j), seen, identity);
  return product ? masked.prod(-1) : masked.sum(-1);
}

Tensor scan_last(const Tensor& t, bool product) {
  int64_t n = t.shape().back();
  if (n <= 2 * kScanBlock) return scan_last_direct(t, product);
  // Blocks of kScanBlock: a direct scan inside each block, then each block is combined with the
  // running total of the blocks before it (an exclusive scan of the block totals, recursively).
  int64_t blocks = (n + kScanBlock - 1) / kScanBlock, padded = blocks * kScanBlock;
  Scalar identity = product ? 1 : 0;
  Shape lead(t.shape().begin(), t.shape().end() - 1), split = lead;
  split.push_back(blocks);
  split.push_back(kScanBlock);
  Tensor inner = scan_last_direct(t.pad({0, padded - n}, identity).reshape(split), product);
  Tensor totals = inner.select(-1, kScanBlock - 1);
  Tensor before = scan_last(totals, product).pad({1, 0}, identity).slice(-1, 0, blocks).unsqueeze(-1);
  Tensor out = product ? inner * before : inner + before;
  lead.push_back(padded);
  return out.reshape(lead).slice(-1, 0, n);
}

Tensor scan(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool product, const char* op) {
  int64_t a = normalize_axis(dim, x.dim(), op);
  Tensor t = x.to(dtype ? *dtype : is_float(x.dtype()) ? x.dtype() : kInt64);
  if (t.dim() == 0 || t.numel() == 0) return product ? t * 1 : t + 0;  // a fresh tensor, as PyTorch's copy
  int64_t last = t.dim() - 1;
  return scan_last(t.transpose(a, last), product).transpose(a, last);
}

}  // namespace

Tensor Tensor::var(Axes axes, double correction, bool keepdim) const {
  require_float(*this, "var");
  int64_t count = reduced_count(*this, axes, "var");
  Tensor x = to(compute_type(dtype()));
  Tensor deviation = x - x.mean(axes, true);
  // max(0, N - correction) as PyTorch: N <= correction gives inf (or NaN for 0 / 0).
  double divisor = std::max(0.0, static_cast<double>(count) - correction);
  return ((deviation * deviation).sum(axes, keepdim) / divisor).to(dtype());
}

Tensor Tensor::std(Axes axes, double correction, bool keepdim) const {
  require_float(*this, "std");
  normalize_axes(axes, dim(), "std");  // so that a bad axis is reported as std's
  Tensor x = to(compute_type(dtype()));
  return sqrt_zero_grad_at_zero(x.var(axes, correction, keepdim)).to(dtype());
}

Tensor Tensor::logsumexp(Axes axes, bool keepdim) const {
  Tensor x = is_float(dtype()) ? to(compute_type(dtype())) : to(kFloat32);
  DType out = is_float(dtype()) ? dtype() : kFloat32;
  if (reduces_empty_axis(x, axes, "logsumexp")) return x.exp().sum(axes, keepdim).log().to(out);  // log(0) = -inf
  // Shifted by the max, detached (it cancels exactly, so its gradient is 0 and costs nothing).
  // An infinite max shifts by 0 instead, so -inf rows stay -inf and +inf gives +inf, not NaN.
  Tensor m = x.max(axes, true);
  Tensor shift = lazygrad::where(m.isinf(), scalar_tensor(0, x.dtype()), m).detach();
  Tensor r = (x - shift).exp().sum(axes, true).log() + shift;
  if (!keepdim) {
    Shape s;
    std::vector<int64_t> ax = normalize_axes(axes, x.dim(), "logsumexp");
    for (int64_t i = 0; i < x.dim(); i++)
      if (std::find(ax.begin(), ax.end(), i) == ax.end()) s.push_back(x.shape()[i]);
    r = r.reshape(s);
  }
  return r.to(out);
}

Tensor Tensor::argmax(std::optional<int64_t> axis, bool keepdim) const { return arg_extreme(*this, axis, keepdim, true, "argmax"); }
Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const { return arg_extreme(*this, axis, keepdim, false, "argmin"); }

Tensor Tensor::any(Axes axes, bool keepdim) const {
  Tensor r = reduce_any(ne(0), axes, keepdim, "any");
  return dtype() == kUInt8 ? r.to(kUInt8) : r;
}

Tensor Tensor::all(Axes axes, bool keepdim) const {
  Tensor r = reduce_any(eq(0), axes, keepdim, "all").logical_not();
  return dtype() == kUInt8 ? r.to(kUInt8) : r;
}

Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const { return scan(*this, dim, dtype, false, "cumsum"); }
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const { return scan(*this, dim, dtype, true, "cumprod"); }

Tensor Tensor::norm(double p, Axes axes, bool keepdim) const {
  require_float(*this, "norm");
  normalize_axes(axes, dim(), "norm");  // so that a bad axis is reported as norm's
  DType out = dtype();
  Tensor x = to(compute_type(dtype()));
  DType dt = x.dtype();
  double inf = std::numeric_limits<double>::infinity();
  if (std::isinf(p)) {
    require(!reduces_empty_axis(x, axes, "norm"), "norm: cannot compute the " + std::string(p > 0 ? "inf" : "-inf") +
                                                      " norm over an empty dimension of shape " + shape_str(shape()) +
                                                      " (the reduction has no identity)");
    return (p > 0 ? x.abs().max(axes, keepdim) : x.abs().min(axes, keepdim)).to(out);
  }
  if (p == 0) return x.ne(0).sum(axes, keepdim).to(out);  // no gradient, as in PyTorch
  if (p == 1) return x.abs().sum(axes, keepdim).to(out);
  if (p == 2) return sqrt_zero_grad_at_zero((x * x).sum(axes, keepdim)).to(out);
  // (sum |x|^p)^(1/p). Zeros contribute 0 (inf for p < 0) and no gradient, and a zero norm has a
  // zero gradient, as PyTorch masks them; the pows see only positive arguments.
  Tensor a = x.abs(), zero = a.eq(0);
  Tensor powered = lazygrad::where(zero, scalar_tensor(p > 0 ? 0.0 : inf, dt),
                                   positive_pow(lazygrad::where(zero, scalar_tensor(1, dt), a), p));
  Tensor s = powered.sum(axes, keepdim);
  if (p < 0) return positive_pow(s, 1 / p).to(out);  // s > 0 (an inf from a zero gives 0, as PyTorch)
  Tensor s_zero = s.eq(0);
  Tensor root = positive_pow(lazygrad::where(s_zero, scalar_tensor(1, dt), s), 1 / p);
  return lazygrad::where(s_zero, scalar_tensor(0, dt), root).to(out);
}

}  // namespace lazygrad
