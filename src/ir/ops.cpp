#include "ir/ops.h"

namespace lazygrad {

namespace {
// One row per op, in enum order, one per line (clang-format would lay them out in columns).
// clang-format off
constexpr OpInfo kOps[] = {
    {"BUFFER", OpKind::Source, 0},
    {"CONST", OpKind::Source, 0},
    {"IOTA", OpKind::Source, 0},
    {"VAR", OpKind::Source, 0},
    {"EXP2", OpKind::Unary, 1},
    {"LOG2", OpKind::Unary, 1},
    {"SIN", OpKind::Unary, 1},
    {"SQRT", OpKind::Unary, 1},
    {"RECIPROCAL", OpKind::Unary, 1},
    {"CAST", OpKind::Unary, 0},
    {"ADD", OpKind::Binary, 1},
    {"MUL", OpKind::Binary, 1},
    {"MAX", OpKind::Binary, 1},
    {"CMPLT", OpKind::Binary, 1},
    {"CMPNE", OpKind::Binary, 1},
    {"IDIV", OpKind::Binary, 1},
    {"MOD", OpKind::Binary, 1},
    {"AND", OpKind::Binary, 1},
    {"OR", OpKind::Binary, 1},
    {"XOR", OpKind::Binary, 1},
    {"SHL", OpKind::Binary, 1},
    {"SHR", OpKind::Binary, 1},
    {"WHERE", OpKind::Ternary, 1},
    {"REDUCE_AXIS", OpKind::Reduce, 1},
    {"RESHAPE", OpKind::Movement, 0},
    {"PERMUTE", OpKind::Movement, 0},
    {"EXPAND", OpKind::Movement, 0},
    {"PAD", OpKind::Movement, 0},
    {"SHRINK", OpKind::Movement, 0},
    {"FLIP", OpKind::Movement, 0},
    {"SHRINK_AT", OpKind::Index, 0},
    {"CHECK_INDEX", OpKind::Index, 0},
    {"CONTIGUOUS", OpKind::Buffer, 0},
    {"ASSIGN", OpKind::Buffer, 0},
    {"DETACH", OpKind::Buffer, 0},
    {"COPY", OpKind::Buffer, 0},
    {"MULTI", OpKind::Buffer, 0},
    {"DEFINE_GLOBAL", OpKind::Kernel, 0},
    {"DEFINE_VAR", OpKind::Kernel, 0},
    {"DEFINE_LOCAL", OpKind::Kernel, 0},
    {"RANGE", OpKind::Kernel, 0},
    {"LOAD", OpKind::Kernel, 0},
    {"STORE", OpKind::Kernel, 0},
    {"REDUCE", OpKind::Kernel, 1},
    {"SINK", OpKind::Kernel, 0},
};
// clang-format on
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<int>(Ops::COUNT_), "one row per op");
}  // namespace

const OpInfo& op_info(Ops op) { return kOps[static_cast<int>(op)]; }

std::vector<int64_t> IndexCheck::arg() const {
  return {lo, hi, dim, static_cast<int64_t>(op), exempt.has_value(), exempt.value_or(0), error_bit};
}

IndexCheck IndexCheck::from(const std::vector<int64_t>& a) {
  IndexCheck c(a.at(0), a.at(1), a.at(2), static_cast<IndexOp>(a.at(3)));
  if (a.at(4)) c.exempt = a.at(5);
  c.error_bit = static_cast<int>(a.at(6));
  return c;
}

// PyTorch's words where it has them ("index 5 is out of bounds for dimension 1 with size 3"), but
// without the value: the kernel reports only that one of its indices failed.
std::string IndexCheck::message() const {
  std::string size = std::to_string(hi),
              bounds = " is out of bounds for dimension " + std::to_string(dim) + " with size " + size;
  switch (op) {
    case IndexOp::Gather:
      return "gather: an index" + bounds;
    case IndexOp::TakeAlongDim:
      return "take_along_dim: an index" + bounds;
    case IndexOp::IndexSelect:
      return "index_select: an index" + bounds;
    case IndexOp::Index:
      return "index: an index" + bounds + " (negative indices count from the end, down to -" + size + ")";
    case IndexOp::Embedding:
      return "embedding: index out of range in self (an index is outside [0, " + size +
             "), the rows of the weight)";
    case IndexOp::Scatter:
      return "scatter: an index" + bounds;
    case IndexOp::ScatterAdd:
      return "scatter_add: an index" + bounds;
    case IndexOp::ScatterReduce:
      return "scatter_reduce: an index" + bounds;
    case IndexOp::MaxUnpool:
      return "max_unpool: an index is out of bounds for an output plane of " + size + " elements";
    case IndexOp::OneHot:
      return "one_hot: class values must be non-negative and smaller than num_classes (" + size + ")";
    case IndexOp::CrossEntropy:
    case IndexOp::NllLoss:
      return std::string(op == IndexOp::CrossEntropy ? "cross_entropy" : "nll_loss") +
             ": a target is out of bounds (class indices lie in [0, " + size + ")" +
             (exempt ? " or equal ignore_index " + std::to_string(*exempt) : "") + ")";
  }
  return "an index is out of bounds";
}

}  // namespace lazygrad
