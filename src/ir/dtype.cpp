// dtype facts and PyTorch's promotion table (torch.promote_types).
#include "lazygrad/dtype.h"

#include <sstream>

#include "lazygrad/error.h"

namespace lazygrad {

namespace {
struct DTypeInfo {
  std::string_view name;
  size_t size;
  bool is_float, is_unsigned;
};
// Indexed by DType's underlying value; one row per dtype.
constexpr DTypeInfo kInfo[] = {
    {"bool", 1, false, true},    {"uint8", 1, false, true},    {"int8", 1, false, false},
    {"int16", 2, false, false},  {"uint16", 2, false, true},   {"int32", 4, false, false},
    {"uint32", 4, false, true},  {"int64", 8, false, false},   {"uint64", 8, false, true},
    {"float16", 2, true, false}, {"bfloat16", 2, true, false}, {"float32", 4, true, false},
    {"float64", 8, true, false},
};
const DTypeInfo& info(DType dt) { return kInfo[static_cast<int>(dt)]; }

DType int_of(int bits, bool is_unsigned) {
  switch (bits) {
    case 8:
      return is_unsigned ? kUInt8 : kInt8;
    case 16:
      return is_unsigned ? kUInt16 : kInt16;
    case 32:
      return is_unsigned ? kUInt32 : kInt32;
    default:
      return is_unsigned ? kUInt64 : kInt64;
  }
}
}  // namespace

size_t itemsize(DType dt) { return info(dt).size; }
std::string_view dtype_name(DType dt) { return info(dt).name; }
bool is_float(DType dt) { return info(dt).is_float; }
bool is_int(DType dt) { return dt != kBool && !info(dt).is_float; }
bool is_unsigned(DType dt) { return dt == kBool || info(dt).is_unsigned; }
int bit_width(DType dt) { return dt == kBool ? 1 : static_cast<int>(info(dt).size * 8); }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  if (is_float(a) || is_float(b)) {
    if (!is_float(a)) return b;
    if (!is_float(b)) return a;
    // float16 and bfloat16 share no 16-bit type: both fit in float32.
    if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  // Both integers.
  if (is_unsigned(a) == is_unsigned(b)) return itemsize(a) >= itemsize(b) ? a : b;
  DType s = is_unsigned(a) ? b : a, u = is_unsigned(a) ? a : b;
  if (bit_width(s) > bit_width(u)) return s;
  if (bit_width(u) < 64) return int_of(2 * bit_width(u), false);
  std::ostringstream msg;
  msg << "promote_types: no integer dtype holds both " << dtype_name(a) << " and " << dtype_name(b);
  throw Error(msg.str());
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Runtime:
      return "RuntimeError";
    case ErrorKind::Index:
      return "IndexError";
    case ErrorKind::Value:
      return "ValueError";
    case ErrorKind::Type:
      return "TypeError";
    case ErrorKind::NotImplemented:
      return "NotImplementedError";
    case ErrorKind::OutOfMemory:
      return "MemoryError";
    case ErrorKind::Interrupted:
      return "KeyboardInterrupt";
  }
  return "RuntimeError";
}

std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < shape.size(); i++) os << (i ? ", " : "") << shape[i];
  os << "}";
  return os.str();
}

}  // namespace lazygrad
