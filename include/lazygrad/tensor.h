// Tensor: a cheap, lazy handle. Ops record a graph; nothing runs until a value is needed
// (realize(), item(), to_vector()). Names, argument order and semantics follow PyTorch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "lazygrad/dtype.h"
#include "lazygrad/scalar.h"

namespace lazygrad {

using Shape = std::vector<int64_t>;
struct TensorImpl;
struct UOp;

// One axis or a list of them: sum(1), sum({0, 2}), sum() for all. Negative axes count from the end.
class Axes {
 public:
  Axes() = default;  // all axes
  Axes(int axis) : axes_{axis}, all_(false) {}
  Axes(int64_t axis) : axes_{axis}, all_(false) {}
  Axes(std::initializer_list<int64_t> axes) : axes_(axes), all_(false) {}
  Axes(std::vector<int64_t> axes) : axes_(std::move(axes)), all_(false) {}
  bool all() const { return all_; }
  const std::vector<int64_t>& list() const { return axes_; }

 private:
  std::vector<int64_t> axes_;
  bool all_ = true;
};

class Variable;  // lazygrad/variable.h

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor; most methods throw on it
  bool defined() const { return impl_ != nullptr; }

  // ---- creation (lazy: constants and random numbers are computed inside the consuming kernel) ----
  // `device`: "CPU", "CL", "CL:1", ... (any case); "" is the default device (DEVICE=, else CPU).
  static Tensor empty(const Shape& shape, DType dtype = kFloat32, const std::string& device = "");
  static Tensor zeros(const Shape& shape, DType dtype = kFloat32, const std::string& device = "");
  static Tensor ones(const Shape& shape, DType dtype = kFloat32, const std::string& device = "");
  // dtype defaults like torch.full: float32 for a float value, int64 for an int, bool for a bool.
  static Tensor full(const Shape& shape, Scalar value, std::optional<DType> dtype = std::nullopt,
                     const std::string& device = "");
  static Tensor arange(Scalar end, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor arange(Scalar start, Scalar end, Scalar step = 1, std::optional<DType> dtype = std::nullopt,
                       const std::string& device = "");
  static Tensor linspace(double start, double end, int64_t steps, DType dtype = kFloat32,
                         const std::string& device = "");
  static Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, DType dtype = kFloat32,
                    const std::string& device = "");
  // Copies data in; T is float, double, int32_t, int64_t, uint8_t or bool (and the other int widths).
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, const Shape& shape, const std::string& device = "");
  static Tensor from_bytes(const void* data, size_t nbytes, const Shape& shape, DType dtype,
                           const std::string& device = "");
  // On t's device, with its shape and dtype.
  static Tensor zeros_like(const Tensor& t);
  static Tensor ones_like(const Tensor& t);
  static Tensor full_like(const Tensor& t, Scalar value);

  // Random numbers from a counter-based generator (evaluated inside kernels, identical for any THREADS
  // and on every device).
  static void manual_seed(uint64_t seed);
  static Tensor rand(const Shape& shape, DType dtype = kFloat32, const std::string& device = "");   // U[0, 1)
  static Tensor randn(const Shape& shape, DType dtype = kFloat32, const std::string& device = "");  // N(0, 1)
  static Tensor uniform(const Shape& shape, double low = 0.0, double high = 1.0, DType dtype = kFloat32,
                        const std::string& device = "");
  static Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = kInt64,
                        const std::string& device = "");

  // ---- properties ----
  const Shape& shape() const;
  Shape sizes() const { return shape(); }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t ndim() const { return dim(); }
  int64_t size(int64_t axis) const;
  int64_t numel() const;
  DType dtype() const;
  // canonical: "CPU", "CL", "CL:1"; a sharded tensor's is its devices' tuple, "CPU,CPU:1"
  std::string device() const;
  std::vector<std::string> devices() const;  // the tuple as a list (one device for a tensor on one)
  bool is_sharded() const;
  size_t nbytes() const;
  // The bytes of its data, numel() * element_size(), held or to be held once realized (TinyTorch's
  // name; nn::Module::memory_footprint adds up a model's).
  int64_t memory_footprint() const { return static_cast<int64_t>(nbytes()); }
  size_t element_size() const { return itemsize(dtype()); }
  bool is_realized() const;  // true once backed by a buffer (possibly through a view)

  // ---- evaluation ----
  Tensor& realize();
  const Tensor& realize() const;
  template <class T>
  T item() const;
  template <class T>
  std::vector<T> to_vector() const;  // row-major, converted to T
  std::string to_string() const;

  // ---- elementwise math ----
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor exp2() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor reciprocal() const;
  Tensor relu() const;
  Tensor abs() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor trunc() const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(Scalar exponent) const;
  Tensor to(DType dtype) const;
  // The values on another device (a COPY: a schedule item of its own); itself when already there.
  // Gradients flow back across the copy. Error naming the device when it is unknown or missing.
  // From a sharded tensor to one device it gathers the parts; to a tuple ("CPU,CPU:1") it is
  // shard(devices) (replicated).
  Tensor to(const std::string& device) const;
  Tensor to(const char* device) const { return to(std::string(device)); }
  // tinygrad's sharding (docs/multi.md): the value split along `axis` across `devices`, device i
  // holding the rows shard_bounds gives it (n / k each, the first n % k one more), or a copy on each
  // device when there is no axis. The result is one Tensor whose device() is the tuple: every op
  // works on it as on one device, each device computing its part; a reduction over the split axis
  // ends in an all-reduce, and movement ops that break the split move rows between the devices.
  // Gradients flow back to self. Errors name the shape and devices (fewer rows than devices, a
  // device listed twice).
  Tensor shard(const std::vector<std::string>& devices, std::optional<int64_t> axis = std::nullopt) const;
  // In place, keeping its identity (a module's parameter, an optimizer's list): realizes the parts.
  Tensor& shard_(const std::vector<std::string>& devices, std::optional<int64_t> axis = std::nullopt);
  // A sharded tensor's parts, realized, one Tensor per device (each device's rows); {self} otherwise.
  std::vector<Tensor> shards() const;
  Tensor cast(DType dtype) const { return to(dtype); }
  // The same bytes read as another dtype (tinygrad's bitcast, PyTorch's view(dtype)): the last
  // dimension scales by the ratio of the item sizes. Realizes self and copies its bytes into a new
  // buffer on its device (PyTorch's view shares the memory). No gradient; bool only from bool.
  Tensor bitcast(DType dtype) const;

  Tensor add(const Tensor& other) const;
  Tensor add(Scalar other) const;
  Tensor sub(const Tensor& other) const;
  Tensor sub(Scalar other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(Scalar other) const;
  Tensor div(const Tensor& other) const;  // true division: integers give float32
  Tensor div(Scalar other) const;
  Tensor floor_divide(const Tensor& other) const;  // rounds toward -inf, like Python's //
  Tensor floor_divide(Scalar other) const;
  Tensor remainder(const Tensor& other) const;  // sign of the divisor, like Python's %
  Tensor remainder(Scalar other) const;

  // Comparisons give bool tensors.
  Tensor eq(const Tensor& other) const;
  Tensor eq(Scalar other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(Scalar other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(Scalar other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(Scalar other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(Scalar other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(Scalar other) const;
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;

  // Bitwise ops on integer and bool tensors.
  Tensor bitwise_and(const Tensor& other) const;
  Tensor bitwise_or(const Tensor& other) const;
  Tensor bitwise_xor(const Tensor& other) const;
  Tensor bitwise_not() const;
  Tensor bitwise_left_shift(const Tensor& other) const;
  Tensor bitwise_right_shift(const Tensor& other) const;

  // self where condition is true, other elsewhere (PyTorch's Tensor.where).
  Tensor where(const Tensor& condition, const Tensor& other) const;
  Tensor where(const Tensor& condition, Scalar other) const;

  // ---- reductions: axes may be one int or a list; empty means all ----
  Tensor sum(Axes axes = {}, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(Axes axes = {}, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max(Axes axes = {}, bool keepdim = false) const;
  Tensor min(Axes axes = {}, bool keepdim = false) const;
  Tensor mean(Axes axes = {}, bool keepdim = false) const;
  Tensor softmax(int64_t axis) const;
  Tensor log_softmax(int64_t axis) const;

  // ---- movement: views, never copies ----
  Tensor reshape(const Shape& shape) const;  // one -1 is inferred
  Tensor view(const Shape& shape) const { return reshape(shape); }
  Tensor permute(const Shape& order) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;                         // 2-D transpose
  Tensor expand(const Shape& shape) const;  // -1 keeps a size
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  // torch.nn.functional.pad order: (left, right) pairs starting from the LAST dimension.
  Tensor pad(const std::vector<int64_t>& padding, Scalar value = 0) const;
  // F.pad with a mode: Constant (value), Reflect (mirror without the edge; each pad < the size),
  // Replicate (the edge repeated) or Circular (wrap around; each pad <= the size). Views of
  // shrinks, flips and cats, so they fuse. Any dimension may be padded in every mode (PyTorch 1.13
  // limits the non-constant modes to the last 1-3 dimensions of a 2-D to 5-D input; tinygrad does not).
  // An enum, not a string: x.pad({1, 1}, 0) must stay the constant pad with value 0.
  enum class PadMode { Constant, Reflect, Replicate, Circular };
  // F.pad's names ("constant", "reflect", "replicate", "circular"); another is an Error (NotImplemented).
  static PadMode pad_mode(const std::string& name);
  Tensor pad(const std::vector<int64_t>& padding, PadMode mode, Scalar value = 0) const;
  // x[start:end:step] along dim; negative start/end count from the end and are clamped like Python's
  // (and aten::slice's).
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step = 1) const;
  // tinygrad's shrink: [start, end) along every dimension, one pair each. The bounds are exact, never
  // clamped: a pair outside 0 <= start <= end <= size is a lazygrad::Error.
  Tensor shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  // narrow() at a Variable's position: `length` elements along dim from start's value when the
  // kernel runs, so one compiled kernel (and one Jit capture) serves every position, as a decode
  // step's needs. A value outside [0, size(dim) - length] at launch is a lazygrad::Error. No gradient.
  Tensor narrow(int64_t dim, const Variable& start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  // x[..., index, ...], removes dim
  Tensor flip(Axes dims) const;
  Tensor contiguous() const;  // forces a kernel that writes a fresh, contiguous buffer
  Tensor clone() const;       // always a new buffer with a copy of the values
  static Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
  static Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

  // ---- autograd (src/tensor/autograd.cpp): gradients from rules for the primitive ops ----
  // Marks a floating-point tensor as a leaf that collects gradients (it is realized first).
  Tensor& requires_grad(bool on);
  // True for a marked leaf and for a floating-point result computed from one. An integer or bool
  // result (x.to(kInt32), x > 0, argmax) ends the gradient graph, as in PyTorch: it does not
  // require grad, nor does a float computed from it alone (x.to(kInt32).to(kFloat32)).
  bool requires_grad() const;
  bool is_leaf() const;  // created by the user rather than computed from a tensor that requires grad
  // d(this)/d(leaves), accumulated into each leaf's grad(). Without a gradient, this must be a scalar.
  // An Error when this does not require grad (no leaf reaches it through floating-point ops).
  void backward() const;
  void backward(const Tensor& gradient) const;
  Tensor grad() const;    // undefined until a backward reaches this leaf
  void zero_grad();       // forgets the accumulated gradient (PyTorch's set_to_none)
  // Replaces the gradient (PyTorch's `p.grad = g`): same shape, dtype and device, or undefined to
  // forget it. Data-parallel training sets each replica's all-reduced gradient this way.
  void set_grad(const Tensor& grad);
  Tensor detach() const;  // the same data, cut off from the gradient graph
  // Gradients of this with respect to `targets` (tinygrad's Tensor.gradient); no .grad is touched.
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets,
                               std::optional<Tensor> gradient = std::nullopt) const;

  // ---- math and activations (src/tensor/math.cpp) ----
  // (issue 3: math)
  // Integer and bool inputs give float32, as in PyTorch, unless noted.
  Tensor rsqrt() const;
  Tensor tan() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor expm1() const;  // exp(x) - 1, accurate near 0
  Tensor log1p() const;  // log(1 + x), accurate near 0
  Tensor erf() const;
  Tensor erfc() const;    // 1 - erf(x), accurate where erf(x) is near 1
  Tensor sign() const;    // keeps the dtype; NaN gives 0 (torch 1.13)
  Tensor square() const;  // keeps the dtype (bool gives int64)
  Tensor round() const;   // half to even; keeps the dtype
  // At least one bound; the result dtype is PyTorch's promotion of the input and the bounds.
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
  Tensor lerp(const Tensor& end, Scalar weight) const;  // start + weight * (end - start)
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor isnan() const;  // bool
  // bool; tinygrad's detect_positive/detect_negative pick which infinities count.
  Tensor isinf(bool detect_positive = true, bool detect_negative = true) const;
  // posinf/neginf default to the dtype's largest finite values.
  Tensor nan_to_num(double nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  // Activations (torch.nn.functional). Floating point only unless noted.
  Tensor relu6() const;  // also integers
  Tensor leaky_relu(double negative_slope = 0.01) const;
  Tensor elu(double alpha = 1.0) const;
  Tensor selu() const;
  Tensor gelu(const std::string& approximate = "none") const;  // "none" (erf) or "tanh"
  Tensor silu() const;
  Tensor mish() const;
  Tensor softplus(double beta = 1.0, double threshold = 20.0) const;
  Tensor softsign() const;                                             // also integers (float32 result)
  Tensor hardtanh(double min_val = -1.0, double max_val = 1.0) const;  // also integers
  Tensor hardswish() const;
  Tensor hardsigmoid() const;

  // ---- more math (src/tensor/math_inverse.cpp, src/tensor/math_binary.cpp) ----
  // (issue 16: math) Integer and bool inputs give float32, as in PyTorch, unless noted.
  // Inverse trigonometric and hyperbolic functions; outside the domain the value is NaN.
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor atan2(const Tensor& other) const;  // the angle of (other, self) in (-pi, pi]; self is y
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor log10() const;
  // Truncated remainder (C's fmod: the sign of the dividend); integers too.
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(Scalar other) const;
  Tensor copysign(const Tensor& other) const;  // |self| with other's sign (of -0.0 too); float result
  Tensor copysign(Scalar other) const;
  Tensor logaddexp(const Tensor& other) const;   // log(exp(self) + exp(other)), stable
  Tensor logaddexp2(const Tensor& other) const;  // log2(2^self + 2^other), stable
  // |self - other| <= atol + rtol * |other|, elementwise (bool); infinities equal when they match.
  Tensor isclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;
  bool allclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;
  Tensor softmin(int64_t dim) const;  // softmax(-self)
  // F.normalize: self / max(norm_p(self, dim), eps).
  Tensor normalize(double p = 2.0, int64_t dim = 1, double eps = 1e-12) const;

  // ---- more reductions (src/tensor/reduce_more.cpp) ----
  // (issue 3: reductions)
  // correction 1 is Bessel's (unbiased); a bool converts to PyTorch's `unbiased`.
  Tensor var(Axes axes = {}, double correction = 1, bool keepdim = false) const;
  Tensor std(Axes axes = {}, double correction = 1, bool keepdim = false) const;
  Tensor logsumexp(Axes axes, bool keepdim = false) const;  // stable; a row of -inf gives -inf
  // int64 index of the first largest (smallest) value; NaN counts as the largest (smallest).
  // Without an axis, the index into the flattened tensor.
  Tensor argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor any(Axes axes = {}, bool keepdim = false) const;  // bool (uint8 for uint8 input, as PyTorch)
  Tensor all(Axes axes = {}, bool keepdim = false) const;
  // Running sum and product along dim; integers and bool accumulate in int64 unless dtype is given.
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  // Vector p-norm over axes (torch.linalg.vector_norm): p = 2, 1, inf, -inf, 0 (count of nonzeros)
  // or any other real p.
  Tensor norm(double p = 2, Axes axes = {}, bool keepdim = false) const;
  Tensor logcumsumexp(int64_t dim) const;  // running logsumexp (src/tensor/scan_more.cpp); stable

  // ---- linear algebra, convolution and pooling (src/tensor/linalg.cpp, src/tensor/conv.cpp) ----
  // (issue 3: linalg)
  // PyTorch's int-or-tuple arguments (kernel_size, stride, padding, dilation, output_size, size):
  // one value used for every spatial dimension, or one value per dimension: 2, {2, 3}.
  // Empty ({}) stands for PyTorch's None where an argument allows it (a pool's stride, interpolate's size).
  class IntList {
   public:
    IntList() = default;
    IntList(int value) : values_{value} {}
    IntList(int64_t value) : values_{value} {}
    IntList(std::initializer_list<int64_t> values) : values_(values) {}
    IntList(std::vector<int64_t> values) : values_(std::move(values)) {}
    bool empty() const { return values_.empty(); }
    const std::vector<int64_t>& values() const { return values_; }

   private:
    std::vector<int64_t> values_;
  };
  // A convolution's padding: an IntList of zeros added on both sides, or "valid" (none) or "same"
  // (the output keeps the input's size; stride 1 only; an odd total puts the extra zero at the end).
  class ConvPadding {
   public:
    ConvPadding(int value) : sizes_(value) {}
    ConvPadding(int64_t value) : sizes_(value) {}
    ConvPadding(std::initializer_list<int64_t> values) : sizes_(values) {}
    ConvPadding(std::vector<int64_t> values) : sizes_(std::move(values)) {}
    ConvPadding(const char* mode) : mode_(mode) {}
    ConvPadding(std::string mode) : mode_(std::move(mode)) {}
    const IntList& sizes() const { return sizes_; }
    const std::string& mode() const { return mode_; }  // "same", "valid", or empty for sizes()

   private:
    IntList sizes_;
    std::string mode_;
  };

  // torch.matmul: 1-D operands get a dimension prepended (left) or appended (right) and removed
  // again; batch dimensions broadcast. Operands must share a dtype, as in PyTorch.
  Tensor matmul(const Tensor& other) const;
  Tensor dot(const Tensor& other) const;    // two 1-D tensors of one size and dtype
  Tensor outer(const Tensor& other) const;  // two 1-D tensors; promotes like multiplication
  // F.linear: x @ weight.T + bias, weight [out_features, in_features].
  Tensor linear(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt) const;
  Tensor tril(int64_t diagonal = 0) const;  // zero above the diagonal of the last two dimensions
  Tensor triu(int64_t diagonal = 0) const;  // zero below it
  // (issue 16: diagonals, src/tensor/diagonal.cpp)
  // torch.diag: a 1-D tensor becomes a square matrix with it on the given diagonal; a 2-D tensor
  // gives that diagonal (1-D, a copy).
  Tensor diag(int64_t diagonal = 0) const;
  // torch.diagonal: the diagonal of the (dim1, dim2) planes, as a last dimension (a view: pad,
  // reshape and shrink, no copy).
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  // torch.Tensor.unfold: the windows of `size` elements every `step` along `dimension`, as a new
  // last dimension of size `size` (a view).
  Tensor unfold(int64_t dimension, int64_t size, int64_t step) const;

  // F.conv1d/2d/3d: input [N, C_in, *spatial] (or unbatched [C_in, *spatial]), weight
  // [C_out, C_in / groups, *kernel], bias [C_out].
  Tensor conv1d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt, IntList stride = 1,
                ConvPadding padding = 0, IntList dilation = 1, int64_t groups = 1) const;
  Tensor conv2d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt, IntList stride = 1,
                ConvPadding padding = 0, IntList dilation = 1, int64_t groups = 1) const;
  Tensor conv3d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt, IntList stride = 1,
                ConvPadding padding = 0, IntList dilation = 1, int64_t groups = 1) const;
  // F.conv_transpose1d/2d, in PyTorch's argument order (groups before dilation); weight
  // [C_in, C_out / groups, *kernel].
  Tensor conv_transpose1d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
                          IntList stride = 1, IntList padding = 0, IntList output_padding = 0,
                          int64_t groups = 1, IntList dilation = 1) const;
  Tensor conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
                          IntList stride = 1, IntList padding = 0, IntList output_padding = 0,
                          int64_t groups = 1, IntList dilation = 1) const;
  // F.max_pool1d/2d on [N, C, *spatial] or [C, *spatial]; stride {} means kernel_size. Padding
  // reads as -inf. Tied maxima share the gradient, where PyTorch gives it all to the first one.
  Tensor max_pool1d(IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                    bool ceil_mode = false) const;
  Tensor max_pool2d(IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                    bool ceil_mode = false) const;
  Tensor max_pool3d(IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                    bool ceil_mode = false) const;
  // max_pool with return_indices=True: {values, int64 indices}, each index the flat position of the
  // maximum within its input plane (spatial dimensions only, as PyTorch's), the first one on ties.
  struct ValuesIndices;  // {values, indices}; defined below the class
  ValuesIndices max_pool1d_with_indices(IntList kernel_size, IntList stride = {}, IntList padding = 0,
                                        IntList dilation = 1, bool ceil_mode = false) const;
  ValuesIndices max_pool2d_with_indices(IntList kernel_size, IntList stride = {}, IntList padding = 0,
                                        IntList dilation = 1, bool ceil_mode = false) const;
  ValuesIndices max_pool3d_with_indices(IntList kernel_size, IntList stride = {}, IntList padding = 0,
                                        IntList dilation = 1, bool ceil_mode = false) const;
  // F.max_unpool1d/2d/3d: self (pooled values) written at `indices` (from max_pool*_with_indices)
  // into zeros of the output size: output_size (the spatial sizes, or all of them) or else
  // (in - 1) * stride - 2 * padding + kernel_size. A scatter, so it fuses; an index outside the
  // plane is an Error at realize.
  Tensor max_unpool1d(const Tensor& indices, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                      IntList output_size = {}) const;
  Tensor max_unpool2d(const Tensor& indices, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                      IntList output_size = {}) const;
  Tensor max_unpool3d(const Tensor& indices, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                      IntList output_size = {}) const;
  // F.avg_pool1d/2d/3d; stride {} means kernel_size.
  Tensor avg_pool1d(IntList kernel_size, IntList stride = {}, IntList padding = 0, bool ceil_mode = false,
                    bool count_include_pad = true) const;
  Tensor avg_pool2d(IntList kernel_size, IntList stride = {}, IntList padding = 0, bool ceil_mode = false,
                    bool count_include_pad = true,
                    std::optional<int64_t> divisor_override = std::nullopt) const;
  Tensor avg_pool3d(IntList kernel_size, IntList stride = {}, IntList padding = 0, bool ceil_mode = false,
                    bool count_include_pad = true,
                    std::optional<int64_t> divisor_override = std::nullopt) const;
  Tensor adaptive_avg_pool2d(IntList output_size) const;  // [N, C, H, W] or [C, H, W]
  // F.interpolate of [N, C, W], [N, C, H, W] or [N, C, D, H, W]: size or scale_factor (the other
  // empty); mode "nearest", "nearest-exact", "area", "linear" (3-D), "bilinear" or "bicubic" (4-D),
  // "trilinear" (5-D); align_corners only for the (bi/tri)linear and bicubic modes.
  Tensor interpolate(IntList size = {}, std::vector<double> scale_factor = {},
                     const std::string& mode = "nearest",
                     std::optional<bool> align_corners = std::nullopt) const;

  // ---- indexing (src/tensor/indexing.cpp) ----
  // (issue 3: indexing)
  // Gathers and scatters compare the index with an arange (a one-hot along dim) and reduce, so each
  // fuses into one or two kernels. Indices of any integer dtype are accepted. An out-of-range index
  // is a lazygrad::Error when the kernel that reads it runs (at realize, since checking at the call
  // would force the index to be computed), naming the op, the dimension and its size, as PyTorch
  // raises; only x.index (x[i]) counts negative indices from the end.
  Tensor gather(int64_t dim, const Tensor& index) const;
  // torch.take_along_dim: gather after broadcasting self and indices (but along dim); no dim: flat.
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;  // index: 0-d or 1-d
  // x[..., indices] with indices on dimension `dim`: an index tensor of any shape replaces that
  // dimension (x.index(0, i) is PyTorch's x[i]); negative indices count from the end.
  Tensor index(int64_t dim, const Tensor& indices) const;
  // With duplicate indices the last write wins, as in PyTorch on the CPU.
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, Scalar value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;  // value: a 0-d tensor
  // scatter(..., reduce=): "add" or "multiply" combines every write into self (duplicates too).
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const;
  Tensor scatter(int64_t dim, const Tensor& index, Scalar value, const std::string& reduce) const;
  // torch.scatter_reduce: reduce "sum", "prod", "mean", "amax" or "amin" of the src elements that
  // index sends to each position, with self's element too when include_self. Positions nobody
  // writes keep self's value.
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true) const;
  // Data-dependent shapes: the size of the result depends on the values, so these realize the mask
  // (self for nonzero) and read its count on the host before building the lazy gather.
  Tensor masked_select(const Tensor& mask) const;  // 1-D, in row-major order; self and mask broadcast
  Tensor nonzero() const;                          // [count, dim] int64 coordinates of the nonzeros
  std::vector<Tensor> nonzero_tuple() const;       // nonzero(as_tuple=True): dim 1-D int64 tensors
  Tensor argwhere() const { return nonzero(); }
  // F.one_hot of an int64 tensor, int64 result. num_classes = -1 reads max + 1 from the values, which
  // realizes self; with a given num_classes, a value outside [0, num_classes) is an Error at realize.
  Tensor one_hot(int64_t num_classes = -1) const;
  Tensor repeat(const Shape& repeats) const;  // views: expand and reshape, no copy
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  // Rolls along each of dims by the matching shift; no dims: the flattened tensor. A view.
  Tensor roll(const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims = {}) const;
  Tensor roll(int64_t shift, std::optional<int64_t> dim = std::nullopt) const;
  // Views. Beware: split({2}) is split(2), chunks of 2; split_with_sizes({2}) is one piece of 2.
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(const std::vector<int64_t>& split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  // Sorting ranks each element by counting the elements that precede it (O(n^2) comparisons per
  // row, fused into one kernel), then gathers by rank. Stable; NaN sorts as the largest value.
  ValuesIndices sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  // Always sorted, ties in index order (PyTorch's order of ties, and of sorted=false, is unspecified).
  ValuesIndices topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  // (issue 16, src/tensor/scan_more.cpp) Running max/min along dim with int64 indices; on ties the
  // index of the last occurrence, and a NaN, once seen, stays the extreme (torch 1.13 on the CPU).
  ValuesIndices cummax(int64_t dim) const;
  ValuesIndices cummin(int64_t dim) const;

  // ---- losses, normalization, attention, dropout (src/tensor/losses.cpp, normalization.cpp, ...) ----
  // (issue 3: functional)
  // Losses (src/tensor/losses.cpp), as torch.nn.functional. reduction is "mean", "sum" or "none"; an
  // absent weight is std::nullopt. Class indices may be any integer dtype and are not range-checked
  // (that would force the target to be computed): an index outside [0, C) contributes 0 (PyTorch raises).
  // cross_entropy: self holds logits [N, C, d1, ...] or [C]; the target is class indices [N, d1, ...]
  // (or 0-d) or, when shaped like self, class probabilities (float).
  Tensor cross_entropy(const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                       int64_t ignore_index = -100, const std::string& reduction = "mean",
                       double label_smoothing = 0.0) const;
  Tensor nll_loss(const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                  int64_t ignore_index = -100, const std::string& reduction = "mean") const;
  // self holds probabilities; each log is clamped at -100, as in PyTorch.
  Tensor binary_cross_entropy(const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                              const std::string& reduction = "mean") const;
  Tensor binary_cross_entropy_with_logits(const Tensor& target,
                                          const std::optional<Tensor>& weight = std::nullopt,
                                          const std::string& reduction = "mean",
                                          const std::optional<Tensor>& pos_weight = std::nullopt) const;
  Tensor mse_loss(const Tensor& target, const std::string& reduction = "mean") const;
  Tensor l1_loss(const Tensor& target, const std::string& reduction = "mean") const;
  Tensor smooth_l1_loss(const Tensor& target, const std::string& reduction = "mean", double beta = 1.0) const;
  // self holds log-probabilities. "mean" divides by numel, as PyTorch does; "batchmean" divides by
  // size(0), which is the KL divergence.
  Tensor kl_div(const Tensor& target, const std::string& reduction = "mean", bool log_target = false) const;

  // Normalization (src/tensor/normalization.cpp). Variances are biased; 16-bit inputs are
  // normalized in float32.
  Tensor layer_norm(const Shape& normalized_shape, const std::optional<Tensor>& weight = std::nullopt,
                    const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5) const;
  // self is [N, C, ...]. training: batch statistics, and running_mean/running_var (when given) are
  // updated in place with assign (unbiased variance, as in PyTorch), outside the gradient graph.
  // Otherwise the running statistics are used and must be given.
  Tensor batch_norm(const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                    const std::optional<Tensor>& weight = std::nullopt,
                    const std::optional<Tensor>& bias = std::nullopt, bool training = false,
                    double momentum = 0.1, double eps = 1e-5) const;
  Tensor group_norm(int64_t num_groups, const std::optional<Tensor>& weight = std::nullopt,
                    const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5) const;
  // x / sqrt(mean(x^2) + eps) * weight; eps defaults to the dtype's machine epsilon (torch 2.4's F.rms_norm).
  Tensor rms_norm(const Shape& normalized_shape, const std::optional<Tensor>& weight = std::nullopt,
                  std::optional<double> eps = std::nullopt) const;

  // Dropout and attention (src/tensor/nn_functional.cpp). dropout zeroes each element with
  // probability p, from Tensor::rand (so manual_seed makes it repeatable), and scales the kept ones
  // by 1 / (1 - p). Not training, or p = 0: self unchanged.
  Tensor dropout(double p = 0.5, bool training = true) const;
  // self is the query; see the free function scaled_dot_product_attention below.
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value,
                                      const std::optional<Tensor>& attn_mask = std::nullopt,
                                      double dropout_p = 0.0, bool is_causal = false,
                                      std::optional<double> scale = std::nullopt) const;

  // ---- in place: seen through every handle and view of this data ----
  Tensor& assign(const Tensor& value);
  // torch's narrow(dim, start, n).copy_(value) that writes only the n slices (one kernel over
  // value's elements, not over the whole tensor: a KV cache's one new position). value broadcasts
  // to the region. A lazy tensor is realized first. With a Variable, the start is read when the
  // kernel runs (see narrow above). Not on a view; no gradient flows through the write. Unlike
  // assign, the write cannot go to a copy: realizing it while a lazy tensor still reads the old
  // contents (y = t * 2 built before, not yet realized) is an Error; realize that reader first.
  Tensor& narrow_assign(int64_t dim, int64_t start, const Tensor& value);
  Tensor& narrow_assign(int64_t dim, const Variable& start, const Tensor& value);
  Tensor& operator+=(const Tensor& other);
  Tensor& operator+=(Scalar other);
  Tensor& operator-=(const Tensor& other);
  Tensor& operator-=(Scalar other);
  Tensor& operator*=(const Tensor& other);
  Tensor& operator*=(Scalar other);
  Tensor& operator/=(const Tensor& other);
  Tensor& operator/=(Scalar other);

  // Internal: the graph node this tensor stands for now.
  std::shared_ptr<const UOp> uop() const;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  static Tensor from_uop(std::shared_ptr<const UOp> op);
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Realize several tensors in one schedule, so shared work is done once and kernels fuse across them.
void realize(std::vector<Tensor> tensors);

// While a NoGrad is alive (on any thread), new results do not require grad and are cut off from
// the gradient graph, as under torch.no_grad().
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;
  static bool active();
};

// ---- free functions of issue 3 (PyTorch's torch.* spellings) ----
// (issue 3: free functions)
// torch.einsum: explicit ("ij,jk->ik") or implicit ("ij,jk") output, "..." for broadcast
// dimensions, a repeated index within one operand takes its diagonal ("ii->i", trace "ii->").
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
// F.scaled_dot_product_attention: softmax(query @ key^T * scale + mask) @ value, with query
// [..., L, E], key [..., S, E], value [..., S, Ev] (batch dimensions broadcast). A bool mask keeps
// the positions that are true; a float mask is added. is_causal keeps key j <= query i (no attn_mask
// then). scale defaults to 1 / sqrt(E). dropout_p > 0 drops attention weights (always, as PyTorch).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask = std::nullopt,
                                    double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);
// sort and topk results (indexing): `auto [values, indices] = x.sort();`
struct Tensor::ValuesIndices {
  Tensor values;
  Tensor indices;
};
// torch.meshgrid of 0-d or 1-d tensors of one dtype: views (expands). indexing "ij" or "xy".
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");
// F.embedding: the rows of a 2-D weight at integer indices of any shape (nn::Embedding's lookup); an
// index outside [0, rows) is an Error at realize (negative ones too, as in PyTorch).
Tensor embedding(const Tensor& indices, const Tensor& weight);
// (issue 16, src/tensor/im2col.cpp) F.unfold (im2col) of [N, C, H, W] or [C, H, W]: each
// kernel_size block of the padded input as a column, [N, C * kh * kw, L] with L blocks. Views and a
// reshape (Tensor::unfold twice), no gather.
Tensor unfold(const Tensor& input, Tensor::IntList kernel_size, Tensor::IntList dilation = 1,
              Tensor::IntList padding = 0, Tensor::IntList stride = 1);

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);
Tensor where(const Tensor& condition, Scalar x, const Tensor& y);
Tensor where(const Tensor& condition, const Tensor& x, Scalar y);

Tensor operator-(const Tensor& a);
Tensor operator~(const Tensor& a);
Tensor operator!(const Tensor& a);
// Binary operators broadcast like PyTorch; a Scalar on either side follows PyTorch's promotion.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, Scalar b);
Tensor operator%(Scalar a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<(Scalar a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator<=(Scalar a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>(Scalar a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, Scalar b);
Tensor operator>=(Scalar a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator==(Scalar a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator!=(Scalar a, const Tensor& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, Scalar b);
Tensor operator&(Scalar a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, Scalar b);
Tensor operator|(Scalar a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, Scalar b);
Tensor operator^(Scalar a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, Scalar b);
Tensor operator<<(Scalar a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, Scalar b);
Tensor operator>>(Scalar a, const Tensor& b);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace lazygrad
