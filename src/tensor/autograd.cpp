// Autograd on the lazy graph. Gradient rules exist for the primitive ops only (the table below);
// every derived op (softmax, matmul, conv, losses, ...) is differentiated through the primitives it
// is made of. The backward graph is lazy like the forward one, so forward, backward and an
// optimizer update realized together are scheduled and fused together.
#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <numbers>
#include <unordered_map>
#include <unordered_set>

#include "multi/shard.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "shape/size.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {

std::atomic<int> no_grad_depth{0};

// The leaves: tensors the user marked with requires_grad(true). Weak, so a dropped leaf goes away.
struct LeafRegistry {
  std::mutex mu;
  std::vector<std::weak_ptr<TensorImpl>> leaves;
  void add(const std::shared_ptr<TensorImpl>& impl) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& w : leaves)
      if (w.lock() == impl) return;
    leaves.push_back(impl);
  }
  std::vector<std::shared_ptr<TensorImpl>> live() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::shared_ptr<TensorImpl>> out;
    std::erase_if(leaves, [&](const std::weak_ptr<TensorImpl>& w) {
      auto p = w.lock();
      if (p) out.push_back(p);
      return !p;
    });
    return out;
  }
  bool contains(const TensorImpl* impl) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& w : leaves)
      if (w.lock().get() == impl) return true;
    return false;
  }
};
// The registries live until the process ends, never destroyed: the graphs they hold own buffers,
// and other static objects may still drop tensors during static destruction.
LeafRegistry& registry() {
  static LeafRegistry* r = new LeafRegistry();
  return *r;
}

Tensor T(const UOpPtr& u) { return make_tensor(u); }

// A constant broadcast to a shape (the frontend reshapes and expands scalars) equal to v.
bool is_constant(const UOpPtr& u, double v) {
  const UOp* x = u.get();
  while (x->op == Ops::RESHAPE || x->op == Ops::EXPAND) x = x->src[0].get();
  return x->is_const(v);
}

// Realized tensors that require grad: their buffer's view node -> the graph that computed it, and
// the versions of the buffers that graph read. The graph is held (like the tensors PyTorch saves for
// backward) while the buffer node lives.
struct KeptGraph {
  std::weak_ptr<const UOp> after;
  UOpPtr before;
  BufferVersions versions;
};
struct RealizedGraphs {
  std::mutex mu;
  std::unordered_map<const UOp*, KeptGraph> map;
  void add(const UOpPtr& after, const UOpPtr& before, BufferVersions versions) {
    std::lock_guard<std::mutex> lock(mu);
    map[after.get()] = {after, before, std::move(versions)};
  }
  void sweep() {
    std::lock_guard<std::mutex> lock(mu);
    std::erase_if(map, [](const auto& kv) { return kv.second.after.expired(); });
  }
  // The graph `after` was computed from, and into `stale` the buffers it read that were
  // overwritten since.
  UOpPtr find(const UOp* after, std::unordered_set<const Buffer*>* stale = nullptr) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = map.find(after);
    if (it == map.end() || it->second.after.expired()) return nullptr;
    if (stale)
      for (const auto& [w, version] : it->second.versions)
        if (auto b = w.lock(); b && b->version.load() != version) stale->insert(b.get());
    return it->second.before;
  }
  std::vector<UOpPtr> roots() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<UOpPtr> out;
    for (const auto& [k, g] : map)
      if (!g.after.expired()) out.push_back(g.before);
    return out;
  }
};
RealizedGraphs& realized_graphs() {
  static RealizedGraphs* r = new RealizedGraphs();
  return *r;
}

// Inverse movement ops, on UOps (their shapes are already checked).
UOpPtr pad_back(const UOpPtr& g, const std::vector<int64_t>& shrink_arg, const Shape& src) {
  std::vector<int64_t> pad;
  for (size_t i = 0; i < src.size(); i++) {
    pad.push_back(shrink_arg[2 * i]);
    pad.push_back(src[i] - shrink_arg[2 * i + 1]);
  }
  return apply_movement(g, Ops::PAD, pad);
}
UOpPtr shrink_back(const UOpPtr& g, const std::vector<int64_t>& pad_arg, const Shape& src) {
  std::vector<int64_t> keep;
  for (size_t i = 0; i < src.size(); i++) {
    keep.push_back(pad_arg[2 * i]);
    keep.push_back(pad_arg[2 * i] + src[i]);
  }
  return apply_movement(g, Ops::SHRINK, keep);
}

// d(prod)/dx, exact when x has zeros: the product of the other elements.
Tensor prod_backward(const Tensor& x, const Tensor& out, const std::vector<int64_t>& axes) {
  Tensor zero = x.eq(0);
  Tensor zeros_count = zero.to(kInt64).sum(axes, true).expand(x.shape());
  Tensor prod_nonzero =
      lazygrad::where(zero, scalar_tensor(1, x.dtype()), x).prod(axes, true).expand(x.shape());
  Tensor others_if_zero = lazygrad::where(zeros_count.eq(1), prod_nonzero, scalar_tensor(0, x.dtype()));
  return lazygrad::where(zero, others_if_zero, out.expand(x.shape()) / x);
}

// One rule per differentiable primitive: the gradient of each source, given the gradient g of the
// node's value (null: that source gets none).
using Rule = std::function<std::vector<UOpPtr>(const Tensor& g, const UOpPtr& node)>;

const std::unordered_map<Ops, Rule>& rules() {
  static const std::unordered_map<Ops, Rule> table = [] {
    std::unordered_map<Ops, Rule> r;
    auto src = [](const UOpPtr& n, size_t i) { return T(n->src[i]); };
    r[Ops::ADD] = [](const Tensor& g, const UOpPtr&) { return std::vector<UOpPtr>{g.uop(), g.uop()}; };
    r[Ops::MUL] = [src](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{(g * src(n, 1)).uop(), (g * src(n, 0)).uop()};
    };
    r[Ops::MAX] = [src](const Tensor& g, const UOpPtr& n) {
      // Ties share the gradient equally, and a NaN gives it to both, as torch.maximum does.
      Tensor a = src(n, 0), b = src(n, 1), one = scalar_tensor(1, g.dtype());
      Tensor half = scalar_tensor(0.5, g.dtype()), zero = scalar_tensor(0, g.dtype());
      Tensor nan = a.ne(a).logical_or(b.ne(b)), tie = a.eq(b);
      Tensor wa = lazygrad::where(nan.logical_or(a.gt(b)), one, lazygrad::where(tie, half, zero));
      Tensor wb = lazygrad::where(nan.logical_or(b.gt(a)), one, lazygrad::where(tie, half, zero));
      return std::vector<UOpPtr>{(g * wa).uop(), (g * wb).uop()};
    };
    r[Ops::WHERE] = [src](const Tensor& g, const UOpPtr& n) {
      Tensor c = src(n, 0), zero = scalar_tensor(0, g.dtype());
      return std::vector<UOpPtr>{nullptr, lazygrad::where(c, g, zero).uop(),
                                 lazygrad::where(c, zero, g).uop()};
    };
    r[Ops::EXP2] = [](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{(g * T(n) * std::numbers::ln2).uop()};
    };
    r[Ops::LOG2] = [src](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{(g / (src(n, 0) * std::numbers::ln2)).uop()};
    };
    r[Ops::SIN] = [src](const Tensor& g, const UOpPtr& n) {
      // cos(a); when a is pi/2 - y (this SIN is a cos), that is sin(y), exact where pi/2 - y is not.
      const UOpPtr& a = n->src[0];
      if (a->op == Ops::ADD && is_constant(a->src[0], std::numbers::pi / 2) && a->src[1]->op == Ops::MUL &&
          is_constant(a->src[1]->src[1], -1))
        return std::vector<UOpPtr>{(g * T(a->src[1]->src[0]).sin()).uop()};
      return std::vector<UOpPtr>{(g * src(n, 0).cos()).uop()};
    };
    r[Ops::SQRT] = [](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{(g / (T(n) * 2)).uop()};
    };
    r[Ops::RECIPROCAL] = [](const Tensor& g, const UOpPtr& n) {
      Tensor out = T(n);
      return std::vector<UOpPtr>{(-g * out * out).uop()};
    };
    r[Ops::CAST] = [](const Tensor& g, const UOpPtr& n) {
      DType from = n->src[0]->dtype;
      return std::vector<UOpPtr>{is_float(from) ? g.to(from).uop() : nullptr};
    };
    r[Ops::REDUCE_AXIS] = [src](const Tensor& g, const UOpPtr& n) {
      const auto& ra = n->as<ReduceArg>();
      Tensor x = src(n, 0), ge = g.expand(x.shape());
      if (ra.op == Ops::ADD) return std::vector<UOpPtr>{ge.uop()};
      if (ra.op == Ops::MUL) return std::vector<UOpPtr>{(ge * prod_backward(x, T(n), ra.axes)).uop()};
      // MAX: the gradient is shared by the elements equal to the max (amax's rule in PyTorch).
      Tensor hit = x.eq(T(n).expand(x.shape())).to(g.dtype());
      return std::vector<UOpPtr>{(ge * hit / hit.sum(ra.axes, true).expand(x.shape())).uop()};
    };
    r[Ops::RESHAPE] = [](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{apply_movement(g.uop(), Ops::RESHAPE, n->src[0]->shape)};
    };
    r[Ops::PERMUTE] = [](const Tensor& g, const UOpPtr& n) {
      const auto& p = n->as<std::vector<int64_t>>();
      std::vector<int64_t> back(p.size());
      for (size_t i = 0; i < p.size(); i++) back[p[i]] = static_cast<int64_t>(i);
      return std::vector<UOpPtr>{apply_movement(g.uop(), Ops::PERMUTE, back)};
    };
    r[Ops::EXPAND] = [](const Tensor& g, const UOpPtr& n) {
      std::vector<int64_t> axes;
      const Shape& s = n->src[0]->shape;
      for (size_t i = 0; i < s.size(); i++)
        if (s[i] != n->shape[i]) axes.push_back(static_cast<int64_t>(i));
      return std::vector<UOpPtr>{axes.empty() ? g.uop() : g.sum(axes, true).uop()};
    };
    r[Ops::PAD] = [](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{shrink_back(g.uop(), n->as<std::vector<int64_t>>(), n->src[0]->shape)};
    };
    r[Ops::SHRINK] = [](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{pad_back(g.uop(), n->as<std::vector<int64_t>>(), n->src[0]->shape)};
    };
    r[Ops::FLIP] = [](const Tensor& g, const UOpPtr& n) {
      return std::vector<UOpPtr>{apply_movement(g.uop(), Ops::FLIP, n->as<std::vector<int64_t>>())};
    };
    r[Ops::CONTIGUOUS] = [](const Tensor& g, const UOpPtr&) { return std::vector<UOpPtr>{g.uop()}; };
    r[Ops::COPY] = [](const Tensor& g, const UOpPtr& n) {
      const CopyArg& c = n->as<CopyArg>();
      if (is_device_tuple(c.from))  // a gather: the gradient goes back split as the parts were
        return std::vector<UOpPtr>{shard_uop(g.uop(), c.to, split_devices(c.from), multi_axis(n->src[0]))};
      return std::vector<UOpPtr>{copy_uop(g.uop(), c.to, c.from)};
    };
    // Each part gets its own rows of the gradient, on its device (lowered with no copy). A replicated
    // value is any one of its parts: the first gets the gradient, so a value sharded from one tensor
    // passes it back once, not once per device.
    r[Ops::MULTI] = [](const Tensor& g, const UOpPtr& n) {
      const MultiArg& m = n->as<MultiArg>();
      const std::string from = join_devices(m.devices);
      const auto bounds =
          shard_bounds(m.axis >= 0 ? n->shape[static_cast<size_t>(m.axis)] : 0, m.devices.size());
      std::vector<UOpPtr> out;
      for (size_t i = 0; i < m.devices.size(); i++) {
        if (m.axis < 0 && i > 0) {
          out.push_back(nullptr);
          continue;
        }
        UOpPtr piece = g.uop();
        if (m.axis >= 0) {
          std::vector<int64_t> keep;
          for (size_t d = 0; d < n->shape.size(); d++) {
            const bool split = static_cast<int64_t>(d) == m.axis;
            keep.push_back(split ? bounds[i].first : 0);
            keep.push_back(split ? bounds[i].second : n->shape[d]);
          }
          piece = apply_movement(piece, Ops::SHRINK, keep);
        }
        out.push_back(
            make_uop_with_shape(Ops::COPY, n->dtype, {piece}, CopyArg{from, m.devices[i]}, piece->shape));
      }
      return out;
    };
    r[Ops::SHRINK_AT] = [](const Tensor&, const UOpPtr&) -> std::vector<UOpPtr> {
      throw Error("backward: narrow at a Variable position has no gradient (it is for inference steps)");
    };
    r[Ops::ASSIGN] = [](const Tensor& g, const UOpPtr& n) {
      if (n->src.size() == 3) return std::vector<UOpPtr>{nullptr, nullptr, nullptr};  // narrow_assign
      return std::vector<UOpPtr>{nullptr, g.uop()};
    };
    return r;
  }();
  return table;
}

const GradFn* grad_fn(const UOpPtr& u) {
  if (u->op != Ops::DETACH) return nullptr;
  auto* f = std::get_if<std::shared_ptr<GradFn>>(&u->arg);
  return f ? f->get() : nullptr;
}

// A gradient that reads a buffer overwritten in place (an optimizer step, an assign) since the forward
// pass read it would be computed from the new values: PyTorch refuses it ("one of the variables
// needed for gradient computation has been modified by an inplace operation"), and so does this.
void refuse_stale_reads(const std::vector<UOpPtr>& grads, const std::unordered_set<const Buffer*>& stale) {
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> stack;
  for (const auto& g : grads)
    if (g) stack.push_back(g.get());
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    if (u->op == Ops::BUFFER && stale.count(u->as<std::shared_ptr<Buffer>>().get())) {
      const Buffer& b = *u->as<std::shared_ptr<Buffer>>();
      throw Error("backward: a tensor of " + std::to_string(b.size) + " " + std::string(dtype_name(b.dtype)) +
                  " values that this gradient needs was modified in place (an assign, or an optimizer step) "
                  "after the forward pass read it, as PyTorch says: one of the variables needed for gradient "
                  "computation has been modified by an inplace operation. Call backward() before the update, "
                  "or compute the forward pass again");
    }
    for (const auto& s : u->src) stack.push_back(s.get());
  }
}

// Gradients of root (whose gradient is `upstream`) with respect to each target; null where root
// does not depend on a target.
std::vector<UOpPtr> backprop(const UOpPtr& root, const UOpPtr& upstream, const std::vector<UOpPtr>& targets) {
  std::unordered_set<const UOp*> target_set;
  for (const auto& t : targets) target_set.insert(t.get());
  // A leaf overwritten under no_grad (`with no_grad: w.assign(v)`, an optimizer step) is still the
  // leaf: a graph that read the pending ASSIGN reads w. Once that ASSIGN is realized, w's node is its
  // buffer again, so the ASSIGN is matched to the target by the buffer it writes.
  std::unordered_map<const Buffer*, UOpPtr> target_buffers;
  for (const auto& t : targets)
    if (t->op == Ops::BUFFER) target_buffers[t->as<std::shared_ptr<Buffer>>().get()] = t;
  std::unordered_map<const UOp*, UOpPtr> grads;
  // Which nodes lie on a path to a target, and a topological order of them. A realized node's
  // source, for the gradient, is the graph it was computed from.
  std::unordered_map<const UOp*, bool> reaches;
  std::unordered_map<const UOp*, UOpPtr> computed_from;
  std::vector<UOpPtr> order;                // sources before users
  std::unordered_set<const Buffer*> stale;  // read by a kept graph, overwritten since
  // A loop over a stack, not recursion: the graph of a long chain is as deep as the chain. Each
  // frame holds a node, the nodes its gradient flows to, and whether any of them reached a target.
  struct Frame {
    UOpPtr u;
    std::vector<UOpPtr> next;
    size_t i = 0;
    bool r = false;
  };
  auto open = [&](const UOpPtr& u) {
    Frame f{u, {}, 0, target_set.count(u.get()) > 0};
    if (!f.r && u->op == Ops::ASSIGN && u->src.size() == 2 && u->src[0]->op == Ops::BUFFER) {
      auto t = target_buffers.find(u->src[0]->as<std::shared_ptr<Buffer>>().get());
      if (t != target_buffers.end()) {
        computed_from[u.get()] = t->second;
        f.next = {t->second};
        return f;
      }
    }
    if (UOpPtr from = f.r ? nullptr : realized_graphs().find(u.get(), &stale)) {
      computed_from[u.get()] = from;
      f.next = {from};
    } else if (grad_fn(u)) {
      f.next.assign(u->src.begin() + 1, u->src.end());
    } else if (u->op != Ops::DETACH) {
      f.next = u->src;
    }
    return f;
  };
  std::vector<Frame> stack{open(root)};
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.i < f.next.size()) {
      UOpPtr s = f.next[f.i++];
      if (auto it = reaches.find(s.get()); it != reaches.end()) {
        f.r = f.r || it->second;
        continue;
      }
      reaches[s.get()] = false;  // a placeholder while its frame is open (the graph has no cycles)
      stack.push_back(open(s));
      continue;
    }
    Frame done = std::move(f);
    stack.pop_back();
    reaches[done.u.get()] = done.r;
    if (done.r) order.push_back(done.u);
    if (!stack.empty()) stack.back().r = stack.back().r || done.r;
  }
  auto accumulate = [&](const UOpPtr& s, const UOpPtr& g) {
    auto [it, fresh] = grads.try_emplace(s.get(), g);
    if (!fresh) it->second = make_uop(Ops::ADD, s->dtype, {it->second, g});
  };
  if (reaches[root.get()]) grads[root.get()] = upstream;
  for (size_t i = order.size(); i-- > 0;) {
    const UOpPtr& u = order[i];
    auto g = grads.find(u.get());
    if (g == grads.end() || (target_set.count(u.get()) && u->src.empty())) continue;
    const ScopeGuard scope(u->scope);  // a layer's gradient is charged to the layer (the profiler)
    if (auto from = computed_from.find(u.get()); from != computed_from.end()) {
      accumulate(from->second, g->second);
      continue;
    }
    if (const GradFn* f = grad_fn(u)) {
      std::vector<Tensor> inputs;
      for (size_t k = 1; k < u->src.size(); k++) inputs.push_back(T(u->src[k]));
      std::vector<Tensor> gs = f->backward(T(g->second), inputs);
      for (size_t k = 0; k < inputs.size() && k < gs.size(); k++) {
        const UOpPtr& s = u->src[k + 1];
        if (gs[k].defined() && reaches[s.get()] && is_float(s->dtype)) accumulate(s, gs[k].uop());
      }
      continue;
    }
    auto rule = rules().find(u->op);
    if (rule == rules().end()) continue;  // comparisons, integer ops, sources: no gradient
    std::vector<UOpPtr> src_grads = rule->second(T(g->second), u);
    for (size_t k = 0; k < u->src.size(); k++) {
      const UOpPtr& s = u->src[k];
      if (!src_grads[k] || !reaches[s.get()] || !is_float(s->dtype)) continue;
      accumulate(s, src_grads[k]);
    }
  }
  std::vector<UOpPtr> out;
  for (const auto& t : targets) {
    auto it = grads.find(t.get());
    out.push_back(it == grads.end() ? nullptr : it->second);
  }
  if (!stale.empty()) refuse_stale_reads(out, stale);
  return out;
}

UOpPtr ones_like_uop(const UOpPtr& u) { return Tensor::full(u->shape, 1, u->dtype).uop(); }

}  // namespace

void remember_graph(const TensorImpl& impl, const UOpPtr& before, const UOpPtr& after,
                    BufferVersions versions) {
  if (impl.requires_grad && before != after && !registry().contains(&impl))
    realized_graphs().add(after, before, std::move(versions));
}

std::vector<UOpPtr> kept_graphs() { return realized_graphs().roots(); }

BufferVersions versions_read(const UOpPtr& graph) {
  BufferVersions out;
  // An ASSIGN inside the graph writes its buffer when the graph runs: that write is the graph's
  // own (a leaf updated under no_grad and then read), so the version the graph leaves is the one to
  // compare with later, one step per ASSIGN.
  std::unordered_map<const Buffer*, int64_t> own_writes;
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> stack{graph.get()};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    if (u->op == Ops::BUFFER) {
      const auto& b = u->as<std::shared_ptr<Buffer>>();
      out.emplace_back(b, b->version.load());
    }
    if (u->op == Ops::ASSIGN && u->src.size() == 2 && u->src[0]->op == Ops::BUFFER)
      own_writes[u->src[0]->as<std::shared_ptr<Buffer>>().get()]++;
    if (u->op == Ops::ASSIGN && u->src.size() == 2 && u->src[0]->op == Ops::MULTI)  // a sharded one's parts
      for (const auto& part : u->src[0]->src)
        if (part->op == Ops::BUFFER) own_writes[part->as<std::shared_ptr<Buffer>>().get()]++;
    for (const auto& s : u->src) stack.push_back(s.get());
  }
  for (auto& [w, version] : out)
    if (auto b = w.lock(); b && own_writes.count(b.get())) version += own_writes[b.get()];
  return out;
}

void forget_dead_graphs() { realized_graphs().sweep(); }

NoGrad::NoGrad() { no_grad_depth++; }
NoGrad::~NoGrad() { no_grad_depth--; }
bool NoGrad::active() { return no_grad_depth.load() > 0; }

Tensor make_result(UOpPtr u, std::initializer_list<const Tensor*> inputs) {
  // An integer or bool result ends the gradient graph, as in PyTorch: no gradient can flow back
  // through it, so a float computed from it alone must not claim to require grad (its backward
  // would reach no leaf and leave every grad None without a word).
  bool needs = false;
  if (is_float(u->dtype))
    for (const Tensor* t : inputs) needs = needs || t->requires_grad();
  if (needs && NoGrad::active()) {
    u = make_uop(Ops::DETACH, u->dtype, {u});
    needs = false;
  }
  // The inputs' device: those whose graphs read a buffer must agree (floating ones, constants and
  // random numbers, are computed wherever they are read).
  const Tensor* placed = nullptr;
  std::string floating_device;  // the first floating input's, if one was placed
  for (const Tensor* t : inputs) {
    const TensorImpl& base = t->impl()->base ? *t->impl()->base : *t->impl();
    if (base.floating) {
      if (floating_device.empty()) floating_device = base.device;
      continue;
    }
    if (placed && placed->device() != t->device())
      throw Error(std::string(op_name(u->op)) + ": expected all tensors to be on the same device, found " +
                  placed->device() + " and " + t->device() + " (shapes " + shape_str(placed->shape()) +
                  " and " + shape_str(t->shape()) + "); move one with .to(device)");
    placed = t;
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = u->shape;
  impl->dtype = u->dtype;
  impl->device = placed ? placed->device() : floating_device;
  impl->floating = !placed;
  impl->requires_grad = needs;
  impl->uop = std::move(u);
  return Tensor(impl);
}

Tensor with_gradient(
    const Tensor& value, const std::vector<Tensor>& inputs,
    std::function<std::vector<Tensor>(const Tensor& g, const std::vector<Tensor>& inputs)> backward) {
  bool needs = !NoGrad::active() &&
               std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
  if (!needs) return value;
  auto f = std::make_shared<GradFn>();
  f->backward = std::move(backward);
  std::vector<UOpPtr> src{value.uop()};
  for (const Tensor& t : inputs) src.push_back(t.uop());
  Tensor t = make_tensor(make_uop(Ops::DETACH, value.dtype(), std::move(src), f));
  t.impl()->requires_grad = true;
  return t;
}

Tensor with_zero_gradient(const Tensor& value, const Tensor& x) {
  return with_gradient(value, {x}, [](const Tensor& g, const std::vector<Tensor>&) {
    return std::vector<Tensor>{Tensor::zeros_like(g)};
  });
}

Tensor& Tensor::requires_grad(bool on) {
  require(defined(), "requires_grad: use of an undefined tensor");
  if (!on) {
    impl_->requires_grad = false;
    return *this;
  }
  require(is_float(dtype()), "requires_grad: only floating point tensors can require gradients, got " +
                                 std::string(dtype_name(dtype())));
  require(!impl_->requires_grad || is_leaf(),
          "requires_grad: only leaf tensors can be marked (this one is computed)");
  // A leaf is a value of its own: a view becomes a base over the same data, and lazy data is
  // computed now, so that two leaves are never one hash-consed graph.
  if (impl_->base) {
    UOpPtr cur = impl_->current();
    impl_->device = impl_->base->device;  // a view's own copies of these date from when it was made
    impl_->floating = impl_->base->floating;
    impl_->base.reset();
    impl_->view_ops.clear();
    impl_->uop = cur;
  }
  if (!is_realized()) realize();
  impl_->requires_grad = true;
  registry().add(impl_);
  return *this;
}

bool Tensor::requires_grad() const { return defined() && impl_->requires_grad; }
bool Tensor::is_leaf() const { return !requires_grad() || registry().contains(impl_.get()); }

Tensor Tensor::grad() const {
  require(defined(), "grad: use of an undefined tensor");
  return impl_->grad ? Tensor(impl_->grad) : Tensor();
}

void Tensor::zero_grad() {
  if (impl_) impl_->grad.reset();
}

void Tensor::set_grad(const Tensor& grad) {
  require(defined(), "set_grad: use of an undefined tensor");
  if (!grad.defined()) {
    impl_->grad.reset();
    return;
  }
  require(grad.shape() == shape() && grad.dtype() == dtype(),
          "set_grad: a gradient " + shape_str(grad.shape()) + " " + std::string(dtype_name(grad.dtype())) +
              " for a tensor " + shape_str(shape()) + " " + std::string(dtype_name(dtype())));
  require(grad.device() == device(),
          "set_grad: the gradient is on " + grad.device() + ", the tensor on " + device(), ErrorKind::Value);
  impl_->grad = grad.detach().impl();
}

Tensor Tensor::detach() const { return make_tensor(make_uop(Ops::DETACH, dtype(), {uop()})); }

std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& targets,
                                     std::optional<Tensor> gradient) const {
  require(is_float(dtype()), "gradient: the differentiated tensor must be floating point, got " +
                                 std::string(dtype_name(dtype())));
  UOpPtr root = uop(), up;
  if (gradient) {
    require(gradient->shape() == shape(), "gradient: the given gradient has shape " +
                                              shape_str(gradient->shape()) + ", the tensor has shape " +
                                              shape_str(shape()));
    up = gradient->to(dtype()).uop();
  } else {
    require(numel() == 1,
            "gradient: a gradient can be implied only for a scalar, got shape " + shape_str(shape()));
    up = ones_like_uop(root);
  }
  std::vector<UOpPtr> target_uops;
  for (const auto& t : targets) target_uops.push_back(t.uop());
  std::vector<UOpPtr> g = backprop(root, up, target_uops);
  std::vector<Tensor> out;
  for (size_t i = 0; i < targets.size(); i++)  // a target root does not depend on gets zeros
    out.push_back(g[i] ? make_tensor(g[i]) : Tensor::zeros_like(targets[i]));
  return out;
}

void Tensor::backward() const {
  require(defined(), "backward: use of an undefined tensor");
  require(numel() == 1, "backward: grad can be implicitly created only for scalar outputs, got shape " +
                            shape_str(shape()));
  backward(Tensor::full(shape(), 1, dtype()));
}

void Tensor::backward(const Tensor& gradient) const {
  require(defined(), "backward: use of an undefined tensor");
  require(requires_grad(),
          "backward: the tensor does not require grad and does not have a grad_fn (no leaf with "
          "requires_grad(true) leads to it through floating-point ops: an integer or bool result ends "
          "the gradient graph)");
  require(gradient.shape() == shape(), "backward: the gradient has shape " + shape_str(gradient.shape()) +
                                           ", the tensor has shape " + shape_str(shape()));
  auto leaves = registry().live();
  // Each leaf as it is now and as it was before its in-place updates: a forward pass built before
  // one read it there.
  std::vector<UOpPtr> targets;
  std::vector<size_t> leaf_of;
  for (size_t i = 0; i < leaves.size(); i++) {
    targets.push_back(leaves[i]->current());
    leaf_of.push_back(i);
    UOpPtr now = targets.back();
    for (const auto& w : leaves[i]->past)
      if (auto p = w.lock(); p && p != now) {
        targets.push_back(p);
        leaf_of.push_back(i);
      }
  }
  std::vector<UOpPtr> found = backprop(uop(), gradient.to(dtype()).uop(), targets);
  std::vector<UOpPtr> g(leaves.size());
  for (size_t t = 0; t < targets.size(); t++) {
    if (!found[t]) continue;
    UOpPtr& gi = g[leaf_of[t]];
    gi = gi ? make_uop(Ops::ADD, gi->dtype, {gi, found[t]}) : found[t];
  }
  for (size_t i = 0; i < leaves.size(); i++) {
    if (!g[i]) continue;
    Tensor gi = make_tensor(g[i], leaves[i]->base ? leaves[i]->base->device : leaves[i]->device);
    if (gi.dtype() != leaves[i]->dtype) gi = gi.to(leaves[i]->dtype);
    // Gradients accumulate across backward calls until zero_grad(), as in PyTorch.
    leaves[i]->grad = leaves[i]->grad ? (Tensor(leaves[i]->grad) + gi).impl() : gi.impl();
  }
}

}  // namespace lazygrad
