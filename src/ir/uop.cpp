// UOp construction (hash-consing), shape inference for tensor-level ops, and printing.
#include "ir/uop.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "shape/size.h"

namespace lazygrad {

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t hash_arg(const Arg& arg) {
  size_t h = arg.index();
  if (auto* i = std::get_if<int64_t>(&arg)) return mix(h, std::hash<int64_t>{}(*i));
  if (auto* d = std::get_if<double>(&arg)) {
    // Hash the bits so -0.0 and 0.0 (and NaN payloads) stay distinct constants.
    uint64_t bits;
    static_assert(sizeof bits == sizeof *d);
    std::memcpy(&bits, d, sizeof bits);
    return mix(h, bits);
  }
  if (auto* v = std::get_if<std::vector<int64_t>>(&arg)) {
    for (int64_t x : *v) h = mix(h, std::hash<int64_t>{}(x));
    return h;
  }
  if (auto* r = std::get_if<ReduceArg>(&arg)) {
    h = mix(h, static_cast<size_t>(r->op));
    for (int64_t x : r->axes) h = mix(h, std::hash<int64_t>{}(x));
    return h;
  }
  if (auto* r = std::get_if<RangeArg>(&arg))
    return mix(mix(h, std::hash<int64_t>{}(r->id)), static_cast<size_t>(r->kind));
  if (auto* b = std::get_if<std::shared_ptr<Buffer>>(&arg)) return mix(h, std::hash<void*>{}(b->get()));
  if (auto* v = std::get_if<std::shared_ptr<VariableState>>(&arg))
    return mix(h, std::hash<void*>{}(v->get()));
  if (auto* f = std::get_if<std::shared_ptr<GradFn>>(&arg)) return mix(h, std::hash<void*>{}(f->get()));
  if (auto* c = std::get_if<CopyArg>(&arg))
    return mix(mix(h, std::hash<std::string>{}(c->from)), std::hash<std::string>{}(c->to));
  if (auto* m = std::get_if<MultiArg>(&arg)) {
    for (const auto& d : m->devices) h = mix(h, std::hash<std::string>{}(d));
    return mix(h, std::hash<int64_t>{}(m->axis));
  }
  return h;
}

bool same_arg(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto* d = std::get_if<double>(&a)) {  // bitwise, so NaN == NaN and -0.0 != 0.0 here
    double e = std::get<double>(b);
    return std::memcmp(d, &e, sizeof e) == 0;
  }
  return a == b;
}

struct Key {
  const UOp* node;  // the candidate stored in the table
  bool operator==(const Key& o) const {
    const UOp &x = *node, &y = *o.node;
    if (x.hash != y.hash || x.op != y.op || x.dtype != y.dtype || x.src.size() != y.src.size()) return false;
    for (size_t i = 0; i < x.src.size(); i++)
      if (x.src[i] != y.src[i]) return false;
    return same_arg(x.arg, y.arg);
  }
};
struct KeyHash {
  size_t operator()(const Key& k) const { return k.node->hash; }
};

// The intern table: weak entries, removed by ~UOp.
struct Table {
  std::mutex mu;
  std::unordered_map<Key, std::weak_ptr<const UOp>, KeyHash> map;
};
Table& table() {
  static Table* t = new Table();  // never destroyed: UOps may die during static destruction
  return *t;
}

Shape infer_shape(Ops op, const std::vector<UOpPtr>& src, const Arg& arg) {
  auto err = [&](const std::string& what) { return Error(std::string(op_name(op)) + ": " + what); };
  switch (op_info(op).kind) {
    case OpKind::Unary:
      return src[0]->shape;
    case OpKind::Binary:
      if (src[0]->shape != src[1]->shape)
        throw err("shapes " + shape_str(src[0]->shape) + " and " + shape_str(src[1]->shape) + " differ");
      return src[0]->shape;
    case OpKind::Ternary:
      if (src[0]->shape != src[1]->shape || src[1]->shape != src[2]->shape) throw err("shapes differ");
      return src[1]->shape;
    case OpKind::Reduce: {
      Shape s = src[0]->shape;
      for (int64_t a : std::get<ReduceArg>(arg).axes) s[a] = 1;
      return s;
    }
    case OpKind::Kernel:
      return {};
    default:
      break;
  }
  const Shape& in = src.empty() ? Shape{} : src[0]->shape;
  switch (op) {
    case Ops::CONST:
    case Ops::VAR:
      return {};
    case Ops::IOTA:
      return {std::get<int64_t>(arg)};
    case Ops::RESHAPE:
    case Ops::EXPAND:
      return std::get<std::vector<int64_t>>(arg);
    case Ops::PERMUTE: {
      Shape s;
      for (int64_t p : std::get<std::vector<int64_t>>(arg)) s.push_back(in[p]);
      return s;
    }
    case Ops::PAD:
    case Ops::SHRINK: {
      const auto& p = std::get<std::vector<int64_t>>(arg);
      Shape s = in;
      for (size_t i = 0; i < s.size(); i++)
        s[i] = op == Ops::PAD ? in[i] + p[2 * i] + p[2 * i + 1] : p[2 * i + 1] - p[2 * i];
      return s;
    }
    case Ops::SHRINK_AT: {
      const auto& a = std::get<std::vector<int64_t>>(arg);
      Shape s = in;
      s[a[0]] = a[1];
      return s;
    }
    case Ops::MULTI: {  // the parts side by side along the axis (each is all of it when replicated)
      const auto& m = std::get<MultiArg>(arg);
      if (src.size() != m.devices.size() || src.empty()) throw err("one part per device");
      Shape s = in;
      for (size_t i = 1; i < src.size(); i++) {
        Shape p = src[i]->shape;
        if (m.axis >= 0 && p.size() == s.size()) s[m.axis] += std::exchange(p[m.axis], in[m.axis]);
        if (p != in) throw err("parts of shapes " + shape_str(in) + " and " + shape_str(src[i]->shape));
      }
      return s;
    }
    default:
      return in;  // FLIP, CONTIGUOUS, ASSIGN
  }
}

}  // namespace

UOp::~UOp() {
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.map.find(Key{this});
    if (it != t.map.end() && it->first.node == this) t.map.erase(it);
  }
  // The sources are released here, in a loop: a node whose last reference goes hands its own sources
  // to this loop instead of destroying them itself, so a chain of 100,000 nodes dies without 100,000
  // nested destructors.
  thread_local std::vector<UOpPtr>* releasing = nullptr;
  if (releasing) {
    for (auto& s : src) releasing->push_back(std::move(s));
    return;
  }
  std::vector<UOpPtr> pending = std::move(src);
  releasing = &pending;
  while (!pending.empty()) {
    UOpPtr last = std::move(pending.back());
    pending.pop_back();
    last.reset();  // if this was the last reference, its sources are now in `pending`
  }
  releasing = nullptr;
}

namespace {
thread_local uint32_t scope_now = 0;

UOpPtr tagged(UOpPtr node) {
  if (scope_now && !node->scope.load(std::memory_order_relaxed))
    node->scope.store(scope_now, std::memory_order_relaxed);
  return node;
}
}  // namespace

uint32_t current_scope() { return scope_now; }
uint32_t exchange_scope(uint32_t scope) { return std::exchange(scope_now, scope); }
ScopeGuard::ScopeGuard(uint32_t scope) : previous_(scope_now) {
  if (scope) scope_now = scope;
}
ScopeGuard::~ScopeGuard() { scope_now = previous_; }

UOpPtr make_uop_with_shape(Ops op, DType dtype, std::vector<UOpPtr> src, Arg arg,
                           std::optional<Shape> shape) {
  size_t h = mix(static_cast<size_t>(op), static_cast<size_t>(dtype));
  for (const auto& s : src) h = mix(h, std::hash<const void*>{}(s.get()));
  h = mix(h, hash_arg(arg));
  auto node = std::make_shared<UOp>();
  node->op = op;
  node->dtype = dtype;
  node->src = std::move(src);
  node->arg = std::move(arg);
  node->hash = h;
  Table& t = table();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.map.find(Key{node.get()});
    if (it != t.map.end()) {
      if (auto alive = it->second.lock()) return tagged(alive);
      t.map.erase(it);
    }
  }
  // Shape inference may throw; do it before the node is published.
  node->shape = shape ? *shape : infer_shape(op, node->src, node->arg);
  checked_nbytes(node->shape, node->dtype, op_name(op));  // every tensor-level shape passes here
  std::lock_guard<std::mutex> lock(t.mu);
  auto [it, inserted] = t.map.try_emplace(Key{node.get()}, node);
  if (!inserted) {
    if (auto alive = it->second.lock()) return tagged(alive);  // another thread made it meanwhile
    t.map.erase(it);
    t.map.emplace(Key{node.get()}, node);
  }
  return tagged(node);
}

UOpPtr make_uop(Ops op, DType dtype, std::vector<UOpPtr> src, Arg arg) {
  return make_uop_with_shape(op, dtype, std::move(src), std::move(arg), std::nullopt);
}

size_t live_uop_count() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.map.size();
}

namespace {
// value as the float dtype holds it (round to nearest even), so that a constant of a dtype is a value
// of that dtype wherever it is used (a float16 pad fill once compared unequal to the same fill stored).
double held_as(DType dtype, double value) {
  if (dtype == kFloat64 || !std::isfinite(value) || value == 0) return value;
  float f = static_cast<float>(value);
  if (dtype == kFloat32 || std::isinf(f)) return f;
  int mantissa = dtype == kFloat16 ? 10 : 7, min_exponent = dtype == kFloat16 ? -14 : -126;
  double max_finite = dtype == kFloat16 ? 65504.0 : 3.3895313892515355e38;
  int e;
  std::frexp(f, &e);  // |f| in [2^(e-1), 2^e)
  double spacing = std::ldexp(1.0, std::max(e - 1, min_exponent) - mantissa);
  double q = std::nearbyint(f / spacing) * spacing;  // the default rounding mode: to nearest even
  return std::fabs(q) > max_finite ? std::copysign(HUGE_VAL, value) : q;
}
}  // namespace

UOpPtr const_uop(DType dtype, double value) {
  if (is_float(dtype)) return make_uop(Ops::CONST, dtype, {}, held_as(dtype, value));
  if (dtype == kBool) return make_uop(Ops::CONST, dtype, {}, int64_t(value != 0));
  if (std::isnan(value)) throw Error("const: NaN has no value in " + std::string(dtype_name(dtype)));
  // uint64 constants above INT64_MAX keep their bit pattern.
  int64_t v = value >= 9223372036854775808.0 ? static_cast<int64_t>(static_cast<uint64_t>(value))
                                             : static_cast<int64_t>(value);
  return const_int_uop(dtype, v);
}

UOpPtr const_int_uop(DType dtype, int64_t value) {
  if (is_float(dtype)) return const_uop(dtype, static_cast<double>(value));
  if (dtype == kBool) return make_uop(Ops::CONST, dtype, {}, int64_t(value != 0));
  // Wrap to the dtype's width, as a C cast does, so equal constants are one node.
  int bits = bit_width(dtype);
  if (bits < 64) {
    uint64_t mask = (uint64_t(1) << bits) - 1, u = static_cast<uint64_t>(value) & mask;
    if (!is_unsigned(dtype) && (u >> (bits - 1))) u |= ~mask;
    value = static_cast<int64_t>(u);
  }
  return make_uop(Ops::CONST, dtype, {}, value);
}

UOpPtr index_const(int64_t value) { return make_uop(Ops::CONST, kInt64, {}, value); }

// v as this constant's dtype holds it: the float32 constant of log2(e) is is_const(log2e).
bool UOp::is_const(double v) const {
  return op == Ops::CONST && const_double() == (is_float(dtype) ? held_as(dtype, v) : v);
}

double UOp::const_double() const {
  if (auto* d = std::get_if<double>(&arg)) return *d;
  int64_t i = std::get<int64_t>(arg);
  return dtype == kUInt64 ? static_cast<double>(static_cast<uint64_t>(i)) : static_cast<double>(i);
}

int64_t UOp::const_int() const {
  if (auto* d = std::get_if<double>(&arg)) return static_cast<int64_t>(*d);
  return std::get<int64_t>(arg);
}

int64_t UOp::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string UOp::str() const {
  std::ostringstream os;
  std::unordered_map<const UOp*, int> number;  // nodes printed so far
  std::vector<std::pair<const UOp*, int>> stack{{this, 0}};
  while (!stack.empty()) {
    auto [u, depth] = stack.back();
    stack.pop_back();
    os << std::string(depth * 2, ' ');
    if (auto it = number.find(u); it != number.end()) {
      os << "#" << it->second << " (above)\n";
      continue;
    }
    int n = static_cast<int>(number.size());
    number[u] = n;
    os << "#" << n << " " << op_name(u->op) << " " << dtype_name(u->dtype);
    if (!u->shape.empty()) os << " " << shape_str(u->shape);
    std::visit(
        [&](const auto& a) {
          using A = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<A, int64_t> || std::is_same_v<A, double>)
            os << " arg=" << a;
          else if constexpr (std::is_same_v<A, std::vector<int64_t>>)
            os << " arg=" << shape_str(a);
          else if constexpr (std::is_same_v<A, ReduceArg>)
            os << " " << op_name(a.op) << " axes=" << shape_str(a.axes);
          else if constexpr (std::is_same_v<A, std::shared_ptr<Buffer>>)
            os << " buf=" << a.get();
          else if constexpr (std::is_same_v<A, std::shared_ptr<VariableState>>)
            os << " var=" << a.get();
          else if constexpr (std::is_same_v<A, RangeArg>)
            os << " id=" << a.id << " " << kAxisLetters[static_cast<int>(a.kind)];
          else if constexpr (std::is_same_v<A, std::shared_ptr<GradFn>>)
            os << " grad_fn=" << a.get();
          else if constexpr (std::is_same_v<A, CopyArg>)
            os << " " << a.from << "->" << a.to;
          else if constexpr (std::is_same_v<A, MultiArg>)
            os << " axis=" << a.axis << " devices=" << a.devices.size();
        },
        u->arg);
    os << "\n";
    for (size_t i = u->src.size(); i-- > 0;) stack.push_back({u->src[i].get(), depth + 1});
  }
  return os.str();
}

}  // namespace lazygrad
