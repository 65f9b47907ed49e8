// Scheduling: decide which nodes get a buffer of their own (the kernel boundaries), lower each
// into a kernel, and order the kernels. Elementwise work fuses into whatever consumes it; a
// reduction gets its own kernel only when fusing it would recompute it (it is read through an
// expand, or by several kernels). A reduction of a reduction fuses as a loop nest.
#include "engine/schedule.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_set>

#include "codegen/row_stream.h"
#include "debug.h"
#include "engine/buffer_limit.h"
#include "engine/trace.h"
#include "ir/walk.h"
#include "multi/shard.h"
#include "renderer/renderer.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "shape/view.h"

namespace lazygrad {

UOpPtr buffer_view(const std::shared_ptr<Buffer>& b, const Shape& shape) {
  UOpPtr buf = make_uop_with_shape(Ops::BUFFER, b->dtype, {}, b, Shape{b->size});
  if (shape == buf->shape) return buf;
  return make_uop(Ops::RESHAPE, b->dtype, {buf}, std::vector<int64_t>(shape));
}

const UOp* contiguous_buffer_node(const UOp* u) {
  while (u->op == Ops::RESHAPE) u = u->src[0].get();
  return u->op == Ops::BUFFER ? u : nullptr;
}

namespace {

// A chain of movement ops over a BUFFER: a view, which realizing never copies.
const UOp* view_base(const UOp* u) {
  while (is_movement(u->op) || u->op == Ops::DETACH) u = u->src[0].get();
  return u;
}
bool is_buffer_view(const UOp* u) { return view_base(u)->op == Ops::BUFFER; }

bool expands(const UOp* u) { return u->op == Ops::EXPAND && u->shape != u->src[0]->shape; }

using RealizeSet = std::map<const UOp*, UOpPtr>;

// An elementwise value that a reduction reads this many times per element (through expands: the
// input of a matrix product or a convolution's weight gradient) is computed once into a buffer,
// when it costs two ALU ops or more per element (a cast alone is cheaper to redo than to store)
// and its buffer would be no larger than what it reads (a gather's one-hot mask, a broadcast of
// its inputs, is cheaper to recompute than to store). Small values are left fused, as a kernel
// launch costs more than recomputing them, unless the reduction would recompute them a million
// times or more (a decode step's normalized vector, read by every row of a weight matrix).
// A value that costs kCostlyOps ALU ops or more per element (the random generator: a counter hash of
// a dozen integer ops) is computed once even when it reads no buffer at all: recomputed inside a
// matrix product's reduction, Tensor::rand({100, 100}) @ b cost 3 to 20 times the product's FLOPs.
constexpr int64_t kRecomputeLimit = 8, kRecomputeMinSize = 4096, kRecomputeMinWork = 1 << 20, kCostlyOps = 8;

// What a kernel computing u reads from memory rather than computes: a buffer, a reduction's result
// (a kernel of its own or a loop of this one), a value already stored.
bool stored_input(const UOp* x, const UOp* u, const RealizeSet& realize) {
  return x->op == Ops::BUFFER || x->op == Ops::REDUCE_AXIS || (x != u && realize.count(x));
}

bool worth_realizing(const UOp* u, int64_t reuse, const RealizeSet& realize) {
  if (!is_alu(u->op)) return false;
  // What lies behind an expand is not u's cost: it is computed once per element of the expand's
  // source, and the walk below decides on it by its own reuse. (A gather of random rows: the one-hot
  // mask [32, 6000] compares a broadcast Tensor::randint with an arange. Counting the generator's
  // dozen ops as the mask's realized the mask, and a stored mask cannot fold into one load per
  // element, so X[idx] looped over all 6000 rows; the random indices themselves are what to store.)
  // (A broadcast scalar, x / 255's constant, is part of the value's own cost.)
  auto behind_expand = [&](const UOp* x) { return expands(x) && x->src[0]->numel() > 1; };
  auto input = [&](const UOp* x) { return stored_input(x, u, realize) || (x != u && behind_expand(x)); };
  int ops = 0;
  int64_t read = 0;
  for (const UOp* x : toposort(u, [&](const UOp* x) { return !input(x); })) {
    if (input(x))
      read += behind_expand(x) ? x->src[0]->numel() : x->numel();
    else
      ops += is_alu(x->op) && x->op != Ops::CAST;
  }
  return ops >= 2 && (u->numel() >= kRecomputeMinSize || u->numel() * reuse >= kRecomputeMinWork) &&
         (u->numel() <= read || ops >= kCostlyOps);
}

// A reduction's result broadcast back over the axes it reduced (`x - x.max(1, true)`, softmax's
// sum) needs no kernel of its own: the kernel that reads it computes it once per row, before a
// loop over the row (docs/optimizer.md). Only with enough rows to share among threads, and when no
// reduction over other axes encloses it (that one would loop outside the row and redo it).
constexpr int64_t kFusedRowsMin = 64;

bool broadcast_back(const UOp* e, const UOp* enclosing, const RealizeSet& realize) {
  if (!expands(e)) return false;
  // The reductions the broadcast value is made of (x.max(1, true) * -1: one), each of the row's
  // shape and reducing exactly the axes the expand brings back.
  std::vector<const UOp*> reductions;
  auto stop = [&](const UOp* u) {
    return u->op == Ops::BUFFER || u->op == Ops::REDUCE_AXIS || realize.count(u);
  };
  for (const UOp* u : toposort(e->src[0].get(), [&](const UOp* u) { return !stop(u); }))
    if (u->op == Ops::REDUCE_AXIS && !realize.count(u)) reductions.push_back(u);
  if (reductions.empty()) return false;
  for (const UOp* r : reductions) {
    if (r->src[0]->shape != e->shape || r->shape != e->src[0]->shape || r->numel() < kFusedRowsMin)
      return false;
    if (enclosing && (enclosing->as<ReduceArg>().axes != r->as<ReduceArg>().axes ||
                      enclosing->src[0]->shape != r->src[0]->shape))
      return false;
  }
  return true;
}

// The ops on the longest path inside one kernel: a value deeper than this is computed into a buffer
// of its own, so a chain of 100,000 additions is a few hundred kernels, not one function of 100,000
// statements (and lowering and code generation stay well inside the call stack). Real kernels
// (a fused backward pass, GELU and its gradient) are some tens of ops deep.
constexpr int kMaxKernelDepth = 256;
// The same for movement ops: views that do not merge (a reshape of a permute) stack up in the
// kernel's index expression, whose simplification grows with the square of its depth (3,000
// reshape/permute pairs took minutes). Real models have a handful in a row.
constexpr int kMaxMovementDepth = 64;

// Adds to `realize` the values where a kernel would grow deeper than kMaxKernelDepth; returns whether
// it added any.
bool cap_kernel_depth(const std::vector<UOpPtr>& targets, RealizeSet& realize) {
  std::vector<const UOp*> roots;
  for (const auto& t : targets) roots.push_back(t.get());
  // ALU ops and movement ops on the longest path down to a load, inside its kernel.
  std::unordered_map<const UOp*, std::pair<int, int>> depth;
  bool added = false;
  for (const UOp* u : toposort(roots, [](const UOp* u) { return u->op != Ops::BUFFER; })) {
    int d = 0, m = 0;
    for (const auto& s : u->src) {
      if (s->op == Ops::BUFFER || realize.count(s.get())) continue;
      auto [ds, ms] = depth[s.get()];
      bool deep = ds >= kMaxKernelDepth && (is_alu(s->op) || s->op == Ops::REDUCE_AXIS);
      bool long_view = ms >= kMaxMovementDepth && is_movement(s->op);
      if (deep || long_view) {
        realize.emplace(s.get(), s);
        added = true;
        debug_log(3, "schedule: " + std::string(op_name(s->op)) + " " + shape_str(s->shape) +
                         " gets its own kernel (the kernel reading it would be over " +
                         std::to_string(deep ? kMaxKernelDepth : kMaxMovementDepth) +
                         (deep ? " ops deep)" : " movement ops deep)"));
        continue;
      }
      d = std::max(d, ds);
      m = std::max(m, ms);
    }
    depth[u] = {d + (is_alu(u->op) || u->op == Ops::REDUCE_AXIS ? 1 : 0), m + (is_movement(u->op) ? 1 : 0)};
  }
  return added;
}

// An elementwise value that several kernels read is computed by each of them, from all of its
// inputs: a transformer's residual stream, h + attn(h) + mlp(...) + ..., was recomputed by every
// layer's layer norm from every earlier layer's outputs (GPT-2's last one read 44 buffers; 10 ms of
// a 200 ms prompt on a Xeon, and growing with the square of the depth). Such a value is computed
// once into a buffer when storing it and reading it back costs fewer loads than the recomputing:
// (kernels - 1) * inputs > kernels + 1, for values of at least kRecomputeMinSize elements. GPT-2's
// residual adds become kernels of their own (24 launches of a [130, 768] add in a prompt, where the
// layer norms had read up to 44 buffers each); the projection before each stays its own kernel, as
// a reduction read through an expand.
bool worth_sharing(const UOp* u, size_t kernels, const RealizeSet& realize) {
  if (!is_alu(u->op) || kernels < 2 || u->numel() < kRecomputeMinSize) return false;
  int64_t inputs = 0;
  auto input = [&](const UOp* x) { return stored_input(x, u, realize); };
  for (const UOp* x : toposort(u, [&](const UOp* x) { return !input(x) && !expands(x); }))
    inputs += input(x) && x->numel() == u->numel();
  const auto k = static_cast<int64_t>(kernels);
  return (k - 1) * inputs > k + 1;
}

// Adds reductions (and elementwise values several kernels share) that must not be fused; returns
// whether it added any.
bool split_reductions(RealizeSet& realize) {
  std::map<const UOp*, std::set<const UOp*>> reached_by, alu_reached_by;
  std::map<const UOp*, UOpPtr> must, ptrs;
  for (const auto& entry : realize) {
    const UOp* root = entry.first;  // (clang 14 cannot capture structured bindings in lambdas)
    const UOpPtr& root_ptr = entry.second;
    std::set<std::tuple<const UOp*, bool, int64_t, const UOp*>> seen;
    // expanded: read through an expand; reuse: how many times a reduction above reads each element;
    // enclosing: the innermost reduction above. A stack, not recursion: a graph may be very deep.
    struct Visit {
      const UOpPtr* u;
      bool expanded;
      int64_t reuse;
      const UOp* enclosing;
    };
    std::vector<Visit> stack{{&root_ptr, false, 0, nullptr}};
    int64_t visits = 0;
    while (!stack.empty()) {
      auto [p, expanded, reuse, enclosing] = stack.back();
      stack.pop_back();
      const UOpPtr& u = *p;
      if (u->op == Ops::BUFFER || (u.get() != root && realize.count(u.get()))) continue;
      if (!seen.insert({u.get(), expanded, reuse, enclosing}).second) continue;
      visits++;
      // A value read inside a reduction is the reduction rules' to weigh (worth_realizing, and a
      // reduction read by several kernels): here only values read elementwise.
      if (u.get() != root && !expanded && !enclosing && is_alu(u->op)) {
        alu_reached_by[u.get()].insert(root);
        ptrs[u.get()] = u;
      }
      if (u->op == Ops::REDUCE_AXIS && u.get() != root) {
        reached_by[u.get()].insert(root);
        ptrs[u.get()] = u;
        if (expanded && must.emplace(u.get(), u).second && debug_at(3))
          debug_log(3, "schedule: REDUCE " + shape_str(u->src[0]->shape) + " -> " + shape_str(u->shape) +
                           " gets its own kernel (read through an expand)");
      }
      if (reuse >= kRecomputeLimit && u.get() != root && worth_realizing(u.get(), reuse, realize)) {
        if (must.emplace(u.get(), u).second && debug_at(3))
          debug_log(3, "schedule: " + std::string(op_name(u->op)) + " " + shape_str(u->shape) +
                           " gets its own kernel (a reduction would compute each element " +
                           std::to_string(reuse) + " times)");
        continue;  // what it is made of is that kernel's: one kernel, not one per node of the chain
      }
      if (!expanded && broadcast_back(u.get(), enclosing, realize)) {  // stays fused: computed once per row
        for (const auto& s : u->src) stack.push_back({&s, false, reuse, enclosing});
        continue;
      }
      bool e = expanded || expands(u.get());
      int64_t r = reuse;
      if (u->op == Ops::REDUCE_AXIS) r = 1;  // counted from each reduction on down
      if (r && expands(u.get()))
        r = std::min<int64_t>(r * (u->numel() / std::max<int64_t>(u->src[0]->numel(), 1)), 1 << 30);
      for (const auto& s : u->src)
        stack.push_back({&s, e, r, u->op == Ops::REDUCE_AXIS ? u.get() : enclosing});
    }
    count_walk(visits, static_cast<int64_t>(seen.size()));
  }
  // Shared values first, alone: once one is a buffer, a reduction it was made of may have only its
  // kernel left to read it, and then fuses there instead of getting a kernel of its own.
  bool shared = false;
  for (const auto& [u, roots] : alu_reached_by)
    if (!must.count(u) && worth_sharing(u, roots.size(), realize)) {
      debug_log(3, "schedule: " + std::string(op_name(u->op)) + " " + shape_str(u->shape) +
                       " gets its own buffer (read by " + std::to_string(roots.size()) + " kernels)");
      must[u] = ptrs[u];
      shared = true;
    }
  for (const auto& [r, roots] : reached_by)
    if (!shared && roots.size() > 1 && !must.count(r)) {
      debug_log(3, "schedule: REDUCE " + shape_str(r->shape) + " gets its own kernel (read by " +
                       std::to_string(roots.size()) + " kernels)");
      must[r] = ptrs[r];
    }
  bool added = false;
  for (auto& [k, v] : must) added |= realize.emplace(k, v).second;
  return added;
}

// Buffers that a graph outside this realize still reads: after `y = x * 2; x += 1; x.realize()`,
// y must see x's old data, as it would in PyTorch, so the assign may not overwrite that buffer.
// (The frontend realizes such live tensors in the same schedule first, see tensor.cpp, so this
// finds only holders that are not tensors.) A node is held from outside when it has more references
// than the graph, the targets' two holders (realize_uops' contract) and the passive graphs account
// for; everything below such a node stays readable.
std::unordered_set<const Buffer*> buffers_read_later(const std::vector<UOpPtr>& targets,
                                                     const std::vector<UOpPtr>& passive) {
  std::unordered_map<const UOp*, long> inner, uses;
  std::vector<const UOpPtr*> stack;
  for (const auto& t : targets) {
    inner[t.get()] += 2;
    stack.push_back(&t);
  }
  while (!stack.empty()) {  // pointers into the graph's own src vectors: no extra references
    const UOpPtr* p = stack.back();
    stack.pop_back();
    const UOp* u = p->get();
    if (uses.count(u)) continue;
    uses[u] = p->use_count();
    for (const auto& s : u->src) {
      inner[s.get()]++;
      stack.push_back(&s);
    }
  }
  // The passive graphs' references into this graph: their roots' holder, and their edges from nodes
  // outside this graph (edges from inside are counted above).
  std::unordered_set<const UOp*> outside;
  std::vector<const UOp*> walk;
  for (const auto& r : passive) {
    if (uses.count(r.get()))
      inner[r.get()]++;
    else
      walk.push_back(r.get());
  }
  while (!walk.empty()) {
    const UOp* u = walk.back();
    walk.pop_back();
    if (!outside.insert(u).second) continue;
    for (const auto& s : u->src) {
      if (uses.count(s.get()))
        inner[s.get()]++;
      else
        walk.push_back(s.get());
    }
  }
  std::vector<const UOp*> live;
  for (const auto& [u, n] : uses)
    if (n > inner[u]) live.push_back(u);
  std::unordered_set<const UOp*> seen;
  std::unordered_set<const Buffer*> out;
  while (!live.empty()) {
    const UOp* u = live.back();
    live.pop_back();
    if (!seen.insert(u).second) continue;
    if (u->op == Ops::BUFFER) out.insert(u->as<std::shared_ptr<Buffer>>().get());
    for (size_t i = 0; i < u->src.size(); i++) {
      // An assign that this schedule runs: whoever holds it reads the data after the write, not
      // its target's old contents (the value, src[1], may still read them).
      if (u->op == Ops::ASSIGN && i == 0 && uses.count(u)) continue;
      live.push_back(u->src[i].get());
    }
  }
  return out;
}

std::atomic<int64_t> copy_on_writes{0};
std::mutex last_copy_mu;
std::string last_copy;  // the shape and dtype of the last assign that wrote a copy

// Assigns run by an earlier realize -> the view of the buffer holding their result. A graph built
// before that realize still contains them: it reads that buffer instead of applying the assign a
// second time (tinygrad keeps a similar "becomes" map). Weak keys: an entry lives while some graph
// still holds its node.
struct RealizedNodes {
  std::mutex mu;
  std::unordered_map<const UOp*, std::pair<std::weak_ptr<const UOp>, UOpPtr>> map;
};
RealizedNodes& realized_nodes() {
  static RealizedNodes* r = new RealizedNodes();  // never destroyed: its views own buffers
  return *r;
}

// The graphs of the targets with every node computed earlier replaced by its buffer's view; `old_of`
// maps each new node back to the node it replaces.
std::vector<UOpPtr> substitute_realized(const std::vector<UOpPtr>& targets,
                                        std::unordered_map<const UOp*, UOpPtr>& old_of) {
  RealizedNodes& r = realized_nodes();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.map.empty()) return targets;
  // Sources first (a loop, not recursion); a node computed earlier is replaced whole.
  std::vector<const UOp*> roots;
  for (const auto& t : targets) roots.push_back(t.get());
  std::unordered_map<const UOp*, UOpPtr> done;  // node -> its replacement (null: unchanged)
  auto replaced = [&](const UOpPtr& u) {
    auto it = done.find(u.get());
    return it != done.end() && it->second ? it->second : u;
  };
  for (const UOp* u : toposort(roots, [&](const UOp* u) { return !r.map.count(u); })) {
    UOpPtr out;
    if (auto it = r.map.find(u); it != r.map.end()) {
      out = it->second.second;
    } else {
      std::vector<UOpPtr> src;
      bool changed = false;
      for (const auto& s : u->src) {
        src.push_back(replaced(s));
        changed |= src.back() != s;
      }
      const ScopeGuard scope(u->scope);  // the profiler charges the rebuilt node where u was made
      if (changed) out = make_uop_with_shape(u->op, u->dtype, std::move(src), u->arg, u->shape);
    }
    done[u] = out;
  }
  std::vector<UOpPtr> out;
  for (const auto& t : targets) out.push_back(replaced(t));
  // old_of: each new node -> the node it replaces (the old node is held by its graph's parents or the
  // targets, so the pointer stays valid while the schedule is made).
  std::unordered_map<const UOp*, UOpPtr> holder;
  for (const UOp* u : toposort(roots))
    for (const auto& s : u->src) holder.emplace(s.get(), s);
  for (const auto& t : targets) holder.emplace(t.get(), t);
  for (const auto& [old, repl] : done)
    if (repl) old_of[repl.get()] = holder.at(old);
  return out;
}

// ---- row streams ------------------------------------------------------------------------------
// x @ W with W [K, N] row-major, read once into a few thousand outputs (a decode step's products):
// one kernel could only share the outputs among the threads, each thread reading a piece of every
// row of W. Instead the sum over K becomes T partial sums over K / T rows each (a kernel of their
// own, whose global range is the T pieces), then the sum of the partials, fused with what reads it;
// the optimizer gives the partials' kernel the whole row of outputs as its tile (row_stream in
// codegen/optimize.cpp), so each thread streams its own rows of W whole. On the Xeon GPT-2's
// decode steps went from 26.3-26.9 to 24.6-24.8 ms (bench_gpt2), its [3072, 768] product from
// 17.5 to 22.7 GB/s (bench_matvec_orders).

// The pieces K splits into (8, 4 or 2, each of at least 32 rows), or 0 when the sum u does not
// stream a matrix by rows on the CPU.
int64_t row_stream_pieces(const UOp* u) {
  if (u->op != Ops::REDUCE_AXIS || u->dtype != kFloat32) return 0;
  const ReduceArg& r = u->as<ReduceArg>();
  if (r.op != Ops::ADD || r.axes.size() != 1 || u->numel() < 16) return 0;
  const Shape& shape = u->src[0]->shape;
  const auto axis = static_cast<size_t>(r.axes[0]);
  const int64_t k = shape[axis];
  int64_t pieces = 0;
  for (int64_t t : {8, 4, 2})
    if (!pieces && k % t == 0 && k / t >= 32) pieces = t;
  if (!pieces) return 0;
  // The matrix: a view of a CPU buffer, one view without a mask, with the reduction's shape, that
  // steps along the reduction (not contiguous: x @ W.T is a dot product per row already), is
  // contiguous along an output axis and broadcast along none, reading at least 1 MiB.
  bool streams = false;
  // The walk stops at reductions below (their values are other kernels' or fused as they would be
  // anyway): a walk per sum down a whole training graph would grow as its square.
  const UOp* src = u->src[0].get();
  for (const UOp* x : toposort(src, [&](const UOp* x) { return x == src || x->op != Ops::REDUCE_AXIS; })) {
    if (!is_movement(x->op) || x->shape != shape || view_base(x)->op != Ops::BUFFER) continue;
    const UOp* base = view_base(x);
    if (base->as<std::shared_ptr<Buffer>>()->device.rfind("CPU", 0) != 0) continue;
    std::vector<const UOp*> chain;
    for (const UOp* m = x; is_movement(m->op); m = m->src[0].get()) chain.push_back(m);
    std::optional<ShapeTracker> st = ShapeTracker::contiguous(base->shape);
    try {
      for (size_t i = chain.size(); i-- > 0;)
        st = st->apply(chain[i]->op, chain[i]->as<std::vector<int64_t>>());
    } catch (const Error&) {  // a Variable position (SHRINK_AT): not a plain view
      continue;
    }
    if (st->views().size() != 1 || !st->views()[0].mask.empty()) continue;
    const std::vector<int64_t>& strides = st->views()[0].strides;
    MatrixRead m{.outputs = u->numel(), .bytes = 4, .steps_along_sum = std::abs(strides[axis]) >= 16};
    for (size_t a = 0; a < shape.size(); a++) {
      if (shape[a] <= 1) continue;
      if (strides[a] != 0) m.bytes *= shape[a];
      if (a == axis) continue;
      m.contiguous_along_output |= strides[a] == 1 && shape[a] % 16 == 0;
      m.broadcast_along_output |= strides[a] == 0;
    }
    streams |= streams_rows(m);
  }
  return streams ? pieces : 0;
}

// The targets' graphs with each such sum split in two (row_stream_pieces); the partial sums, which
// get kernels of their own, go to `partials`, and `old_of` maps each ASSIGN rebuilt on top of one
// to the node it replaces.
std::vector<UOpPtr> split_row_streams(const std::vector<UOpPtr>& targets,
                                      std::unordered_map<const UOp*, UOpPtr>& old_of,
                                      std::vector<UOpPtr>& partials) {
  std::vector<const UOp*> roots;
  std::unordered_map<const UOp*, UOpPtr> holder, done;  // node -> a pointer to it; its replacement
  for (const auto& t : targets) {
    roots.push_back(t.get());
    holder.emplace(t.get(), t);
  }
  auto replaced = [&](const UOpPtr& u) {
    auto it = done.find(u.get());
    return it != done.end() ? it->second : u;
  };
  const std::vector<const UOp*> order = toposort(roots);  // sources first
  // Most schedules (every training step's) have no such sum: the graph is then not rebuilt. A split
  // rebuilds only what is above a sum, and row_stream_pieces' walk stops at sums, so each sum is
  // judged here as the rebuild below judges it.
  if (std::none_of(order.begin(), order.end(), [](const UOp* u) { return row_stream_pieces(u) != 0; }))
    return targets;
  for (const UOp* u : order)
    for (const auto& s : u->src) holder.emplace(s.get(), s);
  for (const UOp* u : order) {
    const ScopeGuard scope(u->scope);  // the profiler charges the rebuilt nodes where u was made
    std::vector<UOpPtr> src;
    bool changed = false;
    for (const auto& s : u->src) {
      src.push_back(replaced(s));
      changed |= src.back() != s;
    }
    UOpPtr node =
        changed ? make_uop_with_shape(u->op, u->dtype, std::move(src), u->arg, u->shape) : holder.at(u);
    if (const int64_t pieces = row_stream_pieces(node.get())) {
      // [..., K, ...] as [..., T, K / T, ...], the pieces' axis first: the partials are T rows of
      // the outputs, each stored contiguously.
      const auto axis = node->as<ReduceArg>().axes[0];
      Shape split = node->src[0]->shape;
      split[static_cast<size_t>(axis)] /= pieces;
      split.insert(split.begin() + axis, pieces);
      std::vector<int64_t> pieces_first{axis};
      for (int64_t a = 0; a < static_cast<int64_t>(split.size()); a++)
        if (a != axis) pieces_first.push_back(a);
      UOpPtr rows = make_uop(
          Ops::PERMUTE, node->dtype,
          {make_uop(Ops::RESHAPE, node->dtype, {node->src[0]}, std::vector<int64_t>(split))}, pieces_first);
      UOpPtr partial = make_uop(Ops::REDUCE_AXIS, node->dtype, {rows}, ReduceArg{Ops::ADD, {axis + 1}});
      UOpPtr total = make_uop(Ops::REDUCE_AXIS, node->dtype, {partial}, ReduceArg{Ops::ADD, {0}});
      partials.push_back(partial);
      debug_log(3, "schedule: REDUCE " + shape_str(node->src[0]->shape) + " -> " + shape_str(node->shape) +
                       " is summed in " + std::to_string(pieces) + " pieces of rows (a row stream)");
      node = make_uop(Ops::RESHAPE, node->dtype, {total}, std::vector<int64_t>(node->shape));
      changed = true;
    }
    if (!changed) continue;
    done[u] = node;
    if (u->op == Ops::ASSIGN) {
      auto it = old_of.find(u);
      old_of[node.get()] = it != old_of.end() ? it->second : holder.at(u);
    }
  }
  std::vector<UOpPtr> out;
  for (const auto& t : targets) out.push_back(replaced(t));
  return out;
}

// For the profiler and VIZ: the nodes the kernel of `root` computes and those it reads.
void trace_kernel_nodes(const UOpPtr& root, const RealizeSet& realize, Kernel& k) {
  auto read = [&](const UOp* x) { return x != root.get() && (x->op == Ops::BUFFER || realize.count(x)); };
  const std::vector<const UOp*> order = toposort(root.get(), [&](const UOp* x) { return !read(x); });
  std::unordered_map<const UOp*, UOpPtr> holder{{root.get(), root}};
  for (const UOp* x : order)
    if (!read(x))
      for (const auto& s : x->src) holder.emplace(s.get(), s);
  for (const UOp* x : order) (read(x) ? k.traced_inputs : k.traced_nodes).push_back(holder.at(x));
}

// Entries whose node no graph holds any more: their views would count as readers of their buffers.
void forget_dead_realized() {
  RealizedNodes& r = realized_nodes();
  std::lock_guard<std::mutex> lock(r.mu);
  std::erase_if(r.map, [](const auto& kv) { return kv.second.first.expired(); });
}

}  // namespace

void remember_realized(const std::vector<std::pair<UOpPtr, UOpPtr>>& computed) {
  RealizedNodes& r = realized_nodes();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [node, view] : computed) r.map[node.get()] = {node, view};
}

int64_t copy_on_write_count() { return copy_on_writes.load(); }
std::string last_copy_on_write() {
  std::lock_guard<std::mutex> lock(last_copy_mu);
  return last_copy;
}

namespace {

// Where each node to realize runs: the device of the target it is computed for, except below a COPY,
// whose source is computed on the device it copies from. A walk from the targets down.
std::unordered_map<const UOp*, std::string> realize_devices(const std::vector<UOpPtr>& targets,
                                                            std::vector<std::string> devices,
                                                            const RealizeSet& realize) {
  if (devices.empty()) devices.assign(targets.size(), default_device());
  std::unordered_map<const UOp*, std::string> out;
  std::unordered_set<const UOp*> seen;
  std::vector<std::pair<const UOp*, const std::string*>> stack;
  for (size_t i = targets.size(); i-- > 0;) stack.push_back({targets[i].get(), &devices[i]});
  while (!stack.empty()) {
    auto [u, d] = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    if (realize.count(u)) out.emplace(u, *d);
    const std::string* below = u->op == Ops::COPY ? &u->as<CopyArg>().from : d;
    for (size_t i = 0; i < u->src.size(); i++)  // a MULTI's part i is on its device i
      stack.push_back({u->src[i].get(), u->op == Ops::MULTI ? &u->as<MultiArg>().devices[i] : below});
  }
  return out;
}

// A COPY item: dst gets the bytes of its source, a whole buffer (or the buffer a node of this
// schedule computes into).
Kernel copy_kernel(const UOp* u, const std::shared_ptr<Buffer>& dst, const RealizedMap& buffers) {
  const CopyArg& c = u->as<CopyArg>();
  const UOp* src = u->src[0].get();
  Kernel k;
  k.copy = true;
  k.device = c.to;
  k.out_shape = u->shape;
  std::shared_ptr<Buffer> from;
  if (auto it = buffers.find(src); it != buffers.end()) {
    from = it->second;
    k.reads.push_back(src);
  } else {
    from = contiguous_buffer_node(src)->as<std::shared_ptr<Buffer>>();
  }
  k.name = "copy " + std::to_string(dst->nbytes()) + " " + c.to + " <- " + c.from;
  k.buffers = {dst, from};
  k.written = {true, false};
  return k;
}

}  // namespace

Schedule create_schedule(const std::vector<UOpPtr>& original_targets, const std::vector<std::string>& devices,
                         const std::vector<UOpPtr>& passive) {
  forget_dead_realized();
  const std::unordered_set<const Buffer*> read_later = buffers_read_later(original_targets, passive);
  std::unordered_map<const UOp*, UOpPtr> old_of;
  std::vector<UOpPtr> partials;
  // Graphs that read sharded values become one graph per device (multi/shard.h): a sharded target
  // is a MULTI of its parts from here on, each part computed on its device.
  std::vector<std::pair<UOpPtr, UOpPtr>> multi_assigns;
  const std::vector<UOpPtr> targets = split_row_streams(
      lower_multi(substitute_realized(original_targets, old_of), &multi_assigns), old_of, partials);
  RealizeSet realize;
  for (const auto& t : targets) {
    if (t->op != Ops::MULTI) {
      if (!is_buffer_view(t.get())) realize.emplace(t.get(), t);
      continue;
    }
    for (const auto& part : t->src)
      if (!is_buffer_view(part.get())) realize.emplace(part.get(), part);
  }
  for (const auto& p : partials) realize.emplace(p.get(), p);
  // CONTIGUOUS, ASSIGN and COPY always write a buffer, and a COPY reads one: its source is a whole
  // buffer, or computed into one (Tensor::to gives it a CONTIGUOUS when it is not).
  auto always = [&](const UOpPtr& u) {
    if (u->op == Ops::CONTIGUOUS || u->op == Ops::ASSIGN || u->op == Ops::COPY) realize.emplace(u.get(), u);
    if (u->op == Ops::COPY) {
      const UOp* b = contiguous_buffer_node(u->src[0].get());
      if (!b || b->numel() != u->numel()) realize.emplace(u->src[0].get(), u->src[0]);
    }
  };
  std::vector<const UOp*> roots;
  for (const auto& t : targets) {
    roots.push_back(t.get());
    always(t);
  }
  for (const UOp* u : toposort(roots))
    for (const auto& src : u->src) always(src);
  do {
    while (split_reductions(realize)) {
    }
  } while (cap_kernel_depth(targets, realize));

  // Buffers: fresh ones, except that an ASSIGN writes into its target's buffer, unless a graph
  // outside this realize will still read the old contents (then it writes a copy: copy-on-write).
  RealizedMap buffers;
  std::unordered_set<const UOp*> in_place;
  std::map<const UOp*, Kernel> kernels;
  std::unordered_map<const UOp*, std::string> device_of;
  while (true) {
    device_of = realize_devices(targets, devices, realize);
    for (const auto& [u, p] : realize) {
      if (buffers.count(u)) continue;
      if (u->op == Ops::ASSIGN) {
        const UOp* base = view_base(u->src[0].get());
        if (base->op != Ops::BUFFER) throw Error("assign: the target is not a realized buffer");
        const auto& target = base->as<std::shared_ptr<Buffer>>();
        if (!read_later.count(target.get())) {
          buffers[u] = target;
          in_place.insert(u);
          continue;
        }
        if (u->src.size() == 3)
          throw Error(
              "narrow_assign: a graph that no tensor holds (a UOp kept from C++) still reads the old "
              "contents of the tensor it writes into; "
              "realize that reader first (a partial write cannot go to a copy)");
        debug_log(3, "schedule: assign writes a new buffer: the old one is still read by a pending graph");
        copy_on_writes++;
        {
          std::lock_guard<std::mutex> lock(last_copy_mu);
          last_copy = shape_str(u->shape) + " " + std::string(dtype_name(u->dtype));
        }
      }
      buffers[u] = std::make_shared<Buffer>(device_of.at(u), u->dtype, u->numel());
    }
    kernels.clear();
    for (const auto& [u, p] : realize) {
      if (u->op == Ops::COPY) {
        kernels.emplace(u, copy_kernel(u, buffers[u], buffers));
        continue;
      }
      Kernel k = lower_kernel(p, buffers[u], in_place.count(u) ? u->src[0] : nullptr, buffers);
      k.device = buffers[u]->device;
      for (const auto& b : k.buffers)  // the frontend keeps a graph's buffers on one device
        if (b->device != k.device)
          throw Error("schedule: kernel " + k.name + " runs on " + k.device + " but reads a buffer on " +
                      b->device + " (an op on tensors of two devices that was not refused)");
      kernels.emplace(u, std::move(k));
    }
    // An in-place assign whose kernel reads its buffer at another index than it writes
    // (x.assign(x.flip(0))) would read values it already overwrote: its value gets a buffer of its
    // own first, and everything is lowered again.
    bool staged = false;
    for (const auto& [u, k] : kernels)
      if (in_place.count(u) && reads_output_elsewhere(k)) {
        staged |= realize.emplace(u->src[1].get(), u->src[1]).second;
        debug_log(3, "schedule: assign reads its target at other indices; its value gets a buffer first");
      }
    // A reduction a kernel would compute at two indices per output (see Kernel::recomputed).
    for (const auto& [u, k] : kernels)
      for (const auto& r : k.recomputed)
        if (realize.emplace(r.get(), r).second) {
          staged = true;
          debug_log(3, "schedule: REDUCE " + shape_str(r->shape) + " gets its own kernel (" + k.name +
                           " would compute it at two indices)");
        }
    // A kernel that binds more buffers than its device allows (WebGPU's storage buffers): one of
    // its fused values gets a buffer of its own (engine/buffer_limit.h). Each kernel is judged by
    // the realize set it was lowered with: the values are added once all are chosen.
    std::vector<UOpPtr> split_off;
    for (const auto& [u, k] : kernels) {
      if (k.copy) continue;
      const Target& target = device(k.device).renderer().target();
      if (target.max_buffers <= 0 || static_cast<int64_t>(k.buffers.size()) <= target.max_buffers) continue;
      UOpPtr value = value_to_split_off(realize.at(u), realize, target);
      if (!value)
        throw Error("schedule: kernel " + k.name + " binds " + std::to_string(k.buffers.size()) +
                    " buffers, more than the " + std::to_string(target.max_buffers) + " " + k.device +
                    " allows in one kernel, and no value inside it can be split off");
      debug_log(3, "schedule: " + k.name + " binds " + std::to_string(k.buffers.size()) + " buffers, over " +
                       k.device + "'s " + std::to_string(target.max_buffers) + ": " +
                       std::string(op_name(value->op)) + " " + shape_str(value->shape) +
                       " gets a buffer of its own");
      split_off.push_back(std::move(value));
    }
    for (const UOpPtr& value : split_off) staged |= realize.emplace(value.get(), value).second;
    if (!staged) break;
    while (split_reductions(realize)) {
    }
  }

  if (realize_traced())
    for (auto& [u, k] : kernels) trace_kernel_nodes(realize.at(u), realize, k);

  // A kernel that reads a buffer's old contents runs before the assign that overwrites it.
  std::map<const UOp*, std::set<const UOp*>> deps;
  for (const auto& [u, k] : kernels) deps[u].insert(k.reads.begin(), k.reads.end());
  for (const auto& [a, ka] : kernels) {
    if (!in_place.count(a)) continue;
    const Buffer* target = ka.buffers[0].get();
    for (const auto& [u, k] : kernels) {
      if (u == a) continue;
      bool reads_target = false;
      for (size_t i = 0; i < k.buffers.size(); i++)
        reads_target |= k.buffers[i].get() == target && !k.written[i];
      if (reads_target && !deps[u].count(a)) deps[a].insert(u);
    }
  }
  Schedule sched;
  // Each kernel after the kernels it depends on (a loop over a stack: a long chain has many kernels).
  std::set<const UOp*> placed, visiting;
  for (const auto& entry : kernels) {
    std::vector<std::pair<const UOp*, std::set<const UOp*>::const_iterator>> stack;
    auto enter = [&](const UOp* u) {
      if (placed.count(u)) return;
      if (!visiting.insert(u).second)
        throw Error("schedule: cycle between kernels (an assign read by its own input?)");
      stack.push_back({u, deps[u].cbegin()});
    };
    enter(entry.first);
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next != deps[u].cend()) {
        const UOp* d = *next++;
        enter(d);
        continue;
      }
      placed.insert(u);
      sched.kernels.push_back(std::move(kernels.at(u)));
      stack.pop_back();
    }
  }

  auto view_of = [&](const UOp* u, const UOpPtr& node) {
    return in_place.count(u) ? node->src[0] : buffer_view(buffers[u], node->shape);
  };
  // A sharded value becomes the MULTI of its parts' buffers.
  auto multi_view_of = [&](const UOpPtr& m) {
    std::vector<UOpPtr> parts;
    for (const auto& p : m->src) parts.push_back(realize.count(p.get()) ? view_of(p.get(), p) : p);
    return make_uop(Ops::MULTI, m->dtype, std::move(parts), m->arg);
  };
  for (size_t i = 0; i < targets.size(); i++) {
    const UOpPtr& t = targets[i];
    if (t->op == Ops::MULTI)
      sched.becomes[original_targets[i].get()] = multi_view_of(t);
    else if (realize.count(t.get()))
      sched.becomes[original_targets[i].get()] = view_of(t.get(), t);
    else if (t != original_targets[i])
      sched.becomes[original_targets[i].get()] = t;  // computed before
  }
  // Assigns are remembered (a graph holding one must not apply it again); a pure value held by a
  // graph built earlier is simply computed again there.
  for (const auto& [u, node] : realize) {
    if (u->op != Ops::ASSIGN) continue;
    UOpPtr view = view_of(u, node);
    sched.computed.emplace_back(node, view);
    if (auto it = old_of.find(u); it != old_of.end()) sched.computed.emplace_back(it->second, view);
  }
  for (const auto& [logical, parts] : multi_assigns)
    if (std::all_of(parts->src.begin(), parts->src.end(),
                    [&](const UOpPtr& p) { return realize.count(p.get()); }))
      sched.computed.emplace_back(logical, multi_view_of(parts));
  if (debug_at(3)) {
    std::ostringstream os;
    os << "schedule: " << sched.kernels.size() << " kernels for " << targets.size() << " targets:";
    for (const auto& k : sched.kernels) os << " " << k.name;
    debug_log(3, os.str());
  }
  return sched;
}

}  // namespace lazygrad
