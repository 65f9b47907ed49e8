// What a Tensor handle points at. Copies of a Tensor share one TensorImpl, so an in-place update
// is seen through every handle. A view (the result of a movement op) keeps its base and the
// movement ops that lead from it, so it follows the base through realization and assignment.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "ir/uop.h"
#include "lazygrad/error.h"
#include "lazygrad/tensor.h"

namespace lazygrad {

using MovementOp = std::pair<Ops, std::vector<int64_t>>;

struct TensorImpl : std::enable_shared_from_this<TensorImpl> {
  // Every TensorImpl is in a registry while it lives (live_tensors()).
  TensorImpl();
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  UOpPtr uop;                        // a base tensor's graph (null for a view)
  std::shared_ptr<TensorImpl> base;  // a view's base (always a base, never a view)
  std::vector<MovementOp> view_ops;  // applied to the base's current graph, in order
  Shape shape;
  DType dtype = kFloat32;
  // Where a base's values live or will be computed (canonical: "CPU", "CL:1"); a view's is its
  // base's. A graph that reads no buffer (constants, random numbers) is `floating`: it is computed
  // inside whatever kernel reads it, so it may meet a tensor of another device (as PyTorch lets a
  // 0-dim CPU tensor meet a CUDA one); `device` then says where it runs when realized alone, and ""
  // (a constant the frontend made for an op) is wherever its partner is, else the default device.
  std::string device = "CPU";
  bool floating = false;
  bool requires_grad = false;        // a leaf marked by the user, or computed from one
  std::shared_ptr<TensorImpl> grad;  // a leaf's accumulated gradient (lazy)
  // A leaf's graphs before its in-place updates (under NoGrad, as an optimizer's): a forward pass
  // built before an update read the leaf through one of them, and its gradient is still the leaf's.
  std::vector<std::weak_ptr<const UOp>> past;

  // The graph this tensor stands for now. A view rebuilds its chain each time (hash-consing makes
  // that a few lookups) rather than caching it: a cached chain would keep the base's old buffer
  // node alive, and the scheduler counts who still reads a buffer (see schedule.cpp).
  UOpPtr current() const;
};

// Builders shared by the frontend files.
UOpPtr apply_movement(const UOpPtr& u, Ops op, const std::vector<int64_t>& arg);
// A new base tensor, computed from no tensor: on the device of the buffers its graph reads (the
// target of a COPY in it), else on `device` ("" or absent: the default device).
Tensor make_tensor(UOpPtr u, const std::string& device = "");
// The device of the first buffer (or COPY target) below u, breadth first; "" when it reads none.
std::string graph_device(const UOp* u);
// t (a fresh tensor from a factory) placed on `device` ("": as it is); Error when the device is
// unknown or missing.
Tensor placed_on(Tensor t, const std::string& device);
// u (a value on device `from`) copied to device `to`: COPY of u, or of its contiguous copy when u is
// not a whole buffer.
UOpPtr copy_uop(const UOpPtr& u, const std::string& from, const std::string& to);
// Moves a base tensor's values (and its grad's) to `device` in place, keeping its identity, so every
// handle (a module's field, an optimizer's list) sees the move: what nn::Module::to does. Graphs
// built before the move keep reading the old values.
void move_to_device(const Tensor& t, const std::string& device);
// A base tensor's value replaced by `moved` (realized; on another device, or sharded), keeping its
// identity: what move_to_device and shard_ do.
void replace_value(TensorImpl& impl, const Tensor& moved);
// A new base tensor computed from `inputs`: it requires grad if one of them does, unless a NoGrad is
// alive, and then it is cut off from the gradient graph (DETACH).
Tensor make_result(UOpPtr u, std::initializer_list<const Tensor*> inputs);
// The base tensors alive now. realize() computes, before an assign overwrites a buffer in place, every
// live tensor whose lazy graph still reads the buffer's old contents (PyTorch would have computed it
// already): a Jit then captures that read too, and the write never has to go to a copy.
std::vector<std::shared_ptr<TensorImpl>> live_tensors();

// The buffers a graph reads and their versions (how many writes each had): a graph kept for a later
// backward pass records them, and a gradient that would read one overwritten since is an error.
using BufferVersions = std::vector<std::pair<std::weak_ptr<Buffer>, int64_t>>;
BufferVersions versions_read(const UOpPtr& graph);

// Realizing a tensor that requires grad replaces its graph by its buffer; autograd keeps the graph
// it came from (and the versions it read), so gradients still flow through it afterwards (as
// PyTorch's do after a read).
void remember_graph(const TensorImpl& impl, const UOpPtr& before, const UOpPtr& after,
                    BufferVersions versions);
// The graphs autograd keeps: they only record what was read (realize_uops' `passive`).
std::vector<UOpPtr> kept_graphs();
// A gradient given by a function instead of by the primitives under a value: conv2d's input
// gradient as a transposed convolution, a fast kernel, where the gradient of the sliding-window
// view would be a slow one. with_gradient(value, inputs, backward) is value, its own graph cut off
// from autograd: a DETACH whose further sources are the inputs (graph edges, so the scheduler sees
// who reads them) and whose arg is the GradFn. Backpropagation sends the upstream gradient g to
// inputs[i] as backward(g, inputs)[i] (an undefined tensor: none); the inputs it is given are the
// values at the time of the forward pass, as autograd's rules see their sources.
struct GradFn {
  std::function<std::vector<Tensor>(const Tensor& g, const std::vector<Tensor>& inputs)> backward;
};
Tensor with_gradient(
    const Tensor& value, const std::vector<Tensor>& inputs,
    std::function<std::vector<Tensor>(const Tensor& g, const std::vector<Tensor>& inputs)> backward);

// A value that does not vary smoothly with x (trunc, sign: made of integer casts and comparisons,
// which end the gradient graph) tied back to x with a zero gradient, as PyTorch's rules for them
// are: value's result requires grad when x does, and backward gives x zeros, not None.
Tensor with_zero_gradient(const Tensor& value, const Tensor& x);

// index as int64, marked to be checked when its kernel runs: a value outside [check.lo, check.hi)
// (other than check.exempt) is a lazygrad::Error at realize naming check.op (CHECK_INDEX). The
// check runs only if the result is used, so an op reads its index through it.
Tensor checked_index(const Tensor& index, const IndexCheck& check);

// Drops the kept graphs of realized tensors that are gone: they hold old buffers, and the
// scheduler would count them as readers that stop an update from writing in place.
void forget_dead_graphs();

// The random generator's state: the next counter and the key (the Jit moves replays' draws on).
struct RngState {
  uint64_t key = 0, counter = 0;
};
RngState& rng_state();
Tensor make_view(const Tensor& t, Ops op, std::vector<int64_t> arg, Shape shape);  // a view of t
// PyTorch's broadcast of two shapes, or an Error naming the op and both shapes.
Shape broadcast_shape(const Shape& a, const Shape& b, const char* op);
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);
std::vector<int64_t> normalize_axes(const Axes& axes, int64_t ndim, const char* op);
Tensor scalar_tensor(Scalar v, DType dtype);  // a 0-d constant
DType scalar_result_type(const Tensor& t, Scalar s);
// Throws Error(message) of the kind when !ok (ErrorKind::Value for a bad argument value, Index for
// a dimension out of range: the class PyTorch raises for the same mistake).
void require(bool ok, const std::string& message, ErrorKind kind = ErrorKind::Runtime);
// A 16-bit float. The IR rounds every op on one to its dtype, as PyTorch rounds each op; an op the
// frontend composes of several (sigmoid, erf, pow, a matrix product) computes in float32 and
// rounds its result once, as PyTorch computes such an op in float32 ("opmath").
inline bool is_half(DType dt) { return dt == kFloat16 || dt == kBFloat16; }

}  // namespace lazygrad
