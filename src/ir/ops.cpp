#include "ir/ops.h"

namespace lazygrad {

namespace {
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
    {"CONTIGUOUS", OpKind::Buffer, 0},
    {"ASSIGN", OpKind::Buffer, 0},
    {"DETACH", OpKind::Buffer, 0},
    {"DEFINE_GLOBAL", OpKind::Kernel, 0},
    {"DEFINE_VAR", OpKind::Kernel, 0},
    {"DEFINE_LOCAL", OpKind::Kernel, 0},
    {"RANGE", OpKind::Kernel, 0},
    {"LOAD", OpKind::Kernel, 0},
    {"STORE", OpKind::Kernel, 0},
    {"REDUCE", OpKind::Kernel, 1},
    {"SINK", OpKind::Kernel, 0},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<int>(Ops::COUNT_), "one row per op");
}  // namespace

const OpInfo& op_info(Ops op) { return kOps[static_cast<int>(op)]; }

}  // namespace lazygrad
