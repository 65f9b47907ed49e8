// The op set: one enum for every level of the pipeline, with each op's facts in one table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lazygrad {

enum class Ops : uint8_t {
  // Tensor-level sources.
  BUFFER,  // a realized buffer; arg: the Buffer; shape {size}
  CONST,   // a scalar constant; arg: int64_t (ints, bool) or double (floats); shape {}
  IOTA,    // shape {n}, element i is i: the seed of arange, eye and random counters
  VAR,     // a scalar passed to the kernel as an argument (arg: its VariableState), so a new value
           // needs no new kernel: the random generator's counter, a learning rate
  // Unary.
  EXP2,
  LOG2,
  SIN,
  SQRT,
  RECIPROCAL,
  CAST,
  // Binary. IDIV and MOD round toward -inf (Python's // and %), and raise on a zero divisor.
  // SHL and SHR (integers, the count in the same dtype) are PyTorch's: x << s wraps in x's type,
  // x >> s is arithmetic for signed types and logical for unsigned ones, and a count outside
  // [0, bits) shifts every bit out: << gives 0, >> gives 0 or, for a negative signed x, -1.
  ADD,
  MUL,
  MAX,
  CMPLT,
  CMPNE,
  IDIV,
  MOD,
  AND,
  OR,
  XOR,
  SHL,
  SHR,
  // Ternary.
  WHERE,
  // Reduction over axes (tensor level); arg: ReduceArg {SUM|MAX|PROD as ADD|MAX|MUL, axes}.
  REDUCE_AXIS,
  // Movement: views, never copies. arg: vector<int64_t> (PAD and SHRINK: flattened (begin, end) pairs).
  RESHAPE,
  PERMUTE,
  EXPAND,
  PAD,
  SHRINK,
  FLIP,
  // A shrink to [start, start + n) along one axis where start is src[1], an integer VAR or CONST
  // read when the kernel runs (a decode step's position), so one kernel serves every start.
  // arg: vector<int64_t>{axis, n}. Not a view: it shifts the index its source is read at.
  SHRINK_AT,
  // An integer index that an op reads or writes at (int64), passed through unchanged; when the
  // kernel runs, a value outside [lo, hi) other than an exempt one sets an error bit, which realize
  // turns into a lazygrad::Error naming the op (a kernel cannot raise, so this is how an
  // out-of-range gather or Embedding index is reported, as an integer division by zero is).
  // arg: IndexCheck::arg(); in a kernel, with the error bit lowering assigned. No gradient.
  CHECK_INDEX,
  // Realization.
  CONTIGUOUS,  // a fresh contiguous buffer holding src[0]
  ASSIGN,      // write src[1] into the buffer viewed by src[0]; its value is the updated data.
               // With src[2] (an integer VAR or CONST start) and arg int64_t axis, src[1] only covers
               // [start, start + n) along that axis and only that region is written.
  DETACH,      // src[0]'s value, through which no gradient flows (detach(), NoGrad); with a GradFn
               // arg, the gradient goes to the GradFn's inputs through its function instead
  COPY,        // src[0] (a contiguous value on arg.from) copied to a buffer on arg.to (CopyArg): a
               // schedule item of its own, run by the devices' copy path, not a kernel. From a
               // sharded value (arg.from a device tuple, "CPU,CPU:1") it gathers the shards to arg.to.
  MULTI,       // a sharded value (multi/shard.h): src[i] is its part on device i of arg (MultiArg), the
               // rows of arg.axis that shard_bounds gives device i (all of it when arg.axis is -1);
               // its shape is the whole value's. Lowered to per-device graphs by lower_multi before
               // scheduling, so no kernel ever sees one.
  // Kernel level (after lowering).
  DEFINE_GLOBAL,  // kernel parameter; arg: index
  DEFINE_VAR,     // kernel scalar argument; arg: index
  DEFINE_LOCAL,   // kernel scratch array (staged loads); arg: index; src[0]: its element count
  RANGE,          // loop variable 0 <= r < src[0]; arg: RangeArg {id, kind}
  LOAD,           // src: buffer, index[, valid]: 0 where not valid
  STORE,          // src: buffer, index, value
  REDUCE,         // src: value, ranges...; arg: ReduceArg {op, {}}
  SINK,           // the kernel's root: src are its stores
  COUNT_,
};

// The ops whose indices CHECK_INDEX checks, for the error's wording.
enum class IndexOp : uint8_t {
  Gather,
  TakeAlongDim,
  IndexSelect,
  Index,  // advanced indexing, x[i] (negative values count from the end)
  Embedding,
  Scatter,
  ScatterAdd,
  OneHot,
  CrossEntropy,
  NllLoss,
  ScatterReduce,
  MaxUnpool,  // a max_unpool index: a flat position in the output plane
};

// CHECK_INDEX's arg: the range an index must lie in, what it indexes (dimension `dim` of the op's
// input, of size hi for a non-negative index), the op, and a value that passes whatever the range
// (a loss's ignore_index). Kept as a vector<int64_t> in the UOp.
struct IndexCheck {
  int64_t lo = 0, hi = 0, dim = 0;
  IndexOp op = IndexOp::Gather;
  std::optional<int64_t> exempt;
  int error_bit = 0;  // in a kernel: the bit of the kernel's error word this check sets

  IndexCheck(int64_t lo, int64_t hi, int64_t dim, IndexOp op, std::optional<int64_t> exempt = std::nullopt)
      : lo(lo), hi(hi), dim(dim), op(op), exempt(exempt) {}
  std::vector<int64_t> arg() const;
  static IndexCheck from(const std::vector<int64_t>& arg);
  std::string message() const;  // "gather: an index is out of bounds for dimension 1 with size 3"
};

enum class OpKind : uint8_t { Source, Unary, Binary, Ternary, Reduce, Movement, Index, Buffer, Kernel };

struct OpInfo {
  std::string_view name;
  OpKind kind;
  int flops;  // floating-point/integer operations per output element, for GlobalCounters
};

const OpInfo& op_info(Ops op);
inline std::string_view op_name(Ops op) { return op_info(op).name; }
inline bool is_alu(Ops op) {
  OpKind k = op_info(op).kind;
  return k == OpKind::Unary || k == OpKind::Binary || k == OpKind::Ternary;
}
inline bool is_movement(Ops op) { return op_info(op).kind == OpKind::Movement; }
inline bool is_comparison(Ops op) { return op == Ops::CMPLT || op == Ops::CMPNE; }

}  // namespace lazygrad
