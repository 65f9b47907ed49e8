// UOp: the one immutable node type of every graph in lazygrad (tensor graphs and kernel IR).
// Nodes are hash-consed: make() returns the existing node when an equal one is alive, so
// structurally equal subgraphs are one object and common subexpressions dedupe for free.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/ops.h"
#include "lazygrad/dtype.h"
#include "lazygrad/error.h"

namespace lazygrad {

struct Buffer;
struct GradFn;  // a gradient given by a function (src/tensor/tensor_impl.h), on a DETACH
struct UOp;
struct VariableState;
using UOpPtr = std::shared_ptr<const UOp>;
using Shape = std::vector<int64_t>;

struct ReduceArg {
  Ops op;  // ADD (sum), MAX or MUL (prod)
  std::vector<int64_t> axes;
  bool operator==(const ReduceArg&) const = default;
};

// What a kernel loop variable is. Lowering makes one Output range per output axis and Loop ranges
// for reductions; the optimizer turns the Output ranges into the thread-split Global loop and may
// split pieces off any axis: Upcast (output, unrolled into registers), Unroll (reduction, unrolled),
// Vector (the lanes of the compiler's vector types), and on devices with work-groups Local (output:
// the work-items of a group) and Group (reduction: a grouped reduction, each work-item of a group
// reduces every Group-th element, and the group combines its partial results in local memory).
enum class AxisKind : uint8_t { Global, Output, Loop, Upcast, Unroll, Vector, Local, Group, TensorCore, Pad };
// One letter per kind, in enum order: how DEBUG output and opts strings ("V1:16 U0:4") name them
// (T: threads of a work-group, R: a reduction the group shares, C: the tensor cores' product, which
// is an opt only: no range is of that kind, codegen/tensor_cores.h; P: an output axis padded up to a
// multiple, tinygrad's PADTO, also an opt only: codegen/optimize.h).
inline constexpr char kAxisLetters[] = "GOLUNVTRCP";

struct RangeArg {
  int64_t id;
  AxisKind kind;
  bool operator==(const RangeArg&) const = default;
};

// COPY's arg: the devices a value moves between (canonical names, runtime/device.h).
struct CopyArg {
  std::string from, to;
  bool operator==(const CopyArg&) const = default;
};

// MULTI's arg: the devices holding the parts (canonical names, in order) and the axis they split
// (-1: each holds all of it, replicated).
struct MultiArg {
  std::vector<std::string> devices;
  int64_t axis = -1;
  bool operator==(const MultiArg&) const = default;
};

using Arg =
    std::variant<std::monostate, int64_t, double, std::vector<int64_t>, ReduceArg, std::shared_ptr<Buffer>,
                 std::shared_ptr<VariableState>, RangeArg, std::shared_ptr<GradFn>, CopyArg, MultiArg>;

struct UOp {
  Ops op;
  DType dtype;
  std::vector<UOpPtr> src;
  Arg arg;
  Shape shape;  // tensor-level nodes only; {} for scalars and kernel-level nodes
  size_t hash;
  // The scope (a layer's forward, the optimizer's step) whose code made this node, for the profiler
  // (engine/trace.h); 0: none. Not part of the node's identity: made again elsewhere, it keeps the
  // first. Set only while a profile runs.
  mutable std::atomic<uint32_t> scope{0};

  ~UOp();

  template <class T>
  const T& as() const {
    return std::get<T>(arg);
  }
  bool is_const() const { return op == Ops::CONST; }
  bool is_const(double v) const;  // a CONST equal to v (as the CONST's dtype holds v)
  double const_double() const;    // a CONST's value as double
  int64_t const_int() const;      // a CONST's value as int64 (ints and bool)
  int64_t numel() const;

  // Bounds of an integer kernel-level expression (index math), used by the simplifier.
  int64_t vmin() const { return bounds().first; }
  int64_t vmax() const { return bounds().second; }
  std::pair<int64_t, int64_t> bounds() const;

  // The graph as indented text (DEBUG=5); a node met again is named by its number, not repeated.
  std::string str() const;

 private:
  std::pair<int64_t, int64_t> own_bounds() const;
  mutable std::optional<std::pair<int64_t, int64_t>> bounds_;
};

// The one constructor: hash-consed. shape is inferred for tensor-level ops.
UOpPtr make_uop(Ops op, DType dtype, std::vector<UOpPtr> src = {}, Arg arg = {});
// For BUFFER nodes, whose shape ({size}) the IR cannot infer from an opaque Buffer.
UOpPtr make_uop_with_shape(Ops op, DType dtype, std::vector<UOpPtr> src, Arg arg, std::optional<Shape> shape);

// Constants of a dtype (value converted like a C cast; bools become 0/1).
UOpPtr const_uop(DType dtype, double value);
UOpPtr const_int_uop(DType dtype, int64_t value);
UOpPtr index_const(int64_t value);  // int64 index arithmetic

// Integer index arithmetic, simplified as it is built (see symbolic.cpp).
UOpPtr alu(Ops op, UOpPtr a, UOpPtr b);
UOpPtr alu(Ops op, DType dtype, std::vector<UOpPtr> src);
UOpPtr idx_add(UOpPtr a, UOpPtr b);
UOpPtr idx_mul(UOpPtr a, int64_t c);
UOpPtr idx_div(UOpPtr a, int64_t c);
UOpPtr idx_mod(UOpPtr a, int64_t c);
UOpPtr idx_lt(UOpPtr a, int64_t c);   // bool: a < c
UOpPtr idx_ge(UOpPtr a, int64_t c);   // bool: a >= c
UOpPtr bool_and(UOpPtr a, UOpPtr b);  // either may be null (true)

// Whether x occurs in u's graph.
bool depends_on(const UOpPtr& u, const UOp* x);
// idx as base + coef * x with base free of x (int64 index math), or nullopt when idx is not affine
// in x (x inside a div, mod or product of atoms).
std::optional<std::pair<UOpPtr, int64_t>> affine_in(const UOpPtr& idx, const UOp* x);
// idx as base + x / 2 with base free of x (a pooling gradient reads each pooled value for two
// neighbouring columns): the base, where idx is (B + x) / 2 plus terms free of x and B is even.
std::optional<UOpPtr> halved_in(const UOpPtr& idx, const UOp* x);

// The scope that make_uop tags the nodes it makes with, on this thread (0: none, the default).
// ScopeGuard sets it for a block; a guard of scope 0 leaves the enclosing one.
uint32_t current_scope();
uint32_t exchange_scope(uint32_t scope);  // sets it, returns the one before
class ScopeGuard {
 public:
  explicit ScopeGuard(uint32_t scope);
  ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  uint32_t previous_;
};

// Number of live UOps (for tests of hash-consing).
size_t live_uop_count();

}  // namespace lazygrad
