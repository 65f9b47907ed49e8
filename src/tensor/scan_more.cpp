// Running extremes (cummax, cummin) and the running logsumexp, composed from views and reductions:
// output i reduces the whole row seen through an expand ([..., i, j] = x[..., j], a view) and masked
// to the positions j <= i, so each op is one fused kernel per step and quadratic in the row length
// (cumsum blocks long rows; these do not yet).
#include <limits>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

// x (the scanned axis last) seen as [..., i, j] = x[..., j], and the mask j <= i.
struct Prefixes {
  Tensor rows, mask;
};
Prefixes prefixes(const Tensor& t) {
  int64_t n = t.shape().back();
  Shape rows = t.shape();
  rows.insert(rows.end() - 1, n);
  Tensor i = Tensor::arange(n).reshape({n, 1}), j = Tensor::arange(n).reshape({1, n});
  return {t.unsqueeze(-2).expand(rows), i.ge(j)};
}

// The index of the running extreme: the last j <= i holding it (PyTorch's CPU kernel takes a new
// element when it is >= (<=) the running one), or, once a NaN has been seen, the last NaN.
Tensor extreme_indices(const Tensor& t, bool largest) {
  int64_t n = t.shape().back();
  Prefixes p = prefixes(t);
  Tensor seen = p.rows;
  Tensor nan_seen;
  if (is_float(t.dtype())) {
    // NaN compares false with everything; the extreme of the other values is taken without it.
    Tensor fill = scalar_tensor(
        largest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(),
        t.dtype());
    Tensor nan = seen.isnan();
    nan_seen = nan.logical_and(p.mask).any(-1, true);
    seen = lazygrad::where(nan, fill, seen);
  }
  // Masked-out positions read the row's first element, which every prefix holds, so the fill is
  // never more extreme than the prefix (no dtype minimum needed).
  Tensor masked = lazygrad::where(p.mask, seen, seen.slice(-1, 0, 1));
  Tensor extreme = largest ? masked.max(-1, true) : masked.min(-1, true);
  Tensor hit = seen.eq(extreme);
  if (nan_seen.defined()) hit = lazygrad::where(nan_seen, p.rows.isnan(), hit);
  Tensor j = Tensor::arange(n).reshape({1, n});
  return lazygrad::where(hit.logical_and(p.mask), j, scalar_tensor(-1, kInt64)).max(-1);
}

Tensor::ValuesIndices running_extreme(const Tensor& x, int64_t dim, bool largest, const char* op) {
  int64_t a = normalize_axis(dim, x.dim(), op);
  if (x.dim() == 0) {
    auto r = running_extreme(x.reshape({1}), 0, largest, op);
    return {r.values.reshape({}), r.indices.reshape({})};
  }
  if (x.numel() == 0) return {x.clone(), Tensor::zeros(x.shape(), kInt64, x.device())};
  int64_t last = x.dim() - 1;
  Tensor t = x.transpose(a, last);
  Tensor idx = extreme_indices(t.dtype() == kBool ? t.to(kUInt8) : t, largest).transpose(a, last);
  // The values are gathered at the indices, so the gradient goes to that one element, as PyTorch's.
  return {x.gather(a, idx), idx};
}

}  // namespace

Tensor::ValuesIndices Tensor::cummax(int64_t dim) const {
  return running_extreme(*this, dim, true, "cummax");
}
Tensor::ValuesIndices Tensor::cummin(int64_t dim) const {
  return running_extreme(*this, dim, false, "cummin");
}

Tensor Tensor::logcumsumexp(int64_t dim) const {
  require(is_float(dtype()), "logcumsumexp: not implemented for " + std::string(dtype_name(dtype())) +
                                 " tensors (floating point only, as in PyTorch)");
  int64_t a = normalize_axis(dim, this->dim(), "logcumsumexp");
  if (this->dim() == 0 || numel() == 0) return *this + 0;  // a fresh tensor, as PyTorch's copy
  DType dt = is_half(dtype()) ? kFloat32 : dtype();
  int64_t last = this->dim() - 1;
  Tensor t = to(dt).transpose(a, last);
  // Each prefix shifted by its own max (detached: it cancels exactly), an infinite max by 0, so a
  // prefix of -inf gives -inf and +inf gives +inf, not NaN. Masked-out terms are exp(-inf) = 0,
  // which also keeps their gradient 0 (an unmasked exp of a later, larger element could overflow).
  Prefixes p = prefixes(t);
  double inf = std::numeric_limits<double>::infinity();
  Tensor m = lazygrad::where(p.mask, p.rows, scalar_tensor(-inf, dt)).max(-1, true);
  Tensor shift = lazygrad::where(m.isinf(), scalar_tensor(0, dt), m).detach();
  Tensor terms = lazygrad::where(p.mask, p.rows - shift, scalar_tensor(-inf, dt)).exp();
  Tensor r = terms.sum(-1).log() + shift.squeeze(-1);
  return r.transpose(a, last).to(dtype());
}

}  // namespace lazygrad
