// Each step as a call of lazygrad's public API, and the same call as C++ text (the reproducer). The
// two switches list the ops in the same order: a step's text is exactly what build() ran.
#include "calls.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>

namespace lazygrad::fuzz {

namespace {

struct OpInfo {
  const char* name;  // the Tensor method
  OpKind kind;
};
// clang-format off
const OpInfo kOps[] = {
    {"input", OpKind::Input}, {"neg", OpKind::Unary}, {"exp", OpKind::Unary}, {"log", OpKind::Unary},
    {"exp2", OpKind::Unary}, {"log2", OpKind::Unary}, {"sqrt", OpKind::Unary}, {"sin", OpKind::Unary},
    {"cos", OpKind::Unary}, {"reciprocal", OpKind::Unary}, {"relu", OpKind::Unary}, {"abs", OpKind::Unary},
    {"floor", OpKind::Unary}, {"ceil", OpKind::Unary}, {"trunc", OpKind::Unary}, {"round", OpKind::Unary},
    {"sign", OpKind::Unary}, {"square", OpKind::Unary}, {"tanh", OpKind::Unary}, {"sigmoid", OpKind::Unary},
    {"rsqrt", OpKind::Unary}, {"bitwise_not", OpKind::Unary}, {"logical_not", OpKind::Unary},
    {"add", OpKind::Binary}, {"sub", OpKind::Binary}, {"mul", OpKind::Binary}, {"div", OpKind::Binary},
    {"floor_divide", OpKind::Binary}, {"remainder", OpKind::Binary}, {"maximum", OpKind::Binary},
    {"minimum", OpKind::Binary}, {"pow", OpKind::Binary}, {"bitwise_and", OpKind::Binary},
    {"bitwise_or", OpKind::Binary}, {"bitwise_xor", OpKind::Binary}, {"bitwise_left_shift", OpKind::Binary},
    {"bitwise_right_shift", OpKind::Binary}, {"logical_and", OpKind::Binary}, {"logical_or", OpKind::Binary},
    {"eq", OpKind::Binary}, {"ne", OpKind::Binary}, {"lt", OpKind::Binary}, {"le", OpKind::Binary},
    {"gt", OpKind::Binary}, {"ge", OpKind::Binary}, {"where", OpKind::Where}, {"to", OpKind::Cast},
    {"sum", OpKind::Reduce}, {"prod", OpKind::Reduce}, {"max", OpKind::Reduce}, {"min", OpKind::Reduce},
    {"mean", OpKind::Reduce}, {"any", OpKind::Reduce}, {"all", OpKind::Reduce}, {"logsumexp", OpKind::Reduce},
    {"argmax", OpKind::ArgReduce}, {"argmin", OpKind::ArgReduce}, {"cumsum", OpKind::AlongAxis},
    {"cumprod", OpKind::AlongAxis}, {"softmax", OpKind::AlongAxis}, {"log_softmax", OpKind::AlongAxis},
    {"reshape", OpKind::Movement}, {"permute", OpKind::Movement}, {"expand", OpKind::Movement},
    {"pad", OpKind::Movement}, {"slice", OpKind::Movement}, {"flip", OpKind::Movement},
    {"cat", OpKind::Movement}, {"matmul", OpKind::Product}, {"conv2d", OpKind::Product},
    {"contiguous", OpKind::Realization}, {"realize", OpKind::Realization},
};
// clang-format on
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(Op::COUNT_));

std::string ints_text(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t k = 0; k < v.size(); k++) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "}";
}

std::string axes_text(const std::vector<int64_t>& v) {
  return v.empty() ? "Axes()" : "Axes(std::vector<int64_t>" + ints_text(v) + ")";
}

std::string double_text(double x) {
  if (std::isnan(x)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(x))
    return x > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string scalar_text(const Step& s) {
  return s.scalar_is_int ? "Scalar(int64_t{" + std::to_string(static_cast<int64_t>(s.scalar)) + "})"
                         : "Scalar(" + double_text(s.scalar) + ")";
}
Scalar scalar_of(const Step& s) {
  return s.scalar_is_int ? Scalar(static_cast<int64_t>(s.scalar)) : Scalar(s.scalar);
}

const char* dtype_text(DType dt) {
  switch (dt) {
    case kBool:
      return "kBool";
    case kUInt8:
      return "kUInt8";
    case kInt8:
      return "kInt8";
    case kInt16:
      return "kInt16";
    case kUInt16:
      return "kUInt16";
    case kInt32:
      return "kInt32";
    case kUInt32:
      return "kUInt32";
    case kInt64:
      return "kInt64";
    case kUInt64:
      return "kUInt64";
    case kFloat16:
      return "kFloat16";
    case kBFloat16:
      return "kBFloat16";
    case kFloat32:
      return "kFloat32";
    case kFloat64:
      return "kFloat64";
  }
  return "?";
}

// The C++ element type an Input's values are written as, and its from_vector.
const char* element_text(DType dt) {
  switch (dt) {
    case kBool:
      return "bool";
    case kUInt8:
      return "uint8_t";
    case kInt8:
      return "int8_t";
    case kInt16:
      return "int16_t";
    case kInt32:
      return "int32_t";
    case kInt64:
      return "int64_t";
    case kFloat64:
      return "double";
    default:
      return "float";  // float32, and the 16-bit floats (converted by a cast)
  }
}

template <class T>
Tensor from_values(const Step& s) {
  std::vector<T> v;
  for (double x : s.values) v.push_back(static_cast<T>(x));
  return Tensor::from_vector<T>(v, s.shape);
}

std::vector<std::string>& shard_inputs() {
  static std::vector<std::string> devices;
  return devices;
}

Tensor unsharded_input(const Step& s) {
  switch (s.dtype) {
    case kBool:
      return from_values<bool>(s);
    case kUInt8:
      return from_values<uint8_t>(s);
    case kInt8:
      return from_values<int8_t>(s);
    case kInt16:
      return from_values<int16_t>(s);
    case kInt32:
      return from_values<int32_t>(s);
    case kInt64:
      return from_values<int64_t>(s);
    case kFloat64:
      return from_values<double>(s);
    case kFloat32:
      return from_values<float>(s);
    default:
      return from_values<float>(s).to(s.dtype).realize();
  }
}

Tensor input(const Step& s) {
  Tensor t = unsharded_input(s);
  const auto& devices = shard_inputs();
  if (devices.empty()) return t;
  std::optional<int64_t> axis;
  for (int64_t a = 0; a < t.dim() && !axis; a++)
    if (t.size(a) >= static_cast<int64_t>(devices.size())) axis = a;
  return t.shard(devices, axis).realize();
}

std::string input_text(const Step& s) {
  std::string vals;
  for (size_t k = 0; k < s.values.size(); k++) {
    double x = s.values[k];
    std::string t = is_float(s.dtype) ? double_text(x) : std::to_string(static_cast<int64_t>(x));
    if (s.dtype == kFloat32 || s.dtype == kFloat16 || s.dtype == kBFloat16)
      t = std::isfinite(x) ? t + "f" : "float(" + t + ")";
    vals += (k ? ", " : "") + t;
  }
  std::string e = element_text(s.dtype);
  std::string t = "Tensor::from_vector<" + e + ">({" + vals + "}, " + shape_text(s.shape) + ")";
  if (s.dtype == kFloat16 || s.dtype == kBFloat16)
    t += ".to(" + std::string(dtype_text(s.dtype)) + ").realize()";
  return t;
}

}  // namespace

const char* op_name(Op op) { return kOps[static_cast<int>(op)].name; }
OpKind op_kind(Op op) { return kOps[static_cast<int>(op)].kind; }

std::string shape_text(const Shape& s) { return ints_text(s); }

void set_shard_inputs(std::vector<std::string> devices) { shard_inputs() = std::move(devices); }

Tensor apply_step(const Step& s, const std::vector<Tensor>& v) {
  auto in = [&](size_t k) -> const Tensor& { return v.at(s.in.at(k)); };
  bool tensor_rhs = s.in.size() > 1;
  switch (s.op) {
    case Op::Input:
      return input(s);
    case Op::Neg:
      return in(0).neg();
    case Op::Exp:
      return in(0).exp();
    case Op::Log:
      return in(0).log();
    case Op::Exp2:
      return in(0).exp2();
    case Op::Log2:
      return in(0).log2();
    case Op::Sqrt:
      return in(0).sqrt();
    case Op::Sin:
      return in(0).sin();
    case Op::Cos:
      return in(0).cos();
    case Op::Reciprocal:
      return in(0).reciprocal();
    case Op::Relu:
      return in(0).relu();
    case Op::Abs:
      return in(0).abs();
    case Op::Floor:
      return in(0).floor();
    case Op::Ceil:
      return in(0).ceil();
    case Op::Trunc:
      return in(0).trunc();
    case Op::Round:
      return in(0).round();
    case Op::Sign:
      return in(0).sign();
    case Op::Square:
      return in(0).square();
    case Op::Tanh:
      return in(0).tanh();
    case Op::Sigmoid:
      return in(0).sigmoid();
    case Op::Rsqrt:
      return in(0).rsqrt();
    case Op::BitwiseNot:
      return in(0).bitwise_not();
    case Op::LogicalNot:
      return in(0).logical_not();
    case Op::Add:
      return tensor_rhs ? in(0).add(in(1)) : in(0).add(scalar_of(s));
    case Op::Sub:
      return tensor_rhs ? in(0).sub(in(1)) : in(0).sub(scalar_of(s));
    case Op::Mul:
      return tensor_rhs ? in(0).mul(in(1)) : in(0).mul(scalar_of(s));
    case Op::Div:
      return tensor_rhs ? in(0).div(in(1)) : in(0).div(scalar_of(s));
    case Op::FloorDivide:
      return tensor_rhs ? in(0).floor_divide(in(1)) : in(0).floor_divide(scalar_of(s));
    case Op::Remainder:
      return tensor_rhs ? in(0).remainder(in(1)) : in(0).remainder(scalar_of(s));
    case Op::Maximum:
      return in(0).maximum(in(1));
    case Op::Minimum:
      return in(0).minimum(in(1));
    case Op::Pow:
      return tensor_rhs ? in(0).pow(in(1)) : in(0).pow(scalar_of(s));
    case Op::BitwiseAnd:
      return in(0).bitwise_and(in(1));
    case Op::BitwiseOr:
      return in(0).bitwise_or(in(1));
    case Op::BitwiseXor:
      return in(0).bitwise_xor(in(1));
    case Op::LeftShift:
      return in(0).bitwise_left_shift(in(1));
    case Op::RightShift:
      return in(0).bitwise_right_shift(in(1));
    case Op::LogicalAnd:
      return in(0).logical_and(in(1));
    case Op::LogicalOr:
      return in(0).logical_or(in(1));
    case Op::Eq:
      return tensor_rhs ? in(0).eq(in(1)) : in(0).eq(scalar_of(s));
    case Op::Ne:
      return tensor_rhs ? in(0).ne(in(1)) : in(0).ne(scalar_of(s));
    case Op::Lt:
      return tensor_rhs ? in(0).lt(in(1)) : in(0).lt(scalar_of(s));
    case Op::Le:
      return tensor_rhs ? in(0).le(in(1)) : in(0).le(scalar_of(s));
    case Op::Gt:
      return tensor_rhs ? in(0).gt(in(1)) : in(0).gt(scalar_of(s));
    case Op::Ge:
      return tensor_rhs ? in(0).ge(in(1)) : in(0).ge(scalar_of(s));
    case Op::Where:
      return where(in(0), in(1), in(2));
    case Op::Cast:
      return in(0).to(s.dtype);
    case Op::Sum:
      return in(0).sum(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::Prod:
      return in(0).prod(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::Max:
      return in(0).max(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::Min:
      return in(0).min(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::Mean:
      return in(0).mean(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::Any:
      return in(0).any(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::All:
      return in(0).all(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::Logsumexp:
      return in(0).logsumexp(s.ints.empty() ? Axes() : Axes(s.ints), s.keepdim);
    case Op::Argmax:
      return in(0).argmax(s.ints.empty() ? std::nullopt : std::optional<int64_t>(s.ints[0]), s.keepdim);
    case Op::Argmin:
      return in(0).argmin(s.ints.empty() ? std::nullopt : std::optional<int64_t>(s.ints[0]), s.keepdim);
    case Op::Cumsum:
      return in(0).cumsum(s.ints[0]);
    case Op::Cumprod:
      return in(0).cumprod(s.ints[0]);
    case Op::Softmax:
      return in(0).softmax(s.ints[0]);
    case Op::LogSoftmax:
      return in(0).log_softmax(s.ints[0]);
    case Op::Reshape:
      return in(0).reshape(s.ints);
    case Op::Permute:
      return in(0).permute(s.ints);
    case Op::Expand:
      return in(0).expand(s.ints);
    case Op::Pad:
      return in(0).pad(s.ints, scalar_of(s));
    case Op::Slice:
      return in(0).slice(s.ints[0], s.ints[1], s.ints[2], s.ints[3]);
    case Op::Flip:
      return in(0).flip(Axes(s.ints));
    case Op::Cat: {
      std::vector<Tensor> parts;
      for (int k : s.in) parts.push_back(v.at(k));
      return Tensor::cat(parts, s.ints[0]);
    }
    case Op::Matmul:
      return in(0).matmul(in(1));
    case Op::Conv2d:
      return in(0).conv2d(in(1), std::nullopt, s.ints[0], s.ints[1], s.ints[2], s.ints[3]);
    case Op::Contiguous:
      return in(0).contiguous();
    case Op::Realize: {
      Tensor t = in(0);
      return t.realize();
    }
    case Op::COUNT_:
      break;
  }
  throw Error("fuzz: unknown op");
}

std::string call_text(const Step& s) {
  auto in = [&](size_t k) { return "v" + std::to_string(s.in.at(k)); };
  std::string m = std::string(".") + op_name(s.op) + "(";
  auto num = [](int64_t v) { return std::to_string(v); };
  switch (op_kind(s.op)) {
    case OpKind::Input:
      return input_text(s);
    case OpKind::Unary:
      return in(0) + m + ")";
    case OpKind::Binary:
      return in(0) + m + (s.in.size() > 1 ? in(1) : scalar_text(s)) + ")";
    case OpKind::Where:
      return "where(" + in(0) + ", " + in(1) + ", " + in(2) + ")";
    case OpKind::Cast:
      return in(0) + ".to(" + dtype_text(s.dtype) + ")";
    case OpKind::Reduce:
      return in(0) + m + axes_text(s.ints) + ", " + (s.keepdim ? "true" : "false") + ")";
    case OpKind::ArgReduce:
      return in(0) + m + (s.ints.empty() ? "std::nullopt" : num(s.ints[0])) + ", " +
             (s.keepdim ? "true" : "false") + ")";
    case OpKind::AlongAxis:
      return in(0) + m + num(s.ints[0]) + ")";
    case OpKind::Movement:
      if (s.op == Op::Pad) return in(0) + ".pad(" + ints_text(s.ints) + ", " + scalar_text(s) + ")";
      if (s.op == Op::Slice)
        return in(0) + ".slice(" + num(s.ints[0]) + ", " + num(s.ints[1]) + ", " + num(s.ints[2]) + ", " +
               num(s.ints[3]) + ")";
      if (s.op == Op::Flip) return in(0) + ".flip(" + axes_text(s.ints) + ")";
      if (s.op == Op::Cat) {
        std::string parts;
        for (size_t k = 0; k < s.in.size(); k++) parts += (k ? ", " : "") + in(k);
        return "Tensor::cat({" + parts + "}, " + num(s.ints[0]) + ")";
      }
      return in(0) + m + ints_text(s.ints) + ")";  // reshape, permute, expand
    case OpKind::Product:
      if (s.op == Op::Matmul) return in(0) + ".matmul(" + in(1) + ")";
      return in(0) + ".conv2d(" + in(1) + ", std::nullopt, " + num(s.ints[0]) + ", " + num(s.ints[1]) + ", " +
             num(s.ints[2]) + ", " + num(s.ints[3]) + ")";
    case OpKind::Realization:
      return s.op == Op::Contiguous ? in(0) + ".contiguous()"
                                    : in(0);  // realized by the next statement (to_cpp)
  }
  return "?";
}

std::string to_cpp(const Program& p) {
  std::ostringstream os;
  for (size_t k = 0; k < p.steps.size(); k++) {
    os << "  Tensor v" << k << " = " << call_text(p.steps[k]) << ";\n";
    if (p.steps[k].op == Op::Realize) os << "  v" << k << ".realize();\n";
  }
  return os.str();
}

}  // namespace lazygrad::fuzz
