// Indexing: gathers, scatters, sorting, and the views that cut, repeat or roll a tensor.
//
// There is no gather primitive. A gather compares the index with an arange along a new axis, which
// gives a one-hot mask, and sums where(mask, x, 0) over that axis: elementwise work and one
// reduction, so it fuses into a single kernel, and its gradient (a scatter-add) follows from the
// rules for where, expand and sum. A scatter is the same mask summed over the index's axis instead.
// An index the user gave is read through checked_index: a value outside the op's range is an Error
// at realize (the kernel sets an error bit), as PyTorch raises, instead of reading 0 or writing
// nothing.
// Sorting ranks each element by counting the elements that precede it, then gathers by rank.
// Everything else here (split, repeat, roll, meshgrid, ...) is a view.
#include <algorithm>
#include <limits>
#include <numeric>

#include "shape/size.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

void require_index_dtype(const Tensor& index, const char* op) {
  require(!is_float(index.dtype()) && index.dtype() != kBool,
          std::string(op) + ": expected an integer index tensor, got " +
              std::string(dtype_name(index.dtype())) + " of shape " + shape_str(index.shape()));
}

// [1, ..., 1, n, 1, ..., 1]: n at `axis` of `ndim` axes, to lay a 1-d tensor along one axis.
Shape along(int64_t n, int64_t axis, int64_t ndim) {
  Shape s(ndim, 1);
  s[axis] = n;
  return s;
}

// index with a new axis of length n inserted at `at`: true where the index equals the position.
Tensor one_hot_mask(const Tensor& index, int64_t n, int64_t at) {
  Tensor positions = Tensor::arange(n, kInt64).reshape(along(n, at, index.dim() + 1));
  return index.to(kInt64).unsqueeze(at).eq(positions);
}

// The sum over `axis` of x where mask is true, in x's dtype (bool: any). A where rather than a
// product with the mask, so NaN and inf in unselected elements stay out.
Tensor masked_sum(const Tensor& mask, const Tensor& x, int64_t axis) {
  if (x.dtype() == kBool) return mask.logical_and(x).sum(axis).gt(0);
  return x.where(mask, 0).sum(axis, false, x.dtype());
}

// x with dimension d replaced by the index's dimensions (any number): x[..., index, ...]. Indices
// are taken as they are, so the caller wraps negative ones if it wants them.
Tensor take(const Tensor& x, int64_t d, const Tensor& index) {
  int64_t n = x.shape()[d], k = index.dim();
  // The mask is laid out as [1 (x's leading dims), index dims, n, 1 (x's trailing dims)] and x as
  // [x's leading dims, 1 (index dims), n, x's trailing dims]; the sum runs over n.
  Shape mask_shape(d, 1), x_shape(x.shape().begin(), x.shape().begin() + d);
  mask_shape.insert(mask_shape.end(), index.shape().begin(), index.shape().end());
  mask_shape.push_back(n);
  mask_shape.insert(mask_shape.end(), x.dim() - d - 1, 1);
  x_shape.insert(x_shape.end(), k, 1);
  x_shape.insert(x_shape.end(), x.shape().begin() + d, x.shape().end());
  Tensor mask = one_hot_mask(index, n, k).reshape(mask_shape);
  return masked_sum(mask, x.reshape(x_shape), d + k);
}

// The leading corner of x with the given sizes (a view): the part of self and src that gather and
// scatter use outside dim.
Tensor corner(const Tensor& x, const Shape& sizes) {
  Tensor r = x;
  for (int64_t a = 0; a < x.dim(); a++)
    if (sizes[a] != x.shape()[a]) r = r.slice(a, 0, sizes[a]);
  return r;
}

// x padded with zeros (false) at the end of each dimension up to `sizes`: a corner put back.
Tensor pad_to(const Tensor& x, const Shape& sizes) {
  std::vector<int64_t> padding;
  for (int64_t a = x.dim() - 1; a >= 0; a--) padding.insert(padding.end(), {0, sizes[a] - x.shape()[a]});
  return x.pad(padding);
}

// gather and scatter treat 0-d tensors as 1-d ones of one element, as PyTorch does.
int64_t gather_rank(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// gather's body (take_along_dim's too, which the error then names): x[..., index, ...] along d,
// each index in [0, size(d)).
Tensor gather_along(const Tensor& self, int64_t d, const Tensor& index, IndexOp op) {
  Tensor x = as_1d(self), i = as_1d(index);
  Shape used = i.shape();
  used[d] = x.shape()[d];
  // The mask has the index's shape with the positions along d at d + 1; x's corner meets it there.
  Tensor mask = one_hot_mask(checked_index(i, {0, x.shape()[d], d, op}), x.shape()[d], d + 1);
  return masked_sum(mask, corner(x, used).unsqueeze(d), d + 1).reshape(index.shape());
}

// The index must fit inside self outside dim d, and inside src (when there is one) everywhere.
void check_index_fits(const Tensor& self, const Tensor& index, const Tensor* src, int64_t d, const char* op) {
  std::string shapes = "index " + shape_str(index.shape()) + ", self " + shape_str(self.shape()) +
                       (src ? ", src " + shape_str(src->shape()) : "");
  require(gather_rank(index) == gather_rank(self) && (!src || gather_rank(*src) == gather_rank(self)),
          std::string(op) + ": index, self" + (src ? " and src" : "") +
              " must have the same number of dimensions, got " + shapes);
  Shape i = as_1d(index).shape(), x = as_1d(self).shape(), s = src ? as_1d(*src).shape() : i;
  for (size_t a = 0; a < i.size(); a++)
    require((static_cast<int64_t>(a) == d || i[a] <= x[a]) && i[a] <= s[a],
            std::string(op) + ": index must be no larger than self apart from dimension " +
                std::to_string(d) + (src ? " and no larger than src" : "") + ", got " + shapes);
}

// x (at least 1-d) with the elements that index reaches along d replaced: by the matching element
// of src, or by the 0-d `fill` when there is no src. With duplicate indices the last write wins,
// as in PyTorch's CPU loop.
Tensor scatter_replace(const Tensor& x, int64_t d, const Tensor& index, const std::optional<Tensor>& src,
                       const Tensor& fill) {
  if (index.numel() == 0) return x;
  int64_t n = x.shape()[d], m = index.shape()[d];
  // axis d: index positions j; axis d + 1: targets
  Tensor mask = one_hot_mask(checked_index(index, {0, n, d, IndexOp::Scatter}), n, d + 1);
  Tensor j = Tensor::arange(m, kInt64).reshape(along(m, d, mask.dim()));
  Tensor last = j.where(mask, -1).max(d);  // per target: the last j that writes it, -1 for none
  Tensor written = pad_to(last.ge(0), x.shape());
  if (!src) return fill.where(written, x);
  Tensor last_writer = mask.logical_and(j.eq(last.unsqueeze(d)));
  Tensor values = masked_sum(last_writer, corner(*src, index.shape()).unsqueeze(d + 1), d);
  return pad_to(values, x.shape()).where(written, x);
}

// Normalizes the dim of a scatter and checks its operands; returns the dimension.
int64_t check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                      const char* op) {
  require_index_dtype(index, op);
  int64_t d = normalize_axis(dim, gather_rank(self), op);
  if (src)
    require(src->dtype() == self.dtype(),
            std::string(op) + ": expected self.dtype to be equal to src.dtype, got " +
                std::string(dtype_name(self.dtype())) + " and " + std::string(dtype_name(src->dtype())));
  check_index_fits(self, index, src, d, op);
  return d;
}

// The smallest value of a dtype (-inf for floats): what a max over no elements starts from.
Tensor lowest(DType dt) {
  double v = 0;
  switch (dt) {
    case kInt8:
      v = -128;
      break;
    case kInt16:
      v = -32768;
      break;
    case kInt32:
      v = -2147483648.0;
      break;
    case kInt64:
      return Tensor::full({}, std::numeric_limits<int64_t>::min());
    default:
      v = is_float(dt) ? -std::numeric_limits<double>::infinity() : 0;  // unsigned, bool
  }
  return Tensor::full({}, v).to(dt);
}

// An order-reversing map (-x, ~x, !x), its own inverse: turns a min into a max.
Tensor reversed_order(const Tensor& x) {
  if (is_float(x.dtype())) return x.neg();
  return x.dtype() == kBool ? x.logical_not() : x.bitwise_not();
}

// scatter_reduce's body, on tensors of at least one dimension. Over the part of self the index
// covers (its corner), the candidates for each target are laid along axis d: self's element first
// (taking part when include_self), then every src element, taking part where the index sends it
// there. One reduce over d combines them, so ties in amax/amin share the gradient and the mean's
// count includes self, as PyTorch's.
Tensor scatter_reduce_along(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src,
                            const std::string& reduce, bool include_self) {
  if (index.numel() == 0) return x;
  int64_t n = x.shape()[d];
  Shape used = index.shape();
  used[d] = n;
  Tensor self_part = corner(x, used).unsqueeze(d);  // [.., 1, n, ..]
  // axis d: index positions j; axis d + 1: targets
  Tensor hit = one_hot_mask(checked_index(index, {0, n, d, IndexOp::ScatterReduce}), n, d + 1);
  Shape all = hit.shape();
  all[d] = 1;
  Tensor mask = Tensor::cat({Tensor::full(all, include_self), hit}, d);
  Tensor values =
      Tensor::cat({self_part, corner(src, index.shape()).unsqueeze(d + 1).expand(hit.shape())}, d);
  Tensor r;
  if (reduce == "sum") {
    r = masked_sum(mask, values, d);
  } else if (reduce == "prod") {
    r = x.dtype() == kBool ? values.where(mask, true).all(d)
                           : values.where(mask, 1).prod(d, false, x.dtype());
  } else if (reduce == "mean") {
    Tensor count = mask.sum(d);
    Tensor total = masked_sum(mask, values, d);
    // Integer means round toward -inf, as PyTorch's; targets nobody writes are replaced below.
    Tensor safe = count.where(count.gt(0), 1);
    r = is_float(x.dtype()) ? total / safe.to(x.dtype()) : total.floor_divide(safe).to(x.dtype());
  } else if (reduce == "amax") {
    r = values.where(mask, lowest(x.dtype())).max(d);
  } else {  // amin
    r = reversed_order(reversed_order(values).where(mask, lowest(x.dtype())).max(d));
  }
  Tensor written = hit.any(d);
  Tensor inside = pad_to(written, x.shape());
  return pad_to(r.where(written, corner(x, used)), x.shape()).where(inside, x);
}

// Does a come strictly before b? Ascending order with NaN as the largest value, as PyTorch sorts.
Tensor precedes(const Tensor& a, const Tensor& b, bool descending) {
  if (descending) return precedes(b, a, false);
  if (a.dtype() == kBool) return a.logical_not().logical_and(b);
  Tensor less = a.lt(b);
  if (!is_float(a.dtype())) return less;
  return less.logical_or(a.eq(a).logical_and(b.ne(b)));  // a is a number and b is NaN
}

// Each element's position in the sorted order along d (int64): how many elements come before it.
// Ties go in index order, so the sort is stable.
Tensor sorted_rank(const Tensor& x, int64_t d, bool descending) {
  int64_t n = x.shape()[d], nd = x.dim() + 1;
  Tensor xi = x.unsqueeze(d + 1), xj = x.unsqueeze(d);  // element i along axis d, j along d + 1
  Tensor i = Tensor::arange(n, kInt64).reshape(along(n, d, nd)),
         j = Tensor::arange(n, kInt64).reshape(along(n, d + 1, nd));
  Tensor tie = precedes(xi, xj, descending).logical_not();
  Tensor before = precedes(xj, xi, descending).logical_or(tie.logical_and(j.lt(i)));
  return before.sum(d + 1);
}

// The first k elements in sorted order along d, with their indices.
Tensor::ValuesIndices sorted_prefix(const Tensor& x, int64_t d, int64_t k, bool descending) {
  int64_t n = x.shape()[d];
  Tensor mask = one_hot_mask(sorted_rank(x, d, descending), k, d);  // axis d: rank r; d + 1: element i
  Tensor positions = Tensor::arange(n, kInt64).reshape(along(n, d + 1, x.dim() + 1));
  return {masked_sum(mask, x.unsqueeze(d), d + 1), masked_sum(mask, positions, d + 1)};
}

}  // namespace

Tensor checked_index(const Tensor& index, const IndexCheck& check) {
  return make_tensor(make_uop(Ops::CHECK_INDEX, kInt64, {index.to(kInt64).uop()}, check.arg()));
}

// ---- gathers ----

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  require_index_dtype(index, "gather");
  int64_t d = normalize_axis(dim, gather_rank(*this), "gather");
  check_index_fits(*this, index, nullptr, d, "gather");
  return gather_along(*this, d, index, IndexOp::Gather);
}

Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  require_index_dtype(indices, "take_along_dim");
  if (!dim) return gather_along(flatten(), 0, indices.flatten(), IndexOp::TakeAlongDim);
  int64_t d = normalize_axis(*dim, this->dim(), "take_along_dim");
  require(this->dim() == indices.dim(), "take_along_dim: input " + shape_str(shape()) + " and indices " +
                                            shape_str(indices.shape()) +
                                            " should have the same number of dimensions");
  if (this->dim() == 0) return gather_along(*this, 0, indices, IndexOp::TakeAlongDim);
  // Both broadcast to a common shape everywhere but along d.
  Shape common(this->dim());
  for (int64_t a = 0; a < this->dim(); a++) {
    int64_t x = a == d ? indices.shape()[a] : shape()[a], y = indices.shape()[a];
    require(x == y || x == 1 || y == 1, "take_along_dim: input " + shape_str(shape()) + " and indices " +
                                            shape_str(indices.shape()) +
                                            " cannot be broadcast apart from dimension " + std::to_string(d));
    common[a] = x == 1 ? y : x;
  }
  Shape self_shape = common;
  self_shape[d] = shape()[d];
  return gather_along(expand(self_shape), d, indices.expand(common), IndexOp::TakeAlongDim);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  require_index_dtype(index, "index_select");
  require(index.dim() <= 1, "index_select: index must be 0-d or 1-d, got shape " + shape_str(index.shape()),
          ErrorKind::Index);
  int64_t d = normalize_axis(dim, this->dim(), "index_select");
  if (this->dim() == 0) {
    require(index.numel() == 1,
            "index_select: a 0-d tensor takes one index, got shape " + shape_str(index.shape()));
    return take(reshape({1}), 0, checked_index(index.reshape({1}), {0, 1, 0, IndexOp::IndexSelect}))
        .reshape({});
  }
  return take(*this, d, checked_index(index.reshape({-1}), {0, shape()[d], d, IndexOp::IndexSelect}));
}

Tensor Tensor::index(int64_t dim, const Tensor& indices) const {
  require_index_dtype(indices, "index");
  require(this->dim() > 0,
          "index: a 0-d tensor cannot be indexed, got indices of shape " + shape_str(indices.shape()),
          ErrorKind::Index);
  int64_t d = normalize_axis(dim, this->dim(), "index");
  int64_t n = shape()[d];
  Tensor i = checked_index(indices, {-n, n, d, IndexOp::Index});
  return take(*this, d, (i + n).where(i.lt(0), i));
}

// ---- scatters ----

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  int64_t d = check_scatter(*this, dim, index, &src, "scatter");
  return scatter_replace(as_1d(*this), d, as_1d(index), as_1d(src), Tensor()).reshape(shape());
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, Scalar value) const {
  int64_t d = check_scatter(*this, dim, index, nullptr, "scatter");
  Tensor fill = Tensor::full({}, value).to(dtype());  // cast like PyTorch: 2.5 into int64 is 2
  return scatter_replace(as_1d(*this), d, as_1d(index), std::nullopt, fill).reshape(shape());
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  int64_t d = check_scatter(*this, dim, index, &src, "scatter_add");
  Tensor x = as_1d(*this), i = as_1d(index);
  // axis d: index positions; axis d + 1: targets
  Tensor mask =
      one_hot_mask(checked_index(i, {0, x.shape()[d], d, IndexOp::ScatterAdd}), x.shape()[d], d + 1);
  Tensor added = masked_sum(mask, corner(as_1d(src), i.shape()).unsqueeze(d + 1), d);
  return (x + pad_to(added, x.shape())).reshape(shape());
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const {
  require(reduce == "add" || reduce == "multiply",
          "scatter: reduce must be 'add' or 'multiply', got '" + reduce + "'", ErrorKind::Value);
  int64_t d = check_scatter(*this, dim, index, &src, "scatter");
  return scatter_reduce_along(as_1d(*this), d, as_1d(index), as_1d(src), reduce == "add" ? "sum" : "prod",
                              true)
      .reshape(shape());
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, Scalar value, const std::string& reduce) const {
  Tensor src = Tensor::full({}, value, std::nullopt, device()).to(dtype()).expand(index.shape());
  return scatter(dim, index, src, reduce);
}

Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                              bool include_self) const {
  require(reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
          "scatter_reduce: reduce argument must be either sum, prod, mean, amax or amin, got " + reduce,
          ErrorKind::Value);
  int64_t d = check_scatter(*this, dim, index, &src, "scatter_reduce");
  return scatter_reduce_along(as_1d(*this), d, as_1d(index), as_1d(src), reduce, include_self)
      .reshape(shape());
}

Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const {
  return masked_fill(mask, Tensor::full({}, value).to(dtype()));
}

Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  require(mask.dtype() == kBool,
          "masked_fill: expected a bool mask, got " + std::string(dtype_name(mask.dtype())));
  require(value.dim() == 0,
          "masked_fill: only supports a 0-d value tensor, got shape " + shape_str(value.shape()));
  size_t n = std::max(mask.dim(), dim());
  for (size_t k = 1; k <= n; k++) {
    int64_t a = k <= shape().size() ? shape()[dim() - k] : 1,
            b = k <= mask.shape().size() ? mask.shape()[mask.dim() - k] : 1;
    require(a == b || a == 1 || b == 1, "masked_fill: mask " + shape_str(mask.shape()) +
                                            " cannot be broadcast to self " + shape_str(shape()));
  }
  return value.to(dtype()).where(mask, *this);
}

Tensor Tensor::one_hot(int64_t num_classes) const {
  require(dtype() == kInt64, "one_hot: is only applicable to an int64 index tensor, got " +
                                 std::string(dtype_name(dtype())) + " of shape " + shape_str(shape()));
  require(num_classes >= -1,
          "one_hot: num_classes must be -1 or non-negative, got " + std::to_string(num_classes));
  if (num_classes == -1) {
    // The class count is a shape, so it must be known now: this realizes self.
    require(numel() > 0, "one_hot: can not infer the number of classes from an empty tensor of shape " +
                             shape_str(shape()));
    std::vector<int64_t> range = Tensor::stack({min(), max()}).to_vector<int64_t>();
    require(range[0] >= 0, "one_hot: class values must be non-negative, got " + std::to_string(range[0]));
    num_classes = range[1] + 1;
    return one_hot_mask(*this, num_classes, dim()).to(kInt64);  // every value was seen to fit
  }
  return one_hot_mask(checked_index(*this, {0, num_classes, 0, IndexOp::OneHot}), num_classes, dim())
      .to(kInt64);
}

// ---- repeating and rolling: views ----

Tensor Tensor::repeat(const Shape& repeats) const {
  require(repeats.size() >= shape().size(), "repeat: the number of repeats " + shape_str(repeats) +
                                                " can not be smaller than the number of dimensions of " +
                                                shape_str(shape()));
  Shape src(repeats.size() - shape().size(), 1), split, expanded, out;
  src.insert(src.end(), shape().begin(), shape().end());
  for (size_t a = 0; a < repeats.size(); a++) {
    require(repeats[a] >= 0,
            "repeat: negative repeat " + std::to_string(repeats[a]) + " in " + shape_str(repeats));
    // Each dimension becomes (repeats, size): a broadcast copy count in front of the data.
    split.insert(split.end(), {1, src[a]});
    expanded.insert(expanded.end(), {repeats[a], src[a]});
    out.push_back(checked_numel({repeats[a], src[a]}, "repeat"));
  }
  checked_nbytes(out, dtype(), "repeat");
  return reshape(split).expand(expanded).reshape(out);
}

Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  require(repeats >= 0, "repeat_interleave: repeats can not be negative, got " + std::to_string(repeats));
  if (!dim) return flatten().repeat_interleave(repeats, 0);
  require(this->dim() > 0, "repeat_interleave: a 0-d tensor has no dimension " + std::to_string(*dim));
  int64_t d = normalize_axis(*dim, this->dim(), "repeat_interleave");
  // Each element gets a broadcast copy count right behind it.
  Shape s = shape();
  s.insert(s.begin() + d + 1, repeats);
  checked_nbytes(s, dtype(), "repeat_interleave");
  return unsqueeze(d + 1).expand(s).flatten(d, d + 1);
}

Tensor Tensor::roll(const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) const {
  require(!shifts.empty(), "roll: shifts required");
  if (dims.empty()) {
    require(shifts.size() == 1, "roll: shifts and dimensions must align, got " +
                                    std::to_string(shifts.size()) + " shifts and no dims");
    return flatten().roll(shifts, {0}).reshape(shape());
  }
  require(shifts.size() == dims.size(), "roll: shifts and dimensions must align, got " +
                                            std::to_string(shifts.size()) + " shifts and " +
                                            std::to_string(dims.size()) + " dims");
  require(dim() > 0, "roll: a 0-d tensor has no dimension to roll along", ErrorKind::Index);
  Tensor x = *this;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t d = normalize_axis(dims[k], dim(), "roll"), n = shape()[d];
    if (n == 0) continue;
    int64_t s = (shifts[k] % n + n) % n;
    if (s == 0) continue;
    // The dimension laid out twice in a row (a broadcast, not a copy); the window that starts
    // n - s into it is the rolled one.
    Shape twice = x.shape();
    twice.insert(twice.begin() + d, 2);
    x = x.unsqueeze(d).expand(twice).flatten(d, d + 1).slice(d, n - s, 2 * n - s);
  }
  return x;
}

Tensor Tensor::roll(int64_t shift, std::optional<int64_t> dim) const {
  return dim ? roll(std::vector<int64_t>{shift}, std::vector<int64_t>{*dim})
             : roll(std::vector<int64_t>{shift});
}

// ---- splitting: views ----

std::vector<Tensor> Tensor::split_with_sizes(const std::vector<int64_t>& split_sizes, int64_t dim) const {
  require(this->dim() > 0, "split_with_sizes: expects at least a 1-dimensional tensor");
  int64_t d = normalize_axis(dim, this->dim(), "split_with_sizes"), n = shape()[d];
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    require(s >= 0, "split_with_sizes: expects non-negative sizes, got " + shape_str(split_sizes));
    total = checked_size_sum(total, s, "split_with_sizes");
  }
  require(total == n, "split_with_sizes: sizes " + shape_str(split_sizes) + " must sum to " +
                          std::to_string(n) + ", dimension " + std::to_string(d) + " of shape " +
                          shape_str(shape()));
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    pieces.push_back(slice(d, start, start + s));
    start += s;
  }
  return pieces;
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& split_sizes, int64_t dim) const {
  return split_with_sizes(split_sizes, dim);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  require(this->dim() > 0, "split: expects at least a 1-dimensional tensor");
  int64_t d = normalize_axis(dim, this->dim(), "split"), n = shape()[d];
  require(split_size >= 0, "split: expects a non-negative split_size, got " + std::to_string(split_size));
  require(split_size > 0 || n == 0,
          "split: split_size can only be 0 if the dimension is empty, got dimension " + std::to_string(d) +
              " of shape " + shape_str(shape()));
  // ceil(n / split_size) pieces, the last one shorter; an empty dimension gives one empty piece.
  int64_t count = split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes(count, split_size);
  sizes.back() = n - (count - 1) * split_size;
  return split_with_sizes(sizes, d);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  require(this->dim() > 0, "chunk: expects at least a 1-dimensional tensor");
  require(chunks > 0, "chunk: expects chunks to be greater than 0, got " + std::to_string(chunks));
  int64_t d = normalize_axis(dim, this->dim(), "chunk"), n = shape()[d];
  // Pieces of ceil(n / chunks), so there may be fewer than `chunks` of them, as in PyTorch; an
  // empty dimension gives `chunks` empty pieces.
  if (n == 0) return split_with_sizes(std::vector<int64_t>(chunks, 0), d);
  return split((n + chunks - 1) / chunks, d);
}

std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  require(this->dim() > 0, "unbind: a 0-d tensor has no dimension to unbind", ErrorKind::Index);
  int64_t d = normalize_axis(dim, this->dim(), "unbind");
  std::vector<Tensor> pieces;
  for (int64_t i = 0; i < shape()[d]; i++) pieces.push_back(select(d, i));
  return pieces;
}

// ---- sorting ----

Tensor::ValuesIndices Tensor::sort(int64_t dim, bool descending) const {
  int64_t d = normalize_axis(dim, this->dim(), "sort");
  if (this->dim() == 0) {
    auto [values, indices] = sorted_prefix(reshape({1}), 0, 1, descending);
    return {values.reshape({}), indices.reshape({})};
  }
  return sorted_prefix(*this, d, shape()[d], descending);
}

Tensor Tensor::argsort(int64_t dim, bool descending) const { return sort(dim, descending).indices; }

Tensor::ValuesIndices Tensor::topk(int64_t k, int64_t dim, bool largest, bool /*sorted*/) const {
  int64_t d = normalize_axis(dim, this->dim(), "topk");
  Tensor x = as_1d(*this);
  require(k >= 0 && k <= x.shape()[d], "topk: k " + std::to_string(k) + " is out of range for dimension " +
                                           std::to_string(dim) + " of shape " + shape_str(shape()));
  auto [values, indices] = sorted_prefix(x, d, k, largest);
  if (this->dim() == 0) return {values.reshape({}), indices.reshape({})};
  return {values, indices};
}

// ---- free functions ----

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  require_index_dtype(indices, "embedding");
  require(weight.dim() == 2, "embedding: 'weight' must be 2-D, got shape " + shape_str(weight.shape()));
  // Unlike x[i], no negative index counts from the end: PyTorch's "index out of range in self".
  return take(weight, 0, checked_index(indices, {0, weight.shape()[0], 0, IndexOp::Embedding}));
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
  require(!tensors.empty(), "meshgrid: expects a non-empty list of tensors");
  require(indexing == "ij" || indexing == "xy",
          "meshgrid: indexing must be \"ij\" or \"xy\", got \"" + indexing + "\"");
  Shape out;
  for (const Tensor& t : tensors) {
    require(t.dim() <= 1, "meshgrid: expects 0-d or 1-d tensors, got shape " + shape_str(t.shape()));
    require(t.dtype() == tensors[0].dtype(), "meshgrid: expects all tensors to have the same dtype, got " +
                                                 std::string(dtype_name(tensors[0].dtype())) + " and " +
                                                 std::string(dtype_name(t.dtype())));
    out.push_back(t.numel());
  }
  // "xy" (Cartesian) indexing swaps the first two output axes.
  bool xy = indexing == "xy" && tensors.size() >= 2;
  if (xy) std::swap(out[0], out[1]);
  std::vector<Tensor> grids;
  for (size_t k = 0; k < tensors.size(); k++) {
    int64_t axis = xy && k < 2 ? 1 - static_cast<int64_t>(k) : static_cast<int64_t>(k);
    grids.push_back(tensors[k].reshape(along(tensors[k].numel(), axis, out.size())).expand(out));
  }
  return grids;
}

}  // namespace lazygrad
