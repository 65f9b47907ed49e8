// Sharded tensors: building MULTI nodes, and lowering the graphs that read them to one graph per
// device (multi/shard.h, docs/multi.md). The lowering walks each graph once, sources first, and
// gives every node that reads a MULTI its parts: the node's op applied to its sources' parts on each
// device, or, where the split does not survive the op, the rows each device needs fetched from the
// parts that hold them (box_to) and the op applied there.
#include "multi/shard.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/walk.h"
#include "lazygrad/multi.h"
#include "runtime/device.h"
#include "shape/size.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

namespace {
// Set by the first MULTI: until then no graph can read one and lower_multi has nothing to walk.
std::atomic<bool> any_multi{false};

using Box = std::vector<std::pair<int64_t, int64_t>>;  // a [lo, hi) range per axis

Error multi_error(const std::string& what) { return Error("sharded tensor: " + what); }

Box whole_box(const Shape& s) {
  Box b;
  for (int64_t n : s) b.emplace_back(0, n);
  return b;
}

UOpPtr shrink_to(const UOpPtr& u, const Box& box) {
  std::vector<int64_t> arg;
  bool whole = true;
  for (size_t d = 0; d < box.size(); d++) {
    arg.push_back(box[d].first);
    arg.push_back(box[d].second);
    whole = whole && box[d].first == 0 && box[d].second == u->shape[d];
  }
  return whole ? u : apply_movement(u, Ops::SHRINK, arg);
}

UOpPtr shrink_axis(const UOpPtr& u, int64_t axis, int64_t lo, int64_t hi) {
  Box box = whole_box(u->shape);
  box[static_cast<size_t>(axis)] = {lo, hi};
  return shrink_to(u, box);
}

UOpPtr filled(DType dt, double value, const Shape& shape) {
  UOpPtr c = make_uop(Ops::RESHAPE, dt, {const_uop(dt, value)}, std::vector<int64_t>(shape.size(), 1));
  return make_uop(Ops::EXPAND, dt, {c}, std::vector<int64_t>(shape));
}

// u (a graph on `from`; "" for one that reads no buffer, computed wherever it is read) on `to`.
UOpPtr moved(const UOpPtr& u, const std::string& from, const std::string& to) {
  return from.empty() || from == to ? u : copy_uop(u, from, to);
}

// What lowering made of a node: the node itself rebuilt on lowered sources (`single`, null when
// nothing below it changed), or its parts, one per device.
struct Lowered {
  UOpPtr single;
  std::vector<UOpPtr> parts;
  std::vector<std::string> devices;
  int64_t axis = -1;
  Shape whole;  // the value's shape (the parts' side by side)
  bool multi() const { return !parts.empty(); }
  std::string device_of(size_t j) const { return graph_device(parts[j].get()).empty() ? "" : devices[j]; }
  std::vector<std::pair<int64_t, int64_t>> bounds() const {
    if (axis < 0) return std::vector<std::pair<int64_t, int64_t>>(devices.size(), {0, 0});
    return shard_bounds(whole[static_cast<size_t>(axis)], devices.size());
  }
};

// The box `box` of m's whole value, on device d: cut from the part on d when m is replicated (or
// any part, copied), else from each part that holds some of its rows along m.axis, copied to d and
// put side by side.
UOpPtr box_to(const Lowered& m, const Box& box, const std::string& d) {
  if (m.axis < 0) {
    auto at = std::find(m.devices.begin(), m.devices.end(), d);
    size_t j = at == m.devices.end() ? 0 : static_cast<size_t>(at - m.devices.begin());
    return moved(shrink_to(m.parts[j], box), m.device_of(j), d);
  }
  const auto a = static_cast<size_t>(m.axis);
  const auto [lo, hi] = box[a];
  Shape shape;
  for (const auto& [b, e] : box) shape.push_back(e - b);
  UOpPtr out;
  const auto bounds = m.bounds();
  for (size_t j = 0; j < m.parts.size(); j++) {
    const int64_t s = std::max(lo, bounds[j].first), e = std::min(hi, bounds[j].second);
    if (s >= e) continue;
    Box local = box;
    local[a] = {s - bounds[j].first, e - bounds[j].first};
    UOpPtr piece = moved(shrink_to(m.parts[j], local), m.device_of(j), d);
    if (s == lo && e == hi) return piece;  // one part holds all of it
    // Put where it lies by a where on its padded mask, as cat does: adding zero-padded pieces would
    // turn a -0.0 into +0.0.
    std::vector<int64_t> pad(2 * shape.size(), 0);
    pad[2 * a] = s - lo;
    pad[2 * a + 1] = hi - e;
    UOpPtr placed = apply_movement(piece, Ops::PAD, pad);
    if (!out) {
      out = placed;
      continue;
    }
    UOpPtr mask = apply_movement(filled(kBool, 1, piece->shape), Ops::PAD, pad);
    out = make_uop(Ops::WHERE, m.parts[0]->dtype, {mask, placed, out});
  }
  return out ? out : filled(m.parts[0]->dtype, 0, shape);
}

// The whole value on each of m's devices (an all-gather).
std::vector<UOpPtr> whole_on_each(const Lowered& m) {
  std::vector<UOpPtr> out;
  for (const auto& d : m.devices) out.push_back(box_to(m, whole_box(m.whole), d));
  return out;
}

// A multi value from the whole value on each device (`wholes`), split along `axis` by each device
// keeping its own rows (no copies); replicated when axis is -1 or the axis has fewer rows than
// devices.
Lowered split_locally(std::vector<UOpPtr> wholes, const std::vector<std::string>& devices, int64_t axis) {
  Lowered out;
  out.devices = devices;
  out.whole = wholes[0]->shape;
  if (axis >= 0 && out.whole[static_cast<size_t>(axis)] < static_cast<int64_t>(devices.size())) axis = -1;
  out.axis = axis;
  if (axis < 0) {
    out.parts = std::move(wholes);
    return out;
  }
  const auto bounds = out.bounds();
  for (size_t i = 0; i < wholes.size(); i++)
    out.parts.push_back(shrink_axis(wholes[i], axis, bounds[i].first, bounds[i].second));
  return out;
}

// The first axis with at least one row per device (-1: none).
int64_t first_splittable_axis(const Shape& s, size_t k) {
  for (size_t a = 0; a < s.size(); a++)
    if (s[a] >= static_cast<int64_t>(k)) return static_cast<int64_t>(a);
  return -1;
}

ReduceOp reduce_op_of(Ops op) {
  switch (op) {
    case Ops::ADD:
      return ReduceOp::Sum;
    case Ops::MAX:
      return ReduceOp::Max;
    default:
      return ReduceOp::Prod;
  }
}

class Lowering {
 public:
  // roots: the nodes realized as they are (whose parts must not be views of another tensor).
  explicit Lowering(std::unordered_set<const UOp*> roots = {}) : roots_(std::move(roots)) {}

  Lowered lower(const UOpPtr& root) {
    std::unordered_map<const UOp*, UOpPtr> holder{{root.get(), root}};
    const std::vector<const UOp*> order = toposort(root.get(), [&](const UOp* u) { return !done_.count(u); });
    for (const UOp* u : order)
      for (const auto& s : u->src) holder.emplace(s.get(), s);
    for (const UOp* u : order)
      if (!done_.count(u)) done_[u] = lower_node(holder.at(u));
    return done_.at(root.get());
  }

 private:
  std::unordered_map<const UOp*, Lowered> done_;
  std::unordered_set<const UOp*> roots_;

  // s as lowered, as a single-device graph (null: s itself).
  UOpPtr single(const UOpPtr& s) const {
    const Lowered& l = done_.at(s.get());
    return l.single ? l.single : s;
  }

  Lowered lower_node(const UOpPtr& u) {
    bool any = u->op == Ops::MULTI, changed = false;
    for (const auto& s : u->src) {
      const Lowered& l = done_.at(s.get());
      any = any || l.multi();
      changed = changed || l.single;
    }
    if (!any) {
      Lowered out;
      if (changed) {
        std::vector<UOpPtr> src;
        for (const auto& s : u->src) src.push_back(single(s));
        out.single = make_uop_with_shape(u->op, u->dtype, std::move(src), u->arg, u->shape);
      }
      return out;
    }
    const ScopeGuard scope(u->scope);  // the profiler charges the parts where the node was made
    if (u->op == Ops::MULTI) return from_multi(u);
    if (u->op == Ops::COPY) return Lowered{gather(u), {}, {}, -1, {}};
    if (u->op == Ops::REDUCE_AXIS) return reduce(u);
    if (u->op == Ops::ASSIGN) return assign(u);
    if (is_movement(u->op) || u->op == Ops::SHRINK_AT) return movement(u);
    if (is_alu(u->op) || u->op == Ops::CONTIGUOUS || u->op == Ops::DETACH || u->op == Ops::CHECK_INDEX)
      return elementwise(u);
    throw multi_error(std::string(op_name(u->op)) + " of a sharded value is not supported");
  }

  Lowered from_multi(const UOpPtr& u) {
    const MultiArg& m = u->as<MultiArg>();
    Lowered out;
    out.devices = m.devices;
    out.axis = m.axis;
    out.whole = u->shape;
    for (const auto& s : u->src) {
      if (done_.at(s.get()).multi()) throw multi_error("a part of a sharded value is itself sharded");
      UOpPtr part = single(s);
      // shard_uop gives a part cut from a buffer on its own device a buffer of its own, so that a
      // write into the sharded tensor never lands in the source; read by another op, the view
      // itself serves, and saves a copy kernel.
      if (!roots_.count(u.get()) && part->op == Ops::CONTIGUOUS && reads_buffer_directly(part->src[0].get()))
        part = part->src[0];
      out.parts.push_back(part);
    }
    return out;
  }

  static bool reads_buffer_directly(const UOp* u) {
    while (is_movement(u->op)) u = u->src[0].get();
    return u->op == Ops::BUFFER;
  }

  // Source s of u as parts split like `like` (same devices, along like.axis): its own parts when they
  // are, cut locally from a replicated value or a constant, fetched from the other devices when s is
  // split along another axis.
  std::vector<UOpPtr> aligned(const UOpPtr& u, const UOpPtr& s, const Lowered& like) {
    const Lowered& l = done_.at(s.get());
    const auto bounds = like.bounds();
    std::vector<UOpPtr> out;
    if (!l.multi()) {
      UOpPtr v = single(s);
      if (!graph_device(v.get()).empty())
        throw multi_error(std::string(op_name(u->op)) + ": a value on " + graph_device(v.get()) + " " +
                          shape_str(s->shape) + " meets one sharded across " + join_devices(like.devices));
      for (size_t i = 0; i < like.parts.size(); i++)
        out.push_back(like.axis < 0 ? v : shrink_axis(v, like.axis, bounds[i].first, bounds[i].second));
      return out;
    }
    if (l.devices != like.devices)
      throw multi_error(std::string(op_name(u->op)) + ": values sharded across " + join_devices(l.devices) +
                        " and " + join_devices(like.devices));
    if (l.axis == like.axis) return l.parts;
    for (size_t i = 0; i < like.parts.size(); i++) {
      Box box = whole_box(l.whole);
      if (like.axis >= 0) box[static_cast<size_t>(like.axis)] = bounds[i];
      out.push_back(l.axis < 0 ? shrink_to(l.parts[i], box) : box_to(l, box, like.devices[i]));
    }
    return out;
  }

  // The first sharded source's split (or the first multi source's, all replicated).
  Lowered layout_of(const UOpPtr& u, size_t sources) const {
    const Lowered* first = nullptr;
    for (size_t k = 0; k < sources; k++) {
      const Lowered& l = done_.at(u->src[k].get());
      if (!l.multi()) continue;
      if (!first) first = &l;
      if (l.axis >= 0) return l;
    }
    return *first;
  }

  Lowered elementwise(const UOpPtr& u) {
    // A DETACH with a gradient function lists that function's inputs after its value: no gradient
    // runs here, so only the value is lowered.
    const size_t sources = u->op == Ops::DETACH ? 1 : u->src.size();
    Lowered out = layout_of(u, sources);
    std::vector<std::vector<UOpPtr>> srcs;
    for (size_t k = 0; k < sources; k++) srcs.push_back(aligned(u, u->src[k], out));
    const Arg arg = u->op == Ops::DETACH ? Arg{} : u->arg;
    for (size_t i = 0; i < out.parts.size(); i++) {
      std::vector<UOpPtr> src;
      for (const auto& s : srcs) src.push_back(s[i]);
      out.parts[i] = make_uop(u->op, u->dtype, std::move(src), arg);
    }
    out.whole = u->shape;
    return out;
  }

  Lowered reduce(const UOpPtr& u) {
    Lowered out = done_.at(u->src[0].get());
    const ReduceArg& r = u->as<ReduceArg>();
    for (auto& p : out.parts) p = make_uop(Ops::REDUCE_AXIS, u->dtype, {p}, r);
    out.whole = u->shape;
    if (out.axis < 0 || std::find(r.axes.begin(), r.axes.end(), out.axis) == r.axes.end()) return out;
    // Across the sharded axis: each device reduces its rows, then the partial results are all-reduced.
    std::vector<Tensor> partial;
    for (size_t i = 0; i < out.parts.size(); i++)
      partial.push_back(make_tensor(out.parts[i], out.devices[i]));
    std::vector<Tensor> total = all_reduce(partial, reduce_op_of(r.op));
    for (size_t i = 0; i < out.parts.size(); i++) out.parts[i] = total[i].uop();
    out.axis = -1;
    return out;
  }

  Lowered assign(const UOpPtr& u) {
    Lowered out = done_.at(u->src[0].get());
    if (!out.multi())
      throw multi_error("assign of a sharded value to a tensor on " + graph_device(u->src[0].get()) +
                        " (gather it with to(device) first)");
    if (u->src.size() == 3 && u->as<int64_t>() == out.axis)
      throw multi_error("narrow_assign along the sharded axis " + std::to_string(out.axis) +
                        " is not supported");
    std::vector<UOpPtr> values = aligned(u, u->src[1], out);
    for (size_t i = 0; i < out.parts.size(); i++) {
      std::vector<UOpPtr> src{out.parts[i], values[i]};
      if (u->src.size() == 3) src.push_back(single(u->src[2]));
      out.parts[i] = make_uop(Ops::ASSIGN, u->dtype, std::move(src), u->arg);
    }
    return out;
  }

  // COPY of a sharded value to one device: the rows gathered there. A COPY of a SHRINK fetches only
  // the rows kept (the gradient of a shard takes each device's own rows back this way, with no copy).
  UOpPtr gather(const UOpPtr& u) {
    const std::string& to = u->as<CopyArg>().to;
    const UOpPtr& s = u->src[0];
    if (s->op == Ops::SHRINK && done_.at(s->src[0].get()).multi()) {
      const auto& arg = s->as<std::vector<int64_t>>();
      Box box;
      for (size_t d = 0; d < arg.size(); d += 2) box.emplace_back(arg[d], arg[d + 1]);
      return box_to(done_.at(s->src[0].get()), box, to);
    }
    const Lowered& m = done_.at(s.get());
    if (!m.multi())
      throw multi_error("COPY from " + u->as<CopyArg>().from + " of a value that is not sharded");
    return box_to(m, whole_box(m.whole), to);
  }

  Lowered movement(const UOpPtr& u) {
    const Lowered& m = done_.at(u->src[0].get());
    const int64_t a = m.axis;
    const auto& arg = u->as<std::vector<int64_t>>();
    auto local = [&](const std::function<UOpPtr(const UOpPtr&)>& f, int64_t axis) {
      Lowered out = m;
      for (auto& p : out.parts) p = f(p);
      out.axis = axis;
      out.whole = u->shape;
      return out;
    };
    auto rebuilt = [&](const UOpPtr& p, std::vector<int64_t> a2) {
      std::vector<UOpPtr> src{p};
      if (u->op == Ops::SHRINK_AT) src.push_back(single(u->src[1]));
      return make_uop(u->op, u->dtype, std::move(src), std::move(a2));
    };
    // Where the split does not survive: every device takes the whole value, applies the op, and
    // keeps its own rows of the result along `axis`.
    auto regroup = [&](int64_t axis) {
      std::vector<UOpPtr> wholes;
      for (const auto& w : whole_on_each(m)) wholes.push_back(rebuilt(w, arg));
      return split_locally(std::move(wholes), m.devices, axis);
    };
    if (a < 0) return local([&](const UOpPtr& p) { return rebuilt(p, arg); }, -1);  // replicated
    const auto ua = static_cast<size_t>(a);
    const auto bounds = m.bounds();
    switch (u->op) {
      case Ops::PERMUTE: {
        const auto at = std::find(arg.begin(), arg.end(), a) - arg.begin();
        return local([&](const UOpPtr& p) { return rebuilt(p, arg); }, at);
      }
      case Ops::EXPAND: {
        if (arg[ua] != m.whole[ua]) return regroup(a);
        size_t i = 0;
        return local(
            [&](const UOpPtr& p) {
              std::vector<int64_t> s = arg;
              s[ua] = bounds[i].second - bounds[i].first;
              i++;
              return rebuilt(p, s);
            },
            a);
      }
      case Ops::PAD:
        if (arg[2 * ua] != 0 || arg[2 * ua + 1] != 0) return regroup(a);
        return local([&](const UOpPtr& p) { return rebuilt(p, arg); }, a);
      case Ops::SHRINK: {
        if (arg[2 * ua] == 0 && arg[2 * ua + 1] == m.whole[ua]) {
          size_t i = 0;
          return local(
              [&](const UOpPtr& p) {
                std::vector<int64_t> s = arg;
                s[2 * ua + 1] = bounds[i].second - bounds[i].first;
                i++;
                return rebuilt(p, s);
              },
              a);
        }
        // Each device fetches the rows of the kept range it will hold.
        Lowered out = m;
        out.whole = u->shape;
        const int64_t start = arg[2 * ua], rows = u->shape[ua];
        out.axis = rows >= static_cast<int64_t>(m.parts.size()) ? a : -1;
        const auto kept = out.bounds();
        for (size_t i = 0; i < out.parts.size(); i++) {
          Box box;
          for (size_t d = 0; d < arg.size(); d += 2) box.emplace_back(arg[d], arg[d + 1]);
          box[ua] = out.axis < 0 ? std::pair{start, start + rows}
                                 : std::pair{start + kept[i].first, start + kept[i].second};
          out.parts[i] = box_to(m, box, m.devices[i]);
        }
        return out;
      }
      case Ops::FLIP: {
        if (!arg[ua])  // FLIP's arg: a flag per axis
          return local([&](const UOpPtr& p) { return rebuilt(p, arg); }, a);
        // Device i holds rows [lo, hi) of the flipped value: rows [n - hi, n - lo) of m, flipped.
        Lowered out = m;
        const int64_t n = m.whole[ua];
        for (size_t i = 0; i < out.parts.size(); i++) {
          Box box = whole_box(m.whole);
          box[ua] = {n - bounds[i].second, n - bounds[i].first};
          out.parts[i] = rebuilt(box_to(m, box, m.devices[i]), arg);
        }
        return out;
      }
      case Ops::SHRINK_AT:
        if (arg[0] != a) return local([&](const UOpPtr& p) { return rebuilt(p, arg); }, a);
        return regroup(a);
      case Ops::RESHAPE:
        return reshape(u, m);
      default:
        throw multi_error(std::string(op_name(u->op)) + " of a sharded value is not supported");
    }
  }

  // A reshape keeps the parts local when each device's rows are whole rows of one new axis, split as
  // shard_bounds splits it; else the devices regroup along the first axis that has a row for each.
  Lowered reshape(const UOpPtr& u, const Lowered& m) {
    const Shape& to = u->shape;
    const auto ua = static_cast<size_t>(m.axis);
    int64_t before = 1, inner = 1;
    for (size_t d = 0; d < ua; d++) before *= m.whole[d];
    for (size_t d = ua + 1; d < m.whole.size(); d++) inner *= m.whole[d];
    const auto bounds = m.bounds();
    int64_t prefix = 1;
    for (size_t b = 0; b < to.size() && prefix <= before; prefix *= to[b], b++) {
      if (prefix != before) continue;
      int64_t stride = 1;  // of new axis b
      for (size_t d = b + 1; d < to.size(); d++) stride *= to[d];
      if (stride == 0) break;
      const auto want = shard_bounds(to[b], m.parts.size());
      bool fits = true;
      for (size_t i = 0; i < bounds.size() && fits; i++)
        fits = bounds[i].first * inner % stride == 0 && bounds[i].second * inner % stride == 0 &&
               want[i] == std::pair{bounds[i].first * inner / stride, bounds[i].second * inner / stride};
      if (!fits) continue;
      Lowered out = m;
      out.axis = static_cast<int64_t>(b);
      out.whole = to;
      for (size_t i = 0; i < out.parts.size(); i++) {
        std::vector<int64_t> s(to.begin(), to.end());
        s[b] = want[i].second - want[i].first;
        out.parts[i] = make_uop(Ops::RESHAPE, u->dtype, {out.parts[i]}, s);
      }
      return out;
    }
    std::vector<UOpPtr> wholes;
    for (const auto& w : whole_on_each(m)) wholes.push_back(make_uop(Ops::RESHAPE, u->dtype, {w}, u->arg));
    return split_locally(std::move(wholes), m.devices, first_splittable_axis(to, m.parts.size()));
  }
};

}  // namespace

std::vector<std::pair<int64_t, int64_t>> shard_bounds(int64_t n, size_t k) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i < k; i++) {
    const auto [start, length] = split_rows(n, static_cast<int64_t>(k), static_cast<int64_t>(i));
    out.emplace_back(start, start + length);
  }
  return out;
}

std::string join_devices(const std::vector<std::string>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ",") + d;
  return out;
}

std::vector<std::string> split_devices(const std::string& devices) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = devices.find(',', at);
    out.push_back(devices.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

UOpPtr shard_uop(const UOpPtr& u, const std::string& from, const std::vector<std::string>& devices,
                 int64_t axis) {
  const std::string what = "shard: " + shape_str(u->shape) + " across " + join_devices(devices);
  if (devices.empty()) throw Error("shard: no devices");
  if (std::set<std::string>(devices.begin(), devices.end()).size() != devices.size())
    throw Error(what + ": a device is listed twice");
  const auto k = static_cast<int64_t>(devices.size());
  if (axis >= 0 && u->shape[static_cast<size_t>(axis)] < k)
    throw Error(what + ": dimension " + std::to_string(axis) + " has " +
                std::to_string(u->shape[static_cast<size_t>(axis)]) + " rows, fewer than the " +
                std::to_string(k) + " devices (each device holds at least one)");
  const auto bounds = shard_bounds(axis >= 0 ? u->shape[static_cast<size_t>(axis)] : 0, devices.size());
  std::vector<UOpPtr> parts;
  for (size_t i = 0; i < devices.size(); i++) {
    UOpPtr piece = axis >= 0 ? shrink_axis(u, axis, bounds[i].first, bounds[i].second) : u;
    if (from.empty())
      parts.push_back(piece);  // constants: computed on each device
    else if (is_device_tuple(from))
      parts.push_back(
          make_uop_with_shape(Ops::COPY, u->dtype, {piece}, CopyArg{from, devices[i]}, piece->shape));
    else if (from == devices[i])
      parts.push_back(
          make_uop(Ops::CONTIGUOUS, u->dtype, {piece}));  // a buffer of its own, not a view of u's
    else
      parts.push_back(copy_uop(piece, from, devices[i]));
  }
  any_multi = true;
  return make_uop(Ops::MULTI, u->dtype, std::move(parts), MultiArg{devices, axis});
}

bool is_realized_multi(const UOp* u) {
  if (u->op != Ops::MULTI) return false;
  for (const auto& s : u->src) {
    const UOp* b = s.get();
    while (is_movement(b->op)) b = b->src[0].get();
    if (b->op != Ops::BUFFER) return false;
  }
  return true;
}

int64_t multi_axis(const UOpPtr& u) {
  Lowering l;
  return l.lower(u).axis;
}

std::vector<UOpPtr> lower_multi(const std::vector<UOpPtr>& targets,
                                std::vector<std::pair<UOpPtr, UOpPtr>>* assigns) {
  if (!any_multi) return targets;
  std::vector<const UOp*> roots;
  for (const auto& t : targets) roots.push_back(t.get());
  const std::vector<const UOp*> order = toposort(roots);
  if (std::none_of(order.begin(), order.end(), [](const UOp* u) { return u->op == Ops::MULTI; }))
    return targets;
  Lowering l(std::unordered_set<const UOp*>(roots.begin(), roots.end()));
  std::vector<UOpPtr> out;
  for (const auto& t : targets) {
    Lowered r = l.lower(t);
    out.push_back(r.multi() ? make_uop(Ops::MULTI, t->dtype, r.parts, MultiArg{r.devices, r.axis})
                            : (r.single ? r.single : t));
  }
  if (assigns) {
    std::unordered_map<const UOp*, UOpPtr> holder;
    for (const auto& t : targets) holder.emplace(t.get(), t);
    for (const UOp* u : order)
      for (const auto& s : u->src) holder.emplace(s.get(), s);
    for (const UOp* u : order) {
      if (u->op != Ops::ASSIGN) continue;
      Lowered r = l.lower(holder.at(u));
      if (r.multi())
        assigns->emplace_back(holder.at(u),
                              make_uop(Ops::MULTI, u->dtype, r.parts, MultiArg{r.devices, r.axis}));
    }
  }
  return out;
}

}  // namespace lazygrad
