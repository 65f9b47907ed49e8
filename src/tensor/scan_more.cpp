// Running extremes (cummax, cummin) and the running logsumexp, composed from views and reductions:
// output i reduces the whole row seen through an expand ([..., i, j] = x[..., j], a view) and masked
// to the positions j <= i, so each op is one fused kernel per step and quadratic in the row length.
// As cumsum (reduce_more.cpp), rows longer than twice kScanBlock are scanned in blocks, each block
// then combined with the result of the blocks before it (a scan of the block totals, recursively).
#include <limits>

#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

constexpr int64_t kScanBlock = 256;

// [..., n] -> [..., blocks, kScanBlock], padded at the end with `fill` (read by no kept output).
Tensor in_blocks(const Tensor& t, Scalar fill) {
  int64_t n = t.shape().back(), blocks = (n + kScanBlock - 1) / kScanBlock;
  Shape split(t.shape().begin(), t.shape().end() - 1);
  split.insert(split.end(), {blocks, kScanBlock});
  return t.pad({0, blocks * kScanBlock - n}, fill).reshape(split);
}

// The inverse of in_blocks for a result of n elements per row.
Tensor from_blocks(const Tensor& b, int64_t n) {
  Shape flat(b.shape().begin(), b.shape().end() - 2);
  flat.push_back(b.shape()[b.dim() - 2] * kScanBlock);
  return b.reshape(flat).slice(-1, 0, n);
}

// The per-block value before block b (the total of blocks < b): `totals` shifted right by one
// along the last axis, `first` in front, with a unit axis for the block's elements.
Tensor exclusive(const Tensor& totals, Scalar first) {
  int64_t blocks = totals.shape().back();
  return totals.pad({1, 0}, first).slice(-1, 0, blocks).unsqueeze(-1);
}

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

// extreme_indices over rows of any length: blocks beyond 2 * kScanBlock. A block's running extreme
// gives way to the best of the blocks before it only where that one is strictly more extreme (a tie
// goes to the later index) or NaN, and a NaN within the block prefix always wins (the later NaN).
Tensor running_index(const Tensor& t, bool largest) {
  int64_t n = t.shape().back();
  if (n <= 2 * kScanBlock) return extreme_indices(t, largest);
  Tensor tb = in_blocks(t, 0);
  int64_t blocks = tb.shape()[tb.dim() - 2];
  Tensor local = extreme_indices(tb, largest);
  Tensor value = tb.gather(-1, local);
  Tensor index = local + (Tensor::arange(blocks) * kScanBlock).reshape({blocks, 1});
  Tensor total_value = value.select(-1, kScanBlock - 1), total_index = index.select(-1, kScanBlock - 1);
  Tensor best_block = running_index(total_value, largest);  // over blocks <= b
  Tensor before_value = exclusive(total_value.gather(-1, best_block), 0);
  Tensor before_index = exclusive(total_index.gather(-1, best_block), -1);
  Tensor before_wins = largest ? before_value.gt(value) : before_value.lt(value);
  if (is_float(t.dtype()))
    before_wins = before_wins.logical_or(before_value.isnan()).logical_and(value.isnan().logical_not());
  before_wins = before_wins.logical_and(before_index.ge(0));  // block 0 has nothing before it
  return from_blocks(lazygrad::where(before_wins, before_index, index), n);
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
  Tensor idx = running_index(t.dtype() == kBool ? t.to(kUInt8) : t, largest).transpose(a, last);
  // The values are gathered at the indices, so the gradient goes to that one element, as PyTorch's.
  return {x.gather(a, idx), idx};
}

// The running logsumexp along the last axis. Each prefix is shifted by its own max (detached: it
// cancels exactly), an infinite max by 0, so a prefix of -inf gives -inf and +inf gives +inf, not
// NaN. Masked-out terms are exp(-inf) = 0, which also keeps their gradient 0 (an unmasked exp of a
// later, larger element could overflow). Long rows: each block's own running logsumexp, then
// logaddexp with the total of the blocks before it.
Tensor logcumsumexp_last(const Tensor& t) {
  int64_t n = t.shape().back();
  DType dt = t.dtype();
  double inf = std::numeric_limits<double>::infinity();
  if (n > 2 * kScanBlock) {
    Tensor inner = logcumsumexp_last(in_blocks(t, -inf));
    Tensor before = exclusive(logcumsumexp_last(inner.select(-1, kScanBlock - 1)), -inf);
    return from_blocks(inner.logaddexp(before), n);
  }
  Prefixes p = prefixes(t);
  Tensor m = lazygrad::where(p.mask, p.rows, scalar_tensor(-inf, dt)).max(-1, true);
  Tensor shift = lazygrad::where(m.isinf(), scalar_tensor(0, dt), m).detach();
  Tensor terms = lazygrad::where(p.mask, p.rows - shift, scalar_tensor(-inf, dt)).exp();
  return terms.sum(-1).log() + shift.squeeze(-1);
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
  Tensor r = logcumsumexp_last(t);
  return r.transpose(a, last).to(dtype());
}

}  // namespace lazygrad
