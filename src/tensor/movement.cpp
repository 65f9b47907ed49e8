// Movement ops: each makes a view (shape, strides, offset, mask) and never copies or runs a kernel.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/schedule.h"
#include "lazygrad/variable.h"
#include "shape/size.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

Tensor Tensor::reshape(const Shape& new_shape) const {
  Shape s = new_shape;
  int64_t infer = -1;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == -1) {
      require(infer < 0, "reshape: only one dimension can be inferred, got shape " + shape_str(new_shape));
      infer = static_cast<int64_t>(i);
    } else {
      require(s[i] >= 0,
              "reshape: invalid size " + std::to_string(s[i]) + " in shape " + shape_str(new_shape));
    }
  }
  if (infer >= 0) {
    Shape known_sizes = s;
    known_sizes.erase(known_sizes.begin() + infer);
    int64_t known = checked_numel(known_sizes, "reshape");
    require(known != 0 && numel() % known == 0, "reshape: shape " + shape_str(new_shape) +
                                                    " is invalid for input of shape " + shape_str(shape()) +
                                                    " (" + std::to_string(numel()) + " elements)");
    s[infer] = numel() / known;
  }
  // Checked, or a product that wrapped around could match: [4, 2^62] would pass for 0 elements.
  require(checked_numel(s, "reshape") == numel(), "reshape: shape " + shape_str(new_shape) +
                                                      " is invalid for input of shape " + shape_str(shape()) +
                                                      " (" + std::to_string(numel()) + " elements)");
  if (s == shape()) return *this;
  return make_view(*this, Ops::RESHAPE, s, s);
}

Tensor Tensor::permute(const Shape& order) const {
  require(static_cast<int64_t>(order.size()) == dim(),
          "permute: order " + shape_str(order) + " does not have one entry per dimension of shape " +
              shape_str(shape()));
  std::vector<int64_t> p;
  std::vector<bool> seen(dim(), false);
  for (int64_t o : order) {
    int64_t a = normalize_axis(o, dim(), "permute");
    require(!seen[a], "permute: order " + shape_str(order) + " repeats dimension " + std::to_string(o));
    seen[a] = true;
    p.push_back(a);
  }
  Shape s;
  for (int64_t a : p) s.push_back(shape()[a]);
  bool identity = true;
  for (size_t i = 0; i < p.size(); i++) identity &= p[i] == static_cast<int64_t>(i);
  if (identity) return *this;
  return make_view(*this, Ops::PERMUTE, p, s);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) {
    normalize_axis(d0, 0, "transpose"), normalize_axis(d1, 0, "transpose");
    return *this;
  }
  int64_t a = normalize_axis(d0, dim(), "transpose"), b = normalize_axis(d1, dim(), "transpose");
  Shape order(dim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[a], order[b]);
  return permute(order);
}

Tensor Tensor::t() const {
  require(dim() <= 2, "t: expects a tensor with <= 2 dimensions, got shape " + shape_str(shape()));
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::expand(const Shape& new_shape) const {
  require(new_shape.size() >= shape().size(), "expand: the number of sizes in " + shape_str(new_shape) +
                                                  " must be at least the number of dimensions of " +
                                                  shape_str(shape()));
  size_t lead = new_shape.size() - shape().size();
  Shape padded(lead, 1), target = new_shape;
  padded.insert(padded.end(), shape().begin(), shape().end());
  for (size_t i = 0; i < target.size(); i++) {
    if (target[i] == -1) {
      require(i >= lead, "expand: -1 is not allowed for a new leading dimension in " + shape_str(new_shape));
      target[i] = padded[i];
    }
    require(target[i] >= 0,
            "expand: invalid size " + std::to_string(new_shape[i]) + " in " + shape_str(new_shape));
    require(padded[i] == target[i] || padded[i] == 1,
            "expand: shape " + shape_str(shape()) + " cannot be expanded to " + shape_str(new_shape));
  }
  checked_nbytes(target, dtype(), "expand");
  Tensor r = lead ? reshape(padded) : *this;
  if (target == padded) return r;
  return make_view(r, Ops::EXPAND, target, target);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  int64_t a = normalize_axis(start_dim, dim(), "flatten"), b = normalize_axis(end_dim, dim(), "flatten");
  require(a <= b, "flatten: start_dim cannot come after end_dim");
  Shape s(shape().begin(), shape().begin() + a);
  int64_t n = 1;
  for (int64_t i = a; i <= b; i++) n *= shape()[i];
  s.push_back(n);
  s.insert(s.end(), shape().begin() + b + 1, shape().end());
  return reshape(s);
}

Tensor Tensor::squeeze() const {
  Shape s;
  for (int64_t d : shape())
    if (d != 1) s.push_back(d);
  return reshape(s);
}

Tensor Tensor::squeeze(int64_t d) const {
  int64_t a = normalize_axis(d, dim(), "squeeze");
  if (dim() == 0 || shape()[a] != 1) return *this;
  Shape s = shape();
  s.erase(s.begin() + a);
  return reshape(s);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  int64_t a = normalize_axis(d, dim() + 1, "unsqueeze");
  Shape s = shape();
  s.insert(s.begin() + a, 1);
  return reshape(s);
}

Tensor Tensor::pad(const std::vector<int64_t>& padding, Scalar value) const {
  require(padding.size() % 2 == 0 && static_cast<int64_t>(padding.size()) <= 2 * dim(),
          "pad: padding of length " + std::to_string(padding.size()) +
              " must be even and at most twice the " + std::to_string(dim()) + " dimensions of shape " +
              shape_str(shape()));
  // F.pad's order starts at the last dimension; negative amounts crop.
  std::vector<int64_t> grow(2 * dim(), 0), crop(2 * dim(), 0);
  for (size_t k = 0; k < padding.size() / 2; k++) {
    int64_t axis = dim() - 1 - static_cast<int64_t>(k);
    for (int side = 0; side < 2; side++) {
      int64_t p = padding[2 * k + side];
      (p >= 0 ? grow : crop)[2 * axis + side] = std::abs(p);
    }
  }
  Tensor x = *this;
  if (std::any_of(crop.begin(), crop.end(), [](int64_t c) { return c != 0; })) {
    std::vector<int64_t> be;
    for (int64_t i = 0; i < dim(); i++) {
      int64_t b = crop[2 * i], e = shape()[i] - crop[2 * i + 1];
      require(b <= e, "pad: negative padding crops more than dimension " + std::to_string(i) + " of shape " +
                          shape_str(shape()) + " holds");
      be.push_back(b);
      be.push_back(e);
    }
    Shape s;
    for (int64_t i = 0; i < dim(); i++) s.push_back(be[2 * i + 1] - be[2 * i]);
    x = make_view(x, Ops::SHRINK, be, s);
  }
  if (std::none_of(grow.begin(), grow.end(), [](int64_t g) { return g != 0; })) return x;
  Shape s = x.shape();
  for (int64_t i = 0; i < dim(); i++)
    s[i] = checked_size_sum(checked_size_sum(s[i], grow[2 * i], "pad"), grow[2 * i + 1], "pad");
  checked_nbytes(s, dtype(), "pad");
  Tensor padded = make_view(x, Ops::PAD, grow, s);
  if (value.to_double() == 0 && !(value.is_float() && std::signbit(value.to_double()))) return padded;
  // A non-zero fill: a padded mask of ones says where the data is. The fill takes the tensor's dtype
  // (F.pad of a bool tensor with 1 stays bool), as PyTorch converts it.
  Tensor mask = make_view(Tensor::ones(x.shape(), kBool), Ops::PAD, grow, s);
  return lazygrad::where(mask, padded, scalar_tensor(value, dtype()));
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  require(dim() > 0, "slice() cannot be applied to a 0-dim tensor", ErrorKind::Index);
  int64_t a = normalize_axis(d, dim(), "slice");
  require(step > 0, "slice: step must be positive, got " + std::to_string(step), ErrorKind::Value);
  int64_t n = shape()[a];
  // Python's clamping: negative indices count from the end; out-of-range ones stop at the edges.
  auto fix = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t(0), n); };
  int64_t b = fix(start.value_or(0)), e = std::max(b, fix(end.value_or(n)));
  std::vector<int64_t> be;
  Shape s = shape();
  for (int64_t i = 0; i < dim(); i++) {
    be.push_back(i == a ? b : 0);
    be.push_back(i == a ? e : shape()[i]);
  }
  s[a] = e - b;
  Tensor x = (b == 0 && e == n) ? *this : make_view(*this, Ops::SHRINK, be, s);
  if (step == 1 || s[a] <= 1) return x;
  // Every step-th element: pad to a multiple of step, split the axis in two, keep column 0. A step
  // past the end picks the first element alone, as a step of len does (and pads nothing).
  int64_t len = s[a];
  step = std::min(step, len);
  int64_t groups = (len - 1) / step + 1;
  std::vector<int64_t> pad_amount(2 * dim(), 0);
  Shape ps = s;
  ps[a] = checked_numel({groups, step}, "slice");
  pad_amount[2 * a + 1] = ps[a] - len;
  if (pad_amount[2 * a + 1]) x = make_view(x, Ops::PAD, pad_amount, ps);
  Shape split = ps;
  split[a] = groups;
  split.insert(split.begin() + a + 1, step);
  x = x.reshape(split);
  std::vector<int64_t> keep;
  Shape ks = split;
  for (size_t i = 0; i < split.size(); i++) {
    bool col = static_cast<int64_t>(i) == a + 1;
    keep.push_back(0);
    keep.push_back(col ? 1 : split[i]);
  }
  ks[a + 1] = 1;
  x = make_view(x, Ops::SHRINK, keep, ks);
  Shape out = s;
  out[a] = groups;
  return x.reshape(out);
}

Tensor Tensor::shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const {
  auto bounds_str = [&] {
    std::string out = "(";
    for (size_t i = 0; i < bounds.size(); i++)
      out +=
          (i ? ", (" : "(") + std::to_string(bounds[i].first) + ", " + std::to_string(bounds[i].second) + ")";
    return out + (bounds.size() == 1 ? ",)" : ")");
  };
  require(static_cast<int64_t>(bounds.size()) == dim(),
          "shrink: bounds " + bounds_str() + " need one (start, end) pair per dimension of shape " +
              shape_str(shape()));
  // Exact bounds, unlike slice: a shrink that a caller computed past the edge is a bug to report,
  // not a smaller tensor to hand on.
  std::vector<int64_t> be;
  Shape s;
  for (int64_t i = 0; i < dim(); i++) {
    auto [b, e] = bounds[i];
    require(0 <= b && b <= e && e <= shape()[i],
            "shrink: bounds " + bounds_str() + " are out of range for shape " + shape_str(shape()) +
                " (dimension " + std::to_string(i) + " has size " + std::to_string(shape()[i]) +
                "; each pair needs 0 <= start <= end <= size)");
    be.push_back(b);
    be.push_back(e);
    s.push_back(e - b);
  }
  if (s == shape()) return *this;
  return make_view(*this, Ops::SHRINK, be, s);
}

Tensor Tensor::narrow(int64_t d, const Variable& start, int64_t length) const {
  require(dim() > 0, "narrow() cannot be applied to a 0-dim tensor");
  int64_t a = normalize_axis(d, dim(), "narrow");
  require(is_int(start.dtype()), "narrow: the start Variable must have an integer dtype, not " +
                                     std::string(dtype_name(start.dtype())));
  require(length >= 0 && length <= shape()[a], "narrow: length " + std::to_string(length) +
                                                   " exceeds dimension " + std::to_string(d) + " of shape " +
                                                   shape_str(shape()));
  return make_result(
      make_uop(Ops::SHRINK_AT, dtype(), {uop(), start.tensor().uop()}, std::vector<int64_t>{a, length}),
      {this});
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  require(dim() > 0, "narrow() cannot be applied to a 0-dim tensor");
  int64_t a = normalize_axis(d, dim(), "narrow");
  int64_t n = shape()[a], b = start < 0 ? start + n : start;
  // A start outside [-n, n] is an index out of range (IndexError in PyTorch); a length past the end is not.
  require(start >= -n && start <= n,
          "narrow: start " + std::to_string(start) + " is out of range for dimension " + std::to_string(d) +
              " of shape " + shape_str(shape()),
          ErrorKind::Index);
  require(b >= 0 && length >= 0 && b + length <= n,
          "narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
              " exceed dimension " + std::to_string(d) + " of shape " + shape_str(shape()));
  return slice(a, b, b + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  require(dim() > 0, "select() cannot be applied to a 0-dim tensor", ErrorKind::Index);
  int64_t a = normalize_axis(d, dim(), "select");
  int64_t n = shape()[a];
  require(index >= -n && index < n,
          "select: index " + std::to_string(index) + " is out of range for dimension " + std::to_string(d) +
              " of shape " + shape_str(shape()),
          ErrorKind::Index);
  int64_t i = index < 0 ? index + n : index;
  Shape s = shape();
  s.erase(s.begin() + a);
  return slice(a, i, i + 1).reshape(s);
}

Tensor Tensor::flip(Axes dims) const {
  // flip({}) and flip(std::vector<int64_t>{}) flip nothing, like torch.flip(x, []): unlike a
  // reduction, an empty list here is not "every axis" (normalize_axes would make it that).
  if (dims.list().empty()) return *this;
  std::vector<int64_t> ax = normalize_axes(dims, dim(), "flip");
  std::vector<int64_t> flags(dim(), 0);
  for (int64_t a : ax) flags[a] = 1;
  if (std::none_of(flags.begin(), flags.end(), [](int64_t f) { return f != 0; })) return *this;
  return make_view(*this, Ops::FLIP, flags, shape());
}

Tensor Tensor::clone() const { return make_result(make_uop(Ops::CONTIGUOUS, dtype(), {uop()}), {this}); }

Tensor Tensor::contiguous() const {
  UOpPtr u = uop();
  const UOp* b = contiguous_buffer_node(u.get());
  if (b && b->numel() == u->numel()) return *this;  // already a contiguous buffer
  if (u->op == Ops::MULTI &&                        // a sharded tensor whose parts all are
      std::all_of(u->src.begin(), u->src.end(), [](const UOpPtr& part) {
        const UOp* p = contiguous_buffer_node(part.get());
        return p && p->numel() == part->numel();
      }))
    return *this;
  return make_result(make_uop(Ops::CONTIGUOUS, dtype(), {u}), {this});
}

Tensor Tensor::cat(const std::vector<Tensor>& tensors, int64_t d) {
  require(!tensors.empty(), "cat: expected a non-empty list of tensors");
  // Legacy PyTorch rule: 1-d empty tensors are skipped.
  std::vector<Tensor> ts;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) ts.push_back(t);
  if (ts.empty()) return tensors[0];
  const Tensor& first = ts[0];
  require(first.dim() > 0, "cat: zero-dimensional tensors cannot be concatenated");
  int64_t a = normalize_axis(d, first.dim(), "cat");
  DType dt = first.dtype();
  int64_t total = 0;
  for (const auto& t : ts) {
    require(t.dim() == first.dim(), "cat: tensors must have the same number of dimensions, got " +
                                        shape_str(first.shape()) + " and " + shape_str(t.shape()));
    for (int64_t i = 0; i < first.dim(); i++)
      require(i == a || t.shape()[i] == first.shape()[i],
              "cat: sizes of tensors must match except in dimension " + std::to_string(a) + ", got " +
                  shape_str(first.shape()) + " and " + shape_str(t.shape()));
    dt = promote_types(dt, t.dtype());
    total = checked_size_sum(total, t.shape()[a], "cat");
  }
  // Each piece padded to the full size and put where it lies by a where on its padded mask: one fused
  // kernel, no copies. (Summing the zero-padded pieces lost the sign of a -0.0, since -0.0 + 0.0 is
  // +0.0: the compiler fuzzer's seed 5574, a reciprocal that gave inf for -inf.)
  Tensor out;
  int64_t offset = 0;
  for (const auto& t : ts) {
    std::vector<int64_t> padding(2 * t.dim(), 0);
    int64_t k = t.dim() - 1 - a;  // F.pad order: last dimension first
    padding[2 * k] = offset;
    padding[2 * k + 1] = total - offset - t.shape()[a];
    offset += t.shape()[a];
    Tensor p = t.to(dt).pad(padding);
    out = out.defined() ? lazygrad::where(Tensor::ones(t.shape(), kBool).pad(padding), p, out) : p;
  }
  return out;
}

Tensor Tensor::stack(const std::vector<Tensor>& tensors, int64_t d) {
  require(!tensors.empty(), "stack: expected a non-empty list of tensors");
  int64_t a = normalize_axis(d, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> us;
  for (const auto& t : tensors) {
    require(t.shape() == tensors[0].shape(), "stack: expects each tensor to be equal size, got " +
                                                 shape_str(tensors[0].shape()) + " and " +
                                                 shape_str(t.shape()));
    us.push_back(t.unsqueeze(a));
  }
  return cat(us, a);
}

}  // namespace lazygrad
