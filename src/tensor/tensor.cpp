// The Tensor handle: properties, realization, reading values out, in-place assignment, printing.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "engine/realize.h"
#include "engine/schedule.h"
#include "lazygrad/variable.h"
#include "multi/shard.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "shape/size.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

void require(bool ok, const std::string& message, ErrorKind kind) {
  if (ok) return;
  // The kind's own class, so that C++ callers can catch lazygrad::IndexError and the like too.
  switch (kind) {
    case ErrorKind::Index:
      throw IndexError(message);
    case ErrorKind::Value:
      throw ValueError(message);
    case ErrorKind::Type:
      throw TypeError(message);
    case ErrorKind::NotImplemented:
      throw NotImplementedError(message);
    default:
      throw Error(message, kind);
  }
}

// Every movement op is a node of its own, even a reshape of a reshape: a leaf's node (often a
// reshape of its buffer) must stay in the graphs built on it, or autograd could not find it.
// The views fold into one ShapeTracker when a kernel is lowered.
UOpPtr apply_movement(const UOpPtr& u, Ops op, const std::vector<int64_t>& arg) {
  return make_uop(op, u->dtype, {u}, arg);
}

namespace {
// The registry of live tensors: raw pointers, each added by its constructor and removed by its
// destructor under the lock, so a pointer found here is never one already destroyed.
struct LiveTensors {
  std::mutex mu;
  std::unordered_set<TensorImpl*> all;
};
LiveTensors& live_registry() {
  static LiveTensors* r = new LiveTensors();  // never destroyed: tensors die during static destruction
  return *r;
}
}  // namespace

TensorImpl::TensorImpl() {
  LiveTensors& r = live_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.all.insert(this);
}

TensorImpl::~TensorImpl() {
  LiveTensors& r = live_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.all.erase(this);
}

std::vector<std::shared_ptr<TensorImpl>> live_tensors() {
  LiveTensors& r = live_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::shared_ptr<TensorImpl>> out;
  for (TensorImpl* t : r.all)
    if (!t->base)
      if (auto p = t->weak_from_this().lock()) out.push_back(std::move(p));  // null while it is dying
  return out;
}

UOpPtr TensorImpl::current() const {
  if (!base) return uop;
  UOpPtr v = base->current();
  for (const auto& [op, arg] : view_ops) v = apply_movement(v, op, arg);
  return v;
}

std::string graph_device(const UOp* root) {
  // Breadth first: the nearest buffer is usually a step or two away (a weight), where depth first
  // would walk a long chain of activations down to the input.
  std::deque<const UOp*> todo{root};
  std::unordered_set<const UOp*> seen{root};
  while (!todo.empty()) {
    const UOp* u = todo.front();
    todo.pop_front();
    if (u->op == Ops::BUFFER) return u->as<std::shared_ptr<Buffer>>()->device;
    if (u->op == Ops::COPY) return u->as<CopyArg>().to;
    if (u->op == Ops::MULTI) return join_devices(u->as<MultiArg>().devices);
    for (const auto& s : u->src)
      if (seen.insert(s.get()).second) todo.push_back(s.get());
  }
  return "";
}

Tensor make_tensor(UOpPtr u, const std::string& device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = u->shape;
  impl->dtype = u->dtype;
  impl->device = graph_device(u.get());
  impl->floating = impl->device.empty();
  if (impl->floating && !device.empty()) impl->device = canonical_device(device);
  impl->uop = std::move(u);
  return Tensor(impl);
}

Tensor placed_on(Tensor t, const std::string& device) {
  if (device.empty()) return t;
  if (is_device_tuple(device)) return t.shard(split_devices(device));  // a copy on each
  std::string d = lazygrad::device(device).name();  // an Error naming why, when it cannot be opened
  TensorImpl& base = t.impl()->base ? *t.impl()->base : *t.impl();
  if (base.floating) {
    base.device = d;
  } else if (base.device != d) {
    return t.to(d);  // a factory's buffer (from_bytes, empty) is made on the default device first
  }
  return t;
}

void move_to_device(const Tensor& t, const std::string& device) {
  TensorImpl& impl = *t.impl();
  if (impl.base)
    throw Error("to: a view (shape " + shape_str(impl.shape) + ") cannot be moved in place; move its base");
  if (is_device_tuple(device)) {  // a module moved to a tuple: a copy on each device (shard_)
    Tensor(t).shard_(split_devices(device));
    return;
  }
  std::string to = lazygrad::device(device).name();
  if (t.device() == to) return;
  Tensor moved;
  {
    NoGrad off;
    moved = t.detach().to(to).contiguous();
    moved.realize();
  }
  replace_value(impl, moved);
  if (impl.grad) move_to_device(Tensor(impl.grad), to);
}

void replace_value(TensorImpl& impl, const Tensor& moved) {
  impl.uop = moved.uop();
  impl.device = moved.device();
  impl.floating = false;
  impl.past.clear();  // graphs of the old values, on the old device
}

UOpPtr copy_uop(const UOpPtr& u, const std::string& from, const std::string& to) {
  const UOp* b = contiguous_buffer_node(u.get());
  UOpPtr src = b && b->numel() == u->numel() ? u : make_uop(Ops::CONTIGUOUS, u->dtype, {u});
  return make_uop_with_shape(Ops::COPY, u->dtype, {src}, CopyArg{from, to}, u->shape);
}

Tensor make_view(const Tensor& t, Ops op, std::vector<int64_t> arg, Shape shape) {
  const auto& src = t.impl();
  // A view's node is built only when it is used, so its shape is checked here, where it is made.
  checked_nbytes(shape, src->dtype, op_name(op));
  auto impl = std::make_shared<TensorImpl>();
  impl->base = src->base ? src->base : src;
  impl->view_ops = src->view_ops;
  impl->view_ops.emplace_back(op, std::move(arg));
  impl->shape = std::move(shape);
  impl->dtype = src->dtype;
  impl->device = src->device;
  impl->floating = src->floating;
  impl->requires_grad = src->requires_grad;
  return Tensor(impl);
}

Tensor Tensor::from_uop(std::shared_ptr<const UOp> op) { return make_tensor(std::move(op)); }

namespace {
const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw Error("Tensor: use of an undefined tensor");
  return *impl;
}

// A realized, contiguous buffer holding t's values (t's own buffer when it already is one).
std::shared_ptr<Buffer> contiguous_buffer(const Tensor& t) {
  UOpPtr u = t.uop();
  auto as_buffer = [](const UOpPtr& x) -> std::shared_ptr<Buffer> {
    const UOp* b = contiguous_buffer_node(x.get());
    return b ? b->as<std::shared_ptr<Buffer>>() : nullptr;
  };
  if (auto b = as_buffer(u); b && b->size == u->numel()) return b;
  UOpPtr c = make_uop(Ops::CONTIGUOUS, u->dtype, {u});
  std::vector<UOpPtr> targets{c};  // held by c and the vector: realize_uops' contract
  return as_buffer(realize_uops(targets, {t.device()})[0]);
}

// n values on the host; memory the machine will not give is an OutOfMemoryError naming the bytes.
template <class T>
std::vector<T> host_vector(int64_t n, const char* op) {
  try {
    return std::vector<T>(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {  // more than a vector can hold
  }
  uint64_t bytes;
  bool past_64_bits = __builtin_mul_overflow(static_cast<uint64_t>(n), sizeof(T), &bytes);
  throw OutOfMemoryError(std::string(op) + ": cannot allocate " +
                         (past_64_bits ? "more than 2^64 bytes" : std::to_string(bytes) + " bytes") +
                         " of host memory (" + std::to_string(n) + " values of " + std::to_string(sizeof(T)) +
                         " bytes)");
}

// One element of a buffer, converted like a C cast.
template <class T>
T read_element(const void* data, DType dt, int64_t i) {
  auto at = [&](auto tag) {
    using S = decltype(tag);
    S v;
    std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(S), sizeof(S));
    return v;
  };
  switch (dt) {
    case kBool:
      return static_cast<T>(at(uint8_t{}) != 0);
    case kUInt8:
      return static_cast<T>(at(uint8_t{}));
    case kInt8:
      return static_cast<T>(at(int8_t{}));
    case kInt16:
      return static_cast<T>(at(int16_t{}));
    case kUInt16:
      return static_cast<T>(at(uint16_t{}));
    case kInt32:
      return static_cast<T>(at(int32_t{}));
    case kUInt32:
      return static_cast<T>(at(uint32_t{}));
    case kInt64:
      return static_cast<T>(at(int64_t{}));
    case kUInt64:
      return static_cast<T>(at(uint64_t{}));
    case kFloat32:
      return static_cast<T>(at(float{}));
    case kFloat64:
      return static_cast<T>(at(double{}));
    case kFloat16:
    case kBFloat16:
      break;  // converted to float32 by a kernel first (see to_vector)
  }
  throw Error("read: unknown dtype");
}
}  // namespace

const Shape& Tensor::shape() const { return checked(impl_).shape; }
DType Tensor::dtype() const { return checked(impl_).dtype; }
std::string Tensor::device() const {
  const std::string& d = checked(impl_).base ? impl_->base->device : impl_->device;
  return d.empty() ? default_device() : d;  // a floating tensor no one placed runs on the default device
}
// Every shape is checked where it is made, so these never throw; checked all the same, since a count
// that wrapped would size a buffer too small for the kernel that fills it.
int64_t Tensor::numel() const { return checked_numel(shape(), "numel"); }
size_t Tensor::nbytes() const { return static_cast<size_t>(checked_nbytes(shape(), dtype(), "nbytes")); }
int64_t Tensor::size(int64_t axis) const {
  require(dim() > 0, "size: a 0-dim tensor has no dimension " + std::to_string(axis), ErrorKind::Index);
  return shape()[normalize_axis(axis, dim(), "size")];
}
std::shared_ptr<const UOp> Tensor::uop() const { return checked(impl_).current(); }

bool Tensor::is_realized() const {
  UOpPtr keep = uop();  // a view's chain is built on demand: hold it while walking it
  const UOp* u = keep.get();
  while (is_movement(u->op)) u = u->src[0].get();
  return u->op == Ops::BUFFER || is_realized_multi(u);
}

std::vector<std::string> Tensor::devices() const { return split_devices(device()); }
bool Tensor::is_sharded() const { return is_device_tuple(device()); }

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int64_t> axis) const {
  std::vector<std::string> names;
  for (const auto& d : devices) names.push_back(lazygrad::device(d).name());  // an Error when unknown
  const int64_t a = axis ? normalize_axis(*axis, dim(), "shard") : -1;
  const TensorImpl& self = checked(impl_).base ? *impl_->base : *impl_;
  Tensor t = make_result(shard_uop(uop(), self.floating ? "" : device(), names, a), {this});
  t.impl()->device = join_devices(names);
  t.impl()->floating = false;
  return t;
}

Tensor& Tensor::shard_(const std::vector<std::string>& devices, std::optional<int64_t> axis) {
  TensorImpl& impl = const_cast<TensorImpl&>(checked(impl_));
  require(!impl.base,
          "shard_: a view (shape " + shape_str(impl.shape) + ") cannot be sharded in place; shard its base");
  Tensor moved;
  {
    NoGrad off;
    moved = detach().shard(devices, axis);
    moved.realize();
  }
  replace_value(impl, moved);
  if (impl.grad) Tensor(impl.grad).shard_(devices, axis);
  return *this;
}

std::vector<Tensor> Tensor::shards() const {
  if (!is_sharded()) return {*this};
  Tensor whole = checked(impl_).base ? contiguous() : *this;
  whole.realize();
  UOpPtr m = whole.uop();
  std::vector<Tensor> out;
  for (const auto& part : m->src) out.push_back(make_tensor(part));
  return out;
}

namespace {

// The buffers the assigns in these graphs write.
std::unordered_set<const Buffer*> assigned_buffers(const std::vector<UOpPtr>& graphs) {
  std::unordered_set<const Buffer*> out;
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> stack;
  for (const auto& g : graphs) stack.push_back(g.get());
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    if (u->op == Ops::ASSIGN) {
      const UOp* b = u->src[0].get();
      while (is_movement(b->op)) b = b->src[0].get();
      if (b->op == Ops::BUFFER) out.insert(b->as<std::shared_ptr<Buffer>>().get());
      if (is_realized_multi(b))  // a sharded tensor: its parts' buffers
        for (const auto& part : b->src) {
          const UOp* p = part.get();
          while (is_movement(p->op)) p = p->src[0].get();
          out.insert(p->as<std::shared_ptr<Buffer>>().get());
        }
    }
    for (const auto& src : u->src) stack.push_back(src.get());
  }
  return out;
}

// Adds to `bases` every other live tensor whose lazy graph reads a buffer in `written`: realized in
// the same schedule, its kernels run before the writes (the scheduler orders reads of a buffer
// before the assign that overwrites it), so it keeps the values it had when it was built, as in
// PyTorch, and the writes stay in place.
void add_live_readers(const std::unordered_set<const Buffer*>& written,
                      std::vector<std::shared_ptr<TensorImpl>>& bases) {
  std::unordered_map<const UOp*, bool> reads;  // memo: does the graph below this node read `written`
  auto reads_written = [&](const UOp* root) {
    std::vector<std::pair<const UOp*, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [u, expanded] = stack.back();
      stack.pop_back();
      if (reads.count(u)) continue;
      if (u->op == Ops::BUFFER) {
        reads[u] = written.count(u->as<std::shared_ptr<Buffer>>().get()) > 0;
        continue;
      }
      if (!expanded) {
        stack.push_back({u, true});
        for (const auto& src : u->src)
          if (!reads.count(src.get())) stack.push_back({src.get(), false});
        continue;
      }
      bool r = false;
      for (const auto& src : u->src) r = r || reads[src.get()];
      reads[u] = r;
    }
    return reads[root];
  };
  for (auto& t : live_tensors()) {
    if (!t->uop || std::find(bases.begin(), bases.end(), t) != bases.end()) continue;
    const UOp* u = t->uop.get();
    const UOp* b = u;
    while (is_movement(b->op) || b->op == Ops::DETACH) b = b->src[0].get();
    if (b->op == Ops::BUFFER || is_realized_multi(b))
      continue;  // a view of a buffer sees the write, as a PyTorch view does
    if (reads_written(u)) bases.push_back(std::move(t));
  }
}

}  // namespace

void realize(std::vector<Tensor> tensors) {
  // Realize the bases: a view follows its base, so it is realized once the base is.
  std::vector<std::shared_ptr<TensorImpl>> bases;
  for (const auto& t : tensors) {
    auto b = checked(t.impl()).base ? t.impl()->base : t.impl();
    if (std::find(bases.begin(), bases.end(), b) != bases.end()) continue;
    bases.push_back(b);
  }
  std::vector<UOpPtr> graphs;
  for (const auto& b : bases) graphs.push_back(b->uop);
  if (auto written = assigned_buffers(graphs); !written.empty()) add_live_readers(written, bases);
  std::vector<UOpPtr> targets;
  std::vector<std::string> devices;
  std::vector<BufferVersions> versions;
  for (const auto& b : bases) {
    targets.push_back(b->uop);
    devices.push_back(b->device.empty() ? default_device() : b->device);
    versions.push_back(b->requires_grad ? versions_read(b->uop) : BufferVersions{});
  }
  graphs.clear();
  forget_dead_graphs();
  // Done before an interrupt the run deferred past its in-place writes is raised: a live reader of
  // a buffer they overwrote must hold what was computed from the old contents, not its graph.
  realize_uops(targets, devices, kept_graphs(), [&](const std::vector<UOpPtr>& done) {
    for (size_t i = 0; i < bases.size(); i++) {
      remember_graph(*bases[i], targets[i], done[i], std::move(versions[i]));
      bases[i]->uop = done[i];
      bases[i]->floating = false;  // a buffer on its device now
    }
  });
}

Tensor& Tensor::realize() {
  lazygrad::realize({*this});
  return *this;
}
const Tensor& Tensor::realize() const {
  lazygrad::realize({*this});
  return *this;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  // 16-bit floats are read through a cast kernel, so their decoding lives in one place: the renderer.
  if (dtype() == kFloat16 || dtype() == kBFloat16) return to(kFloat32).to_vector<T>();
  if (is_sharded()) return to(devices()[0]).to_vector<T>();  // the parts gathered on the first device
  realize();
  auto buf = contiguous_buffer(*this);
  const int64_t n = numel();
  std::vector<T> out = host_vector<T>(n, "to_vector");
  if (n == 0) return out;
  const void* data = buf->host_ptr();
  std::vector<std::byte> staging;  // another device's memory comes to the host first
  if (!data) {
    staging = host_vector<std::byte>(static_cast<int64_t>(buf->nbytes()), "to_vector");
    buf->copyout(staging);
    data = staging.data();
  }
  for (int64_t i = 0; i < n; i++) out[i] = read_element<T>(data, buf->dtype, i);
  return out;
}

Tensor Tensor::bitcast(DType to) const {
  const DType from = dtype();
  const int64_t from_size = static_cast<int64_t>(itemsize(from)),
                to_size = static_cast<int64_t>(itemsize(to));
  const std::string what = "bitcast: " + std::string(dtype_name(from)) + " " + shape_str(shape()) + " to " +
                           std::string(dtype_name(to));
  require(to != kBool || from == kBool,
          what + ": only bool tensors reinterpret as bool (other bytes are not 0 or 1)");
  Shape out = shape();
  if (from_size != to_size) {
    require(dim() > 0, what + ": a 0-d tensor reinterprets only as a dtype of the same size");
    require(out.back() * from_size % to_size == 0,
            what + ": the last dimension's " + std::to_string(out.back() * from_size) +
                " bytes are not a whole number of " + std::string(dtype_name(to)) + " elements");
    out.back() = out.back() * from_size / to_size;
  }
  if (from == to) return detach();
  if (is_sharded()) return this->to(devices()[0]).bitcast(to).to(device());
  realize();
  const int64_t n = numel();
  if (n == 0) return Tensor::empty(out, to, device());
  auto buf = contiguous_buffer(*this);
  std::vector<std::byte> bytes = host_vector<std::byte>(n * from_size, "bitcast");
  if (const void* host = buf->host_ptr())
    std::memcpy(bytes.data(), host, bytes.size());
  else
    buf->copyout(bytes);
  return from_bytes(bytes.data(), bytes.size(), out, to, device());
}

template <class T>
T Tensor::item() const {
  require(numel() == 1,
          "item: a Tensor with " + std::to_string(numel()) + " elements (shape " + shape_str(shape()) +
              ") cannot be converted to a scalar",
          ErrorKind::Value);
  return to_vector<T>()[0];
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& data, const Shape& shape, const std::string& device) {
  int64_t n = checked_numel(shape, "from_vector");
  require(data.size() == static_cast<uint64_t>(n),
          "from_vector: " + std::to_string(data.size()) + " values do not fill shape " + shape_str(shape));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes = host_vector<uint8_t>(n, "from_vector");
    std::copy(data.begin(), data.end(), bytes.begin());
    return from_bytes(bytes.data(), bytes.size(), shape, kBool, device);
  } else {
    return from_bytes(data.data(), data.size() * sizeof(T), shape, dtype_of<T>(), device);
  }
}

Tensor Tensor::from_bytes(const void* data, size_t nbytes, const Shape& shape, DType dtype,
                          const std::string& device) {
  if (is_device_tuple(device))  // made on the first device, then a copy on each
    return from_bytes(data, nbytes, shape, dtype, split_devices(device)[0]).shard(split_devices(device));
  int64_t n = checked_numel(shape, "from_bytes");
  require(nbytes == static_cast<uint64_t>(checked_nbytes(shape, dtype, "from_bytes")),
          "from_bytes: " + std::to_string(nbytes) + " bytes do not fill shape " + shape_str(shape) + " of " +
              std::string(dtype_name(dtype)));
  auto buf = std::make_shared<Buffer>(device.empty() ? default_device() : device, dtype, n);
  if (nbytes) buf->copyin({static_cast<const std::byte*>(data), nbytes});
  return make_tensor(buffer_view(buf, shape));
}

Tensor Tensor::empty(const Shape& shape, DType dtype, const std::string& device) {
  checked_nbytes(shape, dtype, "empty");
  if (is_device_tuple(device))
    return empty(shape, dtype, split_devices(device)[0]).shard(split_devices(device));
  return make_tensor(buffer_view(std::make_shared<Buffer>(device.empty() ? default_device() : device, dtype,
                                                          checked_numel(shape, "empty")),
                                 shape));
}

Tensor Tensor::to(const std::string& device) const {
  if (is_device_tuple(device)) {
    std::vector<std::string> names;
    for (const auto& d : split_devices(device)) names.push_back(lazygrad::device(d).name());
    return this->device() == join_devices(names) ? *this : shard(names);
  }
  std::string to = lazygrad::device(device).name();  // an Error naming why, when it cannot be opened
  const std::string from = this->device();
  if (to == from) return *this;
  if (is_sharded()) {  // the parts gathered on `to`
    Tensor t =
        make_result(make_uop_with_shape(Ops::COPY, dtype(), {uop()}, CopyArg{from, to}, shape()), {this});
    t.impl()->device = to;
    t.impl()->floating = false;
    return t;
  }
  const TensorImpl& self = *impl_;
  bool floating = self.base ? self.base->floating : self.floating;
  if (floating) {  // nothing to copy: the constants are computed where they are read
    Tensor t = make_tensor(uop(), to);
    t.impl()->requires_grad = requires_grad();
    return t;
  }
  Tensor t = make_result(copy_uop(uop(), from, to), {this});
  t.impl()->device = to;
  t.impl()->floating = false;
  return t;
}

namespace {
// Runs one view op backwards: from the view's shape to `before`, the shape it was applied to.
// Only one-to-one views can be written through; pad's border is dropped.
UOpPtr invert_view_op(const UOpPtr& x, Ops op, const std::vector<int64_t>& arg, const Shape& before) {
  switch (op) {
    case Ops::RESHAPE:
      return apply_movement(x, Ops::RESHAPE, before);
    case Ops::FLIP:
      return apply_movement(x, Ops::FLIP, arg);
    case Ops::PERMUTE: {
      std::vector<int64_t> back(arg.size());
      for (size_t k = 0; k < arg.size(); k++) back[arg[k]] = static_cast<int64_t>(k);
      return apply_movement(x, Ops::PERMUTE, back);
    }
    case Ops::SHRINK: {
      std::vector<int64_t> pad;
      for (size_t k = 0; k < before.size(); k++) {
        pad.push_back(arg[2 * k]);
        pad.push_back(before[k] - arg[2 * k + 1]);
      }
      return apply_movement(x, Ops::PAD, pad);
    }
    case Ops::PAD: {
      std::vector<int64_t> keep;
      for (size_t k = 0; k < before.size(); k++) {
        keep.push_back(arg[2 * k]);
        keep.push_back(arg[2 * k] + before[k]);
      }
      return apply_movement(x, Ops::SHRINK, keep);
    }
    default:
      throw Error("assign: cannot write through a view made by " + std::string(op_name(op)) +
                  " (it is not one-to-one)");
  }
}

UOpPtr filled(DType dt, bool value, const Shape& shape) {
  UOpPtr c = make_uop(Ops::RESHAPE, dt, {const_uop(dt, value)}, std::vector<int64_t>(shape.size(), 1));
  return make_uop(Ops::EXPAND, dt, {c}, std::vector<int64_t>(shape));
}
}  // namespace

namespace {
// PyTorch refuses an in-place update of a leaf that requires grad while gradients are recorded: the
// forward graphs built on it would see the new values. Optimizers update under NoGrad.
void check_leaf_update(const Tensor& t, const char* op) {
  const Tensor base = t.impl()->base ? Tensor(t.impl()->base) : t;
  require(!base.requires_grad() || !base.is_leaf() || NoGrad::active(),
          std::string(op) + ": a leaf tensor that requires grad (shape " + shape_str(base.shape()) +
              ") is being updated in place while gradients are recorded (PyTorch: a leaf Variable that "
              "requires grad is being used in an in-place operation); update it under NoGrad "
              "(Python: with Tensor.no_grad or torch.no_grad()), or assign to its detach()");
}

// Keeps the leaf's graph before an update (see TensorImpl::past); dead ones are dropped.
void remember_past(TensorImpl& leaf) {
  std::erase_if(leaf.past, [](const std::weak_ptr<const UOp>& w) { return w.expired(); });
  leaf.past.push_back(leaf.uop);
}

// `value` where `target` lives: copied there when it is placed on another device (as torch's copy_
// copies across devices); a floating value (constants) is computed in the writing kernel itself.
Tensor on_device_of(const Tensor& target, const Tensor& value) {
  const TensorImpl& v = value.impl()->base ? *value.impl()->base : *value.impl();
  return v.floating || value.device() == target.device() ? value : value.to(target.device());
}
}  // namespace

Tensor& Tensor::assign(const Tensor& value) {
  TensorImpl& self = const_cast<TensorImpl&>(checked(impl_));
  check_leaf_update(*this, "assign");
  Tensor v = on_device_of(*this, value);
  if (v.shape() != shape()) v = v.expand(shape());
  if (v.dtype() != dtype()) v = v.to(dtype());
  if (!self.base) {
    // A base: its data becomes `value`, written into its buffer when it has one (also when an
    // earlier assign to it is still pending).
    UOpPtr target = self.uop->op == Ops::ASSIGN ? self.uop->src[0] : self.uop;
    const UOp* b = target.get();
    while (is_movement(b->op)) b = b->src[0].get();
    if (self.requires_grad) remember_past(self);
    const bool buffer = b->op == Ops::BUFFER || is_realized_multi(b);
    self.uop = buffer ? make_uop(Ops::ASSIGN, dtype(), {target, v.uop()}) : v.uop();
    return *this;
  }
  // A view: the base takes `value` where this view covers it. The view's ops run backwards on the
  // value and on a mask that marks the covered region.
  const TensorImpl& base = *self.base;
  std::vector<Shape> before;  // the shape each view op was applied to
  Shape s = base.shape;
  for (const auto& [op, arg] : self.view_ops) {
    before.push_back(s);
    s = apply_movement(filled(kBool, false, s), op, arg)->shape;
  }
  UOpPtr val = v.uop(), mask = filled(kBool, true, shape());
  for (size_t i = self.view_ops.size(); i-- > 0;) {
    val = invert_view_op(val, self.view_ops[i].first, self.view_ops[i].second, before[i]);
    mask = invert_view_op(mask, self.view_ops[i].first, self.view_ops[i].second, before[i]);
  }
  Tensor(self.base).assign(make_tensor(make_uop(Ops::WHERE, dtype(), {mask, val, base.current()})));
  return *this;
}

namespace {
// narrow_assign with its start as a graph node (a CONST or an integer VAR): an ASSIGN whose value
// covers only [start, start + n) along `axis` (see Ops::ASSIGN), so its kernel loops over the region.
Tensor& narrow_assign_node(Tensor& t, int64_t axis, const UOpPtr& start, const Tensor& value) {
  TensorImpl& self = *t.impl();
  check_leaf_update(t, "narrow_assign");
  if (self.requires_grad) remember_past(self);
  require(!self.base, "narrow_assign: the tensor is a view; write into its base instead");
  require(value.dim() == t.dim() && value.size(axis) <= t.size(axis),
          "narrow_assign: value " + shape_str(value.shape()) + " does not fit in " + shape_str(t.shape()));
  Shape region = t.shape();
  region[axis] = value.size(axis);
  Tensor v = on_device_of(t, value);
  if (v.shape() != region) v = v.expand(region);
  if (v.dtype() != t.dtype()) v = v.to(t.dtype());
  // The write goes into a buffer: a lazy value, or one with an earlier write still pending (which
  // this one does not overwrite everywhere), is computed first.
  auto buffer_backed = [&] { return self.uop->op != Ops::ASSIGN && contiguous_buffer_node(self.uop.get()); };
  if (!buffer_backed()) t.realize();
  require(buffer_backed(), "narrow_assign: the tensor is not backed by a buffer of its own");
  self.uop = make_uop(Ops::ASSIGN, t.dtype(), {self.uop, v.uop(), start}, axis);
  return t;
}
}  // namespace

Tensor& Tensor::narrow_assign(int64_t d, int64_t start, const Tensor& value) {
  int64_t a = normalize_axis(d, dim(), "narrow_assign");
  require(value.dim() != dim() || (start >= 0 && start + value.size(a) <= size(a)),
          "narrow_assign: value " + shape_str(value.shape()) + " at " + std::to_string(start) +
              " along dimension " + std::to_string(d) + " does not fit in " + shape_str(shape()));
  return narrow_assign_node(*this, a, const_uop(kInt64, start), value);
}

Tensor& Tensor::narrow_assign(int64_t d, const Variable& start, const Tensor& value) {
  int64_t a = normalize_axis(d, dim(), "narrow_assign");
  require(is_int(start.dtype()), "narrow_assign: the start Variable must have an integer dtype, not " +
                                     std::string(dtype_name(start.dtype())));
  return narrow_assign_node(*this, a, start.tensor().uop(), value);
}

Tensor& Tensor::operator+=(const Tensor& o) { return assign(*this + o); }
Tensor& Tensor::operator+=(Scalar o) { return assign(*this + o); }
Tensor& Tensor::operator-=(const Tensor& o) { return assign(*this - o); }
Tensor& Tensor::operator-=(Scalar o) { return assign(*this - o); }
Tensor& Tensor::operator*=(const Tensor& o) { return assign(*this * o); }
Tensor& Tensor::operator*=(Scalar o) { return assign(*this * o); }
Tensor& Tensor::operator/=(const Tensor& o) { return assign(*this / o); }
Tensor& Tensor::operator/=(Scalar o) { return assign(*this / o); }

std::string Tensor::to_string() const {
  std::ostringstream os;
  auto values = to_vector<double>();
  const Shape& s = shape();
  bool floaty = is_float(dtype());
  // Large tensors print as PyTorch and numpy do: past 1000 elements, the first and last 3 of each
  // dimension with "..." between.
  constexpr int64_t kThreshold = 1000, kEdgeItems = 3;
  const bool summarize = numel() > kThreshold;
  std::function<void(size_t, int64_t)> rec = [&](size_t d, int64_t off) {
    if (d == s.size()) {
      double v = values[off];
      if (dtype() == kBool)
        os << (v ? "True" : "False");
      else if (floaty)
        os << std::setprecision(4) << v << (v == static_cast<int64_t>(v) && std::isfinite(v) ? "." : "");
      else
        os << static_cast<int64_t>(v);
      return;
    }
    int64_t stride = 1;
    for (size_t k = d + 1; k < s.size(); k++) stride *= s[k];
    const std::string sep = d + 1 == s.size() ? ", " : ",\n" + std::string(8 + d, ' ');
    os << "[";
    for (int64_t i = 0; i < s[d]; i++) {
      if (i) os << sep;
      if (summarize && s[d] > 2 * kEdgeItems && i == kEdgeItems) {  // the middle, elided
        os << "..." << sep;
        i = s[d] - kEdgeItems;
      }
      rec(d + 1, off + i * stride);
    }
    os << "]";
  };
  os << "tensor(";
  rec(0, 0);
  if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool) os << ", dtype=" << dtype_name(dtype());
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

// The element types from_vector, item and to_vector accept.
template std::vector<float> Tensor::to_vector<float>() const;
template float Tensor::item<float>() const;
template Tensor Tensor::from_vector<float>(const std::vector<float>&, const Shape&, const std::string&);
template std::vector<double> Tensor::to_vector<double>() const;
template double Tensor::item<double>() const;
template Tensor Tensor::from_vector<double>(const std::vector<double>&, const Shape&, const std::string&);
template std::vector<bool> Tensor::to_vector<bool>() const;
template bool Tensor::item<bool>() const;
template Tensor Tensor::from_vector<bool>(const std::vector<bool>&, const Shape&, const std::string&);
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template uint8_t Tensor::item<uint8_t>() const;
template Tensor Tensor::from_vector<uint8_t>(const std::vector<uint8_t>&, const Shape&, const std::string&);
template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
template int8_t Tensor::item<int8_t>() const;
template Tensor Tensor::from_vector<int8_t>(const std::vector<int8_t>&, const Shape&, const std::string&);
template std::vector<int16_t> Tensor::to_vector<int16_t>() const;
template int16_t Tensor::item<int16_t>() const;
template Tensor Tensor::from_vector<int16_t>(const std::vector<int16_t>&, const Shape&, const std::string&);
template std::vector<uint16_t> Tensor::to_vector<uint16_t>() const;
template uint16_t Tensor::item<uint16_t>() const;
template Tensor Tensor::from_vector<uint16_t>(const std::vector<uint16_t>&, const Shape&, const std::string&);
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template int32_t Tensor::item<int32_t>() const;
template Tensor Tensor::from_vector<int32_t>(const std::vector<int32_t>&, const Shape&, const std::string&);
template std::vector<uint32_t> Tensor::to_vector<uint32_t>() const;
template uint32_t Tensor::item<uint32_t>() const;
template Tensor Tensor::from_vector<uint32_t>(const std::vector<uint32_t>&, const Shape&, const std::string&);
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template int64_t Tensor::item<int64_t>() const;
template Tensor Tensor::from_vector<int64_t>(const std::vector<int64_t>&, const Shape&, const std::string&);
template std::vector<uint64_t> Tensor::to_vector<uint64_t>() const;
template uint64_t Tensor::item<uint64_t>() const;
template Tensor Tensor::from_vector<uint64_t>(const std::vector<uint64_t>&, const Shape&, const std::string&);

}  // namespace lazygrad
