// Reductions, from REDUCE_AXIS with ADD, MAX or MUL; min through max; softmax from max, exp, sum.
#include <algorithm>
#include <cmath>

#include "tensor/tensor_impl.h"

namespace lazygrad {

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts axis 0 and -1, like PyTorch
  if (axis < -n || axis >= n)
    throw IndexError(std::string(op) + ": dimension " + std::to_string(axis) + " out of range for a " +
                     std::to_string(ndim) + "-d tensor (expected in [" + std::to_string(-n) + ", " +
                     std::to_string(n - 1) + "])");
  return axis < 0 ? axis + n : axis;
}

std::vector<int64_t> normalize_axes(const Axes& axes, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  if (axes.all() || axes.list().empty()) {
    for (int64_t i = 0; i < ndim; i++) out.push_back(i);
    return out;
  }
  for (int64_t a : axes.list()) {
    int64_t n = normalize_axis(a, ndim, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw Error(std::string(op) + ": dimension " + std::to_string(a) + " appears more than once");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

Tensor reduce(const Tensor& x, Ops op, const Axes& axes, bool keepdim, const char* name) {
  std::vector<int64_t> ax = normalize_axes(axes, x.dim(), name);
  if (x.dim() == 0) ax.clear();
  if (op == Ops::MAX)
    for (int64_t a : ax)
      require(x.shape()[a] != 0,
              std::string(name) + ": reduction over a zero-size dimension " + std::to_string(a) +
                  " of shape " + shape_str(x.shape()) + " has no identity",
              axes.all() ? ErrorKind::Runtime : ErrorKind::Index);  // PyTorch: IndexError for a named dim
  Tensor r =
      ax.empty() ? x : make_result(make_uop(Ops::REDUCE_AXIS, x.dtype(), {x.uop()}, ReduceArg{op, ax}), {&x});
  if (keepdim) return r;
  Shape s;
  for (int64_t i = 0; i < x.dim(); i++)
    if (std::find(ax.begin(), ax.end(), i) == ax.end()) s.push_back(x.shape()[i]);
  return r.reshape(s);
}

// sum and prod of integers and bools accumulate in int64, as in PyTorch.
DType accumulate_type(DType dt, std::optional<DType> requested) {
  if (requested) return *requested;
  return is_float(dt) ? dt : kInt64;
}

}  // namespace

Tensor Tensor::sum(Axes axes, bool keepdim, std::optional<DType> dtype) const {
  return reduce(to(accumulate_type(this->dtype(), dtype)), Ops::ADD, axes, keepdim, "sum");
}
Tensor Tensor::prod(Axes axes, bool keepdim, std::optional<DType> dtype) const {
  return reduce(to(accumulate_type(this->dtype(), dtype)), Ops::MUL, axes, keepdim, "prod");
}
Tensor Tensor::max(Axes axes, bool keepdim) const { return reduce(*this, Ops::MAX, axes, keepdim, "max"); }
Tensor Tensor::min(Axes axes, bool keepdim) const {
  // Order-reversing maps turn min into max: -x for floats, ~x for integers, !x for bools.
  if (is_float(dtype())) return reduce(neg(), Ops::MAX, axes, keepdim, "min").neg();
  if (dtype() == kBool) return reduce(logical_not(), Ops::MAX, axes, keepdim, "min").logical_not();
  return reduce(bitwise_not(), Ops::MAX, axes, keepdim, "min").bitwise_not();
}
Tensor Tensor::mean(Axes axes, bool keepdim) const {
  require(is_float(dtype()), "mean: could not infer output dtype; input dtype " +
                                 std::string(dtype_name(dtype())) + " must be floating point");
  std::vector<int64_t> ax = normalize_axes(axes, dim(), "mean");
  int64_t count = 1;
  for (int64_t a : ax)
    if (dim() > 0) count *= shape()[a];
  Tensor s = sum(axes, keepdim);
  // An empty reduction divides 0 by 0: NaN, as in PyTorch.
  return count == 0 ? s * std::nan("") : s / static_cast<double>(count);
}

namespace {
// softmax computes in float32 for 16-bit inputs: its max and sum are stored between kernels, and in
// 16 bits they would lose what PyTorch keeps (it accumulates in float32 too).
DType softmax_type(DType dt) { return dt == kFloat64 ? kFloat64 : kFloat32; }
}  // namespace

Tensor Tensor::softmax(int64_t axis) const {
  int64_t a = normalize_axis(axis, dim(), "softmax");
  DType out = is_float(dtype()) ? dtype() : kFloat32;
  if (numel() == 0) return to(out);
  Tensor x = to(softmax_type(dtype()));
  // The max only keeps exp in range; its gradient cancels exactly, so it is detached (as tinygrad
  // does) and the backward pass needs no max-reduction of its own.
  Tensor e = (x - x.max(a, true).detach()).exp();
  return (e / e.sum(a, true)).to(out);
}

Tensor Tensor::log_softmax(int64_t axis) const {
  int64_t a = normalize_axis(axis, dim(), "log_softmax");
  DType out = is_float(dtype()) ? dtype() : kFloat32;
  if (numel() == 0) return to(out);
  Tensor x = to(softmax_type(dtype()));
  Tensor shifted = x - x.max(a, true).detach();  // see softmax
  return (shifted - shifted.exp().sum(a, true).log()).to(out);
}

}  // namespace lazygrad
