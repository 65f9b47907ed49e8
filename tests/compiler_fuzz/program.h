// The compiler fuzzer's programs: a list of calls of lazygrad's public Tensor API, each reading
// earlier values by their number. One list is built three ways: by lazygrad (build.cpp), by the
// scalar reference interpreter (reference.cpp, which shares no code with lazygrad's scheduler,
// lowering or renderer), and as C++ source for a reproducer (print.cpp).
#pragma once

#include <lazygrad/lazygrad.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lazygrad::fuzz {

// Every op the fuzzer calls. The names are the Tensor methods they call.
// clang-format off
enum class Op {
  Input,  // a realized buffer of the step's values
  // Unary, on floats (and on integers where PyTorch takes them: neg, abs, relu, sign, square, the roundings).
  Neg, Exp, Log, Exp2, Log2, Sqrt, Sin, Cos, Reciprocal, Relu, Abs, Floor, Ceil, Trunc, Round, Sign, Square,
  Tanh, Sigmoid, Rsqrt,
  // Unary on integers and bools.
  BitwiseNot, LogicalNot,
  // Binary (the second operand a tensor, or the scalar `scalar` when in has one entry).
  Add, Sub, Mul, Div, FloorDivide, Remainder, Maximum, Minimum, Pow, BitwiseAnd, BitwiseOr, BitwiseXor,
  LeftShift, RightShift, LogicalAnd, LogicalOr, Eq, Ne, Lt, Le, Gt, Ge,
  Where,  // where(in[0], in[1], in[2])
  Cast,   // to(dtype)
  // Reductions over `ints` (empty: all axes) with `keepdim`.
  Sum, Prod, Max, Min, Mean, Any, All, Logsumexp,
  Argmax, Argmin,                     // over axis ints[0] (ints empty: the flattened tensor)
  Cumsum, Cumprod, Softmax, LogSoftmax,  // along axis ints[0]
  // Movement.
  Reshape,  // ints: the new shape
  Permute,  // ints: the order
  Expand,   // ints: the new shape
  Pad,      // ints: PyTorch's padding list (last axis first), value `scalar`
  Slice,    // ints: dim, start, end, step
  Flip,     // ints: the axes
  Cat,      // Tensor::cat(in, ints[0])
  // Products.
  Matmul,  // in[0].matmul(in[1])
  Conv2d,  // in[0].conv2d(in[1], nullopt, stride ints[0], padding ints[1], dilation ints[2], groups ints[3])
  // Realization points inside the program.
  Contiguous,
  Realize,  // the value itself, realized when the program reaches it
  COUNT_,
};
// clang-format on

// The ops by how they are called and computed: one table (calls.cpp) for the reference and the C++ text.
enum class OpKind {
  Input,
  Unary,
  Binary,
  Where,
  Cast,
  Reduce,
  ArgReduce,
  AlongAxis,
  Movement,
  Product,
  Realization
};
OpKind op_kind(Op op);

const char* op_name(Op op);

struct Step {
  Op op = Op::Input;
  std::vector<int> in;         // the values read (indices of earlier steps)
  std::vector<int64_t> ints;   // shape, axes, padding, ... (see Op)
  double scalar = 0;           // a binary op's scalar operand (with one input), or the pad value
  bool scalar_is_int = false;  // the scalar is a Python int (else a float): decides type promotion
  bool keepdim = false;
  DType dtype = kFloat32;      // Input and Cast: the dtype made; else unused
  Shape shape;                 // Input: its shape
  std::vector<double> values;  // Input: its values (integers as exact doubles; bools 0/1)
};

struct Program {
  uint64_t seed = 0;
  std::vector<Step> steps;
  std::vector<int> outputs;  // the values realized together at the end, in this order
};

std::string shape_text(const Shape& s);  // {2, 3}

// The program as C++ statements over lazygrad's API: `Tensor v3 = v1.exp();` and so on.
std::string to_cpp(const Program& p);

}  // namespace lazygrad::fuzz
